/*
 * report/text.c — the VMProfiler text report (REPORT.md; reference 004,
 * Figure 7): header, samples per region, one ranked table per region with
 * bytecode ranges under JIT'd methods, then the counter sections
 * (counters.c), how the samples were taken, and the notes.
 *
 * Every sample counts once, at its leaf frame: the report answers "where
 * was the VM thread", not "who called it" (that is pprof's and the folded
 * stacks' job). In a CPU-weighted profile (report.h) a sample counts its
 * weight: rows, ranges and totals add weights, and show them as weighted
 * samples through report_profile_rounded.
 *
 * A method the JIT inlined into another is a row of its own, "B>>sel
 * (inlined into A>>sel)", one per method it was inlined into, with its own
 * bytecode ranges (report.h); A's row keeps the ranges of A's own code.
 */
#include "report/counters.h"
#include "report/format.h"
#include "report/mem.h"
#include "report/profile.h"
#include "report/ranges.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* REPORT.md: rows of at most 0.01% of all samples fold into ...others... */
#define OTHERS_BASIS_POINTS 1
/* REPORT.md: "the rest" is shown from 1% of all samples on. */
#define REST_MIN_PERCENT 1
/* REPORT.md: methods with more than 10 samples get bytecode ranges. */
#define DEFAULT_RANGE_MIN_SAMPLES 10

/* -- Rows: one per name within a region ----------------------------------- */

typedef struct Row {
    char *label;
    uint64_t samples;
    bool ranged;         /* some instance of it has bytecodes to split over */
    ReportRanges ranges;
} Row;

typedef struct Table {
    Row *rows;
    size_t n, cap;
    ReportIndex index;
    uint64_t samples;
} Table;

typedef struct RowKey {
    const Table *t;
    const char *label;
} RowKey;

static bool row_eq(const void *ctx, int item)
{
    const RowKey *k = ctx;
    return strcmp(k->t->rows[item].label, k->label) == 0;
}

/* The row named label; label is taken over (freed if the row exists). */
static Row *row_for(Table *t, char *label)
{
    uint64_t h = report_index_hash_str(BASE_FNV1A_BASIS, label);
    RowKey key = {t, label};
    int i = report_index_find(&t->index, h, row_eq, &key);
    if (i >= 0) {
        free(label);
        return &t->rows[i];
    }
    report_mem_reserve(&t->rows, &t->cap, t->n + 1, sizeof *t->rows);
    t->rows[t->n] = (Row){.label = label};
    report_index_insert(&t->index, h, (int)t->n);
    return &t->rows[t->n++];
}

static int cmp_row(const void *a, const void *b)
{
    const Row *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->label, y->label);
}

static void table_free(Table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->rows[i].label);
        report_ranges_free(&t->rows[i].ranges);
    }
    free(t->rows);
    report_index_free(&t->index);
}

/* Generated and vanilla code: the function's own name. The rest: grouped
 * by function and library, "memcpy [libc.so.6]", so the same symbol in two
 * libraries stays two rows; a function named after its library already
 * ("[libc.so.6]", "[vdso]") is not suffixed twice. */
static char *row_label(const Profile *p, const ReportFunctionInfo *f)
{
    if (f->inlined_into) /* a row per method it was inlined into (report.h) */
        return report_inlined_label(f);
    if (f->region != REPORT_REGION_REST || f->mapping < 0 || !p->mappings[f->mapping].file)
        return report_mem_strdup(f->name);
    const char *file = p->mappings[f->mapping].file;
    const char *slash = strrchr(file, '/');
    const char *base = slash && slash[1] ? slash + 1 : file;
    size_t blen = strlen(base);
    bool bracketed = blen >= 2 && base[0] == '[' && base[blen - 1] == ']';
    char *lib = report_mem_alloc(blen + 3);
    snprintf(lib, blen + 3, bracketed ? "%s" : "[%s]", base);
    char *s;
    if (strcmp(f->name, lib) == 0) {
        s = report_mem_strdup(f->name);
    } else {
        size_t need = strlen(f->name) + strlen(lib) + 2;
        s = report_mem_alloc(need);
        snprintf(s, need, "%s %s", f->name, lib);
    }
    free(lib);
    return s;
}

static void build_tables(const Profile *p, Table tables[3])
{
    uint64_t *at = report_mem_array(p->nlocations, sizeof *at);
    for (size_t i = 0; i < p->nsamples; i++)
        at[report_profile_frames(p, &p->samples[i])[0]] += p->samples[i].weight;
    /* Locations in index order, so equal inputs give byte-identical reports. */
    for (size_t l = 0; l < p->nlocations; l++) {
        if (at[l] == 0)
            continue;
        const ReportLocation *loc = &p->locations[l];
        const ReportFunctionInfo *f = &p->functions[loc->function];
        /* a native report has one table: the program's functions */
        Table *t = &tables[p->header.native_only ? REPORT_REGION_REST : f->region];
        Row *r = row_for(t, row_label(p, f));
        r->samples += at[l];
        t->samples += at[l];
        if (report_ranges_apply(f)) {
            r->ranged = true;
            report_ranges_add(&r->ranges, f, loc->address, at[l]);
        }
    }
    free(at);
    for (int i = 0; i < 3; i++) {
        if (tables[i].n > 1)
            qsort(tables[i].rows, tables[i].n, sizeof *tables[i].rows, cmp_row);
        for (size_t r = 0; r < tables[i].n; r++)
            report_ranges_sort(&tables[i].rows[r].ranges);
    }
}

/* -- Printing ------------------------------------------------------------- */

static bool folded_into_others(uint64_t samples, uint64_t total)
{
    return (unsigned __int128)samples * 10000u <= (unsigned __int128)total * OTHERS_BASIS_POINTS;
}

static unsigned long long shown(const Profile *p, uint64_t weight)
{
    return (unsigned long long)report_profile_rounded(p, weight);
}

static void print_ranges(FILE *out, const Profile *p, const Row *r, bool lines)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < r->ranges.n; i++) {
        const ReportRange *g = &r->ranges.v[i];
        cumulative += g->samples;
        char where[64] = "";
        if (lines && g->line_lo) {
            if (g->line_lo == g->line_hi)
                snprintf(where, sizeof where, "  line %u", g->line_lo);
            else
                snprintf(where, sizeof where, "  lines %u-%u", g->line_lo, g->line_hi);
        }
        fprintf(out, "\t%s\t%u->%u%s\t(%llu)\t(%s)\n", report_format_pct(g->samples, r->samples).s, g->from, g->to,
                where, shown(p, g->samples), report_format_pct(cumulative, r->samples).s);
    }
}

static void print_table(FILE *out, const Profile *p, const char *title, const Table *t, uint64_t total,
                        const ReportTextOptions *opt)
{
    fprintf(out, "%% of %s (%% of total)\t\t\t(samples) (cumulative)\n", title);
    uint64_t cumulative = 0, others = 0;
    for (size_t i = 0; i < t->n; i++) {
        const Row *r = &t->rows[i];
        if (folded_into_others(r->samples, total)) {
            others += r->samples;
            continue;
        }
        cumulative += r->samples;
        fprintf(out, "%s    (%s)\t%s\t(%llu)\t(%s)\n", report_format_pct(r->samples, t->samples).s,
                report_format_pct(r->samples, total).s, r->label, shown(p, r->samples),
                report_format_pct(cumulative, t->samples).s);
        if (r->ranged && report_profile_samples(p, r->samples) > (double)opt->range_min_samples)
            print_ranges(out, p, r, opt->lines);
    }
    if (others) {
        cumulative += others;
        fprintf(out, "%s    (%s)\t...others...\t(%llu)\t(%s)\n", report_format_pct(others, t->samples).s,
                report_format_pct(others, total).s, shown(p, others),
                report_format_pct(cumulative, t->samples).s);
    }
}

static void print_header(FILE *out, const Profile *p, size_t total)
{
    const ReportHeader *h = &p->header;
    report_text_head(out, p);
    /* The achieved rate, not the requested one: what the counts rest on. */
    double hz = h->seconds > 0 ? (double)total / h->seconds : 0.0;
    fprintf(out, "%.3f seconds; sampling frequency %lld hz\n", h->seconds, (long long)llround(hz));
}

static void print_sampling(FILE *out, const Profile *p)
{
    const ReportHeader *h = &p->header;
    if (h->mode) {
        fprintf(out, "sampled with %s", h->mode);
        if (h->requested_hz > 0)
            fprintf(out, " at %lld hz requested", (long long)llround(h->requested_hz));
        if (h->mode_reason)
            fprintf(out, " (%s)", h->mode_reason);
        fprintf(out, "\n");
    }
    if (h->cpu_weighted)
        fprintf(out,
                "samples weighted by CPU time: each counts the CPU time its thread used since its previous "
                "sample, in sampling periods (%zu samples taken, %.1f weighted)\n",
                p->nsamples, report_profile_samples(p, report_profile_total_weight(p)));
    if (h->have_sched) {
        double run = (double)h->sched_run_ns / 1e9, wait = (double)h->sched_wait_ns / 1e9;
        fprintf(out, "on a CPU %.3f s; runnable but waiting for a CPU %.3f s", run, wait);
        if (h->seconds > 0)
            fprintf(out, " (%.1f%% of the wall time)", 100.0 * wait / h->seconds);
        fprintf(out, "\n");
    }
    if (h->lost_samples)
        fprintf(out, "%llu samples lost\n", (unsigned long long)h->lost_samples);
    if (p->rejected_samples)
        fprintf(out, "%llu samples dropped: they named locations the profile does not have\n",
                (unsigned long long)p->rejected_samples);
    for (size_t i = 0; i < p->nnotes; i++)
        fprintf(out, "%s\n", p->notes[i]);
}

bool report_write_text(FILE *out, const Profile *p, const ReportTextOptions *options, char *err, size_t errlen)
{
    if (p->is_alloc) /* "who allocates": bytes where this report has samples */
        return report_write_alloc_text(out, p, options, err, errlen);
    ReportTextOptions opt = {.lines = false, .range_min_samples = DEFAULT_RANGE_MIN_SAMPLES};
    if (options)
        opt = *options;

    Table tables[3] = {0};
    build_tables(p, tables);
    uint64_t total = report_profile_total_weight(p);
    uint64_t gen = tables[REPORT_REGION_GENERATED].samples;
    uint64_t van = tables[REPORT_REGION_VANILLA].samples;
    uint64_t rest = tables[REPORT_REGION_REST].samples;
    uint64_t vm = gen + van;

    errno = 0;
    clearerr(out);
    print_header(out, p, p->nsamples);
    if (p->header.native_only) {
        fprintf(out, "%llu samples in the program\n\n", shown(p, total));
        print_table(out, p, "the program", &tables[REPORT_REGION_REST], total, &opt);
        if (opt.callers) {
            fprintf(out, "\n");
            report_write_callers(out, p);
        }
        fprintf(out, "\n");
        print_sampling(out, p);
        goto done;
    }
    fprintf(out, "%llu samples in the VM\t(%llu samples in the entire program)  %s of total\n", shown(p, vm),
            shown(p, total), report_format_pct(vm, total).s);
    fprintf(out, "\n%llu samples in generated vm code %s of entire vm (%s of total)\n", shown(p, gen),
            report_format_pct(gen, vm).s, report_format_pct(gen, total).s);
    fprintf(out, "%llu samples in vanilla vm code %s of entire vm (%s of total)\n", shown(p, van),
            report_format_pct(van, vm).s, report_format_pct(van, total).s);
    fprintf(out, "\n");
    print_table(out, p, "generated vm code", &tables[REPORT_REGION_GENERATED], total, &opt);
    fprintf(out, "\n");
    print_table(out, p, "vanilla vm code", &tables[REPORT_REGION_VANILLA], total, &opt);
    if (rest > 0 && rest * 100 >= total * REST_MIN_PERCENT) {
        fprintf(out, "\n%llu samples in the rest  %s of total\n", shown(p, rest),
                report_format_pct(rest, total).s);
        print_table(out, p, "rest", &tables[REPORT_REGION_REST], total, &opt);
    }
    if (opt.callers) {
        fprintf(out, "\n");
        report_write_callers(out, p);
    }
    fprintf(out, "\n");
    report_counters_write(out, &p->header);
    fprintf(out, "\n");
    print_sampling(out, p);

done:
    for (int i = 0; i < 3; i++)
        table_free(&tables[i]);
    if (fflush(out) != 0 || ferror(out)) {
        if (err && errlen)
            snprintf(err, errlen, "writing the text report: %s", errno ? strerror(errno) : "write error");
        return false;
    }
    return true;
}
