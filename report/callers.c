/*
 * report/callers.c — the text report's callers section (vmprofd
 * --callers; ReportTextOptions.callers), printed after the generated,
 * vanilla and rest tables and before **Memory**:
 *
 *   **Callers** (of the 10 functions with most samples, by whole stacks)
 *   Stacks>>leaf:	(1267 samples)
 *   	74.98%	Stacks>>middleB	(950)
 *   	25.02%	Stacks>>middleA	(317)
 *   isNil (closed PIC)	(380 samples)
 *   	99.74%	Stacks>>leaf:	(379)
 *   	 0.26%	(no caller)	(1)
 *
 * Which functions: the CALLERS_TOP with the most samples of their own (the
 * stack's leaf), most first, equal counts by name — the functions the
 * tables rank first, whatever their region.
 *
 * Their callers: for each sample whose leaf is the function, the nearest
 * frame towards the root whose function is a different one. So a
 * recursive method's caller is whoever entered the recursion (fib: called
 * by fib called by fib called by benchmark counts under benchmark), and
 * each sample counts once for one caller: the shares add up to 100%. A
 * stack with nothing but the function (or only more of it) counts under
 * "(no caller)". Each row is `\t<share of the function's samples>\t<caller>
 * \t(<samples>)`, most first, equal counts by name; past CALLERS_ROWS
 * callers the rest fold into one "...others..." row, as the tables fold
 * their tail.
 *
 * Functions and callers are merged by name, as the folded stacks and the
 * flame graph merge them: two copies of a method (before and after a
 * compaction) are one row. A PIC is a frame of its own when the stack
 * shows it (a closed PIC's caller is the method that sent through it).
 */
#include "report/format.h"
#include "report/mem.h"
#include "report/profile.h"

#include <stdlib.h>
#include <string.h>

/* REPORT.md's tables fit a first screen; ten functions of up to ten
 * callers each keep this section to about one more. */
#define CALLERS_TOP 10
#define CALLERS_ROWS 10

typedef struct Count {
    const char *name;
    uint64_t n;
    size_t id; /* name id (leaves) or function index (name_ids' sort) */
} Count;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const Count *)a)->name, ((const Count *)b)->name);
}

static int by_count(const void *a, const void *b)
{
    const Count *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Functions to dense name ids (equal names, equal id); answers how many
 * names, with names[id] the name. */
static size_t name_ids(const Profile *p, size_t *id_of, const char **names)
{
    Count *order = report_mem_array(p->nfunctions ? p->nfunctions : 1, sizeof *order);
    for (size_t f = 0; f < p->nfunctions; f++)
        order[f] = (Count){p->functions[f].name, 0, f};
    qsort(order, p->nfunctions, sizeof *order, by_name);
    size_t n = 0;
    for (size_t i = 0; i < p->nfunctions; i++) {
        if (n == 0 || strcmp(names[n - 1], order[i].name) != 0)
            names[n++] = order[i].name;
        id_of[order[i].id] = n - 1;
    }
    free(order);
    return n;
}

void report_write_callers(FILE *out, const Profile *p)
{
    size_t nf = p->nfunctions ? p->nfunctions : 1;
    size_t *id_of = report_mem_array(nf, sizeof *id_of);
    const char **names = report_mem_array(nf + 1, sizeof *names);
    size_t nnames = name_ids(p, id_of, names);
    size_t no_caller = nnames; /* one more id: "(no caller)" */
    names[no_caller] = "(no caller)";
#define FRAME_ID(s, k) id_of[p->locations[report_profile_frames(p, s)[k]].function]

    /* The top functions by samples of their own. */
    Count *leaves = report_mem_array(nnames ? nnames : 1, sizeof *leaves);
    for (size_t i = 0; i < nnames; i++)
        leaves[i] = (Count){names[i], 0, i};
    for (size_t i = 0; i < p->nsamples; i++)
        leaves[FRAME_ID(&p->samples[i], 0)].n += p->samples[i].weight;
    qsort(leaves, nnames, sizeof *leaves, by_count);
    size_t top = 0;
    while (top < CALLERS_TOP && top < nnames && leaves[top].n > 0)
        top++;

    /* rank[id]: the function's place among the top, or -1 */
    int *rank = report_mem_array(nnames + 1, sizeof *rank);
    for (size_t i = 0; i <= nnames; i++)
        rank[i] = -1;
    for (size_t t = 0; t < top; t++)
        rank[leaves[t].id] = (int)t;

    /* callers[t * (nnames + 1) + caller id]: samples of top function t
     * whose nearest different caller is that one */
    uint64_t *callers = report_mem_array(top * (nnames + 1) + 1, sizeof *callers);
    for (size_t i = 0; i < p->nsamples; i++) {
        const ReportSample *s = &p->samples[i];
        size_t leaf = FRAME_ID(s, 0);
        if (rank[leaf] < 0)
            continue;
        size_t caller = no_caller;
        for (uint32_t k = 1; k < s->nframes; k++)
            if (FRAME_ID(s, k) != leaf) {
                caller = FRAME_ID(s, k);
                break;
            }
        callers[(size_t)rank[leaf] * (nnames + 1) + caller] += s->weight;
    }
#undef FRAME_ID

    fprintf(out, "**Callers** (of the %zu functions with most samples, by whole stacks)\n", top);
    Count *rows = report_mem_array(nnames + 1, sizeof *rows);
    for (size_t t = 0; t < top; t++) {
        size_t nrows = 0;
        for (size_t c = 0; c <= nnames; c++)
            if (callers[t * (nnames + 1) + c])
                rows[nrows++] = (Count){names[c], callers[t * (nnames + 1) + c], c};
        qsort(rows, nrows, sizeof *rows, by_count);
        fprintf(out, "%s\t(%llu samples)\n", leaves[t].name, (unsigned long long)report_profile_rounded(p, leaves[t].n));
        uint64_t others = 0;
        for (size_t r = 0; r < nrows; r++) {
            if (r >= CALLERS_ROWS && nrows > CALLERS_ROWS + 1) { /* one row is never folded */
                others += rows[r].n;
                continue;
            }
            fprintf(out, "\t%s\t%s\t(%llu)\n", report_format_pct(rows[r].n, leaves[t].n).s, rows[r].name,
                    (unsigned long long)report_profile_rounded(p, rows[r].n));
        }
        if (others)
            fprintf(out, "\t%s\t...others...\t(%llu)\n", report_format_pct(others, leaves[t].n).s,
                    (unsigned long long)report_profile_rounded(p, others));
    }
    free(rows);
    free(callers);
    free(rank);
    free(leaves);
    free(names);
    free(id_of);
}
