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
 *   The inline tables (only with JIT_METHOD_F_INLINED), after the unwind
 *   table, 8-aligned: u32 scope count, u32 range count, the JitInlineScopes,
 *   the JitInlineRanges (sorted by start, disjoint).
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
/* Has inlined methods: the inline tables follow the unwind table (below). */
#define JIT_METHOD_F_INLINED (1u << 2)
/* Replaced by tier-up (vm/jit/runtime.c): its heap method points at the new
 * code, no site or PIC case links to it, frames on the stack may still run
 * it; the zone frees it as any other piece. */
#define JIT_METHOD_F_SUPERSEDED (1u << 3)
/* Recompiled because its predecessor turned an inlined body off
 * (vm/jit/runtime.c, count_deopt): a body it turns off does not recompile
 * it again, since each recompile may inline again what the one before
 * declined (only the code it replaces says what was turned off). */
#define JIT_METHOD_F_DEOPT_RECOMPILED (1u << 4)

/* A method inlined into a compiled one (vm/jit/inline.c; vm/jit/DESIGN.md,
 * "Inlining and deoptimization"). The compiled method itself is scope -1. */
typedef struct JitInlineScope {
    Oop method;         /* the inlined method; a GC root like JitMethod.method (methods move in a full GC) */
    uint32_t call_bcpc; /* bcpc of the send in the parent scope */
    int32_t parent;     /* index of the enclosing scope; -1: the compiled method itself */
    uint32_t class_index; /* the receiver class the guard tests: tier-up's feedback (vm/jit/runtime.c) */
    uint32_t unused;
} JitInlineScope;
/* Code that belongs to an inlined scope: map entries whose mcpc lies in
 * [start, end) carry bcpcs of that scope's method. Every range begins with a
 * map entry of its scope's bcpc, and the code right after it with one of the
 * enclosing scope's, so "the last map entry <= pc" is always right. */
typedef struct JitInlineRange {
    uint32_t start, end; /* mcpc offsets, counted like map entries' */
    uint32_t scope;      /* index into the scopes: the innermost scope this code belongs to */
} JitInlineRange;
_Static_assert(sizeof(JitInlineScope) == 24 && sizeof(JitInlineRange) == 12, "the tables' layout");

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
    uint32_t scope_count, range_count; /* the inline tables (0: none) */
} JitMethodLayout;

/* Where the inline tables start, after an unwind table of unwind_count pairs. */
static inline uint64_t jit_method_inline_at(uint64_t lits_offset, uint32_t lit_count, uint32_t unwind_count)
{
    uint64_t end = lits_offset + 4 * (uint64_t)lit_count + 4 + 8 * (uint64_t)unwind_count;
    return (end + 7) & ~(uint64_t)7;
}

/* false (and an all-zero layout) when the piece would not fit the 32-bit
 * offsets. */
static inline bool jit_method_layout_inline(JitMethodLayout *l, size_t code_bytes, size_t map_bytes,
                                            uint32_t map_count, uint32_t lit_count, uint32_t unwind_count,
                                            uint32_t scope_count, uint32_t range_count)
{
    uint64_t map_offset = (uint64_t)JIT_METHOD_CODE + code_bytes;
    uint64_t lits = (map_offset + map_bytes + JIT_METHOD_LIT_ALIGN - 1) & ~(uint64_t)(JIT_METHOD_LIT_ALIGN - 1);
    uint64_t end = lits + (uint64_t)lit_count * sizeof(uint32_t) + sizeof(uint32_t) +
                   (uint64_t)unwind_count * 2 * sizeof(uint32_t);
    if (scope_count)
        end = jit_method_inline_at(lits, lit_count, unwind_count) + 8 + (uint64_t)scope_count * sizeof(JitInlineScope) +
              (uint64_t)range_count * sizeof(JitInlineRange);
    uint64_t size = jit_method_round(end);
    bool fits = code_bytes <= UINT32_MAX && map_bytes <= UINT32_MAX && size <= UINT32_MAX;
    *l = fits ? (JitMethodLayout){ (uint32_t)map_offset, map_count, (uint32_t)lits, lit_count, (uint32_t)size,
                                   unwind_count, scope_count, range_count }
              : (JitMethodLayout){ 0 };
    return fits;
}
static inline bool jit_method_layout_unwind(JitMethodLayout *l, size_t code_bytes, size_t map_bytes,
                                            uint32_t map_count, uint32_t lit_count, uint32_t unwind_count)
{
    return jit_method_layout_inline(l, code_bytes, map_bytes, map_count, lit_count, unwind_count, 0, 0);
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
    m->flags &= (uint16_t)~JIT_METHOD_F_INLINED;
    if (l->scope_count) {
        m->flags |= JIT_METHOD_F_INLINED;
        uint8_t *t = jit_method_at(m, (uint32_t)jit_method_inline_at(l->lits_offset, l->lit_count, n));
        memcpy(t, &l->scope_count, 4);
        memcpy(t + 4, &l->range_count, 4);
    }
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

/* -- The inline tables (vm/jit/inline.c) --------------------------------------------- */

static inline uint8_t *jit_method_inline_tables(const JitMethod *m)
{
    return jit_method_at(m, (uint32_t)jit_method_inline_at(m->lits_offset, m->lit_count, jit_method_unwind_count(m)));
}
static inline uint32_t jit_method_inline_scope_count(const JitMethod *m)
{
    if (!(m->flags & JIT_METHOD_F_INLINED)) return 0;
    uint32_t n;
    memcpy(&n, jit_method_inline_tables(m), sizeof n);
    return n;
}
/* 8-aligned by the layout. */
static inline JitInlineScope *jit_method_inline_scopes(const JitMethod *m)
{
    return (JitInlineScope *)(jit_method_inline_tables(m) + 8);
}
static inline uint32_t jit_method_inline_range_count(const JitMethod *m)
{
    if (!(m->flags & JIT_METHOD_F_INLINED)) return 0;
    uint32_t n;
    memcpy(&n, jit_method_inline_tables(m) + 4, sizeof n);
    return n;
}
/* Sorted by start, disjoint. */
static inline JitInlineRange *jit_method_inline_ranges(const JitMethod *m)
{
    return (JitInlineRange *)(jit_method_inline_tables(m) + 8 + jit_method_inline_scope_count(m) * sizeof(JitInlineScope));
}
/* The innermost inlined scope the code at mcpc belongs to, or -1 (the
 * compiled method's own code). */
static inline int32_t jit_method_inline_scope_at(const JitMethod *m, uint32_t mcpc)
{
    uint32_t n = jit_method_inline_range_count(m);
    const JitInlineRange *r = jit_method_inline_ranges(m);
    for (uint32_t i = 0; i < n && r[i].start <= mcpc; i++)
        if (mcpc < r[i].end) return (int32_t)r[i].scope;
    return -1;
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
    JitInlineScope *scopes = jit_method_inline_scopes(m);
    for (uint32_t i = 0, n = jit_method_inline_scope_count(m); i < n; i++) visit(&scopes[i].method, ctx);
    for (uint32_t i = 0; i < m->lit_count; i++) {
        Oop old = jit_method_lit_get(m, i), v = old;
        visit(&v, ctx);
        if (v != old) jit_method_lit_set(m, i, v);
    }
}

#endif
