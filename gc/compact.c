/*
 * gc/compact.c — full GC: mark + sliding compaction. See gc/compact.h.
 *
 * Forwarding without a forwarding word (after the Compressor collector,
 * Kermany & Petrank, PLDI'06): the mark phase sets the bit of every live
 * word, and block_base[b] is where the first live word of the 64-word
 * block b goes. An object's new header address is then its block's base
 * plus 8 × the live words before it in the block — one load and one
 * popcount, computable before anything moves. The overflow word of a big
 * object counts among the live words before its header, so the formula
 * lands on the header, where the Oop points.
 */
#include "gc/compact.h"

#include "gc/mark.h"
#include "gc/remember.h"
#include "gc/space.h"
#include "gc/weak.h"

#include <stdio.h>
#if defined(__x86_64__)
#include <sys/platform/x86.h> /* glibc 2.33+: CPU_FEATURE_ACTIVE */
#endif
#include <stdlib.h>
#include <string.h>

/* Forwarding is a popcount per pointer slot, and x86-64's baseline has no
 * POPCNT instruction: without it GCC calls libgcc's table-driven
 * __popcountdi2, which took 29% of a full GC of a 4M-node list. So the
 * instruction is used when glibc's CPU feature table says the CPU has it
 * (read at each compaction; no cpuid). Not GCC's target_clones, which did
 * this before: their ifunc resolvers run libgcc's __cpu_indicator_init at
 * every start of stvm, about ten cpuid instructions, each a VM exit of
 * 12-24 us on the CI machine class (scripts/bench-startup). */
static bool have_popcnt;

static inline uint64_t popcount(uint64_t x)
{
#if defined(__x86_64__) && !defined(__POPCNT__)
    if (have_popcnt) {
        uint64_t n;
        __asm__("popcnt %1, %0" : "=r"(n) : "rm"(x) : "cc");
        return n;
    }
#endif
    return (uint64_t)__builtin_popcountll(x);
}

static inline Oop forward(Oop p)
{
    size_t i = gc_mark_index(p);
    size_t b = i >> 6;
    uint64_t below = gc_space.bitmap[b] & (((uint64_t)1 << (i & 63)) - 1);
    return gc_space.block_base[b] + (uintptr_t)popcount(below) * 8;
}

/* Fills block_base for the blocks of [lo, hi) starting at `to`; returns
 * the address after the last live word. */
static uintptr_t plan_blocks(uintptr_t lo, uintptr_t hi, uintptr_t to)
{
    GcSpace *s = &gc_space;
    size_t b = gc_mark_index(lo) >> 6, e = (gc_mark_index(hi) + 63) >> 6;
    for (; b < e; b++) {
        s->block_base[b] = to;
        to += (uintptr_t)popcount(s->bitmap[b]) * 8;
    }
    return to;
}

static bool is_marked(Oop o) { return gc_mark_test(o); }

static void update_root(Oop *slot, void *ctx)
{
    (void)ctx;
    Oop v = *slot;
    if ((v & 7) == 0 && v != 0)
        *slot = forward(v);
}

/* Rewrites the pointer slots of every live object in [lo, hi). */
static void update_objects(uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t a = gc_mark_next(lo, hi); a < hi; a = gc_mark_next(a, hi)) {
        Oop o = gc_space_oop_at(a);
        size_t n = obj_pointer_slots(o);
        Oop *slot = obj_slots(o);
        for (size_t i = 0; i < n; i++) {
            Oop v = slot[i];
            if ((v & 7) == 0 && v != 0)
                slot[i] = forward(v);
        }
        a += obj_total_bytes(o);
    }
}

/* Moves every live object of [lo, hi) to its forwarding address, in
 * address order (so sliding down never overwrites an unmoved object).
 * Returns how many moved; *count gets how many were live. */
static uint64_t move_objects(uintptr_t lo, uintptr_t hi, bool reset_age, uint64_t *count)
{
    uint64_t moved = 0, live = 0;
    for (uintptr_t a = gc_mark_next(lo, hi); a < hi;) {
        Oop o = gc_space_oop_at(a);
        size_t total = obj_total_bytes(o);
        uintptr_t dst = forward(o) - (o - a);
        if (dst != a) {
            memmove((void *)dst, (void *)a, total);
            moved++;
        }
        if (reset_age)
            *obj_header_ptr(dst + (o - a)) &= ~(OBJ_AGE_MASK << OBJ_AGE_SHIFT);
        live++;
        a = gc_mark_next(a + total, hi);
    }
    *count = live;
    return moved;
}

void gc_compact_run(void)
{
    GcSpace *s = &gc_space;
#if defined(__x86_64__)
    have_popcnt = CPU_FEATURE_ACTIVE(POPCNT);
#endif
    uintptr_t young_lo = s->eden_start, young_hi = gc_old_start;
    uintptr_t old_hi = s->old_top;
    uint64_t used_before = (gc_eden_top - s->eden_start) + (s->surv_top - gc_space_surv_start()) + (old_hi - gc_old_start);

    gc_remember_reset();
    gc_mark_run();

    uintptr_t old_end = plan_blocks(gc_old_start, old_hi, gc_old_start);
    uintptr_t new_top = plan_blocks(young_lo, young_hi, old_end);
    if (new_top > s->end) {
        fprintf(stderr, "stvm: out of memory: %zu bytes live, old space holds %zu (raise --heap-size)\n",
                (size_t)(new_top - gc_old_start), (size_t)(s->end - gc_old_start));
        exit(EXIT_FAILURE);
    }

    s->client.visit_roots(update_root, NULL, s->client.client);
    update_objects(young_lo, young_hi);
    update_objects(gc_old_start, old_hi);
    /* Weak entries are updated, never marked through: the dead ones go. */
    gc_weak_compacting(is_marked, forward);

    uint64_t old_live, young_live;
    uint64_t moved = move_objects(gc_old_start, old_hi, false, &old_live);
    move_objects(young_lo, young_hi, true, &young_live);

    gc_mark_clear_range(young_lo, young_hi);
    gc_mark_clear_range(gc_old_start, old_hi);

    gc_eden_top = s->eden_start;
    s->surv_top = gc_space_surv_start();
    s->old_top = new_top;

    gc_stats.bytes_freed += used_before - (new_top - gc_old_start);
    gc_stats.objects_tenured += young_live;
    if (moved)
        gc_stats.compactions++;
}
