/*
 * base/error.h — the one way to fill a caller's error buffer.
 *
 * Functions that can fail take (char *err, size_t errlen) and write one
 * line saying why into it; base_error formats that line. It truncates to
 * errlen (always NUL-terminated) and does nothing for a NULL or empty
 * buffer, so a caller that does not want the reason passes NULL, 0.
 */
#ifndef BASE_ERROR_H
#define BASE_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Formats fmt into err; answers false, so a failing function can
 * `return base_error(err, errlen, "...", ...);`. */
bool base_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool base_verror(char *err, size_t errlen, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif
