/*
 * The export's code event log end to end in memory: profiler/codelog_writer.c
 * writes into a buffer, report/codelog_reader.c reads it (through the same read
 * function shape vmprofd uses) into a report/codemap.c timeline, and the
 * answers are checked against a shadow model of the zone kept here.
 *
 * Covers: resolutions at the right time (loads, moves, frees, reuse),
 * bytecode ranges and lines, the bytecodes space, the ring wrapping under
 * a reader that keeps up, a reader overrun mid-copy (torn copy) and one
 * that fell behind, a late reader starting at a checkpoint, a corrupt
 * record, a sequence gap, a bad control block, positions going back, and
 * the writer's limits (truncated loads, a checkpoint too big for the ring).
 */
#include "profiler/codelog_writer.h"
#include "report/codelog_reader.h"
#include "report/codemap.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RING (64u << 10)
#define ZONE 0x7f0000100000ull
#define SLOT 256u
#define NSLOTS 64

/* -- A log in a buffer -------------------------------------------------------- */

typedef struct Rig {
    uint8_t *mem;
    size_t size;
    ProfCodeLog w;
    ReportCodeLog r;
    ReportCodeMap *map;
    uint64_t now;
    int warnings;
    /* a hook the read function runs once, after the first ring read of a poll */
    void (*during_read)(struct Rig *);
    bool in_hook;
    int torn_control_reads; /* copies of the control block read_mem tears */
} Rig;

static Rig *current_rig; /* for the writer's warning callback */

static void count_warning(const char *msg)
{
    (void)msg;
    current_rig->warnings++;
}

static bool read_mem(void *ctx, uint64_t off, void *buf, size_t len)
{
    Rig *g = ctx;
    if (off > g->size || len > g->size - off)
        return false;
    memcpy(buf, g->mem + off, len);
    if (g->torn_control_reads > 0 && off == 0 && len >= sizeof(ProfCodeLogControl)) {
        /* positions ahead of the writer's, consistent with each other: what a
         * copy torn while the writer moved on can look like */
        g->torn_control_reads--;
        ProfCodeLogControl *c = buf;
        c->write_begin = c->write_end = c->write_end + 4096;
    }
    if (g->during_read && !g->in_hook && off >= 128) {
        g->in_hook = true;
        g->during_read(g);
        g->during_read = NULL;
        g->in_hook = false;
    }
    return true;
}

static Rig *rig_new(uint64_t ring)
{
    Rig *g = calloc(1, sizeof *g);
    g->size = prof_codelog_region_bytes(ring);
    g->mem = aligned_alloc(64, g->size);
    memset(g->mem, 0xa5, g->size); /* stale bytes a reader must never take for records */
    char err[256];
    assert_true(prof_codelog_init(&g->w, g->mem, g->size, ring, ZONE, ZONE + NSLOTS * SLOT, err, sizeof err));
    current_rig = g;
    g->w.warn = count_warning;
    g->now = 1000;
    prof_codelog_checkpoint_begin(&g->w, g->now);
    prof_codelog_checkpoint_end(&g->w, g->now);
    g->map = report_codemap_new();
    return g;
}

static void rig_open_reader(Rig *g)
{
    char err[256];
    assert_true(report_codelog_open(&g->r, g->size, read_mem, g, err, sizeof err));
}

static void rig_free(Rig *g)
{
    prof_codelog_release(&g->w);
    report_codelog_close(&g->r);
    report_codemap_free(g->map);
    free(g->mem);
    free(g);
}

static size_t poll_ok(Rig *g)
{
    char warn[256];
    size_t n = report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    if (warn[0])
        fail_msg("unexpected warning: %s", warn);
    return n;
}

static const uint32_t no_pairs[2] = {0, 0};

static void load(Rig *g, uint64_t t, uint32_t kind, uint64_t start, uint64_t size, const char *name,
                 const uint32_t *map, uint32_t nmap, const uint32_t *lines, uint32_t nlines, uint32_t nbytecodes)
{
    ProfCodeLoad e = {
        .kind = kind, .name = name, .start = start, .size = size, .code_start = start + (kind == PROF_CODE_BYTECODES ? 0 : 48),
        .map = map ? map : no_pairs, .map_count = nmap, .source = "/src/Foo.som", .lines = lines ? lines : no_pairs,
        .line_count = nlines, .bytecode_size = nbytecodes,
    };
    prof_codelog_load(&g->w, t, &e);
}

static void method(Rig *g, uint64_t t, uint64_t start, const char *name)
{
    static const uint32_t map[] = {64, 3, 96, 7, 128, 12};
    static const uint32_t lines[] = {0, 10, 5, 11, 10, 12};
    load(g, t, PROF_CODE_METHOD, start, SLOT, name, map, 3, lines, 3, 16);
}

static ReportCodeStatus at(Rig *g, uint64_t t, uint64_t addr, ReportCodeHit *hit)
{
    return report_codemap_resolve(g->map, t, addr, PROF_CODE_SPACE_MACHINE, hit);
}

static void expect_piece(Rig *g, uint64_t t, uint64_t addr, const char *name, uint64_t start)
{
    ReportCodeHit hit;
    ReportCodeStatus st = at(g, t, addr, &hit);
    if (st != REPORT_CODE_FOUND)
        fail_msg("at t=%llu 0x%llx: status %d, want %s", (unsigned long long)t, (unsigned long long)addr, st, name);
    assert_string_equal(hit.piece->name, name);
    assert_int_equal(hit.start, start);
}

static void expect_status(Rig *g, uint64_t t, uint64_t addr, ReportCodeStatus want)
{
    ReportCodeHit hit;
    ReportCodeStatus st = at(g, t, addr, &hit);
    if (st != want)
        fail_msg("at t=%llu 0x%llx: status %d (%s), want %d", (unsigned long long)t, (unsigned long long)addr, st,
                 st == REPORT_CODE_FOUND ? hit.piece->name : "-", want);
}

/* -- Resolution over time --------------------------------------------------------- */

static void a_sample_resolves_to_the_piece_there_at_its_time(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    method(g, 2000, ZONE, "Foo>>a");
    prof_codelog_free(&g->w, 3000, ZONE, SLOT);
    method(g, 4000, ZONE, "Foo>>b");
    assert_int_equal(poll_ok(g), 2 + 3); /* the first checkpoint's two records, then three */
    expect_status(g, 500, ZONE + 16, REPORT_CODE_BEFORE);
    expect_status(g, 1500, ZONE + 16, REPORT_CODE_NOTHING);
    expect_piece(g, 2000, ZONE + 16, "Foo>>a", ZONE);
    expect_piece(g, 2999, ZONE + SLOT - 1, "Foo>>a", ZONE);
    expect_status(g, 3000, ZONE + 16, REPORT_CODE_NOTHING); /* freed at 3000: not its from then */
    expect_status(g, 3500, ZONE + 16, REPORT_CODE_NOTHING);
    expect_piece(g, 4500, ZONE + 16, "Foo>>b", ZONE);
    expect_status(g, 4500, ZONE + SLOT, REPORT_CODE_NOTHING); /* one past its end */
    rig_free(g);
}

static void a_moved_piece_is_at_its_old_address_before_the_move_and_its_new_one_after(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    method(g, 2000, ZONE, "Foo>>gone");
    method(g, 2100, ZONE + SLOT, "Foo>>moved");
    prof_codelog_free(&g->w, 3000, ZONE, SLOT);
    prof_codelog_move(&g->w, 3001, ZONE + SLOT, ZONE, SLOT); /* compaction slides it down */
    method(g, 3002, ZONE + SLOT, "Foo>>new");
    poll_ok(g);
    expect_piece(g, 2500, ZONE + 40, "Foo>>gone", ZONE);
    expect_piece(g, 2500, ZONE + SLOT + 40, "Foo>>moved", ZONE + SLOT);
    expect_piece(g, 3500, ZONE + 40, "Foo>>moved", ZONE);
    expect_piece(g, 3500, ZONE + SLOT + 40, "Foo>>new", ZONE + SLOT);
    ReportCodeMapStats st = report_codemap_stats(g->map);
    assert_int_equal(st.anomalies, 0);
    assert_int_equal(st.moves, 1);
    rig_free(g);
}

static void bytecode_ranges_and_lines_come_from_the_map(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    method(g, 2000, ZONE, "Foo>>ranges"); /* map (64,3) (96,7) (128,12); 16 bytecodes; lines 0:10 5:11 10:12 */
    poll_ok(g);
    ReportCodeHit h;
    assert_int_equal(at(g, 2500, ZONE + 10, &h), REPORT_CODE_FOUND); /* header and prologue: the first range */
    assert_int_equal(h.bc_from, 0);
    assert_int_equal(h.bc_to, 3);
    assert_int_equal(h.line, 10);
    assert_int_equal(at(g, 2500, ZONE + 64, &h), REPORT_CODE_FOUND); /* exactly at an mcpc: the next range */
    assert_int_equal(h.bc_from, 4);
    assert_int_equal(h.bc_to, 7);
    assert_int_equal(h.line, 11);
    assert_int_equal(at(g, 2500, ZONE + 200, &h), REPORT_CODE_FOUND); /* after the last: to the last bytecode */
    assert_int_equal(h.bc_from, 13);
    assert_int_equal(h.bc_to, 15);
    assert_int_equal(h.line, 12);
    assert_string_equal(h.piece->source, "/src/Foo.som");
    assert_int_equal(report_codemap_first_line(h.piece), 10);
    rig_free(g);
}

static void bytecodes_are_a_space_of_their_own(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    static const uint32_t lines[] = {0, 3, 8, 4};
    /* a heap address numerically inside the machine-code test zone: the spaces must not mix */
    load(g, 2000, PROF_CODE_BYTECODES, ZONE + 8, 20, "Foo>>interpreted", NULL, 0, lines, 2, 0);
    method(g, 2001, ZONE, "Foo>>compiled");
    prof_codelog_move(&g->w, 3000, ZONE + 8, 0x10000000, 20); /* the old-space compactor moves the method */
    poll_ok(g);
    ReportCodeHit h;
    assert_int_equal(report_codemap_resolve(g->map, 2500, ZONE + 18, PROF_CODE_SPACE_BYTECODES, &h),
                     REPORT_CODE_FOUND);
    assert_string_equal(h.piece->name, "Foo>>interpreted");
    assert_int_equal(h.bc_from, 10);
    assert_int_equal(h.bc_to, 10);
    assert_int_equal(h.line, 4);
    expect_piece(g, 2500, ZONE + 18, "Foo>>compiled", ZONE);
    assert_int_equal(report_codemap_resolve(g->map, 3500, 0x10000003, PROF_CODE_SPACE_BYTECODES, &h),
                     REPORT_CODE_FOUND);
    assert_string_equal(h.piece->name, "Foo>>interpreted");
    assert_int_equal(h.bc_to, 3);
    assert_int_equal(report_codemap_resolve(g->map, 3500, ZONE + 18, PROF_CODE_SPACE_BYTECODES, &h),
                     REPORT_CODE_NOTHING);
    expect_piece(g, 3500, ZONE + 18, "Foo>>compiled", ZONE); /* the move was the bytecodes', not the zone's */
    rig_free(g);
}

/* -- A random zone and its shadow ---------------------------------------------------- */

typedef struct Shadow {
    struct {
        uint64_t start, t_begin, t_end;
        int name;
    } *v;
    size_t n, cap;
    int slot_span[NSLOTS]; /* open span index per slot, -1 free */
    int next_name;
    uint64_t rng;
} Shadow;

static uint32_t rnd(Shadow *s)
{
    s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull; /* Knuth's MMIX LCG */
    return (uint32_t)(s->rng >> 33);
}

static void shadow_init(Shadow *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->rng = seed;
    for (int i = 0; i < NSLOTS; i++)
        s->slot_span[i] = -1;
}

static void shadow_open(Shadow *s, int slot, int name, uint64_t t)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n].start = ZONE + (uint64_t)slot * SLOT;
    s->v[s->n].t_begin = t;
    s->v[s->n].t_end = UINT64_MAX;
    s->v[s->n].name = name;
    s->slot_span[slot] = (int)s->n++;
}

static void shadow_close(Shadow *s, int slot, uint64_t t)
{
    s->v[s->slot_span[slot]].t_end = t;
    s->slot_span[slot] = -1;
}

/* One random event (load, free or move) in g and s at time t. */
static void step(Rig *g, Shadow *s, uint64_t t)
{
    int slot = (int)(rnd(s) % NSLOTS), other = (int)(rnd(s) % NSLOTS);
    char name[32];
    if (s->slot_span[slot] < 0) {
        int n = s->next_name++;
        snprintf(name, sizeof name, "Bench>>m%d", n);
        method(g, t, ZONE + (uint64_t)slot * SLOT, name);
        shadow_open(s, slot, n, t);
    } else if (s->slot_span[other] < 0 && rnd(s) % 2) {
        int n = s->v[s->slot_span[slot]].name;
        prof_codelog_move(&g->w, t, ZONE + (uint64_t)slot * SLOT, ZONE + (uint64_t)other * SLOT, SLOT);
        shadow_close(s, slot, t);
        shadow_open(s, other, n, t);
    } else {
        prof_codelog_free(&g->w, t, ZONE + (uint64_t)slot * SLOT, SLOT);
        shadow_close(s, slot, t);
    }
}

/* The shadow's answer for (t, addr): the name number, or -1. */
static int shadow_at(const Shadow *s, uint64_t t, uint64_t addr)
{
    for (size_t i = 0; i < s->n; i++)
        if (addr >= s->v[i].start && addr < s->v[i].start + SLOT && s->v[i].t_begin <= t && t < s->v[i].t_end)
            return s->v[i].name;
    return -1;
}

/* Checks `probes` random (t, addr) in [t0, t1): the map agrees with the
 * shadow or says BEFORE/GAP where allowed (t < known_from, gap [g0, g1)). */
static void check_against_shadow(Rig *g, Shadow *s, uint64_t t0, uint64_t t1, int probes, uint64_t gap0, uint64_t gap1,
                                 int *in_gap)
{
    for (int i = 0; i < probes; i++) {
        uint64_t t = t0 + rnd(s) % (t1 - t0);
        uint64_t addr = ZONE + rnd(s) % (NSLOTS * SLOT);
        int want = shadow_at(s, t, addr);
        ReportCodeHit h;
        ReportCodeStatus st = at(g, t, addr, &h);
        if (t >= gap0 && t < gap1) {
            assert_int_equal(st, REPORT_CODE_GAP);
            (*in_gap)++;
            continue;
        }
        if (want < 0) {
            if (st != REPORT_CODE_NOTHING)
                fail_msg("t=%llu 0x%llx: status %d (%s), the shadow has nothing", (unsigned long long)t,
                         (unsigned long long)addr, st, st == REPORT_CODE_FOUND ? h.piece->name : "-");
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "Bench>>m%d", want);
        if (st != REPORT_CODE_FOUND)
            fail_msg("t=%llu 0x%llx: status %d, the shadow has %s", (unsigned long long)t, (unsigned long long)addr,
                     st, name);
        assert_string_equal(h.piece->name, name);
    }
}

static void the_ring_wraps_many_times_under_a_reader_that_keeps_up(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    Shadow s;
    shadow_init(&s, 42);
    uint64_t t = 2000;
    for (int i = 0; i < 20000; i++, t += 10) {
        step(g, &s, t);
        if (i % 50 == 49)
            poll_ok(g);
    }
    poll_ok(g);
    assert_true(g->w.end > 10 * RING);       /* wrapped ten times and more */
    assert_true(g->r.stats.checkpoints > 10); /* ... skipping the checkpoints */
    assert_int_equal(g->r.stats.recoveries, 0);
    assert_int_equal(g->r.stats.bad_records, 0);
    assert_int_equal(report_codemap_stats(g->map).anomalies, 0);
    int gaps = 0;
    check_against_shadow(g, &s, 1500, t + 100, 3000, 0, 0, &gaps);
    free(s.v);
    rig_free(g);
}

/* Run by the read function in the middle of a poll's copy: the VM writes a
 * ring and a half meanwhile. */
static Shadow *hook_shadow;
static uint64_t hook_t;
static void write_a_ring_meanwhile(Rig *g)
{
    uint64_t until = g->w.end + RING + RING / 2;
    while (g->w.end < until) {
        step(g, hook_shadow, hook_t);
        hook_t += 10;
    }
}

static void a_copy_the_writer_overtook_is_detected_and_recovered_from(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    Shadow s;
    shadow_init(&s, 7);
    uint64_t t = 2000;
    for (int i = 0; i < 200; i++, t += 10)
        step(g, &s, t);
    poll_ok(g);
    uint64_t last_good = t - 10;
    for (int i = 0; i < 100; i++, t += 10)
        step(g, &s, t);
    /* this poll copies records the writer overwrites before the copy is checked */
    hook_shadow = &s;
    hook_t = t;
    g->during_read = write_a_ring_meanwhile;
    char warn[256];
    report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    t = hook_t;
    assert_non_null(strstr(warn, "overwrote"));
    assert_true(g->r.stats.overruns >= 1);
    assert_int_equal(g->r.stats.recoveries, 1);
    for (int i = 0; i < 100; i++, t += 10)
        step(g, &s, t);
    poll_ok(g);
    /* the gap runs from the last good record to the checkpoint recovered at */
    uint64_t gap_end = 0;
    ReportCodeHit h;
    for (uint64_t u = last_good; u < t; u++) {
        if (at(g, u, ZONE, &h) != REPORT_CODE_GAP) {
            gap_end = u;
            break;
        }
    }
    assert_true(gap_end > last_good);
    int gaps = 0;
    check_against_shadow(g, &s, 1500, t, 3000, last_good, gap_end, &gaps);
    assert_true(gaps > 0);
    free(s.v);
    rig_free(g);
}

static void a_reader_that_fell_behind_recovers_at_a_checkpoint_with_a_gap(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    Shadow s;
    shadow_init(&s, 99);
    uint64_t t = 2000;
    for (int i = 0; i < 100; i++, t += 10)
        step(g, &s, t);
    poll_ok(g);
    uint64_t last_good = t - 10;
    for (int i = 0; i < 5000; i++, t += 10) /* several rings unread */
        step(g, &s, t);
    char warn[256];
    size_t n = report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    assert_true(n > 0);
    assert_non_null(strstr(warn, "overwrote"));
    assert_int_equal(g->r.stats.recoveries, 1);
    assert_int_equal(report_codemap_stats(g->map).gaps, 1);
    int gaps = 0;
    /* after the gap the map is exact; in it, it says GAP */
    uint64_t cp_time = 0;
    ReportCodeHit h;
    for (uint64_t u = last_good; u < t; u += 10)
        if (at(g, u, ZONE, &h) != REPORT_CODE_GAP) {
            cp_time = u;
            break;
        }
    assert_true(cp_time > last_good);
    check_against_shadow(g, &s, 1500, t, 3000, last_good, cp_time, &gaps);
    assert_true(gaps > 0);
    free(s.v);
    rig_free(g);
}

static void a_late_reader_starts_at_the_newest_checkpoint(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    Shadow s;
    shadow_init(&s, 5);
    uint64_t t = 2000;
    for (int i = 0; i < 3000; i++, t += 10)
        step(g, &s, t);
    assert_true(g->w.end > 2 * RING);
    uint64_t cp_pos = g->w.ctl->checkpoint_pos;
    assert_true(cp_pos > RING);
    rig_open_reader(g);
    assert_true(poll_ok(g) > 0);
    assert_int_equal(g->r.stats.checkpoints, 1);
    assert_int_equal(g->r.stats.recoveries, 0);
    ReportCodeHit h;
    assert_int_equal(at(g, 1999, ZONE, &h), REPORT_CODE_BEFORE);
    /* from the checkpoint's time on, exact */
    uint64_t from = 0;
    for (uint64_t u = 2000; u < t; u += 10)
        if (at(g, u, ZONE, &h) != REPORT_CODE_BEFORE) {
            from = u;
            break;
        }
    assert_true(from > 2000);
    int gaps = 0;
    check_against_shadow(g, &s, from, t, 2000, 0, 0, &gaps);
    free(s.v);
    rig_free(g);
}

/* -- Damage -------------------------------------------------------------------------- */

/* The stream position of the seq-th record after `from` (walking headers). */
static uint64_t record_pos(Rig *g, uint64_t from, int nth)
{
    uint64_t p = from;
    for (int i = 0; i < nth; i++) {
        uint32_t size;
        uint64_t a = p & (RING - 1);
        memcpy(&size, g->w.ring + a, 4);
        p += size;
    }
    return p;
}

static void a_corrupt_record_is_skipped_to_the_next_checkpoint(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    Shadow s;
    shadow_init(&s, 3);
    uint64_t t = 2000;
    for (int i = 0; i < 10; i++, t += 10)
        step(g, &s, t);
    poll_ok(g);
    uint64_t last_good = t - 10, from = g->w.end;
    for (int i = 0; i < 10; i++, t += 10)
        step(g, &s, t);
    /* one flipped byte in the body of the 4th new record */
    uint64_t p = record_pos(g, from, 3);
    g->w.ring[(p + 40) & (RING - 1)] ^= 0x10;
    char warn[256];
    size_t n = report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    assert_int_equal(n, 3);
    assert_non_null(strstr(warn, "checksum"));
    assert_int_equal(g->r.stats.bad_records, 1);
    assert_int_equal(g->r.mode, REPORT_CODELOG_LOST);
    /* nothing until the next checkpoint, then back in step */
    for (int i = 0; i < 1000; i++, t += 10)
        step(g, &s, t);
    report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    assert_int_equal(g->r.stats.recoveries, 1);
    assert_int_equal(g->r.mode, REPORT_CODELOG_FOLLOWING);
    int gaps = 0;
    ReportCodeHit h;
    uint64_t gap_end = 0;
    for (uint64_t u = last_good + 30; u < t; u += 10)
        if (at(g, u, ZONE, &h) != REPORT_CODE_GAP) {
            gap_end = u;
            break;
        }
    assert_true(gap_end > last_good + 30);
    /* the three records before the damage were applied: the gap starts at the last of them */
    check_against_shadow(g, &s, 1500, t, 3000, last_good + 30, gap_end, &gaps);
    free(s.v);
    rig_free(g);
}

static void a_gap_in_the_sequence_numbers_is_damage(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    method(g, 2000, ZONE, "Foo>>a");
    poll_ok(g);
    uint64_t from = g->w.end;
    method(g, 2100, ZONE + SLOT, "Foo>>b");
    method(g, 2200, ZONE + 2 * SLOT, "Foo>>c");
    /* the second new record claims a later seq, its checksum made right: only the sequence is wrong */
    uint64_t p = record_pos(g, from, 1) & (RING - 1);
    ProfCodeRecord h;
    memcpy(&h, g->w.ring + p, sizeof h);
    h.seq += 1;
    memcpy(g->w.ring + p, &h, sizeof h);
    h.checksum = prof_code_log_checksum(g->w.ring + p + 8, h.size - 8);
    memcpy(g->w.ring + p + offsetof(ProfCodeRecord, checksum), &h.checksum, 4);
    char warn[256];
    assert_int_equal(report_codelog_poll(&g->r, g->map, warn, sizeof warn), 1);
    assert_non_null(strstr(warn, "out of sequence"));
    /* known up to the last good record (Foo>>b's load at 2100), unknown after it */
    expect_piece(g, 2099, ZONE + 8, "Foo>>a", ZONE);
    expect_status(g, 2099, ZONE + SLOT + 8, REPORT_CODE_NOTHING);
    expect_status(g, 2150, ZONE + SLOT + 8, REPORT_CODE_GAP);
    expect_status(g, 2250, ZONE + 2 * SLOT + 8, REPORT_CODE_GAP);
    rig_free(g);
}

static void a_bad_control_block_is_refused_with_its_reason(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    char err[256];
    ProfCodeLogControl saved = *g->w.ctl;
    g->w.ctl->magic ^= 1;
    assert_false(report_codelog_open(&g->r, g->size, read_mem, g, err, sizeof err));
    assert_non_null(strstr(err, "magic"));
    *g->w.ctl = saved;
    g->w.ctl->ring_size = RING + 8;
    assert_false(report_codelog_open(&g->r, g->size, read_mem, g, err, sizeof err));
    assert_non_null(strstr(err, "power of two"));
    *g->w.ctl = saved;
    g->w.ctl->ring_offset = 4096;
    assert_false(report_codelog_open(&g->r, g->size, read_mem, g, err, sizeof err));
    assert_non_null(strstr(err, "does not fit"));
    *g->w.ctl = saved;
    assert_false(report_codelog_open(&g->r, 64, read_mem, g, err, sizeof err));
    assert_non_null(strstr(err, "smaller than its control block"));
    assert_true(report_codelog_open(&g->r, g->size, read_mem, g, err, sizeof err));
    rig_free(g);
}

static void positions_that_go_back_are_refused(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    method(g, 2000, ZONE, "Foo>>a");
    poll_ok(g);
    uint64_t end = g->w.ctl->write_end;
    g->w.ctl->write_end = end - 8; /* as a torn or corrupt control block would say */
    char warn[256];
    assert_int_equal(report_codelog_poll(&g->r, g->map, warn, sizeof warn), 0);
    assert_non_null(strstr(warn, "inconsistent positions"));
    g->w.ctl->write_end = end;
    g->w.ctl->write_begin = end + RING; /* a record in progress cannot be a whole ring */
    assert_int_equal(report_codelog_poll(&g->r, g->map, warn, sizeof warn), 0);
    assert_non_null(strstr(warn, "inconsistent positions"));
    g->w.ctl->write_begin = end;
    method(g, 2100, ZONE + SLOT, "Foo>>b");
    assert_int_equal(poll_ok(g), 1);
    rig_free(g);
}

static void a_torn_copy_of_the_control_block_is_not_believed(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    method(g, 2000, ZONE, "Foo>>a");
    poll_ok(g);
    g->torn_control_reads = 1; /* the next copy is torn, the one after it is not */
    method(g, 2100, ZONE + SLOT, "Foo>>b");
    assert_int_equal(poll_ok(g), 1);
    method(g, 2200, ZONE + 2 * SLOT, "Foo>>c");
    assert_int_equal(poll_ok(g), 1); /* a believed torn copy would refuse this one as going back */
    expect_piece(g, 2300, ZONE + 2 * SLOT, "Foo>>c", ZONE + 2 * SLOT);
    rig_free(g);
}

/* -- The writer's limits ------------------------------------------------------------- */

static void a_load_too_big_for_the_ring_loses_lines_then_map_but_keeps_its_name(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    rig_open_reader(g);
    uint32_t *map = malloc(2 * 2000 * sizeof *map);
    for (uint32_t i = 0; i < 2000; i++) {
        map[2 * i] = 48 + 4 * i;
        map[2 * i + 1] = i;
    }
    load(g, 2000, PROF_CODE_METHOD, ZONE, 48 + 8000, "Big>>method", map, 2000, map, 2000, 2000);
    free(map);
    poll_ok(g);
    ReportCodeHit h;
    assert_int_equal(at(g, 2500, ZONE + 48 + 4 * 10, &h), REPORT_CODE_FOUND);
    assert_string_equal(h.piece->name, "Big>>method");
    assert_true(h.piece->truncated);
    assert_int_equal(h.piece->nlines, 0);
    assert_true(h.piece->nmap > 500 && h.piece->nmap < 2000); /* the first pairs, as many as fit */
    assert_int_equal(h.bc_from, 11); /* exactly at map[10]'s mcpc: the range after bcpc 10 */
    assert_int_equal(h.bc_to, 11);
    assert_int_equal(g->r.stats.truncated, 1);
    assert_int_equal(g->w.ctl->truncated, 1);
    rig_free(g);
}

static void a_checkpoint_too_big_for_half_the_ring_is_refused_and_said(void **state)
{
    (void)state;
    Rig *g = rig_new(RING);
    char name[64];
    /* 400 live pieces of ~150 ring bytes: 60 KB, more than half a 64 KiB ring */
    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof name, "Many>>piece%d", i);
        method(g, 2000 + (uint64_t)i, ZONE + 0x100000 + (uint64_t)i * SLOT, name);
    }
    for (int i = 0; i < 400; i++) /* and churn, so a checkpoint falls due */
        prof_codelog_move(&g->w, 3000 + (uint64_t)i, ZONE + 0x100000 + (uint64_t)i * SLOT,
                          ZONE + 0x100000 + (uint64_t)i * SLOT, SLOT);
    assert_true(g->w.ctl->flags & PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG);
    assert_int_equal(g->warnings, 1); /* once */
    assert_int_equal(g->w.ctl->checkpoint_pos, 0); /* the first one still stands */
    rig_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_sample_resolves_to_the_piece_there_at_its_time),
        cmocka_unit_test(a_moved_piece_is_at_its_old_address_before_the_move_and_its_new_one_after),
        cmocka_unit_test(bytecode_ranges_and_lines_come_from_the_map),
        cmocka_unit_test(bytecodes_are_a_space_of_their_own),
        cmocka_unit_test(the_ring_wraps_many_times_under_a_reader_that_keeps_up),
        cmocka_unit_test(a_copy_the_writer_overtook_is_detected_and_recovered_from),
        cmocka_unit_test(a_reader_that_fell_behind_recovers_at_a_checkpoint_with_a_gap),
        cmocka_unit_test(a_late_reader_starts_at_the_newest_checkpoint),
        cmocka_unit_test(a_corrupt_record_is_skipped_to_the_next_checkpoint),
        cmocka_unit_test(a_gap_in_the_sequence_numbers_is_damage),
        cmocka_unit_test(a_bad_control_block_is_refused_with_its_reason),
        cmocka_unit_test(positions_that_go_back_are_refused),
        cmocka_unit_test(a_torn_copy_of_the_control_block_is_not_believed),
        cmocka_unit_test(a_load_too_big_for_the_ring_loses_lines_then_map_but_keeps_its_name),
        cmocka_unit_test(a_checkpoint_too_big_for_half_the_ring_is_refused_and_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
