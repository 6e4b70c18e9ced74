/*
 * vm/number/gmplib.h — GMP's mpn layer, opened on first use.
 *
 * Large integers and exact double printing (vm/number/bigint.c, vm/number/numfmt.c) are
 * the only users of libgmp, and most programs never make a large integer.
 * Linked, the library was mapped and relocated at every start: ~7 page
 * faults, each ~25 us on the CI machine class (scripts/bench-startup). So
 * those files include this header instead of <gmp.h>: every mpn_* name they
 * use becomes a call through a table that dlopen-s libgmp the first time.
 *
 * Each member has the type of GMP's own function (__gmpn_*), so a header
 * change is a compile error here. <gmp.h>'s inline versions of some of
 * them (mpn_add, mpn_cmp, …) are not used: the library's exported ones are.
 * When the library cannot be loaded, stvm says so and exits 1 (the loading
 * is base/lazylib.c's).
 */
#ifndef VM_GMPLIB_H
#define VM_GMPLIB_H

#include <gmp.h>

/* X(name): the mpn functions vm/ calls. */
#define VM_GMP_FUNCTIONS(X)                                                                                           \
    X(add) X(add_1) X(sub) X(sub_1) X(mul) X(mul_1) X(lshift) X(rshift) X(cmp) X(zero_p) X(tdiv_qr) X(sqrtrem)        \
    X(get_str) X(set_str)

/* <gmp.h> maps each mpn_x to __gmpn_x by a macro; ours replace them */
#undef mpn_add
#undef mpn_add_1
#undef mpn_sub
#undef mpn_sub_1
#undef mpn_mul
#undef mpn_mul_1
#undef mpn_lshift
#undef mpn_rshift
#undef mpn_cmp
#undef mpn_zero_p
#undef mpn_tdiv_qr
#undef mpn_sqrtrem
#undef mpn_get_str
#undef mpn_set_str

typedef struct VmGmp {
#define VM_GMP_MEMBER(name) __typeof__(__gmpn_##name) *name;
    VM_GMP_FUNCTIONS(VM_GMP_MEMBER)
#undef VM_GMP_MEMBER
} VmGmp;

extern const VmGmp *vm_gmp_table; /* NULL until the first call */
/* Loads the library (or exits 1 saying why) and answers the table. */
const VmGmp *vm_gmp_load(void);

static inline const VmGmp *vm_gmp(void) { return vm_gmp_table ? vm_gmp_table : vm_gmp_load(); }

#define mpn_add (vm_gmp()->add)
#define mpn_add_1 (vm_gmp()->add_1)
#define mpn_sub (vm_gmp()->sub)
#define mpn_sub_1 (vm_gmp()->sub_1)
#define mpn_mul (vm_gmp()->mul)
#define mpn_mul_1 (vm_gmp()->mul_1)
#define mpn_lshift (vm_gmp()->lshift)
#define mpn_rshift (vm_gmp()->rshift)
#define mpn_cmp (vm_gmp()->cmp)
#define mpn_zero_p (vm_gmp()->zero_p)
#define mpn_tdiv_qr (vm_gmp()->tdiv_qr)
#define mpn_sqrtrem (vm_gmp()->sqrtrem)
#define mpn_get_str (vm_gmp()->get_str)
#define mpn_set_str (vm_gmp()->set_str)

#endif
