/*
 * tests/vmprofd/truth_check.c — judges vmprofd's resolutions of samples in
 * JIT'd code against the ground truth stvm wrote itself.
 *
 *   truth_check TRUTH RESOLUTIONS MIN_RESOLVED
 *
 * TRUTH is stvm --code-log-truth's file (profiler/codetruth.h: L/M/F lines
 * with the events' times), RESOLUTIONS vmprofd --debug-resolutions' file
 * (one line per sample whose leaf lay in the code zone: time, tid, space,
 * address, status, and for a resolved one the piece's start, bytecode
 * range and name). This program rebuilds, from TRUTH alone and with its
 * own simple interval code (not report/codemap.c, which it checks), which
 * piece owned each machine-code address at each time, and counts:
 *
 *   right       resolved to the piece that was there then, at its start
 *   wrong       resolved to anything else                      -> failure
 *   missed      "nothing" where the truth has a piece          -> failure
 *   lost/before unresolved because events were lost / before the log (allowed)
 *
 * A resolution in code inlined into its piece (TRUTH's R lines after the
 * piece's L) must be followed by its "i" lines, the first naming the
 * innermost method there "inlined into" the piece: else it is wrong, and
 * so is an "i" line where the truth has no inlined code.
 *
 * and, as evidence the run exercised what it should, how many right ones
 * were in a piece that had been moved and how many at an address that held
 * more than one piece during the run. Exit 0 when nothing is wrong or
 * missed and at least MIN_RESOLVED samples were right; 1 otherwise; 2 on a
 * bad file.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Span {
    uint64_t start, size, t_begin, t_end;
    char *name;
    bool moved; /* it came to this address by a move */
    size_t first_range, nranges; /* its inlined ranges in ranges[] */
} Span;

typedef struct Range {
    uint64_t start, end; /* from the piece's start */
    char *name;          /* the innermost method there */
} Range;

static Range *ranges;
static size_t nranges, capranges;

static Span *spans;
static size_t nspans, capspans;
/* open spans: a small linear table is enough for a 64 KiB zone's ~200 pieces */
static size_t *open_idx;
static size_t nopen, capopen;

static void die(const char *what, const char *file, long line)
{
    fprintf(stderr, "truth_check: %s: line %ld: %s\n", file, line, what);
    exit(2);
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap * 2 : 1024;
    while (n < need)
        n *= 2;
    p = realloc(p, n * elem);
    if (!p) {
        fprintf(stderr, "truth_check: out of memory\n");
        exit(2);
    }
    *cap = n;
    return p;
}

static long find_open(uint64_t start)
{
    for (size_t i = 0; i < nopen; i++)
        if (spans[open_idx[i]].start == start)
            return (long)i;
    return -1;
}

static void close_open(long i, uint64_t t)
{
    spans[open_idx[i]].t_end = t;
    open_idx[i] = open_idx[--nopen];
}

static void open_span(uint64_t start, uint64_t size, uint64_t t, char *name, bool moved)
{
    long o = find_open(start);
    if (o >= 0)
        close_open(o, t);
    spans = grow(spans, &capspans, nspans + 1, sizeof *spans);
    spans[nspans] = (Span){start, size, t, UINT64_MAX, name, moved, nranges, 0};
    open_idx = grow(open_idx, &capopen, nopen + 1, sizeof *open_idx);
    open_idx[nopen++] = nspans++;
}

static void read_truth(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    char *line = NULL;
    size_t cap = 0;
    long no = 0;
    long last_load = -1; /* the span of the last L line, for its R lines */
    while (getline(&line, &cap, f) > 0) {
        no++;
        line[strcspn(line, "\n")] = 0;
        uint64_t t, a, b, size;
        unsigned space, kind;
        int at = 0;
        if (line[0] == 'L') {
            if (sscanf(line, "L %" SCNu64 " %u %" SCNx64 " %" SCNu64 " %u %n", &t, &space, &a, &size, &kind, &at) != 5)
                die("bad load line", path, no);
            if (space != 0) {
                last_load = -1;
                continue; /* bytecodes: another address space */
            }
            open_span(a, size, t, strdup(line + at), false);
            last_load = (long)nspans - 1;
            continue;
        } else if (line[0] == 'R') {
            uint64_t rs, re;
            if (sscanf(line, "R %" SCNx64 " %" SCNx64 " %n", &rs, &re, &at) != 2)
                die("bad range line", path, no);
            if (last_load < 0)
                continue; /* after bytecodes */
            ranges = grow(ranges, &capranges, nranges + 1, sizeof *ranges);
            ranges[nranges++] = (Range){rs, re, strdup(line + at)};
            spans[last_load].nranges++;
            continue;
        } else if (line[0] == 'M') {
            last_load = -1;
            if (sscanf(line, "M %" SCNu64 " %" SCNx64 " %" SCNx64 " %" SCNu64, &t, &a, &b, &size) != 4)
                die("bad move line", path, no);
            long o = find_open(a);
            if (o < 0)
                continue; /* not machine code */
            char *name = spans[open_idx[o]].name;
            uint64_t sz = spans[open_idx[o]].size;
            size_t fr = spans[open_idx[o]].first_range, nr = spans[open_idx[o]].nranges;
            close_open(o, t);
            open_span(b, sz, t, name, true);
            spans[nspans - 1].first_range = fr;
            spans[nspans - 1].nranges = nr;
        } else if (line[0] == 'F') {
            last_load = -1;
            if (sscanf(line, "F %" SCNu64 " %" SCNx64 " %" SCNu64, &t, &a, &size) != 3)
                die("bad free line", path, no);
            long o = find_open(a);
            if (o >= 0)
                close_open(o, t);
        } else {
            die("unknown line", path, no);
        }
    }
    free(line);
    fclose(f);
}

static int by_start(const void *x, const void *y)
{
    const Span *a = x, *b = y;
    return (a->start > b->start) - (a->start < b->start);
}

static uint64_t max_size;

/* The span owning addr at t, or NULL. */
static const Span *truth_at(uint64_t t, uint64_t addr)
{
    size_t lo = 0, hi = nspans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spans[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k-- > 0 && addr - spans[k].start < max_size;)
        if (addr - spans[k].start < spans[k].size && spans[k].t_begin <= t && t < spans[k].t_end)
            return &spans[k];
    return NULL;
}

/* The innermost method inlined at offset off of span s, or NULL. */
static const char *inlined_at(const Span *s, uint64_t off)
{
    for (size_t k = s->first_range; k < s->first_range + s->nranges; k++)
        if (ranges[k].start <= off && off < ranges[k].end)
            return ranges[k].name;
    return NULL;
}

/* Whether more than one piece (by name) owned addr during the run. */
static bool shared_address(uint64_t addr)
{
    const char *first = NULL;
    size_t lo = 0, hi = nspans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spans[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k-- > 0 && addr - spans[k].start < max_size;) {
        if (addr - spans[k].start >= spans[k].size)
            continue;
        if (!first)
            first = spans[k].name;
        else if (strcmp(first, spans[k].name) != 0)
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: truth_check TRUTH RESOLUTIONS MIN_RESOLVED\n");
        return 2;
    }
    read_truth(argv[1]);
    qsort(spans, nspans, sizeof *spans, by_start);
    for (size_t i = 0; i < nspans; i++)
        if (spans[i].size > max_size)
            max_size = spans[i].size;

    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    long no = 0;
    uint64_t right = 0, wrong = 0, missed = 0, lost = 0, before = 0, in_moved = 0, at_shared = 0, inlined_right = 0;
    bool after_m = false;                 /* the line before was a right "m" */
    const char *expect_inlined = NULL;    /* ... in inlined code: its innermost method */
    const char *expect_piece = NULL;
    while (getline(&line, &cap, f) > 0) {
        no++;
        line[strcspn(line, "\n")] = 0;
        uint64_t t, addr, start;
        unsigned tid, from, to;
        char space, status[16];
        int at = 0;
        if (sscanf(line, "%" SCNu64 " %u %c 0x%" SCNx64 " %15s %n", &t, &tid, &space, &addr, status, &at) != 5)
            die("bad resolution line", argv[2], no);
        if (space == 'i') {
            /* the first "i" line after an "m" line names the innermost inlined method */
            if (after_m) {
                int at2 = 0;
                if (sscanf(line + at, "0x%" SCNx64 " %u %u %n", &start, &from, &to, &at2) != 3)
                    die("bad inlined line", argv[2], no);
                char want[2200];
                snprintf(want, sizeof want, "%s (inlined into %s)", expect_inlined ? expect_inlined : "",
                         expect_piece ? expect_piece : "");
                if (expect_inlined && strcmp(line + at + at2, want) == 0) {
                    inlined_right++;
                } else {
                    wrong++;
                    if (wrong <= 10)
                        printf("WRONG: t=%" PRIu64 " 0x%" PRIx64 ": vmprofd says %s, truth says %s\n", t, addr,
                               line + at + at2, expect_inlined ? want : "no inlined method");
                }
                expect_inlined = NULL;
            }
            after_m = false;
            continue;
        }
        if (expect_inlined) {
            wrong++;
            if (wrong <= 10)
                printf("WRONG: no inlined frame where the truth has %s\n", expect_inlined);
        }
        expect_inlined = NULL;
        after_m = false;
        if (space != 'm')
            continue;
        const Span *s = truth_at(t, addr);
        if (strcmp(status, "found") == 0) {
            int at2 = 0;
            if (sscanf(line + at, "0x%" SCNx64 " %u %u %n", &start, &from, &to, &at2) != 3)
                die("bad resolved line", argv[2], no);
            const char *name = line + at + at2;
            if (s && s->start == start && strcmp(s->name, name) == 0) {
                right++;
                after_m = true;
                expect_inlined = inlined_at(s, addr - s->start);
                expect_piece = s->name;
                in_moved += s->moved;
                at_shared += shared_address(addr);
            } else {
                wrong++;
                if (wrong <= 10)
                    printf("WRONG: t=%" PRIu64 " 0x%" PRIx64 ": vmprofd says %s at 0x%" PRIx64 ", truth says %s\n", t,
                           addr, name, start, s ? s->name : "nothing");
            }
        } else if (strcmp(status, "nothing") == 0) {
            if (s) {
                missed++;
                if (missed <= 10)
                    printf("MISSED: t=%" PRIu64 " 0x%" PRIx64 ": vmprofd found nothing, truth says %s\n", t, addr,
                           s->name);
            }
        } else if (strcmp(status, "lost") == 0) {
            lost++;
        } else if (strcmp(status, "before") == 0) {
            before++;
        } else {
            die("unknown status", argv[2], no);
        }
    }
    free(line);
    fclose(f);
    if (expect_inlined) {
        wrong++;
        printf("WRONG: no inlined frame where the truth has %s\n", expect_inlined);
    }
    uint64_t min = strtoull(argv[3], NULL, 10);
    printf("truth: %zu spans of machine code; samples in the zone: %" PRIu64 " right (%" PRIu64
           " in moved pieces, %" PRIu64 " at addresses that held several pieces), %" PRIu64 " wrong, %" PRIu64
           " missed, %" PRIu64 " while events were lost, %" PRIu64 " before the log\n",
           nspans, right, in_moved, at_shared, wrong, missed, lost, before);
    if (nranges)
        printf("truth: %zu inlined ranges; %" PRIu64 " samples in them named their innermost method right\n", nranges,
               inlined_right);
    if (wrong || missed)
        return 1;
    if (right < min) {
        printf("too few samples resolved: %" PRIu64 " < %" PRIu64 "\n", right, min);
        return 1;
    }
    return 0;
}
