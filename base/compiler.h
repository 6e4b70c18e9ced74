/*
 * base/compiler.h — branch hints (LuaJIT's LJ_LIKELY, lj_def.h).
 *
 * For the paths a benchmark showed hot (the interpreter's dispatch, the
 * allocation fast path); elsewhere the compiler's own guess is as good.
 */
#ifndef BASE_COMPILER_H
#define BASE_COMPILER_H

#define BASE_LIKELY(x) __builtin_expect(!!(x), 1)
#define BASE_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif
