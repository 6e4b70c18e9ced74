/*
 * report/format.h — how the text report prints numbers (REPORT.md, Rules).
 *
 * Each helper answers a small struct by value so a call can sit inside a
 * printf argument list: `printf("%s", report_format_pct(3, 4).s)`. The
 * temporary lives to the end of the full expression (C11 6.2.4p8).
 *
 *   report_format_pct(1, 3)          "33.33%"   (always REPORT_PCT_WIDTH wide)
 *   report_format_pct(979, 10000)    " 9.79%"   (padded to the common width)
 *   report_format_pct(5, 5)          "100.0%"   (VMProfiler's spelling of 100%)
 *   report_format_pct(x, 0)          " 0.00%"   (nothing to be a share of)
 *   report_format_thousands(3801936) "3,801,936"
 *   report_format_signed(-157616)    "-157,616"; 0 prints "+0"
 *
 * Who may call: report/ only.
 */
#ifndef REPORT_FORMAT_H
#define REPORT_FORMAT_H

#include <stdint.h>

#define REPORT_PCT_WIDTH 6 /* "NN.NN%" and "100.0%" */

typedef struct ReportNum {
    char s[32]; /* the longest: "-9,223,372,036,854,775,808" (26) */
} ReportNum;

/* part/whole as a percentage, rounded half up to two decimals. */
ReportNum report_format_pct(uint64_t part, uint64_t whole);
ReportNum report_format_thousands(uint64_t v);
ReportNum report_format_signed(int64_t v);

#endif
