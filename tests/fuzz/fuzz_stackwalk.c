/*
 * tests/fuzz/fuzz_stackwalk.c — the stack walkers and the symbolizing code
 * fed random "target memory": what vmprofd reads from a process it does
 * not trust (issue 22).
 *
 *   1. report_stackcapture (ptrace mode's and the in-VM sampler's walk,
 *      proto/stackabi.h) walks frame chains, stack pages and contexts in a
 *      fake address space: the input's tail served at FUZZ_BASE, anything
 *      else unreadable, with walk facts and registers from the input;
 *   2. report_resolve_samples turns the raw stack it captured (and a plain
 *      stack of the same pcs) into a Profile against a code map of the
 *      input's code-zone records (loads, moves, frees of pieces with their
 *      mcpc->bcpc maps, line tables and unwind rules) and a Symbolizer of
 *      this process (so real modules and [unknown] addresses both occur);
 *   3. vmprofd_unwind unwinds the input's registers over a "stack copy"
 *      of the input's bytes (libunwind, then frame pointers through
 *      process_vm_readv of this process: faults, never crashes).
 *
 * Input layout (all little-endian; short input reads as zeros):
 *
 *   0     u8      flags: bit 0 no facts (a VM that published none)
 *   1     u8      npieces (at most FUZZ_SW_MAX_PIECES)
 *   8     192     ProfWalkFacts, raw; every u64 field "tagged" (below)
 *   200   5 x u64 registers ip, sp, bp, r14, r15, tagged
 *   240   records npieces x (24 bytes + tables), then the memory image
 *
 *   a tagged u64 v: (v >> 62) == 1 means FUZZ_BASE + (v & 0xffffffff), an
 *   address in the image; any other v is itself. The fuzzer finds the
 *   image without guessing 64-bit constants.
 *
 *   record: u64 start (tagged), u32 size, u32 bits (kind:3, nmap:5,
 *   nunwind:4, nlines:4, space:1, op:2 load/move/free/lost), u64 to
 *   (tagged; a move's target), then nmap pairs (u32 mcpc, u32 bcpc),
 *   nunwind pairs (u32 offset, u32 rule), nlines pairs (u32 bcpc, u32
 *   line), in any order: the code log reader passes them on as the target
 *   wrote them, and the code map must cope.
 */
#include "tests/fuzz/fuzz.h"

#include "report/codemap.h"
#include "report/resolve.h"
#include "report/samples.h"
#include "report/stackcapture.h"
#include "report/symbolize.h"
#include "vmprofd/unwind.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_BASE 0x10000000ull /* where the image is "mapped": far from this process's own pages */
#define FUZZ_SW_MAX_PIECES 24
#define FUZZ_SW_HEADER 240

typedef struct Cursor {
    const uint8_t *p;
    size_t n, at;
} Cursor;

static uint64_t take(Cursor *c, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++, c->at++)
        if (c->at < c->n) v |= (uint64_t)c->p[c->at] << (8 * i);
    return v;
}

static uint64_t untag(uint64_t v) { return (v >> 62) == 1 ? FUZZ_BASE + (v & 0xffffffffu) : v; }

typedef struct Image {
    const uint8_t *bytes;
    size_t len;
} Image;

static bool image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const Image *im = ctx;
    if (addr < FUZZ_BASE || addr - FUZZ_BASE > im->len || len > im->len - (addr - FUZZ_BASE)) return false;
    memcpy(buf, im->bytes + (addr - FUZZ_BASE), len);
    return true;
}

/* n pairs of u32 from the cursor, as they come. */
static uint32_t *take_pairs(Cursor *c, size_t n)
{
    if (!n) return NULL;
    uint32_t *v = calloc(2 * n, sizeof *v);
    if (!v) abort();
    for (size_t i = 0; i < 2 * n; i++) v[i] = (uint32_t)take(c, 4);
    return v;
}

/* This process, described once: building a Symbolizer costs a libdwfl
 * report of every module, far more than one input. Its answers do not
 * depend on earlier inputs (the cache is per Profile, and each input has
 * its own). */
static Symbolizer *self_symbolizer(void)
{
    static Symbolizer *sym;
    static bool tried;
    if (!tried) {
        char err[256];
        tried = true;
        sym = report_symbolizer_new(getpid(), NULL, 0, 0, err, sizeof err);
    }
    return sym;
}

static void load_pieces(Cursor *c, unsigned npieces, ReportCodeMap *map)
{
    report_codemap_known(map, 1);
    for (unsigned i = 0; i < npieces; i++) {
        uint64_t start = untag(take(c, 8));
        uint32_t size = (uint32_t)take(c, 4), bits = (uint32_t)take(c, 4);
        uint64_t to = untag(take(c, 8));
        size_t nmap = (bits >> 3) & 31, nunwind = (bits >> 8) & 15, nlines = (bits >> 12) & 15;
        ProfCodeSpace space = (bits >> 16) & 1 ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE;
        unsigned op = (bits >> 17) & 3;
        uint32_t *map_pairs = take_pairs(c, nmap), *unwind = take_pairs(c, nunwind), *lines = take_pairs(c, nlines);
        uint64_t t = 10 + i;
        if (op == 0) {
            ReportCodePiece piece = {
                .kind = bits & 7,
                .bytecode_size = size & 0xffff,
                .size = size,
                .code_offset = (bits >> 20) & 0xff,
                .name = "Fuzz>>piece",
                .source = (bits >> 28) & 1 ? "Fuzz.som" : NULL,
                .map = (const ReportMapEntry *)map_pairs,
                .nmap = nmap,
                .lines = (const ReportLineEntry *)lines,
                .nlines = nlines,
                .truncated = (bits >> 29) & 1,
                .unwind = unwind,
                .nunwind = nunwind,
            };
            report_codemap_load(map, t, space, start, &piece);
        } else if (op == 1) {
            report_codemap_move(map, t, space, start, to);
        } else if (op == 2) {
            report_codemap_unload(map, t, space, start);
        } else {
            report_codemap_lost(map, t);
            report_codemap_known(map, t + 1);
        }
        free(map_pairs);
        free(unwind);
        free(lines);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Cursor c = {data, size, 0};
    unsigned flags = (unsigned)take(&c, 1);
    unsigned npieces = (unsigned)take(&c, 1) % (FUZZ_SW_MAX_PIECES + 1);
    c.at = 8;

    ProfWalkFacts facts;
    uint8_t raw_facts[sizeof facts];
    for (size_t i = 0; i < sizeof raw_facts; i++) raw_facts[i] = (uint8_t)take(&c, 1);
    memcpy(&facts, raw_facts, sizeof facts);
    facts.size = sizeof facts;
    /* every 8-aligned u64 of the facts may be an address: untag them all */
    for (size_t off = 8; off + 8 <= sizeof facts; off += 8) {
        uint64_t v;
        memcpy(&v, (uint8_t *)&facts + off, 8);
        v = untag(v);
        memcpy((uint8_t *)&facts + off, &v, 8);
    }
    StackRegs regs = {untag(take(&c, 8)), untag(take(&c, 8)), untag(take(&c, 8)), untag(take(&c, 8)),
                      untag(take(&c, 8))};
    c.at = FUZZ_SW_HEADER;

    ReportCodeMap *map = report_codemap_new();
    load_pieces(&c, npieces, map);
    Image im = {c.at < size ? data + c.at : data, c.at < size ? size - c.at : 0};

    /* 1. the walk */
    static StackReader reader; /* 8 KiB of cache: not on the stack; reset below */
    ProfRawStack raw;
    memset(&raw, 0, sizeof raw);
    raw.time_ns = 1000;
    raw.tid = 1;
    report_stackcapture_reset(&reader, image_read, &im);
    report_stackcapture(&reader, (flags & 1) ? NULL : &facts, &regs, &raw);

    /* 2. resolving what it captured */
    SampleStore st;
    memset(&st, 0, sizeof st);
    report_samples_add_raw(&st, &raw);
    uint64_t pcs[PROF_RAW_MAX_LEAF + PROF_RAW_MAX_ST];
    size_t npcs = 0;
    for (size_t i = 0; i < raw.nleaf && i < PROF_RAW_MAX_LEAF; i++) pcs[npcs++] = raw.leaf[i];
    for (size_t i = 0; i < raw.nst && i < PROF_RAW_MAX_ST; i++) pcs[npcs++] = raw.st[i] & ~PROF_RAW_BYTECODE;
    report_samples_add(&st, 2000, 1, (flags & 2) ? regs.r15 : 0, pcs, npcs);
    Symbolizer *sym = self_symbolizer();
    Profile *p = report_profile_new();
    ResolveCode code = {
        .map = map,
        .zone_start = facts.zone_start,
        .zone_end = facts.zone_end,
        .interp_fn = (flags & 4) ? facts.interp_start : 0,
        .return_to_interpreter = facts.return_to_interpreter,
    };
    report_resolve_samples(p, sym, &st, &code);
    report_profile_free(p);
    report_samples_free(&st);
    report_codemap_free(map);

    /* 3. the native unwinder over a stack copy from the input */
    if (sym) {
        UnwindRegs ur = {.ip = regs.ip, .sp = regs.sp, .bp = regs.bp, .mask = 0};
        uint64_t out[64];
        vmprofd_unwind(sym, &ur, im.bytes, im.len, out, 64);
    }
    return 0;
}
