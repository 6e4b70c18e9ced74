/*
 * base/check.h — checks that say what broke (LuaJIT's lj_assertX).
 *
 *   BASE_CHECK(cond, fmt, ...)   always on, in every build: when cond is
 *                                false, prints file:line: function: the
 *                                condition and the formatted message to
 *                                stderr, then aborts.
 *   BASE_ASSERT(cond, fmt, ...)  the same in a debug build; compiled out
 *                                (cond not evaluated) when NDEBUG is
 *                                defined, as assert() is.
 *
 * The message is optional (BASE_CHECK(p != NULL) is fine) and must be a
 * string literal when given. A check is for a broken invariant, never for
 * bad input, which is an error returned to the caller (base/error.h).
 * The VM's VM_ASSERT (vm/model/vm.h) is an always-on check too, failing
 * through vm_panic so the Smalltalk stack is printed as well.
 */
#ifndef BASE_CHECK_H
#define BASE_CHECK_H

#include "base/compiler.h"

#include <stdarg.h>
#include <stddef.h>

/* Formats "file:line: func: KIND 'cond' failed: message" into buf
 * (truncated to len, NUL-terminated). fmt is ": " followed by the message's
 * format — the macros paste ": " before it, so that a check without a
 * message still has a non-empty format. KIND is "check" or "assertion", so
 * the output names the macro that fired. */
void base_check_describe(char *buf, size_t len, const char *kind, const char *file, int line, const char *func,
                         const char *cond, const char *fmt, va_list ap) __attribute__((format(printf, 8, 0)));

/* Prints the description to stderr and aborts. */
_Noreturn void base_check_fail(const char *kind, const char *file, int line, const char *func, const char *cond,
                               const char *fmt, ...) __attribute__((format(printf, 6, 7), cold));

#define BASE_CHECK(cond, ...)                                                                                         \
    (BASE_LIKELY(cond) ? (void)0 : base_check_fail("check", __FILE__, __LINE__, __func__, #cond, ": " __VA_ARGS__))

#ifdef NDEBUG
#define BASE_ASSERT(cond, ...) ((void)sizeof(!(cond)))
#else
#define BASE_ASSERT(cond, ...)                                                                                        \
    (BASE_LIKELY(cond) ? (void)0 : base_check_fail("assertion", __FILE__, __LINE__, __func__, #cond, ": " __VA_ARGS__))
#endif

#endif
