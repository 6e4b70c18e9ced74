/*
 * vm/number/numfmt.c — shortest round-trip printing and strict parsing of doubles.
 *
 * The digit generator is the free-format algorithm of Steele & White as
 * refined by Burger & Dybvig ("Printing Floating-Point Numbers Quickly and
 * Accurately", PLDI 1996): v and the half-gaps to its neighbours m- and m+
 * are scaled to exact integers r/s, m-/s, m+/s; digits are produced until
 * the text so far lies within the rounding interval of v. Bounds are
 * inclusive when v's mantissa is even (round-half-even reading, as strtod
 * does), and a final tie rounds up, as Rust's formatter (which produced
 * SOM's reference outputs) does.
 */
#define _GNU_SOURCE /* strtod_l, newlocale: parse with '.' whatever the locale */

#include "vm/number/numfmt.h"

#include "vm/number/gmplib.h"
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* r, s, m+ and m- stay below 2^1140 (the widest case is the smallest
 * subnormal: 4f * 10^324 against 2^1076); 40 limbs leave ample room. */
#define BIG_LIMBS 40

typedef struct Big {
    mp_limb_t d[BIG_LIMBS];
    mp_size_t n; /* no high zero limbs */
} Big;

static void big_set(Big *b, uint64_t v)
{
    b->d[0] = v;
    b->n = v != 0;
}

static void big_shl(Big *b, unsigned k)
{
    if (b->n == 0) return;
    unsigned whole = k / 64, bits = k % 64;
    if (bits) {
        mp_limb_t out = mpn_lshift(b->d, b->d, b->n, bits);
        if (out) b->d[b->n++] = out;
    }
    if (whole) {
        memmove(b->d + whole, b->d, (size_t)b->n * sizeof(mp_limb_t));
        memset(b->d, 0, whole * sizeof(mp_limb_t));
        b->n += whole;
    }
}

static void big_mul_small(Big *b, mp_limb_t m)
{
    if (b->n == 0) return;
    mp_limb_t out = mpn_mul_1(b->d, b->d, b->n, m);
    if (out) b->d[b->n++] = out;
}

static void big_mul_pow10(Big *b, int k)
{
    static const mp_limb_t pow10[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
        1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
        100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
        1000000000000000000ull, 10000000000000000000ull};
    for (; k >= 19; k -= 19) big_mul_small(b, pow10[19]);
    if (k > 0) big_mul_small(b, pow10[k]);
}

static int big_cmp(const Big *a, const Big *b)
{
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->n == 0 ? 0 : mpn_cmp(a->d, b->d, a->n);
}

static void big_add(Big *r, const Big *a, const Big *b)
{
    const Big *x = a->n >= b->n ? a : b, *y = x == a ? b : a;
    if (y->n == 0) {
        *r = *x;
        return;
    }
    mp_limb_t carry = mpn_add(r->d, x->d, x->n, y->d, y->n);
    r->n = x->n;
    if (carry) r->d[r->n++] = carry;
}

/* a -= b, where a >= b */
static void big_sub(Big *a, const Big *b)
{
    if (b->n) mpn_sub(a->d, a->d, a->n, b->d, b->n);
    while (a->n > 0 && a->d[a->n - 1] == 0) a->n--;
}

/* Compares (a + b) with c. */
static int big_cmp_sum(const Big *a, const Big *b, const Big *c)
{
    Big t;
    big_add(&t, a, b);
    return big_cmp(&t, c);
}

/* -- Digits ------------------------------------------------------------------ */

/* Integral v below 2^53: its own digits are the shortest text, since the
 * spacing of doubles there is at most 1. */
static int integer_digits(uint64_t m, char *digits, int *exp10)
{
    int zeros = 0;
    while (m % 10 == 0) { /* m >= 1: trailing zeros become the exponent */
        m /= 10;
        zeros++;
    }
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    *exp10 = n + zeros;
    for (int i = 0; i < n; i++) digits[i] = tmp[n - 1 - i];
    return n;
}

int vm_numfmt_shortest_digits(double v, char digits[VM_NUMFMT_DIGITS_MAX], int *exp10)
{
    if (v < 9007199254740992.0 && v == trunc(v)) return integer_digits((uint64_t)v, digits, exp10);

    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ff);
    uint64_t f = bits & ((1ull << 52) - 1);
    int e;
    if (be == 0) {
        e = -1074;
    } else {
        f |= 1ull << 52;
        e = be - 1075;
    }
    /* At a power of two (not the smallest normal) the gap below is half the gap above. */
    bool closer_below = f == (1ull << 52) && be > 1;
    bool even = (f & 1) == 0;

    Big r, s, mp, mm;
    big_set(&r, f);
    if (e >= 0) {
        big_shl(&r, (unsigned)e + (closer_below ? 2 : 1));
        big_set(&s, closer_below ? 4 : 2);
        big_set(&mm, 1);
        big_shl(&mm, (unsigned)e);
        big_set(&mp, 1);
        big_shl(&mp, (unsigned)e + (closer_below ? 1 : 0));
    } else {
        big_shl(&r, closer_below ? 2 : 1);
        big_set(&s, 1);
        big_shl(&s, (unsigned)(-e) + (closer_below ? 2 : 1));
        big_set(&mm, 1);
        big_set(&mp, closer_below ? 2 : 1);
    }

    /* k = ceil(log10 v) or one less; log10(2^E) is never within 1e-4 of an
     * integer for the exponents of doubles (E != 0), so the estimate never
     * overshoots. The fixup below adds the missing one. */
    int E = e + 63 - __builtin_clzll(f);
    int k = (int)ceil(E * 0.30102999566398119521 - 1e-10);
    if (k >= 0) {
        big_mul_pow10(&s, k);
    } else {
        big_mul_pow10(&r, -k);
        big_mul_pow10(&mp, -k);
        big_mul_pow10(&mm, -k);
    }
    int c = big_cmp_sum(&r, &mp, &s);
    if (even ? c >= 0 : c > 0) {
        k++;
        big_mul_small(&s, 10);
    }
    *exp10 = k;

    int n = 0;
    for (;;) {
        big_mul_small(&r, 10);
        big_mul_small(&mp, 10);
        big_mul_small(&mm, 10);
        int d = 0;
        while (big_cmp(&r, &s) >= 0) {
            big_sub(&r, &s);
            d++;
        }
        int lo = big_cmp(&r, &mm);
        int hi = big_cmp_sum(&r, &mp, &s);
        bool low_ok = even ? lo <= 0 : lo < 0;  /* truncating here stays above v - m- */
        bool high_ok = even ? hi >= 0 : hi > 0; /* rounding up stays below v + m+ */
        if (!low_ok && !high_ok) {
            digits[n++] = (char)('0' + d);
            continue;
        }
        if (low_ok && high_ok) {
            Big twice = r;
            big_shl(&twice, 1);
            if (big_cmp(&twice, &s) >= 0) d++;
        } else if (high_ok) {
            d++;
        }
        digits[n++] = (char)('0' + d);
        return n;
    }
}

/* -- Printing ------------------------------------------------------------------ */

static size_t put(char *buf, size_t at, const char *s)
{
    size_t n = strlen(s);
    memcpy(buf + at, s, n);
    return at + n;
}

size_t vm_numfmt_double(double d, char buf[VM_NUMFMT_DOUBLE_BUFSIZE])
{
    size_t at = 0;
    if (isnan(d)) {
        at = put(buf, 0, "NaN");
        buf[at] = '\0';
        return at;
    }
    if (signbit(d)) {
        buf[at++] = '-';
        d = -d;
    }
    if (isinf(d)) {
        at = put(buf, at, "inf");
    } else if (d == 0) {
        at = put(buf, at, "0.0");
    } else {
        char dig[VM_NUMFMT_DIGITS_MAX];
        int k;
        int n = vm_numfmt_shortest_digits(d, dig, &k);
        if (d >= 1e16 || d < 1e-4) {
            buf[at++] = dig[0];
            if (n > 1) {
                buf[at++] = '.';
                memcpy(buf + at, dig + 1, (size_t)n - 1);
                at += (size_t)n - 1;
            }
            buf[at++] = 'e';
            int x = k - 1;
            if (x < 0) {
                buf[at++] = '-';
                x = -x;
            }
            char tmp[8];
            int t = 0;
            do {
                tmp[t++] = (char)('0' + x % 10);
                x /= 10;
            } while (x);
            while (t) buf[at++] = tmp[--t];
        } else if (k <= 0) {
            at = put(buf, at, "0.");
            for (int i = 0; i < -k; i++) buf[at++] = '0';
            memcpy(buf + at, dig, (size_t)n);
            at += (size_t)n;
        } else if (k < n) {
            memcpy(buf + at, dig, (size_t)k);
            at += (size_t)k;
            buf[at++] = '.';
            memcpy(buf + at, dig + k, (size_t)(n - k));
            at += (size_t)(n - k);
        } else {
            memcpy(buf + at, dig, (size_t)n);
            at += (size_t)n;
            for (int i = n; i < k; i++) buf[at++] = '0';
            at = put(buf, at, ".0");
        }
    }
    buf[at] = '\0';
    return at;
}

/* -- Parsing -------------------------------------------------------------------- */

static size_t skip_digits(const char *s, size_t i, size_t len)
{
    while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    return i;
}

static bool is_number_syntax(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    size_t int_start = i;
    i = skip_digits(s, i, len);
    size_t int_digits = i - int_start, frac_digits = 0;
    if (i < len && s[i] == '.') {
        size_t frac_start = ++i;
        i = skip_digits(s, i, len);
        frac_digits = i - frac_start;
    }
    if (int_digits + frac_digits == 0) return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        size_t exp_start = i;
        i = skip_digits(s, i, len);
        if (i == exp_start) return false;
    }
    return i == len;
}

static bool equals_text(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

static locale_t c_numeric_locale(void)
{
    static locale_t loc;
    static bool tried;
    if (!tried) { /* the VM is single-threaded */
        tried = true;
        loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    }
    return loc;
}

bool vm_numfmt_parse_double(const char *s, size_t len, double *out)
{
    size_t sign = len > 0 && (s[0] == '+' || s[0] == '-');
    bool neg = sign && s[0] == '-';
    if (equals_text(s + sign, len - sign, "inf")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (equals_text(s, len, "NaN")) {
        *out = NAN;
        return true;
    }
    if (!is_number_syntax(s, len)) return false;
    char local[64];
    char *copy = len < sizeof local ? local : malloc(len + 1);
    if (!copy) return false;
    memcpy(copy, s, len);
    copy[len] = '\0';
    locale_t loc = c_numeric_locale();
    /* ERANGE is fine: overflow reads as an infinity, underflow as 0 or a subnormal */
    *out = loc ? strtod_l(copy, NULL, loc) : strtod(copy, NULL);
    if (copy != local) free(copy);
    return true;
}
