/*
 * vm/model/lookup.h — method lookup and the global lookup cache (lookup.c).
 *
 * Who may call: vm/.
 */
#ifndef VM_LOOKUP_H
#define VM_LOOKUP_H

#include "base/compiler.h"
#include "base/hash.h"
#include "gc/object.h"

#include <stddef.h>
#include <stdint.h>

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

#endif
