/*
 * tests/perfsinks/test_perfsinks.c — the perf map and jitdump sinks fed by hand
 * through profiler/codeevents: the exact lines and records they write, the
 * placement of source-line rows, moves keyed to their load, frees, and the
 * live-code table against a shadow model.
 */
#define _GNU_SOURCE
#include "profiler/codeevents.h"
#include "profiler/jitdump.h"
#include "profiler/livecode.h"
#include "profiler/perfmap.h"
#include "tests/perfsinks/jitdump_read.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_perfsinks.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* A piece of "machine code" the sinks read bytes from: 48-byte header, code. */
typedef struct Piece {
    _Alignas(16) uint8_t bytes[256];
} Piece;

static ProfCodeLoad piece_load(Piece *p, uint32_t kind, const char *name, uint64_t code_size)
{
    for (size_t i = 0; i < sizeof p->bytes; i++) p->bytes[i] = (uint8_t)(i * 7 + kind);
    return (ProfCodeLoad){
        .kind = kind,
        .name = name,
        .start = (uint64_t)(uintptr_t)p,
        .size = sizeof p->bytes,
        .code_start = (uint64_t)(uintptr_t)p + 48,
        .code_size = code_size,
    };
}

static void register_once(const ProfCodeSink *s) { assert_true(prof_code_sink_add(s)); }

/* -- The perf map ----------------------------------------------------------------- */

static void perf_map_has_a_line_per_load_and_per_move_and_none_per_free(void **state)
{
    (void)state;
    char path[300], err[512], want[1024];
    snprintf(path, sizeof path, "%s/perf-test.map", tmpdir);
    const ProfCodeSink *s = prof_perfmap_open(path, err, sizeof err);
    assert_non_null(s);
    register_once(s);
    assert_string_equal(prof_perfmap_path(), path);

    static Piece a, b;
    ProfCodeLoad la = piece_load(&a, PROF_CODE_METHOD, "Foo>>bar:", 0x40);
    prof_code_load(&la);
    ProfCodeLoad bc = piece_load(&b, PROF_CODE_BYTECODES, "Foo>>bar: (bytecodes)", 0x20);
    prof_code_load(&bc); /* bytecodes are not machine code: no line */
    ProfCodeLoad lb = piece_load(&b, PROF_CODE_CLOSED_PIC, "value (closed PIC)", 0); /* 0: to the end of the piece */
    prof_code_load(&lb);
    prof_code_move(la.start, 0x7000, 256);
    prof_code_free(lb.start, 256);
    prof_code_move(lb.start, 0x9000, 256); /* freed: nothing to name */
    prof_code_move(0x5550, 0x5000, 64);    /* never loaded */
    prof_perfmap_close();
    prof_code_move(0x7000, 0x6000, 256); /* closed: ignored */
    assert_string_equal(prof_perfmap_path(), "");

    char *got = slurp(path);
    snprintf(want, sizeof want,
             "%llx 40 Foo>>bar:\n"
             "%llx d0 value (closed PIC)\n"
             "7030 40 Foo>>bar:\n",
             (unsigned long long)la.code_start, (unsigned long long)lb.code_start);
    assert_string_equal(got, want);
    free(got);
}

static void perf_map_open_says_why_it_cannot_create_the_file(void **state)
{
    (void)state;
    char err[512];
    assert_null(prof_perfmap_open("/nonexistent-dir/perf-1.map", err, sizeof err));
    assert_non_null(strstr(err, "cannot create the perf map /nonexistent-dir/perf-1.map: No such file or directory"));
}

/* -- The jitdump ------------------------------------------------------------------ */

/* The i-th record other than UNWINDING_INFO (one before each load: their
 * bytes are checked by jd_file_read; these tests follow the other kinds). */
static const JdRecord *nth(const JdFile *f, size_t i)
{
    for (size_t k = 0; k < f->nrecs; k++) {
        if (f->recs[k].id == JD_UNWINDING_INFO)
            continue;
        if (i-- == 0)
            return &f->recs[k];
    }
    fail_msg("fewer than %zu records besides UNWINDING_INFO", i + 1);
    return NULL;
}

static void jitdump_writes_debug_info_load_move_and_close(void **state)
{
    (void)state;
    char err[512], path[600];
    uint64_t t0 = now_ns();
    const ProfCodeSink *s = prof_jitdump_open(tmpdir, err, sizeof err);
    assert_non_null(s);
    register_once(s);
    snprintf(path, sizeof path, "%s/jit-%d.dump", tmpdir, (int)getpid());
    assert_string_equal(prof_jitdump_path(), path);

    /* perf record learns of the dump from an executable mapping of it */
    char *maps = slurp("/proc/self/maps");
    char *at = strstr(maps, path);
    assert_non_null(at);
    while (at > maps && at[-1] != '\n') at--;
    assert_non_null(strstr(at, " r-xp "));
    free(maps);

    static Piece m, pic, later;
    /* map (offset from piece start, bcpc); lines (bcpc, line) */
    static const uint32_t map[] = { 58, 3, 68, 7, 68, 9, 88, 12 };
    static const uint32_t lines[] = { 0, 5, 3, 6, 8, 7, 12, 9 };
    ProfCodeLoad lm = piece_load(&m, PROF_CODE_METHOD, "Foo>>bar:", 64);
    lm.map = map;
    lm.map_count = 4;
    lm.lines = lines;
    lm.line_count = 4;
    lm.source = "Foo.som";
    prof_code_load(&lm);
    ProfCodeLoad lp = piece_load(&pic, PROF_CODE_CLOSED_PIC, "value (closed PIC)", 32);
    prof_code_load(&lp);
    prof_code_move(lm.start, 0x7000, 256);
    prof_code_free(lp.start, 256);
    ProfCodeLoad ll = piece_load(&later, PROF_CODE_BLOCK, "[] in Foo>>bar:", 16); /* no source: no debug info */
    ll.lines = lines;
    ll.line_count = 4;
    prof_code_load(&ll);
    prof_code_move(lp.start, 0x9000, 256); /* freed before: no record */
    prof_jitdump_close();
    uint64_t t1 = now_ns();

    JdFile f;
    if (!jd_file_read(path, &f, err, sizeof err) || !jd_file_check(&f, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(f.pid, getpid());
    assert_true(f.timestamp >= t0 && f.timestamp <= t1);
    assert_int_equal(f.unwinding_infos, 3); /* one per load */
    assert_int_equal(f.nrecs - f.unwinding_infos, 6);
    const JdRecord *d = nth(&f, 0), *l1 = nth(&f, 1), *l2 = nth(&f, 2), *mv = nth(&f, 3), *l3 = nth(&f, 4),
                   *cl = nth(&f, 5);
    assert_int_equal(d->id, JD_DEBUG_INFO);
    assert_int_equal(d->code_addr, lm.code_start);
    /* code up to +10 is bc 3 (line 6), up to +20 bc 7 (line 6), up to +20
     * bc 9 (empty), up to +40 bc 12 (line 9); the rest is bc 12's too,
     * up to the row one past the code */
    assert_int_equal(d->nrows, 3);
    assert_int_equal(d->rows[0].addr, lm.code_start);
    assert_int_equal(d->rows[0].line, 6);
    assert_int_equal(d->rows[1].addr, lm.code_start + 20);
    assert_int_equal(d->rows[1].line, 9);
    assert_string_equal(d->rows[1].file, "Foo.som");
    assert_int_equal(d->rows[1].discrim, 0);
    assert_int_equal(d->rows[2].addr, lm.code_start + 64); /* closes the sequence */
    assert_int_equal(d->rows[2].line, 9);

    assert_int_equal(l1->id, JD_LOAD);
    assert_string_equal(l1->name, "Foo>>bar:");
    assert_int_equal(l1->code_index, 1);
    assert_int_equal(l1->code_addr, lm.code_start);
    assert_int_equal(l1->code_size, 64);
    assert_memory_equal(l1->code, m.bytes + 48, 64);
    assert_int_equal(l1->tid, gettid());

    assert_int_equal(l2->id, JD_LOAD);
    assert_string_equal(l2->name, "value (closed PIC)");
    assert_int_equal(l2->code_index, 2);
    assert_memory_equal(l2->code, pic.bytes + 48, 32);

    assert_int_equal(mv->id, JD_MOVE);
    assert_int_equal(mv->code_index, 1);
    assert_int_equal(mv->old_code_addr, lm.code_start);
    assert_int_equal(mv->new_code_addr, 0x7030);
    assert_int_equal(mv->vma, 0x7030);
    assert_int_equal(mv->code_size, 64);

    assert_int_equal(l3->id, JD_LOAD);
    assert_string_equal(l3->name, "[] in Foo>>bar:");
    assert_int_equal(l3->code_index, 3);

    assert_int_equal(cl->id, JD_CLOSE);
    assert_true(cl->timestamp <= t1);
    jd_file_free(&f);
}

/* -- Inlined methods (issue 26) ------------------------------------------------- */

/* Foo>>outer with Bar>>inner inlined at its bc 2, and Baz>>leaf inlined
 * into that at Bar's bc 3: ranges (from the piece's start, code at +48)
 * B [0x40, 0x50), C [0x50, 0x58), B [0x58, 0x60). Each range begins
 * with a map pair of its scope, the code after it with its parent's. */
static const uint32_t inl_map[] = { 0x38, 2, 0x40, 0, 0x48, 3, 0x50, 0, 0x54, 1, 0x58, 5, 0x60, 4, 0x70, 9 };
static const uint32_t inl_lines_a[] = { 0, 10, 4, 11, 9, 12 };
static const uint32_t inl_lines_b[] = { 0, 20, 3, 21, 5, 22 };
static const uint32_t inl_lines_c[] = { 0, 30, 1, 31 };
static const ProfInlineScope inl_scopes[] = {
    { .name = "Bar>>inner", .source = "Bar.som", .lines = inl_lines_b, .line_count = 3, .bytecode_size = 8,
      .call_bcpc = 2, .parent = -1 },
    { .name = "Baz>>leaf", .source = "Baz.som", .lines = inl_lines_c, .line_count = 2, .bytecode_size = 3,
      .call_bcpc = 3, .parent = 0 },
};
static const ProfInlineRange inl_ranges[] = { { 0x40, 0x50, 0 }, { 0x50, 0x58, 1 }, { 0x58, 0x60, 0 } };

static ProfCodeLoad inlined_load(Piece *p)
{
    ProfCodeLoad l = piece_load(p, PROF_CODE_METHOD, "Foo>>outer", 0x80);
    l.map = inl_map;
    l.map_count = 8;
    l.lines = inl_lines_a;
    l.line_count = 3;
    l.source = "Foo.som";
    l.bytecode_size = 10;
    l.scopes = inl_scopes;
    l.scope_count = 2;
    l.ranges = inl_ranges;
    l.range_count = 3;
    return l;
}

static void perf_map_cuts_a_piece_with_inlined_methods_into_consecutive_symbols(void **state)
{
    (void)state;
    char path[300], err[512], want[2048];
    snprintf(path, sizeof path, "%s/perf-inline.map", tmpdir);
    const ProfCodeSink *s = prof_perfmap_open(path, err, sizeof err);
    assert_non_null(s);
    register_once(s);
    static Piece a;
    ProfCodeLoad la = inlined_load(&a);
    prof_code_load(&la);
    prof_code_move(la.start, 0x7000, 256); /* every part again, at the new address */
    prof_perfmap_close();
    char *got = slurp(path);
    unsigned long long c = (unsigned long long)la.code_start;
    snprintf(want, sizeof want,
             "%llx 10 Foo>>outer\n"
             "%llx 10 Bar>>inner (inlined into Foo>>outer)\n"
             "%llx 8 Baz>>leaf (inlined into Foo>>outer)\n"
             "%llx 8 Bar>>inner (inlined into Foo>>outer)\n"
             "%llx 50 Foo>>outer\n"
             "7030 10 Foo>>outer\n"
             "7040 10 Bar>>inner (inlined into Foo>>outer)\n"
             "7050 8 Baz>>leaf (inlined into Foo>>outer)\n"
             "7058 8 Bar>>inner (inlined into Foo>>outer)\n"
             "7060 50 Foo>>outer\n",
             c, c + 0x10, c + 0x20, c + 0x28, c + 0x30);
    assert_string_equal(got, want);
    free(got);
}

static void jitdump_debug_info_gives_inlined_ranges_their_methods_file_and_line(void **state)
{
    (void)state;
    char err[512], dir[300], path[600];
    snprintf(dir, sizeof dir, "%s/inline", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    const ProfCodeSink *s = prof_jitdump_open(dir, err, sizeof err);
    assert_non_null(s);
    register_once(s);
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)getpid());
    static Piece m;
    ProfCodeLoad lm = inlined_load(&m);
    prof_code_load(&lm);
    prof_jitdump_close();

    JdFile f;
    if (!jd_file_read(path, &f, err, sizeof err) || !jd_file_check(&f, NULL, err, sizeof err)) fail_msg("%s", err);
    const JdRecord *d = nth(&f, 0);
    assert_int_equal(d->id, JD_DEBUG_INFO);
    /* a row's line is that of the next map pair of the same method (the
     * pairs end their bytecodes' code), in that method's file */
    static const struct {
        uint64_t off;
        uint32_t line;
        const char *file;
    } want[] = {
        { 0x00, 10, "Foo.som" }, { 0x08, 11, "Foo.som" }, { 0x10, 21, "Bar.som" }, { 0x18, 22, "Bar.som" },
        { 0x20, 31, "Baz.som" }, { 0x28, 22, "Bar.som" }, { 0x30, 12, "Foo.som" }, { 0x80, 12, "Foo.som" },
    };
    assert_int_equal(d->nrows, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < d->nrows; i++) {
        assert_int_equal(d->rows[i].addr, lm.code_start + want[i].off);
        assert_int_equal(d->rows[i].line, want[i].line);
        assert_string_equal(d->rows[i].file, want[i].file);
    }
    const JdRecord *l = nth(&f, 1);
    assert_int_equal(l->id, JD_LOAD);
    assert_string_equal(l->name, "Foo>>outer");
    jd_file_free(&f);
}

static void jitdump_open_says_why_it_cannot_create_the_file(void **state)
{
    (void)state;
    char err[512], want[128];
    assert_null(prof_jitdump_open("/nonexistent-dir", err, sizeof err));
    snprintf(want, sizeof want, "cannot create the jitdump /nonexistent-dir/jit-%d.dump: No such file or directory",
             (int)getpid());
    assert_non_null(strstr(err, want));
    assert_string_equal(prof_jitdump_path(), "");
}

/* Writes bytes [0, n) of data to path, with `patch` bytes at `at` replaced. */
static void write_variant(const char *path, const uint8_t *data, size_t n, size_t at, const void *patch, size_t plen)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, at, f), at);
    if (plen) assert_int_equal(fwrite(patch, 1, plen, f), plen);
    if (n > at + plen) assert_int_equal(fwrite(data + at + plen, 1, n - at - plen, f), n - at - plen);
    fclose(f);
}

static void expect_rejected(const char *path, const char *why)
{
    JdFile f;
    char err[512];
    bool ok = jd_file_read(path, &f, err, sizeof err) && jd_file_check(&f, NULL, err, sizeof err);
    jd_file_free(&f);
    assert_false(ok);
    if (!strstr(err, why)) fail_msg("expected '%s' in: %s", why, err);
}

/* The checker the end-to-end tests rely on catches what a broken writer
 * would produce. */
static void the_reader_rejects_broken_dumps(void **state)
{
    (void)state;
    char err[512], path[600], bad[600];
    assert_non_null(prof_jitdump_open(tmpdir, err, sizeof err));
    snprintf(path, sizeof path, "%s", prof_jitdump_path());
    snprintf(bad, sizeof bad, "%s/bad.dump", tmpdir);
    static Piece m;
    static const uint32_t map[] = { 58, 0 }, lines[] = { 0, 3 };
    ProfCodeLoad lm = piece_load(&m, PROF_CODE_METHOD, "Foo>>baz", 32);
    lm.map = map;
    lm.map_count = 1;
    lm.lines = lines;
    lm.line_count = 1;
    lm.source = "Foo.som";
    prof_code_load(&lm);
    prof_code_move(lm.start, 0x7000, 256);
    prof_jitdump_close();

    JdFile f;
    if (!jd_file_read(path, &f, err, sizeof err) || !jd_file_check(&f, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(f.nrecs - f.unwinding_infos, 4); /* debug info, load, move, close (and the load's unwinding) */
    const JdRecord *d = nth(&f, 0), *l = nth(&f, 1), *mv = nth(&f, 2);

    write_variant(bad, f.data, f.size - 3, f.size - 3, NULL, 0);
    expect_rejected(bad, "stray bytes");
    uint32_t word = 0x4454694a; /* the magic byte-swapped */
    write_variant(bad, f.data, f.size, 0, &word, 4);
    expect_rejected(bad, "magic");
    word = l->total_size + 1; /* the load claims a byte more */
    write_variant(bad, f.data, f.size, l->offset + 4, &word, 4);
    expect_rejected(bad, "");
    uint64_t q = 99; /* the move names a load that never was */
    write_variant(bad, f.data, f.size, mv->offset + 56, &q, 8);
    expect_rejected(bad, "names no earlier LOAD");
    q = l->code_addr + 8; /* the move starts where the code is not */
    write_variant(bad, f.data, f.size, mv->offset + 32, &q, 8);
    expect_rejected(bad, "MOVE at");
    q = l->code_addr - 16; /* a debug row before its code */
    write_variant(bad, f.data, f.size, d->offset + 32, &q, 8);
    expect_rejected(bad, "is not in increasing order inside");
    q = l->code_addr + 1; /* the debug info names other code than the load after it */
    write_variant(bad, f.data, f.size, d->offset + 16, &q, 8);
    expect_rejected(bad, "is not followed by the LOAD of that code");
    /* the debug info after its load instead of before (with the load's
     * timestamp, so only the order is wrong) */
    uint8_t *late = malloc(d->total_size);
    memcpy(late, f.data + d->offset, d->total_size);
    memcpy(late + 8, &l->timestamp, 8);
    FILE *out = fopen(bad, "wb");
    fwrite(f.data, 1, 40, out);
    fwrite(f.data + l->offset, 1, l->total_size, out);
    fwrite(late, 1, d->total_size, out);
    fwrite(f.data + mv->offset, 1, f.size - mv->offset, out);
    fclose(out);
    free(late);
    expect_rejected(bad, "is not followed by the LOAD of that code");
    jd_file_free(&f);
}

/* -- The live-code table ---------------------------------------------------------- */

#define SHADOW_SLOTS 48

static void livecode_agrees_with_a_shadow_model_through_puts_moves_and_takes(void **state)
{
    (void)state;
    ProfLiveCode t = { 0 };
    uint64_t shadow[SHADOW_SLOTS] = { 0 }; /* index of the piece at address (k + 1) * 16, 0 = none */
    srand(20261121);
    uint64_t next = 1;
    for (int step = 0; step < 200000; step++) {
        uint64_t a = (uint64_t)(rand() % SHADOW_SLOTS), b = (uint64_t)(rand() % SHADOW_SLOTS);
        uint64_t addr_a = (a + 1) * 16, addr_b = (b + 1) * 16;
        char name[32];
        switch (rand() % 3) {
        case 0:
            snprintf(name, sizeof name, "piece %llu", (unsigned long long)next);
            assert_true(prof_livecode_put(&t, &(ProfLiveEntry){ .start = addr_a, .index = next, .name = name }));
            shadow[a] = next++;
            break;
        case 1:
            assert_int_equal(prof_livecode_move(&t, addr_a, addr_b), shadow[a] != 0);
            if (shadow[a] && a != b) {
                shadow[b] = shadow[a];
                shadow[a] = 0;
            }
            break;
        default:
            assert_int_equal(prof_livecode_take(&t, addr_a), shadow[a] != 0);
            shadow[a] = 0;
            break;
        }
        size_t live = 0;
        for (int k = 0; k < SHADOW_SLOTS; k++) {
            const ProfLiveEntry *e = prof_livecode_get(&t, (uint64_t)(k + 1) * 16);
            if (!shadow[k]) {
                assert_null(e);
                continue;
            }
            live++;
            assert_non_null(e);
            assert_int_equal(e->index, shadow[k]);
            snprintf(name, sizeof name, "piece %llu", (unsigned long long)shadow[k]);
            assert_string_equal(e->name, name);
        }
        assert_int_equal(t.by_start.count, live);
    }
    prof_livecode_clear(&t);
    assert_null(prof_livecode_get(&t, 16));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(perf_map_has_a_line_per_load_and_per_move_and_none_per_free),
        cmocka_unit_test(perf_map_open_says_why_it_cannot_create_the_file),
        cmocka_unit_test(jitdump_writes_debug_info_load_move_and_close),
        cmocka_unit_test(jitdump_open_says_why_it_cannot_create_the_file),
        cmocka_unit_test(perf_map_cuts_a_piece_with_inlined_methods_into_consecutive_symbols),
        cmocka_unit_test(jitdump_debug_info_gives_inlined_ranges_their_methods_file_and_line),
        cmocka_unit_test(the_reader_rejects_broken_dumps),
        cmocka_unit_test(livecode_agrees_with_a_shadow_model_through_puts_moves_and_takes),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
