/*
 * report/callers.c — the text report's callers section (vmprofd
 * --callers): for each of the functions with the most samples of their
 * own (the leaf of the stack), who called it, with shares.
 *
 *   **Callers** (of the 10 functions with most samples, by whole stacks)
 *   Stacks>>leaf:	(1267 samples)
 *   	74.98%	Stacks>>middleB	(950)
 *   	25.02%	Stacks>>middleA	(317)
 *
 * A caller is the nearest frame below the leaf whose function differs
 * (a recursive method's caller is whoever entered the recursion), named
 * as the function rows are. A leaf with no other frame below it counts
 * under "(no caller)". Functions and callers are merged by name.
 */
#include "report/format.h"
#include "report/mem.h"
#include "report/profile.h"

#include <stdlib.h>
#include <string.h>

#define CALLERS_TOP 10 /* rows, as a profile's first screen shows */

typedef struct Count {
    const char *name;
    uint64_t n;
} Count;

static Count *bump(Count **v, size_t *n, size_t *cap, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].name, name) == 0) {
            (*v)[i].n++;
            return &(*v)[i];
        }
    report_mem_reserve(v, cap, *n + 1, sizeof **v);
    (*v)[*n] = (Count){name, 1};
    return &(*v)[(*n)++];
}

static int by_count(const void *a, const void *b)
{
    const Count *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    return strcmp(x->name, y->name);
}

static const char *fn_name(const Profile *p, int loc) { return p->functions[p->locations[loc].function].name; }

void report_write_callers(FILE *out, const Profile *p)
{
    Count *leaves = NULL;
    size_t nleaves = 0, capleaves = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        bump(&leaves, &nleaves, &capleaves, fn_name(p, report_profile_frames(p, &p->samples[i])[0]));
    qsort(leaves, nleaves, sizeof *leaves, by_count);
    size_t top = nleaves < CALLERS_TOP ? nleaves : CALLERS_TOP;
    fprintf(out, "**Callers** (of the %zu functions with most samples, by whole stacks)\n", top);
    for (size_t t = 0; t < top; t++) {
        Count *callers = NULL;
        size_t ncallers = 0, capcallers = 0;
        for (size_t i = 0; i < p->nsamples; i++) {
            const ReportSample *s = &p->samples[i];
            const int *fr = report_profile_frames(p, s);
            if (strcmp(fn_name(p, fr[0]), leaves[t].name) != 0)
                continue;
            const char *caller = "(no caller)";
            for (uint32_t k = 1; k < s->nframes; k++)
                if (strcmp(fn_name(p, fr[k]), leaves[t].name) != 0) {
                    caller = fn_name(p, fr[k]);
                    break;
                }
            bump(&callers, &ncallers, &capcallers, caller);
        }
        qsort(callers, ncallers, sizeof *callers, by_count);
        fprintf(out, "%s\t(%llu samples)\n", leaves[t].name, (unsigned long long)leaves[t].n);
        for (size_t c = 0; c < ncallers; c++)
            fprintf(out, "\t%s\t%s\t(%llu)\n", report_format_pct(callers[c].n, leaves[t].n).s, callers[c].name,
                    (unsigned long long)callers[c].n);
        free(callers);
    }
    free(leaves);
}
