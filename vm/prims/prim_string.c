/*
 * vm/prims/prim_string.c — String and Symbol primitives. Strings are immutable
 * byte objects; a String and a Symbol with the same bytes are = both ways.
 */
#include "base/hash.h"
#include "gc/heap.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <ctype.h>
#include <string.h>

static bool is_text(Oop o) { return vm_is_string(o) || vm_is_symbol(o); }

static bool p_concatenate(Oop *a, Oop *r)
{
    if (!is_text(a[1])) return vm_prim_error("concatenate: expects a String or Symbol");
    size_t n1 = obj_byte_length(a[0]), n2 = obj_byte_length(a[1]);
    Oop s = gc_alloc_bytes(CLASS_INDEX_STRING, n1 + n2);
    if (!s) vm_out_of_memory("String concatenate:");
    memcpy(obj_bytes(s), obj_bytes(a[0]), n1);
    memcpy(obj_bytes(s) + n1, obj_bytes(a[1]), n2);
    *r = s;
    return true;
}

static bool p_as_symbol(Oop *a, Oop *r)
{
    *r = vm_is_symbol(a[0]) ? a[0] : vm_symbol_intern((const char *)obj_bytes(a[0]), obj_byte_length(a[0]));
    return true;
}

static bool p_as_string(Oop *a, Oop *r)
{
    *r = vm_string_new((const char *)obj_bytes(a[0]), obj_byte_length(a[0]));
    if (!*r) vm_out_of_memory("Symbol asString");
    return true;
}

static bool p_hashcode(Oop *a, Oop *r)
{
    /* content hash, so that equal Strings and Symbols hash alike */
    *r = oop_from_int((intptr_t)(base_fnv1a_bytes(obj_bytes(a[0]), obj_byte_length(a[0])) >> 34));
    return true;
}

static bool p_length(Oop *a, Oop *r)
{
    *r = oop_from_int((intptr_t)obj_byte_length(a[0]));
    return true;
}

static bool all_chars(Oop s, int (*pred)(int))
{
    size_t n = obj_byte_length(s);
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!pred(obj_bytes(s)[i])) return false;
    return true;
}

static bool p_is_white_space(Oop *a, Oop *r)
{
    *r = vm_bool(all_chars(a[0], isspace));
    return true;
}

static bool p_is_letters(Oop *a, Oop *r)
{
    *r = vm_bool(all_chars(a[0], isalpha));
    return true;
}

static bool p_is_digits(Oop *a, Oop *r)
{
    *r = vm_bool(all_chars(a[0], isdigit));
    return true;
}

/* Most compares are of a character or a few (a parser's `current = '{'`):
 * for them a loop costs less than the call into memcmp (22 % of Json's
 * samples were memcmp's, vmprofd). */
static bool bytes_equal(const uint8_t *x, const uint8_t *y, size_t n)
{
    if (n > 16) return memcmp(x, y, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return false;
    return true;
}

static bool p_equal(Oop *a, Oop *r)
{
    Oop x = a[0], y = a[1];
    if (!is_text(y)) {
        *r = vm_false;
        return true;
    }
    size_t n = obj_byte_length(x);
    *r = vm_bool(n == obj_byte_length(y) && bytes_equal(obj_bytes(x), obj_bytes(y), n));
    return true;
}

static bool p_substring(Oop *a, Oop *r)
{
    if (!oop_is_int(a[1]) || !oop_is_int(a[2])) return vm_prim_error("primSubstringFrom:to: expects Integers");
    intptr_t from = oop_int(a[1]), to = oop_int(a[2]);
    intptr_t len = (intptr_t)obj_byte_length(a[0]);
    if (to < from - 1 || from < 1 || to > len)
        return vm_prim_error("Attempting to index string out of its bounds (start: %ld end: %ld length: %ld)",
                             (long)from, (long)to, (long)len);
    Oop s = vm_string_new((const char *)obj_bytes(a[0]) + from - 1, (size_t)(to - from + 1));
    if (!s) vm_out_of_memory("substring");
    *r = s;
    return true;
}

const VmPrimDef vm_prims_string[] = {
    {"String", false, "concatenate:", p_concatenate},
    {"String", false, "asSymbol", p_as_symbol},
    {"String", false, "hashcode", p_hashcode},
    {"String", false, "length", p_length},
    {"String", false, "isWhiteSpace", p_is_white_space},
    {"String", false, "isLetters", p_is_letters},
    {"String", false, "isDigits", p_is_digits},
    {"String", false, "=", p_equal},
    {"String", false, "primSubstringFrom:to:", p_substring},
    {"Symbol", false, "asString", p_as_string},
    {NULL, false, NULL, NULL},
};
