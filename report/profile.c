/*
 * report/profile.c — the Profile store: copying what producers hand in,
 * interning mappings, functions and locations, and keeping samples.
 */
#include "report/profile.h"

#include "report/mem.h"
#include "report/ranges.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

Profile *report_profile_new(void)
{
    return report_mem_alloc(sizeof(Profile));
}

static void free_header_strings(ReportHeader *h)
{
    free((char *)h->vm_path);
    free((char *)h->mode);
    free((char *)h->mode_reason);
}

void report_profile_free(Profile *p)
{
    if (!p)
        return;
    free_header_strings(&p->header);
    for (size_t i = 0; i < p->nnotes; i++)
        free(p->notes[i]);
    free(p->notes);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    for (size_t i = 0; i < p->nmappings; i++) {
        free((char *)p->mappings[i].file);
        free((char *)p->mappings[i].build_id);
    }
    free(p->mappings);
    report_index_free(&p->mapping_index);
    for (size_t i = 0; i < p->nfunctions; i++) {
        ReportFunctionInfo *f = &p->functions[i];
        free((char *)f->name);
        free((char *)f->file);
        free((char *)f->inlined_into);
        free((ReportMapEntry *)f->map);
        free((ReportLineEntry *)f->lines);
    }
    free(p->functions);
    report_index_free(&p->function_index);
    free(p->locations);
    report_index_free(&p->location_index);
    free(p->samples);
    free(p->frames);
    free(p->alloc_values);
    for (size_t i = 0; i < p->ngroups; i++)
        free(p->groups[i].cmd);
    free(p->groups);
    free(p);
}

void report_profile_set_header(Profile *p, const ReportHeader *h)
{
    free_header_strings(&p->header);
    p->header = *h;
    p->header.vm_path = report_mem_strdup(h->vm_path);
    p->header.mode = report_mem_strdup(h->mode);
    p->header.mode_reason = report_mem_strdup(h->mode_reason);
}

void report_profile_set_interval(Profile *p, int64_t start_ns, double seconds)
{
    p->header.start_ns = start_ns;
    p->header.start_wall = (time_t)(start_ns / 1000000000);
    p->header.seconds = seconds;
}

double report_profile_seconds(const Profile *p) { return p->header.seconds; }

static void add_string(char ***v, size_t *n, size_t *cap, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    if (len < 0) {
        va_end(again);
        return; /* an encoding error in the caller's format: nothing sensible to keep */
    }
    char *s = report_mem_alloc((size_t)len + 1);
    vsnprintf(s, (size_t)len + 1, fmt, again);
    va_end(again);
    report_mem_reserve(v, cap, *n + 1, sizeof **v);
    (*v)[(*n)++] = s;
}

void report_profile_add_note(Profile *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_string(&p->notes, &p->nnotes, &p->notes_cap, fmt, ap);
    va_end(ap);
}

void report_profile_add_warning(Profile *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_string(&p->warnings, &p->nwarnings, &p->warnings_cap, fmt, ap);
    va_end(ap);
}

/* -- Interning ------------------------------------------------------------ */

static bool same_str(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

typedef struct MappingKey {
    const Profile *p;
    const ReportMappingInfo *m;
} MappingKey;

static bool mapping_eq(const void *ctx, int item)
{
    const MappingKey *k = ctx;
    const ReportMappingInfo *a = k->m, *b = &k->p->mappings[item];
    return a->start == b->start && a->limit == b->limit && a->offset == b->offset && same_str(a->file, b->file);
}

int report_profile_add_mapping(Profile *p, const ReportMappingInfo *m)
{
    uint64_t h = BASE_FNV1A_BASIS;
    h = base_fnv1a(h, &m->start, sizeof m->start);
    h = base_fnv1a(h, &m->limit, sizeof m->limit);
    h = base_fnv1a(h, &m->offset, sizeof m->offset);
    h = report_index_hash_str(h, m->file);
    MappingKey key = {p, m};
    int found = report_index_find(&p->mapping_index, h, mapping_eq, &key);
    if (found >= 0)
        return found;
    report_mem_reserve(&p->mappings, &p->mappings_cap, p->nmappings + 1, sizeof *p->mappings);
    ReportMappingInfo *d = &p->mappings[p->nmappings];
    *d = *m;
    d->file = report_mem_strdup(m->file);
    d->build_id = report_mem_strdup(m->build_id);
    int idx = (int)p->nmappings++;
    report_index_insert(&p->mapping_index, h, idx);
    return idx;
}

typedef struct FunctionKey {
    const Profile *p;
    const ReportFunctionInfo *f;
    const char *name; /* f->name, or the name a nameless function is stored under */
    ReportRegion region; /* f->region, or rest when out of range */
} FunctionKey;

static bool function_eq(const void *ctx, int item)
{
    const FunctionKey *k = ctx;
    const ReportFunctionInfo *a = k->f, *b = &k->p->functions[item];
    /* Bytecode info too: two blocks of one method share their name and may
     * occupy one address at different times, with different maps. */
    return k->region == b->region && a->start == b->start && a->size == b->size && a->nmap == b->nmap &&
           a->last_bcpc == b->last_bcpc && a->kind == b->kind && strcmp(k->name, b->name) == 0 &&
           same_str(a->inlined_into, b->inlined_into);
}

int report_profile_add_function(Profile *p, const ReportFunctionInfo *f)
{
    const char *name = f->name ? f->name : "[unknown]";
    /* A region outside the enum would index past the renderers' per-region
     * arrays; whatever it is, it is not the VM's own code. */
    ReportRegion region = (unsigned)f->region <= REPORT_REGION_REST ? f->region : REPORT_REGION_REST;
    uint64_t h = BASE_FNV1A_BASIS;
    uint32_t region_bits = (uint32_t)region;
    h = base_fnv1a(h, &region_bits, sizeof region_bits);
    h = base_fnv1a(h, &f->start, sizeof f->start);
    h = report_index_hash_str(h, name);
    FunctionKey key = {p, f, name, region};
    int found = report_index_find(&p->function_index, h, function_eq, &key);
    if (found >= 0)
        return found;
    report_mem_reserve(&p->functions, &p->functions_cap, p->nfunctions + 1, sizeof *p->functions);
    ReportFunctionInfo *d = &p->functions[p->nfunctions];
    *d = *f;
    d->name = report_mem_strdup(name);
    d->region = region;
    d->file = report_mem_strdup(f->file);
    d->inlined_into = report_mem_strdup(f->inlined_into);
    if (f->mapping < 0 || (size_t)f->mapping >= p->nmappings)
        d->mapping = -1;
    d->map = report_mem_dup(f->map, f->nmap * sizeof *f->map);
    d->nmap = d->map ? f->nmap : 0;
    if (d->nmap > 1)
        report_ranges_sort_map((ReportMapEntry *)d->map, d->nmap);
    d->lines = report_mem_dup(f->lines, f->nlines * sizeof *f->lines);
    d->nlines = d->lines ? f->nlines : 0;
    if (d->nlines > 1)
        report_ranges_sort_lines((ReportLineEntry *)d->lines, d->nlines);
    int idx = (int)p->nfunctions++;
    report_index_insert(&p->function_index, h, idx);
    return idx;
}

typedef struct LocationKey {
    const Profile *p;
    int function;
    uint64_t address;
} LocationKey;

static bool location_eq(const void *ctx, int item)
{
    const LocationKey *k = ctx;
    const ReportLocation *l = &k->p->locations[item];
    return l->function == k->function && l->address == k->address;
}

int report_profile_add_location(Profile *p, int function, uint64_t address, int line)
{
    if (function < 0 || (size_t)function >= p->nfunctions)
        return -1;
    uint64_t h = BASE_FNV1A_BASIS;
    h = base_fnv1a(h, &function, sizeof function);
    h = base_fnv1a(h, &address, sizeof address);
    LocationKey key = {p, function, address};
    int found = report_index_find(&p->location_index, h, location_eq, &key);
    if (found >= 0)
        return found;
    report_mem_reserve(&p->locations, &p->locations_cap, p->nlocations + 1, sizeof *p->locations);
    p->locations[p->nlocations] = (ReportLocation){function, address, line};
    int idx = (int)p->nlocations++;
    report_index_insert(&p->location_index, h, idx);
    return idx;
}

char *report_inlined_label(const ReportFunctionInfo *f)
{
    if (!f->inlined_into)
        return NULL;
    size_t n = strlen(f->name), suffix = strlen(" (inlined)");
    if (n >= suffix && strcmp(f->name + n - suffix, " (inlined)") == 0)
        n -= suffix;
    size_t need = n + strlen(f->inlined_into) + sizeof " (inlined into )";
    char *s = report_mem_alloc(need);
    snprintf(s, need, "%.*s (inlined into %s)", (int)n, f->name, f->inlined_into);
    return s;
}

/* -- Samples -------------------------------------------------------------- */

void report_profile_add_sample(Profile *p, uint64_t time_ns, uint32_t tid, const int *frames, size_t nframes)
{
    report_profile_add_weighted_sample(p, time_ns, tid, frames, nframes, 1);
}

void report_profile_add_weighted_sample(Profile *p, uint64_t time_ns, uint32_t tid, const int *frames, size_t nframes,
                                        uint64_t weight)
{
    /* A producer bug must not turn into a crash in every renderer later:
     * refuse the sample here, and the text report says how many. */
    bool ok = frames && nframes > 0 && nframes <= UINT32_MAX;
    for (size_t i = 0; ok && i < nframes; i++)
        ok = frames[i] >= 0 && (size_t)frames[i] < p->nlocations;
    if (!ok) {
        p->rejected_samples++;
        return;
    }
    report_mem_reserve(&p->frames, &p->frames_cap, p->nframes + nframes, sizeof *p->frames);
    memcpy(p->frames + p->nframes, frames, nframes * sizeof *frames);
    report_mem_reserve(&p->samples, &p->samples_cap, p->nsamples + 1, sizeof *p->samples);
    p->samples[p->nsamples++] = (ReportSample){time_ns, tid, (uint32_t)nframes, p->nframes, weight, 0};
    p->nframes += nframes;
}

int64_t report_profile_period_ns(const Profile *p)
{
    const ReportHeader *h = &p->header;
    double ns = 0;
    if (h->requested_hz > 0)
        ns = 1e9 / h->requested_hz;
    else if (h->seconds > 0 && p->nsamples > 0) /* no rate asked for: the one achieved */
        ns = 1e9 * h->seconds / (double)p->nsamples;
    /* A rate so low (or a header so broken) that the period is no int64_t
     * would make llround's answer meaningless: call it unknown, as pprof's
     * 0 means (found by tests/fuzz/fuzz_profile_writers.c). */
    if (!(ns > 0) || ns >= 0x1p62)
        return 0;
    return llround(ns);
}

uint64_t report_profile_total_weight(const Profile *p)
{
    uint64_t w = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        w += p->samples[i].weight;
    return w;
}

double report_profile_samples(const Profile *p, uint64_t weight)
{
    if (!p->header.cpu_weighted)
        return (double)weight;
    int64_t period = report_profile_period_ns(p);
    if (period <= 0) { /* no period known: the mean weight stands for one sample */
        uint64_t total = report_profile_total_weight(p);
        return total ? (double)weight * (double)p->nsamples / (double)total : 0.0;
    }
    return (double)weight / (double)period;
}

uint64_t report_profile_rounded(const Profile *p, uint64_t weight)
{
    return (uint64_t)llround(report_profile_samples(p, weight));
}

size_t report_profile_sample_count(const Profile *p)
{
    return p->nsamples;
}

/* -- Allocation profiles ---------------------------------------------------- */

void report_profile_set_alloc(Profile *p, const ReportAllocHeader *a)
{
    p->is_alloc = true;
    p->alloc = *a;
}

void report_profile_add_alloc_sample(Profile *p, uint64_t time_ns, uint32_t tid, const int *frames, size_t nframes,
                                     uint64_t bytes, const ReportAllocValues *v)
{
    size_t before = p->nsamples;
    report_profile_add_weighted_sample(p, time_ns, tid, frames, nframes, bytes);
    if (p->nsamples == before)
        return; /* refused (and counted) */
    report_mem_reserve(&p->alloc_values, &p->alloc_values_cap, p->nsamples, sizeof *p->alloc_values);
    /* samples added otherwise before (a producer mixing kinds) count none */
    for (size_t i = p->nalloc_values; i + 1 < p->nsamples; i++)
        p->alloc_values[i] = (ReportAllocValues){0};
    p->alloc_values[p->nsamples - 1] = *v;
    p->nalloc_values = p->nsamples;
}

ReportAllocValues report_profile_alloc_values(const Profile *p, size_t sample)
{
    return sample < p->nalloc_values ? p->alloc_values[sample] : (ReportAllocValues){0};
}
