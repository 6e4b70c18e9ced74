/*
 * gc/mark.h — the mark bitmap and the full GC's mark phase.
 *
 * One bit per heap word over the whole reservation (gc/space.h). The mark
 * phase sets the bits of *every* word of a live object, overflow word
 * included, so that the number of set bits below an address is the number
 * of live words below it: gc/compact.c turns that into forwarding
 * addresses without a forwarding word. An object is marked when the bit of
 * its header word is set.
 *
 * The bitmap is all zero outside a full GC and outside gc_verify; each
 * user clears what it set before returning.
 *
 * Who may call: gc/compact.c, gc/verify.c.
 */
#ifndef GC_MARK_H
#define GC_MARK_H

#include "gc/space.h"

static inline size_t gc_mark_index(uintptr_t addr) { return (addr - gc_space.base) >> 3; }

static inline bool gc_mark_test(uintptr_t addr)
{
    size_t i = gc_mark_index(addr);
    return (gc_space.bitmap[i >> 6] >> (i & 63)) & 1;
}

static inline void gc_mark_set(uintptr_t addr)
{
    size_t i = gc_mark_index(addr);
    gc_space.bitmap[i >> 6] |= (uint64_t)1 << (i & 63);
}

/* Sets the bits of the words [addr, addr + bytes). */
void gc_mark_set_range(uintptr_t addr, size_t bytes);

/* Clears the bits of [lo, hi); both word aligned. */
void gc_mark_clear_range(uintptr_t lo, uintptr_t hi);

/* Address of the first set bit in [from, limit), or limit. Inline: the
 * compactor calls it once per live object. */
static inline uintptr_t gc_mark_next(uintptr_t from, uintptr_t limit)
{
    const uint64_t *bm = gc_space.bitmap;
    size_t i = gc_mark_index(from), end = gc_mark_index(limit);
    while (i < end) {
        uint64_t bits = bm[i >> 6] >> (i & 63);
        if (bits) {
            i += (size_t)__builtin_ctzll(bits);
            break;
        }
        i = ((i >> 6) + 1) << 6;
    }
    return i < end ? gc_space.base + i * 8 : limit;
}

/* Marks everything reachable from the client's roots, young and old. */
void gc_mark_run(void);

#endif
