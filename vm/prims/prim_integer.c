/*
 * vm/prims/prim_integer.c — the Integer primitives of SOM's Integer.som.
 *
 * The receiver (args[0]) is always an Integer, small or large. Arguments
 * may be anything: an Integer keeps the arithmetic exact, a Double coerces
 * the receiver to Double (failing when it is beyond the double range), and
 * anything else fails with the messages SOM's reference tests expect.
 *
 *   selector     Integer argument                 Double argument
 *   ---------    -------------------------------  -----------------------------
 *   + - *        exact                            Double
 *   /            truncated quotient               trunc(self / arg) as Integer
 *   //           Double (exactly rounded)         Double
 *   %            floored: sign of the divisor     fmod
 *   rem:         truncated: sign of the dividend  fmod
 *   & bitXor:    two's complement bits            fails: not an Int
 *   << >>>       shifts (see prim_shift_*)        fails: not an Int
 */
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/number/bigint.h"
#include "vm/prims/prim_number.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Shifts whose result would pass 2^32 bits (512 MiB) are refused as too
 * big rather than attempted: no heap stvm runs with could hold them. */
#define SHIFT_MAX_BITS ((uint64_t)1 << 32)

/* -- Helpers ----------------------------------------------------------------- */


static bool int_type_error(Oop arg)
{
    return vm_prim_error("Expected object of type 'Int' but got type '%s'.", vm_num_type_name(arg));
}

static bool division_by_zero(void) { return vm_prim_error("Division by zero."); }

static bool as_double(Oop i, double *d)
{
    if (!vm_int_to_double(i, d)) return vm_prim_error("Can't represent as double.");
    return true;
}

/* -- Arithmetic ---------------------------------------------------------------- */

typedef enum ArithOp { OP_ADD, OP_SUB, OP_MUL } ArithOp;

static bool arith(Oop *args, Oop *result, ArithOp op)
{
    Oop a = args[0], b = args[1];
    if (vm_is_integer(b)) {
        Oop r = op == OP_ADD ? vm_int_add(a, b) : op == OP_SUB ? vm_int_sub(a, b) : vm_int_mul(a, b);
        return answer(r, result);
    }
    if (!vm_is_double(b)) return numeric_type_error(b);
    double x, y = oop_double(b);
    if (!as_double(a, &x)) return false;
    return answer_double(op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y, result);
}

static bool prim_add(Oop *args, Oop *result) { return arith(args, result, OP_ADD); }
static bool prim_sub(Oop *args, Oop *result) { return arith(args, result, OP_SUB); }
static bool prim_mul(Oop *args, Oop *result) { return arith(args, result, OP_MUL); }

static bool prim_divide(Oop *args, Oop *result)
{
    Oop a = args[0], b = args[1];
    if (vm_is_integer(b)) {
        if (vm_int_is_zero(b)) return division_by_zero();
        return answer(vm_int_quo(a, b), result);
    }
    if (!vm_is_double(b)) return numeric_type_error(b);
    double x, y = oop_double(b);
    if (y == 0.0) return division_by_zero(); /* before the receiver's range: SOM's order */
    if (!as_double(a, &x)) return false;
    double q = x / y;
    if (!isfinite(q)) return vm_prim_error("Can't represent %s as an Integer.", isnan(q) ? "NaN" : "infinity");
    return answer(vm_int_from_double(q), result);
}

static bool prim_double_divide(Oop *args, Oop *result)
{
    Oop a = args[0], b = args[1];
    if (vm_is_integer(b)) {
        double q, x;
        /* IEEE, as Double // is (SOM++ and TruffleSOM; Are We Fast Yet's CD
         * divides by zero this way): 1 // 0 is infinity, 0 // 0 NaN */
        if (vm_int_is_zero(b)) return as_double(a, &x) && answer_double(x / 0.0, result);
        if (!vm_int_div_to_double(a, b, &q)) return vm_prim_error("Can't represent as double.");
        return answer_double(q, result);
    }
    if (!vm_is_double(b)) return numeric_type_error(b);
    double x, y = oop_double(b);
    if (!as_double(a, &x)) return false;
    return answer_double(x / y, result);
}

static bool modulo(Oop *args, Oop *result, bool floored)
{
    Oop a = args[0], b = args[1];
    if (vm_is_integer(b)) {
        if (vm_int_is_zero(b))
            return floored ? division_by_zero() : vm_prim_error("Division by zero or overflow.");
        return answer(floored ? vm_int_mod(a, b) : vm_int_rem(a, b), result);
    }
    if (!vm_is_double(b)) return numeric_type_error(b);
    double x;
    if (!as_double(a, &x)) return false;
    return answer_double(fmod(x, oop_double(b)), result);
}

static bool prim_modulo(Oop *args, Oop *result) { return modulo(args, result, true); }
static bool prim_rem(Oop *args, Oop *result) { return modulo(args, result, false); }

static bool prim_sqrt(Oop *args, Oop *result)
{
    Oop a = args[0];
    if (vm_int_is_negative(a)) return vm_prim_error("Domain error.");
    bool exact;
    Oop root = vm_int_isqrt(a, &exact);
    if (root == 0) vm_out_of_memory("a number");
    /* Exact roots are Integers. Inexact ones are Doubles within the int64
     * range; beyond it SOM's reference (test int29) answers the integer
     * floor, which is as precise as a Double there and never overflows. */
    int64_t v;
    if (exact || !vm_int_to_i64(a, &v)) {
        *result = root;
        return true;
    }
    return answer_double(sqrt((double)v), result);
}

/* -- Bits ---------------------------------------------------------------------- */

static bool prim_and(Oop *args, Oop *result)
{
    if (!vm_is_integer(args[1])) return int_type_error(args[1]);
    return answer(vm_int_and(args[0], args[1]), result);
}

static bool prim_bit_xor(Oop *args, Oop *result)
{
    if (!vm_is_integer(args[1])) return int_type_error(args[1]);
    return answer(vm_int_xor(args[0], args[1]), result);
}

static bool shift_amount(Oop arg, uint64_t *n)
{
    if (vm_is_double(arg)) return int_type_error(arg);
    if (!vm_is_integer(arg)) return numeric_type_error(arg);
    if (vm_int_is_negative(arg)) return vm_prim_error("Negative shift.");
    if (!oop_is_int(arg) || (uint64_t)oop_int(arg) > SHIFT_MAX_BITS) return vm_prim_error("Shift too big.");
    *n = (uint64_t)oop_int(arg);
    return true;
}

static bool prim_shift_left(Oop *args, Oop *result)
{
    uint64_t n = 0; /* set by shift_amount when it answers true; gcc -O3 cannot see that */
    if (!shift_amount(args[1], &n)) return false;
    if (!vm_int_is_zero(args[0]) && vm_int_bit_length(args[0]) + n > SHIFT_MAX_BITS)
        return vm_prim_error("Shift too big.");
    return answer(vm_int_shift_left(args[0], n), result);
}

/* SOM's reference reads values in the int64 range as 64-bit words, so
 * -1 >>> 1 = 2^63 - 1 (and -1 >>> 0 = -1); beyond that range the shift is
 * arithmetic (floor division by 2^n). */
static bool prim_shift_right(Oop *args, Oop *result)
{
    uint64_t n = 0; /* set by shift_amount when it answers true; gcc -O3 cannot see that */
    if (!shift_amount(args[1], &n)) return false;
    int64_t v;
    if (vm_int_to_i64(args[0], &v) && v < 0) {
        if (n == 0) return answer(args[0], result);
        return answer(n >= 64 ? oop_from_int(0) : vm_int_from_u64((uint64_t)v >> n), result);
    }
    return answer(vm_int_shift_right(args[0], n), result);
}

/* -- Random numbers -------------------------------------------------------------- */

/* splitmix64 (Steele, Lea & Flood, OOPSLA 2014): small, fast, and good
 * enough for atRandom; seeded from the clock and pid on first use. */
static uint64_t rng_state;
static bool rng_seeded;

static uint64_t rng_next(void)
{
    if (!rng_seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rng_state = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
        rng_seeded = true;
    }
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform Integer in [0, |self|), negated for a negative receiver (as
 * SOM's `(self * random) truncated`); 0 answers 0. */
static bool prim_at_random(Oop *args, Oop *result)
{
    Oop a = args[0];
    bool neg = vm_int_is_negative(a);
    if (oop_is_int(a)) {
        intptr_t v = oop_int(a);
        uint64_t bound = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        /* multiply-shift: bias below bound / 2^64, far under anything observable */
        uint64_t r = (uint64_t)(((unsigned __int128)rng_next() * bound) >> 64);
        *result = oop_from_int(neg ? -(intptr_t)r : (intptr_t)r);
        return true;
    }
    Oop bound = neg ? vm_int_negate(a) : a;
    if (bound == 0) vm_out_of_memory("a number");
    size_t bits = vm_int_bit_length(bound), limbs = (bits + 63) / 64;
    uint64_t *buf = malloc(limbs * sizeof(uint64_t));
    if (!buf) vm_out_of_memory("a number");
    Oop r;
    do { /* rejection: each try succeeds with probability above 1/2 */
        for (size_t i = 0; i < limbs; i++) buf[i] = rng_next();
        if (bits % 64) buf[limbs - 1] &= ((uint64_t)1 << (bits % 64)) - 1;
        r = vm_int_from_limbs(buf, limbs, false);
    } while (r != 0 && vm_int_compare(r, bound) >= 0);
    free(buf);
    if (r != 0 && neg) r = vm_int_negate(r);
    return answer(r, result);
}

/* -- Comparing ------------------------------------------------------------------ */

/* The comparisons, abs, negated, max: and min: were Smalltalk code built on
 * < and = (and SOM's reference library keeps them so); as primitives they
 * answer exactly what that code answered — also for a NaN argument, where
 * `3 > nan` is `((3 < nan) or: [3 = nan]) not`, true — and fail where it
 * failed (< on a non-number). Being primitives lets the interpreter and the
 * JIT inline them on SmallIntegers while Integer's method is the primitive
 * (vm/interp/special.h, vm_int_special_prims). */

static bool less(Oop a, Oop b, bool *lt)
{
    Oop r;
    if (!vm_prim_number_less((Oop[]){a, b}, &r)) return false;
    *lt = r == vm_true;
    return true;
}

static bool equal(Oop a, Oop b) { return vm_num_equal(a, b); }

static bool prim_greater(Oop *args, Oop *result)
{
    bool lt;
    if (!less(args[0], args[1], &lt)) return false;
    *result = vm_bool(!(lt || equal(args[0], args[1])));
    return true;
}

static bool prim_greater_equal(Oop *args, Oop *result)
{
    bool lt;
    if (!less(args[0], args[1], &lt)) return false;
    *result = vm_bool(!lt);
    return true;
}

static bool prim_less_equal(Oop *args, Oop *result)
{
    bool lt;
    if (!less(args[0], args[1], &lt)) return false;
    *result = vm_bool(lt || equal(args[0], args[1]));
    return true;
}

/* <> and ~= */
static bool prim_not_equal(Oop *args, Oop *result)
{
    *result = vm_bool(!equal(args[0], args[1]));
    return true;
}

static bool prim_max(Oop *args, Oop *result)
{
    bool lt;
    if (!less(args[0], args[1], &lt)) return false;
    *result = lt ? args[1] : args[0];
    return true;
}

/* `self > aNumber ifTrue: [ ^aNumber ]. ^self` */
static bool prim_min(Oop *args, Oop *result)
{
    Oop gt;
    if (!prim_greater(args, &gt)) return false;
    *result = gt == vm_true ? args[1] : args[0];
    return true;
}

/* `0 - self`, exact (the minimum SmallInteger's negation is large) */
static bool prim_negated(Oop *args, Oop *result) { return answer(vm_int_sub(oop_from_int(0), args[0]), result); }

static bool prim_abs(Oop *args, Oop *result)
{
    if (!vm_int_is_negative(args[0])) {
        *result = args[0];
        return true;
    }
    return prim_negated(args, result);
}


/* -- Converting ------------------------------------------------------------------ */

static bool prim_as_string(Oop *args, Oop *result) { return answer(vm_int_as_string(args[0]), result); }

static bool prim_as_32bit_signed(Oop *args, Oop *result)
{
    *result = oop_from_int(vm_int_low32_signed(args[0]));
    return true;
}

static bool prim_as_32bit_unsigned(Oop *args, Oop *result)
{
    *result = oop_from_int((intptr_t)vm_int_low32_unsigned(args[0]));
    return true;
}

static bool prim_as_double(Oop *args, Oop *result)
{
    double d;
    if (!as_double(args[0], &d)) return false;
    return answer_double(d, result);
}

/* Integer class>>fromString: — args[0] is the class. */
static bool prim_from_string(Oop *args, Oop *result)
{
    const char *text = NULL;
    size_t len = 0;
    if (!from_string_text(args[1], &text, &len)) return false;
    bool valid;
    Oop i = vm_int_from_decimal(text, len, &valid);
    if (!valid) return from_string_invalid(text, len, "an Integer");
    return answer(i, result);
}

const VmPrimDef vm_prims_integer[] = {
    {"Integer", false, "+", prim_add},
    {"Integer", false, "-", prim_sub},
    {"Integer", false, "*", prim_mul},
    {"Integer", false, "/", prim_divide},
    {"Integer", false, "//", prim_double_divide},
    {"Integer", false, "%", prim_modulo},
    {"Integer", false, "rem:", prim_rem},
    {"Integer", false, "&", prim_and},
    {"Integer", false, "<<", prim_shift_left},
    {"Integer", false, ">>>", prim_shift_right},
    {"Integer", false, "bitXor:", prim_bit_xor},
    {"Integer", false, "sqrt", prim_sqrt},
    {"Integer", false, "atRandom", prim_at_random},
    {"Integer", false, "=", vm_prim_number_equal},
    {"Integer", false, "<", vm_prim_number_less},
    {"Integer", false, ">", prim_greater},
    {"Integer", false, ">=", prim_greater_equal},
    {"Integer", false, "<=", prim_less_equal},
    {"Integer", false, "<>", prim_not_equal},
    {"Integer", false, "~=", prim_not_equal},
    {"Integer", false, "==", vm_prim_number_equal},
    {"Integer", false, "max:", prim_max},
    {"Integer", false, "min:", prim_min},
    {"Integer", false, "abs", prim_abs},
    {"Integer", false, "negated", prim_negated},
    {"Integer", false, "asString", prim_as_string},
    {"Integer", false, "as32BitSignedValue", prim_as_32bit_signed},
    {"Integer", false, "as32BitUnsignedValue", prim_as_32bit_unsigned},
    {"Integer", false, "asDouble", prim_as_double},
    {"Integer", true, "fromString:", prim_from_string},
    {NULL, false, NULL, NULL},
};
