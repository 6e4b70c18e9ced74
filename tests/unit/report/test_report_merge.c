/*
 * tests/unit/report/test_report_merge.c — report_profile_merge
 * (report/combine.c): several processes' profiles in one, each sample
 * labelled with its process, as vmprofd serve answers a scrape of a host.
 */
#include "report/profile.h"
#include "report/report.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A profile of one process: n samples in fn (leaf) under main. */
static Profile *one(const char *fn, int n, bool cpu_weighted, uint64_t weight)
{
    Profile *p = report_profile_new();
    ReportHeader h = {.vm_path = "/usr/bin/stvm", .seconds = 2, .requested_hz = 100, .mode = "perf_event",
                      .cpu_weighted = cpu_weighted};
    report_profile_set_header(p, &h);
    ReportFunctionInfo fi = {.name = fn, .region = REPORT_REGION_GENERATED, .start = 0x1000, .size = 64, .mapping = -1};
    ReportFunctionInfo mi = {.name = "main", .region = REPORT_REGION_VANILLA, .start = 0x2000, .size = 64, .mapping = -1};
    int frames[2] = {report_profile_add_location(p, report_profile_add_function(p, &fi), 0x1010, 0),
                     report_profile_add_location(p, report_profile_add_function(p, &mi), 0x2010, 0)};
    for (int i = 0; i < n; i++)
        report_profile_add_weighted_sample(p, (uint64_t)i, 7, frames, 2, weight);
    report_profile_add_warning(p, "something it cannot show");
    return p;
}

static const ReportFunctionInfo *leaf(const Profile *p, size_t i)
{
    return report_profile_leaf_function(p, &p->samples[i]);
}

static void samples_keep_their_process(void **state)
{
    (void)state;
    Profile *a = one("A>>hot", 3, false, 1), *b = one("B>>hot", 2, false, 1);
    Profile *m = report_profile_new();
    assert_true(report_profile_merge(m, a, 100, "stvm -cp x A"));
    assert_true(report_profile_merge(m, b, 200, "stvm -cp x B"));
    assert_int_equal(report_profile_sample_count(m), 5);
    assert_int_equal(m->ngroups, 2);
    assert_int_equal(m->groups[0].pid, 100);
    assert_string_equal(m->groups[1].cmd, "stvm -cp x B");
    for (size_t i = 0; i < 5; i++) {
        const ReportGroup *g = &m->groups[m->samples[i].group - 1];
        assert_string_equal(leaf(m, i)->name, g->pid == 100 ? "A>>hot" : "B>>hot");
    }
    /* main is one function in the merged profile: interned */
    size_t mains = 0;
    for (size_t i = 0; i < m->nfunctions; i++)
        mains += strcmp(m->functions[i].name, "main") == 0;
    assert_int_equal(mains, 1);
    /* warnings say whose */
    assert_int_equal(m->nwarnings, 2);
    assert_string_equal(m->warnings[0], "pid 100: something it cannot show");
    /* and pprof carries the labels: the strings "pid", "cmd" and the command lines */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[256];
    assert_true(report_write_pprof_stream(f, m, err, sizeof err));
    fclose(f);
    assert_true(len > 0);
    free(buf);
    report_profile_free(a);
    report_profile_free(b);
    report_profile_free(m);
}

/* A ptrace profile (CPU ns a sample) merged after a perf one (1 a sample):
 * its weights become samples, by the period (100 Hz: 10 ms). */
static void weights_are_converted(void **state)
{
    (void)state;
    Profile *perf = one("A>>hot", 1, false, 1), *ptrace = one("B>>hot", 2, true, 20000000);
    Profile *m = report_profile_new();
    assert_true(report_profile_merge(m, perf, 1, "a"));
    assert_true(report_profile_merge(m, ptrace, 2, "b"));
    assert_false(m->header.cpu_weighted);
    assert_int_equal(m->samples[1].weight, 2); /* 20 ms at 10 ms a sample */
    assert_int_equal(report_profile_total_weight(m), 5);
    report_profile_free(perf);
    report_profile_free(ptrace);
    report_profile_free(m);
}

static void allocations_do_not_mix_with_cpu(void **state)
{
    (void)state;
    Profile *cpu = one("A>>hot", 1, false, 1), *alloc = one("B>>hot", 0, false, 1);
    report_profile_set_alloc(alloc, &(ReportAllocHeader){.interval = 512});
    Profile *m = report_profile_new();
    assert_true(report_profile_merge(m, cpu, 1, "a"));
    assert_false(report_profile_merge(m, alloc, 2, "b"));
    assert_int_equal(m->ngroups, 1);
    report_profile_free(cpu);
    report_profile_free(alloc);
    report_profile_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_keep_their_process),
        cmocka_unit_test(weights_are_converted),
        cmocka_unit_test(allocations_do_not_mix_with_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
