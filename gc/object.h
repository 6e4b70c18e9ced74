/*
 * gc/object.h — the object model every part of stvm shares.
 *
 * An Oop is one 64-bit word: either an immediate SmallInteger or the address
 * of a heap object. Heap objects are 8-byte aligned, start with exactly one
 * header word (plus, for objects of 255 slots or more, one overflow word
 * *before* the header, as in Spur) and always own at least one slot of
 * storage so that the collector can forward any object in place.
 *
 *   Oop tagging (low bits)
 *   +--------------------------------------------------------------+---+
 *   | 63-bit two's complement SmallInteger value                   | 1 |
 *   +--------------------------------------------------------------+---+
 *   | immediate Double: exponent 8, mantissa 52, sign 1        | 100   |
 *   +----------------------------------------------------------+-------+
 *   | object address (8-byte aligned)                          | 000   |
 *   +----------------------------------------------------------+-------+
 *   Tags 010 and 110 are never made: an immediate that is not a
 *   SmallInteger is a Double.
 *
 *   Object header word
 *    63     56 55            34 33   30 29  27 26   22 21            0
 *   +---------+----------------+-------+------+-------+---------------+
 *   | slots 8 |    hash 22     | age 4 | gc 3 | fmt 5 | class index 22|
 *   +---------+----------------+-------+------+-------+---------------+
 *   slots == 255: the slot count is in the word before the header, whose own
 *   top byte is also 255 (so a heap walker that meets it knows to skip it).
 *
 *   Formats
 *    0        pointers (fixed or indexable: every slot is an Oop)
 *    9        64-bit raw words (Double, large-integer limbs): no Oops
 *    16..23   bytes; (fmt & 7) = unused bytes in the last word
 *    24..31   compiled method: the first METHOD_HEADER's pointer-slot count
 *             are Oops, the rest bytes; (fmt & 7) = unused bytes at the end
 *
 * Who may call: everyone. Only gc/ writes header GC bits and age.
 */
#ifndef GC_OBJECT_H
#define GC_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uintptr_t Oop;

/* -- SmallIntegers ------------------------------------------------------- */

#define OOP_INT_MIN (-((intptr_t)1 << 62))
#define OOP_INT_MAX (((intptr_t)1 << 62) - 1)

static inline bool oop_is_int(Oop o) { return (o & 1) != 0; }
static inline bool oop_is_ptr(Oop o) { return (o & 7) == 0; }
static inline intptr_t oop_int(Oop o) { return (intptr_t)o >> 1; }
static inline Oop oop_from_int(intptr_t v) { return ((Oop)v << 1) | 1; }
static inline bool oop_int_fits(intptr_t v) { return v >= OOP_INT_MIN && v <= OOP_INT_MAX; }

/* -- Immediate Doubles -------------------------------------------------------
 * As Spur's SmallFloat64, a double whose biased exponent e lies in 897..1151
 * (magnitudes 2^-126 .. just under 2^129, ~1.2e-38 .. ~6.8e38), and ±0.0,
 * is an immediate; every other double (larger, smaller, denormal,
 * infinite, NaN) is a boxed Double (class index CLASS_INDEX_DOUBLE, format
 * FMT_WORDS, one slot). Every Double is made by one constructor that picks
 * the form from the value, so a value has one form.
 *
 * Adding 128 to the exponent field puts such an e's top three bits at 100;
 * rotating the word left by 4 brings them down as the tag, the sign above
 * it: encoding is an add and a rotate, decoding a rotate and a subtract.
 * e's low 8 bits then lie above bit 56 and are never 0 (e >= 897), so the
 * two words below 16 with the tag are free for the zeros: 4 is +0.0, 12 is
 * -0.0 (the sign at bit 3 as for the others). */

#define OOP_FLOAT_TAG 4
#define OOP_FLOAT_BIAS ((uint64_t)128 << 52)
#define OOP_FLOAT_ZEROS 16 /* immediates below this are ±0.0 */
/* Encodable (oop_float_encode's test, not the zeros) exactly when the biased
 * bits shifted left once, t << 1, lie in [LO, LO + SPAN): the tag's three
 * bits on top, and not all of the exponent's low eight bits 0 (machine
 * code tests it in one compare, vm/jit/double_inline.c). */
#define OOP_FLOAT_WINDOW_LO (((uint64_t)OOP_FLOAT_TAG << 61) + ((uint64_t)1 << 53))
#define OOP_FLOAT_WINDOW_SPAN (((uint64_t)(OOP_FLOAT_TAG + 1) << 61) - OOP_FLOAT_WINDOW_LO)

static inline bool oop_is_float(Oop o) { return (o & 7) == OOP_FLOAT_TAG; }
static inline bool oop_is_imm(Oop o) { return (o & 7) != 0; }

/* The immediate for d, or 0 when d must be boxed. */
static inline Oop oop_float_encode(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, 8);
    uint64_t t = bits + OOP_FLOAT_BIAS;
    Oop o = (Oop)(t << 4 | t >> 60);
    if (oop_is_float(o) && o >> 56 != 0) return o;
    if (bits << 1 == 0) return (Oop)(bits >> 63 << 3 | OOP_FLOAT_TAG);
    return 0;
}

static inline double oop_float(Oop o)
{
    uint64_t bits = o < OOP_FLOAT_ZEROS ? (uint64_t)o >> 3 << 63
                                        : ((uint64_t)o >> 4 | (uint64_t)o << 60) - OOP_FLOAT_BIAS;
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* -- Header layout ------------------------------------------------------- */

#define OBJ_CLASS_BITS 22
#define OBJ_CLASS_SHIFT 0
#define OBJ_FORMAT_SHIFT 22
#define OBJ_GC_SHIFT 27
#define OBJ_AGE_SHIFT 30
#define OBJ_HASH_SHIFT 34
#define OBJ_SLOTS_SHIFT 56

#define OBJ_CLASS_MASK ((((uint64_t)1) << OBJ_CLASS_BITS) - 1)
#define OBJ_FORMAT_MASK ((uint64_t)0x1f)
#define OBJ_AGE_MASK ((uint64_t)0xf)
#define OBJ_HASH_MASK ((uint64_t)0x3fffff)
#define OBJ_SLOTS_OVERFLOW 255

/* GC bits (only gc/ sets them) */
#define OBJ_GC_REMEMBERED ((uint64_t)1 << (OBJ_GC_SHIFT + 0))
#define OBJ_GC_MARKED ((uint64_t)1 << (OBJ_GC_SHIFT + 1))
#define OBJ_GC_FORWARDED ((uint64_t)1 << (OBJ_GC_SHIFT + 2))

_Static_assert(OBJ_FORMAT_SHIFT == OBJ_CLASS_SHIFT + OBJ_CLASS_BITS, "format follows class index");
_Static_assert(OBJ_GC_SHIFT == OBJ_FORMAT_SHIFT + 5, "gc bits follow format");
_Static_assert(OBJ_AGE_SHIFT == OBJ_GC_SHIFT + 3, "age follows gc bits");
_Static_assert(OBJ_HASH_SHIFT == OBJ_AGE_SHIFT + 4, "hash follows age");
_Static_assert(OBJ_SLOTS_SHIFT == OBJ_HASH_SHIFT + 22, "slots follow hash");
_Static_assert(sizeof(Oop) == 8, "64-bit words");

enum {
    FMT_POINTERS = 0,
    FMT_WORDS = 9,
    FMT_BYTES = 16,  /* 16..23 */
    FMT_METHOD = 24, /* 24..31 */
};

/* Class indices the VM knows by number. The class table maps each to the
 * class object loaded from the classpath (user code may supply its own). */
enum {
    CLASS_INDEX_FREE = 0,
    CLASS_INDEX_SMALLINT = 1, /* immediates; never in a header */
    CLASS_INDEX_LARGE_POS = 2,
    CLASS_INDEX_LARGE_NEG = 3,
    CLASS_INDEX_DOUBLE = 4,
    CLASS_INDEX_STRING = 5,
    CLASS_INDEX_SYMBOL = 6,
    CLASS_INDEX_ARRAY = 7,
    CLASS_INDEX_METHOD = 8,
    CLASS_INDEX_PRIMITIVE = 9,
    CLASS_INDEX_BLOCK1 = 10,
    CLASS_INDEX_BLOCK2 = 11,
    CLASS_INDEX_BLOCK3 = 12,
    CLASS_INDEX_CONTEXT = 13, /* VM-internal, no Smalltalk class */
    CLASS_INDEX_NIL = 14,
    CLASS_INDEX_TRUE = 15,
    CLASS_INDEX_FALSE = 16,
    CLASS_INDEX_SYSTEM = 17,
    CLASS_INDEX_OBJECT = 18,
    CLASS_INDEX_CLASS = 19,
    CLASS_INDEX_METACLASS = 20,
    CLASS_INDEX_BYTES = 21,   /* VM-internal byte arrays (line tables) */
    CLASS_INDEX_FIRST_FREE = 32,
};

/* -- Accessors ----------------------------------------------------------- */

static inline uint64_t *obj_header_ptr(Oop o) { return (uint64_t *)o; }
static inline uint64_t obj_header(Oop o) { return *(uint64_t *)o; }
static inline uint32_t obj_class_index(Oop o) { return (uint32_t)(obj_header(o) & OBJ_CLASS_MASK); }
static inline uint32_t obj_format(Oop o) { return (uint32_t)((obj_header(o) >> OBJ_FORMAT_SHIFT) & OBJ_FORMAT_MASK); }
static inline uint32_t obj_age(Oop o) { return (uint32_t)((obj_header(o) >> OBJ_AGE_SHIFT) & OBJ_AGE_MASK); }
static inline uint32_t obj_hash_bits(Oop o) { return (uint32_t)((obj_header(o) >> OBJ_HASH_SHIFT) & OBJ_HASH_MASK); }

static inline size_t obj_num_slots(Oop o)
{
    size_t n = (size_t)(obj_header(o) >> OBJ_SLOTS_SHIFT);
    if (n == OBJ_SLOTS_OVERFLOW)
        n = (size_t)(((uint64_t *)o)[-1] & (((uint64_t)1 << 56) - 1));
    return n;
}

static inline Oop *obj_slots(Oop o) { return (Oop *)o + 1; }
static inline Oop obj_at(Oop o, size_t i) { return obj_slots(o)[i]; }
static inline uint8_t *obj_bytes(Oop o) { return (uint8_t *)((Oop *)o + 1); }

static inline bool obj_is_bytes(Oop o) { uint32_t f = obj_format(o); return f >= FMT_BYTES && f < FMT_METHOD; }
static inline bool obj_is_method(Oop o) { return obj_format(o) >= FMT_METHOD; }

/* Byte length of a bytes object (String, Symbol, VM byte array). */
static inline size_t obj_byte_length(Oop o)
{
    return obj_num_slots(o) * 8 - (obj_format(o) & 7);
}

/* Number of leading Oop slots the collector must trace. Methods keep that
 * count (as a SmallInteger) in their first slot: see vm/model/method.h. */
#define METHOD_POINTER_SLOTS_BITS 16
#define METHOD_POINTER_SLOTS_MAX (((size_t)1 << METHOD_POINTER_SLOTS_BITS) - 1)
#define METHOD_POINTER_SLOTS(header_oop) ((size_t)oop_int(header_oop) & METHOD_POINTER_SLOTS_MAX)

static inline size_t obj_pointer_slots(Oop o)
{
    uint32_t f = obj_format(o);
    if (f == FMT_POINTERS) return obj_num_slots(o);
    if (f >= FMT_METHOD) return METHOD_POINTER_SLOTS(obj_slots(o)[0]);
    return 0;
}

/* Bytes the object occupies in the heap, header (and overflow word) included. */
static inline size_t obj_total_bytes(Oop o)
{
    size_t n = obj_num_slots(o);
    size_t storage = n == 0 ? 1 : n;
    return (storage + 1 + (n >= OBJ_SLOTS_OVERFLOW ? 1 : 0)) * 8;
}

static inline double obj_double(Oop o) { double d; memcpy(&d, obj_slots(o), 8); return d; }

/* The value of a Double, immediate or boxed. */
static inline double oop_double(Oop o) { return oop_is_float(o) ? oop_float(o) : obj_double(o); }

#endif
