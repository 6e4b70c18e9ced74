/*
 * gc/scavenge.c — Cheney scavenger. See gc/scavenge.h.
 *
 * A copied object leaves its header in place with OBJ_GC_FORWARDED set and
 * its new address in slot 0 (every object owns at least one slot). Copies
 * keep the header's hash; their age goes up by one.
 */
#include "gc/scavenge.h"

#include "gc/remember.h"
#include "gc/space.h"
#include "gc/weak.h"

#include <string.h>

typedef struct Scavenge {
    uintptr_t from_lo, from_hi; /* eden and the current survivor: contiguous */
    uintptr_t to_lo, to_hi;     /* the other survivor space, inside [from_lo, from_hi) */
    uintptr_t to_top;
    uint64_t tenured_objects;
    uint64_t tenured_bytes;
} Scavenge;

/* True for an object still to be evacuated: in eden or the current
 * survivor space, i.e. young and not already in to-space. Immediates, 0
 * and old pointers all fail the range test. */
static inline bool in_from(const Scavenge *sc, Oop v)
{
    return (v & 7) == 0 && v - sc->from_lo < sc->from_hi - sc->from_lo && v - sc->to_lo >= sc->to_hi - sc->to_lo;
}

static Oop evacuate(Scavenge *sc, Oop o)
{
    uint64_t h = obj_header(o);
    if (h & OBJ_GC_FORWARDED)
        return obj_slots(o)[0];
    GcSpace *s = &gc_space;
    size_t total = obj_total_bytes(o);
    uintptr_t pre = (h >> OBJ_SLOTS_SHIFT) == OBJ_SLOTS_OVERFLOW ? 8 : 0;
    uint64_t age = ((h >> OBJ_AGE_SHIFT) & OBJ_AGE_MASK) + 1;
    uintptr_t dst;
    if (age < GC_TENURE_AGE && total <= sc->to_hi - sc->to_top) {
        dst = sc->to_top;
        sc->to_top += total;
    } else {
        if (total > s->end - s->old_top)
            gc_panic("scavenge: old space exhausted while tenuring %zu bytes (old top %#lx, end %#lx)", total,
                     (unsigned long)s->old_top, (unsigned long)s->end);
        dst = s->old_top;
        s->old_top += total;
        sc->tenured_objects++;
        sc->tenured_bytes += total;
        age = 0; /* age means nothing in old space */
    }
    memcpy((void *)dst, (void *)(o - pre), total);
    Oop n = dst + pre;
    *obj_header_ptr(n) = (h & ~(OBJ_AGE_MASK << OBJ_AGE_SHIFT)) | (age << OBJ_AGE_SHIFT);
    obj_slots(o)[0] = n;
    *obj_header_ptr(o) = h | OBJ_GC_FORWARDED;
    return n;
}

/* Evacuates what o's slots point to; true if o still points young after. */
static bool scan_object(Scavenge *sc, Oop o)
{
    size_t n = obj_pointer_slots(o);
    Oop *slot = obj_slots(o);
    bool young = false;
    for (size_t i = 0; i < n; i++) {
        Oop v = slot[i];
        if (in_from(sc, v)) {
            v = evacuate(sc, v);
            slot[i] = v;
        }
        young |= gc_is_young(v);
    }
    return young;
}

static void scavenge_root(Oop *slot, void *ctx)
{
    Scavenge *sc = ctx;
    if (in_from(sc, *slot))
        *slot = evacuate(sc, *slot);
}

void gc_scavenge_run(void)
{
    GcSpace *s = &gc_space;
    Scavenge sc;
    uintptr_t to = s->surv[1 - s->cur];
    sc.from_lo = s->eden_start;
    sc.from_hi = gc_old_start;
    sc.to_lo = to;
    sc.to_hi = to + s->surv_bytes;
    sc.to_top = to;
    sc.tenured_objects = 0;
    sc.tenured_bytes = 0;
    uint64_t young_before = (gc_eden_top - s->eden_start) + (s->surv_top - gc_space_surv_start());
    uintptr_t old_scan = s->old_top;

    /* Remembered objects first, filtered in place: only those that still
     * point young after their slots are evacuated stay. Objects tenured by
     * this scavenge are appended later, by the Cheney loop. */
    size_t keep = 0;
    for (size_t i = 0; i < s->remembered_count; i++) {
        Oop o = s->remembered[i];
        if (scan_object(&sc, o))
            s->remembered[keep++] = o;
        else
            *obj_header_ptr(o) &= ~OBJ_GC_REMEMBERED;
    }
    s->remembered_count = keep;

    s->client.visit_roots(scavenge_root, &sc, s->client.client);

    uintptr_t to_scan = to;
    while (to_scan < sc.to_top || old_scan < s->old_top) {
        while (to_scan < sc.to_top) {
            Oop o = gc_space_oop_at(to_scan);
            scan_object(&sc, o);
            to_scan += obj_total_bytes(o);
        }
        while (old_scan < s->old_top) {
            Oop o = gc_space_oop_at(old_scan);
            if (scan_object(&sc, o))
                gc_remember(o);
            old_scan += obj_total_bytes(o);
        }
    }

    /* From-space still holds the forwarding headers: the weak table reads
     * them (it was never a root, so its dead objects were not copied). */
    gc_weak_scavenged();

    gc_eden_top = s->eden_start;
    s->cur = 1 - s->cur;
    s->surv_top = sc.to_top;

    uint64_t kept = (sc.to_top - to) + sc.tenured_bytes;
    gc_stats.bytes_freed += young_before - kept;
    gc_stats.objects_tenured += sc.tenured_objects;
    if (sc.tenured_objects)
        gc_stats.tenures++;
}
