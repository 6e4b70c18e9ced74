/*
 * vm/jit/map.c — building, encoding and querying mcpc -> bcpc maps (the
 * encoding is drawn in vm/jit/map.h).
 */
#include "vm/jit/map.h"

#include "vm/model/vm.h"

#include <stdlib.h>
#include <string.h>

/* The builder starts with room for this many entries: most methods have
 * fewer (Cog averages 3.63 sends per method, reference 002 Table 1), so one
 * allocation usually serves a whole compilation, and reset keeps it. */
#define MAP_BUILDER_FIRST_CAPACITY 32

/* -- LEB128 ------------------------------------------------------------------ */

static size_t uleb_bytes(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *uleb_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static const uint8_t *uleb_get(const uint8_t *p, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        VM_ASSERT(shift < 7 * JIT_MAP_LEB_MAX_BYTES, "malformed map: LEB128 group too long");
        uint8_t byte = *p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) break;
    }
    *out = v;
    return p;
}

static uint64_t zigzag(int64_t d) { return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63); }
static int64_t unzigzag(uint64_t z) { return (int64_t)(z >> 1) ^ -(int64_t)(z & 1); }

/* The two LEB128 values of entry e after entry prev. */
static uint64_t head_value(const JitMapEntry *prev, const JitMapEntry *e)
{
    return (uint64_t)(e->mcpc - prev->mcpc) << JIT_MAP_KIND_BITS | (uint64_t)e->kind;
}

static uint64_t bcpc_value(const JitMapEntry *prev, const JitMapEntry *e)
{
    return zigzag((int64_t)e->bcpc - (int64_t)prev->bcpc);
}

size_t jit_map_entry_bytes(const JitMapEntry *prev, const JitMapEntry *e)
{
    return uleb_bytes(head_value(prev, e)) + uleb_bytes(bcpc_value(prev, e));
}

/* -- Building ---------------------------------------------------------------- */

static const JitMapEntry ORIGIN = { 0, 0, JIT_MAP_SEND };

void jit_map_builder_init(JitMapBuilder *b) { memset(b, 0, sizeof *b); }

void jit_map_builder_release(JitMapBuilder *b)
{
    free(b->entries);
    memset(b, 0, sizeof *b);
}

void jit_map_builder_reset(JitMapBuilder *b)
{
    b->count = 0;
    b->bytes = 0;
    b->failed = false;
}

void jit_map_add(JitMapBuilder *b, uint32_t mcpc, uint32_t bcpc, JitMapKind kind)
{
    VM_ASSERT((unsigned)kind <= JIT_MAP_KIND_MASK, "map kind out of range");
    const JitMapEntry *prev = b->count ? &b->entries[b->count - 1] : &ORIGIN;
    VM_ASSERT(mcpc >= prev->mcpc, "map entries must be added in mcpc order");
    if (b->failed) return;
    if (b->count == b->capacity) {
        uint32_t cap = b->capacity ? b->capacity * 2 : MAP_BUILDER_FIRST_CAPACITY;
        JitMapEntry *grown = cap > b->capacity ? realloc(b->entries, cap * sizeof *grown) : NULL;
        if (!grown) {
            b->failed = true;
            return;
        }
        b->entries = grown;
        b->capacity = cap;
        prev = b->count ? &b->entries[b->count - 1] : &ORIGIN;
    }
    JitMapEntry e = { mcpc, bcpc, kind };
    b->bytes += jit_map_entry_bytes(prev, &e);
    b->entries[b->count++] = e;
}

void jit_map_drop_last(JitMapBuilder *b)
{
    if (b->failed || !b->count) return;
    const JitMapEntry *prev = b->count > 1 ? &b->entries[b->count - 2] : &ORIGIN;
    b->bytes -= jit_map_entry_bytes(prev, &b->entries[b->count - 1]);
    b->count--;
}

size_t jit_map_encode(const JitMapBuilder *b, uint8_t *dst, size_t cap)
{
    VM_ASSERT(!b->failed, "encoding a map whose builder failed");
    VM_ASSERT(cap >= b->bytes, "map buffer too small");
    uint8_t *p = dst;
    const JitMapEntry *prev = &ORIGIN;
    for (uint32_t i = 0; i < b->count; i++) {
        const JitMapEntry *e = &b->entries[i];
        p = uleb_put(p, head_value(prev, e));
        p = uleb_put(p, bcpc_value(prev, e));
        prev = e;
    }
    VM_ASSERT((size_t)(p - dst) == b->bytes, "map size bookkeeping is off");
    return b->bytes;
}

/* -- Reading ------------------------------------------------------------------- */

void jit_map_iter_init(JitMapIter *it, JitMapView map)
{
    it->p = map.bytes;
    it->left = map.count;
    it->mcpc = 0;
    it->bcpc = 0;
}

bool jit_map_iter_next(JitMapIter *it, JitMapEntry *out)
{
    if (!it->left) return false;
    uint64_t head, bdelta;
    it->p = uleb_get(it->p, &head);
    it->p = uleb_get(it->p, &bdelta);
    uint64_t mcpc = it->mcpc + (head >> JIT_MAP_KIND_BITS);
    int64_t bcpc = (int64_t)it->bcpc + unzigzag(bdelta);
    VM_ASSERT(mcpc <= UINT32_MAX && bcpc >= 0 && bcpc <= UINT32_MAX, "malformed map: pc out of range");
    it->mcpc = (uint32_t)mcpc;
    it->bcpc = (uint32_t)bcpc;
    it->left--;
    out->mcpc = it->mcpc;
    out->bcpc = it->bcpc;
    out->kind = (JitMapKind)(head & JIT_MAP_KIND_MASK);
    return true;
}

bool jit_map_bcpc_at(JitMapView map, uint32_t mcpc, JitMapEntry *out)
{
    JitMapIter it;
    JitMapEntry e;
    bool found = false;
    jit_map_iter_init(&it, map);
    while (jit_map_iter_next(&it, &e) && e.mcpc <= mcpc) {
        if (e.mcpc == mcpc) {
            *out = e; /* the first recorded at this address: a send's return */
            return true;
        }
        *out = e;
        found = true;
    }
    return found;
}

bool jit_map_mcpc_for(JitMapView map, uint32_t bcpc, JitMapEntry *out)
{
    JitMapIter it;
    JitMapEntry e;
    jit_map_iter_init(&it, map);
    while (jit_map_iter_next(&it, &e)) {
        if (e.bcpc == bcpc) {
            *out = e;
            return true;
        }
    }
    return false;
}
