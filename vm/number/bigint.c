/*
 * vm/number/bigint.c — arbitrary precision Integers on GMP's mpn layer.
 *
 * Every operation reads its operands through an IntView (sign + magnitude
 * limbs; a SmallInteger's magnitude lives in the view itself), computes the
 * magnitude into scratch memory with mpn_* and hands it to make_int, which
 * strips high zero limbs and either answers a SmallInteger or copies the
 * limbs into a freshly allocated large integer. Allocation never collects,
 * so heap operands read through views stay put while a result is allocated.
 */
#include "vm/number/bigint.h"

#include "gc/heap.h"
#include "vm/model/universe.h"

#include "vm/number/gmplib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(GMP_NUMB_BITS == 64, "limbs are whole 64-bit words (no nails)");
_Static_assert(sizeof(mp_limb_t) == sizeof(Oop), "a large integer's slots are its limbs");
_Static_assert(sizeof(mp_limb_t) == sizeof(uint64_t), "vm_int_from_limbs takes uint64_t limbs");

/* Results up to this many limbs (4096 bits) are computed on the C stack;
 * larger ones in malloc'd scratch. */
#define SCRATCH_LOCAL_LIMBS 64

/* Limbs of the largest finite double's integer part (2^1024 needs 17). */
#define DOUBLE_INT_LIMBS 17

/* -- Views and results ----------------------------------------------------- */

typedef struct IntView {
    const mp_limb_t *d; /* magnitude, least significant limb first */
    mp_size_t n;        /* 0 for zero; d[n-1] != 0 otherwise */
    bool neg;
    mp_limb_t small; /* storage for a SmallInteger's magnitude */
} IntView;

static const mp_limb_t *large_limbs(Oop o) { return (const mp_limb_t *)obj_slots(o); }

static bool is_large_neg(Oop o) { return obj_class_index(o) == CLASS_INDEX_LARGE_NEG; }

static void view_of(Oop o, IntView *v)
{
    if (oop_is_int(o)) {
        intptr_t x = oop_int(o);
        v->neg = x < 0;
        v->small = x < 0 ? (mp_limb_t)0 - (mp_limb_t)x : (mp_limb_t)x;
        v->d = &v->small;
        v->n = x != 0;
    } else {
        v->neg = is_large_neg(o);
        v->d = large_limbs(o);
        v->n = (mp_size_t)obj_num_slots(o);
    }
}

/* The one place results are born: normalizes to a SmallInteger when the
 * value fits, so the representation of every value is unique. */
static Oop make_int(const mp_limb_t *d, mp_size_t n, bool neg)
{
    while (n > 0 && d[n - 1] == 0) n--;
    if (n == 0) return oop_from_int(0);
    if (n == 1) {
        if (!neg && d[0] <= (mp_limb_t)OOP_INT_MAX) return oop_from_int((intptr_t)d[0]);
        /* -(2^62) is the most negative SmallInteger */
        if (neg && d[0] <= (mp_limb_t)OOP_INT_MAX + 1) return oop_from_int(-(intptr_t)(d[0] - 1) - 1);
    }
    Oop o = gc_alloc(neg ? CLASS_INDEX_LARGE_NEG : CLASS_INDEX_LARGE_POS, FMT_WORDS, (size_t)n);
    if (o == 0) return 0;
    memcpy(obj_slots(o), d, (size_t)n * sizeof(mp_limb_t));
    return o;
}

typedef struct Scratch {
    mp_limb_t *p;
    mp_limb_t local[SCRATCH_LOCAL_LIMBS];
} Scratch;

/* NULL when malloc fails; callers answer 0 (out of memory). */
static mp_limb_t *scratch_get(Scratch *s, size_t n)
{
    s->p = n <= SCRATCH_LOCAL_LIMBS ? s->local : malloc(n * sizeof(mp_limb_t));
    return s->p;
}

static void scratch_put(Scratch *s)
{
    if (s->p != s->local) free(s->p);
}

static int cmp_mag(const mp_limb_t *a, mp_size_t an, const mp_limb_t *b, mp_size_t bn)
{
    if (an != bn) return an < bn ? -1 : 1;
    return an == 0 ? 0 : mpn_cmp(a, b, an);
}

static int cmp_views(const IntView *a, const IntView *b)
{
    if (a->neg != b->neg) return a->neg ? -1 : 1; /* zero is never neg */
    int c = cmp_mag(a->d, a->n, b->d, b->n);
    return a->neg ? -c : c;
}

static size_t limbs_bit_length(const mp_limb_t *d, mp_size_t n)
{
    if (n == 0) return 0;
    return (size_t)n * 64 - (size_t)__builtin_clzll(d[n - 1]);
}

static unsigned bit_at(const mp_limb_t *d, mp_size_t n, size_t i)
{
    size_t limb = i / 64;
    return limb < (size_t)n ? (unsigned)(d[limb] >> (i % 64)) & 1 : 0;
}

/* Any of bits [0, i) set? */
static bool any_bit_below(const mp_limb_t *d, mp_size_t n, size_t i)
{
    size_t whole = i / 64;
    for (size_t k = 0; k < whole && k < (size_t)n; k++)
        if (d[k]) return true;
    if (whole < (size_t)n && i % 64) return (d[whole] & (((mp_limb_t)1 << (i % 64)) - 1)) != 0;
    return false;
}

/* Bits [lo, lo + count) as a number, count <= 64. */
static uint64_t bits_at(const mp_limb_t *d, mp_size_t n, size_t lo, unsigned count)
{
    size_t limb = lo / 64;
    unsigned off = (unsigned)(lo % 64);
    uint64_t v = limb < (size_t)n ? d[limb] >> off : 0;
    if (off && limb + 1 < (size_t)n) v |= d[limb + 1] << (64 - off);
    return count >= 64 ? v : v & (((uint64_t)1 << count) - 1);
}

/* -- Construction and inspection ----------------------------------------- */

Oop vm_int_from_i64(int64_t v)
{
    if (oop_int_fits((intptr_t)v)) return oop_from_int((intptr_t)v);
    mp_limb_t mag = v < 0 ? (mp_limb_t)0 - (mp_limb_t)v : (mp_limb_t)v;
    return make_int(&mag, 1, v < 0);
}

Oop vm_int_from_u64(uint64_t v)
{
    mp_limb_t mag = v;
    return make_int(&mag, 1, false);
}

Oop vm_int_from_limbs(const uint64_t *limbs, size_t n, bool negative)
{
    return make_int((const mp_limb_t *)limbs, (mp_size_t)n, negative);
}

static Oop from_i128(__int128 v)
{
    unsigned __int128 mag = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
    mp_limb_t d[2] = {(mp_limb_t)mag, (mp_limb_t)(mag >> 64)};
    return make_int(d, 2, v < 0);
}

bool vm_int_is_negative(Oop i)
{
    return oop_is_int(i) ? oop_int(i) < 0 : is_large_neg(i);
}

bool vm_int_to_i64(Oop i, int64_t *out)
{
    if (oop_is_int(i)) {
        *out = oop_int(i);
        return true;
    }
    if (obj_num_slots(i) != 1) return false;
    mp_limb_t m = large_limbs(i)[0];
    if (!is_large_neg(i)) {
        if (m > (mp_limb_t)INT64_MAX) return false;
        *out = (int64_t)m;
        return true;
    }
    if (m > (mp_limb_t)INT64_MAX + 1) return false;
    *out = -(int64_t)(m - 1) - 1;
    return true;
}

size_t vm_int_bit_length(Oop i)
{
    IntView v;
    view_of(i, &v);
    return limbs_bit_length(v.d, v.n);
}

/* -- Addition, subtraction, multiplication -------------------------------- */

/* a + (b with sign bneg) */
static Oop add_views(const IntView *a, const IntView *b, bool bneg)
{
    if (b->n == 0) return make_int(a->d, a->n, a->neg);
    if (a->n == 0) return make_int(b->d, b->n, bneg);
    Scratch s;
    Oop result;
    if (a->neg == bneg) {
        const IntView *x = a->n >= b->n ? a : b, *y = x == a ? b : a;
        mp_limb_t *r = scratch_get(&s, (size_t)x->n + 1);
        if (!r) return 0;
        r[x->n] = mpn_add(r, x->d, x->n, y->d, y->n);
        result = make_int(r, x->n + 1, a->neg);
    } else {
        int c = cmp_mag(a->d, a->n, b->d, b->n);
        if (c == 0) return oop_from_int(0);
        const IntView *x = c > 0 ? a : b, *y = c > 0 ? b : a;
        bool neg = c > 0 ? a->neg : bneg;
        mp_limb_t *r = scratch_get(&s, (size_t)x->n);
        if (!r) return 0;
        mpn_sub(r, x->d, x->n, y->d, y->n);
        result = make_int(r, x->n, neg);
    }
    scratch_put(&s);
    return result;
}

Oop vm_int_add_slow(Oop a, Oop b)
{
    /* two SmallIntegers whose sum left 63 bits still fit 64 */
    if (oop_is_int(a) && oop_is_int(b)) return vm_int_from_i64((int64_t)oop_int(a) + (int64_t)oop_int(b));
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    return add_views(&x, &y, y.neg);
}

Oop vm_int_sub_slow(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b)) return vm_int_from_i64((int64_t)oop_int(a) - (int64_t)oop_int(b));
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    return add_views(&x, &y, y.n != 0 && !y.neg);
}

Oop vm_int_mul_slow(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b)) return from_i128((__int128)oop_int(a) * oop_int(b));
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    if (x.n == 0 || y.n == 0) return oop_from_int(0);
    const IntView *p = x.n >= y.n ? &x : &y, *q = p == &x ? &y : &x;
    Scratch s;
    mp_limb_t *r = scratch_get(&s, (size_t)(x.n + y.n));
    if (!r) return 0;
    mpn_mul(r, p->d, p->n, q->d, q->n);
    Oop result = make_int(r, x.n + y.n, x.neg != y.neg);
    scratch_put(&s);
    return result;
}

Oop vm_int_negate(Oop a)
{
    if (oop_is_int(a)) return vm_int_from_i64(-(int64_t)oop_int(a));
    IntView v;
    view_of(a, &v);
    return make_int(v.d, v.n, !v.neg);
}

/* -- Division -------------------------------------------------------------- */

typedef enum DivKind { DIV_QUO, DIV_REM, DIV_FLOOR, DIV_MOD } DivKind;

static Oop divide(Oop a, Oop b, DivKind kind)
{
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    if (y.n == 0) return 0; /* callers check; never reached from the primitives */
    if (x.n == 0) return oop_from_int(0);

    /* q: quotient (+1 limb for the floor adjustment), r: remainder, m: |b| - r */
    size_t qcap = (size_t)x.n + 2, rcap = (size_t)(x.n + y.n), mcap = (size_t)y.n + 1;
    Scratch s;
    mp_limb_t *q = scratch_get(&s, qcap + rcap + mcap);
    if (!q) return 0;
    mp_limb_t *r = q + qcap, *m = r + rcap;
    mp_size_t qn, rn;
    if (cmp_mag(x.d, x.n, y.d, y.n) < 0) {
        q[0] = 0;
        qn = 1;
        memcpy(r, x.d, (size_t)x.n * sizeof(mp_limb_t));
        rn = x.n;
    } else {
        qn = x.n - y.n + 1;
        rn = y.n;
        mpn_tdiv_qr(q, r, 0, x.d, x.n, y.d, y.n);
    }
    bool inexact = !mpn_zero_p(r, rn);
    bool signs_differ = x.neg != y.neg;
    Oop result;
    switch (kind) {
    case DIV_QUO:
        result = make_int(q, qn, signs_differ);
        break;
    case DIV_REM:
        result = make_int(r, rn, x.neg);
        break;
    case DIV_FLOOR:
        if (signs_differ && inexact) {
            q[qn] = mpn_add_1(q, q, qn, 1); /* -(|q| + 1) rounds toward minus infinity */
            qn++;
        }
        result = make_int(q, qn, signs_differ);
        break;
    case DIV_MOD:
    default:
        if (signs_differ && inexact) {
            mpn_sub(m, y.d, y.n, r, rn); /* r < |b|, so rn <= y.n */
            result = make_int(m, y.n, y.neg);
        } else {
            result = make_int(r, rn, y.neg);
        }
        break;
    }
    scratch_put(&s);
    return result;
}

Oop vm_int_quo(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b) && oop_int(b) != 0)
        return vm_int_from_i64((int64_t)oop_int(a) / (int64_t)oop_int(b)); /* MIN / -1 = 2^62 fits int64 */
    return divide(a, b, DIV_QUO);
}

Oop vm_int_rem(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b) && oop_int(b) != 0) return oop_from_int(oop_int(a) % oop_int(b));
    return divide(a, b, DIV_REM);
}

Oop vm_int_floor_div(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b) && oop_int(b) != 0) {
        int64_t x = oop_int(a), y = oop_int(b), q = x / y;
        if (x % y != 0 && (x < 0) != (y < 0)) q--;
        return vm_int_from_i64(q);
    }
    return divide(a, b, DIV_FLOOR);
}

Oop vm_int_mod(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b) && oop_int(b) != 0) {
        intptr_t x = oop_int(a), y = oop_int(b), r = x % y;
        if (r != 0 && (r < 0) != (y < 0)) r += y;
        return oop_from_int(r);
    }
    return divide(a, b, DIV_MOD);
}

/* -- Doubles ---------------------------------------------------------------- */

/* Rounds (d * 2^exp2 + a fraction below d's last bit when sticky) to the
 * nearest double, ties to even, subnormals included: the first p bits are
 * kept (53, or fewer below 2^-1022), the next bit rounds, the rest and
 * sticky break ties. A sticky caller must supply at least 55 bits, so that
 * the unknown fraction lies wholly below the rounding bit. */
static bool round_to_double(const mp_limb_t *d, mp_size_t n, long exp2, bool sticky, bool neg, double *out)
{
    while (n > 0 && d[n - 1] == 0) n--;
    size_t len = limbs_bit_length(d, n);
    if (len == 0) {
        *out = neg ? -0.0 : 0.0;
        return true;
    }
    long e = (long)len + exp2; /* value in [2^(e-1), 2^e) */
    if (e - 1 > 1023) return false;
    long p = e - 1 >= -1022 ? 53 : e + 1074;
    long drop = (long)len - p; /* bits below the kept ones */
    uint64_t m;
    if (drop <= 0) {
        m = bits_at(d, n, 0, 64) << -drop; /* len <= p <= 53: all of d fits */
    } else {
        m = p > 0 ? bits_at(d, n, (size_t)drop, (unsigned)p) : 0;
        bool round = bit_at(d, n, (size_t)drop - 1);
        bool rest = sticky || any_bit_below(d, n, (size_t)drop - 1);
        if (round && (rest || (m & 1))) m++;
    }
    double v = ldexp((double)m, (int)(e - p));
    if (isinf(v)) return false;
    *out = neg ? -v : v;
    return true;
}

bool vm_int_to_double(Oop i, double *out)
{
    if (oop_is_int(i)) {
        *out = (double)oop_int(i); /* cvtsi2sd rounds to nearest even */
        return true;
    }
    IntView v;
    view_of(i, &v);
    return round_to_double(v.d, v.n, 0, false, v.neg, out);
}

bool vm_int_div_to_double(Oop a, Oop b, double *out)
{
    if (oop_is_int(a) && oop_is_int(b)) {
        intptr_t x = oop_int(a), y = oop_int(b);
        const intptr_t exact = (intptr_t)1 << 53;
        if (x >= -exact && x <= exact && y >= -exact && y <= exact) {
            *out = (double)x / (double)y; /* both exact: IEEE division rounds once */
            return true;
        }
    }
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    bool neg = x.neg != y.neg;
    if (y.n == 0) return false; /* callers check for zero divisors */
    if (x.n == 0) {
        *out = neg ? -0.0 : 0.0;
        return true;
    }
    /* Scale so the integer quotient has 66..67 bits: enough for 53 bits, a
     * rounding bit and a sticky remainder, whatever the operands' sizes. */
    long shift = (long)limbs_bit_length(y.d, y.n) - (long)limbs_bit_length(x.d, x.n) + 66;
    size_t nshift = shift > 0 ? (size_t)shift : 0, dshift = shift < 0 ? (size_t)-shift : 0;
    mp_size_t nn = x.n + (mp_size_t)(nshift / 64) + 1, dn = y.n + (mp_size_t)(dshift / 64) + 1;
    Scratch s;
    mp_limb_t *num = scratch_get(&s, (size_t)(nn + dn + (nn + 1) + dn));
    if (!num) return false;
    mp_limb_t *den = num + nn, *q = den + dn, *r = q + nn + 1;
    for (int side = 0; side < 2; side++) {
        const IntView *v = side == 0 ? &x : &y;
        mp_limb_t *t = side == 0 ? num : den;
        mp_size_t tn = side == 0 ? nn : dn;
        size_t sh = side == 0 ? nshift : dshift;
        memset(t, 0, (size_t)tn * sizeof(mp_limb_t));
        mp_size_t whole = (mp_size_t)(sh / 64);
        if (sh % 64)
            t[whole + v->n] = mpn_lshift(t + whole, v->d, v->n, (unsigned)(sh % 64));
        else
            memcpy(t + whole, v->d, (size_t)v->n * sizeof(mp_limb_t));
    }
    while (nn > 0 && num[nn - 1] == 0) nn--;
    while (dn > 0 && den[dn - 1] == 0) dn--;
    bool ok;
    if (nn < dn) { /* cannot happen: the numerator was scaled above the denominator */
        ok = round_to_double(num, 0, 0, false, neg, out);
    } else {
        mpn_tdiv_qr(q, r, 0, num, nn, den, dn);
        ok = round_to_double(q, nn - dn + 1, -shift, !mpn_zero_p(r, dn), neg, out);
    }
    scratch_put(&s);
    return ok;
}

/* Integral finite t as magnitude limbs in buf; answers the limb count. */
static mp_size_t double_int_limbs(double t, mp_limb_t buf[DOUBLE_INT_LIMBS])
{
    memset(buf, 0, DOUBLE_INT_LIMBS * sizeof(mp_limb_t));
    double a = fabs(t);
    if (a < 1.0) return 0;
    int e;
    double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53);
    int sh = e - 53;
    if (sh <= 0) {
        buf[0] = m >> -sh; /* t is integral: no bits are lost */
        return 1;
    }
    int limb = sh / 64, off = sh % 64;
    buf[limb] = m << off;
    if (off) buf[limb + 1] = m >> (64 - off);
    mp_size_t n = limb + 2;
    while (n > 0 && buf[n - 1] == 0) n--;
    return n;
}

Oop vm_int_from_double(double d)
{
    double t = trunc(d);
    if (fabs(t) < 4611686018427387904.0) return oop_from_int((intptr_t)t); /* 2^62 */
    mp_limb_t buf[DOUBLE_INT_LIMBS];
    mp_size_t n = double_int_limbs(t, buf);
    return make_int(buf, n, t < 0);
}

/* -- Square root ------------------------------------------------------------ */

Oop vm_int_isqrt(Oop a, bool *exact)
{
    if (oop_is_int(a)) {
        int64_t x = oop_int(a), r = (int64_t)sqrt((double)x);
        /* the double estimate is within one of the truth below 2^62 */
        while (r > 0 && r * r > x) r--;
        while ((r + 1) * (r + 1) <= x) r++;
        *exact = r * r == x;
        return oop_from_int((intptr_t)r);
    }
    IntView v;
    view_of(a, &v);
    mp_size_t rootn = (v.n + 1) / 2;
    Scratch s;
    mp_limb_t *root = scratch_get(&s, (size_t)rootn);
    if (!root) return 0;
    *exact = mpn_sqrtrem(root, NULL, v.d, v.n) == 0;
    Oop result = make_int(root, rootn, false);
    scratch_put(&s);
    return result;
}

/* -- Bits -------------------------------------------------------------------- */

typedef enum BitOp { BIT_AND, BIT_XOR } BitOp;

/* The n-limb two's complement form of v (n exceeds v's limbs by one, so the
 * top limb carries the sign). */
static void to_twos(const IntView *v, mp_limb_t *t, mp_size_t n)
{
    memset(t, 0, (size_t)n * sizeof(mp_limb_t));
    if (v->n) memcpy(t, v->d, (size_t)v->n * sizeof(mp_limb_t));
    if (v->neg) { /* -m = ~(m - 1) */
        mpn_sub_1(t, t, n, 1);
        for (mp_size_t i = 0; i < n; i++) t[i] = ~t[i];
    }
}

static Oop bitop(Oop a, Oop b, BitOp op)
{
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    mp_size_t n = (x.n > y.n ? x.n : y.n) + 1;
    Scratch s;
    mp_limb_t *tx = scratch_get(&s, (size_t)n * 2);
    if (!tx) return 0;
    mp_limb_t *ty = tx + n;
    to_twos(&x, tx, n);
    to_twos(&y, ty, n);
    for (mp_size_t i = 0; i < n; i++) tx[i] = op == BIT_AND ? tx[i] & ty[i] : tx[i] ^ ty[i];
    bool neg = tx[n - 1] >> 63;
    if (neg) { /* magnitude of a negative two's complement: ~t + 1 */
        for (mp_size_t i = 0; i < n; i++) tx[i] = ~tx[i];
        mpn_add_1(tx, tx, n, 1);
    }
    Oop result = make_int(tx, n, neg);
    scratch_put(&s);
    return result;
}

/* Tagged 2v+1 forms: and-ing keeps the tag; xor clears it. The results of
 * sign-extended 63-bit operands are sign-extended, so they always fit. */
Oop vm_int_and(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b)) return a & b;
    return bitop(a, b, BIT_AND);
}

Oop vm_int_xor(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b)) return (a ^ b) | 1;
    return bitop(a, b, BIT_XOR);
}

Oop vm_int_shift_left(Oop a, uint64_t n)
{
    if (vm_int_is_zero(a) || n == 0) return a;
    if (oop_is_int(a) && n <= 62) {
        intptr_t x = oop_int(a);
        if (x >= 0 ? x <= (OOP_INT_MAX >> n) : x >= (OOP_INT_MIN >> n)) return oop_from_int(x * ((intptr_t)1 << n));
    }
    /* Past the fast path the result never fits a SmallInteger, so it is
     * built straight into an object of exactly the right size. */
    IntView v;
    view_of(a, &v);
    size_t whole = (size_t)(n / 64);
    unsigned bits = (unsigned)(n % 64);
    bool carry_limb = bits && (v.d[v.n - 1] >> (64 - bits)) != 0;
    size_t rn = (size_t)v.n + whole + carry_limb;
    if (rn < whole) return 0; /* size overflow: treat as exhausted memory */
    Oop o = gc_alloc(v.neg ? CLASS_INDEX_LARGE_NEG : CLASS_INDEX_LARGE_POS, FMT_WORDS, rn);
    if (o == 0) return 0;
    mp_limb_t *r = (mp_limb_t *)obj_slots(o);
    memset(r, 0, whole * sizeof(mp_limb_t));
    if (bits) {
        mp_limb_t out = mpn_lshift(r + whole, v.d, v.n, bits);
        if (carry_limb) r[rn - 1] = out;
    } else {
        memcpy(r + whole, v.d, (size_t)v.n * sizeof(mp_limb_t));
    }
    return o;
}

Oop vm_int_shift_right(Oop a, uint64_t n)
{
    if (oop_is_int(a)) return oop_from_int(oop_int(a) >> (n > 63 ? 63 : n));
    IntView v;
    view_of(a, &v);
    uint64_t whole = n / 64;
    unsigned bits = (unsigned)(n % 64);
    if (whole >= (uint64_t)v.n) return oop_from_int(v.neg ? -1 : 0);
    mp_size_t rn = v.n - (mp_size_t)whole;
    Scratch s;
    mp_limb_t *r = scratch_get(&s, (size_t)rn + 1);
    if (!r) return 0;
    if (bits)
        mpn_rshift(r, v.d + whole, rn, bits);
    else
        memcpy(r, v.d + whole, (size_t)rn * sizeof(mp_limb_t));
    r[rn] = 0;
    /* floor for negatives: -m >> n = -ceil(m / 2^n) */
    if (v.neg && any_bit_below(v.d, v.n, (size_t)n)) r[rn] = mpn_add_1(r, r, rn, 1);
    Oop result = make_int(r, rn + 1, v.neg);
    scratch_put(&s);
    return result;
}

uint32_t vm_int_low32_unsigned(Oop a)
{
    if (oop_is_int(a)) return (uint32_t)(uint64_t)oop_int(a);
    uint32_t low = (uint32_t)large_limbs(a)[0];
    return is_large_neg(a) ? (uint32_t)0 - low : low;
}

int32_t vm_int_low32_signed(Oop a)
{
    uint32_t u = vm_int_low32_unsigned(a);
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* -- Comparison --------------------------------------------------------------- */

int vm_int_compare(Oop a, Oop b)
{
    if (oop_is_int(a) && oop_is_int(b)) return (oop_int(a) > oop_int(b)) - (oop_int(a) < oop_int(b));
    IntView x, y;
    view_of(a, &x);
    view_of(b, &y);
    return cmp_views(&x, &y);
}

bool vm_int_equal(Oop a, Oop b)
{
    if (a == b) return true;
    if (oop_is_int(a) || oop_is_int(b)) return false; /* normalized: a large is never small */
    size_t n = obj_num_slots(a);
    return obj_class_index(a) == obj_class_index(b) && obj_num_slots(b) == n &&
           mpn_cmp(large_limbs(a), large_limbs(b), (mp_size_t)n) == 0;
}

static bool is_double(Oop o) { return vm_is_double(o); }

/* Exact Integer <=> double: whole parts as integers, then the fraction. */
static int compare_int_double(Oop i, double d)
{
    if (isnan(d)) return VM_NUM_UNORDERED;
    if (isinf(d)) return d > 0 ? -1 : 1;
    if (oop_is_int(i)) {
        intptr_t v = oop_int(i);
        const intptr_t exact = (intptr_t)1 << 53;
        if (v >= -exact && v <= exact) return ((double)v > d) - ((double)v < d);
    }
    double t = trunc(d);
    IntView x, y;
    view_of(i, &x);
    mp_limb_t buf[DOUBLE_INT_LIMBS];
    y.n = double_int_limbs(t, buf);
    y.d = buf;
    y.neg = y.n != 0 && t < 0;
    int c = cmp_views(&x, &y);
    if (c != 0) return c;
    double frac = d - t; /* exact: a double's fraction is representable */
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

int vm_num_compare(Oop a, Oop b, bool *ok)
{
    *ok = true;
    if (oop_is_int(a) && oop_is_int(b)) return (oop_int(a) > oop_int(b)) - (oop_int(a) < oop_int(b));
    if (!vm_is_number(a) || !vm_is_number(b)) {
        *ok = false;
        return 0;
    }
    bool ad = is_double(a), bd = is_double(b);
    if (!ad && !bd) return vm_int_compare(a, b);
    if (ad && bd) {
        double x = oop_double(a), y = oop_double(b);
        if (x < y) return -1;
        if (x > y) return 1;
        return x == y ? 0 : VM_NUM_UNORDERED;
    }
    if (bd) return compare_int_double(a, oop_double(b));
    int c = compare_int_double(b, oop_double(a));
    return c == VM_NUM_UNORDERED ? c : -c;
}

bool vm_num_equal(Oop a, Oop b)
{
    bool ok;
    return vm_num_compare(a, b, &ok) == 0 && ok;
}

/* -- Decimal text ----------------------------------------------------------- */

size_t vm_int_decimal_max(Oop i)
{
    /* a limb holds at most 20 decimal digits (2^64 - 1 has 20); plus sign
     * and the extra character mpn_get_str may write */
    if (oop_is_int(i)) return 21;
    return obj_num_slots(i) * 20 + 2;
}

static size_t small_to_decimal(int64_t v, char *buf)
{
    char tmp[24];
    size_t n = 0;
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    size_t len = 0;
    if (v < 0) buf[len++] = '-';
    while (n) buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

size_t vm_int_to_decimal(Oop i, char *buf)
{
    if (oop_is_int(i)) return small_to_decimal(oop_int(i), buf);
    IntView v;
    view_of(i, &v);
    Scratch s;
    mp_limb_t *copy = scratch_get(&s, (size_t)v.n + 1); /* mpn_get_str clobbers its input */
    if (!copy) return 0;
    memcpy(copy, v.d, (size_t)v.n * sizeof(mp_limb_t));
    size_t sign = v.neg ? 1 : 0;
    unsigned char *digits = (unsigned char *)buf + sign;
    size_t n = mpn_get_str(digits, 10, copy, v.n);
    scratch_put(&s);
    size_t lead = 0;
    while (lead + 1 < n && digits[lead] == 0) lead++;
    n -= lead;
    memmove(digits, digits + lead, n);
    for (size_t k = 0; k < n; k++) digits[k] = (unsigned char)('0' + digits[k]);
    if (v.neg) buf[0] = '-';
    buf[sign + n] = '\0';
    return sign + n;
}

Oop vm_int_as_string(Oop i)
{
    if (oop_is_int(i)) {
        char buf[24];
        size_t len = small_to_decimal(oop_int(i), buf);
        return vm_string_new(buf, len);
    }
    char *buf = malloc(vm_int_decimal_max(i) + 1);
    if (!buf) return 0;
    size_t len = vm_int_to_decimal(i, buf);
    Oop s = len ? vm_string_new(buf, len) : 0;
    free(buf);
    return s;
}

Oop vm_int_from_decimal(const char *s, size_t len, bool *valid)
{
    size_t i = 0;
    bool neg = false;
    *valid = false;
    if (len > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == len) return 0;
    for (size_t k = i; k < len; k++)
        if (s[k] < '0' || s[k] > '9') return 0;
    *valid = true;
    while (i + 1 < len && s[i] == '0') i++; /* mpn_set_str wants a nonzero lead */
    size_t ndigits = len - i;
    if (ndigits <= 18) { /* < 10^18 fits an int64 with room to spare */
        int64_t v = 0;
        for (size_t k = i; k < len; k++) v = v * 10 + (s[k] - '0');
        return vm_int_from_i64(neg ? -v : v);
    }
    unsigned char *digits = malloc(ndigits);
    if (!digits) return 0;
    for (size_t k = 0; k < ndigits; k++) digits[k] = (unsigned char)(s[i + k] - '0');
    /* log2(10) < 10/3 bits per digit */
    size_t cap = ndigits * 10 / (3 * 64) + 2;
    Scratch sc;
    mp_limb_t *r = scratch_get(&sc, cap);
    Oop result = 0;
    if (r) {
        mp_size_t rn = mpn_set_str(r, digits, ndigits, 10);
        result = make_int(r, rn, neg);
        scratch_put(&sc);
    }
    free(digits);
    return result;
}

/* -- Type names for primitive failures ---------------------------------------- */

const char *vm_num_type_name(Oop o)
{
    if (oop_is_int(o)) return "Int";
    if (oop_is_float(o)) return "Double";
    if (!oop_is_ptr(o) || o == 0) return "Inst";
    uint32_t ci = obj_class_index(o);
    switch (ci) {
    case CLASS_INDEX_LARGE_POS:
    case CLASS_INDEX_LARGE_NEG: return "ArbInt";
    case CLASS_INDEX_DOUBLE: return "Double";
    case CLASS_INDEX_STRING: return "String_";
    case CLASS_INDEX_SYMBOL: return "Symbol";
    case CLASS_INDEX_ARRAY: return "Array";
    case CLASS_INDEX_BLOCK1:
    case CLASS_INDEX_BLOCK2:
    case CLASS_INDEX_BLOCK3: return "Block";
    case CLASS_INDEX_METHOD:
    case CLASS_INDEX_PRIMITIVE: return "Method";
    case CLASS_INDEX_METACLASS: return "Class"; /* a metaclass */
    default: break;
    }
    /* a class object is an instance of a metaclass */
    if (vm_class_table && ci < vm_class_table_size) {
        Oop cls = vm_class_table[ci];
        if (oop_is_ptr(cls) && cls != 0 && cls != vm_nil && obj_class_index(cls) == CLASS_INDEX_METACLASS)
            return "Class";
    }
    return "Inst";
}
