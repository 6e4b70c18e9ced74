/*
 * report/counters.h — the text report's counter sections: Memory, GCs,
 * Compiled Code Compactions and Events (REPORT.md), from the VM counters
 * at the start and end of the profile.
 *
 * Every number is the change end - start, except "free" (old-space free
 * bytes at the end, absolute). A counter that went backwards (the VM was
 * restarted, or a torn read) counts as 0, never as 2^64 - n. Rates and
 * shares of elapsed time use the header's profiled seconds.
 *
 * Who may call: report/ (the text report).
 */
#ifndef REPORT_COUNTERS_H
#define REPORT_COUNTERS_H

#include "report/report.h"

#include <stdio.h>

void report_counters_write(FILE *out, const ReportHeader *h);

#endif
