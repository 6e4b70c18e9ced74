/*
 * vm/jit/zone.c — the machine-code zone: mapping, bump allocation, LRU
 * compaction, lookup, young referrers (the layout is drawn in vm/jit/zone.h).
 */
#define _GNU_SOURCE /* qsort_r, MAP_FIXED_NOREPLACE */

#include "vm/jit/zone.h"

#include "vm/model/vm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17; older kernels take it as a hint, which map_near checks */
#endif

/* Candidate addresses for a zone near the VM's text are tried this far
 * apart: the 2 MiB of a huge page, so a few hundred tries cover the 1 GiB
 * reach on each side without thousands of failing mmap calls. */
#define NEAR_STEP ((uintptr_t)2 << 20)

/* scratch[i] for a header compaction reclaims. */
#define PLAN_FREED UINT32_MAX

#define SLOT JIT_ZONE_YOUNG_SLOT_BYTES

static uint64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint32_t zone_offset(const JitZone *z, const void *p) { return (uint32_t)((const uint8_t *)p - z->base); }
static JitMethod *header_at(const JitZone *z, uint32_t offset) { return (JitMethod *)(void *)(z->base + offset); }
static JitMethod *header(const JitZone *z, uint32_t i) { return header_at(z, z->index[i]); }
static bool in_methods(const JitZone *z, const void *p)
{
    return (const uint8_t *)p >= z->methods && (const uint8_t *)p < z->free;
}
static size_t method_area_bytes(const JitZone *z) { return (size_t)(z->end - z->methods); }
static JitMethod **young_slot(const JitZone *z, uint32_t i) { return (JitMethod **)(void *)z->end - 1 - i; }

/* The index position of the header at or before p (p in the method area). */
static uint32_t index_of(const JitZone *z, const void *p)
{
    uint32_t off = zone_offset(z, p), lo = 0, hi = z->count; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->index[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* -- Mapping --------------------------------------------------------------------- */

/* The whole zone [lo, lo + bytes) lies within JIT_ZONE_NEAR_REACH of near. */
static bool within_reach(uintptr_t lo, size_t bytes, uintptr_t near)
{
    uintptr_t hi = lo + bytes;
    uintptr_t d_lo = lo > near ? lo - near : near - lo;
    uintptr_t d_hi = hi > near ? hi - near : near - hi;
    return (d_lo > d_hi ? d_lo : d_hi) <= JIT_ZONE_NEAR_REACH;
}

static void *map_at(uintptr_t hint, size_t bytes, int extra)
{
    void *p = mmap((void *)hint, bytes, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | extra,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Tries addresses stepping outward from near, below and above alternately,
 * until a mapping lands within reach. */
static void *map_near(size_t bytes, uintptr_t near)
{
    uintptr_t start = near & ~(NEAR_STEP - 1);
    for (uintptr_t k = 1; k * NEAR_STEP <= JIT_ZONE_NEAR_REACH; k++) {
        uintptr_t d = k * NEAR_STEP;
        uintptr_t hints[2] = { start >= d + bytes ? start - d - bytes : 0, start + d };
        for (int h = 0; h < 2; h++) {
            if (!hints[h]) continue;
            void *p = map_at(hints[h], bytes, MAP_FIXED_NOREPLACE);
            if (!p) continue;
            if (within_reach((uintptr_t)p, bytes, near)) return p;
            munmap(p, bytes); /* a kernel that took the flag as a hint put it elsewhere */
        }
    }
    return NULL;
}

bool jit_zone_init(JitZone *z, const JitZoneConfig *cfg, char *err, size_t errlen)
{
    memset(z, 0, sizeof *z);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = cfg->zone_bytes ? cfg->zone_bytes : JIT_ZONE_DEFAULT_BYTES;
    if (bytes < JIT_ZONE_MIN_BYTES || bytes > JIT_ZONE_MAX_BYTES) {
        snprintf(err, errlen,
                 "code zone of %zu bytes is out of range: it must be %zu KiB to %zu MiB (--code-size)", bytes,
                 JIT_ZONE_MIN_BYTES >> 10, JIT_ZONE_MAX_BYTES >> 20);
        return false;
    }
    bytes = (bytes + page - 1) / page * page;
    size_t tramp = jit_method_round(cfg->trampoline_bytes);
    if (cfg->trampoline_bytes > bytes || bytes - tramp < JIT_ZONE_MIN_METHOD_BYTES) {
        snprintf(err, errlen,
                 "code zone of %zu bytes with %zu bytes of trampolines leaves less than the %zu bytes methods "
                 "need: raise --code-size",
                 bytes, cfg->trampoline_bytes, JIT_ZONE_MIN_METHOD_BYTES);
        return false;
    }

    uint8_t *base = cfg->near ? map_near(bytes, (uintptr_t)cfg->near) : map_at(0, bytes, 0);
    if (!base) {
        if (cfg->near)
            snprintf(err, errlen,
                     "cannot map a %zu-byte code zone within %zu MiB of %p (the VM's code): no free address "
                     "range there; try a smaller --code-size",
                     bytes, JIT_ZONE_NEAR_REACH >> 20, cfg->near);
        else
            snprintf(err, errlen, "cannot map a %zu-byte executable code zone: %s (is W^X enforced? try --no-jit)",
                     bytes, strerror(errno));
        return false;
    }

    /* A header is at least sizeof(JitMethod): no more headers fit the area. */
    size_t capacity = (bytes - tramp) / sizeof(JitMethod);
    z->index = malloc(capacity * sizeof *z->index);
    z->scratch = malloc(capacity * sizeof *z->scratch);
    if (!z->index || !z->scratch) {
        free(z->index);
        free(z->scratch);
        munmap(base, bytes);
        memset(z, 0, sizeof *z);
        snprintf(err, errlen, "out of memory for the code zone's index (%zu entries)", capacity);
        return false;
    }
    z->capacity = (uint32_t)capacity;
    z->base = base;
    z->end = base + bytes;
    z->tramp_free = base;
    z->methods = base + tramp;
    z->free = z->methods;
    return true;
}

void jit_zone_release(JitZone *z)
{
    if (z->base) munmap(z->base, (size_t)(z->end - z->base));
    free(z->index);
    free(z->scratch);
    memset(z, 0, sizeof *z);
}

/* -- Allocation ------------------------------------------------------------------ */

JitMethod *jit_zone_alloc(JitZone *z, JitMethodKind kind, size_t bytes)
{
    VM_ASSERT(!z->compacting, "no allocation inside a compaction");
    VM_ASSERT(kind > JIT_KIND_FREE && kind < JIT_KIND_COUNT, "allocating a piece of no kind");
    if (bytes > JIT_ZONE_MAX_BYTES) return NULL;
    size_t need = jit_method_round(bytes < sizeof(JitMethod) ? sizeof(JitMethod) : bytes);
    uint8_t *at;
    if (kind == JIT_KIND_TRAMPOLINE) {
        if (need > (size_t)(z->methods - z->tramp_free)) return NULL;
        at = z->tramp_free;
        z->tramp_free += need;
    } else {
        /* the piece, plus one young-referrers slot for every header including its own */
        size_t reserve = ((size_t)z->count + 1) * SLOT;
        if (need + reserve > (size_t)(z->end - z->free)) return NULL;
        VM_ASSERT(z->count < z->capacity, "code zone index full");
        at = z->free;
        z->free += need;
        z->index[z->count++] = zone_offset(z, at);
        z->live_count++;
        z->live_bytes += need;
    }
    JitMethod *m = (JitMethod *)(void *)at;
    memset(m, 0, sizeof *m);
    m->size = (uint32_t)need;
    m->kind = (uint8_t)kind;
    m->tick = ++z->tick;
    z->stats.methods_allocated++;
    return m;
}

void jit_zone_shrink(JitZone *z, JitMethod *m, size_t bytes)
{
    VM_ASSERT(!z->compacting, "no shrinking inside a compaction");
    size_t need = jit_method_round(bytes < sizeof(JitMethod) ? sizeof(JitMethod) : bytes);
    VM_ASSERT(need <= m->size, "shrink cannot grow a piece");
    uint8_t *new_end = (uint8_t *)m + need;
    if (m->kind == JIT_KIND_TRAMPOLINE) {
        VM_ASSERT(jit_method_end(m) == z->tramp_free, "only the newest trampoline shrinks");
        z->tramp_free = new_end;
    } else {
        VM_ASSERT(m->kind != JIT_KIND_FREE && jit_method_end(m) == z->free, "only the newest method shrinks");
        z->free = new_end;
        z->live_bytes -= m->size - need;
    }
    /* The tail traps if jumped into, but only as far as the page the code
     * ends in: the pieces are allocated at their worst-case size, and
     * filling pages nothing wrote would fault each in (a page fault costs
     * ~25 us on the CI machine class: scripts/bench-startup). Past that
     * page the tail is free space like the never-used rest of the zone. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t touched_end = ((uintptr_t)new_end + page - 1) & ~(page - 1);
    size_t tail = m->size - need;
    if ((uintptr_t)new_end + tail > touched_end) tail = touched_end - (uintptr_t)new_end;
    memset(new_end, JIT_ZONE_FILL_BYTE, tail);
    m->size = (uint32_t)need;
}

static void young_remove(JitZone *z, JitMethod *m)
{
    uint32_t i = 0;
    while (i < z->young_count && *young_slot(z, i) != m) i++;
    VM_ASSERT(i < z->young_count, "a young referrer missing from the list");
    for (; i + 1 < z->young_count; i++) *young_slot(z, i) = *young_slot(z, i + 1);
    z->young_count--;
    m->flags &= (uint16_t)~JIT_METHOD_F_YOUNG_REFERRER;
}

void jit_zone_free(JitZone *z, JitMethod *m)
{
    VM_ASSERT(!z->planned, "no freeing once a compaction has planned");
    VM_ASSERT(in_methods(z, m) && header(z, index_of(z, m)) == m, "freeing a pointer that is no method-area piece");
    VM_ASSERT(m->kind != JIT_KIND_FREE, "freeing a piece twice");
    if (m->flags & JIT_METHOD_F_YOUNG_REFERRER) young_remove(z, m);
    m->kind = JIT_KIND_FREE;
    m->flags = 0;
    m->method = 0; /* not a root any more */
    memset(jit_method_code(m), JIT_ZONE_FILL_BYTE, m->size - sizeof(JitMethod));
    z->live_count--;
    z->live_bytes -= m->size;
    z->stats.methods_freed++;
}

/* -- Compaction -------------------------------------------------------------------- */

/* What the method area would have free if it were compacted now: the
 * survivors and their young-referrers slots are all that would remain. */
static size_t free_after_slide(const JitZone *z)
{
    return method_area_bytes(z) - z->live_bytes - (size_t)z->live_count * SLOT;
}

static int by_tick(const void *a, const void *b, void *zone)
{
    const JitZone *z = zone;
    uint64_t ta = header(z, *(const uint32_t *)a)->tick, tb = header(z, *(const uint32_t *)b)->tick;
    return (ta > tb) - (ta < tb);
}

static void evict_lru(JitZone *z, const JitZoneRelocate *cb)
{
    size_t want = method_area_bytes(z) / JIT_ZONE_COMPACT_FREE_DIVISOR;
    if (free_after_slide(z) >= want) return; /* the holes are enough */
    uint32_t n = 0;
    for (uint32_t i = 0; i < z->count; i++)
        if (header(z, i)->kind != JIT_KIND_FREE) z->scratch[n++] = i;
    qsort_r(z->scratch, n, sizeof *z->scratch, by_tick, z);
    for (uint32_t k = 0; k < n && free_after_slide(z) < want; k++) {
        JitMethod *m = header(z, z->scratch[k]);
        if (m->kind == JIT_KIND_FREE) continue; /* an earlier on_free freed it */
        if (cb->can_free && !cb->can_free(m, cb->ctx)) continue;
        cb->on_free(m, cb->ctx);
        if (m->kind != JIT_KIND_FREE) jit_zone_free(z, m);
        z->stats.methods_evicted++;
    }
}

/* scratch[i] := the new offset of header i, or PLAN_FREED; answers the
 * offset where the method area's free space will start. */
static uint32_t plan(JitZone *z)
{
    uint32_t to = zone_offset(z, z->methods);
    for (uint32_t i = 0; i < z->count; i++) {
        JitMethod *m = header(z, i);
        if (m->kind == JIT_KIND_FREE) {
            z->scratch[i] = PLAN_FREED;
        } else {
            z->scratch[i] = to;
            to += m->size;
        }
    }
    z->planned = true;
    return to;
}

void *jit_zone_forward(const JitZone *z, const void *p)
{
    VM_ASSERT(z->planned, "jit_zone_forward outside a compaction's relocation");
    if (!in_methods(z, p)) return (void *)p;
    uint32_t i = index_of(z, p);
    if (z->scratch[i] == PLAN_FREED) return NULL;
    return z->base + z->scratch[i] + (zone_offset(z, p) - z->index[i]);
}

/* Moves the bytes to the plan and rebuilds the index from it. Survivors only
 * move down, so a survivor's old bytes are intact when its turn comes. */
static void slide(JitZone *z, uint32_t new_free)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < z->count; i++) {
        if (z->scratch[i] == PLAN_FREED) continue;
        if (z->scratch[i] != z->index[i])
            memmove(z->base + z->scratch[i], z->base + z->index[i], header(z, i)->size);
        z->index[n++] = z->scratch[i];
    }
    uint8_t *old_free = z->free;
    z->count = n;
    z->free = z->base + new_free;
    memset(z->free, JIT_ZONE_FILL_BYTE, (size_t)(old_free - z->free));
}

size_t jit_zone_compact(JitZone *z, const JitZoneRelocate *cb)
{
    VM_ASSERT(!z->compacting, "compaction re-entered from its own callbacks");
    VM_ASSERT(cb->on_free && cb->on_move, "compaction needs on_free and on_move");
    uint64_t t0 = now_usec();
    z->compacting = true;

    evict_lru(z, cb);
    uint32_t new_free = plan(z);
    uint64_t moved = 0;
    for (uint32_t i = 0; i < z->count; i++) {
        if (z->scratch[i] == PLAN_FREED || z->scratch[i] == z->index[i]) continue;
        cb->on_move(header(z, i), header_at(z, z->scratch[i]), cb->ctx);
        moved++;
    }
    if (cb->before_slide) cb->before_slide(cb->ctx); /* also when only frees happened: sites must unlink */
    for (uint32_t i = 0; i < z->young_count; i++) {
        JitMethod *to = jit_zone_forward(z, *young_slot(z, i));
        VM_ASSERT(to, "a freed method left on the young referrers");
        *young_slot(z, i) = to;
    }
    slide(z, new_free);

    z->planned = false;
    z->compacting = false;
    uint64_t dt = now_usec() - t0;
    z->stats.compactions++;
    z->stats.compaction_usecs_total += dt;
    if (dt > z->stats.compaction_usecs_max) z->stats.compaction_usecs_max = dt;
    z->stats.methods_moved += moved;
    return (size_t)(z->end - z->free) - (size_t)z->count * SLOT;
}

/* -- Finding and walking --------------------------------------------------------------- */

JitMethod *jit_zone_find(const JitZone *z, const void *p)
{
    const uint8_t *b = p;
    if (b >= z->base && b < z->tramp_free) {
        JitMethod *m = (JitMethod *)(void *)z->base;
        while (!jit_method_contains(m, p)) m = (JitMethod *)(void *)jit_method_end(m);
        return m;
    }
    if (!in_methods(z, p)) return NULL;
    JitMethod *m = header(z, index_of(z, p));
    return m->kind != JIT_KIND_FREE && jit_method_contains(m, p) ? m : NULL;
}

/* The first live piece at or after p, p being a header or an area's end. */
static JitMethod *live_from(const JitZone *z, const uint8_t *p)
{
    for (;;) {
        if (p >= z->tramp_free && p < z->methods) p = z->methods;
        if (p >= z->free) return NULL;
        JitMethod *m = (JitMethod *)(void *)p;
        if (m->kind != JIT_KIND_FREE) return m;
        p = jit_method_end(m);
    }
}

JitMethod *jit_zone_first(const JitZone *z) { return live_from(z, z->base); }
JitMethod *jit_zone_next(const JitZone *z, const JitMethod *m) { return live_from(z, jit_method_end(m)); }

/* -- Young referrers ------------------------------------------------------------------ */

void jit_zone_young_add(JitZone *z, JitMethod *m)
{
    VM_ASSERT(!z->compacting, "no young referrers added inside a compaction");
    VM_ASSERT(in_methods(z, m) && m->kind != JIT_KIND_FREE, "a young referrer must be a live method-area piece");
    if (m->flags & JIT_METHOD_F_YOUNG_REFERRER) return;
    /* each header reserved its slot when allocated (zone.h) */
    VM_ASSERT(z->young_count < z->count && (uint8_t *)young_slot(z, z->young_count) >= z->free,
              "young referrers would overlap the method area");
    *young_slot(z, z->young_count++) = m;
    m->flags |= JIT_METHOD_F_YOUNG_REFERRER;
}

void jit_zone_young_prune(JitZone *z, bool (*still_young)(JitMethod *m, void *ctx), void *ctx)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < z->young_count; i++) {
        JitMethod *m = *young_slot(z, i);
        if (still_young(m, ctx))
            *young_slot(z, kept++) = m;
        else
            m->flags &= (uint16_t)~JIT_METHOD_F_YOUNG_REFERRER;
    }
    z->young_count = kept;
}

void jit_zone_young_clear(JitZone *z)
{
    for (uint32_t i = 0; i < z->young_count; i++)
        (*young_slot(z, i))->flags &= (uint16_t)~JIT_METHOD_F_YOUNG_REFERRER;
    z->young_count = 0;
}

/* -- Statistics ------------------------------------------------------------------------- */

void jit_zone_stats(const JitZone *z, JitZoneStats *out)
{
    *out = z->stats;
    size_t reserve = (size_t)z->count * SLOT;
    out->bytes_trampolines = (size_t)(z->tramp_free - z->base);
    out->bytes_in_use = z->live_bytes;
    out->bytes_in_holes = (size_t)(z->free - z->methods) - z->live_bytes;
    out->bytes_young_reserve = reserve;
    out->bytes_free = (size_t)(z->end - z->free) - reserve;
    out->methods_live = z->live_count;
    out->young_referrers = z->young_count;
}
