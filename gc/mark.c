/*
 * gc/mark.c — mark bitmap operations and the full GC's mark phase.
 *
 * Marking is iterative: an object is pushed on the explicit mark stack
 * when it is first marked, so the stack never holds an object twice and
 * its capacity (one entry per 16 heap bytes, gc/space.h) cannot overflow.
 * Recursion is out of the question: heaps hold million-element lists.
 */
#include "gc/mark.h"

#include <string.h>
#include <sys/mman.h>

/* A mark stack that grew past this is given back to the kernel after the
 * mark phase: one huge array can push millions of entries once, and those
 * pages should not stay resident for the rest of the run. 1 MiB is 128K
 * entries, more than ordinary object graphs ever push at once. */
#define GC_MARK_STACK_KEEP_BYTES ((size_t)1 << 20)

void gc_mark_set_range(uintptr_t addr, size_t bytes)
{
    uint64_t *bm = gc_space.bitmap;
    size_t i = gc_mark_index(addr);
    size_t j = i + bytes / 8; /* one past the last word */
    size_t wi = i >> 6, wj = (j - 1) >> 6;
    uint64_t lo = ~(uint64_t)0 << (i & 63);
    uint64_t hi = ~(uint64_t)0 >> (63 - ((j - 1) & 63));
    if (wi == wj) {
        bm[wi] |= lo & hi;
        return;
    }
    bm[wi] |= lo;
    for (size_t w = wi + 1; w < wj; w++)
        bm[w] = ~(uint64_t)0;
    bm[wj] |= hi;
}

void gc_mark_clear_range(uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return;
    uint64_t *bm = gc_space.bitmap;
    size_t i = gc_mark_index(lo), j = gc_mark_index(hi);
    size_t wi = i >> 6, wj = j >> 6;
    if (wi == wj) {
        bm[wi] &= ~((~(uint64_t)0 << (i & 63)) & (((uint64_t)1 << (j & 63)) - 1));
        return;
    }
    bm[wi] &= ~(~(uint64_t)0 << (i & 63));
    memset(bm + wi + 1, 0, (wj - wi - 1) * sizeof *bm);
    if (j & 63)
        bm[wj] &= ~(((uint64_t)1 << (j & 63)) - 1);
}

typedef struct Marker {
    Oop *sp, *high;
    uintptr_t lo, hi; /* the used heap: anything else in a slot is corrupt */
} Marker;

static inline void mark_value(Marker *m, Oop v)
{
    if ((v & 7) != 0 || v == 0)
        return;
    if (v - m->lo >= m->hi - m->lo)
        gc_panic("mark: reference %#lx outside the heap [%#lx, %#lx)", (unsigned long)v, (unsigned long)m->lo,
                 (unsigned long)m->hi);
    if (gc_mark_test(v))
        return;
    gc_mark_set_range(gc_space_mem_start(v), obj_total_bytes(v));
    if (obj_pointer_slots(v)) {
        *m->sp++ = v;
        if (m->sp > m->high)
            m->high = m->sp;
    }
}

static void mark_root(Oop *slot, void *ctx) { mark_value(ctx, *slot); }

void gc_mark_run(void)
{
    GcSpace *s = &gc_space;
    Marker m = {s->mark_stack, s->mark_stack, s->base, s->old_top};
    s->client.visit_roots(mark_root, &m, s->client.client);
    while (m.sp > s->mark_stack) {
        Oop o = *--m.sp;
        size_t n = obj_pointer_slots(o);
        const Oop *slot = obj_slots(o);
        for (size_t i = 0; i < n; i++)
            mark_value(&m, slot[i]);
    }
    size_t used = (size_t)(m.high - s->mark_stack) * sizeof(Oop);
    if (used > GC_MARK_STACK_KEEP_BYTES)
        madvise(s->mark_stack, (used + GC_PAGE_BYTES - 1) & ~(GC_PAGE_BYTES - 1), MADV_DONTNEED);
}
