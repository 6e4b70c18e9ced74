/*
 * vm/model/lookup.c — method lookup and the global lookup cache.
 *
 * The cache maps (selector, class index) to the method found. Selectors
 * and methods live in old space and move only in a full GC, after which the
 * VM flushes the cache; class loading flushes it too.
 */
#include "vm/model/lookup.h"

#include "vm/model/class.h"

#include "gc/heap.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <string.h>

VmCacheEntry vm_lookup_cache[VM_LOOKUP_CACHE_SIZE];
/* Whether any entry was filled since the last flush. The cache is 96 KiB of
 * zero pages until written: a boot flushes it at every class load before
 * any send, and memset would write — and so fault in — all 24 pages each
 * time (23 of a start's ~180 page faults; scripts/bench-startup). */
static bool cache_filled;
static VmLookupObserver observer;

void vm_lookup_set_observer(const VmLookupObserver *o) { observer = *o; }

Oop vm_lookup(Oop cls, Oop selector)
{
    while (oop_is_ptr(cls) && cls != vm_nil) {
        Oop methods = vm_class_methods(cls);
        if (oop_is_ptr(methods) && methods != vm_nil) {
            size_t n = obj_num_slots(methods);
            Oop *m = obj_slots(methods);
            for (size_t i = 0; i < n; i++)
                if (obj_slots(m[i])[1] == selector) return m[i];
        }
        cls = vm_class_superclass(cls);
    }
    return 0;
}

Oop vm_lookup_cache_miss(uint32_t class_index, Oop selector)
{
    size_t h = vm_lookup_hash(class_index, selector);
    Oop m = vm_lookup(vm_class_table[class_index], selector);
    if (m) {
        vm_lookup_cache[h] = (VmCacheEntry){selector, class_index, m};
        cache_filled = true;
        if (observer.filled) observer.filled(class_index, selector, m);
    }
    return m;
}

void vm_lookup_cache_flush(void)
{
    if (observer.flushed) observer.flushed(); /* its entries are lookups too */
    if (!cache_filled) return;
    memset(vm_lookup_cache, 0, sizeof vm_lookup_cache);
    cache_filled = false;
}
