/*
 * vm/jit/zone.h — the machine-code zone: one RWX mapping holding every byte of
 * code the JIT generates, allocated by bumping and reclaimed by LRU
 * compaction.
 *
 *   base               methods                 free          young       end
 *   +------------------+-----------------------+-------------+-----------+
 *   | trampolines and  | methods, blocks, PICs | unused      | young     |
 *   | enilopmarts      | bump-allocated,       |             | referrers |
 *   | (fixed size,     | 16-aligned, holes     |             | JitMethod*|
 *   |  bump-allocated) | marked FREE           |             | grows down|
 *   +------------------+-----------------------+-------------+-----------+
 *   Cog's names (reference 004 §2.2): CogCode = base, CCFree = free,
 *   CCEnd = young (the last address before the young referrers).
 *
 * Invariants:
 *   - Every piece starts with a JitMethod header (vm/jit/jitmethod.h) and is a
 *     multiple of 16 bytes; walking by header sizes from `methods` reaches
 *     exactly `free`. Trampolines live in their own area and are never
 *     freed, moved or counted in the LRU.
 *   - Holes are never reused directly: jit_zone_free marks a piece FREE and
 *     fills its code with int3 (a stale call traps instead of running old
 *     code); only compaction gives the bytes back.
 *   - The young-referrers list and the method area never overlap. Every
 *     header in the method area (live or hole) reserves one list slot when
 *     it is allocated, so free + 8 * (headers) <= end always holds and
 *     jit_zone_young_add, which runs inside a scavenge where nothing can be
 *     compacted, never fails. Allocation fails instead, when the piece plus
 *     its slot would reach the list's reserve. The reserve costs 8 bytes per
 *     method: about 1.3% of a 1 MiB zone at Cog's 1752 methods per MiB
 *     (reference 002, Table 1).
 *   - Nothing in the zone moves except inside jit_zone_compact, and then
 *     only after the owner has been told (JitZoneRelocate).
 *   - The zone's own bookkeeping (a sorted index of headers, the LRU and
 *     relocation scratch) lives in the C heap, allocated once at init, so
 *     allocation and compaction never call malloc.
 *
 * Lookup of the piece containing an address (the profiler, return-address
 * relocation) is a binary search of the index, O(log n); in the trampoline
 * area, which holds a few dozen pieces made once at startup, it is a walk.
 *
 * Single-threaded: the VM thread owns the zone. Profilers read it through
 * the export, never directly.
 *
 * Who may call: vm/jit/ (the compiler allocates, the send-site module and the
 * GC glue relocate and visit), the VM's startup (init with --code-size).
 */
#ifndef JIT_ZONE_H
#define JIT_ZONE_H

#include "vm/jit/jitmethod.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Cog's default machine-code zone: "code size: 1,048,576" in the VMProfiler
 * reports of reference 004 (Figure 7). */
#define JIT_ZONE_DEFAULT_BYTES ((size_t)1 << 20)
/* Chosen here, not measured: 1/16 of the default keeps the small-sizes mode
 * compacting often. A method bigger than the quarter compaction frees fails
 * to allocate even after compacting and stays interpreted. */
#define JIT_ZONE_MIN_BYTES ((size_t)64 << 10)
/* rel32 calls and jumps reach +-2 GiB: a zone of at most 1 GiB placed within
 * JIT_ZONE_NEAR_REACH of the VM's text lets every piece call every other
 * piece, the trampolines and the C runtime with a 5-byte call. */
#define JIT_ZONE_MAX_BYTES ((size_t)1 << 30)
#define JIT_ZONE_NEAR_REACH ((size_t)1 << 30)
/* The method area must hold more than the trampolines leave: half the
 * minimum zone, so even the smallest zone has room for methods to compete
 * for. */
#define JIT_ZONE_MIN_METHOD_BYTES (JIT_ZONE_MIN_BYTES / 2)
/* Compaction frees least recently used methods until this fraction of the
 * method area is free: Cog frees a quarter (reference 004 §2.2). */
#define JIT_ZONE_COMPACT_FREE_DIVISOR 4
/* One young-referrers slot: a JitMethod pointer. */
#define JIT_ZONE_YOUNG_SLOT_BYTES 8
/* What freed code is filled with: int3, so a stale jump traps. */
#define JIT_ZONE_FILL_BYTE 0xCC

_Static_assert(JIT_ZONE_YOUNG_SLOT_BYTES == sizeof(JitMethod *), "a slot holds a pointer");
_Static_assert(JIT_ZONE_MAX_BYTES + JIT_ZONE_NEAR_REACH <= ((size_t)1 << 31), "rel32 reaches across zone and reach");
_Static_assert(JIT_ZONE_MAX_BYTES <= UINT32_MAX, "offsets in the zone fit 32 bits");

typedef struct JitZoneConfig {
    size_t zone_bytes;       /* 0: JIT_ZONE_DEFAULT_BYTES; rounded up to whole pages */
    size_t trampoline_bytes; /* the fixed first area; rounded up to 16 */
    const void *near;        /* NULL, or an address (the VM's text) the whole zone must lie
                                within JIT_ZONE_NEAR_REACH of */
} JitZoneConfig;

typedef struct JitZoneStats {
    uint64_t compactions;
    uint64_t compaction_usecs_total, compaction_usecs_max;
    uint64_t methods_allocated; /* trampolines included */
    uint64_t methods_freed;     /* by jit_zone_free and by compaction */
    uint64_t methods_evicted;   /* of those, chosen by compaction's LRU */
    uint64_t methods_moved;
    /* The zone now: */
    size_t bytes_trampolines;   /* used of the trampoline area */
    size_t bytes_in_use;        /* live pieces in the method area */
    size_t bytes_in_holes;      /* freed pieces not yet compacted away */
    size_t bytes_young_reserve; /* one slot per method-area header (see Invariants) */
    size_t bytes_free;          /* between free and the reserve: an alloc of n
                                   succeeds iff round16(n) + 8 <= bytes_free */
    uint32_t methods_live, young_referrers;
} JitZoneStats;

/* All fields are the zone's; read them through the functions below. */
typedef struct JitZone {
    uint8_t *base, *end;     /* the mapping */
    uint8_t *tramp_free;     /* bump pointer of the trampoline area */
    uint8_t *methods;        /* first byte of the method area */
    uint8_t *free;           /* bump pointer of the method area (CCFree) */
    uint32_t *index;         /* zone offsets of every header in [methods, free), ascending */
    uint32_t *scratch;       /* compaction: LRU order, then each header's new offset */
    uint32_t count;          /* headers in the index (live and holes) */
    uint32_t capacity;       /* of index and scratch */
    uint32_t young_count;    /* slots in use below end */
    uint32_t live_count;
    size_t live_bytes;
    uint64_t tick;           /* the use counter touch and alloc advance */
    bool compacting;         /* inside jit_zone_compact: no alloc, no shrink */
    bool planned;            /* scratch holds new offsets: jit_zone_forward answers */
    JitZoneStats stats;
} JitZone;

/* Maps the zone. false with a message in err (what was wrong, what to do)
 * when a size is out of range or mmap fails. */
bool jit_zone_init(JitZone *z, const JitZoneConfig *cfg, char *err, size_t errlen);
void jit_zone_release(JitZone *z);

/* -- Allocation -------------------------------------------------------------- */

/* A piece of at least `bytes` (header included; rounded up to 16, at least
 * the header). TRAMPOLINE comes from the trampoline area, every other kind
 * from the method area. The header is zeroed except size, kind and tick (a
 * new piece counts as just used); the rest is the caller's to fill
 * (jit_method_apply_layout). NULL when the area is full: the caller
 * compacts and retries, or interprets. */
JitMethod *jit_zone_alloc(JitZone *z, JitMethodKind kind, size_t bytes);
/* Gives back the tail of the most recent allocation of its area, so the
 * compiler can allocate an upper bound, emit in place and keep what it used.
 * bytes is rounded up to 16 and may not exceed the current size. */
void jit_zone_shrink(JitZone *z, JitMethod *m, size_t bytes);
/* Marks a method-area piece FREE (its code becomes int3, it leaves the young
 * referrers). The caller has already unlinked everything that refers to it;
 * compaction reclaims the bytes. */
void jit_zone_free(JitZone *z, JitMethod *m);
/* m was used: it goes to the back of the LRU order. */
static inline void jit_zone_touch(JitZone *z, JitMethod *m) { m->tick = ++z->tick; }

/* -- Compaction ---------------------------------------------------------------- */

/* The owner's part of a compaction. Everything is called on the VM thread
 * with the zone still laid out as before the compaction; none may allocate,
 * shrink or compact. */
typedef struct JitZoneRelocate {
    void *ctx;
    /* Optional: answers false for a method that must survive (the owner
     * cannot drop it, e.g. it has activations it will not convert). */
    bool (*can_free)(const JitMethod *m, void *ctx);
    /* The zone is about to free m (LRU first): unlink every send site and PIC
     * case that targets it and forget it (the heap method's back pointer).
     * It may jit_zone_free other pieces, such as PICs that only served m. */
    void (*on_free)(JitMethod *m, void *ctx);
    /* m will move to new_m. Called for exactly the methods that move, in
     * address order, after every free and before any byte moves:
     * jit_zone_forward answers for every address. Patches the owner makes in
     * the old bytes travel with them. */
    void (*on_move)(JitMethod *m, JitMethod *new_m, void *ctx);
    /* Optional: called once after the on_move calls and before any byte
     * moves (also when nothing moves): the place to walk all survivors' send sites
     * (moved or not, jit_zone_first/next still see the old layout) and the
     * return addresses on the stack pages, rewriting each zone address p as
     * jit_zone_forward(z, p). */
    void (*before_slide)(void *ctx);
} JitZoneRelocate;

/* Frees least recently used methods until at least a quarter of the method
 * area is free (fewer if can_free refuses), then slides the survivors down
 * in address order. Answers the bytes then free (JitZoneStats.bytes_free). */
size_t jit_zone_compact(JitZone *z, const JitZoneRelocate *cb);
/* During on_move and before_slide only: where the byte at p will be after
 * this compaction. NULL for an address inside a freed piece; p itself for an
 * address outside the method area (trampolines, C code). */
void *jit_zone_forward(const JitZone *z, const void *p);

/* -- Finding and walking ------------------------------------------------------- */

/* The live piece (trampolines included) whose bytes, header included,
 * contain p; NULL in holes, unused space, the young list or outside. */
JitMethod *jit_zone_find(const JitZone *z, const void *p);
/* Live pieces in address order, trampolines first; NULL after the last. */
JitMethod *jit_zone_first(const JitZone *z);
JitMethod *jit_zone_next(const JitZone *z, const JitMethod *m);

/* -- Young referrers ------------------------------------------------------------ */

/* m (a method-area piece) has a literal in the nursery; idempotent. */
void jit_zone_young_add(JitZone *z, JitMethod *m);
static inline uint32_t jit_zone_young_count(const JitZone *z) { return z->young_count; }
/* Entry i, 0 the first added; the list is the slots below end, growing down. */
static inline JitMethod *jit_zone_young_at(const JitZone *z, uint32_t i)
{
    return ((JitMethod *const *)(const void *)z->end)[-1 - (int64_t)i];
}
/* After a scavenge: keeps the methods still_young answers true for, in
 * order, and takes the others off the list. */
void jit_zone_young_prune(JitZone *z, bool (*still_young)(JitMethod *m, void *ctx), void *ctx);
/* Empties the list (a full GC tenured everything). */
void jit_zone_young_clear(JitZone *z);

/* -- Bounds and statistics -------------------------------------------------------- */

static inline uint8_t *jit_zone_base(const JitZone *z) { return z->base; }
static inline uint8_t *jit_zone_end(const JitZone *z) { return z->end; }
static inline uint8_t *jit_zone_methods_base(const JitZone *z) { return z->methods; }
static inline uint8_t *jit_zone_free_start(const JitZone *z) { return z->free; }
/* The lowest young-referrers slot in use (CCEnd). */
static inline uint8_t *jit_zone_young_base(const JitZone *z)
{
    return z->end - (size_t)z->young_count * JIT_ZONE_YOUNG_SLOT_BYTES;
}
static inline bool jit_zone_contains(const JitZone *z, const void *p)
{
    return (const uint8_t *)p >= z->base && (const uint8_t *)p < z->end;
}
void jit_zone_stats(const JitZone *z, JitZoneStats *out);

#endif
