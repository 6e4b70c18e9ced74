/*
 * Inlined methods seen through, end to end without a JIT (issue 26): pieces
 * with synthetic inline scopes go through the real code log writer
 * (profiler/codelog_writer.c) into a buffer laid out as the export's log,
 * come back through the real reader (report/codelog_reader.c) into a
 * timeline (report/codemap.c), and synthetic samples are resolved
 * (report/resolve.c) into a Profile whose every rendering is checked: the
 * text report's rows and ranges, folded stacks, pprof (decoded here, and by
 * `go tool pprof -traces` when go is installed), the flame graph, and
 * --debug-resolutions. Damaged and oversized inline sections are rejected
 * or cut as proto/export.h says, and checkpoints restate them.
 *
 * The pieces (offsets from the piece's start; instructions from +0x30):
 *
 *   Foo>>outer at ZONE + 0x1000, 0x100 bytes, its own code but
 *     [0x40, 0x50) Bar>>inner (inlined at Foo's bc 2)
 *     [0x50, 0x58) Baz>>leaf  (inlined into Bar>>inner at Bar's bc 3)
 *     [0x58, 0x60) Bar>>inner again
 *   Main>>run at ZONE + 0x2000, 0x100 bytes, [0x40, 0x60) Helper>>call
 *     (inlined at Main's bc 7): the caller of every whole stack here.
 */
#include "profiler/codelog_writer.h"
#include "profiler/inimage_profile.h"
#include "proto/profile.pb-c.h"
#include "report/codelog_reader.h"
#include "report/codemap.h"
#include "report/report.h"
#include "report/resolve.h"
#include "report/samples.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#define RING (64u << 10)
#define ZONE 0x7f0000100000ull
#define ZONE_SIZE 0x10000u
#define OUTER (ZONE + 0x1000)
#define MAIN (ZONE + 0x2000)

/* -- The pieces ------------------------------------------------------------------ */

static const uint32_t outer_map[] = {0x38, 2, 0x40, 0, 0x48, 3, 0x50, 0, 0x54, 1, 0x58, 5, 0x60, 4, 0x70, 9};
static const uint32_t outer_lines[] = {0, 10, 4, 11, 9, 12};
static const uint32_t inner_lines[] = {0, 20, 3, 21, 5, 22};
static const uint32_t leaf_lines[] = {0, 30, 1, 31};
static const uint32_t frame_rule[] = {0, PROF_UNWIND_FRAME};
static const ProfInlineScope outer_scopes[] = {
    {.name = "Bar>>inner", .source = "Bar.som", .lines = inner_lines, .line_count = 3, .bytecode_size = 8,
     .call_bcpc = 2, .parent = -1},
    {.name = "Baz>>leaf", .source = "Baz.som", .lines = leaf_lines, .line_count = 2, .bytecode_size = 3,
     .call_bcpc = 3, .parent = 0},
};
static const ProfInlineRange outer_ranges[] = {{0x40, 0x50, 0}, {0x50, 0x58, 1}, {0x58, 0x60, 0}};

static ProfCodeLoad outer_load(void)
{
    return (ProfCodeLoad){
        .kind = PROF_CODE_METHOD, .name = "Foo>>outer", .start = OUTER, .size = 0x100, .code_start = OUTER + 0x30,
        .map = outer_map, .map_count = 8, .source = "Foo.som", .lines = outer_lines, .line_count = 3,
        .bytecode_size = 10, .unwind = frame_rule, .unwind_count = 1,
        .scopes = outer_scopes, .scope_count = 2, .ranges = outer_ranges, .range_count = 3,
    };
}

static const uint32_t main_map[] = {0x38, 6, 0x40, 0, 0x50, 1, 0x60, 8};
static const uint32_t main_lines[] = {0, 40, 7, 41};
static const uint32_t helper_lines[] = {0, 50, 1, 51};
static const ProfInlineScope main_scopes[] = {
    {.name = "Helper>>call", .source = "Helper.som", .lines = helper_lines, .line_count = 2, .bytecode_size = 4,
     .call_bcpc = 7, .parent = -1},
};
static const ProfInlineRange main_ranges[] = {{0x40, 0x60, 0}};

static ProfCodeLoad main_load(void)
{
    return (ProfCodeLoad){
        .kind = PROF_CODE_METHOD, .name = "Main>>run", .start = MAIN, .size = 0x100, .code_start = MAIN + 0x30,
        .map = main_map, .map_count = 4, .source = "Main.som", .lines = main_lines, .line_count = 2,
        .bytecode_size = 9, .unwind = frame_rule, .unwind_count = 1,
        .scopes = main_scopes, .scope_count = 1, .ranges = main_ranges, .range_count = 1,
    };
}

/* -- A log in a buffer -------------------------------------------------------- */

typedef struct Rig {
    uint8_t *mem;
    size_t size;
    ProfCodeLog w;
    ReportCodeLog r;
    ReportCodeMap *map;
    uint64_t now;
} Rig;

static bool read_mem(void *ctx, uint64_t off, void *buf, size_t len)
{
    Rig *g = ctx;
    if (off > g->size || len > g->size - off)
        return false;
    memcpy(buf, g->mem + off, len);
    return true;
}

static int writer_warnings;
static void no_warning(const char *msg)
{
    (void)msg;
    writer_warnings++;
}

static Rig *rig_new(void)
{
    Rig *g = calloc(1, sizeof *g);
    g->size = prof_codelog_region_bytes(RING);
    g->mem = aligned_alloc(64, g->size);
    memset(g->mem, 0xa5, g->size);
    char err[256];
    assert_true(prof_codelog_init(&g->w, g->mem, g->size, RING, ZONE, ZONE + ZONE_SIZE, err, sizeof err));
    g->w.warn = no_warning;
    g->now = 1000;
    prof_codelog_checkpoint_begin(&g->w, g->now);
    prof_codelog_checkpoint_end(&g->w, g->now);
    g->map = report_codemap_new();
    assert_true(report_codelog_open(&g->r, g->size, read_mem, g, err, sizeof err));
    return g;
}

static void rig_free(Rig *g)
{
    prof_codelog_release(&g->w);
    report_codelog_close(&g->r);
    report_codemap_free(g->map);
    free(g->mem);
    free(g);
}

static void poll_ok(Rig *g)
{
    char warn[256];
    report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    if (warn[0])
        fail_msg("unexpected warning: %s", warn);
}

static void load(Rig *g, const ProfCodeLoad *e)
{
    g->now += 10;
    prof_codelog_load(&g->w, g->now, e);
}

/* The position of the last record written. */
static uint64_t last_record(Rig *g)
{
    uint64_t p = 0, last = 0;
    while (p < g->w.end) {
        uint32_t size;
        memcpy(&size, g->w.ring + (p & (RING - 1)), 4);
        last = p;
        p += size;
    }
    return last;
}

/* Rewrites bytes of the record at pos (not wrapping) and its checksum, so
 * only the reader's checks of the content can catch what changed. */
static void patch_record(Rig *g, uint64_t pos, size_t at, const void *bytes, size_t n)
{
    uint8_t *rec = g->w.ring + (pos & (RING - 1));
    uint32_t size;
    memcpy(&size, rec, 4);
    assert_true(at + n <= size);
    memcpy(rec + at, bytes, n);
    uint32_t sum = prof_code_log_checksum(rec + 8, size - 8);
    memcpy(rec + 4, &sum, 4);
}

/* Where the inline section of the LOAD at pos starts, from the record's start. */
static size_t inline_offset(Rig *g, uint64_t pos)
{
    const uint8_t *rec = g->w.ring + (pos & (RING - 1));
    ProfCodeLoadRecord l;
    memcpy(&l, rec + sizeof(ProfCodeRecord), sizeof l);
    return sizeof(ProfCodeRecord) + sizeof l + 8ull * l.map_count + 8ull * l.line_count + l.name_len + 1 +
           l.source_len + 1 + 8ull * l.unwind_count;
}

static uint16_t record_flags(Rig *g, uint64_t pos)
{
    ProfCodeRecord h;
    memcpy(&h, g->w.ring + (pos & (RING - 1)), sizeof h);
    return h.flags;
}

/* -- The timeline's chains ---------------------------------------------------- */

static void the_chain_at_an_offset_names_every_inlined_frame_at_its_bytecodes(void **state)
{
    (void)state;
    Rig *g = rig_new();
    ProfCodeLoad o = outer_load();
    load(g, &o);
    poll_ok(g);
    assert_int_equal(g->r.stats.inlined, 1);
    ReportCodeHit hit;
    assert_int_equal(report_codemap_resolve(g->map, g->now, OUTER + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                     REPORT_CODE_FOUND);
    assert_int_equal(hit.scope, 1);
    /* the hit is Foo>>outer's frame: at the send it inlined (bc 2, line 10) */
    assert_int_equal(hit.bc_from, 2);
    assert_int_equal(hit.bc_to, 2);
    assert_int_equal(hit.line, 10);
    ReportInlineFrame c[8];
    size_t n = report_codemap_inline_chain(hit.piece, 0x52, c, 8);
    assert_int_equal(n, 3);
    /* Baz>>leaf between its pairs at 0x50 (bc 0) and 0x54 (bc 1) */
    assert_int_equal(c[0].scope, 1);
    assert_int_equal(c[0].bc_from, 1);
    assert_int_equal(c[0].bc_to, 1);
    assert_int_equal(c[0].line, 31);
    assert_int_equal(c[1].scope, 0); /* Bar>>inner at the send of Baz, bc 3 */
    assert_int_equal(c[1].bc_from, 3);
    assert_int_equal(c[1].line, 21);
    assert_int_equal(c[2].scope, -1);
    assert_int_equal(c[2].bc_from, 2);
    /* Bar>>inner's pairs in both its ranges are its own: 0x44 lies between
     * bc 0 (0x40) and bc 3 (0x48), 0x5c past bc 5 (0x58), to its end */
    n = report_codemap_inline_chain(hit.piece, 0x44, c, 8);
    assert_int_equal(n, 2);
    assert_int_equal(c[0].bc_from, 1);
    assert_int_equal(c[0].bc_to, 3);
    n = report_codemap_inline_chain(hit.piece, 0x5c, c, 8);
    assert_int_equal(c[0].bc_from, 6);
    assert_int_equal(c[0].bc_to, 7);
    /* Foo>>outer's own code skips the inlined pairs: 0x64 is past its
     * pair at 0x60 (bc 4) and before 0x70 (bc 9) */
    n = report_codemap_inline_chain(hit.piece, 0x64, c, 8);
    assert_int_equal(n, 1);
    assert_int_equal(c[0].bc_from, 5);
    assert_int_equal(c[0].bc_to, 9);
    /* a room of one keeps the piece's own method */
    n = report_codemap_inline_chain(hit.piece, 0x52, c, 1);
    assert_int_equal(n, 1);
    assert_int_equal(c[0].scope, -1);
    rig_free(g);
}

/* -- Resolution and every output ---------------------------------------------- */

typedef struct Resolved {
    Profile *p;
    char *debug;
} Resolved;

/* A whole stack: Foo>>outer's frame at pc (rule FRAME: its caller is in
 * st[]), called from Main>>run's inlined Helper>>call. */
static void add_whole(SampleStore *st, uint64_t t, uint64_t pc)
{
    ProfRawStack raw;
    memset(&raw, 0, sizeof raw);
    raw.time_ns = t;
    raw.tid = 7;
    raw.mode = PROF_RAW_MACHINE;
    raw.top_pc = pc;
    raw.top_sp = 0x7ffd0000;
    raw.nst = 1;
    raw.st[0] = MAIN + 0x50;
    assert_true(report_samples_add_raw(st, &raw));
}

/* 30 samples in Foo>>outer's own code before the inlined ones, 10 in Bar>>inner, 20
 * in Baz>>leaf, 40 in Foo>>outer after them; and 5 without a walked stack in
 * Baz>>leaf. */
static Resolved resolve_all(Rig *g)
{
    SampleStore st = {0};
    uint64_t t = g->now + 100;
    for (int i = 0; i < 30; i++)
        add_whole(&st, t++, OUTER + 0x34);
    for (int i = 0; i < 10; i++)
        add_whole(&st, t++, OUTER + 0x44);
    for (int i = 0; i < 20; i++)
        add_whole(&st, t++, OUTER + 0x52);
    for (int i = 0; i < 40; i++)
        add_whole(&st, t++, OUTER + 0x64);
    uint64_t pc = OUTER + 0x52;
    for (int i = 0; i < 5; i++)
        assert_true(report_samples_add(&st, t++, 7, 0, &pc, 1));
    for (size_t i = 0; i < st.n; i++)
        st.v[i].weight = 1;
    Resolved r = {report_profile_new(), NULL};
    ReportHeader h = {.vm_path = "/bin/stvm", .seconds = 1.0, .requested_hz = 105};
    report_profile_set_header(r.p, &h);
    size_t dlen = 0;
    FILE *debug = open_memstream(&r.debug, &dlen);
    ResolveCode code = {.map = g->map, .zone_start = ZONE, .zone_end = ZONE + ZONE_SIZE, .debug = debug,
                        .debug_all_frames = true};
    report_resolve_samples(r.p, NULL, &st, &code);
    fclose(debug);
    assert_int_equal(code.resolved, 105);
    report_samples_free(&st);
    return r;
}

static char *render(bool (*write)(FILE *, const Profile *, char *, size_t), const Profile *p)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_true(write(f, p, err, sizeof err));
    fclose(f);
    return buf;
}

static bool write_text(FILE *f, const Profile *p, char *err, size_t errlen)
{
    ReportTextOptions opt = {.range_min_samples = 5, .lines = true};
    return report_write_text(f, p, &opt, err, errlen);
}

static bool write_flame(FILE *f, const Profile *p, char *err, size_t errlen)
{
    return report_write_flamegraph(f, p, NULL, err, errlen);
}

static Resolved loaded_and_resolved(Rig **out)
{
    Rig *g = rig_new();
    ProfCodeLoad o = outer_load(), m = main_load();
    load(g, &o);
    load(g, &m);
    poll_ok(g);
    *out = g;
    return resolve_all(g);
}

static void the_text_report_makes_an_inlined_method_a_row_with_its_own_ranges(void **state)
{
    (void)state;
    Rig *g;
    Resolved r = loaded_and_resolved(&g);
    char *text = render(write_text, r.p);
    printf("%s", text);
    /* rows by leaf: Foo>>outer 70, Baz>>leaf 25, Bar>>inner 10 */
    assert_non_null(strstr(text, "\tFoo>>outer\t(70)"));
    assert_non_null(strstr(text, "\tBaz>>leaf (inlined into Foo>>outer)\t(25)"));
    assert_non_null(strstr(text, "\tBar>>inner (inlined into Foo>>outer)\t(10)"));
    /* each with its own bytecode ranges and lines: Foo>>outer's without
     * the pairs of the code inlined into it */
    const char *foo = strstr(text, "\tFoo>>outer\t(70)");
    assert_non_null(strstr(foo, "\t0->2  line 10\t(30)"));
    assert_non_null(strstr(foo, "\t5->9  lines 11-12\t(40)"));
    assert_non_null(strstr(text, "\t1->1  line 31\t(25)"));
    assert_non_null(strstr(text, "\t1->3  lines 20-21\t(10)"));
    free(text);
    free(r.debug);
    report_profile_free(r.p);
    rig_free(g);
}

static void folded_stacks_and_the_flame_graph_show_the_inlined_frames(void **state)
{
    (void)state;
    Rig *g;
    Resolved r = loaded_and_resolved(&g);
    char *folded = render(report_write_folded, r.p);
    printf("%s", folded);
    assert_non_null(strstr(folded, "Main>>run;Helper>>call (inlined);Foo>>outer;Bar>>inner (inlined);"
                                   "Baz>>leaf (inlined) 20\n"));
    assert_non_null(strstr(folded, "Main>>run;Helper>>call (inlined);Foo>>outer;Bar>>inner (inlined) 10\n"));
    assert_non_null(strstr(folded, "Main>>run;Helper>>call (inlined);Foo>>outer 70\n"));
    /* no walk: the inlined frames, then the partial-stack marker */
    assert_non_null(strstr(folded, "[unknown: Smalltalk callers not walked (stacks partial)];Foo>>outer;"
                                   "Bar>>inner (inlined);Baz>>leaf (inlined) 5\n"));
    char *svg = render(write_flame, r.p);
    assert_non_null(strstr(svg, "Baz&gt;&gt;leaf (inlined)"));
    assert_non_null(strstr(svg, "Helper&gt;&gt;call (inlined)"));
    free(svg);
    free(folded);
    free(r.debug);
    report_profile_free(r.p);
    rig_free(g);
}

static void debug_resolutions_add_a_line_per_inlined_frame(void **state)
{
    (void)state;
    Rig *g;
    Resolved r = loaded_and_resolved(&g);
    /* the leaf's piece at Foo's bc 2, then Baz and Bar, innermost first */
    const char *leaf_line = NULL;
    char expect[128];
    snprintf(expect, sizeof expect, " 7 m 0x%llx found", (unsigned long long)(OUTER + 0x52));
    for (const char *at = r.debug; !leaf_line && (at = strstr(at, expect)); at++)
        leaf_line = at;
    assert_non_null(leaf_line);
    char expect_m[128], expect_i1[160], expect_i2[160];
    snprintf(expect_m, sizeof expect_m, " 7 m 0x%llx found 0x%llx 2 2 Foo>>outer\n",
             (unsigned long long)(OUTER + 0x52), (unsigned long long)OUTER);
    snprintf(expect_i1, sizeof expect_i1, " 7 i 0x%llx found 0x%llx 1 1 Baz>>leaf (inlined into Foo>>outer)\n",
             (unsigned long long)(OUTER + 0x52), (unsigned long long)OUTER);
    snprintf(expect_i2, sizeof expect_i2, " 7 i 0x%llx found 0x%llx 3 3 Bar>>inner (inlined into Foo>>outer)\n",
             (unsigned long long)(OUTER + 0x52), (unsigned long long)OUTER);
    assert_memory_equal(leaf_line, expect_m, strlen(expect_m));
    const char *next = strchr(leaf_line, '\n') + 1;
    next = strchr(next, ' ');
    assert_memory_equal(next, expect_i1, strlen(expect_i1));
    next = strchr(next + 1, '\n') + 1;
    next = strchr(next, ' ');
    assert_memory_equal(next, expect_i2, strlen(expect_i2));
    /* the caller frame too (all frames asked for): Main>>run at bc 7 and its Helper>>call
     * past its pair at 0x50 (bc 1), to its end (bc 3) */
    snprintf(expect_i1, sizeof expect_i1, " 7 i 0x%llx found 0x%llx 2 3 Helper>>call (inlined into Main>>run)\n",
             (unsigned long long)(MAIN + 0x50), (unsigned long long)MAIN);
    if (!strstr(r.debug, expect_i1))
        fail_msg("no \"%s\" in\n%s", expect_i1, r.debug);
    free(r.debug);
    report_profile_free(r.p);
    rig_free(g);
}

/* The pprof file, gunzipped and decoded. */
static Perftools__Profiles__Profile *pprof_of(const Profile *p, const char *path)
{
    char err[256];
    assert_true(report_write_pprof(path, p, err, sizeof err));
    gzFile z = gzopen(path, "rb");
    assert_non_null(z);
    size_t cap = 1 << 20;
    uint8_t *buf = malloc(cap);
    int n = gzread(z, buf, (unsigned)cap);
    gzclose(z);
    assert_true(n > 0 && (size_t)n < cap);
    Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, (size_t)n, buf);
    free(buf);
    assert_non_null(pb);
    return pb;
}

static const char *fn_name(const Perftools__Profiles__Profile *pb, uint64_t fid)
{
    for (size_t i = 0; i < pb->n_function; i++)
        if (pb->function[i]->id == fid)
            return pb->string_table[pb->function[i]->name];
    return "?";
}

static const Perftools__Profiles__Location *location(const Perftools__Profiles__Profile *pb, uint64_t id)
{
    for (size_t i = 0; i < pb->n_location; i++)
        if (pb->location[i]->id == id)
            return pb->location[i];
    return NULL;
}

static bool go_on_path(void) { return system("command -v go >/dev/null 2>&1") == 0; }

static void pprof_makes_inlined_frames_lines_of_one_location(void **state)
{
    (void)state;
    Rig *g;
    Resolved r = loaded_and_resolved(&g);
    char path[] = "/tmp/test_inline_pprof_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    Perftools__Profiles__Profile *pb = pprof_of(r.p, path);
    /* the sample whose leaf is Baz>>leaf: two Locations, (Baz, Bar, Foo)
     * and (Helper, Main), the innermost Line first, the caller last */
    bool seen = false;
    for (size_t i = 0; i < pb->n_sample; i++) {
        const Perftools__Profiles__Sample *s = pb->sample[i];
        const Perftools__Profiles__Location *leaf = location(pb, s->location_id[0]);
        assert_non_null(leaf);
        if (s->value[0] != 20)
            continue;
        seen = true;
        assert_int_equal(s->n_location_id, 2);
        assert_int_equal(leaf->n_line, 3);
        assert_int_equal(leaf->address, OUTER + 0x52);
        assert_string_equal(fn_name(pb, leaf->line[0]->function_id), "Baz>>leaf (inlined)");
        assert_int_equal(leaf->line[0]->line, 31);
        assert_string_equal(fn_name(pb, leaf->line[1]->function_id), "Bar>>inner (inlined)");
        assert_int_equal(leaf->line[1]->line, 21);
        assert_string_equal(fn_name(pb, leaf->line[2]->function_id), "Foo>>outer");
        assert_int_equal(leaf->line[2]->line, 10);
        const Perftools__Profiles__Location *caller = location(pb, s->location_id[1]);
        assert_int_equal(caller->n_line, 2);
        assert_string_equal(fn_name(pb, caller->line[0]->function_id), "Helper>>call (inlined)");
        assert_string_equal(fn_name(pb, caller->line[1]->function_id), "Main>>run");
        /* the leaf's bytecode range label: Baz>>leaf's */
        bool ranged = false;
        for (size_t k = 0; k < s->n_label; k++)
            if (strcmp(pb->string_table[s->label[k]->key], "bytecodes") == 0)
                ranged = strcmp(pb->string_table[s->label[k]->str], "1->1") == 0;
        assert_true(ranged);
    }
    assert_true(seen);
    perftools__profiles__profile__free_unpacked(pb, NULL);
    if (!go_on_path()) {
        printf("go tool pprof: skipped: go not installed\n");
    } else {
        /* the real consumer: one trace with the inlined frames */
        char cmd[512], line[1024];
        snprintf(cmd, sizeof cmd, "go tool pprof -traces '%s' 2>&1", path);
        FILE *out = popen(cmd, "r");
        assert_non_null(out);
        int state_ = 0; /* 1: Baz seen, 2: then Bar, 3: then Foo, 4: then Helper, 5: then Main */
        /* (go's pprof shows names without their parenthesised tail, and
         * marks inlined frames "(inline)" itself) */
        static const char *const order[] = {"Baz>>leaf", "Bar>>inner", "Foo>>outer", "Helper>>call", "Main>>run"};
        static const bool inlined[] = {true, true, false, true, false};
        while (fgets(line, sizeof line, out)) {
            fputs(line, stdout);
            if (strstr(line, "-----------"))
                state_ = state_ == 5 ? 5 : 0;
            else if (state_ < 5 && strstr(line, order[state_]) && (strstr(line, "(inline)") != NULL) == inlined[state_])
                state_++;
            else if (state_ < 5)
                state_ = 0;
        }
        assert_int_equal(pclose(out), 0);
        assert_int_equal(state_, 5);
    }
    unlink(path);
    free(r.debug);
    report_profile_free(r.p);
    rig_free(g);
}

/* vmprofd diff and merge on such profiles (VMPROFD: the binary; the
 * test says it skipped without it): diff's rows are the text report's,
 * an inlined method keyed by what it was inlined into; merge keeps the
 * multi-line Locations, so its output diffs the same. */
static void vmprofd_diff_and_merge_key_inlined_methods_as_the_text_report_does(void **state)
{
    (void)state;
    const char *vmprofd = getenv("VMPROFD");
    if (!vmprofd || access(vmprofd, X_OK) != 0) {
        printf("vmprofd diff: skipped: VMPROFD not set\n");
        return;
    }
    Rig *g;
    Resolved r = loaded_and_resolved(&g);
    char base[] = "/tmp/test_inline_base_XXXXXX", merged[64];
    int fd = mkstemp(base);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_true(report_write_pprof(base, r.p, err, sizeof err));
    snprintf(merged, sizeof merged, "%s.merged.pb.gz", base);
    char cmd[1024], line[1024];
    snprintf(cmd, sizeof cmd, "'%s' merge '%s' '%s' -o '%s' 2>&1 && '%s' diff '%s' '%s' 2>&1", vmprofd, base, base,
             merged, vmprofd, base, merged);
    FILE *out = popen(cmd, "r");
    assert_non_null(out);
    bool baz = false, bar = false, baz_range = false;
    while (fgets(line, sizeof line, out)) {
        fputs(line, stdout);
        /* the same shares in both: 25 and 10 of 105 samples */
        baz |= strstr(line, "23.81%    23.81%") && strstr(line, "Baz>>leaf (inlined into Foo>>outer)\n");
        bar |= strstr(line, "9.52%     9.52%") && strstr(line, "Bar>>inner (inlined into Foo>>outer)\n");
        baz_range |= strstr(line, "    1->1\n") != NULL;
    }
    assert_int_equal(pclose(out), 0);
    assert_true(baz);
    assert_true(bar);
    assert_true(baz_range);
    unlink(base);
    unlink(merged);
    free(r.debug);
    report_profile_free(r.p);
    rig_free(g);
}

/* The in-VM profiler (VMProfiler's report, profiler/inimage_profile.c)
 * takes the code events as a sink of its own: the same frames and rows. */
static void the_in_vm_profiler_shows_the_same_inlined_frames_and_rows(void **state)
{
    (void)state;
    char err[256];
    ProfInimageVm vm = {.zone_start = ZONE, .zone_end = ZONE + ZONE_SIZE};
    assert_true(prof_inimage_begin(&vm, err, sizeof err));
    ProfCodeLoad o = outer_load();
    prof_code_load(&o);
    ProfSample s[8];
    for (int i = 0; i < 8; i++)
        s[i] = (ProfSample){.time_ns = prof_clock_ns(), .pc = i < 6 ? OUTER + 0x52 : OUTER + 0x44,
                            .cpu_ns = 1000000 /* a period at 1000 Hz: each weighs one sample */};
    assert_true(prof_inimage_end(err, sizeof err));
    ProfInimageReportOptions opt = {.requested_hz = 1000, .seconds = 1, .folded = true};
    size_t len;
    char *folded = prof_inimage_report(s, 8, &opt, &len, err, sizeof err);
    if (!folded) {
        fail_msg("%s", err);
        return; /* fail_msg does not return; this tells the compiler so */
    }
    printf("%s", folded);
    assert_non_null(strstr(folded, ";Foo>>outer;Bar>>inner (inlined);Baz>>leaf (inlined) 6\n"));
    assert_non_null(strstr(folded, ";Foo>>outer;Bar>>inner (inlined) 2\n"));
    free(folded);

    assert_true(prof_inimage_begin(&vm, err, sizeof err));
    prof_code_load(&o);
    for (int i = 0; i < 8; i++)
        s[i].time_ns = prof_clock_ns();
    assert_true(prof_inimage_end(err, sizeof err));
    opt.folded = false;
    char *text = prof_inimage_report(s, 8, &opt, &len, err, sizeof err);
    if (!text) {
        fail_msg("%s", err);
        return;
    }
    assert_non_null(strstr(text, "\tBaz>>leaf (inlined into Foo>>outer)\t"));
    assert_non_null(strstr(text, "\tBar>>inner (inlined into Foo>>outer)\t"));
    assert_null(strstr(text, "\tFoo>>outer\t")); /* no sample in its own code */
    free(text);
}

/* -- Checkpoints, truncation, damage -------------------------------------------- */

static void a_checkpoint_restates_the_inline_section(void **state)
{
    (void)state;
    Rig *g = rig_new();
    ProfCodeLoad o = outer_load();
    load(g, &o);
    g->now += 10;
    prof_codelog_checkpoint(&g->w, g->now);
    /* BEGIN, then Foo>>outer's LOAD as in the checkpoint */
    uint64_t cp = g->w.ctl->checkpoint_pos;
    uint32_t size;
    memcpy(&size, g->w.ring + cp, 4);
    uint16_t flags = record_flags(g, cp + size);
    assert_int_equal(flags, PROF_CODE_REC_F_CHECKPOINT | PROF_CODE_REC_F_INLINE);
    /* a reader joining there sees the inlined frames */
    ReportCodeLog late;
    char err[256], warn[256];
    ReportCodeMap *m = report_codemap_new();
    assert_true(report_codelog_open(&late, g->size, read_mem, g, err, sizeof err));
    late.joined = true; /* as a reader that finds the start overwritten would: at the checkpoint */
    late.pos = cp;
    late.mode = REPORT_CODELOG_JOINING;
    report_codelog_poll(&late, m, warn, sizeof warn);
    assert_string_equal(warn, "");
    ReportCodeHit hit;
    assert_int_equal(report_codemap_resolve(m, g->now, OUTER + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                     REPORT_CODE_FOUND);
    assert_int_equal(hit.scope, 1);
    assert_string_equal(hit.piece->scopes[1].name, "Baz>>leaf");
    assert_string_equal(hit.piece->scopes[1].source, "Baz.som");
    report_codelog_close(&late);
    report_codemap_free(m);
    rig_free(g);
}

static void an_oversized_load_loses_scope_lines_first_then_its_inline_section(void **state)
{
    (void)state;
    Rig *g = rig_new();
    /* lines too many for a record of 1/8 of the ring: they go, the scopes stay */
    static uint32_t many[2 * 1200];
    for (uint32_t i = 0; i < 1200; i++) {
        many[2 * i] = i;
        many[2 * i + 1] = 100 + i;
    }
    ProfInlineScope big[2] = {outer_scopes[0], outer_scopes[1]};
    big[0].lines = many;
    big[0].line_count = 1200;
    ProfCodeLoad o = outer_load();
    o.scopes = big;
    load(g, &o);
    uint64_t pos = last_record(g);
    assert_int_equal(record_flags(g, pos), PROF_CODE_REC_F_TRUNCATED | PROF_CODE_REC_F_INLINE);
    poll_ok(g);
    ReportCodeHit hit;
    assert_int_equal(report_codemap_resolve(g->map, g->now, OUTER + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                     REPORT_CODE_FOUND);
    assert_true(hit.piece->truncated);
    assert_int_equal(hit.scope, 1);
    assert_int_equal(hit.piece->scopes[0].nlines, 0);
    assert_int_equal(hit.piece->nlines, 0);

    /* names too long to fit even without lines: the section goes, the piece stays */
    static char names[12][1100];
    ProfInlineScope wide[12];
    ProfInlineRange wide_ranges[12];
    for (int i = 0; i < 12; i++) {
        memset(names[i], 'a' + i, 1099);
        names[i][1099] = 0;
        wide[i] = (ProfInlineScope){.name = names[i], .bytecode_size = 4, .parent = -1};
        wide_ranges[i] = (ProfInlineRange){0x40 + 4u * (uint32_t)i, 0x44 + 4u * (uint32_t)i, (uint32_t)i};
    }
    ProfCodeLoad w = outer_load();
    w.start = OUTER + 0x800;
    w.code_start = w.start + 0x30;
    w.scopes = wide;
    w.scope_count = 12;
    w.ranges = wide_ranges;
    w.range_count = 12;
    load(g, &w);
    pos = last_record(g);
    assert_int_equal(record_flags(g, pos), PROF_CODE_REC_F_TRUNCATED);
    poll_ok(g);
    assert_int_equal(report_codemap_resolve(g->map, g->now, w.start + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                     REPORT_CODE_FOUND);
    assert_int_equal(hit.scope, -1);
    assert_int_equal(hit.piece->nscopes, 0);
    assert_string_equal(hit.piece->name, "Foo>>outer");
    rig_free(g);
}

/* A LOAD whose inline section is damaged (checksum right): the reader
 * refuses it with the reason and waits for a checkpoint. */
static void expect_rejected(void (*damage)(Rig *, uint64_t), const char *why)
{
    Rig *g = rig_new();
    poll_ok(g);
    ProfCodeLoad o = outer_load();
    load(g, &o);
    damage(g, last_record(g));
    char warn[256];
    report_codelog_poll(&g->r, g->map, warn, sizeof warn);
    if (!strstr(warn, why))
        fail_msg("warning \"%s\" does not say \"%s\"", warn, why);
    assert_int_equal(g->r.stats.bad_records, 1);
    assert_int_equal(g->r.mode, REPORT_CODELOG_LOST);
    ReportCodeHit hit;
    assert_int_not_equal(report_codemap_resolve(g->map, g->now, OUTER + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                         REPORT_CODE_FOUND);
    rig_free(g);
}

static void huge_scope_count(Rig *g, uint64_t pos)
{
    ProfCodeInlineHeader h = {.scope_count = 0x10000000u, .range_count = 3};
    patch_record(g, pos, inline_offset(g, pos), &h, sizeof h);
}

static void huge_line_count(Rig *g, uint64_t pos)
{
    uint32_t n = 0x01000000u;
    patch_record(g, pos, inline_offset(g, pos) + sizeof(ProfCodeInlineHeader), &n, sizeof n);
}

static void overlapping_ranges(Rig *g, uint64_t pos)
{
    uint32_t start = 0x48; /* the second range, [0x50, 0x58), now starts inside the first */
    size_t at = inline_offset(g, pos) + sizeof(ProfCodeInlineHeader) + 2 * sizeof(ProfCodeInlineScopeRecord) +
                sizeof(ProfCodeInlineRangeRecord);
    patch_record(g, pos, at, &start, sizeof start);
}

static void range_past_the_piece(Rig *g, uint64_t pos)
{
    uint32_t end = 0x200;
    size_t at = inline_offset(g, pos) + sizeof(ProfCodeInlineHeader) + 2 * sizeof(ProfCodeInlineScopeRecord) +
                2 * sizeof(ProfCodeInlineRangeRecord) + 4;
    patch_record(g, pos, at, &end, sizeof end);
}

static void range_of_no_scope(Rig *g, uint64_t pos)
{
    uint32_t scope = 2;
    size_t at = inline_offset(g, pos) + sizeof(ProfCodeInlineHeader) + 2 * sizeof(ProfCodeInlineScopeRecord) + 8;
    patch_record(g, pos, at, &scope, sizeof scope);
}

static void parents_in_a_cycle(Rig *g, uint64_t pos)
{
    int32_t parent = 1; /* scope 0's parent is scope 1, whose parent is 0 */
    size_t at = inline_offset(g, pos) + sizeof(ProfCodeInlineHeader) + offsetof(ProfCodeInlineScopeRecord, parent);
    patch_record(g, pos, at, &parent, sizeof parent);
}

static void name_not_a_string(Rig *g, uint64_t pos)
{
    uint16_t len = 3; /* "Bar>>inner" claims 3 bytes: no NUL after them */
    size_t at = inline_offset(g, pos) + sizeof(ProfCodeInlineHeader) + offsetof(ProfCodeInlineScopeRecord, name_len);
    patch_record(g, pos, at, &len, sizeof len);
}

/* A reader that does not know the flag (version 5's) decodes a LOAD as
 * this one does without it: up to its counts, the bytes after ignored. So
 * the record without its flag must read as the piece's own method
 * throughout, with nothing else lost. */
static void without_its_flag_the_inline_section_is_bytes_an_older_reader_skips(void **state)
{
    (void)state;
    Rig *g = rig_new();
    poll_ok(g);
    ProfCodeLoad o = outer_load();
    load(g, &o);
    uint64_t pos = last_record(g);
    uint16_t flags = (uint16_t)(record_flags(g, pos) & ~PROF_CODE_REC_F_INLINE);
    patch_record(g, pos, offsetof(ProfCodeRecord, flags), &flags, sizeof flags);
    poll_ok(g);
    ReportCodeHit hit;
    assert_int_equal(report_codemap_resolve(g->map, g->now, OUTER + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                     REPORT_CODE_FOUND);
    assert_int_equal(hit.scope, -1);
    assert_string_equal(hit.piece->name, "Foo>>outer");
    assert_int_equal(hit.piece->nmap, 8);
    assert_int_equal(hit.piece->nunwind, 1);
    /* the whole map is the method's: 0x52 between the pairs at 0x50 and 0x54 */
    assert_int_equal(hit.bc_from, 1);
    assert_int_equal(hit.bc_to, 1);
    rig_free(g);
}

/* What readers would reject is never written: a JIT bug would otherwise
 * make every reader lose the log, and the next checkpoint restate it. The
 * piece's map is left out with it (flag TRUNCATED), so no inlined method's
 * bcpc reads as the piece's own. */
static void the_writer_leaves_out_an_inline_section_readers_would_reject(void **state)
{
    (void)state;
    Rig *g = rig_new();
    poll_ok(g);
    ProfInlineRange overlap[3] = {outer_ranges[0], {0x48, 0x58, 1}, outer_ranges[2]};
    ProfCodeLoad o = outer_load();
    o.ranges = overlap;
    writer_warnings = 0;
    load(g, &o);
    load(g, &o); /* said once */
    assert_int_equal(writer_warnings, 1);
    /* the map left out too: its pairs in the ranges are the inlined methods' */
    assert_int_equal(record_flags(g, last_record(g)), PROF_CODE_REC_F_TRUNCATED);
    poll_ok(g);
    ReportCodeHit hit;
    assert_int_equal(report_codemap_resolve(g->map, g->now, OUTER + 0x52, PROF_CODE_SPACE_MACHINE, &hit),
                     REPORT_CODE_FOUND);
    assert_int_equal(hit.scope, -1);
    assert_int_equal(g->r.stats.bad_records, 0);
    rig_free(g);
}

static void damaged_inline_sections_are_rejected_with_their_reason(void **state)
{
    (void)state;
    expect_rejected(huge_scope_count, "inline scopes and ranges overrun");
    expect_rejected(huge_line_count, "inline lines overrun");
    expect_rejected(overlapping_ranges, "inline ranges overlap");
    expect_rejected(range_past_the_piece, "past the piece");
    expect_rejected(range_of_no_scope, "of no scope");
    expect_rejected(parents_in_a_cycle, "cycle");
    expect_rejected(name_not_a_string, "inline scope name is not a string");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_chain_at_an_offset_names_every_inlined_frame_at_its_bytecodes),
        cmocka_unit_test(the_text_report_makes_an_inlined_method_a_row_with_its_own_ranges),
        cmocka_unit_test(folded_stacks_and_the_flame_graph_show_the_inlined_frames),
        cmocka_unit_test(debug_resolutions_add_a_line_per_inlined_frame),
        cmocka_unit_test(pprof_makes_inlined_frames_lines_of_one_location),
        cmocka_unit_test(vmprofd_diff_and_merge_key_inlined_methods_as_the_text_report_does),
        cmocka_unit_test(the_in_vm_profiler_shows_the_same_inlined_frames_and_rows),
        cmocka_unit_test(a_checkpoint_restates_the_inline_section),
        cmocka_unit_test(an_oversized_load_loses_scope_lines_first_then_its_inline_section),
        cmocka_unit_test(without_its_flag_the_inline_section_is_bytes_an_older_reader_skips),
        cmocka_unit_test(the_writer_leaves_out_an_inline_section_readers_would_reject),
        cmocka_unit_test(damaged_inline_sections_are_rejected_with_their_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
