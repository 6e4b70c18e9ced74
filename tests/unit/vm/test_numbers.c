/*
 * tests/unit/vm/test_numbers.c — large integers, double text, and the
 * Integer / Double primitives.
 *
 * The heap is the real gc/ heap; nothing here collects, so every object a
 * test makes simply stays. The well-known objects and the two constructors
 * the number code uses are defined here as minimal stand-ins for
 * vm/model/universe.c, which would pull in symbols, globals and class loading.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/heap.h"
#include "vm/number/bigint.h"
#include "vm/number/numfmt.h"
#include "vm/prims/prims.h"
#include "vm/model/universe.h"

/* The real vm library provides nil/true/false, the class table pointer and
 * the String/Double constructors; the test boots only the heap. */

static Oop class_table[CLASS_INDEX_FIRST_FREE];

static int setup_heap(void **state)
{
    (void)state;
    GcConfig cfg = {.heap_bytes = (size_t)256 << 20, .eden_bytes = (size_t)1 << 20};
    char err[200];
    if (!gc_heap_init(&cfg, err, sizeof err)) {
        fprintf(stderr, "gc_heap_init: %s\n", err);
        return -1;
    }
    vm_nil = gc_alloc_old(CLASS_INDEX_NIL, FMT_POINTERS, 0);
    gc_set_fill(vm_nil);
    vm_true = gc_alloc_old(CLASS_INDEX_TRUE, FMT_POINTERS, 0);
    vm_false = gc_alloc_old(CLASS_INDEX_FALSE, FMT_POINTERS, 0);
    for (size_t i = 0; i < CLASS_INDEX_FIRST_FREE; i++) class_table[i] = vm_nil;
    vm_class_table = class_table;
    vm_class_table_size = CLASS_INDEX_FIRST_FREE;
    return 0;
}

static int teardown_heap(void **state)
{
    (void)state;
    gc_heap_release();
    return 0;
}

/* -- Helpers ------------------------------------------------------------------ */

static Oop I(const char *text)
{
    bool valid;
    Oop o = vm_int_from_decimal(text, strlen(text), &valid);
    assert_true(valid);
    assert_true(o != 0);
    return o;
}

static Oop small(intptr_t v) { return oop_from_int(v); }

static Oop pow2(unsigned n)
{
    Oop o = vm_int_shift_left(small(1), n);
    assert_true(o != 0);
    return o;
}

static void assert_int_text(Oop i, const char *expected)
{
    assert_true(i != 0);
    assert_true(vm_is_integer(i));
    char *buf = malloc(vm_int_decimal_max(i) + 1);
    assert_non_null(buf);
    size_t len = vm_int_to_decimal(i, buf);
    assert_string_equal(buf, expected);
    assert_int_equal(len, strlen(expected));
    free(buf);
}

/* Normalization: a value is small exactly when it fits 63 bits. */
static void assert_normalized(Oop i)
{
    assert_true(vm_is_integer(i));
    if (vm_is_large_int(i)) {
        size_t n = obj_num_slots(i);
        assert_true(n > 0);
        assert_true(obj_slots(i)[n - 1] != 0);
        int64_t v;
        assert_false(vm_int_to_i64(i, &v) && oop_int_fits((intptr_t)v));
    }
}

static void assert_double_text(double d, const char *expected)
{
    char buf[VM_NUMFMT_DOUBLE_BUFSIZE];
    size_t len = vm_numfmt_double(d, buf);
    assert_string_equal(buf, expected);
    assert_int_equal(len, strlen(expected));
}

static const VmPrimDef *find_prim(const VmPrimDef *table, const char *selector, bool class_side)
{
    for (const VmPrimDef *p = table; p->class_name; p++)
        if (p->class_side == class_side && strcmp(p->selector, selector) == 0) return p;
    fail_msg("no primitive %s", selector);
    return NULL;
}

/* Runs a primitive that must succeed. */
static Oop run_ok(const VmPrimDef *table, const char *selector, Oop receiver, Oop arg)
{
    Oop args[2] = {receiver, arg}, result = 0;
    const VmPrimDef *p = find_prim(table, selector, false);
    if (!p->fn(args, &result)) fail_msg("%s failed: %s", selector, vm_prim_last_error());
    return result;
}

static Oop int_ok(const char *selector, Oop receiver, Oop arg) { return run_ok(vm_prims_integer, selector, receiver, arg); }
static Oop dbl_ok(const char *selector, Oop receiver, Oop arg) { return run_ok(vm_prims_double, selector, receiver, arg); }

/* Runs a primitive that must fail with exactly this message. */
static void run_fails(const VmPrimDef *table, const char *selector, bool class_side, Oop receiver, Oop arg,
                      const char *message)
{
    Oop args[2] = {receiver, arg}, result = 0;
    const VmPrimDef *p = find_prim(table, selector, class_side);
    assert_false(p->fn(args, &result));
    assert_string_equal(vm_prim_last_error(), message);
}

static Oop str(const char *s) { return vm_string_new(s, strlen(s)); }
static Oop dbl(double d) { return vm_double_new(d); }

static double double_of(Oop o)
{
    assert_true(vm_is_double(o));
    return oop_double(o);
}

/* -- Immediate Doubles --------------------------------------------------------- */

/* Every exponent, both signs, mantissas at both ends and between: a value
 * is an immediate exactly when gc/object.h says (biased exponent 897..1151,
 * or a zero), comes back bit for bit, and vm_double_new picks that form. */
static void immediate_doubles_cover_their_range_exactly(void **state)
{
    (void)state;
    const uint64_t mantissas[] = {0, 1, 0x123456789abcdull, 0x8000000000000ull, 0xfffffffffffffull};
    for (uint64_t sign = 0; sign < 2; sign++)
        for (uint64_t e = 0; e < 2048; e++)
            for (size_t k = 0; k < sizeof mantissas / sizeof *mantissas; k++) {
                uint64_t bits = sign << 63 | e << 52 | mantissas[k];
                double d;
                memcpy(&d, &bits, 8);
                bool fits = (e >= 897 && e <= 1151) || (e == 0 && mantissas[k] == 0);
                Oop imm = oop_float_encode(d);
                assert_int_equal(imm != 0, fits);
                /* machine code's one-compare form of the test (not the zeros) */
                uint64_t shifted = (bits + OOP_FLOAT_BIAS) << 1;
                assert_int_equal(shifted - OOP_FLOAT_WINDOW_LO < OOP_FLOAT_WINDOW_SPAN, fits && e != 0);
                Oop o = vm_double_new(d);
                assert_true(vm_is_double(o));
                assert_int_equal(vm_class_index_of(o), CLASS_INDEX_DOUBLE);
                assert_int_equal(oop_is_float(o), fits);
                assert_int_equal(vm_is_boxed_double(o), !fits);
                assert_false(oop_is_int(o));
                uint64_t back;
                double v = oop_double(o);
                memcpy(&back, &v, 8);
                assert_true(back == bits);
                if (fits) assert_true(o == imm);
            }
}

/* -- Growing and shrinking ---------------------------------------------------- */

static void small_overflow_promotes_to_large(void **state)
{
    (void)state;
    Oop max = small(OOP_INT_MAX), min = small(OOP_INT_MIN);
    Oop r = vm_int_add(max, small(1));
    assert_true(vm_is_large_int(r));
    assert_int_text(r, "4611686018427387904");
    assert_int_text(vm_int_sub(min, small(1)), "-4611686018427387905");
    assert_int_text(vm_int_mul(max, small(2)), "9223372036854775806");
    assert_int_text(vm_int_mul(min, small(-1)), "4611686018427387904");
    assert_int_text(vm_int_mul(max, max), "21267647932558653957237540927630737409");
    assert_int_text(vm_int_negate(min), "4611686018427387904");
    assert_int_text(vm_int_quo(min, small(-1)), "4611686018427387904");
    /* in-range results stay immediate */
    assert_true(oop_is_int(vm_int_add(max, small(0))));
    assert_true(oop_is_int(vm_int_sub(min, small(0))));
    assert_int_equal(oop_int(vm_int_mul(small(-3), small(4))), -12);
}

static void large_results_shrink_back_to_small(void **state)
{
    (void)state;
    Oop big = vm_int_add(small(OOP_INT_MAX), small(1));
    Oop back = vm_int_sub(big, small(1));
    assert_true(oop_is_int(back));
    assert_int_equal(oop_int(back), OOP_INT_MAX);
    /* -(2^62) is the most negative SmallInteger, reached from a large */
    Oop neg = vm_int_negate(big);
    assert_true(oop_is_int(neg));
    assert_int_equal(oop_int(neg), OOP_INT_MIN);
    assert_true(vm_int_sub(big, big) == small(0));
    Oop huge = pow2(300);
    assert_true(oop_is_int(vm_int_quo(huge, pow2(290))));
    assert_int_equal(oop_int(vm_int_quo(huge, pow2(290))), 1024);
    assert_true(oop_is_int(vm_int_shift_right(huge, 299)));
    assert_true(oop_is_int(vm_int_and(huge, small(-1))) == false);
    assert_true(vm_int_xor(huge, huge) == small(0));
    assert_true(oop_is_int(vm_int_mod(huge, small(7))));
    assert_true(oop_is_int(vm_int_from_double(4611686018427387904.0)) == false);
    assert_true(oop_is_int(vm_int_from_double(-4611686018427387904.0)));
    assert_int_equal(oop_int(vm_int_shift_left(small(-1), 62)), OOP_INT_MIN);
    assert_normalized(vm_int_shift_left(small(1), 62));
}

static void two_raised_to_100_by_repeated_multiplication(void **state)
{
    (void)state;
    Oop x = small(1);
    for (int i = 0; i < 100; i++) {
        x = vm_int_mul(x, small(2));
        assert_normalized(x);
    }
    assert_int_text(x, "1267650600228229401496703205376");
    Oop y = small(1);
    for (int i = 0; i < 7; i++) y = vm_int_mul(y, small(-2));
    assert_int_equal(oop_int(y), -128);
}

static void hundred_factorial_has_its_exact_digits(void **state)
{
    (void)state;
    Oop f = small(1);
    for (int i = 2; i <= 100; i++) f = vm_int_mul(f, small(i));
    assert_int_text(f, "9332621544394415268169923885626670049071596826438162146859296389521759999322991560894146397615651"
                       "8286253697920827223758251185210916864000000000000000000000000");
    /* and back down again */
    for (int i = 100; i >= 2; i--) f = vm_int_quo(f, small(i));
    assert_true(f == small(1));
}

static void addition_across_signs_and_sizes(void **state)
{
    (void)state;
    Oop a = I("340282366920938463463374607431768211456"); /* 2^128 */
    Oop b = I("-340282366920938463463374607431768211455");
    assert_true(vm_int_add(a, b) == small(1));
    assert_int_text(vm_int_add(b, small(-1)), "-340282366920938463463374607431768211456");
    assert_int_text(vm_int_sub(small(0), a), "-340282366920938463463374607431768211456");
    assert_int_text(vm_int_sub(b, a), "-680564733841876926926749214863536422911");
    assert_int_text(vm_int_add(a, a), "680564733841876926926749214863536422912");
    assert_int_text(vm_int_mul(a, b), "-115792089237316195423570985008687907852929702298719625575994209400481361428480");
    assert_true(vm_int_mul(a, small(0)) == small(0));
    assert_int_text(vm_int_sub(small(5), I("18446744073709551621")), "-18446744073709551616");
}

/* -- Division ------------------------------------------------------------------- */

static void division_follows_som_sign_rules_for_small_values(void **state)
{
    (void)state;
    static const struct { intptr_t a, b, quo, rem, floor, mod; } cases[] = {
        {7, 2, 3, 1, 3, 1},     {-7, 2, -3, -1, -4, 1},  {7, -2, -3, 1, -4, -1},
        {-7, -2, 3, -1, 3, -1}, {10, 3, 3, 1, 3, 1},     {-10, 3, -3, -1, -4, 2},
        {10, -3, -3, 1, -4, -2}, {-10, -3, 3, -1, 3, -1}, {10, 5, 2, 0, 2, 0},
        {-10, 5, -2, 0, -2, 0}, {0, -5, 0, 0, 0, 0},    {3, 7, 0, 3, 0, 3},
        {-3, 7, 0, -3, -1, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Oop a = small(cases[i].a), b = small(cases[i].b);
        assert_int_equal(oop_int(vm_int_quo(a, b)), cases[i].quo);
        assert_int_equal(oop_int(vm_int_rem(a, b)), cases[i].rem);
        assert_int_equal(oop_int(vm_int_floor_div(a, b)), cases[i].floor);
        assert_int_equal(oop_int(vm_int_mod(a, b)), cases[i].mod);
    }
}

static int sign_of(Oop i) { return vm_int_compare(i, small(0)); }

static void division_follows_som_sign_rules_for_large_values(void **state)
{
    (void)state;
    Oop mags_a[] = {I("1361129467683753853853498429727072858169") /* 2^130 + 12345 */, small(12345), pow2(64)};
    Oop mags_b[] = {I("36893488147419103239"), pow2(100), small(3)};
    for (size_t m = 0; m < 3; m++) {
        for (int sa = 0; sa < 2; sa++) {
            for (int sb = 0; sb < 2; sb++) {
                Oop a = sa ? vm_int_negate(mags_a[m]) : mags_a[m];
                Oop b = sb ? vm_int_negate(mags_b[m]) : mags_b[m];
                Oop absb = sb ? mags_b[m] : b;
                Oop q = vm_int_quo(a, b), r = vm_int_rem(a, b);
                Oop f = vm_int_floor_div(a, b), md = vm_int_mod(a, b);
                assert_normalized(q);
                assert_normalized(r);
                assert_normalized(f);
                assert_normalized(md);
                /* a = q*b + r = f*b + m, with |r|, |m| < |b| */
                assert_true(vm_int_equal(vm_int_add(vm_int_mul(q, b), r), a));
                assert_true(vm_int_equal(vm_int_add(vm_int_mul(f, b), md), a));
                assert_true(vm_int_compare(sign_of(r) < 0 ? vm_int_negate(r) : r, absb) < 0);
                assert_true(vm_int_compare(sign_of(md) < 0 ? vm_int_negate(md) : md, absb) < 0);
                /* rem: the dividend's sign; %: the divisor's sign */
                assert_true(sign_of(r) == 0 || sign_of(r) == sign_of(a));
                assert_true(sign_of(md) == 0 || sign_of(md) == sign_of(b));
            }
        }
    }
    /* SOM reference values */
    assert_int_text(vm_int_mod(small(3), vm_int_negate(pow2(200))),
                    "-1606938044258990275541962092341162602522202993782792835301373");
    assert_int_text(vm_int_mod(pow2(200), small(-3)), "-2");
    assert_int_text(vm_int_mod(pow2(999999), vm_int_shift_left(small(3), 83)), "9671406556917033397649408");
    assert_int_text(vm_int_quo(vm_int_negate(pow2(200)), small(2)),
                    "-803469022129495137770981046170581301261101496891396417650688");
    assert_int_text(vm_int_quo(pow2(128), pow2(64)), "18446744073709551616");
}

static void integer_division_to_double_is_exactly_rounded(void **state)
{
    (void)state;
    double d;
    assert_true(vm_int_div_to_double(small(7), small(2), &d));
    assert_true(d == 3.5);
    assert_true(vm_int_div_to_double(small(1), pow2(200), &d));
    assert_double_text(d, "6.223015277861142e-61");
    assert_true(vm_int_div_to_double(pow2(65), vm_int_shift_left(small(3), 62), &d));
    assert_double_text(d, "2.6666666666666665");
    assert_true(vm_int_div_to_double(pow2(65), small(5), &d));
    assert_double_text(d, "7.378697629483821e18");
    /* operands far beyond the double range, quotient inside it */
    assert_true(vm_int_div_to_double(pow2(2000), pow2(1999), &d));
    assert_true(d == 2.0);
    assert_true(vm_int_div_to_double(vm_int_negate(pow2(5000)), vm_int_mul(small(3), pow2(4999)), &d));
    assert_double_text(d, "-0.6666666666666666");
    /* subnormal results round once, ties to even */
    assert_true(vm_int_div_to_double(small(1), pow2(1074), &d));
    assert_true(d == 0x1p-1074);
    assert_true(vm_int_div_to_double(small(1), pow2(1075), &d));
    assert_true(d == 0.0);
    assert_true(vm_int_div_to_double(small(3), pow2(1076), &d));
    assert_true(d == 0x1p-1074);
    assert_true(vm_int_div_to_double(small(1), vm_int_sub(pow2(1075), small(1)), &d));
    assert_true(d == 0x1p-1074);
    /* (2^53 + 1) * 3 / 3: a tie that rounds to even; (double)a / 3 would
     * round twice and answer 2^53 + 2 */
    assert_true(vm_int_div_to_double(I("27021597764222979"), small(3), &d));
    assert_true(d == 9007199254740992.0);
    assert_true(vm_int_div_to_double(vm_int_add(pow2(54), small(3)), small(2), &d)); /* 2^53 + 1.5 */
    assert_true(d == 9007199254740994.0);
    assert_false(vm_int_div_to_double(pow2(2000), small(3), &d));
}

/* -- Bits ---------------------------------------------------------------------------- */

static void shifts_cross_limb_boundaries(void **state)
{
    (void)state;
    assert_int_text(pow2(63), "9223372036854775808");
    assert_int_text(pow2(64), "18446744073709551616");
    assert_int_text(pow2(127), "170141183460469231731687303715884105728");
    assert_int_text(pow2(128), "340282366920938463463374607431768211456");
    assert_int_text(vm_int_shift_left(pow2(300), 2),
                    "8148143905337944345073782753637512644205873574663745002544561797417525199053346824733589504");
    assert_int_text(vm_int_shift_left(small(-1), 64), "-18446744073709551616");
    assert_int_text(vm_int_shift_left(small(-1), 63), "-9223372036854775808");
    Oop x = I("-123456789012345678901234567890123456789");
    for (unsigned n = 0; n < 200; n += 7) {
        Oop y = vm_int_shift_left(x, n);
        assert_normalized(y);
        assert_true(vm_int_equal(vm_int_shift_right(y, n), x));
        assert_true(vm_int_equal(y, vm_int_mul(x, pow2(n))));
    }
    /* right shifts floor */
    assert_true(vm_int_shift_right(pow2(200), 200) == small(1));
    assert_true(vm_int_shift_right(pow2(200), 201) == small(0));
    assert_true(vm_int_shift_right(vm_int_negate(vm_int_add(pow2(64), small(1))), 64) == small(-2));
    assert_true(vm_int_shift_right(vm_int_negate(pow2(64)), 64) == small(-1));
    assert_true(vm_int_shift_right(vm_int_negate(pow2(64)), 1000) == small(-1));
    assert_true(vm_int_shift_right(small(-7), 1) == small(-4));
    assert_true(vm_int_shift_right(small(-1), 500) == small(-1));
    assert_int_text(vm_int_shift_right(vm_int_negate(vm_int_add(pow2(130), small(1))), 65),
                    "-36893488147419103233");
}

static void bit_operations_use_twos_complement(void **state)
{
    (void)state;
    assert_true(vm_int_and(small(5), small(4)) == small(4));
    assert_true(vm_int_xor(small(5), small(4)) == small(1));
    assert_true(vm_int_and(small(-1), small(-8)) == small(-8));
    assert_true(vm_int_xor(small(-1), small(OOP_INT_MAX)) == small(OOP_INT_MIN));
    assert_true(vm_int_and(pow2(200), small(1)) == small(0));
    assert_int_text(vm_int_and(pow2(200), vm_int_shift_left(small(111), 200)),
                    "1606938044258990275541962092341162602522202993782792835301376");
    assert_int_text(vm_int_xor(pow2(200), small(1)), "1606938044258990275541962092341162602522202993782792835301377");
    assert_int_text(vm_int_xor(pow2(200), vm_int_shift_left(small(111), 200)),
                    "176763184868488930309615830157527886277442329316107211883151360");
    assert_int_text(vm_int_xor(small(1), vm_int_shift_left(small(11), 200)),
                    "17676318486848893030961583015752788627744232931610721188315137");
    /* negatives are infinitely sign extended */
    assert_int_text(vm_int_and(small(-1), vm_int_add(pow2(100), small(5))), "1267650600228229401496703205381");
    assert_int_text(vm_int_and(vm_int_negate(pow2(64)), I("55340232221128654851")), "55340232221128654848");
    assert_int_text(vm_int_xor(small(-1), pow2(100)), "-1267650600228229401496703205377");
    assert_int_text(vm_int_and(vm_int_negate(pow2(100)), vm_int_negate(pow2(70))), "-1267650600228229401496703205376");
    assert_true(vm_int_xor(vm_int_negate(pow2(100)), vm_int_negate(pow2(100))) == small(0));
}

static void low_32_bits_read_signed_and_unsigned(void **state)
{
    (void)state;
    assert_int_equal(vm_int_low32_unsigned(small(-1)), 4294967295u);
    assert_int_equal(vm_int_low32_unsigned(pow2(32)), 0);
    assert_int_equal(vm_int_low32_unsigned(I("-9223372036854775296")), 512);
    assert_int_equal(vm_int_low32_unsigned(I("9223372036854775296")), 4294966784u);
    assert_int_equal(vm_int_low32_unsigned(vm_int_sub(pow2(200), small(1))), 4294967295u);
    assert_int_equal(vm_int_low32_signed(pow2(31)), INT32_MIN);
    assert_int_equal(vm_int_low32_signed(small(4294967295)), -1);
    assert_int_equal(vm_int_low32_signed(I("-9223372036854775296")), 512);
    assert_int_equal(vm_int_low32_signed(I("9223372036854775296")), -512);
    assert_int_equal(vm_int_low32_signed(vm_int_sub(pow2(60), small(1))), -1);
}

/* -- Text and doubles ------------------------------------------------------------------- */

static void decimal_text_round_trips(void **state)
{
    (void)state;
    static const char *texts[] = {
        "0", "1", "-1", "4611686018427387903", "4611686018427387904", "-4611686018427387904",
        "-4611686018427387905", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "18446744073709551615", "18446744073709551616", "-340282366920938463463374607431768211457",
        "100000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "-999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        Oop o = I(texts[i]);
        assert_normalized(o);
        assert_int_text(o, texts[i]);
    }
    assert_int_text(I("-0"), "0");
    assert_int_text(I("+17"), "17");
    assert_int_text(I("000000000000000000000000000000123"), "123");
    assert_int_text(I("-0000000000000000000000000000018446744073709551616"), "-18446744073709551616");
    /* a number of about 300,000 digits both ways */
    Oop big = pow2(999999);
    char *buf = malloc(vm_int_decimal_max(big) + 1);
    size_t len = vm_int_to_decimal(big, buf);
    assert_int_equal(len, 301030);
    bool valid;
    assert_true(vm_int_equal(vm_int_from_decimal(buf, len, &valid), big));
    free(buf);
}

static void decimal_parsing_rejects_bad_text(void **state)
{
    (void)state;
    static const char *bad[] = {"", "-", "+", "12a", " 1", "1 ", "1.0", "1e3", "--1", "0x10", "١"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool valid = true;
        assert_true(vm_int_from_decimal(bad[i], strlen(bad[i]), &valid) == 0);
        assert_false(valid);
    }
}

static void integers_convert_to_doubles_rounding_to_even(void **state)
{
    (void)state;
    double d;
    assert_true(vm_int_to_double(pow2(64), &d));
    assert_double_text(d, "1.8446744073709552e19");
    assert_true(vm_int_to_double(vm_int_negate(pow2(64)), &d));
    assert_true(d == -18446744073709551616.0);
    assert_true(vm_int_to_double(vm_int_add(pow2(53), small(1)), &d));
    assert_true(d == 9007199254740992.0); /* tie, to even */
    assert_true(vm_int_to_double(vm_int_add(pow2(53), small(3)), &d));
    assert_true(d == 9007199254740996.0); /* tie, to even */
    assert_true(vm_int_to_double(vm_int_add(pow2(100), pow2(47)), &d));
    assert_true(d == 0x1p100);
    assert_true(vm_int_to_double(vm_int_add(vm_int_add(pow2(100), pow2(47)), small(1)), &d));
    assert_true(d == 0x1p100 + 0x1p48);
    assert_true(vm_int_to_double(vm_int_add(vm_int_add(pow2(100), pow2(48)), pow2(47)), &d));
    assert_true(d == 0x1p100 + 0x1p49);
    /* the top of the range: DBL_MAX + half an ulp rounds to 2^1024 */
    Oop max = vm_int_from_double(DBL_MAX);
    assert_true(vm_int_to_double(max, &d));
    assert_true(d == DBL_MAX);
    assert_true(vm_int_to_double(vm_int_sub(vm_int_add(max, pow2(970)), small(1)), &d));
    assert_true(d == DBL_MAX);
    assert_false(vm_int_to_double(vm_int_add(max, pow2(970)), &d));
    assert_false(vm_int_to_double(pow2(1024), &d));
    assert_false(vm_int_to_double(vm_int_negate(pow2(2000)), &d));
}

static void doubles_convert_to_integers_by_truncation(void **state)
{
    (void)state;
    assert_true(vm_int_from_double(1.9) == small(1));
    assert_true(vm_int_from_double(-1.9) == small(-1));
    assert_true(vm_int_from_double(-0.0) == small(0));
    assert_int_text(vm_int_from_double(18446744073709551616.0), "18446744073709551616");
    assert_int_text(vm_int_from_double(-18446744073709551616.0), "-18446744073709551616");
    assert_int_text(vm_int_from_double(1e20), "100000000000000000000");
    assert_int_text(vm_int_from_double(0x1p200 + 0x1p148),
                    "1606938044258990632353885268831132867093695356156576930988032");
    Oop max = vm_int_from_double(DBL_MAX);
    assert_normalized(max);
    assert_int_equal(vm_int_bit_length(max), 1024);
}

static void square_roots_are_exact_when_they_can_be(void **state)
{
    (void)state;
    bool exact;
    assert_true(vm_int_isqrt(small(25), &exact) == small(5) && exact);
    assert_true(vm_int_isqrt(small(24), &exact) == small(4) && !exact);
    assert_true(vm_int_isqrt(small(0), &exact) == small(0) && exact);
    assert_true(vm_int_isqrt(small(OOP_INT_MAX), &exact) == small(2147483647) && !exact);
    assert_int_text(vm_int_isqrt(pow2(200), &exact), "1267650600228229401496703205376");
    assert_true(exact);
    vm_int_isqrt(pow2(199), &exact);
    assert_false(exact);
    Oop x = I("123456789012345678901234567890");
    assert_true(vm_int_equal(vm_int_isqrt(vm_int_mul(x, x), &exact), x) && exact);
    assert_true(vm_int_equal(vm_int_isqrt(vm_int_sub(vm_int_mul(x, x), small(1)), &exact), vm_int_sub(x, small(1))));
    assert_false(exact);
}

static void mixed_comparisons_are_exact(void **state)
{
    (void)state;
    bool ok;
    Oop two53 = pow2(53); /* small */
    assert_int_equal(vm_num_compare(vm_int_add(two53, small(1)), dbl(9007199254740992.0), &ok), 1);
    assert_true(ok);
    assert_int_equal(vm_num_compare(dbl(9007199254740992.0), vm_int_add(two53, small(1)), &ok), -1);
    assert_int_equal(vm_num_compare(pow2(62), dbl(0x1p62), &ok), 0);
    assert_int_equal(vm_num_compare(vm_int_add(pow2(100), small(1)), dbl(0x1p100), &ok), 1);
    assert_int_equal(vm_num_compare(vm_int_negate(pow2(100)), dbl(-0x1p100 + 0x1p48), &ok), -1);
    assert_int_equal(vm_num_compare(small(1), dbl(1.5), &ok), -1);
    assert_int_equal(vm_num_compare(small(-1), dbl(-1.5), &ok), 1);
    assert_int_equal(vm_num_compare(pow2(2000), dbl(INFINITY), &ok), -1);
    assert_int_equal(vm_num_compare(dbl(-INFINITY), vm_int_negate(pow2(2000)), &ok), -1);
    assert_int_equal(vm_num_compare(small(0), dbl(-0.0), &ok), 0);
    assert_int_equal(vm_num_compare(dbl(NAN), small(1), &ok), VM_NUM_UNORDERED);
    assert_int_equal(vm_num_compare(dbl(NAN), dbl(NAN), &ok), VM_NUM_UNORDERED);
    assert_int_equal(vm_num_compare(pow2(70), pow2(71), &ok), -1);
    assert_int_equal(vm_num_compare(vm_int_negate(pow2(70)), small(-5), &ok), -1);
    vm_num_compare(small(1), str("a"), &ok);
    assert_false(ok);
    vm_num_compare(str("a"), small(1), &ok);
    assert_false(ok);
    assert_true(vm_num_equal(small(1), dbl(1.0)));
    assert_true(vm_num_equal(dbl(1.0), small(1)));
    assert_true(vm_num_equal(pow2(100), pow2(100)));
    assert_false(vm_num_equal(pow2(100), str("a")));
    assert_false(vm_num_equal(dbl(NAN), dbl(NAN)));
}

static void doubles_print_shortest_round_trip_text(void **state)
{
    (void)state;
    assert_double_text(0.1, "0.1");
    assert_double_text(1.0, "1.0");
    assert_double_text(1.1, "1.1");
    assert_double_text(0.5, "0.5");
    assert_double_text(55.0, "55.0");
    assert_double_text(1e100, "1e100");
    assert_double_text(1.0 / 3, "0.3333333333333333");
    assert_double_text(2.0 / 3, "0.6666666666666666");
    assert_double_text(-0.0, "-0.0");
    assert_double_text(0.0, "0.0");
    assert_double_text(-1.5, "-1.5");
    assert_double_text(100000.19879879123153, "100000.19879879123");
    assert_double_text(1073741825.1, "1073741825.1");
    assert_double_text(1.1 - 1, "0.10000000000000009");
    assert_double_text(1.1 - 1.2, "-0.09999999999999987");
    assert_double_text(9007199254740992.0, "9007199254740992.0");
    assert_double_text(1e15, "1000000000000000.0");
    assert_double_text(1e16, "1e16");
    assert_double_text(0x1p62, "4.611686018427388e18");
    assert_double_text(1.1 * 0x1p60, "1.2682136550675318e18");
    assert_double_text(123456789012345680.0, "1.2345678901234568e17");
    assert_double_text(1e23, "1e23");
    assert_double_text(1e-4, "0.0001");
    assert_double_text(1.5e-5, "1.5e-5");
    assert_double_text(0x1p-1074, "5e-324");
    assert_double_text(DBL_MIN, "2.2250738585072014e-308");
    assert_double_text(DBL_MAX, "1.7976931348623157e308");
    assert_double_text(-DBL_MAX, "-1.7976931348623157e308");
    assert_double_text(NAN, "NaN");
    assert_double_text(INFINITY, "inf");
    assert_double_text(-INFINITY, "-inf");
    assert_double_text(0.5403023058681398, "0.5403023058681398");
    assert_double_text(sqrt(3.0), "1.7320508075688772");
}

static uint64_t test_rng = 0x243f6a8885a308d3ull;

static uint64_t next_random(void)
{
    test_rng ^= test_rng << 13;
    test_rng ^= test_rng >> 7;
    test_rng ^= test_rng << 17;
    return test_rng;
}

static void printed_doubles_read_back_exactly_and_are_shortest(void **state)
{
    (void)state;
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = next_random();
        if (i % 4 == 0) bits = (bits & 0x800fffffffffffffull) | ((uint64_t)(1023 + (int)(bits % 120) - 60) << 52);
        if (i % 50 == 1) bits &= 0x800fffffffffffffull; /* subnormals */
        double d;
        memcpy(&d, &bits, sizeof d);
        if (!isfinite(d)) continue;
        char buf[VM_NUMFMT_DOUBLE_BUFSIZE];
        size_t len = vm_numfmt_double(d, buf);
        assert_true(len < VM_NUMFMT_DOUBLE_BUFSIZE);
        double back;
        assert_true(vm_numfmt_parse_double(buf, len, &back));
        if (memcmp(&back, &d, sizeof d) != 0) fail_msg("%a printed as %s reads back as %a", d, buf, back);
        if (d == 0) continue;
        char dig[VM_NUMFMT_DIGITS_MAX];
        int k;
        int n = vm_numfmt_shortest_digits(fabs(d), dig, &k);
        assert_true(n >= 1 && n <= VM_NUMFMT_DIGITS_MAX);
        assert_true(dig[n - 1] != '0');
        /* no correctly rounded shorter text reads back */
        if (n > 1) {
            char shorter[40];
            snprintf(shorter, sizeof shorter, "%.*e", n - 2, fabs(d));
            if (strtod(shorter, NULL) == fabs(d)) fail_msg("%s is shorter than the digits of %a", shorter, d);
        }
    }
}

static void double_text_parses_strictly(void **state)
{
    (void)state;
    static const struct { const char *text; double value; } good[] = {
        {"0", 0.0},      {"1", 1.0},       {"-1", -1.0},     {"9999999", 9999999.0}, {"0.1", 0.1},
        {"-0.1", -0.1},  {"12.34", 12.34}, {"-12.34", -12.34}, {"1e10", 1e10},       {"1.5E-3", 1.5e-3},
        {".5", 0.5},     {"5.", 5.0},      {"+2.5", 2.5},    {"3423.54656", 3423.54656},
        {"1e400", INFINITY}, {"inf", INFINITY}, {"-inf", -INFINITY},
        {"2.2250738585072011e-308", 2.2250738585072011e-308},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double d;
        assert_true(vm_numfmt_parse_double(good[i].text, strlen(good[i].text), &d));
        assert_true(d == good[i].value);
    }
    double d;
    assert_true(vm_numfmt_parse_double("NaN", 3, &d));
    assert_true(isnan(d));
    assert_true(vm_numfmt_parse_double("-0.0", 4, &d));
    assert_true(d == 0 && signbit(d));
    static const char *bad[] = {"", "-", ".", "123.b", "e5", "1e", "1e+", "1.2.3", " 1", "1 ", "0x10", "infinity",
                                "nan", "1,5", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (vm_numfmt_parse_double(bad[i], strlen(bad[i]), &d)) fail_msg("'%s' parsed", bad[i]);
}

/* -- Integer primitives ----------------------------------------------------------------------- */

static void integer_primitives_coerce_and_check_their_arguments(void **state)
{
    (void)state;
    assert_true(int_ok("+", small(1), small(1)) == small(2));
    assert_int_text(int_ok("*", pow2(62), small(2)), "9223372036854775808");
    assert_true(double_of(int_ok("+", small(1), dbl(1.1))) == 1 + 1.1);
    assert_true(double_of(int_ok("-", small(-1), dbl(-1.1))) == -1 - -1.1);
    assert_double_text(double_of(int_ok("+", pow2(200), dbl(1.1))), "1.6069380442589903e60");
    run_fails(vm_prims_integer, "+", false, small(0), str("a"), "Expected a numeric type but got type 'String_'.");
    run_fails(vm_prims_integer, "-", false, pow2(200), vm_nil, "Expected a numeric type but got type 'Inst'.");
    run_fails(vm_prims_integer, "+", false, pow2(2000), dbl(1.1), "Can't represent as double.");
    run_fails(vm_prims_integer, "<", false, small(0), str("a"), "Expected a numeric type but got type 'String_'.");
    run_fails(vm_prims_integer, "&", false, small(1), dbl(1.1), "Expected object of type 'Int' but got type 'Double'.");
    run_fails(vm_prims_integer, "bitXor:", false, small(1), str("a"),
              "Expected object of type 'Int' but got type 'String_'.");
    assert_true(int_ok("=", small(0), str("a")) == vm_false);
    assert_true(int_ok("=", pow2(63), str("a")) == vm_false);
    assert_true(int_ok("=", small(1), dbl(1.0)) == vm_true);
    assert_true(int_ok("=", pow2(63), pow2(63)) == vm_true);
    assert_true(int_ok("<", vm_int_negate(pow2(100)), small(-1)) == vm_true);
    assert_true(int_ok("<", pow2(100), small(1)) == vm_false);
    assert_true(int_ok("<", small(1), dbl(1.5)) == vm_true);
}

static void integer_division_primitives_follow_som(void **state)
{
    (void)state;
    assert_true(int_ok("/", small(-12), small(-4)) == small(3));
    assert_true(int_ok("/", small(10), dbl(1.3)) == small(7));
    assert_true(int_ok("/", small(-10), dbl(0.3)) == small(-33));
    assert_int_text(int_ok("/", pow2(200), dbl(1.3)), "1236106187891530871397840632111672689764312345256368613097472");
    assert_true(double_of(int_ok("//", small(7), small(2))) == 3.5);
    assert_true(double_of(int_ok("//", small(-10), small(2))) == -5.0);
    assert_true(double_of(int_ok("//", small(5), dbl(2.5))) == 2.0);
    assert_true(int_ok("%", small(-10), small(3)) == small(2));
    assert_true(int_ok("rem:", small(-10), small(3)) == small(-1));
    assert_double_text(double_of(int_ok("%", small(5), dbl(1.2))), "0.20000000000000018");
    assert_double_text(double_of(int_ok("%", pow2(200), dbl(1.2))), "0.42963264371141974");
    run_fails(vm_prims_integer, "/", false, small(10), small(0), "Division by zero.");
    run_fails(vm_prims_integer, "/", false, pow2(63), small(0), "Division by zero.");
    run_fails(vm_prims_integer, "/", false, small(1), dbl(0.0), "Division by zero.");
    run_fails(vm_prims_integer, "/", false, pow2(2000), dbl(0.0), "Division by zero.");
    run_fails(vm_prims_integer, "/", false, pow2(2000), dbl(1.1), "Can't represent as double.");
    /* // is IEEE division, by zero too (docs/conformance.md: the decisions) */
    assert_true(double_of(int_ok("//", small(10), small(0))) == INFINITY);
    assert_true(double_of(int_ok("//", small(-10), small(0))) == -INFINITY);
    assert_true(isnan(double_of(int_ok("//", small(0), small(0)))));
    assert_true(double_of(int_ok("//", pow2(200), dbl(0.0))) == INFINITY);
    run_fails(vm_prims_integer, "//", false, small(1), str("a"), "Expected a numeric type but got type 'String_'.");
    run_fails(vm_prims_integer, "%", false, pow2(200), str("a"), "Expected a numeric type but got type 'String_'.");
    run_fails(vm_prims_integer, "%", false, small(1), small(0), "Division by zero.");
    run_fails(vm_prims_integer, "rem:", false, small(10), small(0), "Division by zero or overflow.");
}

static void integer_shift_primitives_follow_som(void **state)
{
    (void)state;
    assert_int_text(int_ok("<<", small(-1), small(63)), "-9223372036854775808");
    assert_true(int_ok(">>>", small(1023), small(3)) == small(127));
    assert_int_text(int_ok(">>>", small(-1), small(1)), "9223372036854775807");
    assert_int_text(int_ok(">>>", small(-1024), small(1)), "9223372036854775296");
    assert_true(int_ok(">>>", small(-1), small(0)) == small(-1));
    assert_true(int_ok(">>>", pow2(200), small(200)) == small(1));
    run_fails(vm_prims_integer, "<<", false, small(1), small(-1), "Negative shift.");
    run_fails(vm_prims_integer, "<<", false, small(1), pow2(200), "Shift too big.");
    run_fails(vm_prims_integer, "<<", false, pow2(200), pow2(150), "Shift too big.");
    run_fails(vm_prims_integer, ">>>", false, small(1), pow2(100), "Shift too big.");
    run_fails(vm_prims_integer, ">>>", false, small(1), str("a"), "Expected a numeric type but got type 'String_'.");
}

static void integer_conversion_primitives_follow_som(void **state)
{
    (void)state;
    Oop s = int_ok("asString", I("-1267650600228229401496703205376"), 0);
    assert_true(vm_is_string(s));
    assert_int_equal(obj_byte_length(s), 32);
    assert_memory_equal(obj_bytes(s), "-1267650600228229401496703205376", 32);
    assert_true(double_of(int_ok("asDouble", small(-2147483648), 0)) == -2147483648.0);
    run_fails(vm_prims_integer, "asDouble", false, pow2(1024), 0, "Can't represent as double.");
    assert_true(int_ok("as32BitSignedValue", pow2(31), 0) == small(INT32_MIN));
    assert_true(int_ok("as32BitUnsignedValue", small(-1), 0) == small(4294967295));
    assert_true(int_ok("sqrt", small(4), 0) == small(2));
    assert_true(double_of(int_ok("sqrt", small(3), 0)) == sqrt(3.0));
    assert_int_text(int_ok("sqrt", pow2(200), 0), "1267650600228229401496703205376");
    assert_true(vm_is_large_int(int_ok("sqrt", pow2(199), 0))); /* SOM's test int29 */
    assert_true(vm_is_double(int_ok("sqrt", pow2(62), 0)) == false); /* exact */
    assert_true(vm_is_double(int_ok("sqrt", vm_int_add(pow2(62), small(1)), 0)));
    run_fails(vm_prims_integer, "sqrt", false, small(-1), 0, "Domain error.");
    run_fails(vm_prims_integer, "sqrt", false, vm_int_negate(pow2(200)), 0, "Domain error.");

    const VmPrimDef *from = find_prim(vm_prims_integer, "fromString:", true);
    Oop args[2] = {vm_nil, str("-1267650600228229401496703205376")}, r;
    assert_true(from->fn(args, &r));
    assert_int_text(r, "-1267650600228229401496703205376");
    args[1] = str("9999999");
    assert_true(from->fn(args, &r) && r == small(9999999));
    run_fails(vm_prims_integer, "fromString:", true, vm_nil, str("123b"), "'123b' cannot be converted to an Integer.");
    run_fails(vm_prims_integer, "fromString:", true, vm_nil, small(3),
              "Expected object of type 'String_' but got type 'Int'.");
}

static void at_random_stays_in_range(void **state)
{
    (void)state;
    bool seen[10] = {false};
    for (int i = 0; i < 2000; i++) {
        Oop r = int_ok("atRandom", small(10), 0);
        assert_true(oop_is_int(r) && oop_int(r) >= 0 && oop_int(r) < 10);
        seen[oop_int(r)] = true;
        r = int_ok("atRandom", small(-5), 0);
        assert_true(oop_is_int(r) && oop_int(r) <= 0 && oop_int(r) > -5);
    }
    for (int i = 0; i < 10; i++) assert_true(seen[i]);
    assert_true(int_ok("atRandom", small(0), 0) == small(0));
    Oop bound = vm_int_add(pow2(100), small(3));
    for (int i = 0; i < 200; i++) {
        Oop r = int_ok("atRandom", bound, 0);
        assert_normalized(r);
        assert_true(vm_int_compare(r, small(0)) >= 0 && vm_int_compare(r, bound) < 0);
        r = int_ok("atRandom", vm_int_negate(bound), 0);
        assert_true(vm_int_compare(r, small(0)) <= 0 && vm_int_compare(r, vm_int_negate(bound)) > 0);
    }
}

/* -- Double primitives ----------------------------------------------------------------------- */

static void double_primitives_follow_som(void **state)
{
    (void)state;
    assert_double_text(double_of(dbl_ok("+", dbl(1.1), small(1 << 30))), "1073741825.1");
    assert_double_text(double_of(dbl_ok("-", dbl(1.1), pow2(60))), "-1.152921504606847e18");
    assert_double_text(double_of(dbl_ok("*", dbl(1.1), dbl(1.2))), "1.32");
    assert_true(double_of(dbl_ok("//", dbl(0.5), small(2))) == 0.25);
    assert_double_text(double_of(dbl_ok("//", dbl(1.5), pow2(200))), "9.334522916791713e-61");
    assert_true(double_of(dbl_ok("%", dbl(-3.0), dbl(2.0))) == -1.0);
    assert_true(double_of(dbl_ok("%", dbl(3.0), dbl(-2.0))) == 1.0);
    assert_double_text(double_of(dbl_ok("%", dbl(1.2), dbl(1.1))), "0.09999999999999987");
    assert_true(double_of(dbl_ok("%", dbl(1.1), pow2(200))) == 1.1);
    assert_double_text(double_of(dbl_ok("sqrt", dbl(1.21), 0)), "1.1");
    assert_true(isnan(double_of(dbl_ok("sqrt", dbl(-1.1), 0))));
    assert_double_text(double_of(dbl_ok("cos", dbl(1.0), 0)), "0.5403023058681398");
    assert_double_text(double_of(dbl_ok("sin", dbl(2.0), 0)), "0.9092974268256817");
    assert_true(double_of(dbl_ok("//", dbl(1.1), dbl(0.0))) == INFINITY);
    assert_true(double_of(dbl_ok("//", dbl(-1.1), small(0))) == -INFINITY);
    assert_true(double_of(dbl_ok("//", dbl(1.1), dbl(-0.0))) == -INFINITY);
    assert_true(isnan(double_of(dbl_ok("//", dbl(0.0), dbl(0.0)))));
    run_fails(vm_prims_double, "//", false, dbl(1.1), str("a"), "Expected a numeric type but got type 'String_'.");
    run_fails(vm_prims_double, "%", false, dbl(1.1), str("a"), "Expected a numeric type but got type 'String_'.");
    run_fails(vm_prims_double, "+", false, dbl(0.1), pow2(1024), "Can't represent as double.");
    run_fails(vm_prims_double, "<", false, dbl(0.1), vm_true, "Expected a numeric type but got type 'Inst'.");
    assert_true(dbl_ok("=", dbl(1.0), small(1)) == vm_true);
    assert_true(dbl_ok("=", dbl(0.0), dbl(-0.0)) == vm_true);
    assert_true(dbl_ok("=", dbl(1.0), str("1.0")) == vm_false);
    assert_true(dbl_ok("<", dbl(0.499999999), dbl(0.5)) == vm_true);
    assert_true(dbl_ok("<", dbl(INFINITY), I("999999999999999999999999")) == vm_false);
}

static void double_rounding_primitives_follow_som(void **state)
{
    (void)state;
    static const struct { double x; intptr_t round, trunc; } cases[] = {
        {1.0, 1, 1},   {1.1, 1, 1},    {1.4999, 1, 1}, {1.5, 2, 1},   {1.9, 2, 1},
        {-1.1, -1, -1}, {-1.5, -1, -1}, {-1.9, -2, -1}, {0.49999999999999994, 0, 0}, {445.34, 445, 445},
        {-0.1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_true(dbl_ok("round", dbl(cases[i].x), 0) == small(cases[i].round));
        assert_true(dbl_ok("asInteger", dbl(cases[i].x), 0) == small(cases[i].trunc));
    }
    assert_int_text(dbl_ok("round", dbl(0x1p200 + 1.1), 0), "1606938044258990275541962092341162602522202993782792835301376");
    assert_int_text(dbl_ok("asInteger", dbl(-18446744073709551616.0), 0), "-18446744073709551616");
    run_fails(vm_prims_double, "asInteger", false, dbl(INFINITY), 0, "Can't represent infinity as an Integer.");
    run_fails(vm_prims_double, "round", false, dbl(NAN), 0, "Can't represent NaN as an Integer.");
}

static void double_text_primitives_follow_som(void **state)
{
    (void)state;
    Oop s = dbl_ok("asString", dbl(0.5), 0);
    assert_true(vm_is_string(s));
    assert_int_equal(obj_byte_length(s), 3);
    assert_memory_equal(obj_bytes(s), "0.5", 3);

    const VmPrimDef *inf = find_prim(vm_prims_double, "PositiveInfinity", true);
    Oop args[2] = {vm_nil, 0}, r;
    assert_true(inf->fn(args, &r));
    assert_true(isinf(double_of(r)) && double_of(r) > 0);

    const VmPrimDef *from = find_prim(vm_prims_double, "fromString:", true);
    args[1] = str("-672.433244");
    assert_true(from->fn(args, &r));
    assert_true(double_of(r) == -672.433244);
    args[1] = str("1");
    assert_true(from->fn(args, &r) && double_of(r) == 1.0);
    run_fails(vm_prims_double, "fromString:", true, vm_nil, str("123.b"), "'123.b' cannot be converted to a Double.");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_overflow_promotes_to_large),
        cmocka_unit_test(large_results_shrink_back_to_small),
        cmocka_unit_test(two_raised_to_100_by_repeated_multiplication),
        cmocka_unit_test(hundred_factorial_has_its_exact_digits),
        cmocka_unit_test(addition_across_signs_and_sizes),
        cmocka_unit_test(division_follows_som_sign_rules_for_small_values),
        cmocka_unit_test(division_follows_som_sign_rules_for_large_values),
        cmocka_unit_test(integer_division_to_double_is_exactly_rounded),
        cmocka_unit_test(shifts_cross_limb_boundaries),
        cmocka_unit_test(bit_operations_use_twos_complement),
        cmocka_unit_test(low_32_bits_read_signed_and_unsigned),
        cmocka_unit_test(decimal_text_round_trips),
        cmocka_unit_test(decimal_parsing_rejects_bad_text),
        cmocka_unit_test(integers_convert_to_doubles_rounding_to_even),
        cmocka_unit_test(doubles_convert_to_integers_by_truncation),
        cmocka_unit_test(square_roots_are_exact_when_they_can_be),
        cmocka_unit_test(mixed_comparisons_are_exact),
        cmocka_unit_test(doubles_print_shortest_round_trip_text),
        cmocka_unit_test(printed_doubles_read_back_exactly_and_are_shortest),
        cmocka_unit_test(double_text_parses_strictly),
        cmocka_unit_test(integer_primitives_coerce_and_check_their_arguments),
        cmocka_unit_test(integer_division_primitives_follow_som),
        cmocka_unit_test(integer_shift_primitives_follow_som),
        cmocka_unit_test(integer_conversion_primitives_follow_som),
        cmocka_unit_test(at_random_stays_in_range),
        cmocka_unit_test(double_primitives_follow_som),
        cmocka_unit_test(double_rounding_primitives_follow_som),
        cmocka_unit_test(double_text_primitives_follow_som),
        cmocka_unit_test(immediate_doubles_cover_their_range_exactly),
    };
    return cmocka_run_group_tests(tests, setup_heap, teardown_heap);
}
