/*
 * base/lazylib.h — a shared library opened on first use, its functions
 * bound into the caller's table.
 *
 * GMP (vm/number/gmplib.c), Capstone (jit/capstone.c) and libdw
 * (report/dwlib.c) are used by few runs; linked, each would be mapped and
 * relocated at every start (page faults: scripts/bench-startup). Each user
 * describes its library once, statically:
 *
 *   static MyTable table;
 *   static const BaseLazySymbol symbols[] = {{"cs_open", &table.open}, …};
 *   static BaseLazyLib lib = BASE_LAZYLIB_INIT(SONAME, "libcapstone4", symbols);
 *   … if (!base_lazylib_open(&lib, err, errlen)) fail; else use table.
 *
 * The first call of base_lazylib_open dlopen-s the soname (the one the build
 * linked against: stvm_soname in the top CMakeLists.txt) and dlsym-s every
 * symbol into its slot; every later call, from any thread, answers the same
 * outcome at the cost of one atomic load. A failure is final and names the
 * library, the symbol if one is missing, and the Debian package to install.
 * On failure every slot is left NULL. The library stays loaded.
 */
#ifndef BASE_LAZYLIB_H
#define BASE_LAZYLIB_H

#include <stdbool.h>
#include <stddef.h>

typedef struct BaseLazySymbol {
    const char *name; /* as dlsym knows it */
    void *slot;       /* the address of a function pointer */
} BaseLazySymbol;

typedef struct BaseLazyLib {
    const char *soname;
    const char *package; /* the Debian package holding soname */
    const BaseLazySymbol *symbols;
    size_t nsymbols;
    int state;           /* 0 not tried, 1 bound, -1 failed; read atomically */
    char failure[512];   /* why, once state is -1 */
} BaseLazyLib;

#define BASE_LAZYLIB_INIT(soname, package, symbols)                                                                   \
    {(soname), (package), (symbols), sizeof(symbols) / sizeof((symbols)[0]), 0, {0}}

/* Opens and binds lib the first time; true when every symbol is bound,
 * else false with why in err (base/error.h's conventions). */
bool base_lazylib_open(BaseLazyLib *lib, char *err, size_t errlen);

#endif
