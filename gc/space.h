/*
 * gc/space.h — the heap's spaces and the state every collector shares.
 *
 * One reservation, mapped once (MAP_NORESERVE), low to high:
 *
 *   base                                  old_start      old_limit     end
 *   +--------+------------+------------+----------------+-----------+---+
 *   |  eden  | survivor 0 | survivor 1 | old objects ...|  (free)   |rsv|
 *   +--------+------------+------------+----------------+-----------+---+
 *   eden_start     gc_eden_top ^          old_top ^
 *
 *   - eden is bump-allocated; the inline fast path stops at the soft limit
 *     (gc_eden_soft_limit), the slow path may use the rest up to eden_end.
 *   - survivors: surv[cur] holds the survivors of the last scavenge (up to
 *     surv_top), surv[1 - cur] is empty between scavenges.
 *   - old space is bump-allocated between full GCs and slid down by them,
 *     so it has no holes and is walked from old_start to old_top.
 *   - the mutator may allocate old objects only up to old_limit; the last
 *     eden + survivor bytes ("rsv") are kept for the scavenger, which may
 *     have to tenure everything young is holding. gc_collect(false) turns
 *     into a full GC once old_top passes old_limit, and a full GC needs no
 *     headroom, so a scavenge can never run out of old space.
 *
 * Side tables, each its own NORESERVE mapping covering [base, end):
 *   bitmap      one bit per heap word. The full GC sets every word of a
 *               live object; the verifier sets object starts only. Zero
 *               outside those two users.
 *   block_base  one address per 64 heap words: where the first live word
 *               of that block goes in a full GC (sliding prefix sums).
 *   mark_stack  one Oop per possible object (heap / 16 bytes: the smallest
 *               object is 16 bytes), so marking can never overflow it.
 *
 * Object memory and its Oop: an object with 255 slots or more has an
 * overflow word *before* its header, whose top byte is 0xFF. A header of
 * an object with fewer slots never has top byte 0xFF, so a walker standing
 * at the start of an object's memory knows which word it is looking at.
 *
 * Who may call: gc/ only.
 */
#ifndef GC_SPACE_H
#define GC_SPACE_H

#include "gc/heap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_PAGE_BYTES ((size_t)4096)
/* Smallest eden: keeps the large-object cut (eden / 8) above the largest
 * object the inline fast path can make (254 slots + header = 2040 bytes),
 * so gc_alloc_fast needs no size check beyond the slot count. */
#define GC_EDEN_MIN_BYTES ((size_t)32 << 10)
/* Words per block_base entry: one bitmap word, so a forwarding address is
 * one table load plus one popcount. */
#define GC_BLOCK_WORDS 64

typedef struct GcSpace {
    uintptr_t base, end; /* the whole reservation */
    size_t heap_bytes;

    uintptr_t eden_start, eden_end;
    size_t eden_bytes;
    size_t large_bytes; /* objects bigger than this go straight to old space */

    uintptr_t surv[2];
    size_t surv_bytes;
    int cur; /* survivor space holding the live young objects */
    uintptr_t surv_top;

    uintptr_t old_top;
    uintptr_t old_limit;     /* mutator allocations stay below this */
    uintptr_t old_threshold; /* passing it asks for a full GC */

    uint64_t *bitmap;
    size_t bitmap_bytes;
    uintptr_t *block_base;
    size_t block_base_bytes;
    Oop *mark_stack;
    size_t mark_stack_bytes;

    Oop *remembered;
    size_t remembered_count, remembered_capacity;
    bool remembered_overflowed; /* the set is incomplete until the next full GC */

    GcClient client;
    GcConfig cfg;
    uint32_t hash_state;
    uint64_t collections; /* gc_collect calls, for --gc-stress pacing */
    bool in_gc;
    bool full_wanted; /* gc_collect_full_soon: the next collection is a full GC */
} GcSpace;

extern GcSpace gc_space;

/* Broken invariant inside the collector: message and abort. */
_Noreturn void gc_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline uintptr_t gc_space_surv_start(void) { return gc_space.surv[gc_space.cur]; }

/* Oop of the object whose memory starts at mem. */
static inline Oop gc_space_oop_at(uintptr_t mem)
{
    return (*(uint64_t *)mem >> 56) == OBJ_SLOTS_OVERFLOW ? (Oop)(mem + 8) : (Oop)mem;
}

/* First byte of o's memory: its overflow word if it has one. */
static inline uintptr_t gc_space_mem_start(Oop o)
{
    return (obj_header(o) >> OBJ_SLOTS_SHIFT) == OBJ_SLOTS_OVERFLOW ? (uintptr_t)o - 8 : (uintptr_t)o;
}

/* Bytes an object of `slots` slots occupies (the inverse of obj_total_bytes). */
static inline size_t gc_space_object_bytes(size_t slots)
{
    return ((slots == 0 ? 1 : slots) + 1 + (slots >= OBJ_SLOTS_OVERFLOW ? 1 : 0)) * 8;
}

/* Sets old_threshold from the bytes a full GC left live (see heap.c). */
void gc_space_set_threshold(size_t live);

/* Sets gc_eden_soft_limit again from the real limit, the watch and the
 * next sample point (heap.c): after anything moves eden's top other than
 * an allocation that counts its bytes. */
void gc_alloc_sampling_relimit(void);

/* Calls fn on every object whose memory lies in [start, top), in address
 * order; false if fn stopped the walk. */
bool gc_space_walk(uintptr_t start, uintptr_t top, bool (*fn)(Oop obj, void *ctx), void *ctx);

#endif
