/*
 * report/ranges.h — bytecode ranges of a JIT'd method (REPORT.md,
 * "Bytecode ranges"; reference 004, section 3.2).
 *
 * A method's (mcpc, bcpc) pairs, walked in mcpc order, cut its machine
 * code into intervals. With map m[0..n) and the method starting at S:
 *
 *   machine code   [S, S+m[0].mcpc)  [S+m[0].mcpc, S+m[1].mcpc) … [S+m[n-1].mcpc, end)
 *   bytecode range  0 -> m[0].bcpc    m[0].bcpc+1 -> m[1].bcpc  …  m[n-1].bcpc+1 -> last_bcpc
 *
 * So the first range starts at the method's first byte (header, entry and
 * prologue fall into it) and bytecode pc 0; the last runs to the end of
 * the method and to its real last bytecode pc (VMProfiler printed 6667).
 * A sample at exactly m[i].mcpc belongs to the interval starting there. A
 * method without map entries is one range 0 -> last_bcpc. When two
 * annotations fall on one bytecode (start would pass end) the range is
 * that bytecode alone.
 *
 * Intervals with the same label (one method seen at several addresses
 * after code compaction) add up. Ranges without samples never appear.
 *
 * Who may call: report/ (the text report, the code map).
 */
#ifndef REPORT_RANGES_H
#define REPORT_RANGES_H

#include "report/report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ReportRange {
    uint32_t from, to;         /* bytecode pcs, both inclusive */
    uint64_t samples;
    uint32_t line_lo, line_hi; /* source lines of from..to; 0 when unknown */
} ReportRange;

typedef struct ReportRanges {
    ReportRange *v;
    size_t n, cap;
} ReportRanges;

/* The range (REPORT.md) machine-code offset `offset` of a method lies in,
 * for its map sorted by mcpc: the rule above, shared by the text report and
 * report/codemap.c. */
void report_ranges_range_of(const ReportMapEntry *map, size_t nmap, uint32_t last_bcpc, uint64_t offset,
                            uint32_t *from, uint32_t *to);
/* Sorts a map by mcpc (then bcpc) and a line table by bcpc, as the
 * lookups above need: callers sort their own copies, so a producer's
 * ordering mistake (only a corrupt log makes one) cannot make them wrong. */
void report_ranges_sort_map(ReportMapEntry *map, size_t n);
void report_ranges_sort_lines(ReportLineEntry *lines, size_t n);
/* Source line of bytecode pc b in a line table sorted by bcpc (the run
 * with the largest start <= b); 0 when unknown. */
uint32_t report_ranges_line_at(const ReportLineEntry *lines, size_t nlines, uint32_t b);

/* Whether f has bytecodes to split its samples over: a JIT'd method or
 * block, or an interpreted one (whose map gives each bytecode its own
 * range), at a known address with a map or a last bytecode pc. PICs,
 * trampolines and C functions have neither. */
bool report_ranges_apply(const ReportFunctionInfo *f);
/* Counts samples at address (inside f) into its range. */
void report_ranges_add(ReportRanges *r, const ReportFunctionInfo *f, uint64_t address, uint64_t samples);
/* Bytecode order: by from, then to. */
void report_ranges_sort(ReportRanges *r);
void report_ranges_free(ReportRanges *r);

#endif
