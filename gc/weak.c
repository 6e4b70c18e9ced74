/*
 * gc/weak.c — the weak reference table. See gc/weak.h.
 *
 * Two arrays of (object, tag): young entries (objects below gc_old_start)
 * and old entries. Invariant: old_cap >= young_n + old_n, so the collector
 * can move every young entry to the old array without allocating.
 */
#include "gc/weak.h"

#include "gc/space.h"

#include <stdlib.h>

typedef struct WeakEntry {
    Oop obj;
    uint64_t tag;
} WeakEntry;

typedef struct WeakArray {
    WeakEntry *e;
    size_t n, cap;
} WeakArray;

static WeakArray young, old;

/* First allocation: 1024 entries (16 KiB), then doubling, so a short run
 * that samples a few objects pays little. */
#define WEAK_INITIAL_CAP ((size_t)1024)

/* Makes room for `need` entries in a; false if memory ran out. */
static bool reserve(WeakArray *a, size_t need)
{
    if (need <= a->cap)
        return true;
    size_t cap = a->cap ? a->cap : WEAK_INITIAL_CAP;
    while (cap < need)
        cap *= 2;
    if (cap > GC_WEAK_CAPACITY)
        cap = GC_WEAK_CAPACITY;
    WeakEntry *e = realloc(a->e, cap * sizeof *e);
    if (!e)
        return false;
    a->e = e;
    a->cap = cap;
    return true;
}

bool gc_weak_add(Oop obj, uint64_t tag)
{
    if (gc_space.in_gc)
        gc_panic("gc_weak_add called during a collection");
    if (!oop_is_ptr(obj) || obj == 0 || !gc_heap_contains((const void *)obj))
        gc_panic("gc_weak_add: %#lx is not a heap object", (unsigned long)obj);
    gc_heap_on_release(gc_weak_clear); /* the entries die with the heap */
    size_t total = young.n + old.n;
    if (total >= GC_WEAK_CAPACITY)
        return false;
    /* The old array keeps room for all entries: see the invariant above. */
    if (!reserve(&old, total + 1))
        return false;
    WeakArray *a = gc_is_young(obj) ? &young : &old;
    if (!reserve(a, a->n + 1))
        return false;
    a->e[a->n++] = (WeakEntry){obj, tag};
    return true;
}

void gc_weak_each(void (*fn)(uint64_t tag, Oop obj, void *ctx), void *ctx)
{
    for (size_t i = 0; i < old.n; i++)
        fn(old.e[i].tag, old.e[i].obj, ctx);
    for (size_t i = 0; i < young.n; i++)
        fn(young.e[i].tag, young.e[i].obj, ctx);
}

size_t gc_weak_count(void) { return young.n + old.n; }

void gc_weak_clear(void)
{
    free(young.e);
    free(old.e);
    young = (WeakArray){0};
    old = (WeakArray){0};
}

/* -- Collector side ----------------------------------------------------- */

void gc_weak_scavenged(void)
{
    size_t keep = 0;
    for (size_t i = 0; i < young.n; i++) {
        Oop o = young.e[i].obj;
        uint64_t h = obj_header(o);
        if (!(h & OBJ_GC_FORWARDED))
            continue; /* not copied: nothing reached it */
        Oop n = obj_slots(o)[0];
        if (gc_is_young(n))
            young.e[keep++] = (WeakEntry){n, young.e[i].tag};
        else
            old.e[old.n++] = (WeakEntry){n, young.e[i].tag}; /* tenured; room by the invariant */
    }
    young.n = keep;
}

void gc_weak_compacting(bool (*marked)(Oop obj), Oop (*forward)(Oop obj))
{
    size_t keep = 0;
    for (size_t i = 0; i < old.n; i++)
        if (marked(old.e[i].obj))
            old.e[keep++] = (WeakEntry){forward(old.e[i].obj), old.e[i].tag};
    old.n = keep;
    /* A full GC tenures every live young object: they join the old array. */
    for (size_t i = 0; i < young.n; i++)
        if (marked(young.e[i].obj))
            old.e[old.n++] = (WeakEntry){forward(young.e[i].obj), young.e[i].tag};
    young.n = 0;
}

const char *gc_weak_check(bool (*is_object)(Oop obj, void *ctx), void *ctx, Oop *bad)
{
    if (old.cap < young.n + old.n) {
        *bad = 0;
        return "the old array has no room for every entry";
    }
    for (size_t i = 0; i < young.n; i++) {
        *bad = young.e[i].obj;
        if (!gc_is_young(*bad))
            return "an entry of the young array is not young";
        if (!is_object(*bad, ctx))
            return "a young entry is not the start of an object in eden or the survivor space";
    }
    for (size_t i = 0; i < old.n; i++) {
        *bad = old.e[i].obj;
        if (!gc_is_old(*bad))
            return "an entry of the old array is not old";
        if (!is_object(*bad, ctx))
            return "an old entry is not the start of an object in old space";
    }
    *bad = 0;
    return NULL;
}
