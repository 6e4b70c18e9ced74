/*
 * vm/model/class.h — class objects: their slots, reading them, making
 * instances (class.c). Method lookup and its cache are vm/model/lookup.h.
 *
 * A class is a pointer object; its metaclass is another, and `Foo class`
 * is the single instance of that metaclass (Smalltalk-80 structure:
 * `Foo class class == Metaclass`, `Object class superclass == Class`).
 *
 *   slot  field              contents
 *   ----  -----------------  ----------------------------------------------
 *    0    superclass         a class, or nil for a root
 *    1    name               Symbol (#Foo, #'Foo class')
 *    2    fields             Array of Symbols: every instance field, inherited first
 *    3    methods            Array of Method/Primitive in definition order
 *    4    instance index     SmallInteger: class-table index of its instances
 *    5    instance shape     SmallInteger: fixed field count (format comes from the index)
 *    6    source file        String path of the .som file, or nil
 *    7..  class-side fields  (of a class object: inherited first, then its own)
 *
 * Who may call: vm/.
 */
#ifndef VM_CLASS_H
#define VM_CLASS_H

#include "gc/object.h"

#include <stdbool.h>

enum {
    CLASS_SUPERCLASS = 0,
    CLASS_NAME = 1,
    CLASS_FIELDS = 2,
    CLASS_METHODS = 3,
    CLASS_INSTANCE_INDEX = 4,
    CLASS_INSTANCE_FIELDS = 5,
    CLASS_FILE = 6,
    CLASS_FIXED_SLOTS = 7,
};

/* Hidden names the compiler sees for a class object's fixed slots. */
#define CLASS_HIDDEN_FIELD_NAMES "$superclass", "$name", "$fields", "$methods", "$index", "$shape", "$file"

static inline Oop vm_class_superclass(Oop cls) { return obj_slots(cls)[CLASS_SUPERCLASS]; }
static inline Oop vm_class_name(Oop cls) { return obj_slots(cls)[CLASS_NAME]; }
static inline Oop vm_class_methods(Oop cls) { return obj_slots(cls)[CLASS_METHODS]; }
static inline uint32_t vm_class_instance_index(Oop cls) { return (uint32_t)oop_int(obj_slots(cls)[CLASS_INSTANCE_INDEX]); }

/* Creates a new instance of cls (fields nil, indexable part of n slots when
 * the class's instances are indexable). 0 when out of memory. */
Oop vm_class_new_instance(Oop cls, size_t n);

/* "Foo" or "Foo class" into buf. */
const char *vm_class_name_cstr(Oop cls, char *buf, size_t len);

#endif
