/*
 * report/folded.c — folded stacks for flame graph tools (Brendan Gregg's
 * flamegraph.pl, speedscope, inferno): one line per distinct stack,
 *
 *   root;caller;…;leaf <count>
 *
 * root first, frames named by their function, lines sorted by stack text
 * so equal profiles give identical files. flamegraph.pl splits frames at
 * ';' and the count at the last whitespace of the line, so names keep their
 * spaces ("[] in Foo>>bar", as perf script's folded output and py-spy keep
 * them); only what would split a frame or a line is replaced: ';' becomes
 * ':' and a line break a space.
 */
#include "report/mem.h"
#include "report/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct Line {
    char *text;
    size_t sample; /* first sample with this stack */
    uint64_t count;
} Line;

typedef struct Lines {
    Line *v;
    size_t n, cap;
    ReportIndex index;
} Lines;

typedef struct StackKey {
    const Profile *p;
    const Lines *lines;
    const ReportSample *s;
} StackKey;

static bool stack_eq(const void *ctx, int item)
{
    const StackKey *k = ctx;
    const ReportSample *a = k->s, *b = &k->p->samples[k->lines->v[item].sample];
    return a->nframes == b->nframes &&
           memcmp(report_profile_frames(k->p, a), report_profile_frames(k->p, b), a->nframes * sizeof(int)) == 0;
}

/* Samples with the same locations (threads are not told apart here). */
static void collect(const Profile *p, Lines *ls)
{
    for (size_t i = 0; i < p->nsamples; i++) {
        const ReportSample *s = &p->samples[i];
        uint64_t h = base_fnv1a(BASE_FNV1A_BASIS, report_profile_frames(p, s), s->nframes * sizeof(int));
        StackKey key = {p, ls, s};
        int found = report_index_find(&ls->index, h, stack_eq, &key);
        if (found >= 0) {
            ls->v[found].count += s->weight;
            continue;
        }
        report_mem_reserve(&ls->v, &ls->cap, ls->n + 1, sizeof *ls->v);
        ls->v[ls->n] = (Line){NULL, i, s->weight};
        report_index_insert(&ls->index, h, (int)ls->n++);
    }
}

static char *sanitize_into(char *d, const char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (c == ';')
            c = ':';
        else if (c == '\n' || c == '\r')
            c = ' ';
        *d++ = c;
    }
    return d;
}

static char *stack_text(const Profile *p, const ReportSample *s)
{
    const int *frames = report_profile_frames(p, s);
    size_t n = 1;
    for (uint32_t i = 0; i < s->nframes; i++)
        n += strlen(p->functions[p->locations[frames[i]].function].name) + 1;
    char *text = report_mem_alloc(n);
    char *d = text;
    for (uint32_t i = s->nframes; i-- > 0;) { /* frames are leaf first */
        d = sanitize_into(d, p->functions[p->locations[frames[i]].function].name);
        if (i > 0)
            *d++ = ';';
    }
    *d = '\0';
    return text;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const Line *)a)->text, ((const Line *)b)->text);
}

bool report_write_folded(FILE *out, const Profile *p, char *err, size_t errlen)
{
    /* Distinct location stacks first, then their text, sorted, with equal
     * neighbours summed: two stacks that differ only in addresses within
     * the same functions (or in names that sanitize alike) are one line. */
    Lines ls = {0};
    collect(p, &ls);
    for (size_t i = 0; i < ls.n; i++)
        ls.v[i].text = stack_text(p, &p->samples[ls.v[i].sample]);
    if (ls.n > 1)
        qsort(ls.v, ls.n, sizeof *ls.v, cmp_line);

    errno = 0;
    clearerr(out);
    for (size_t i = 0; i < ls.n;) {
        uint64_t count = ls.v[i].count;
        size_t j = i + 1;
        for (; j < ls.n && strcmp(ls.v[j].text, ls.v[i].text) == 0; j++)
            count += ls.v[j].count;
        /* whole samples, as flame graph tools read them: a CPU-weighted
         * stack's weighted samples, rounded; one that rounds to none goes */
        uint64_t shown = report_profile_rounded(p, count);
        if (shown)
            fprintf(out, "%s %llu\n", ls.v[i].text, (unsigned long long)shown);
        i = j;
    }
    for (size_t i = 0; i < ls.n; i++)
        free(ls.v[i].text);
    free(ls.v);
    report_index_free(&ls.index);
    if (fflush(out) != 0 || ferror(out)) {
        if (err && errlen)
            snprintf(err, errlen, "writing folded stacks: %s", errno ? strerror(errno) : "write error");
        return false;
    }
    return true;
}
