/*
 * tests/unit/report/report_fixture.h — a Profile built by hand, with every
 * count chosen so the report's numbers can be worked out on paper
 * (report_fixture.c lists them).
 */
#ifndef TESTS_REPORT_FIXTURE_H
#define TESTS_REPORT_FIXTURE_H

#include "report/report.h"

#define FIXTURE_TOTAL 10000
#define FIXTURE_SECONDS 6.948
#define FIXTURE_HZ 1400.0
#define FIXTURE_START_WALL 1497910571 /* 2017-06-19 22:16:11 UTC */
#define FIXTURE_TID 4242
#define FIXTURE_CODE_ZONE 0x7f0000000000ull
#define FIXTURE_BENCHFIB (FIXTURE_CODE_ZONE + 0x1000)  /* Integer>>benchFib, first copy */
#define FIXTURE_BENCHFIB2 (FIXTURE_CODE_ZONE + 0x80000) /* the same method after a compaction */

typedef struct Fixture {
    Profile *p;
    int main_loc;       /* root of every stack */
    int benchmark_loc;  /* caller of every benchFib sample */
    int benchfib_fn;
    int benchfib_a0_loc; /* benchFib at +0xa0: 300 samples */
} Fixture;

/* The main profile: 10,000 samples, counters as in reference 004's Figure 7. */
Fixture fixture_new(void);
/* n samples of a one-frame stack at function f (with main as root). */
void fixture_add_samples(Profile *p, int main_loc, int function, uint64_t address, int n);
/* The header of the main profile (have_counters true). */
ReportHeader fixture_header(void);
/* The whole rendering as a string (caller frees). */
char *fixture_text(const Profile *p, const ReportTextOptions *opt);
char *fixture_folded(const Profile *p);

#endif
