/*
 * vm/number/gmplib.c — GMP's mpn layer, opened on first use (why: vm/number/gmplib.h).
 */
#include "vm/number/gmplib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The soname of the libgmp the build found (vm/CMakeLists.txt). */
#ifndef VM_GMP_SONAME
#error "VM_GMP_SONAME must name libgmp (vm/CMakeLists.txt)"
#endif

_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "a dlsym answer must fit a function pointer");

const VmGmp *vm_gmp_table;
static VmGmp table;

static _Noreturn void cannot(const char *what, const char *why)
{
    fflush(stdout);
    fprintf(stderr, "stvm: cannot use %s for large integers: %s%s (apt-get install libgmp10)\n", VM_GMP_SONAME, what,
            why ? why : "");
    exit(1);
}

const VmGmp *vm_gmp_load(void)
{
    void *lib = dlopen(VM_GMP_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) cannot("", dlerror());
    /* memcpy from dlsym's void *: POSIX makes it a function's address, ISO
     * C has no cast for it */
#define VM_GMP_BIND(name)                                                                                             \
    {                                                                                                                 \
        void *fn = dlsym(lib, "__gmpn_" #name);                                                                       \
        if (!fn) cannot("it has no __gmpn_" #name ": ", dlerror());                                                   \
        memcpy(&table.name, &fn, sizeof fn);                                                                          \
    }
    VM_GMP_FUNCTIONS(VM_GMP_BIND)
#undef VM_GMP_BIND
    vm_gmp_table = &table;
    return vm_gmp_table;
}
