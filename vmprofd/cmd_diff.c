/*
 * vmprofd/cmd_diff.c — `vmprofd diff BASE NEW`: did my change help?
 *
 * Both profiles count every sample once, at its leaf, as the text report
 * does (report/text.c): per method (the leaf's function, its innermost
 * line; in an allocation profile the method that allocated, its "site"
 * label, as the allocation report counts it) and, under each method, per bytecode range (the sample's
 * "bytecodes" label, pprof_read.h). Each profile is normalised to its own
 * total of the compared value, so a longer or slower run does not look
 * like a change; a row's change is NEW's share minus BASE's, in
 * percentage points. Methods sort by the size of their change, largest
 * first, and so do the ranges under each.
 *
 *     base      new    change  method / bytecode range
 *   24.90%   74.82%  +49.92pp  DiffHot>>beta:
 *   24.10%   73.90%  +49.80pp      5->21
 *
 * -o FILE.svg: a differential flame graph (report/flamegraph.c with a
 * base): widths from NEW, colour from the change of each frame's share.
 */
#include "report/index.h"
#include "report/profile.h"
#include "vmprofd/options.h"
#include "vmprofd/commands.h"
#include "vmprofd/pprof_read.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* text.c's rule: rows of at most 0.01% in both fold into ...others... */
#define DIFF_OTHERS_PERCENT 0.01
/* text.c's rule: ranges under methods with more than 10 samples. */
#define DIFF_RANGE_MIN_SAMPLES 10

static void diff_usage(FILE *out)
{
    fputs("usage: vmprofd diff [options] BASE NEW\n"
          "\n"
          "Compares two pprof profiles vmprofd wrote (gzipped or not), per method and\n"
          "per bytecode range: each one's share of all samples in BASE and in NEW\n"
          "(each profile normalised to its own total) and the change in percentage\n"
          "points, largest change first.\n"
          "\n"
          "  -o, --output FILE      write to FILE instead of stdout: a differential\n"
          "                         flame graph when FILE ends in .svg (widths from\n"
          "                         NEW, red grew, blue shrank), else the text table;\n"
          "                         may be given twice\n"
          "  --sample-index NAME    compare the value NAME (samples, cpu, wall,\n"
          "                         alloc_space, alloc_objects, ...); default: the\n"
          "                         profiles' default value. Profiles with different\n"
          "                         sample types are only compared this way.\n"
          "  -h, --help             this text\n"
          "\n"
          "Exit status: 0 written, 1 a profile unreadable or not comparable, or the\n"
          "output not writable, 2 bad usage.\n",
          out);
}

/* -- Rows ----------------------------------------------------------------- */

typedef struct Row {
    char *method;
    char *range;       /* NULL: the method's own row */
    double value[2];   /* BASE, NEW */
    double samples[2];
    double share[2];   /* percent of the profile's total */
} Row;

typedef struct Rows {
    Row *v;
    size_t n, cap;
    ReportIndex index;
} Rows;

typedef struct RowKey {
    const Rows *rows;
    const char *method, *range;
} RowKey;

static bool row_eq(const void *ctx, int item)
{
    const RowKey *k = ctx;
    const Row *r = &k->rows->v[item];
    if (strcmp(r->method, k->method) != 0)
        return false;
    if (!r->range || !k->range)
        return r->range == k->range;
    return strcmp(r->range, k->range) == 0;
}

static Row *row_for(Rows *rows, const char *method, const char *range)
{
    uint64_t h = report_index_hash_str(BASE_FNV1A_BASIS, method);
    if (range)
        h = report_index_hash_str(h ^ 1, range);
    RowKey key = {rows, method, range};
    int i = report_index_find(&rows->index, h, row_eq, &key);
    if (i >= 0)
        return &rows->v[i];
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 64;
        Row *v = realloc(rows->v, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "vmprofd diff: out of memory\n");
            exit(1);
        }
        rows->v = v;
        rows->cap = cap;
    }
    Row *r = &rows->v[rows->n];
    *r = (Row){.method = strdup(method), .range = range ? strdup(range) : NULL};
    if (!r->method || (range && !r->range)) {
        fprintf(stderr, "vmprofd diff: out of memory\n");
        exit(1);
    }
    report_index_insert(&rows->index, h, (int)rows->n);
    return &rows->v[rows->n++];
}

static void rows_free(Rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        free(rows->v[i].method);
        free(rows->v[i].range);
    }
    free(rows->v);
    report_index_free(&rows->index);
}

static const char *function_name(const PprofFile *f, uint64_t id)
{
    const Perftools__Profiles__Function *fn = vmprofd_pprof_function(f, id);
    const char *name = fn ? vmprofd_pprof_string(f, fn->name) : "";
    if (!*name && fn)
        name = vmprofd_pprof_string(f, fn->system_name);
    return name;
}

/* The name of a location's innermost function, or its address. A
 * location of several lines is a method inlined into the last line's
 * (report/pprof.c): "B>>sel (inlined into A>>sel)", the text report's row
 * for it, so a method inlined into two others stays two rows. */
static const char *leaf_name(const PprofFile *f, const Perftools__Profiles__Location *l, char *buf, size_t len)
{
    if (l && l->n_line > 0) {
        const char *name = function_name(f, l->line[0]->function_id);
        if (*name && l->n_line > 1) {
            const char *into = function_name(f, l->line[l->n_line - 1]->function_id);
            size_t n = strlen(name), suffix = strlen(" (inlined)");
            if (n >= suffix && strcmp(name + n - suffix, " (inlined)") == 0)
                n -= suffix;
            snprintf(buf, len, "%.*s (inlined into %s)", (int)n, name, *into ? into : "?");
            return buf;
        }
        if (*name)
            return name;
    }
    snprintf(buf, len, l ? "[0x%" PRIx64 "]" : "[no stack]", l ? l->address : 0);
    return buf;
}

/* A sample's string label key, or NULL. */
static const char *label_of(const PprofFile *f, const Perftools__Profiles__Sample *s, const char *key)
{
    for (size_t k = 0; k < s->n_label; k++)
        if (strcmp(vmprofd_pprof_string(f, s->label[k]->key), key) == 0 && *vmprofd_pprof_string(f, s->label[k]->str))
            return vmprofd_pprof_string(f, s->label[k]->str);
    return NULL;
}

typedef struct Side {
    const char *path;
    PprofFile f;
    int value;       /* the compared value's index */
    int samples;     /* "samples" value's index, or -1 */
    double total, nsamples;
    bool ranged;     /* some sample carries a bytecode range */
} Side;

static void count(Rows *rows, Side *side, int which)
{
    const Perftools__Profiles__Profile *m = side->f.m;
    for (size_t i = 0; i < m->n_sample; i++) {
        const Perftools__Profiles__Sample *s = m->sample[i];
        double v = (double)s->value[side->value];
        double n = side->samples >= 0 ? (double)s->value[side->samples] : 1.0;
        side->total += v;
        side->nsamples += n;
        char buf[2 * PROF_CODE_LOG_NAME_MAX + 64];
        const Perftools__Profiles__Location *leaf =
            s->n_location_id ? vmprofd_pprof_location(&side->f, s->location_id[0]) : NULL;
        /* an allocation profile's leaf is the class: its "site" allocated */
        const char *method = label_of(&side->f, s, VMPROFD_PPROF_SITE_LABEL);
        if (!method)
            method = leaf_name(&side->f, leaf, buf, sizeof buf);
        Row *r = row_for(rows, method, NULL);
        r->value[which] += v;
        r->samples[which] += n;
        const char *range = label_of(&side->f, s, VMPROFD_PPROF_RANGE_LABEL);
        if (range) {
            side->ranged = true;
            r = row_for(rows, method, range);
            r->value[which] += v;
            r->samples[which] += n;
        }
    }
}

/* -- Order ---------------------------------------------------------------- */

static double change(const Row *r)
{
    return r->share[1] - r->share[0];
}

static int cmp_change(const Row *x, const Row *y)
{
    double a = fabs(change(x)), b = fabs(change(y));
    if (a != b)
        return a > b ? -1 : 1;
    double sa = x->share[0] + x->share[1], sb = y->share[0] + y->share[1];
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return 0;
}

/* -- Text ----------------------------------------------------------------- */

static void describe(FILE *out, const char *label, const Side *s)
{
    const Perftools__Profiles__ValueType *t = s->f.m->sample_type[s->value];
    const char *type = vmprofd_pprof_string(&s->f, t->type), *unit = vmprofd_pprof_string(&s->f, t->unit);
    if (s->samples >= 0)
        fprintf(out, "%s %s: %.0f samples", label, s->path, s->nsamples);
    else /* no sample count: the profile's records (distinct stacks) */
        fprintf(out, "%s %s: %zu stacks", label, s->path, s->f.m->n_sample);
    if (strcmp(unit, "nanoseconds") == 0)
        fprintf(out, ", %s %.3f s", type, s->total / 1e9);
    else if (strcmp(type, "samples") != 0)
        fprintf(out, ", %s %.0f %s", type, s->total, unit);
    char types[256];
    vmprofd_pprof_types(&s->f, types, sizeof types);
    fprintf(out, " (sample types %s)\n", types);
}

static void print_row(FILE *out, const Row *r, bool range)
{
    fprintf(out, "%7.2f%%  %7.2f%%  %+8.2fpp  %s%s\n", r->share[0], r->share[1], change(r), range ? "    " : "",
            range ? r->range : r->method);
}

static int cmp_row_ptr(const void *pa, const void *pb)
{
    const Row *x = *(const Row *const *)pa, *y = *(const Row *const *)pb;
    int c = cmp_change(x, y);
    if (c)
        return c;
    c = strcmp(x->method, y->method);
    if (c)
        return c;
    return strcmp(x->range ? x->range : "", y->range ? y->range : "");
}

/* Ranges grouped by method, each group by change. */
static int cmp_range_ptr(const void *pa, const void *pb)
{
    const Row *x = *(const Row *const *)pa, *y = *(const Row *const *)pb;
    int c = strcmp(x->method, y->method);
    return c ? c : cmp_row_ptr(pa, pb);
}

/* The first of method's ranges in ranges[0..n) (sorted by cmp_range_ptr), or n. */
static size_t first_range(Row *const *ranges, size_t n, const char *method)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ranges[mid]->method, method) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool write_text(FILE *out, Rows *rows, const Side side[2])
{
    const Perftools__Profiles__ValueType *t = side[0].f.m->sample_type[side[0].value];
    describe(out, "base", &side[0]);
    describe(out, "new ", &side[1]);
    fprintf(out, "shares of each profile's own total %s/%s, change in percentage points, largest first\n\n",
            vmprofd_pprof_string(&side[0].f, t->type), vmprofd_pprof_string(&side[0].f, t->unit));
    fprintf(out, "    base       new      change  method / bytecode range\n");

    size_t n = rows->n;
    Row **methods = calloc(n ? n : 1, sizeof *methods), **ranges = calloc(n ? n : 1, sizeof *ranges);
    if (!methods || !ranges) {
        free(methods);
        free(ranges);
        return false;
    }
    size_t nm = 0, nr = 0;
    for (size_t i = 0; i < n; i++)
        *(rows->v[i].range ? &ranges[nr++] : &methods[nm++]) = &rows->v[i];
    qsort(methods, nm, sizeof *methods, cmp_row_ptr);
    qsort(ranges, nr, sizeof *ranges, cmp_range_ptr);
    bool counted = side[0].samples >= 0 && side[1].samples >= 0;
    Row others = {.method = "...others..."};
    bool any_others = false;
    for (size_t i = 0; i < nm; i++) {
        const Row *m = methods[i];
        if (m->share[0] <= DIFF_OTHERS_PERCENT && m->share[1] <= DIFF_OTHERS_PERCENT) {
            for (int k = 0; k < 2; k++)
                others.share[k] += m->share[k];
            any_others = true;
            continue;
        }
        print_row(out, m, false);
        /* without a sample count (allocation profiles) every method's ranges */
        if (counted && m->samples[0] <= DIFF_RANGE_MIN_SAMPLES && m->samples[1] <= DIFF_RANGE_MIN_SAMPLES)
            continue;
        for (size_t k = first_range(ranges, nr, m->method); k < nr && strcmp(ranges[k]->method, m->method) == 0; k++)
            print_row(out, ranges[k], true);
    }
    if (any_others)
        print_row(out, &others, false);
    if (!side[0].ranged || !side[1].ranged)
        fprintf(out, "\n%s has no bytecode ranges (not written by this vmprofd, or no Smalltalk leaves): methods "
                     "only\n",
                !side[0].ranged ? side[0].path : side[1].path);
    free(methods);
    free(ranges);
    return true;
}

/* -- The flame graph ------------------------------------------------------ */

/* A Profile of a pprof's whole stacks (function names only), weighing
 * each sample by the compared value, for report/flamegraph.c. Where the
 * value is the one the period counts (cpu/nanoseconds), the flame graph
 * shows it as samples, as vmprofd's own do. */
static Profile *stacks_of(const Side *s)
{
    const Perftools__Profiles__Profile *m = s->f.m;
    Profile *p = report_profile_new();
    const Perftools__Profiles__ValueType *t = m->sample_type[s->value];
    ReportHeader h = {.vm_path = s->path};
    if (m->period_type && m->period > 0 &&
        strcmp(vmprofd_pprof_string(&s->f, m->period_type->type), vmprofd_pprof_string(&s->f, t->type)) == 0 &&
        strcmp(vmprofd_pprof_string(&s->f, m->period_type->unit), vmprofd_pprof_string(&s->f, t->unit)) == 0) {
        h.cpu_weighted = true;
        h.requested_hz = 1e9 / (double)m->period;
    }
    report_profile_set_header(p, &h);
    int *frames = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < m->n_sample; i++) {
        const Perftools__Profiles__Sample *sm = m->sample[i];
        int64_t v = sm->value[s->value];
        if (v <= 0)
            continue;
        size_t n = 0;
        for (size_t k = 0; k < sm->n_location_id; k++) {
            const Perftools__Profiles__Location *l = vmprofd_pprof_location(&s->f, sm->location_id[k]);
            size_t lines = l->n_line ? l->n_line : 1;
            if (n + lines > cap) {
                cap = (n + lines) * 2;
                int *nf = realloc(frames, cap * sizeof *nf);
                if (!nf) {
                    fprintf(stderr, "vmprofd diff: out of memory\n");
                    exit(1);
                }
                frames = nf;
            }
            for (size_t j = 0; j < lines; j++) { /* innermost first, as frames are leaf first */
                char buf[40];
                const char *name;
                if (l->n_line) {
                    const Perftools__Profiles__Function *fn = vmprofd_pprof_function(&s->f, l->line[j]->function_id);
                    name = vmprofd_pprof_string(&s->f, fn->name);
                    if (!*name)
                        name = leaf_name(&s->f, NULL, buf, sizeof buf);
                } else {
                    name = leaf_name(&s->f, l, buf, sizeof buf);
                }
                ReportFunctionInfo fi = {.name = name, .region = REPORT_REGION_REST, .mapping = -1};
                frames[n++] = report_profile_add_location(p, report_profile_add_function(p, &fi), 0, 0);
            }
        }
        if (n == 0)
            continue;
        report_profile_add_weighted_sample(p, 0, 0, frames, n, (uint64_t)v);
    }
    free(frames);
    return p;
}

static bool write_svg(FILE *out, const Side side[2], char *err, size_t errlen)
{
    Profile *base = stacks_of(&side[0]), *now = stacks_of(&side[1]);
    char title[512];
    snprintf(title, sizeof title, "vmprofd diff: %s -> %s", side[0].path, side[1].path);
    ReportFlameOptions o = {.title = title, .base = base};
    bool ok = report_write_flamegraph(out, now, &o, err, errlen);
    report_profile_free(base);
    report_profile_free(now);
    return ok;
}

/* -- The command ---------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The value both profiles are compared by, or false with a message. */
static bool pick_value(Side side[2], const char *name)
{
    char a[256], b[256];
    vmprofd_pprof_types(&side[0].f, a, sizeof a);
    vmprofd_pprof_types(&side[1].f, b, sizeof b);
    if (name) {
        for (int k = 0; k < 2; k++) {
            side[k].value = vmprofd_pprof_value_index(&side[k].f, name);
            if (side[k].value < 0) {
                fprintf(stderr, "vmprofd diff: %s has no value '%s' (its sample types: %s)\n", side[k].path, name,
                        k ? b : a);
                return false;
            }
        }
    } else {
        if (!vmprofd_pprof_same_types(&side[0].f, &side[1].f)) {
            const char *common = NULL;
            for (size_t i = 0; i < side[0].f.m->n_sample_type && !common; i++) {
                const char *t = vmprofd_pprof_string(&side[0].f, side[0].f.m->sample_type[i]->type);
                if (vmprofd_pprof_value_index(&side[1].f, t) >= 0)
                    common = t;
            }
            fprintf(stderr, "vmprofd diff: %s has sample types %s, %s has %s: they measure different things",
                    side[0].path, a, side[1].path, b);
            if (common)
                fprintf(stderr, "; compare one value both have with --sample-index NAME (e.g. --sample-index %s)\n",
                        common);
            else
                fprintf(stderr, " and have no value in common: nothing to compare\n");
            return false;
        }
        const Perftools__Profiles__Profile *m = side[0].f.m;
        int d = m->default_sample_type
                    ? vmprofd_pprof_value_index(&side[0].f, vmprofd_pprof_string(&side[0].f, m->default_sample_type))
                    : -1;
        side[0].value = side[1].value = d >= 0 ? d : (int)m->n_sample_type - 1; /* pprof's default: the last */
    }
    for (int k = 0; k < 2; k++) {
        side[k].samples = vmprofd_pprof_value_index(&side[k].f, "samples");
        const Perftools__Profiles__ValueType *t = side[k].f.m->sample_type[side[k].value];
        const Perftools__Profiles__ValueType *t0 = side[0].f.m->sample_type[side[0].value];
        if (strcmp(vmprofd_pprof_string(&side[k].f, t->unit), vmprofd_pprof_string(&side[0].f, t0->unit)) != 0) {
            fprintf(stderr, "vmprofd diff: '%s' is in %s in %s but in %s in %s: not comparable\n",
                    vmprofd_pprof_string(&side[0].f, t0->type), vmprofd_pprof_string(&side[0].f, t0->unit),
                    side[0].path, vmprofd_pprof_string(&side[k].f, t->unit), side[k].path);
            return false;
        }
    }
    return true;
}

static int diff(const char *base, const char *now, const char *const *outputs, size_t nout, const char *index)
{
    Side side[2] = {{.path = base}, {.path = now}};
    Rows rows = {0};
    int status = 1;
    char err[600];
    for (int k = 0; k < 2; k++)
        if (!vmprofd_pprof_read(side[k].path, &side[k].f, err, sizeof err)) {
            fprintf(stderr, "vmprofd diff: %s\n", err);
            goto done;
        }
    if (!pick_value(side, index))
        goto done;
    for (int k = 0; k < 2; k++) {
        count(&rows, &side[k], k);
        if (!(side[k].total > 0)) {
            fprintf(stderr, "vmprofd diff: %s has no samples (its total %s is %.0f): nothing to compare\n",
                    side[k].path, vmprofd_pprof_string(&side[k].f, side[k].f.m->sample_type[side[k].value]->type),
                    side[k].total);
            goto done;
        }
    }
    for (size_t i = 0; i < rows.n; i++)
        for (int k = 0; k < 2; k++)
            rows.v[i].share[k] = 100.0 * rows.v[i].value[k] / side[k].total;

    status = 0;
    if (nout == 0 && !write_text(stdout, &rows, side)) {
        fprintf(stderr, "vmprofd diff: out of memory\n");
        status = 1;
    }
    for (size_t i = 0; i < nout && status == 0; i++) {
        FILE *f = fopen(outputs[i], "w");
        if (!f) {
            fprintf(stderr, "vmprofd diff: cannot create %s: %s\n", outputs[i], strerror(errno));
            status = 1;
            break;
        }
        bool ok = ends_with(outputs[i], ".svg") ? write_svg(f, side, err, sizeof err) : write_text(f, &rows, side);
        if (!ok && !ends_with(outputs[i], ".svg"))
            snprintf(err, sizeof err, "out of memory");
        if (fclose(f) != 0 && ok) {
            snprintf(err, sizeof err, "%s", strerror(errno));
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "vmprofd diff: cannot write %s: %s\n", outputs[i], err);
            status = 1;
        }
    }
    if (fflush(stdout) != 0 && status == 0) {
        fprintf(stderr, "vmprofd diff: cannot write the table: %s\n", strerror(errno));
        status = 1;
    }
done:
    rows_free(&rows);
    for (int k = 0; k < 2; k++)
        vmprofd_pprof_free(&side[k].f);
    return status;
}

int vmprofd_diff_main(int argc, char **argv)
{
    const char *files[2];
    size_t nfiles = 0, nout = 0;
    const char *outputs[2];
    const char *index = NULL;
    bool only_files = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_files || a[0] != '-' || strcmp(a, "-") == 0) {
            if (nfiles == 2)
                return vmprofd_options_usage_error("diff", "more than two profiles: ", a);
            files[nfiles++] = a;
        } else if (strcmp(a, "--") == 0) {
            only_files = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            diff_usage(stdout);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strncmp(a, "--output=", 9) == 0) {
            const char *v = a[1] == 'o' || a[8] == '\0' ? (i + 1 < argc ? argv[++i] : NULL) : a + 9;
            if (!v || !*v)
                return vmprofd_options_usage_error("diff", "-o needs a file name", NULL);
            if (nout == 2)
                return vmprofd_options_usage_error("diff", "at most two outputs (a table and a flame graph): ", v);
            outputs[nout++] = v;
        } else if (strcmp(a, "--sample-index") == 0 || strncmp(a, "--sample-index=", 15) == 0) {
            index = a[14] == '=' ? a + 15 : (i + 1 < argc ? argv[++i] : NULL);
            if (!index || !*index)
                return vmprofd_options_usage_error("diff", "--sample-index needs a value's name (samples, cpu, alloc_space, ...)", NULL);
        } else {
            return vmprofd_options_usage_error("diff", "unknown option ", a);
        }
    }
    if (nfiles < 2)
        return vmprofd_options_usage_error("diff", "give two profiles: vmprofd diff BASE NEW", NULL);
    return diff(files[0], files[1], outputs, nout, index);
}
