/* report/ranges.c — samples of a JIT'd method to bytecode ranges (see ranges.h). */
#include "report/ranges.h"

#include "report/mem.h"

#include <stdlib.h>

bool report_ranges_apply(const ReportFunctionInfo *f)
{
    return f->start != 0 && (f->nmap > 0 || f->last_bcpc > 0);
}

/* Number of map entries with mcpc <= offset: the interval the offset lies in. */
static size_t interval_of(const ReportMapEntry *map, size_t nmap, uint64_t offset)
{
    size_t lo = 0, hi = nmap;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (map[mid].mcpc <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void report_ranges_range_of(const ReportMapEntry *map, size_t nmap, uint32_t last_bcpc, uint64_t offset,
                            uint32_t *from, uint32_t *to)
{
    size_t k = interval_of(map, nmap, offset);
    if (k == 0) {
        *from = 0;
        *to = nmap ? map[0].bcpc : last_bcpc;
    } else {
        *from = map[k - 1].bcpc + 1;
        *to = k < nmap ? map[k].bcpc : last_bcpc;
    }
    if (*from > *to)
        *from = *to;
}

uint32_t report_ranges_line_at(const ReportLineEntry *lines, size_t nlines, uint32_t b)
{
    size_t lo = 0, hi = nlines;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lines[mid].bcpc <= b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lines[lo - 1].line : 0;
}

static void lines_of(const ReportFunctionInfo *f, ReportRange *r)
{
    uint32_t first = report_ranges_line_at(f->lines, f->nlines, r->from);
    r->line_lo = r->line_hi = first;
    for (size_t i = 0; i < f->nlines; i++) {
        const ReportLineEntry *e = &f->lines[i];
        if (e->bcpc <= r->from || e->bcpc > r->to || e->line == 0)
            continue;
        if (r->line_lo == 0 || e->line < r->line_lo)
            r->line_lo = e->line;
        if (e->line > r->line_hi)
            r->line_hi = e->line;
    }
}

void report_ranges_add(ReportRanges *r, const ReportFunctionInfo *f, uint64_t address, uint64_t samples)
{
    /* An address before the start cannot come from a correct symbolizer;
     * counting it in the entry range keeps the method's total right. */
    uint64_t offset = address >= f->start ? address - f->start : 0;
    uint32_t from, to;
    report_ranges_range_of(f->map, f->nmap, f->last_bcpc, offset, &from, &to);
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].from == from && r->v[i].to == to) {
            r->v[i].samples += samples;
            return;
        }
    }
    report_mem_reserve(&r->v, &r->cap, r->n + 1, sizeof *r->v);
    ReportRange *n = &r->v[r->n++];
    *n = (ReportRange){.from = from, .to = to, .samples = samples};
    lines_of(f, n);
}

static int cmp_range(const void *a, const void *b)
{
    const ReportRange *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

void report_ranges_sort(ReportRanges *r)
{
    if (r->n > 1)
        qsort(r->v, r->n, sizeof *r->v, cmp_range);
}

void report_ranges_free(ReportRanges *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
}

static int cmp_map_entry(const void *a, const void *b)
{
    const ReportMapEntry *x = a, *y = b;
    if (x->mcpc != y->mcpc)
        return x->mcpc < y->mcpc ? -1 : 1;
    return (x->bcpc > y->bcpc) - (x->bcpc < y->bcpc);
}

static int cmp_line_entry(const void *a, const void *b)
{
    const ReportLineEntry *x = a, *y = b;
    return (x->bcpc > y->bcpc) - (x->bcpc < y->bcpc);
}

void report_ranges_sort_map(ReportMapEntry *map, size_t n) { qsort(map, n, sizeof *map, cmp_map_entry); }
void report_ranges_sort_lines(ReportLineEntry *lines, size_t n) { qsort(lines, n, sizeof *lines, cmp_line_entry); }
