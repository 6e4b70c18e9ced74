/*
 * vm/number/bigint.h — SOM Integers of any size, and the number helpers the
 * interpreter's fast paths and the Integer/Double primitives share.
 *
 * An Integer is either an immediate SmallInteger (63 bits, see gc/object.h)
 * or a large integer: an object of class index CLASS_INDEX_LARGE_POS or
 * CLASS_INDEX_LARGE_NEG, format FMT_WORDS, whose slots are the 64-bit limbs
 * of the magnitude, least significant first:
 *
 *   +--------+---------+---------+-----+-----------+
 *   | header | limb 0  | limb 1  | ... | limb n-1  |   limb n-1 != 0
 *   +--------+---------+---------+-----+-----------+
 *
 * Invariant (every function here keeps it, every caller may rely on it):
 * a value that fits a SmallInteger is always a SmallInteger, and a large
 * integer has no high zero limb. So equal values have equal classes and
 * limb counts, and "is it zero?" is `o == oop_from_int(0)`.
 *
 * Arithmetic runs GMP's mpn_* functions straight on the limbs; results are
 * computed into C scratch memory and copied into an exactly sized object.
 * SmallInteger operations never reach GMP: vm_int_add/sub/mul inline the
 * tagged fast path and only an overflowing result allocates.
 *
 * Errors: functions answering an Oop answer 0 when the heap (or malloc, for
 * GMP scratch) is exhausted; nothing here collects, so operands stay valid
 * across calls. Domain checks (division by zero, shift sizes, negative
 * square roots) are the caller's job: the primitives word those messages.
 *
 * Who may call: vm/ (primitives, interpreter fast paths, compiler literals)
 * and vm/jit/ (overflow slow paths).
 */
#ifndef VM_BIGINT_H
#define VM_BIGINT_H

#include "gc/object.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* -- SmallInteger fast paths ---------------------------------------------- */

Oop vm_int_add_slow(Oop a, Oop b);
Oop vm_int_sub_slow(Oop a, Oop b);
Oop vm_int_mul_slow(Oop a, Oop b);

/* a and b must be Integers (small or large). The tagged forms are 2v+1, so
 * a + (b - 1) = 2(va + vb) + 1 and overflows the machine word exactly when
 * the sum leaves the 63-bit range. */
static inline Oop vm_int_add(Oop a, Oop b)
{
    intptr_t r;
    if ((a & b & 1) && !__builtin_add_overflow((intptr_t)a, (intptr_t)b - 1, &r)) return (Oop)r;
    return vm_int_add_slow(a, b);
}

static inline Oop vm_int_sub(Oop a, Oop b)
{
    intptr_t r;
    if ((a & b & 1) && !__builtin_sub_overflow((intptr_t)a, (intptr_t)b - 1, &r)) return (Oop)r;
    return vm_int_sub_slow(a, b);
}

/* va * 2vb = 2(va * vb): overflows exactly when the product leaves 63 bits. */
static inline Oop vm_int_mul(Oop a, Oop b)
{
    intptr_t r;
    if ((a & b & 1) && !__builtin_mul_overflow(oop_int(a), (intptr_t)b - 1, &r)) return (Oop)(r | 1);
    return vm_int_mul_slow(a, b);
}

/* -- Construction and inspection ------------------------------------------ */

/* Any int64 / uint64 as an Integer (0 when out of memory). */
Oop vm_int_from_i64(int64_t v);
Oop vm_int_from_u64(uint64_t v);
/* Integer from sign and magnitude limbs (high zero limbs allowed). */
Oop vm_int_from_limbs(const uint64_t *limbs, size_t n, bool negative);

static inline bool vm_int_is_zero(Oop i) { return i == oop_from_int(0); }
bool vm_int_is_negative(Oop i);
/* True and *out set when the value fits an int64. */
bool vm_int_to_i64(Oop i, int64_t *out);
/* Number of magnitude bits (0 for zero). */
size_t vm_int_bit_length(Oop i);

/* -- Arithmetic ------------------------------------------------------------ */

Oop vm_int_negate(Oop a);
/* Division: the divisor must not be zero (callers check vm_int_is_zero). */
Oop vm_int_quo(Oop a, Oop b);      /* truncated quotient: SOM `/`   */
Oop vm_int_rem(Oop a, Oop b);      /* sign of dividend:   SOM `rem:` */
Oop vm_int_floor_div(Oop a, Oop b); /* floored quotient              */
Oop vm_int_mod(Oop a, Oop b);      /* sign of divisor:    SOM `%`    */

/* Exactly rounded a / b as a double (b != 0); false when it overflows. */
bool vm_int_div_to_double(Oop a, Oop b, double *out);

/* Integer square root of a >= 0: floor(sqrt(a)); *exact says whether
 * floor(sqrt(a))^2 == a. */
Oop vm_int_isqrt(Oop a, bool *exact);

/* -- Bits (two's complement semantics, infinitely sign extended) ---------- */

Oop vm_int_and(Oop a, Oop b);
Oop vm_int_xor(Oop a, Oop b);
/* a * 2^n. Callers bound n (the result has about bit_length(a) + n bits). */
Oop vm_int_shift_left(Oop a, uint64_t n);
/* floor(a / 2^n) */
Oop vm_int_shift_right(Oop a, uint64_t n);
/* Low 32 bits of the two's complement form, read signed / unsigned. */
int32_t vm_int_low32_signed(Oop a);
uint32_t vm_int_low32_unsigned(Oop a);

/* -- Comparison ------------------------------------------------------------ */

/* -1, 0 or 1. Both must be Integers. */
int vm_int_compare(Oop a, Oop b);
bool vm_int_equal(Oop a, Oop b);

/* -- Conversions ----------------------------------------------------------- */

/* Correctly rounded (to nearest, ties to even); false when the value is
 * beyond the largest finite double. */
bool vm_int_to_double(Oop i, double *out);
/* trunc(d) as an Integer; d must be finite. */
Oop vm_int_from_double(double d);

/* Upper bound of the decimal length of i, sign included, NUL excluded. */
size_t vm_int_decimal_max(Oop i);
/* Writes i in decimal plus a NUL into buf (vm_int_decimal_max(i) + 1
 * bytes); answers the length, or 0 when GMP scratch cannot be had. */
size_t vm_int_to_decimal(Oop i, char *buf);
/* The decimal String of i (0 when out of memory). */
Oop vm_int_as_string(Oop i);
/* Parses [+-]?[0-9]+ exactly (no spaces, any length). On bad syntax sets
 * *valid = false and answers 0; answers 0 with *valid = true when out of
 * memory. */
Oop vm_int_from_decimal(const char *s, size_t len, bool *valid);

/* -- Mixed Integer / Double ------------------------------------------------ */

/* Answers for vm_num_compare when either side is NaN. */
#define VM_NUM_UNORDERED 2

static inline bool vm_is_number(Oop o)
{
    return oop_is_imm(o) ||
           (oop_is_ptr(o) && (obj_class_index(o) == CLASS_INDEX_LARGE_POS ||
                              obj_class_index(o) == CLASS_INDEX_LARGE_NEG ||
                              obj_class_index(o) == CLASS_INDEX_DOUBLE));
}

/* Exact comparison of two numbers (Integer or Double, in any mix, with no
 * rounding: 2^53 + 1 > 2^53 as a Double). Answers -1, 0, 1 or
 * VM_NUM_UNORDERED; sets *ok = false (and answers 0) if either is not a
 * number. Never allocates. */
int vm_num_compare(Oop a, Oop b, bool *ok);
/* SOM `=` on numbers: false when either is not a number. */
bool vm_num_equal(Oop a, Oop b);

/* The type name SOM's reference error messages use for o ('Int',
 * 'ArbInt', 'Double', 'String_', …), for "Expected … type …" failures. */
const char *vm_num_type_name(Oop o);

#endif
