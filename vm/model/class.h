/*
 * vm/model/class.h — class objects and method lookup.
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

#include "base/compiler.h"
#include "base/hash.h"
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

/* Method lookup starting at cls and walking superclasses; 0 if none.
 * vm_lookup_cached uses the global (selector, class index) cache, probed
 * inline because every send of the interpreter goes through it. */
Oop vm_lookup(Oop cls, Oop selector);
void vm_lookup_cache_flush(void);

/* The interpreter keeps caches built on lookups (its send-site cache,
 * vm/interp/sendcache.h; its special-send tables, vm/interp/special.h): they
 * learn of each filled entry and of each flush through the one observer
 * boot sets. Either function may be NULL. */
typedef struct VmLookupObserver {
    void (*filled)(uint32_t class_index, Oop selector, Oop method);
    void (*flushed)(void);
} VmLookupObserver;
void vm_lookup_set_observer(const VmLookupObserver *observer);

#define VM_LOOKUP_CACHE_SIZE 4096 /* power of two; Cog's method cache has 1024 entries.
                                     Machine code probes it too (open PICs, vm/jit/sendsite.c) */
/* The cache's hash, the one home of it: machine code computes the same with
 * VM_LOOKUP_HASH_MULTIPLIER (vm/jit/sendsite.c, open PICs), the multiplier of
 * base_hash_word. */
#define VM_LOOKUP_HASH_MULTIPLIER BASE_HASH_KNUTH_MULTIPLIER
static inline size_t vm_lookup_hash(uint32_t class_index, Oop selector)
{
    return ((selector >> 3) ^ base_hash_word(class_index)) & (VM_LOOKUP_CACHE_SIZE - 1);
}
typedef struct VmCacheEntry {
    Oop selector;
    uintptr_t class_index;
    Oop method;
} VmCacheEntry;
extern VmCacheEntry vm_lookup_cache[VM_LOOKUP_CACHE_SIZE];

Oop vm_lookup_cache_miss(uint32_t class_index, Oop selector);

static inline Oop vm_lookup_cached(uint32_t class_index, Oop selector)
{
    const VmCacheEntry *e = &vm_lookup_cache[vm_lookup_hash(class_index, selector)];
    if (BASE_LIKELY(e->selector == selector && e->class_index == class_index)) return e->method;
    return vm_lookup_cache_miss(class_index, selector);
}

/* Creates a new instance of cls (fields nil, indexable part of n slots when
 * the class's instances are indexable). 0 when out of memory. */
Oop vm_class_new_instance(Oop cls, size_t n);

/* "Foo" or "Foo class" into buf. */
const char *vm_class_name_cstr(Oop cls, char *buf, size_t len);

#endif
