/*
 * vm/model/universe.h — the VM's well-known objects and constructors.
 *
 * nil, true, false and the system object are allocated first in old space,
 * so sliding compaction never moves them; they are still GC roots.
 * Constructors return 0 only when the heap is exhausted; callers report
 * out-of-memory (primitives: return vm_prim_error(...)).
 *
 * Nothing here collects: it is safe to hold Oops across these calls.
 *
 * Who may call: all of vm/.
 */
#ifndef VM_UNIVERSE_H
#define VM_UNIVERSE_H

#include "gc/object.h"

#include <stdbool.h>
#include <stddef.h>

extern Oop vm_nil, vm_true, vm_false, vm_system;

/* Class table: index -> class object (vm_nil where unused). */
extern Oop *vm_class_table;
extern size_t vm_class_table_size;

static inline Oop vm_bool(bool b) { return b ? vm_true : vm_false; }

static inline uint32_t vm_class_index_of(Oop o)
{
    if (oop_is_imm(o)) return oop_is_int(o) ? CLASS_INDEX_SMALLINT : CLASS_INDEX_DOUBLE;
    return obj_class_index(o);
}
static inline Oop vm_class_of(Oop o) { return vm_class_table[vm_class_index_of(o)]; }

Oop vm_string_new(const char *s, size_t len);
Oop vm_string_from_cstr(const char *s);
Oop vm_symbol_intern(const char *s, size_t len);
Oop vm_symbol_from_cstr(const char *s);
Oop vm_array_new(size_t n);          /* nil-filled */
Oop vm_double_new(double d);

/* NUL-terminated copy of a String/Symbol's bytes into buf (truncating). */
const char *vm_string_cstr(Oop s, char *buf, size_t buflen);
static inline bool vm_is_string(Oop o) { return oop_is_ptr(o) && obj_class_index(o) == CLASS_INDEX_STRING; }
static inline bool vm_is_symbol(Oop o) { return oop_is_ptr(o) && obj_class_index(o) == CLASS_INDEX_SYMBOL; }
/* Immediate or boxed (gc/object.h, "Immediate Doubles"). */
static inline bool vm_is_double(Oop o)
{
    return oop_is_float(o) || (oop_is_ptr(o) && obj_class_index(o) == CLASS_INDEX_DOUBLE);
}
static inline bool vm_is_boxed_double(Oop o) { return oop_is_ptr(o) && obj_class_index(o) == CLASS_INDEX_DOUBLE; }
static inline bool vm_is_array(Oop o) { return oop_is_ptr(o) && obj_class_index(o) == CLASS_INDEX_ARRAY; }
static inline bool vm_is_large_int(Oop o)
{
    return oop_is_ptr(o) && (obj_class_index(o) == CLASS_INDEX_LARGE_POS || obj_class_index(o) == CLASS_INDEX_LARGE_NEG);
}
/* Classes are the instances of metaclasses (whose own index is fixed). */
static inline bool vm_is_class(Oop o)
{
    return oop_is_ptr(o) && o != vm_nil && obj_class_index(vm_class_table[obj_class_index(o)]) == CLASS_INDEX_METACLASS;
}
static inline bool vm_is_integer(Oop o) { return oop_is_int(o) || vm_is_large_int(o); }

#endif
