/*
 * base/check.c — what a failed check prints (see check.h).
 */
#include "base/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void base_check_describe(char *buf, size_t len, const char *kind, const char *file, int line, const char *func,
                         const char *cond, const char *fmt, va_list ap)
{
    if (!len) return;
    int n = snprintf(buf, len, "%s:%d: %s: %s '%s' failed", file, line, func, kind, cond);
    if (n < 0 || (size_t)n + 1 >= len || strcmp(fmt, ": ") == 0) return; /* full, or no message */
    vsnprintf(buf + n, len - (size_t)n, fmt, ap);
}

void base_check_fail(const char *kind, const char *file, int line, const char *func, const char *cond,
                     const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    base_check_describe(msg, sizeof msg, kind, file, line, func, cond, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "%s\n", msg);
    abort();
}
