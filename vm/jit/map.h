/*
 * vm/jit/map.h — the mcpc -> bcpc map of a compiled method: which bytecode a
 * machine-code pc stands for.
 *
 * Its job: the template emitter records one (mcpc, bcpc, kind) entry for
 * every send site, conditional branch and backward jump it emits (the emit
 * helpers do it themselves, so no template can forget one); the map is then
 * encoded into the bytes that follow the method's code in the zone and
 * queried both ways:
 *   - bcpc_at(mcpc): for a return address found in a frame (divorce, stack
 *     overflow, backtraces) and for a sampled pc (the profiler);
 *   - mcpc_for(bcpc): where a bytecode's code is (resuming at a bcpc);
 *   - iteration in mcpc order: the profiler's bytecode ranges, the decorated
 *     disassembler, the export's code-load events.
 *
 * An mcpc is a byte offset, not an address, so a map survives the method
 * moving: stvm counts it from the start of the JitMethod header (as every
 * other offset in vm/jit/jitmethod.h), and an entry's mcpc is the address *just
 * past* its instruction — for a send, the call's return address.
 *
 * Encoding (stored after the code; the count lives in the JitMethod header):
 *
 *   entry := uleb128(mcpc_delta << 2 | kind)  uleb128(zigzag(bcpc_delta))
 *
 *   deltas are from the previous entry (from (0, 0) for the first);
 *   uleb128: 7 bits per byte, lowest group first, bit 7 set = more follow;
 *   zigzag(d) = (d << 1) ^ (d >> 63), so a small bcpc step back (an
 *   out-of-line slow path, a loop's jump) stays one byte.
 *
 *   +------------------------------------+-----------------------------+
 *   | mcpc delta  ...  | kind (2 bits)    | zigzag bcpc delta           |
 *   +------------------------------------+-----------------------------+
 *     typically 1 byte                      typically 1 byte
 *
 * Why this and not fixed 32-bit (mcpc, bcpc) pairs: a pair costs 8 bytes, a
 * delta entry usually 2 (templates are tens of bytes, bytecodes a few). Cog
 * stores its annotations the same way, as a byte stream after each method
 * (reference 002 §2.1), and at Cog's density — 6352 sends in 1752 methods
 * in 1 MiB of code (reference 002, Table 1), before counting branches and
 * jumps — fixed pairs would take almost 5% of the zone (6352 x 8 bytes) for
 * sends alone, space that compaction then has to win back. The price is that queries decode
 * linearly: maps are short (a few to a few dozen entries) and read on slow
 * paths only (divorce, stack overflow, backtraces, profiling), never on a
 * send.
 *
 * Invariants:
 *   - Entries are added in non-decreasing mcpc order (VM_ASSERT). Two entries
 *     may share an mcpc — a send's return address is also where the next
 *     bytecode's code starts — and then the one recorded first (the send)
 *     answers for that exact address.
 *   - Several entries may share a bcpc (a send and its inlined fast path's
 *     branch); mcpc_for answers the first in mcpc order.
 *   - Compaction reads the instruction ending at every entry but a LOCAL
 *     one as a possible call or jump out of the method (vm/jit/relocate.c), so
 *     an entry at an arbitrary place in the code must be LOCAL.
 *   - Encoded maps are trusted (the JIT wrote them); a malformed one is a
 *     broken invariant and panics.
 *
 * Who may call: vm/jit/ (the emitter, the zone's owner, the disassembler) and
 * the profiler glue that copies maps into the export.
 */
#ifndef JIT_MAP_H
#define JIT_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum JitMapKind {
    JIT_MAP_SEND = 0,     /* mcpc = the call's return address */
    JIT_MAP_LOCAL = 1,    /* nothing ending at mcpc leaves the method: a conditional
                           * branch (mcpc just past the jcc), or where a piece of the
                           * cold section, or what the main code keeps of its bytecode,
                           * begins or ends (vm/jit/DESIGN.md, "The cold section") */
    JIT_MAP_BACKJUMP = 2, /* backward jump: mcpc just past its interrupt check */
    JIT_MAP_OTHER = 3     /* anything else a template wants findable */
} JitMapKind;

#define JIT_MAP_KIND_BITS 2
#define JIT_MAP_KIND_MASK ((1u << JIT_MAP_KIND_BITS) - 1)
/* uleb128 of a 32-bit delta shifted by 2 (34 bits) and of a zigzagged 33-bit
 * signed delta: 5 groups of 7 bits each. */
#define JIT_MAP_LEB_MAX_BYTES 5
#define JIT_MAP_ENTRY_MAX_BYTES (2 * JIT_MAP_LEB_MAX_BYTES)

_Static_assert(JIT_MAP_OTHER <= JIT_MAP_KIND_MASK, "every kind fits its bits");
_Static_assert(JIT_MAP_LEB_MAX_BYTES * 7 >= 32 + JIT_MAP_KIND_BITS, "mcpc delta + kind fits 5 groups");
_Static_assert(JIT_MAP_LEB_MAX_BYTES * 7 >= 33, "zigzagged bcpc delta fits 5 groups");

typedef struct JitMapEntry {
    uint32_t mcpc;
    uint32_t bcpc;
    JitMapKind kind;
} JitMapEntry;

/* -- Building -------------------------------------------------------------- */

/* Entries of the method being compiled. Growing it can fail (malloc); that
 * sticks, like an X64Buf's overflow, and the emitter checks
 * jit_map_builder_ok once, when it finishes the method. */
typedef struct JitMapBuilder {
    JitMapEntry *entries;
    uint32_t count, capacity;
    size_t bytes; /* encoded size of the entries so far */
    bool failed;  /* an allocation failed; entries after it were dropped */
} JitMapBuilder;

void jit_map_builder_init(JitMapBuilder *b);
void jit_map_builder_release(JitMapBuilder *b);
/* Empties the builder for the next method, keeping its storage. */
void jit_map_builder_reset(JitMapBuilder *b);
void jit_map_add(JitMapBuilder *b, uint32_t mcpc, uint32_t bcpc, JitMapKind kind);
/* Takes back the last entry (a bytecode's mark where it emitted no code, the
 * next one's taking its place). */
void jit_map_drop_last(JitMapBuilder *b);
static inline bool jit_map_builder_ok(const JitMapBuilder *b) { return !b->failed; }
static inline uint32_t jit_map_builder_count(const JitMapBuilder *b) { return b->count; }
/* Exact size of the encoding: what the zone allocates after the code. */
static inline size_t jit_map_builder_bytes(const JitMapBuilder *b) { return b->bytes; }
/* Writes the encoding to dst (cap >= jit_map_builder_bytes) and answers its
 * size. */
size_t jit_map_encode(const JitMapBuilder *b, uint8_t *dst, size_t cap);

/* -- Reading ----------------------------------------------------------------- */

/* An encoded map: its bytes and entry count (jit_method_map gives a
 * method's). */
typedef struct JitMapView {
    const uint8_t *bytes;
    uint32_t count;
} JitMapView;

typedef struct JitMapIter {
    const uint8_t *p;
    uint32_t left;
    uint32_t mcpc, bcpc; /* the previous entry's, the base of the next deltas */
} JitMapIter;

void jit_map_iter_init(JitMapIter *it, JitMapView map);
/* The next entry in mcpc order; false after the last. */
bool jit_map_iter_next(JitMapIter *it, JitMapEntry *out);

/* The entry for machine-code offset mcpc: the first entry whose mcpc equals
 * it, else the last entry before it (the bytecode whose code mcpc is in).
 * false when mcpc is before the first entry (the prologue) or the map is
 * empty. */
bool jit_map_bcpc_at(JitMapView map, uint32_t mcpc, JitMapEntry *out);

/* The first entry, in mcpc order, recorded for bcpc; false if none. */
bool jit_map_mcpc_for(JitMapView map, uint32_t bcpc, JitMapEntry *out);

/* Size of one entry's encoding after `prev` (mcpc 0, bcpc 0 for the first). */
size_t jit_map_entry_bytes(const JitMapEntry *prev, const JitMapEntry *e);

#endif
