/*
 * vm/number/gmplib.c — GMP's mpn layer, opened on first use (why: vm/number/gmplib.h).
 */
#include "vm/number/gmplib.h"

#include "base/lazylib.h"

#include <stdio.h>
#include <stdlib.h>

/* The soname of the libgmp the build found (vm/CMakeLists.txt). */
#ifndef VM_GMP_SONAME
#error "VM_GMP_SONAME must name libgmp (vm/CMakeLists.txt)"
#endif

const VmGmp *vm_gmp_table;
static VmGmp table;
static const BaseLazySymbol symbols[] = {
#define VM_GMP_SYMBOL(name) {"__gmpn_" #name, &table.name},
    VM_GMP_FUNCTIONS(VM_GMP_SYMBOL)
#undef VM_GMP_SYMBOL
};
static BaseLazyLib lib = BASE_LAZYLIB_INIT(VM_GMP_SONAME, "libgmp10", symbols);

const VmGmp *vm_gmp_load(void)
{
    char why[600];
    if (!base_lazylib_open(&lib, why, sizeof why)) {
        fflush(stdout);
        fprintf(stderr, "stvm: cannot use large integers: %s\n", why);
        exit(1);
    }
    vm_gmp_table = &table;
    return vm_gmp_table;
}
