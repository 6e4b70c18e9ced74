/*
 * base/error.c — the error buffer formatter (see error.h).
 */
#include "base/error.h"

#include <stdio.h>

bool base_verror(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    return false;
}

bool base_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    base_verror(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}
