/*
 * gc/heap.c — the reservation, allocation, identity hashes and heap walks.
 *
 * Allocation never collects (the Spur rule): it bumps a pointer in eden
 * or in old space and at most raises gc_collect_wanted for the VM's next
 * safe point. See gc/space.h for the layout and gc/collect.c for policy.
 */
#include "gc/space.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The real soft limit; gc_eden_soft_limit is it, or 0 while allocations are
 * watched (every allocation then takes the slow path, which tells the
 * observer: the fast path has no test of its own). */
static uintptr_t eden_soft_limit;
Oop gc_fill_value;
static const volatile unsigned short unwatched; /* gc_alloc_watch until an observer is set */
const volatile unsigned short *gc_alloc_watch = &unwatched;
static GcAllocObserver alloc_observer;

/* Eden's soft limit, in tenths of eden. The last 10% (400 KiB of the
 * default 4 MiB eden) is what the mutator may allocate between raising
 * gc_collect_wanted and reaching its next safe point — a primitive that
 * builds a few strings or copies an array — without spilling into old
 * space, where short-lived objects would survive until a full GC. */
#define GC_EDEN_SOFT_TENTHS 9

/* Objects larger than eden / GC_LARGE_OBJECT_DIVISOR go straight to old
 * space. At eden / 8 one such object is half a survivor space (eden / 4):
 * copying it through the survivors costs more than it can save, and two of
 * them would already force everything else to tenure on overflow. */
#define GC_LARGE_OBJECT_DIVISOR 8

/* Seed of the identity-hash generator: any nonzero value works for
 * xorshift32; a fixed one makes hashes (and so hashed-collection layouts)
 * reproducible from run to run. 0x9E3779B9 is 2^32 / golden ratio. */
#define GC_HASH_SEED 0x9E3779B9u

/* -- Panics ------------------------------------------------------------- */

_Noreturn void gc_panic(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("stvm: gc: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

/* -- Reservation -------------------------------------------------------- */

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static void *map_noreserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

bool gc_heap_init(const GcConfig *cfg, char *err, size_t errlen)
{
    GcSpace *s = &gc_space;
    if (s->base) {
        if (err)
            snprintf(err, errlen, "heap already initialized");
        return false;
    }
    size_t heap = cfg->heap_bytes ? cfg->heap_bytes : GC_HEAP_DEFAULT_BYTES;
    size_t eden = cfg->eden_bytes ? cfg->eden_bytes : GC_EDEN_DEFAULT_BYTES;
    if (eden < GC_EDEN_MIN_BYTES)
        eden = GC_EDEN_MIN_BYTES;
    eden = round_up(eden, GC_PAGE_BYTES);
    size_t surv = round_up(eden / 4, GC_PAGE_BYTES);
    size_t young = eden + 2 * surv;
    size_t reserve = eden + surv;
    /* Old space must at least hold the scavenger's reserve and as much
     * again for the program itself. */
    size_t need = young + 2 * reserve;
    heap = round_up(heap, GC_PAGE_BYTES);
    if (heap < need || heap > ((size_t)1 << 46)) {
        if (err)
            snprintf(err, errlen, "heap size %zu bytes does not fit an eden of %zu bytes (need at least %zu bytes, at most 64 TiB)",
                     heap, eden, need);
        return false;
    }

    memset(s, 0, sizeof *s);
    s->heap_bytes = heap;
    s->bitmap_bytes = heap / 64;
    s->block_base_bytes = heap / (GC_BLOCK_WORDS * 8) * sizeof(uintptr_t);
    s->mark_stack_bytes = heap / 16 * sizeof(Oop);
    size_t rcap = cfg->remembered_capacity ? cfg->remembered_capacity : GC_REMEMBERED_CAPACITY;

    void *base = NULL;
    uintptr_t hint = cfg->old_start_hint ? cfg->old_start_hint : GC_LOW_OLD_START;
    if (hint > young && hint % GC_PAGE_BYTES == 0) {
        void *want = (void *)(hint - young);
        base = mmap(want, heap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                    -1, 0);
        if (base == MAP_FAILED) base = NULL;
        else if (base != want) { /* a kernel before 4.17 takes the hint as a hint */
            munmap(base, heap);
            base = NULL;
        }
    }
    if (!base) base = map_noreserve(heap);
    s->bitmap = map_noreserve(s->bitmap_bytes);
    s->block_base = map_noreserve(s->block_base_bytes);
    s->mark_stack = map_noreserve(s->mark_stack_bytes);
    s->remembered = malloc(rcap * sizeof(Oop));
    if (!base || !s->bitmap || !s->block_base || !s->mark_stack || !s->remembered) {
        int e = errno;
        unmap(base, heap);
        unmap(s->bitmap, s->bitmap_bytes);
        unmap(s->block_base, s->block_base_bytes);
        unmap(s->mark_stack, s->mark_stack_bytes);
        free(s->remembered);
        memset(s, 0, sizeof *s);
        if (err)
            snprintf(err, errlen, "cannot reserve a heap of %zu bytes: %s (try a smaller --heap-size)", heap, strerror(e));
        return false;
    }

    s->cfg = *cfg;
    s->base = (uintptr_t)base;
    s->end = s->base + heap;
    s->eden_start = s->base;
    s->eden_end = s->base + eden;
    s->eden_bytes = eden;
    s->large_bytes = eden / GC_LARGE_OBJECT_DIVISOR;
    s->surv[0] = s->eden_end;
    s->surv[1] = s->eden_end + surv;
    s->surv_bytes = surv;
    s->cur = 0;
    s->surv_top = s->surv[0];
    s->old_top = s->base + young;
    s->old_limit = s->end - reserve;
    s->remembered_capacity = rcap;
    s->hash_state = GC_HASH_SEED;

    gc_old_start = s->base + young;
    gc_eden_top = s->eden_start;
    eden_soft_limit = gc_eden_soft_limit = s->eden_start + eden / 10 * GC_EDEN_SOFT_TENTHS;
    gc_alloc_sampling_relimit(); /* a watch, or sampling, from an earlier heap */
    gc_fill_value = 0;
    memset(&gc_stats, 0, sizeof gc_stats);
    gc_space_set_threshold(0);
    gc_collect_wanted = cfg->stress;
    return true;
}

static void (*on_release)(void);

void gc_heap_on_release(void (*fn)(void)) { on_release = fn; }

void gc_heap_release(void)
{
    GcSpace *s = &gc_space;
    if (!s->base)
        return;
    unmap((void *)s->base, s->heap_bytes);
    unmap(s->bitmap, s->bitmap_bytes);
    unmap(s->block_base, s->block_base_bytes);
    unmap(s->mark_stack, s->mark_stack_bytes);
    free(s->remembered);
    if (on_release) on_release(); /* the weak table's entries pointed into this heap */
    memset(s, 0, sizeof *s);
    gc_old_start = 0;
    gc_eden_top = 0;
    eden_soft_limit = gc_eden_soft_limit = 0;
    gc_fill_value = 0;
    gc_collect_wanted = false;
}

void gc_set_client(const GcClient *client) { gc_space.client = *client; }

void gc_set_fill(Oop nil) { gc_fill_value = nil; }

void gc_set_alloc_observer(const volatile unsigned short *watch, GcAllocObserver fn)
{
    alloc_observer = fn;
    gc_alloc_watch = watch && fn ? watch : &unwatched;
    gc_alloc_poll_watch();
}

/* -- Allocation sampling (heap.h) --------------------------------------- */

#if STVM_ALLOC_SAMPLING
static const GcAllocSampler *sampler;
static uint64_t sample_interval; /* 0: not sampling */
static uint64_t sample_at;       /* gc_stats.bytes_allocated at the next sample point */
static uint64_t sample_prev;     /* ... at the previous sample point, or when sampling began */
#endif
/* xorshift64*'s state; any nonzero seed (the VM seeds it per process) */
static uint64_t sample_rng = 0x9E3779B97F4A7C15ull;

/* A gap never longer than this (2^50 bytes: a petabyte), so adding it to
 * the counter cannot overflow. */
#define GC_ALLOC_SAMPLE_MAX_GAP ((uint64_t)1 << 50)

void gc_alloc_sampling_seed(uint64_t seed) { sample_rng = seed ? seed : 0x9E3779B97F4A7C15ull; }

uint64_t gc_alloc_sampling_gap(uint64_t interval)
{
    uint64_t x = sample_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    sample_rng = x;
    /* the top 53 bits of xorshift64*'s output, + 1: u in (0, 1], log(u) finite */
    double u = (double)(((x * 0x2545F4914F6CDD1Dull) >> 11) + 1) * 0x1.0p-53;
    double gap = -log(u) * (double)interval;
    if (!(gap < (double)GC_ALLOC_SAMPLE_MAX_GAP)) return GC_ALLOC_SAMPLE_MAX_GAP;
    return gap < GC_ALLOC_SAMPLE_MIN_GAP ? GC_ALLOC_SAMPLE_MIN_GAP : (uint64_t)gap;
}

void gc_alloc_sampling_relimit(void)
{
    uintptr_t lim = eden_soft_limit;
#if STVM_PROBES
    if (*gc_alloc_watch) lim = 0;
#endif
#if STVM_ALLOC_SAMPLING
    if (sample_interval && lim > gc_eden_top) {
        /* the fast path bumps eden's top and the counter alike, so the
         * point stays this far above the top until the slow path runs */
        uint64_t left = sample_at > gc_stats.bytes_allocated ? sample_at - gc_stats.bytes_allocated : 0;
        if (left < lim - gc_eden_top) lim = gc_eden_top + (uintptr_t)left;
    }
#endif
    gc_eden_soft_limit = lim;
}

#if STVM_ALLOC_SAMPLING
void gc_set_alloc_sampler(const GcAllocSampler *s)
{
    sampler = s;
    if (!s) gc_alloc_sampling_set(0);
}

void gc_alloc_sampling_set(uint64_t interval)
{
    if (!sampler) interval = 0;
    if (interval && !sample_interval) sample_prev = gc_stats.bytes_allocated;
    sample_interval = interval;
    if (interval) sample_at = gc_stats.bytes_allocated + gc_alloc_sampling_gap(interval);
    gc_alloc_sampling_relimit();
}

uint64_t gc_alloc_sampling_interval(void) { return sample_interval; }

/* The poll of every slow-path allocation: the sampler's request first. */
static inline void poll_sampler(void)
{
    if (sampler) sampler->poll();
}

/* obj took bytes [before, gc_stats.bytes_allocated): sampled when that
 * range holds the point (everything before it was below: the limit).
 * Its weight is the gaps that end at the points inside it: a point's gap
 * does not depend on where it falls (Poisson), so every object's expected
 * weight is its size. Measuring to the object's end instead would credit
 * a large object with the bytes after its point too (about half its size)
 * and take them from the next sample's. */
static inline void maybe_sample(Oop obj, size_t total, bool old, void *const *frame)
{
    if (__builtin_expect(sample_interval != 0 && obj != 0 && gc_stats.bytes_allocated > sample_at, 0)) {
        uint64_t now = gc_stats.bytes_allocated, weight = 0;
        do {
            weight += sample_at - sample_prev;
            sample_prev = sample_at;
            sample_at += gc_alloc_sampling_gap(sample_interval);
        } while (sample_at < now);
        sampler->sample(obj, total, weight, old, frame);
    }
}
#else
void gc_set_alloc_sampler(const GcAllocSampler *s) { (void)s; }
void gc_alloc_sampling_set(uint64_t interval) { (void)interval; }
uint64_t gc_alloc_sampling_interval(void) { return 0; }
static inline void poll_sampler(void) {}
static inline void maybe_sample(Oop obj, size_t total, bool old, void *const *frame)
{
    (void)obj, (void)total, (void)old, (void)frame;
}
#endif

void gc_alloc_poll_watch(void)
{
    poll_sampler();
    gc_alloc_sampling_relimit();
}

Oop gc_alloc_observed(Oop obj, size_t bytes)
{
    if (alloc_observer) alloc_observer(obj, bytes);
    return obj;
}

/* -- Allocation --------------------------------------------------------- */

/* Old-space growth threshold after a full GC that left `live` bytes: twice
 * the live size, as Lua's default GC pause of 200% waits for the heap to
 * double, so the full-GC cost stays proportional to allocation. The 16 MiB
 * floor (four default edens of tenured data) keeps boot and small programs,
 * whose old space is mostly classes and methods, from paying a full GC
 * every few scavenges. */
#define GC_OLD_GROWTH_FACTOR 2
#define GC_OLD_MIN_THRESHOLD_BYTES ((size_t)16 << 20)

void gc_space_set_threshold(size_t live)
{
    GcSpace *s = &gc_space;
    size_t grow = live * GC_OLD_GROWTH_FACTOR;
    if (grow < GC_OLD_MIN_THRESHOLD_BYTES)
        grow = GC_OLD_MIN_THRESHOLD_BYTES;
    /* Never past old_limit: gc/collect.c relies on it to turn a scavenge
     * into a full GC once tenuring has eaten into the reserve. */
    s->old_threshold = s->old_limit - gc_old_start < grow ? s->old_limit : gc_old_start + grow;
}

/* Writes the header (and overflow word) at mem and fills the storage. */
static Oop init_object(uintptr_t mem, uint32_t class_index, uint32_t format, size_t slots, size_t total)
{
    uint64_t slot_field = slots;
    if (slots >= OBJ_SLOTS_OVERFLOW) {
        *(uint64_t *)mem = ((uint64_t)OBJ_SLOTS_OVERFLOW << 56) | (uint64_t)slots;
        mem += 8;
        total -= 8;
        slot_field = OBJ_SLOTS_OVERFLOW;
    }
    uint64_t *w = (uint64_t *)mem;
    w[0] = (uint64_t)class_index | ((uint64_t)format << OBJ_FORMAT_SHIFT) | (slot_field << OBJ_SLOTS_SHIFT);
    Oop fill = format == FMT_POINTERS ? gc_fill_value : 0;
    size_t storage = total / 8 - 1;
    if (fill == 0)
        memset(w + 1, 0, storage * 8);
    else
        for (size_t i = 1; i <= storage; i++)
            w[i] = fill;
    return (Oop)mem;
}

static bool may_hold_pointers(uint32_t format, size_t slots)
{
    return (format == FMT_POINTERS && slots > 0) || format >= FMT_METHOD;
}

/* Old-space bump allocation for the mutator; 0 past old_limit. frame:
 * the public allocator's own (heap.h, GcAllocSampler). */
static Oop alloc_old(uint32_t class_index, uint32_t format, size_t slots, void *const *frame)
{
    GcSpace *s = &gc_space;
    if (!s->base || slots > s->heap_bytes / 8)
        return 0;
    size_t total = gc_space_object_bytes(slots);
    /* old_top may already be past old_limit: scavenges tenure into the reserve. */
    if (s->old_top > s->old_limit || total > s->old_limit - s->old_top) {
        gc_collect_wanted = true; /* a full GC may make room for a retry */
        return 0;
    }
    uintptr_t mem = s->old_top;
    s->old_top += total;
    if (s->old_top > s->old_threshold)
        gc_collect_wanted = true;
    gc_stats.bytes_allocated += total;
    Oop o = init_object(mem, class_index, format, slots, total);
    /* A new object may be filled without the write barrier (heap.h), which
     * is only sound for young objects: an old one is remembered up front
     * and dropped by the first scavenge that finds no young pointer in it. */
    if (may_hold_pointers(format, slots))
        gc_remember(o);
    maybe_sample(o, total, true, frame);
    gc_alloc_sampling_relimit(); /* the counter moved, eden's top did not */
    return GC_ALLOC_OBSERVED(o, total);
}

/* The slow path, inlined into each public allocator so that frame is the
 * public one's. */
static inline __attribute__((always_inline)) Oop alloc_slow(uint32_t class_index, uint32_t format, size_t slots,
                                                          void *const *frame)
{
    GcSpace *s = &gc_space;
    if (!s->base || slots > s->heap_bytes / 8)
        return 0;
    size_t total = gc_space_object_bytes(slots);
    gc_alloc_poll_watch();
    if (total <= s->large_bytes && total <= s->eden_end - gc_eden_top) {
        uintptr_t mem = gc_eden_top;
        gc_eden_top += total;
        if (gc_eden_top > eden_soft_limit)
            gc_collect_wanted = true;
        gc_stats.bytes_allocated += total;
        Oop o = init_object(mem, class_index, format, slots, total);
        maybe_sample(o, total, false, frame);
        gc_alloc_sampling_relimit();
        return GC_ALLOC_OBSERVED(o, total);
    }
    if (total <= s->large_bytes)
        gc_collect_wanted = true; /* eden is full */
    return alloc_old(class_index, format, slots, frame);
}

Oop gc_alloc_slow(uint32_t class_index, uint32_t format, size_t slots)
{
    return alloc_slow(class_index, format, slots, __builtin_frame_address(0));
}

Oop gc_alloc(uint32_t class_index, uint32_t format, size_t slots)
{
    return gc_alloc_fast(class_index, format, slots);
}

static size_t byte_slots(size_t nbytes) { return (nbytes + 7) / 8; }

Oop gc_alloc_bytes(uint32_t class_index, size_t nbytes)
{
    size_t slots = byte_slots(nbytes);
    return gc_alloc_fast(class_index, FMT_BYTES + (uint32_t)(slots * 8 - nbytes), slots);
}

Oop gc_alloc_method(uint32_t class_index, size_t pointer_slots, size_t nbytes)
{
    if (pointer_slots == 0 || pointer_slots > METHOD_POINTER_SLOTS_MAX)
        gc_panic("gc_alloc_method: %zu pointer slots (slot 0 is the header, at most %zu fit its field)", pointer_slots,
                 METHOD_POINTER_SLOTS_MAX);
    size_t bslots = byte_slots(nbytes);
    /* always the slow path (methods are few): a sample's frame is then
     * this function's, and its caller the code that asked */
    Oop m = alloc_slow(class_index, FMT_METHOD + (uint32_t)(bslots * 8 - nbytes), pointer_slots + bslots,
                       __builtin_frame_address(0));
    if (!m)
        return 0;
    /* A header naming the pointer slots keeps the literals traced even if
     * a collection came before the caller wrote the real header. */
    obj_slots(m)[0] = oop_from_int((intptr_t)pointer_slots);
    for (size_t i = 1; i < pointer_slots; i++)
        obj_slots(m)[i] = gc_fill_value;
    return m;
}

Oop gc_alloc_old(uint32_t class_index, uint32_t format, size_t slots)
{
    return alloc_old(class_index, format, slots, __builtin_frame_address(0));
}

/* -- Identity hash ------------------------------------------------------ */

uint32_t gc_identity_hash(Oop o)
{
    uint32_t h = obj_hash_bits(o);
    if (h) return h; /* no write: a snapshot's page stays the page cache's */
    while (h == 0) {
        uint32_t x = gc_space.hash_state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        gc_space.hash_state = x;
        h = (x >> 10) & (uint32_t)OBJ_HASH_MASK; /* high bits: xorshift's low bits are weakest */
    }
    uint64_t *hp = obj_header_ptr(o);
    *hp = (*hp & ~(OBJ_HASH_MASK << OBJ_HASH_SHIFT)) | ((uint64_t)h << OBJ_HASH_SHIFT);
    return h;
}

/* -- Sizes and walks ---------------------------------------------------- */

size_t gc_eden_bytes(void) { return gc_space.eden_bytes; }
bool gc_heap_contains(const void *p)
{
    return gc_space.base && (uintptr_t)p >= gc_space.base && (uintptr_t)p < gc_space.old_top;
}

size_t gc_old_used_bytes(void) { return gc_space.base ? gc_space.old_top - gc_old_start : 0; }
size_t gc_old_free_bytes(void) { return gc_space.base ? gc_space.end - gc_space.old_top : 0; }

bool gc_space_walk(uintptr_t start, uintptr_t top, bool (*fn)(Oop obj, void *ctx), void *ctx)
{
    for (uintptr_t a = start; a < top;) {
        Oop o = gc_space_oop_at(a);
        a += obj_total_bytes(o);
        if (!fn(o, ctx))
            return false;
    }
    return true;
}

void gc_heap_walk(bool (*fn)(Oop obj, void *ctx), void *ctx)
{
    GcSpace *s = &gc_space;
    if (!s->base)
        return;
    if (gc_space_walk(s->eden_start, gc_eden_top, fn, ctx) && gc_space_walk(gc_space_surv_start(), s->surv_top, fn, ctx))
        gc_space_walk(gc_old_start, s->old_top, fn, ctx);
}
