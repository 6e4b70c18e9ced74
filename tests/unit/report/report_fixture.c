/*
 * tests/unit/report/report_fixture.c — the hand-built profile.
 *
 *   region     function                   samples  notes
 *   generated  Integer>>benchFib           5000    map, two copies (moved)
 *              Object>>at:put:             1000    no map, last bcpc 12
 *              [] in Foo>>bar                10    map, but not > 10 samples
 *              Alpha>>x, Beta>>y            3, 3   equal counts: name order
 *              + (closed PIC)                 2    0.02%: kept
 *              Foo>>tiny1, Foo>>tiny2       1, 1   0.01%: ...others...
 *              Integer>>benchmark             0    caller only
 *   vanilla    interpret                   3000
 *              gc_scavenge_run              700
 *              jit_compile                    1    ...others...
 *              main                           0    root of every stack
 *   rest       memcpy (libc.so.6)           150
 *              [vdso]                       120
 *              page_fault (kernel)            9
 *   total                                 10000    VM 9721, generated 6020,
 *                                                  vanilla 3701, rest 279
 *
 * Integer>>benchFib: map (0x40,5) (0x60,9) (0x90,9) (0xa0,14), last bcpc
 * 20, size 0x200. Samples by offset, and the range each falls into:
 *   0x00 1000, 0x3f 1400 (+500 at 0x10 of the moved copy)  0->5    2900
 *   0x40 500 (boundary), 0x5f 100                          6->9     600
 *   0x60 400  (two annotations on bytecode 9)              9->9     400
 *   0x90 700                                               10->14   700
 *   0xa0 300, 0x1ff 100                                    15->20   400
 * Lines: bcpc 0 -> 3, 6 -> 4, 10 -> 5, 12 -> 6, 15 -> 7.
 */
#include "report_fixture.h"

#include <stdlib.h>
#include <string.h>

static const ReportMapEntry benchfib_map[] = {{0x40, 5}, {0x60, 9}, {0x90, 9}, {0xa0, 14}};
static const ReportLineEntry benchfib_lines[] = {{0, 3}, {6, 4}, {10, 5}, {12, 6}, {15, 7}};
static const ReportMapEntry bar_map[] = {{0x10, 2}};

ReportHeader fixture_header(void)
{
    ReportHeader h = {
        .vm_path = "/usr/local/bin/stvm",
        .start_wall = FIXTURE_START_WALL,
        .seconds = FIXTURE_SECONDS,
        .requested_hz = FIXTURE_HZ,
        .mode = "perf_event (cpu-clock)",
        .have_counters = true,
    };
    h.start = (ProfCounters){
        .eden_bytes = 3801936,
        .stack_pages = 50,
        .code_bytes = 1048576,
        .old_bytes = 1000000,
        .old_free_bytes = 5000000,
        .scavenges = 10,
        .scavenge_usecs = 1000,
        .full_gcs = 1,
        .full_usecs = 4000,
        .tenures = 2,
        .root_table_overflows = 0,
        .code_compactions = 1,
        .code_compaction_usecs = 100,
        .process_switches = 2,
        .interrupt_checks = 100,
        .event_checks = 50,
        .stack_overflows = 17,
        .page_divorces = 4,
    };
    h.end = h.start;
    h.end.eden_bytes = 999; /* the header must print the start values */
    h.end.old_bytes = 1157616;
    h.end.old_free_bytes = 2000000;
    h.end.scavenges = 192;        /* 182 */
    h.end.scavenge_usecs = 54000; /* 53 ms */
    h.end.tenures = 9;            /* 7 */
    h.end.root_table_overflows = 3;
    h.end.code_compactions = 3;   /* 2 */
    h.end.code_compaction_usecs = 2600;
    h.end.process_switches = 40;  /* 38 */
    h.end.interrupt_checks = 3756;
    h.end.event_checks = 3710;
    h.end.stack_overflows = 15200;
    h.end.page_divorces = 4;
    return h;
}

static int function(Profile *p, const char *name, ReportRegion region, uint64_t start, uint64_t size, int mapping)
{
    ReportFunctionInfo f = {.name = name, .region = region, .start = start, .size = size, .mapping = mapping};
    return report_profile_add_function(p, &f);
}

void fixture_add_samples(Profile *p, int main_loc, int fn, uint64_t address, int n)
{
    int loc = report_profile_add_location(p, fn, address, 0);
    int frames[2] = {loc, main_loc};
    for (int i = 0; i < n; i++)
        report_profile_add_sample(p, (uint64_t)i * 714286, FIXTURE_TID, frames, 2);
}

static void benchfib_samples(Profile *p, const Fixture *fx, uint64_t start, uint64_t offset, int line, int n)
{
    int loc = report_profile_add_location(p, fx->benchfib_fn, start + offset, line);
    int frames[3] = {loc, fx->benchmark_loc, fx->main_loc};
    for (int i = 0; i < n; i++)
        report_profile_add_sample(p, (uint64_t)i * 714286, FIXTURE_TID, frames, 3);
}

Fixture fixture_new(void)
{
    Fixture fx = {0};
    Profile *p = fx.p = report_profile_new();
    ReportHeader h = fixture_header();
    report_profile_set_header(p, &h);

    ReportMappingInfo exe = {0x400000, 0x500000, 0, "/usr/local/bin/stvm", "0123abcd"};
    ReportMappingInfo zone = {FIXTURE_CODE_ZONE, FIXTURE_CODE_ZONE + 0x100000, 0, "[code zone]", NULL};
    ReportMappingInfo libc = {0x7fff00000000, 0x7fff00200000, 0x28000, "/usr/lib/x86_64-linux-gnu/libc.so.6", NULL};
    ReportMappingInfo vdso = {0x7fff10000000, 0x7fff10002000, 0, "[vdso]", NULL};
    ReportMappingInfo kernel = {0xffffffff81000000, 0xffffffff82000000, 0, "[kernel.kallsyms]", NULL};
    int m_exe = report_profile_add_mapping(p, &exe);
    int m_zone = report_profile_add_mapping(p, &zone);
    int m_libc = report_profile_add_mapping(p, &libc);
    int m_vdso = report_profile_add_mapping(p, &vdso);
    int m_kernel = report_profile_add_mapping(p, &kernel);

    ReportFunctionInfo mainf = {.name = "main", .file = "vm/main.c", .start_line = 40, .region = REPORT_REGION_VANILLA,
                                .start = 0x401000, .size = 0x100, .mapping = m_exe};
    fx.main_loc = report_profile_add_location(p, report_profile_add_function(p, &mainf), 0x401020, 52);
    int benchmark = function(p, "Integer>>benchmark", REPORT_REGION_GENERATED, FIXTURE_CODE_ZONE + 0x3000, 0x300,
                             m_zone);
    fx.benchmark_loc = report_profile_add_location(p, benchmark, FIXTURE_CODE_ZONE + 0x3040, 0);

    ReportFunctionInfo bf = {.name = "Integer>>benchFib", .file = "smalltalk/core/Integer.som", .start_line = 3,
                             .region = REPORT_REGION_GENERATED, .start = FIXTURE_BENCHFIB, .size = 0x200,
                             .mapping = m_zone, .map = benchfib_map, .nmap = 4, .last_bcpc = 20,
                             .lines = benchfib_lines, .nlines = 5};
    fx.benchfib_fn = report_profile_add_function(p, &bf);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x00, 3, 1000);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x3f, 3, 1400);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x40, 4, 500);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x5f, 4, 100);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x60, 4, 400);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x90, 5, 700);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0xa0, 7, 300);
    fx.benchfib_a0_loc = report_profile_add_location(p, fx.benchfib_fn, FIXTURE_BENCHFIB + 0xa0, 7);
    benchfib_samples(p, &fx, FIXTURE_BENCHFIB, 0x1ff, 7, 100);
    Fixture moved = fx;
    bf.start = FIXTURE_BENCHFIB2;
    moved.benchfib_fn = report_profile_add_function(p, &bf);
    benchfib_samples(p, &moved, FIXTURE_BENCHFIB2, 0x10, 3, 500);

    ReportFunctionInfo atput = {.name = "Object>>at:put:", .region = REPORT_REGION_GENERATED,
                                .start = FIXTURE_CODE_ZONE + 0x2000, .size = 0x80, .mapping = m_zone,
                                .last_bcpc = 12};
    fixture_add_samples(p, fx.main_loc, report_profile_add_function(p, &atput), FIXTURE_CODE_ZONE + 0x2010, 1000);
    ReportFunctionInfo bar = {.name = "[] in Foo>>bar", .region = REPORT_REGION_GENERATED,
                              .start = FIXTURE_CODE_ZONE + 0x4000, .size = 0x40, .mapping = m_zone, .map = bar_map,
                              .nmap = 1, .last_bcpc = 6};
    fixture_add_samples(p, fx.main_loc, report_profile_add_function(p, &bar), FIXTURE_CODE_ZONE + 0x4004, 10);
    uint64_t z = FIXTURE_CODE_ZONE;
    fixture_add_samples(p, fx.main_loc, function(p, "Beta>>y", REPORT_REGION_GENERATED, z + 0x5000, 0x40, m_zone),
                        z + 0x5008, 3);
    fixture_add_samples(p, fx.main_loc, function(p, "Alpha>>x", REPORT_REGION_GENERATED, z + 0x6000, 0x40, m_zone),
                        z + 0x6008, 3);
    fixture_add_samples(p, fx.main_loc,
                        function(p, "+ (closed PIC)", REPORT_REGION_GENERATED, z + 0x7000, 0x40, m_zone), z + 0x7008,
                        2);
    fixture_add_samples(p, fx.main_loc, function(p, "Foo>>tiny1", REPORT_REGION_GENERATED, z + 0x8000, 0x40, m_zone),
                        z + 0x8008, 1);
    fixture_add_samples(p, fx.main_loc, function(p, "Foo>>tiny2", REPORT_REGION_GENERATED, z + 0x9000, 0x40, m_zone),
                        z + 0x9008, 1);

    fixture_add_samples(p, fx.main_loc, function(p, "interpret", REPORT_REGION_VANILLA, 0x402000, 0x4000, m_exe),
                        0x402100, 2000);
    fixture_add_samples(p, fx.main_loc, function(p, "interpret", REPORT_REGION_VANILLA, 0x402000, 0x4000, m_exe),
                        0x402200, 1000);
    fixture_add_samples(p, fx.main_loc,
                        function(p, "gc_scavenge_run", REPORT_REGION_VANILLA, 0x407000, 0x400, m_exe), 0x407010, 700);
    fixture_add_samples(p, fx.main_loc, function(p, "jit_compile", REPORT_REGION_VANILLA, 0x408000, 0x400, m_exe),
                        0x408010, 1);

    fixture_add_samples(p, fx.main_loc, function(p, "memcpy", REPORT_REGION_REST, 0x7fff00010000, 0x100, m_libc),
                        0x7fff00010010, 150);
    fixture_add_samples(p, fx.main_loc, function(p, "[vdso]", REPORT_REGION_REST, 0, 0, m_vdso), 0x7fff10000100,
                        120);
    fixture_add_samples(p, fx.main_loc,
                        function(p, "page_fault", REPORT_REGION_REST, 0xffffffff81001000, 0x100, m_kernel),
                        0xffffffff81001010, 9);
    return fx;
}

static char *render(bool text, const Profile *p, const ReportTextOptions *opt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[256];
    bool ok = text ? report_write_text(f, p, opt, err, sizeof err) : report_write_folded(f, p, err, sizeof err);
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *fixture_text(const Profile *p, const ReportTextOptions *opt)
{
    return render(true, p, opt);
}

char *fixture_folded(const Profile *p)
{
    return render(false, p, NULL);
}
