/*
 * Unit tests for report/: the text report (REPORT.md, every rule), the
 * number formats, bytecode ranges, counters, folded stacks and pprof
 * (decoded back with protoc-c's own unpacker).
 */
#include "report_fixture.h"

#include "proto/profile.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

/* report/format.h is report-internal; its functions are tested through
 * the library they are linked into. */
#include "report/format.h"

/* -- Helpers -------------------------------------------------------------- */

/* Whether want[0..n) occur in text as consecutive whole lines. */
static bool has_block(const char *text, const char *const *want, size_t n)
{
    for (const char *at = text; at && *at;) {
        const char *p = at;
        size_t i = 0;
        for (; i < n; i++) {
            size_t len = strlen(want[i]);
            if (strncmp(p, want[i], len) != 0 || p[len] != '\n')
                break;
            p += len + 1;
        }
        if (i == n)
            return true;
        at = strchr(at, '\n');
        if (at)
            at++;
    }
    return false;
}

static bool has_line(const char *text, const char *line)
{
    return has_block(text, &line, 1);
}

#define assert_block(text, ...)                                                                     \
    do {                                                                                            \
        static const char *const want_[] = {__VA_ARGS__};                                           \
        if (!has_block((text), want_, sizeof want_ / sizeof *want_)) {                              \
            fprintf(stderr, "expected block starting\n  [%s]\nin report:\n%s\n", want_[0], (text)); \
            fail();                                                                                 \
        }                                                                                           \
    } while (0)

static char *main_text(bool lines)
{
    Fixture fx = fixture_new();
    ReportTextOptions opt = {.lines = lines, .range_min_samples = 10};
    char *text = fixture_text(fx.p, &opt);
    report_profile_free(fx.p);
    assert_non_null(text);
    return text;
}

static int use_utc(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    return 0;
}

/* -- Number formats ------------------------------------------------------- */

static void percentages_print_two_decimals_padded_with_100_as_100_0(void **state)
{
    (void)state;
    assert_string_equal(report_format_pct(1, 3).s, "33.33%");
    assert_string_equal(report_format_pct(2, 3).s, "66.67%");
    assert_string_equal(report_format_pct(979, 10000).s, " 9.79%");
    assert_string_equal(report_format_pct(1, 10000).s, " 0.01%");
    assert_string_equal(report_format_pct(0, 5).s, " 0.00%");
    assert_string_equal(report_format_pct(5, 5).s, "100.0%");
    assert_string_equal(report_format_pct(99999, 100000).s, "100.0%"); /* rounds to 100.00 */
    assert_string_equal(report_format_pct(99994, 100000).s, "99.99%");
    assert_string_equal(report_format_pct(3, 0).s, " 0.00%");
    assert_string_equal(report_format_pct(UINT64_MAX, UINT64_MAX).s, "100.0%");
}

static void thousands_separators_and_signed_changes(void **state)
{
    (void)state;
    assert_string_equal(report_format_thousands(0).s, "0");
    assert_string_equal(report_format_thousands(999).s, "999");
    assert_string_equal(report_format_thousands(1000).s, "1,000");
    assert_string_equal(report_format_thousands(3801936).s, "3,801,936");
    assert_string_equal(report_format_thousands(UINT64_MAX).s, "18,446,744,073,709,551,615");
    assert_string_equal(report_format_signed(0).s, "+0");
    assert_string_equal(report_format_signed(157616).s, "+157,616");
    assert_string_equal(report_format_signed(-2425712).s, "-2,425,712");
    assert_string_equal(report_format_signed(INT64_MIN).s, "-9,223,372,036,854,775,808");
}

/* -- Header and totals ---------------------------------------------------- */

static void header_prints_start_counters_date_and_achieved_frequency(void **state)
{
    (void)state;
    char *t = main_text(false);
    /* First lines of the report, exactly. */
    const char *head = "/usr/local/bin/stvm 2017-06-19 22:16:11\n"
                       "eden size: 3,801,936  stack pages: 50  code size: 1,048,576\n"
                       "6.948 seconds; sampling frequency 1439 hz\n";
    assert_memory_equal(t, head, strlen(head));
    free(t);
}

static void samples_split_into_vm_generated_and_vanilla(void **state)
{
    (void)state;
    char *t = main_text(false);
    assert_block(t, "9721 samples in the VM\t(10000 samples in the entire program)  97.21% of total", "",
                 "6020 samples in generated vm code 61.93% of entire vm (60.20% of total)",
                 "3701 samples in vanilla vm code 38.07% of entire vm (37.01% of total)", "");
    free(t);
}

/* -- Ranked tables -------------------------------------------------------- */

static void generated_table_is_ranked_by_count_then_name_with_others_last(void **state)
{
    (void)state;
    char *t = main_text(false);
    assert_block(t, "% of generated vm code (% of total)\t\t\t(samples) (cumulative)",
                 "83.06%    (50.00%)\tInteger>>benchFib\t(5000)\t(83.06%)",
                 "\t58.00%\t0->5\t(2900)\t(58.00%)",
                 "\t12.00%\t6->9\t(600)\t(70.00%)",
                 "\t 8.00%\t9->9\t(400)\t(78.00%)",
                 "\t14.00%\t10->14\t(700)\t(92.00%)",
                 "\t 8.00%\t15->20\t(400)\t(100.0%)",
                 "16.61%    (10.00%)\tObject>>at:put:\t(1000)\t(99.67%)",
                 "\t100.0%\t0->12\t(1000)\t(100.0%)",
                 " 0.17%    ( 0.10%)\t[] in Foo>>bar\t(10)\t(99.83%)",
                 " 0.05%    ( 0.03%)\tAlpha>>x\t(3)\t(99.88%)",
                 " 0.05%    ( 0.03%)\tBeta>>y\t(3)\t(99.93%)",
                 " 0.03%    ( 0.02%)\t+ (closed PIC)\t(2)\t(99.97%)",
                 " 0.03%    ( 0.02%)\t...others...\t(2)\t(100.0%)", "");
    /* Callers are not leaves: a function without leaf samples has no row. */
    assert_null(strstr(t, "Integer>>benchmark"));
    assert_null(strstr(t, "tiny"));
    free(t);
}

static void vanilla_table_merges_addresses_of_one_function(void **state)
{
    (void)state;
    char *t = main_text(false);
    assert_block(t, "% of vanilla vm code (% of total)\t\t\t(samples) (cumulative)",
                 "81.06%    (30.00%)\tinterpret\t(3000)\t(81.06%)",
                 "18.91%    ( 7.00%)\tgc_scavenge_run\t(700)\t(99.97%)",
                 " 0.03%    ( 0.01%)\t...others...\t(1)\t(100.0%)", "");
    assert_null(strstr(t, "\tmain\t"));
    free(t);
}

static void rest_is_grouped_by_function_and_library(void **state)
{
    (void)state;
    char *t = main_text(false);
    assert_block(t, "279 samples in the rest   2.79% of total",
                 "% of rest (% of total)\t\t\t(samples) (cumulative)",
                 "53.76%    ( 1.50%)\tmemcpy [libc.so.6]\t(150)\t(53.76%)",
                 "43.01%    ( 1.20%)\t[vdso]\t(120)\t(96.77%)",
                 " 3.23%    ( 0.09%)\tpage_fault [kernel.kallsyms]\t(9)\t(100.0%)", "", "**Memory**");
    free(t);
}

/* 99 of 10,000 samples outside the VM is under 1%: no rest section. */
static char *rest_text(int rest_samples)
{
    Profile *p = report_profile_new();
    ReportHeader h = fixture_header();
    report_profile_set_header(p, &h);
    ReportFunctionInfo root = {.name = "main", .region = REPORT_REGION_VANILLA, .start = 0x401000, .mapping = -1};
    int main_loc = report_profile_add_location(p, report_profile_add_function(p, &root), 0x401000, 0);
    ReportFunctionInfo interp = {.name = "interpret", .region = REPORT_REGION_VANILLA, .start = 0x402000, .mapping = -1};
    ReportFunctionInfo libc = {.name = "[libc.so.6]", .region = REPORT_REGION_REST, .mapping = -1};
    fixture_add_samples(p, main_loc, report_profile_add_function(p, &interp), 0x402010, 10000 - rest_samples);
    fixture_add_samples(p, main_loc, report_profile_add_function(p, &libc), 0x7fff00000010, rest_samples);
    char *t = fixture_text(p, NULL);
    report_profile_free(p);
    assert_non_null(t);
    return t;
}

static void rest_section_appears_from_one_percent_of_all_samples(void **state)
{
    (void)state;
    char *below = rest_text(99);
    assert_null(strstr(below, "samples in the rest"));
    assert_null(strstr(below, "% of rest"));
    assert_true(has_line(below, "9901 samples in the VM\t(10000 samples in the entire program)  99.01% of total"));
    free(below);
    char *at = rest_text(100);
    assert_block(at, "100 samples in the rest   1.00% of total", "% of rest (% of total)\t\t\t(samples) (cumulative)",
                 "100.0%    ( 1.00%)\t[libc.so.6]\t(100)\t(100.0%)");
    free(at);
}

/* -- Bytecode ranges ------------------------------------------------------ */

static void lines_option_adds_source_lines_to_ranges(void **state)
{
    (void)state;
    char *t = main_text(true);
    assert_block(t, "83.06%    (50.00%)\tInteger>>benchFib\t(5000)\t(83.06%)",
                 "\t58.00%\t0->5  line 3\t(2900)\t(58.00%)",
                 "\t12.00%\t6->9  line 4\t(600)\t(70.00%)",
                 "\t 8.00%\t9->9  line 4\t(400)\t(78.00%)",
                 "\t14.00%\t10->14  lines 5-6\t(700)\t(92.00%)",
                 "\t 8.00%\t15->20  line 7\t(400)\t(100.0%)",
                 /* no line table: the range alone */
                 "16.61%    (10.00%)\tObject>>at:put:\t(1000)\t(99.67%)", "\t100.0%\t0->12\t(1000)\t(100.0%)");
    free(t);
}

static void functions_with_at_most_the_minimum_samples_get_no_ranges(void **state)
{
    (void)state;
    char *t = main_text(false);
    /* [] in Foo>>bar has a map and exactly 10 samples: not "more than 10". */
    assert_block(t, " 0.17%    ( 0.10%)\t[] in Foo>>bar\t(10)\t(99.83%)", " 0.05%    ( 0.03%)\tAlpha>>x\t(3)\t(99.88%)");
    free(t);

    Fixture fx = fixture_new();
    ReportTextOptions opt = {.range_min_samples = 9};
    t = fixture_text(fx.p, &opt);
    report_profile_free(fx.p);
    /* 0x4004 is before the map's only entry (0x10 -> bcpc 2). */
    assert_block(t, " 0.17%    ( 0.10%)\t[] in Foo>>bar\t(10)\t(99.83%)", "\t100.0%\t0->2\t(10)\t(100.0%)",
                 " 0.05%    ( 0.03%)\tAlpha>>x\t(3)\t(99.88%)");
    free(t);
}

/* One method, samples placed on either side of every boundary. */
static void range_boundaries_follow_previous_mcpc_to_this_mcpc(void **state)
{
    (void)state;
    static const ReportMapEntry map[] = {{0x10, 3}, {0x20, 7}, {0x30, 12}};
    Profile *p = report_profile_new();
    ReportHeader h = {.vm_path = "stvm", .seconds = 1.0};
    report_profile_set_header(p, &h);
    ReportFunctionInfo root = {.name = "main", .region = REPORT_REGION_VANILLA, .start = 0x1000, .mapping = -1};
    int main_loc = report_profile_add_location(p, report_profile_add_function(p, &root), 0x1000, 0);
    ReportFunctionInfo m = {.name = "Foo>>m", .region = REPORT_REGION_GENERATED, .start = 0x9000, .size = 0x80,
                            .mapping = -1, .map = map, .nmap = 3, .last_bcpc = 15};
    int f = report_profile_add_function(p, &m);
    /* [0, 0x10) -> 0->3 */
    fixture_add_samples(p, main_loc, f, 0x9000, 10);
    fixture_add_samples(p, main_loc, f, 0x900f, 1);
    /* [0x10, 0x20) -> 4->7 */
    fixture_add_samples(p, main_loc, f, 0x9010, 20);
    fixture_add_samples(p, main_loc, f, 0x901f, 2);
    /* [0x20, 0x30) -> 8->12 */
    fixture_add_samples(p, main_loc, f, 0x9020, 30);
    /* [0x30, end) -> 13->15 */
    fixture_add_samples(p, main_loc, f, 0x9030, 40);
    fixture_add_samples(p, main_loc, f, 0x907f, 7);
    char *t = fixture_text(p, NULL);
    report_profile_free(p);
    assert_block(t, "100.0%    (100.0%)\tFoo>>m\t(110)\t(100.0%)", "\t10.00%\t0->3\t(11)\t(10.00%)",
                 "\t20.00%\t4->7\t(22)\t(30.00%)", "\t27.27%\t8->12\t(30)\t(57.27%)", "\t42.73%\t13->15\t(47)\t(100.0%)",
                 "");
    free(t);
}

/* -- Counters ------------------------------------------------------------- */

static void counters_print_deltas_and_rates(void **state)
{
    (void)state;
    char *t = main_text(false);
    assert_block(t, "**Memory**", "\told\t+157,616 bytes", "\tfree\t2,000,000 bytes", "", "**GCs**",
                 "\tfull\t0 totalling 0ms (0.000% elapsed time), avg 0.000ms",
                 "\tscavenges\t182 totalling 53ms (0.763% elapsed time), avg 0.291ms",
                 "\ttenures\t7 (avg 26.0 GCs/tenure)", "\troot table\t3 overflows", "",
                 "**Compiled Code Compactions**", "\t2 totalling 3ms (0.036% elapsed time), avg 1.250ms", "",
                 "**Events**", "Process switches\t38 (5 per second)", "Interrupt checks\t3656 (526 per second)",
                 "Event checks\t3660 (527 per second)", "Stack overflows\t15183 (2185 per second)",
                 "Stack page divorces\t0 (0 per second)", "",
                 "sampled with perf_event (cpu-clock) at 1400 hz requested");
    free(t);
}

static void shrinking_old_space_and_backward_counters(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    ReportHeader h = fixture_header();
    h.end.old_bytes = h.start.old_bytes - 2425712;
    h.end.scavenges = h.start.scavenges - 1; /* a counter must never go back; if it does, 0 */
    h.end.tenures = h.start.tenures;
    report_profile_set_header(p, &h);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[128];
    assert_true(report_write_text(f, p, NULL, err, sizeof err));
    fclose(f);
    report_profile_free(p);
    assert_true(has_line(buf, "\told\t-2,425,712 bytes"));
    assert_true(has_line(buf, "\tscavenges\t0 totalling 53ms (0.763% elapsed time), avg 0.000ms"));
    assert_true(has_line(buf, "\ttenures\t0 (no tenures)"));
    /* No samples at all still gives a whole report. */
    assert_true(has_line(buf, "0 samples in the VM\t(0 samples in the entire program)   0.00% of total"));
    assert_true(has_line(buf, "6.948 seconds; sampling frequency 0 hz"));
    free(buf);
}

static void missing_counters_are_reported_not_available(void **state)
{
    (void)state;
    Fixture fx = fixture_new();
    ReportHeader h = fixture_header();
    h.have_counters = false;
    h.mode = "ptrace";
    h.mode_reason = "perf_event_open: Permission denied";
    h.lost_samples = 12;
    report_profile_set_header(fx.p, &h);
    report_profile_add_note(fx.p, "target exited after %d seconds", 3);
    char *t = fixture_text(fx.p, NULL);
    report_profile_free(fx.p);
    assert_null(strstr(t, "eden size:"));
    assert_true(has_line(t, "eden size, stack pages, code size: not available (the target publishes no counters)"));
    assert_block(t, "**Memory**", "\tnot available (the target publishes no counters)", "", "**GCs**",
                 "\tnot available (the target publishes no counters)", "", "**Compiled Code Compactions**",
                 "\tnot available (the target publishes no counters)", "", "**Events**",
                 "\tnot available (the target publishes no counters)", "",
                 "sampled with ptrace at 1400 hz requested (perf_event_open: Permission denied)", "12 samples lost",
                 "target exited after 3 seconds");
    free(t);
}

/* -- The store ------------------------------------------------------------ */

static void interning_answers_the_same_index(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    char name[] = "Foo>>bar";
    ReportMappingInfo m = {0x1000, 0x2000, 0, "/bin/x", NULL};
    int m1 = report_profile_add_mapping(p, &m);
    assert_int_equal(report_profile_add_mapping(p, &m), m1);
    m.offset = 0x10;
    assert_int_not_equal(report_profile_add_mapping(p, &m), m1);

    ReportFunctionInfo f = {.name = name, .region = REPORT_REGION_GENERATED, .start = 0x9000, .mapping = m1};
    int f1 = report_profile_add_function(p, &f);
    name[0] = 'G'; /* the profile keeps its own copy */
    f.name = "Foo>>bar";
    assert_int_equal(report_profile_add_function(p, &f), f1);
    f.start = 0xa000; /* moved: another function */
    int f2 = report_profile_add_function(p, &f);
    assert_int_not_equal(f2, f1);
    f.region = REPORT_REGION_REST;
    assert_int_not_equal(report_profile_add_function(p, &f), f2);
    ReportFunctionInfo nameless = {.region = REPORT_REGION_REST, .mapping = 99};
    int u = report_profile_add_function(p, &nameless);
    assert_int_equal(report_profile_add_function(p, &nameless), u);

    int l1 = report_profile_add_location(p, f1, 0x9004, 0);
    assert_int_equal(report_profile_add_location(p, f1, 0x9004, 0), l1);
    assert_int_not_equal(report_profile_add_location(p, f1, 0x9008, 0), l1);
    assert_int_equal(report_profile_add_location(p, 12345, 0x9004, 0), -1);
    /* Many entries: the indexes grow and still answer. */
    for (int i = 0; i < 5000; i++)
        assert_int_equal(report_profile_add_location(p, f2, 0x100000 + (uint64_t)i, 0), (int)i + 2);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(report_profile_add_location(p, f2, 0x100000 + (uint64_t)i, 0), (int)i + 2);
    report_profile_free(p);
}

static void invalid_frames_are_refused_and_counted(void **state)
{
    (void)state;
    Fixture fx = fixture_new();
    int bad[2] = {fx.main_loc, 99999};
    report_profile_add_sample(fx.p, 0, 1, bad, 2);
    report_profile_add_sample(fx.p, 0, 1, bad, 0);
    int neg = -1;
    report_profile_add_sample(fx.p, 0, 1, &neg, 1);
    assert_int_equal(report_profile_sample_count(fx.p), FIXTURE_TOTAL);
    char *t = fixture_text(fx.p, NULL);
    report_profile_free(fx.p);
    assert_true(has_line(t, "3 samples dropped: they named locations the profile does not have"));
    free(t);
}

static void write_errors_are_reported(void **state)
{
    (void)state;
    Fixture fx = fixture_new();
    char err[256] = "";
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        assert_false(report_write_text(full, fx.p, NULL, err, sizeof err));
        assert_non_null(strstr(err, "No space left on device"));
        fclose(full);
    }
    err[0] = '\0';
    assert_false(report_write_pprof("/nonexistent-dir/x.pb.gz", fx.p, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent-dir/x.pb.gz"));
    report_profile_free(fx.p);
}

/* -- Folded stacks -------------------------------------------------------- */

static void folded_stacks_are_root_first_sorted_and_summed(void **state)
{
    (void)state;
    Fixture fx = fixture_new();
    char *t = fixture_folded(fx.p);
    report_profile_free(fx.p);
    const char *want = "main;+ (closed PIC) 2\n"
                       "main;Alpha>>x 3\n"
                       "main;Beta>>y 3\n"
                       "main;Foo>>tiny1 1\n"
                       "main;Foo>>tiny2 1\n"
                       "main;Integer>>benchmark;Integer>>benchFib 5000\n"
                       "main;Object>>at:put: 1000\n"
                       "main;[] in Foo>>bar 10\n"
                       "main;[vdso] 120\n"
                       "main;gc_scavenge_run 700\n"
                       "main;interpret 3000\n"
                       "main;jit_compile 1\n"
                       "main;memcpy 150\n"
                       "main;page_fault 9\n";
    assert_string_equal(t, want);
    free(t);
}

static void folded_names_lose_separators(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    ReportFunctionInfo a = {.name = "a;b c\td\ne", .region = REPORT_REGION_VANILLA, .mapping = -1};
    ReportFunctionInfo b = {.name = "leaf", .region = REPORT_REGION_VANILLA, .start = 1, .mapping = -1};
    int la = report_profile_add_location(p, report_profile_add_function(p, &a), 1, 0);
    int lb = report_profile_add_location(p, report_profile_add_function(p, &b), 2, 0);
    int lb2 = report_profile_add_location(p, report_profile_add_function(p, &b), 3, 0);
    int s1[2] = {lb, la}, s2[2] = {lb2, la};
    report_profile_add_sample(p, 0, 1, s1, 2);
    report_profile_add_sample(p, 0, 2, s2, 2); /* other address, same functions: same line */
    char *t = fixture_folded(p);
    report_profile_free(p);
    /* spaces stay (flamegraph.pl splits the count at the last one); what
     * would split a frame or the line does not */
    assert_string_equal(t, "a:b c\td e;leaf 2\n");
    free(t);
}

/* -- pprof ---------------------------------------------------------------- */

static uint8_t *gunzip_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *in = malloc(1 << 20);
    size_t n = fread(in, 1, 1 << 20, f);
    fclose(f);
    assert_true(n > 18 && in[0] == 0x1f && in[1] == 0x8b); /* gzip magic */
    size_t cap = 16 << 20;
    uint8_t *out = malloc(cap);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    *len = z.total_out;
    inflateEnd(&z);
    free(in);
    return out;
}

/* A CPU-weighted profile (ptrace, the in-VM sampler): a sample counts the
 * CPU time its thread used since its previous one, in periods. */
static Profile *weighted_profile(void)
{
    Profile *p = report_profile_new();
    ReportHeader h = {.vm_path = "stvm", .seconds = 1.0, .requested_hz = 1000, .mode = "ptrace", .cpu_weighted = true,
                      .have_sched = true, .sched_run_ns = 6000000, .sched_wait_ns = 250000000};
    report_profile_set_header(p, &h);
    ReportFunctionInfo a = {.name = "busy", .region = REPORT_REGION_VANILLA, .start = 0x1000, .size = 16, .mapping = -1};
    ReportFunctionInfo b = {.name = "waited", .region = REPORT_REGION_VANILLA, .start = 0x2000, .size = 16, .mapping = -1};
    ReportFunctionInfo m = {.name = "main", .region = REPORT_REGION_VANILLA, .start = 0x3000, .size = 16, .mapping = -1};
    int la = report_profile_add_location(p, report_profile_add_function(p, &a), 0x1004, 0);
    int lb = report_profile_add_location(p, report_profile_add_function(p, &b), 0x2004, 0);
    int lm = report_profile_add_location(p, report_profile_add_function(p, &m), 0x3004, 0);
    int sa[2] = {la, lm}, sb[2] = {lb, lm};
    /* busy: 2 samples of a full period each; waited: 6 samples, 5 of them
     * taken while the thread waited for a CPU (weight 0), one of 1.5 periods */
    for (int i = 0; i < 2; i++)
        report_profile_add_weighted_sample(p, 0, 1, sa, 2, 1000000);
    for (int i = 0; i < 5; i++)
        report_profile_add_weighted_sample(p, 0, 1, sb, 2, 0);
    report_profile_add_weighted_sample(p, 0, 1, sb, 2, 1500000);
    return p;
}

static void weighted_samples_count_their_cpu_time(void **state)
{
    (void)state;
    Profile *p = weighted_profile();
    char *t = fixture_text(p, NULL);
    char *f = fixture_folded(p);
    /* 3.5 periods in all, 2 of them in busy: by count waited would have 6 of 8 */
    assert_non_null(strstr(t, "4 samples in the VM\t(4 samples in the entire program)"));
    assert_non_null(strstr(t, "57.14%    (57.14%)\tbusy\t(2)"));
    assert_non_null(strstr(t, "42.86%    (42.86%)\twaited\t(2)"));
    assert_non_null(strstr(t, "(8 samples taken, 3.5 weighted)"));
    assert_non_null(strstr(t, "on a CPU 0.006 s; runnable but waiting for a CPU 0.250 s (25.0% of the wall time)"));
    assert_non_null(strstr(t, "sampling frequency 8 hz")); /* the rate achieved counts samples taken */
    assert_string_equal(f, "main;busy 2\nmain;waited 2\n");
    free(t);
    free(f);

    char path[] = "/tmp/test_report_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_true(report_write_pprof(path, p, err, sizeof err));
    report_profile_free(p);
    size_t len = 0;
    uint8_t *bytes = gunzip_file(path, &len);
    unlink(path);
    Perftools__Profiles__Profile *pr = perftools__profiles__profile__unpack(NULL, len, bytes);
    free(bytes);
    assert_non_null(pr);
    assert_int_equal(pr->period, 1000000);
    int64_t counts = 0, cpu = 0;
    for (size_t i = 0; i < pr->n_sample; i++) {
        counts += pr->sample[i]->value[0];
        cpu += pr->sample[i]->value[1];
    }
    assert_int_equal(counts, 8);       /* samples taken */
    assert_int_equal(cpu, 3500000);    /* the CPU time they stand for, measured */
    perftools__profiles__profile__free_unpacked(pr, NULL);
}

/* A stack whose weight rounds to no whole sample leaves the folded output
 * (flame graph tools want whole counts); the text still has its share. */
static void weighted_folded_drops_what_rounds_to_nothing(void **state)
{
    (void)state;
    Profile *p = weighted_profile();
    ReportFunctionInfo c = {.name = "blip", .region = REPORT_REGION_VANILLA, .start = 0x4000, .size = 16, .mapping = -1};
    int lc = report_profile_add_location(p, report_profile_add_function(p, &c), 0x4004, 0);
    report_profile_add_weighted_sample(p, 0, 1, &lc, 1, 400000);
    char *f = fixture_folded(p);
    assert_string_equal(f, "main;busy 2\nmain;waited 2\n");
    free(f);
    report_profile_free(p);
}

static const char *str(const Perftools__Profiles__Profile *pr, int64_t i)
{
    assert_true(i >= 0 && (size_t)i < pr->n_string_table);
    return pr->string_table[i];
}

static const Perftools__Profiles__Function *function_named(const Perftools__Profiles__Profile *pr, const char *name)
{
    for (size_t i = 0; i < pr->n_function; i++)
        if (strcmp(str(pr, pr->function[i]->name), name) == 0)
            return pr->function[i];
    return NULL;
}

static void pprof_round_trips_through_protobuf_c(void **state)
{
    (void)state;
    Fixture fx = fixture_new();
    report_profile_add_note(fx.p, "a note");
    char path[] = "/tmp/test_report_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_true(report_write_pprof(path, fx.p, err, sizeof err));
    size_t len = 0;
    uint8_t *bytes = gunzip_file(path, &len);
    unlink(path);
    Perftools__Profiles__Profile *pr = perftools__profiles__profile__unpack(NULL, len, bytes);
    free(bytes);
    assert_non_null(pr);

    assert_true(pr->n_string_table > 0);
    assert_string_equal(pr->string_table[0], "");
    for (size_t i = 1; i < pr->n_string_table; i++) /* interned: no duplicates */
        for (size_t j = i + 1; j < pr->n_string_table; j++)
            assert_string_not_equal(pr->string_table[i], pr->string_table[j]);
    assert_int_equal(pr->n_sample_type, 2);
    assert_string_equal(str(pr, pr->sample_type[0]->type), "samples");
    assert_string_equal(str(pr, pr->sample_type[0]->unit), "count");
    assert_string_equal(str(pr, pr->sample_type[1]->type), "cpu");
    assert_string_equal(str(pr, pr->sample_type[1]->unit), "nanoseconds");
    assert_non_null(pr->period_type);
    assert_string_equal(str(pr, pr->period_type->type), "cpu");
    assert_string_equal(str(pr, pr->period_type->unit), "nanoseconds");
    assert_int_equal(pr->period, 714286); /* 1e9 / 1400, rounded */
    assert_int_equal(pr->time_nanos, (int64_t)FIXTURE_START_WALL * 1000000000);
    assert_int_equal(pr->duration_nanos, 6948000000);
    assert_string_equal(str(pr, pr->default_sample_type), "cpu");

    assert_int_equal(pr->n_mapping, 5);
    for (size_t i = 0; i < pr->n_mapping; i++)
        assert_int_equal(pr->mapping[i]->id, i + 1);
    assert_string_equal(str(pr, pr->mapping[0]->filename), "/usr/local/bin/stvm");
    assert_string_equal(str(pr, pr->mapping[0]->build_id), "0123abcd");
    assert_int_equal(pr->mapping[0]->memory_start, 0x400000);
    assert_int_equal(pr->mapping[0]->memory_limit, 0x500000);
    assert_true(pr->mapping[0]->has_functions);
    assert_true(pr->mapping[0]->has_filenames);
    assert_string_equal(str(pr, pr->mapping[1]->filename), "[code zone]");
    assert_int_equal(pr->mapping[2]->file_offset, 0x28000);

    for (size_t i = 0; i < pr->n_function; i++)
        assert_int_equal(pr->function[i]->id, i + 1);
    const Perftools__Profiles__Function *bf = function_named(pr, "Integer>>benchFib");
    assert_non_null(bf);
    assert_string_equal(str(pr, bf->system_name), "Integer>>benchFib");
    assert_string_equal(str(pr, bf->filename), "smalltalk/core/Integer.som");
    assert_int_equal(bf->start_line, 3);
    assert_non_null(function_named(pr, "main"));
    assert_non_null(function_named(pr, "memcpy"));
    /* benchFib at two addresses (before and after a compaction) is one Function */
    size_t copies = 0;
    for (size_t i = 0; i < pr->n_function; i++)
        copies += strcmp(str(pr, pr->function[i]->name), "Integer>>benchFib") == 0;
    assert_int_equal(copies, 1);
    bool saw_second_copy = false;
    for (size_t i = 0; i < pr->n_location; i++) {
        if (pr->location[i]->address >= FIXTURE_BENCHFIB2 && pr->location[i]->address < FIXTURE_BENCHFIB2 + 0x1000) {
            assert_int_equal(pr->location[i]->line[0]->function_id, bf->id);
            saw_second_copy = true;
        }
    }
    assert_true(saw_second_copy);

    for (size_t i = 0; i < pr->n_location; i++) {
        assert_int_equal(pr->location[i]->id, i + 1);
        assert_int_equal(pr->location[i]->n_line, 1);
        assert_true(pr->location[i]->line[0]->function_id >= 1 &&
                    pr->location[i]->line[0]->function_id <= pr->n_function);
    }
    const Perftools__Profiles__Location *a0 = pr->location[fx.benchfib_a0_loc];
    assert_int_equal(a0->address, FIXTURE_BENCHFIB + 0xa0);
    assert_int_equal(a0->mapping_id, 2); /* the code zone */
    assert_int_equal(a0->line[0]->function_id, bf->id);
    assert_int_equal(a0->line[0]->line, 7);

    int64_t total = 0, total_ns = 0;
    bool found_a0 = false;
    for (size_t i = 0; i < pr->n_sample; i++) {
        const Perftools__Profiles__Sample *s = pr->sample[i];
        assert_int_equal(s->n_value, 2);
        assert_int_equal(s->value[1], s->value[0] * 714286);
        total += s->value[0];
        total_ns += s->value[1];
        /* "thread", then "bytecodes" where the leaf is a method with ranges */
        assert_true(s->n_label == 1 || s->n_label == 2);
        assert_string_equal(str(pr, s->label[0]->key), "thread");
        assert_int_equal(s->label[0]->num, FIXTURE_TID);
        if (s->n_label == 2)
            assert_string_equal(str(pr, s->label[1]->key), "bytecodes");
        if (s->location_id[0] == a0->id) {
            found_a0 = true;
            assert_int_equal(s->n_label, 2);
            assert_string_equal(str(pr, s->label[1]->str), "15->20"); /* the text report's range of +0xa0 */
            assert_int_equal(s->value[0], 300);
            assert_int_equal(s->n_location_id, 3); /* leaf first */
            assert_int_equal(s->location_id[1], (uint64_t)fx.benchmark_loc + 1);
            assert_int_equal(s->location_id[2], (uint64_t)fx.main_loc + 1);
        }
    }
    assert_true(found_a0);
    assert_int_equal(total, FIXTURE_TOTAL);
    assert_int_equal(total_ns, (int64_t)FIXTURE_TOTAL * 714286);
    /* Identical stacks were merged: far fewer samples than 10,000. */
    assert_true(pr->n_sample < 40);

    bool saw_mode = false, saw_note = false;
    for (size_t i = 0; i < pr->n_comment; i++) {
        saw_mode |= strcmp(str(pr, pr->comment[i]), "sampled with perf_event (cpu-clock)") == 0;
        saw_note |= strcmp(str(pr, pr->comment[i]), "a note") == 0;
    }
    assert_true(saw_mode && saw_note);
    perftools__profiles__profile__free_unpacked(pr, NULL);
    report_profile_free(fx.p);
}

static void blocks_sharing_a_name_and_an_address_stay_two_functions(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    static const ReportMapEntry one[] = {{60, 3}}, two[] = {{60, 2}, {90, 7}};
    ReportFunctionInfo f = {.name = "[] in Foo>>bar", .region = REPORT_REGION_GENERATED, .start = 0x1000,
                            .size = 256, .mapping = -1, .map = one, .nmap = 1, .last_bcpc = 5};
    int a = report_profile_add_function(p, &f);
    assert_int_equal(report_profile_add_function(p, &f), a); /* the same block again */
    f.map = two, f.nmap = 2, f.last_bcpc = 9; /* the method's other block, later at the same address */
    int b = report_profile_add_function(p, &f);
    assert_int_not_equal(a, b);
    report_profile_free(p);
}

static void empty_profile_writes_a_valid_pprof(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    char path[] = "/tmp/test_report_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    char err[256];
    assert_true(report_write_pprof(path, p, err, sizeof err));
    size_t len = 0;
    uint8_t *bytes = gunzip_file(path, &len);
    unlink(path);
    Perftools__Profiles__Profile *pr = perftools__profiles__profile__unpack(NULL, len, bytes);
    free(bytes);
    assert_non_null(pr);
    assert_string_equal(pr->string_table[0], "");
    assert_int_equal(pr->n_sample, 0);
    assert_int_equal(pr->n_sample_type, 2);
    perftools__profiles__profile__free_unpacked(pr, NULL);
    report_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentages_print_two_decimals_padded_with_100_as_100_0),
        cmocka_unit_test(thousands_separators_and_signed_changes),
        cmocka_unit_test(header_prints_start_counters_date_and_achieved_frequency),
        cmocka_unit_test(samples_split_into_vm_generated_and_vanilla),
        cmocka_unit_test(generated_table_is_ranked_by_count_then_name_with_others_last),
        cmocka_unit_test(vanilla_table_merges_addresses_of_one_function),
        cmocka_unit_test(rest_is_grouped_by_function_and_library),
        cmocka_unit_test(rest_section_appears_from_one_percent_of_all_samples),
        cmocka_unit_test(lines_option_adds_source_lines_to_ranges),
        cmocka_unit_test(functions_with_at_most_the_minimum_samples_get_no_ranges),
        cmocka_unit_test(range_boundaries_follow_previous_mcpc_to_this_mcpc),
        cmocka_unit_test(counters_print_deltas_and_rates),
        cmocka_unit_test(shrinking_old_space_and_backward_counters),
        cmocka_unit_test(missing_counters_are_reported_not_available),
        cmocka_unit_test(interning_answers_the_same_index),
        cmocka_unit_test(invalid_frames_are_refused_and_counted),
        cmocka_unit_test(write_errors_are_reported),
        cmocka_unit_test(folded_stacks_are_root_first_sorted_and_summed),
        cmocka_unit_test(folded_names_lose_separators),
        cmocka_unit_test(pprof_round_trips_through_protobuf_c),
        cmocka_unit_test(weighted_samples_count_their_cpu_time),
        cmocka_unit_test(weighted_folded_drops_what_rounds_to_nothing),
        cmocka_unit_test(empty_profile_writes_a_valid_pprof),
        cmocka_unit_test(blocks_sharing_a_name_and_an_address_stay_two_functions),
    };
    return cmocka_run_group_tests(tests, use_utc, NULL);
}
