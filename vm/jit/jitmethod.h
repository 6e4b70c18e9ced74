/*
 * vm/jit/jitmethod.h — the JitMethod header that starts every piece of machine
 * code in the code zone: compiled methods and blocks, closed and open PICs,
 * trampolines, and the free holes they leave.
 *
 * Its job: say how big the piece is and what it is, hold the one Oop the
 * code stands for, the LRU tick the zone's compaction sorts by, and the
 * offsets of everything that follows the header — the entries, the
 * mcpc -> bcpc map (vm/jit/map.h) and the literal-site table the GC visits.
 *
 *   JitMethod (48 bytes; starts 16-aligned, so the code after it does too)
 *   byte 0        4      5        6         8               16              24
 *       +--------+------+--------+---------+---------------+---------------+
 *       | size   | kind | nargs  | flags   | method (Oop)  | tick (u64)    |
 *       +--------+------+--------+---------+---------------+---------------+
 *   byte 24              28                32        36        40       44       48
 *       +----------------+-----------------+---------+---------+--------+--------+
 *       | checked entry  | unchecked entry | map     | map     | lits   | lit    |
 *       | offset         | offset          | offset  | count   | offset | count  |
 *       +----------------+-----------------+---------+---------+--------+--------+
 *
 *   The piece the zone allocates (one allocation, `size` bytes):
 *   +-----------+-------------+-----------+-----+---------------+--------------+-----+
 *   | JitMethod | code        | map bytes | pad | literal sites | unwind table | pad |
 *   |           |             | (LEB128)  | to 4| u32 offsets   | u32 n, pairs | to16|
 *   +-----------+-------------+-----------+-----+---------------+--------------+-----+
 *   0           48            map_offset        lits_offset                        size
 *
 *   The unwind table (at lits_offset + 4 * lit_count): a u32 count n, then n
 *   pairs (u32 offset from the header, u32 PROF_UNWIND_* rule of
 *   proto/stackabi.h) by offset: how a profiler finds the caller of a pc
 *   in this piece (a pc's rule is the last pair at or below it). n = 0:
 *   frameless throughout (PICs, stubs).
 *
 * Fields:
 *   size     total bytes of the piece, a multiple of 16: the zone walks from
 *            one header to the next by it, free holes included.
 *   kind     JitMethodKind; FREE marks a hole compaction reclaims.
 *   nargs    argument count of the method, block or PIC selector.
 *   flags    JIT_METHOD_F_*, all defined below: bit 0 the zone's, bit 1
 *            compaction's.
 *   method   the heap CompiledMethod (for a block, its home method; for a PIC,
 *            the selector; 0 for a trampoline). A GC root: the GC visits and
 *            updates it, and prologues load it rip-relative
 *            (mov rax, [rip - k]), so frames need no patching when it moves.
 *   tick     the zone's use counter at the last jit_zone_touch: LRU order.
 *   offsets  from the header's first byte, so they survive the piece moving.
 *            Entries default to the first code byte. The literal-site table
 *            lists the offsets of the 8-byte immediates of `movabs r64, imm64`
 *            instructions that hold Oops (not of the instructions): the GC
 *            visits all of them in a full GC and those of the zone's young
 *            referrers in a scavenge.
 *
 * No pointer field holds an address inside the zone, so memmove is all it
 * takes to move a piece; what points *into* it (send sites, PIC cases,
 * return addresses, the heap method's back pointer) is the owner's to fix
 * (jit_zone_compact).
 *
 * Who may call: vm/jit/ and the GC glue the JIT registers (through
 * jit_method_visit_oops; gc/ itself never includes this header).
 */
#ifndef JIT_JITMETHOD_H
#define JIT_JITMETHOD_H

#include "gc/object.h"
#include "vm/interp/jitinterface.h"
#include "vm/jit/map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum JitMethodKind {
    JIT_KIND_FREE = 0, /* a hole; zero so a fresh mapping reads as one */
    JIT_KIND_METHOD,
    JIT_KIND_BLOCK,
    JIT_KIND_CLOSED_PIC,
    JIT_KIND_OPEN_PIC,
    JIT_KIND_TRAMPOLINE, /* trampolines and enilopmarts: never freed or moved */
    JIT_KIND_COUNT
} JitMethodKind;

/* On the zone's young-referrers list (jit_zone_young_add); the zone owns it. */
#define JIT_METHOD_F_YOUNG_REFERRER (1u << 0)
/* Has an activation on the stack pages: compaction keeps it (vm/jit/compact.c). */
#define JIT_METHOD_F_ON_STACK (1u << 1)

typedef struct JitMethod {
    uint32_t size;
    uint8_t kind;
    uint8_t nargs;
    uint16_t flags;
    Oop method;
    uint64_t tick;
    uint32_t checked_entry;
    uint32_t unchecked_entry;
    uint32_t map_offset;
    uint32_t map_count;
    uint32_t lits_offset;
    uint32_t lit_count;
} JitMethod;

#define JIT_METHOD_ALIGN 16 /* vm/jit/DESIGN.md; the fetch-block size Intel's optimization manual aligns hot entries to */
#define JIT_METHOD_CODE 48  /* offset of the first code byte */
#define JIT_METHOD_LIT_ALIGN 4

_Static_assert(offsetof(JitMethod, size) == 0, "size at 0");
_Static_assert(offsetof(JitMethod, kind) == 4, "kind at 4");
_Static_assert(offsetof(JitMethod, nargs) == 5, "nargs at 5");
_Static_assert(offsetof(JitMethod, flags) == 6, "flags at 6");
_Static_assert(offsetof(JitMethod, method) == 8, "method Oop at 8 (loaded rip-relative by prologues)");
_Static_assert(offsetof(JitMethod, tick) == 16, "tick at 16");
_Static_assert(offsetof(JitMethod, checked_entry) == 24, "checked entry at 24");
_Static_assert(offsetof(JitMethod, unchecked_entry) == 28, "unchecked entry at 28");
_Static_assert(offsetof(JitMethod, unchecked_entry) == VM_JIT_METHOD_UNCHECKED_ENTRY, "the interpreter reads it there");
_Static_assert(offsetof(JitMethod, map_offset) == 32, "map offset at 32");
_Static_assert(offsetof(JitMethod, map_count) == 36, "map count at 36");
_Static_assert(offsetof(JitMethod, lits_offset) == 40, "lits offset at 40");
_Static_assert(offsetof(JitMethod, lit_count) == 44, "lit count at 44");
_Static_assert(sizeof(JitMethod) == JIT_METHOD_CODE, "the code follows the header");
_Static_assert(JIT_METHOD_CODE % JIT_METHOD_ALIGN == 0, "code starts aligned");
_Static_assert(JIT_KIND_COUNT <= 256, "kind fits its byte");

static inline size_t jit_method_round(size_t n) { return (n + JIT_METHOD_ALIGN - 1) & ~(size_t)(JIT_METHOD_ALIGN - 1); }

/* -- Addresses and offsets ----------------------------------------------------- */

static inline uint8_t *jit_method_at(const JitMethod *m, uint32_t offset) { return (uint8_t *)m + offset; }
static inline uint32_t jit_method_offset(const JitMethod *m, const void *p)
{
    return (uint32_t)((const uint8_t *)p - (const uint8_t *)m);
}
static inline uint8_t *jit_method_code(const JitMethod *m) { return jit_method_at(m, JIT_METHOD_CODE); }
static inline uint8_t *jit_method_end(const JitMethod *m) { return jit_method_at(m, m->size); }
/* The code without the map and literal table that follow it. */
static inline uint32_t jit_method_code_bytes(const JitMethod *m) { return m->map_offset - JIT_METHOD_CODE; }
static inline bool jit_method_contains(const JitMethod *m, const void *p)
{
    return (const uint8_t *)p >= (const uint8_t *)m && (const uint8_t *)p < jit_method_end(m);
}
static inline uint8_t *jit_method_checked_entry(const JitMethod *m) { return jit_method_at(m, m->checked_entry); }
static inline uint8_t *jit_method_unchecked_entry(const JitMethod *m) { return jit_method_at(m, m->unchecked_entry); }
static inline void jit_method_set_entries(JitMethod *m, const void *checked, const void *unchecked)
{
    m->checked_entry = jit_method_offset(m, checked);
    m->unchecked_entry = jit_method_offset(m, unchecked);
}

/* A compiled method or block: has a frame, a map and send sites. */
static inline bool jit_method_is_compiled(const JitMethod *m)
{
    return m->kind == JIT_KIND_METHOD || m->kind == JIT_KIND_BLOCK;
}

static inline bool jit_method_is_pic(const JitMethod *m)
{
    return m->kind == JIT_KIND_CLOSED_PIC || m->kind == JIT_KIND_OPEN_PIC;
}

static inline const char *jit_method_kind_name(JitMethodKind kind)
{
    static const char *const names[JIT_KIND_COUNT] = { "free", "method", "block", "closed PIC", "open PIC",
                                                       "trampoline" };
    return (unsigned)kind < JIT_KIND_COUNT ? names[kind] : "?";
}

/* -- Layout of one piece --------------------------------------------------------- */

/* Where map and literal table go after code_bytes of code, and the total
 * size to allocate; computed before the piece exists so the zone can
 * allocate everything in one. */
typedef struct JitMethodLayout {
    uint32_t map_offset, map_count;
    uint32_t lits_offset, lit_count;
    uint32_t size; /* what to ask jit_zone_alloc / jit_zone_shrink for */
    uint32_t unwind_count;
} JitMethodLayout;

/* false (and an all-zero layout) when the piece would not fit the 32-bit
 * offsets. */
static inline bool jit_method_layout_unwind(JitMethodLayout *l, size_t code_bytes, size_t map_bytes,
                                            uint32_t map_count, uint32_t lit_count, uint32_t unwind_count)
{
    uint64_t map_offset = (uint64_t)JIT_METHOD_CODE + code_bytes;
    uint64_t lits = (map_offset + map_bytes + JIT_METHOD_LIT_ALIGN - 1) & ~(uint64_t)(JIT_METHOD_LIT_ALIGN - 1);
    uint64_t size = jit_method_round(lits + (uint64_t)lit_count * sizeof(uint32_t) + sizeof(uint32_t) +
                                     (uint64_t)unwind_count * 2 * sizeof(uint32_t));
    bool fits = code_bytes <= UINT32_MAX && map_bytes <= UINT32_MAX && size <= UINT32_MAX;
    *l = fits ? (JitMethodLayout){ (uint32_t)map_offset, map_count, (uint32_t)lits, lit_count, (uint32_t)size,
                                   unwind_count }
              : (JitMethodLayout){ 0 };
    return fits;
}
static inline bool jit_method_layout(JitMethodLayout *l, size_t code_bytes, size_t map_bytes, uint32_t map_count,
                                     uint32_t lit_count)
{
    return jit_method_layout_unwind(l, code_bytes, map_bytes, map_count, lit_count, 0);
}

/* Writes the layout into the header of a piece at least l->size bytes big;
 * entries start at the first code byte until jit_method_set_entries. */
static inline void jit_method_apply_layout(JitMethod *m, const JitMethodLayout *l)
{
    m->checked_entry = m->unchecked_entry = JIT_METHOD_CODE;
    m->map_offset = l->map_offset;
    m->map_count = l->map_count;
    m->lits_offset = l->lits_offset;
    m->lit_count = l->lit_count;
    uint32_t n = l->unwind_count;
    memcpy(jit_method_at(m, l->lits_offset + 4 * l->lit_count), &n, sizeof n);
}

/* -- The unwind table ----------------------------------------------------------- */

static inline uint32_t jit_method_unwind_count(const JitMethod *m)
{
    uint32_t n;
    memcpy(&n, jit_method_at(m, m->lits_offset + 4 * m->lit_count), sizeof n);
    return n;
}
/* The pairs (offset, rule): 4-aligned, after the count. */
static inline uint32_t *jit_method_unwind(const JitMethod *m)
{
    return (uint32_t *)jit_method_at(m, m->lits_offset + 4 * m->lit_count + 4);
}

/* -- The map ------------------------------------------------------------------ */

static inline uint8_t *jit_method_map_bytes(const JitMethod *m) { return jit_method_at(m, m->map_offset); }
static inline JitMapView jit_method_map(const JitMethod *m)
{
    return (JitMapView){ jit_method_map_bytes(m), m->map_count };
}

/* -- Literal sites -------------------------------------------------------------- */

/* The table of offsets: 4-aligned by the layout. */
static inline uint32_t *jit_method_lits(const JitMethod *m) { return (uint32_t *)jit_method_at(m, m->lits_offset); }
/* Records literal site i: imm points at a movabs's 8-byte immediate
 * (instruction start + JIT_X64_MOVABS_IMM_OFFSET). */
static inline void jit_method_set_lit_site(JitMethod *m, uint32_t i, const void *imm)
{
    jit_method_lits(m)[i] = jit_method_offset(m, imm);
}
static inline uint8_t *jit_method_lit_site(const JitMethod *m, uint32_t i)
{
    return jit_method_at(m, jit_method_lits(m)[i]);
}
/* Immediates sit wherever the instruction put them, not 8-aligned: read and
 * write them whole with memcpy, never through an Oop pointer. */
static inline Oop jit_method_lit_get(const JitMethod *m, uint32_t i)
{
    Oop v;
    memcpy(&v, jit_method_lit_site(m, i), sizeof v);
    return v;
}
static inline void jit_method_lit_set(JitMethod *m, uint32_t i, Oop v)
{
    memcpy(jit_method_lit_site(m, i), &v, sizeof v);
}

/* The shape of gc/heap.h's GcVisitFn, restated so vm/jit/ need not include it. */
typedef void (*JitOopVisitFn)(Oop *slot, void *ctx);

/* Visits the method Oop in place and each literal through an aligned copy,
 * written back only when the visitor changed it (the code is not dirtied
 * for nothing). */
static inline void jit_method_visit_oops(JitMethod *m, JitOopVisitFn visit, void *ctx)
{
    visit(&m->method, ctx);
    for (uint32_t i = 0; i < m->lit_count; i++) {
        Oop old = jit_method_lit_get(m, i), v = old;
        visit(&v, ctx);
        if (v != old) jit_method_lit_set(m, i, v);
    }
}

#endif
