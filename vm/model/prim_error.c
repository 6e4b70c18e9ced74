/*
 * vm/model/prim_error.c — the failure message of the last primitive that failed.
 *
 * SOM has no primitive fallback code: a failing primitive's message is
 * printed by the interpreter (with a Smalltalk backtrace) before it exits,
 * so one static buffer suffices — the VM is single-threaded and reads the
 * message before running any other primitive.
 */
#include "vm/model/primitive.h"

#include <stdarg.h>
#include <stdio.h>

/* Long enough for "'<text>' cannot be converted to an Integer." with a
 * generous excerpt of the text; longer messages are truncated. */
static char last_error[1024];

bool vm_prim_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return false;
}

const char *vm_prim_last_error(void) { return last_error; }
