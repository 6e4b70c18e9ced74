/*
 * report/alloctext.c — the text report of an allocation profile: "who
 * allocates", in the CPU report's layout (REPORT.md) with bytes where it
 * has samples. Header (the VM, the date, its sizes, the sampling interval,
 * the estimate against the VM's own count, what was lost), then the
 * allocating methods per region with their bytecode ranges, then the
 * classes allocated, then (--live) the same for what stayed alive, the
 * counter sections and the notes.
 *
 * A sample counts at its allocation site: the innermost Smalltalk method
 * or block of its stack that is more than a primitive (a primitive's C
 * frames and a method that is only `primitive` are how, not who), or its
 * innermost frame when it has none; and at its class (the leaf frame
 * report/allocprof.c put there).
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

/* REPORT.md: rows of at most 0.01% fold into ...others... */
#define OTHERS_BASIS_POINTS 1
/* REPORT.md: bytecode ranges for rows with more than 10 samples. */
#define DEFAULT_RANGE_MIN_SAMPLES 10

typedef struct Site {
    char *name;
    ReportRegion region;   /* or -1 for a class */
    uint64_t bytes, live_bytes;
    double objects, live_objects;
    uint64_t samples;
    bool ranged;
    ReportRanges ranges, live_ranges;
} Site;

typedef struct Sites {
    Site *v;
    size_t n, cap;
    ReportIndex index;
} Sites;

typedef struct SiteKey {
    const Sites *s;
    const char *name;
    int region;
} SiteKey;

static bool site_eq(const void *ctx, int item)
{
    const SiteKey *k = ctx;
    const Site *s = &k->s->v[item];
    return (int)s->region == k->region && strcmp(s->name, k->name) == 0;
}

static Site *site_for(Sites *ss, const char *name, int region)
{
    uint64_t h = report_index_hash_str(BASE_FNV1A_BASIS, name);
    h = base_fnv1a(h, &region, sizeof region);
    SiteKey key = {ss, name, region};
    int i = report_index_find(&ss->index, h, site_eq, &key);
    if (i >= 0)
        return &ss->v[i];
    report_mem_reserve(&ss->v, &ss->cap, ss->n + 1, sizeof *ss->v);
    ss->v[ss->n] = (Site){.name = report_mem_strdup(name), .region = (ReportRegion)region};
    report_index_insert(&ss->index, h, (int)ss->n);
    return &ss->v[ss->n++];
}

static void sites_free(Sites *ss)
{
    for (size_t i = 0; i < ss->n; i++) {
        free(ss->v[i].name);
        report_ranges_free(&ss->v[i].ranges);
        report_ranges_free(&ss->v[i].live_ranges);
    }
    free(ss->v);
    report_index_free(&ss->index);
}

/* The frame (index into the sample's frames) that allocated: the first
 * Smalltalk method or block below the class whose body is more than one
 * bytecode (a method that is only `primitive`, Class>>new, allocates for
 * its caller), else the first Smalltalk frame, else the first frame below
 * the class; 0 for a sample that has nothing but its class. */
uint32_t report_alloc_site_frame(const Profile *p, const ReportSample *s)
{
    const int *fr = report_profile_frames(p, s);
    uint32_t first = report_profile_leaf_function(p, s)->kind == REPORT_FUNCTION_CLASS ? 1 : 0;
    uint32_t smalltalk = UINT32_MAX;
    for (uint32_t i = first; i < s->nframes; i++) {
        const ReportFunctionInfo *f = &p->functions[p->locations[fr[i]].function];
        if (f->nmap == 0 || f->kind != REPORT_FUNCTION_CODE)
            continue;
        if (f->last_bcpc > 0)
            return i;
        if (smalltalk == UINT32_MAX)
            smalltalk = i;
    }
    if (smalltalk != UINT32_MAX)
        return smalltalk;
    return first < s->nframes ? first : 0;
}

/* Sorting by bytes, then name: a view of pointers into Sites. */
static int cmp_site(const void *a, const void *b)
{
    const Site *x = *(const Site *const *)a, *y = *(const Site *const *)b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_site_live(const void *a, const void *b)
{
    const Site *x = *(const Site *const *)a, *y = *(const Site *const *)b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes > y->live_bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void collect(const Profile *p, Sites *methods, Sites *classes)
{
    for (size_t i = 0; i < p->nsamples; i++) {
        const ReportSample *s = &p->samples[i];
        const int *fr = report_profile_frames(p, s);
        ReportAllocValues v = report_profile_alloc_values(p, i);
        const ReportFunctionInfo *leaf = report_profile_leaf_function(p, s);
        if (leaf->kind == REPORT_FUNCTION_CLASS) {
            const char *n = leaf->name;
            size_t len = strlen(n);
            char *bare = len >= 2 && n[0] == '[' && n[len - 1] == ']' ? report_mem_dup(n + 1, len - 1) : NULL;
            if (bare)
                bare[len - 2] = '\0';
            Site *c = site_for(classes, bare ? bare : n, -1);
            free(bare);
            c->bytes += s->weight;
            c->objects += v.objects;
            c->live_bytes += v.live_bytes;
            c->live_objects += v.live_objects;
            c->samples++;
        }
        uint32_t at = report_alloc_site_frame(p, s);
        const ReportLocation *loc = &p->locations[fr[at]];
        const ReportFunctionInfo *f = &p->functions[loc->function];
        if (f->kind == REPORT_FUNCTION_CLASS)
            continue; /* a stack of nothing but its class: counted with the classes only */
        char *inlined = report_inlined_label(f); /* the text report's row for it */
        Site *m = site_for(methods, inlined ? inlined : f->name, p->header.native_only ? REPORT_REGION_REST : f->region);
        free(inlined);
        m->bytes += s->weight;
        m->objects += v.objects;
        m->live_bytes += v.live_bytes;
        m->live_objects += v.live_objects;
        m->samples++;
        if (report_ranges_apply(f)) {
            /* above the stack's innermost frame a machine-code address is
             * a return address: its call is the byte before */
            bool ret = at > 1 && f->region == REPORT_REGION_GENERATED && loc->address > 0;
            uint64_t addr = ret ? loc->address - 1 : loc->address;
            m->ranged = true;
            report_ranges_add(&m->ranges, f, addr, s->weight);
            if (v.live_bytes)
                report_ranges_add(&m->live_ranges, f, addr, v.live_bytes);
        }
    }
}

static unsigned long long rounded(double v)
{
    return v > 0 ? (unsigned long long)llround(v) : 0;
}

static void print_ranges(FILE *out, const ReportRanges *rs, uint64_t whole, bool lines)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const ReportRange *g = &rs->v[i];
        cumulative += g->samples;
        char where[64] = "";
        if (lines && g->line_lo)
            snprintf(where, sizeof where, g->line_lo == g->line_hi ? "  line %u" : "  lines %u-%u", g->line_lo,
                     g->line_hi);
        fprintf(out, "\t%s\t%u->%u%s\t(%s)\t(%s)\n", report_format_pct(g->samples, whole).s, g->from, g->to, where,
                report_format_thousands(g->samples).s, report_format_pct(cumulative, whole).s);
    }
}

/* One table of sites of one region (region -1: the classes), by bytes
 * allocated or (live) by bytes alive. */
static void print_sites(FILE *out, const char *title, Sites *ss, int region, bool live, uint64_t total,
                        const ReportTextOptions *opt)
{
    const Site **view = report_mem_array(ss->n ? ss->n : 1, sizeof *view);
    size_t n = 0;
    uint64_t part = 0;
    for (size_t i = 0; i < ss->n; i++) {
        uint64_t b = live ? ss->v[i].live_bytes : ss->v[i].bytes;
        if ((int)ss->v[i].region == region && b > 0) {
            view[n++] = &ss->v[i];
            part += b;
        }
    }
    qsort(view, n, sizeof *view, live ? cmp_site_live : cmp_site);
    fprintf(out, "%% of %s (%% of total)\t\t\t(bytes) (objects) (cumulative)\n", title);
    uint64_t cumulative = 0, others = 0;
    double others_objects = 0;
    for (size_t i = 0; i < n; i++) {
        const Site *s = view[i];
        uint64_t b = live ? s->live_bytes : s->bytes;
        double o = live ? s->live_objects : s->objects;
        if ((unsigned __int128)b * 10000u <= (unsigned __int128)total * OTHERS_BASIS_POINTS) {
            others += b;
            others_objects += o;
            continue;
        }
        cumulative += b;
        fprintf(out, "%s    (%s)\t%s\t(%s)\t(%s)\t(%s)\n", report_format_pct(b, part).s,
                report_format_pct(b, total).s, s->name, report_format_thousands(b).s,
                report_format_thousands(rounded(o)).s, report_format_pct(cumulative, part).s);
        if (region >= 0 && s->ranged && s->samples > (uint64_t)opt->range_min_samples)
            print_ranges(out, live ? &s->live_ranges : &s->ranges, b, opt->lines);
    }
    if (others) {
        cumulative += others;
        fprintf(out, "%s    (%s)\t...others...\t(%s)\t(%s)\t(%s)\n", report_format_pct(others, part).s,
                report_format_pct(others, total).s, report_format_thousands(others).s,
                report_format_thousands(rounded(others_objects)).s, report_format_pct(cumulative, part).s);
    }
    free(view);
}

/* The methods of every region with any bytes, then the classes. */
static void print_all(FILE *out, const Profile *p, Sites *methods, Sites *classes, bool live, uint64_t total,
                      const ReportTextOptions *opt)
{
    static const char *const regions[3] = {"generated vm code", "vanilla vm code", "the rest"};
    const char *what = live ? "bytes alive" : "bytes allocated";
    uint64_t by_region[3] = {0};
    for (size_t i = 0; i < methods->n; i++)
        by_region[methods->v[i].region] += live ? methods->v[i].live_bytes : methods->v[i].bytes;
    for (int r = 0; r < 3; r++) {
        if (p->header.native_only && r != REPORT_REGION_REST)
            continue;
        if (by_region[r] == 0 && r == REPORT_REGION_REST)
            continue;
        fprintf(out, "%s %s in %s %s of total\n", report_format_thousands(by_region[r]).s, what, regions[r],
                report_format_pct(by_region[r], total).s);
    }
    for (int r = 0; r < 3; r++) {
        if (by_region[r] == 0)
            continue;
        char title[96];
        snprintf(title, sizeof title, "%s in %s", what, regions[r]);
        fprintf(out, "\n");
        print_sites(out, title, methods, r, live, total, opt);
    }
    char title[64];
    snprintf(title, sizeof title, "%s by class", what);
    fprintf(out, "\n");
    print_sites(out, title, classes, -1, live, total, opt);
}

static void print_header(FILE *out, const Profile *p, uint64_t total, double objects)
{
    const ReportHeader *h = &p->header;
    const ReportAllocHeader *a = &p->alloc;
    report_text_head(out, p);
    fprintf(out, "%.3f seconds; allocations sampled every %s bytes on average; %zu samples\n", h->seconds,
            report_format_thousands(a->interval).s, p->nsamples);
    fprintf(out, "%s bytes allocated (estimated from the samples), %s objects", report_format_thousands(total).s,
            report_format_thousands(rounded(objects)).s);
    if (a->counted_bytes)
        fprintf(out, "; the VM counted %s bytes while sampled (estimate %+.1f%%)",
                report_format_thousands(a->counted_bytes).s,
                100.0 * ((double)total - (double)a->counted_bytes) / (double)a->counted_bytes);
    fprintf(out, "\n");
    if (a->lost || a->bad)
        fprintf(out, "%llu samples lost, %llu damaged records skipped: the estimate is short by about that many "
                     "intervals\n",
                (unsigned long long)a->lost, (unsigned long long)a->bad);
}

bool report_write_alloc_text(FILE *out, const Profile *p, const ReportTextOptions *options, char *err, size_t errlen)
{
    ReportTextOptions opt = {.lines = false, .range_min_samples = DEFAULT_RANGE_MIN_SAMPLES};
    if (options)
        opt = *options;
    Sites methods = {0}, classes = {0};
    collect(p, &methods, &classes);
    for (size_t i = 0; i < methods.n; i++) {
        report_ranges_sort(&methods.v[i].ranges);
        report_ranges_sort(&methods.v[i].live_ranges);
    }
    uint64_t total = report_profile_total_weight(p), live = 0;
    double objects = 0, live_objects = 0;
    for (size_t i = 0; i < p->nsamples; i++) {
        ReportAllocValues v = report_profile_alloc_values(p, i);
        objects += v.objects;
        live += v.live_bytes;
        live_objects += v.live_objects;
    }

    errno = 0;
    clearerr(out);
    print_header(out, p, total, objects);
    fprintf(out, "\n");
    print_all(out, p, &methods, &classes, false, total, &opt);
    if (p->alloc.live) {
        fprintf(out, "\n");
        if (!p->alloc.live_answered) {
            fprintf(out, "live at the end: unknown: the VM did not say what stayed alive (see the warnings)\n");
        } else {
            fprintf(out, "live at the end (after a full GC): %s bytes, %s objects (estimated), %s of the bytes "
                         "allocated\n",
                    report_format_thousands(live).s, report_format_thousands(rounded(live_objects)).s,
                    report_format_pct(live, total).s);
            if (p->alloc.untracked)
                fprintf(out, "%llu samples were not followed by the VM: left out of the live figures\n",
                        (unsigned long long)p->alloc.untracked);
            if (live > 0) {
                fprintf(out, "\n");
                print_all(out, p, &methods, &classes, true, live, &opt);
            }
        }
    }
    if (opt.callers) {
        fprintf(out, "\n");
        report_write_callers(out, p);
    }
    if (p->header.have_counters) {
        fprintf(out, "\n");
        report_counters_write(out, &p->header);
    }
    fprintf(out, "\n");
    if (p->header.mode)
        fprintf(out, "sampled with %s%s%s%s\n", p->header.mode, p->header.mode_reason ? " (" : "",
                p->header.mode_reason ? p->header.mode_reason : "", p->header.mode_reason ? ")" : "");
    if (p->rejected_samples)
        fprintf(out, "%llu samples dropped: they named locations the profile does not have\n",
                (unsigned long long)p->rejected_samples);
    for (size_t i = 0; i < p->nnotes; i++)
        fprintf(out, "%s\n", p->notes[i]);
    sites_free(&methods);
    sites_free(&classes);
    if (fflush(out) != 0 || ferror(out)) {
        if (err && errlen)
            snprintf(err, errlen, "writing the text report: %s", errno ? strerror(errno) : "write error");
        return false;
    }
    return true;
}
