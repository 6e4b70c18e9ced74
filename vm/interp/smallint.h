/*
 * vm/interp/smallint.h — the SmallInteger cases of the Integer primitives
 * (vm/prims/prim_integer.c) on untagged values, for the special sends'
 * fast paths: true with the answer, false where the primitive answers a
 * large integer or fails (a division by zero, a negative shift): the send
 * then does it.
 *
 * Who may call: vm/interp/interp.c, tests.
 */
#ifndef VM_SMALLINT_H
#define VM_SMALLINT_H

#include "gc/object.h"

#include <stdbool.h>
#include <stdint.h>

/* `x << y`: a negative or too large shift, or a result past the
 * SmallInteger range, is the primitive's (an error, a large integer). */
static inline bool vm_int_shift_left_small(intptr_t x, intptr_t y, intptr_t *r)
{
    if (y < 0 || y > 62) return false;
    intptr_t v = (intptr_t)((uintptr_t)x << y);
    if ((v >> y) != x || !oop_int_fits(v)) return false;
    *r = v;
    return true;
}

/* `x >>> y`: the primitive reads a negative receiver as a 64-bit word
 * (prim_shift_right), which leaves the SmallInteger range for y = 1: only
 * y = 0 is answered here for those. */
static inline bool vm_int_shift_right_small(intptr_t x, intptr_t y, intptr_t *r)
{
    if (y < 0) return false;
    if (y == 0) {
        *r = x;
        return true;
    }
    if (x < 0) return false;
    *r = y >= 63 ? 0 : x >> y;
    return true;
}

/* `x / y`: truncated; MIN / -1 is large */
static inline bool vm_int_div_small(intptr_t x, intptr_t y, intptr_t *r)
{
    if (y == 0) return false;
    intptr_t q = x / y;
    if (!oop_int_fits(q)) return false;
    *r = q;
    return true;
}

/* `x % y`: floored, the sign of the divisor */
static inline bool vm_int_mod_small(intptr_t x, intptr_t y, intptr_t *r)
{
    if (y == 0) return false;
    intptr_t m = x % y;
    if (m != 0 && (m ^ y) < 0) m += y;
    *r = m;
    return true;
}

/* `x rem: y`: truncated, the sign of the dividend */
static inline bool vm_int_rem_small(intptr_t x, intptr_t y, intptr_t *r)
{
    if (y == 0) return false;
    *r = x % y;
    return true;
}

/* `0 - x`: the minimum SmallInteger's negation is large */
static inline bool vm_int_negated_small(intptr_t x, intptr_t *r)
{
    if (!oop_int_fits(-x)) return false;
    *r = -x;
    return true;
}

#endif
