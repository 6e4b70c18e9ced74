/*
 * gc/heap.h — object memory: allocation, write barrier, collection, counters.
 *
 * One contiguous reservation holds, low to high:
 *
 *   +--------+------------+------------+--------------------------------+
 *   |  eden  | survivor A | survivor B |  old space (bump, compacted)   |
 *   +--------+------------+------------+--------------------------------+
 *   ^ young_start                      ^ old_start          old_top ^   ^ heap_end
 *
 * so "is this object young?" is one compare against old_start.
 *
 * The Spur rule: allocation never collects. When eden passes its soft limit
 * (or the remembered set overflows, or old space grows past its threshold)
 * a flag is raised and the VM calls gc_collect() at its next safe point
 * (a send or a backward jump) with every live Oop reachable from the roots
 * its GcClient enumerates. Eden keeps a reserve beyond the soft limit; what
 * does not fit is allocated in old space directly. Only when old space
 * itself cannot grow within --heap-size does allocation fail: the caller
 * gets 0 and must report out-of-memory.
 *
 * Who may call: vm/, and profiler/publish.c (the heap's counters in the
 * export). vm/jit/ reaches eden's top and limit only through the addresses the
 * VM hands it (vm/jit/compile.h, JitCompileRuntime). gc/ knows nothing of
 * bytecodes or frames: the VM hands it roots through GcClient.
 */
#ifndef GC_HEAP_H
#define GC_HEAP_H

#include "gc/object.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_HEAP_DEFAULT_BYTES ((size_t)1 << 30)      /* 1 GiB: --heap-size */
#define GC_EDEN_DEFAULT_BYTES ((size_t)4 << 20)      /* 4 MiB: --eden-size; Cog's default eden is a few MB */
#define GC_EDEN_SMALL_BYTES ((size_t)64 << 10)       /* --small */
#define GC_TENURE_AGE 3                              /* scavenges survived before promotion */
#define GC_REMEMBERED_CAPACITY 65536                 /* root table slots; overflow forces a full GC */

typedef struct GcConfig {
    size_t heap_bytes; /* whole reservation; old space gets what young does not */
    size_t eden_bytes; /* each survivor space is eden_bytes / 4 */
    bool verify;       /* --gc-verify: full heap check before and after every collection */
    bool stress;       /* --gc-stress: gc_wants_collect() is always true */
    size_t remembered_capacity; /* 0 = GC_REMEMBERED_CAPACITY (tests use small values) */
    /* Where old space should start, 0 = GC_LOW_OLD_START: a snapshot's old
     * space (gc/image.h) mapped at its own address needs no relocation, so
     * its pages stay shared with the page cache until written. Taken only
     * if that range is free; otherwise the heap goes anywhere. */
    uintptr_t old_start_hint;
} GcConfig;

/* Old space's start without a hint: 256 MiB, so that nil, true, false, the
 * classes and every object of a boot lie under 2 GiB, where machine code
 * takes them as sign-extended 32-bit immediates (push imm32, cmp with an
 * imm32) rather than a 10-byte movabs into a scratch register (1 % of
 * Sieve's instructions, callgrind). A boot from source writes this address
 * into the snapshot, whose boots ask for it again. The default 1 GiB heap
 * ends below ASan's shadow (0x7fff8000), so sanitizer builds get it too. */
#define GC_LOW_OLD_START ((uintptr_t)1 << 28)

/* Root enumeration: the VM calls visit(slot, ctx) for every Oop-holding
 * location it owns (frames, globals, class table, symbol table, …). The
 * collector may rewrite *slot. Non-pointer values (SmallIntegers, 0) are
 * allowed and ignored. Each slot must be visited exactly once per call:
 * a full GC calls visit_roots twice (mark, then update to the new
 * addresses) and --gc-verify once more, all between before_collect and
 * after_collect, and each must enumerate the same slots. */
typedef void (*GcVisitFn)(Oop *slot, void *ctx);

typedef struct GcClient {
    void (*visit_roots)(GcVisitFn visit, void *ctx, void *client);
    void (*before_collect)(bool full, void *client); /* may be NULL */
    void (*after_collect)(bool full, void *client);  /* may be NULL */
    void *client;
} GcClient;

typedef struct GcStats {
    uint64_t scavenges;
    uint64_t full_gcs;
    uint64_t scavenge_usecs, scavenge_max_usecs;
    uint64_t full_usecs, full_max_usecs;
    uint64_t tenures;          /* scavenges that promoted at least one object */
    uint64_t objects_tenured;  /* by scavenges, and the young survivors of full GCs */
    uint64_t bytes_allocated;  /* all allocation, young and old */
    uint64_t bytes_freed;      /* reclaimed by scavenges and full GCs */
    uint64_t remembered_overflows;
    uint64_t compactions;      /* full GCs that moved at least one object */
} GcStats;

extern GcStats gc_stats;

/* Heap boundaries (read-only outside gc/; inline checks use them). */
extern uintptr_t gc_old_start;
extern volatile bool gc_collect_wanted;
/* Allocation fast-path state (read-only outside gc/): the eden bump
 * pointer, the soft limit at which the inline path hands over to the slow
 * path, and the fill value of new pointer slots. */
extern uintptr_t gc_eden_top;
extern uintptr_t gc_eden_soft_limit;
extern Oop gc_fill_value;

/* Returns false and fills err (if not NULL) when the reservation fails. */
bool gc_heap_init(const GcConfig *cfg, char *err, size_t errlen);
void gc_heap_release(void);
/* fn runs in gc_heap_release before the heap goes: the one part of gc/
 * built on the heap that keeps pointers into it outside objects, the weak
 * table (gc/weak.c), forgets them there. One slot, set by gc/weak.c, so
 * that the heap calls up without including it. */
void gc_heap_on_release(void (*fn)(void));
void gc_set_client(const GcClient *client);
/* Pointer slots of new objects are filled with this (nil once it exists). */
void gc_set_fill(Oop nil);

/* Allocate a zeroed / nil-filled object in eden (old space if it does not
 * fit). slots counts words of storage; for byte formats pass the byte
 * length to gc_alloc_bytes instead. Returns 0 when memory is exhausted:
 * old space is full up to the eden + survivor bytes it keeps in reserve
 * for tenuring. That space may be garbage, so a primitive getting 0
 * should fail, let the VM run gc_collect(true) and retry once before
 * reporting out-of-memory. Objects that land in old space and may hold
 * pointers are put in the remembered set up front, so filling them with
 * raw stores right after allocation is safe there too. */
Oop gc_alloc(uint32_t class_index, uint32_t format, size_t slots);
Oop gc_alloc_bytes(uint32_t class_index, size_t nbytes);
/* Compiled-method format: pointer_slots Oops (slot 0 must be written by the
 * caller with the header SmallInteger before the next collection) then nbytes. */
Oop gc_alloc_method(uint32_t class_index, size_t pointer_slots, size_t nbytes);
/* Same, but straight into old space (boot objects, methods, classes). */
Oop gc_alloc_old(uint32_t class_index, uint32_t format, size_t slots);

/* gc_alloc's out-of-line part: objects of 255+ slots, eden past its soft
 * limit, large objects, old space. Call gc_alloc or gc_alloc_fast. */
Oop gc_alloc_slow(uint32_t class_index, uint32_t format, size_t slots);

/* Allocation observer: how the USDT probe object__alloc (profiler/usdt.h)
 * sees every allocation without gc/ knowing probes or class names. While
 * *gc_alloc_watch is nonzero (the VM points it at the probe's semaphore,
 * which a tracer raises), each allocation calls the observer with the new
 * object (header written, storage filled) and its bytes, overflow word and
 * padding included. The observer must not allocate or collect.
 * The watch word is polled, not tested per allocation: by every slow-path
 * allocation and after every collection. Watched, gc_eden_soft_limit is 0,
 * so every allocation (machine code's inline ones too) takes the slow path,
 * which observes; unwatched, the fast path pays nothing. A tracer that
 * attaches is therefore seen from the next collection or slow-path
 * allocation on (at most one eden of allocation later). */
typedef void (*GcAllocObserver)(Oop obj, size_t bytes);
extern const volatile unsigned short *gc_alloc_watch; /* never NULL */
void gc_set_alloc_observer(const volatile unsigned short *watch, GcAllocObserver fn);
/* calls the observer; answers obj (out of line and cold: a tail call from
 * the allocators, whose fast path then saves no register) */
__attribute__((noinline, cold)) Oop gc_alloc_observed(Oop obj, size_t bytes);
/* Reads the watch word and sets gc_eden_soft_limit accordingly. */
void gc_alloc_poll_watch(void);
#if STVM_PROBES
/* The test: one compare of the watched word in memory (in asm, as a
 * volatile read would load it into a register first). */
static inline __attribute__((always_inline)) bool gc_alloc_watched(void)
{
#if defined(__x86_64__)
    bool watched;
    __asm__ volatile("cmpw $0, %1" : "=@ccne"(watched) : "m"(*gc_alloc_watch));
    return watched;
#else
    return *gc_alloc_watch != 0;
#endif
}
/* obj, after the observer saw it while watched: an allocator's last word,
 * `return GC_ALLOC_OBSERVED(obj, bytes);`, so the call is a tail call and the
 * fast path keeps its registers */
#define GC_ALLOC_OBSERVED(obj, bytes) (__builtin_expect(gc_alloc_watched(), 0) ? gc_alloc_observed(obj, bytes) : (obj))
#else
#define GC_ALLOC_OBSERVED(obj, bytes) ((void)(bytes), (obj))
#endif

/* Allocation sampling (proto/allocabi.h): about one sample per `interval`
 * bytes allocated, the gap to the next sample point drawn exponential
 * (a Poisson process over the stream of allocated bytes). The sample point
 * is a value of gc_stats.bytes_allocated; the allocation whose bytes
 * [before, after) contain it is sampled, with weight = the gaps ending at
 * the points inside it (one, unless the object is longer than a gap): the
 * bytes from the previous point to its last. A point's gap does not depend
 * on where it falls, so each object's expected weight is its size (no
 * bias toward large objects), and the weights add up to the bytes
 * allocated up to the last point: the allocation after it is short of
 * exactly that tail (on average one interval).
 *
 * The fast path pays nothing: while sampling, gc_eden_soft_limit is
 * min(the real limit, eden top + bytes left to the sample point), and
 * every inline allocation (gc_alloc_fast, machine code's Doubles) bumps
 * eden's top and gc_stats.bytes_allocated by the same bytes, so the one
 * that would cross the point fails its limit test and takes the slow path,
 * which samples and lowers the limit to the next point. The out-of-line
 * allocators (eden past its limit, large objects, old space, methods)
 * count the same way.
 *
 * The sampler's two functions:
 *   poll    at every slow-path allocation (first) and after every
 *           collection: reads the profiler's request and may call
 *           gc_alloc_sampling_set; may not allocate or collect.
 *   sample  obj (header written, storage filled: a method's slot 0 not
 *           yet), its bytes (as the observer's), weight, old (allocated
 *           straight into old space) and frame: the out-of-line allocator's
 *           own frame, whose saved frame pointer frame[0] and return
 *           address frame[1] lead into the code that asked for the object
 *           (gc_alloc and gc_alloc_bytes reach gc_alloc_slow by a tail
 *           call: their frame is gone). Must not allocate or collect.
 * Compiled out with STVM_ALLOC_SAMPLING=0 (then sampling never starts). */
typedef struct GcAllocSampler {
    void (*poll)(void);
    void (*sample)(Oop obj, size_t bytes, uint64_t weight, bool old, void *const *frame);
} GcAllocSampler;
/* NULL: none (sampling stops). The struct is kept by reference. */
void gc_set_alloc_sampler(const GcAllocSampler *sampler);
/* Samples every `interval` bytes on average from now on; 0 stops. A new
 * interval redraws the next point; the weights go on from the previous
 * point (or from the moment sampling started). */
void gc_alloc_sampling_set(uint64_t interval);
uint64_t gc_alloc_sampling_interval(void); /* 0: not sampling */
/* Seeds the gap generator (the VM: once per process; tests: fixed). */
void gc_alloc_sampling_seed(uint64_t seed);
/* The next gap for a mean of interval bytes: -log(u) * interval, u
 * uniform in (0, 1], at least GC_ALLOC_SAMPLE_MIN_GAP (advances the
 * generator; exposed for tests). */
uint64_t gc_alloc_sampling_gap(uint64_t interval);
#define GC_ALLOC_SAMPLE_MIN_GAP 8 /* one word: the smallest object is 16 bytes */

/* gc_alloc with its common case inline: a small object bumped into eden
 * below the soft limit. Same contract as gc_alloc. */
static inline Oop gc_alloc_fast(uint32_t class_index, uint32_t format, size_t slots)
{
    uintptr_t p = gc_eden_top;
    size_t storage = slots == 0 ? 1 : slots;
    uintptr_t end = p + (storage + 1) * 8;
    if (__builtin_expect(slots < OBJ_SLOTS_OVERFLOW && end <= gc_eden_soft_limit, 1)) {
        gc_eden_top = end;
        Oop *w = (Oop *)p;
        w[0] = (uint64_t)class_index | ((uint64_t)format << OBJ_FORMAT_SHIFT) | ((uint64_t)slots << OBJ_SLOTS_SHIFT);
        Oop fill = format == FMT_POINTERS ? gc_fill_value : 0;
        for (size_t i = 1; i <= storage; i++)
            w[i] = fill;
        gc_stats.bytes_allocated += end - p;
        return (Oop)p; /* never watched here: watched, the soft limit is 0 */
    }
    return gc_alloc_slow(class_index, format, slots);
}

/* Collect now. full=false scavenges (and escalates to a full GC when old
 * space passed its threshold or the remembered set overflowed); full=true
 * does a full mark-compact, which also tenures every live young object.
 * Only at a safe point, never from a GcClient hook. Returns true if a
 * collection ran (false only without a heap). A full GC whose live data
 * does not fit old space prints "stvm: out of memory: …" and exits(1). */
bool gc_collect(bool full);

/* Makes the collection at the VM's next safe point a full GC (the
 * allocation profiler's request for what is alive). */
void gc_collect_full_soon(void);

/* True when the VM should call gc_collect at its next safe point. */
static inline bool gc_wants_collect(void) { return gc_collect_wanted; }

static inline bool gc_is_young(Oop o) { return oop_is_ptr(o) && o != 0 && o < gc_old_start; }
static inline bool gc_is_old(Oop o) { return o >= gc_old_start; }
/* p lies in the heap's mapping (an object or not): for tools that must not
 * dereference an arbitrary word. */
bool gc_heap_contains(const void *p);

/* Write barrier: every store of an Oop into a heap object's slot goes
 * through here (stores into brand-new objects may skip it only if no
 * safe point intervened). */
void gc_remember(Oop obj);
static inline void gc_store(Oop obj, size_t i, Oop val)
{
    obj_slots(obj)[i] = val;
    if (gc_is_old(obj) && gc_is_young(val) && !(obj_header(obj) & OBJ_GC_REMEMBERED))
        gc_remember(obj);
}

/* Old objects currently in the remembered set (tests, counters). */
size_t gc_remembered_count(void);

/* Identity hash (22 bits, nonzero), assigned lazily and kept across moves. */
uint32_t gc_identity_hash(Oop o);

/* Sizes for the profiler's counters and the report. */
size_t gc_eden_bytes(void);
size_t gc_old_used_bytes(void);
size_t gc_old_free_bytes(void); /* old-space capacity not yet used */

/* Walks every object in the heap (eden, survivors, then old space) — used
 * by the verifier and tests. Stops early if fn returns false. fn must not
 * allocate, and the walk must not run during a collection. */
void gc_heap_walk(bool (*fn)(Oop obj, void *ctx), void *ctx);

/* Heap verifier (--gc-verify): checks every object header, every pointer
 * slot points at a valid object start, remembered set is complete (see
 * gc/verify.h for the full list). Returns true if sound; otherwise writes
 * the first broken invariant to msg (address, class index, slot). Under
 * --gc-verify, gc_collect also runs it, with the roots, before and after
 * each collection, and aborts with "stvm: gc-verify: …" on failure. */
bool gc_verify(char *msg, size_t msglen);

#endif
