/*
 * report/pprof.c — a Profile as pprof's profile.proto (proto/profile.proto),
 * gzipped, as `go tool pprof` and other pprof readers expect.
 *
 *   sample_type   [samples/count, cpu/nanoseconds]; default: cpu ("wall"
 *                 instead of "cpu" in a wall-clock profile, as Go's and
 *                 async-profiler's wall profiles say)
 *   period_type   cpu/nanoseconds, period = 1e9 / requested Hz
 *   mapping       one per Profile mapping,  id = index + 1
 *   function      one per distinct (name, source file, start line): a
 *                 Smalltalk method moved by code compaction is several
 *                 Profile functions (one per address) but one pprof
 *                 Function, as pprof's tools expect; id = 1, 2, …
 *                 (name = system_name, filename = its source, start_line)
 *   location      one per Profile location, id = index + 1, one Line;
 *                 and one per distinct run of frames of a stack made by
 *                 inlining (report.h: inlined functions and the frame
 *                 they were inlined into, at one address), id after
 *                 those, with a Line per frame, innermost first, the last
 *                 the method they were inlined into: pprof's own
 *                 convention for inlined calls, so `go tool pprof` shows
 *                 each inlined method as a frame
 *   sample        one per distinct (thread, stack), leaf first, values
 *                 [n, n * period]; label "thread" = the tid when known;
 *                 in a merged profile (report_profile_merge) "pid" and
 *                 "cmd", the process the sample came from
 *   comment       how the samples were taken, losses, the notes
 *   label         "bytecodes" = "FROM->TO", on a sample whose leaf is a
 *                 Smalltalk method with bytecodes (report/ranges.h): its
 *                 range as the text report prints it, so `vmprofd diff`
 *                 and `go tool pprof -tags` see ranges too; in an
 *                 allocation profile "site" = the method that allocated
 *                 (the text report's rule) and "bytecodes" = its range
 *
 * An allocation profile (report.h) has Go's heap profile types instead:
 * [alloc_objects/count, alloc_space/bytes] and with --live
 * [inuse_objects/count, inuse_space/bytes] too; period_type space/bytes,
 * period = the sampling interval; default alloc_space. Values are the
 * estimates (report/allocprof.h), so `go tool pprof -sample_index=...`
 * reads them as it reads Go's.
 *
 * The message is built over borrowed strings (the Profile owns them) and
 * arrays allocated here, packed once, compressed in memory and written
 * with one fwrite, so a failure leaves a clear message, not half a file
 * that parses.
 */
#include "proto/profile.pb-c.h"
#include "report/mem.h"
#include "report/profile.h"
#include "report/ranges.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* -- String table --------------------------------------------------------- */

typedef struct Builder {
    const Profile *p;
    const char **strings; /* borrowed, or in owned[] */
    size_t nstrings, strings_cap;
    ReportIndex string_index;
    char **owned;
    size_t nowned, owned_cap;
} Builder;

typedef struct StringKey {
    const Builder *b;
    const char *s;
} StringKey;

static bool string_eq(const void *ctx, int item)
{
    const StringKey *k = ctx;
    return strcmp(k->b->strings[item], k->s) == 0;
}

/* The string-table index of s; NULL is "" (index 0, as pprof requires). */
static int64_t str_id(Builder *b, const char *s)
{
    if (!s)
        s = "";
    uint64_t h = report_index_hash_str(BASE_FNV1A_BASIS, s);
    StringKey key = {b, s};
    int i = report_index_find(&b->string_index, h, string_eq, &key);
    if (i >= 0)
        return i;
    report_mem_reserve(&b->strings, &b->strings_cap, b->nstrings + 1, sizeof *b->strings);
    b->strings[b->nstrings] = s;
    report_index_insert(&b->string_index, h, (int)b->nstrings);
    return (int64_t)b->nstrings++;
}

static int64_t str_id_owned(Builder *b, char *s)
{
    report_mem_reserve(&b->owned, &b->owned_cap, b->nowned + 1, sizeof *b->owned);
    b->owned[b->nowned++] = s;
    return str_id(b, s);
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = report_mem_alloc(n > 0 ? (size_t)n + 1 : 1);
    va_start(ap, fmt);
    vsnprintf(s, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
    va_end(ap);
    return s;
}

/* -- Distinct stacks ------------------------------------------------------ */

typedef struct Stack {
    size_t sample; /* the first sample with this thread and stack */
    uint64_t count;
    uint64_t weight; /* their weights' sum (CPU ns in a CPU-weighted profile; bytes in an allocation profile) */
    ReportAllocValues alloc; /* an allocation profile's other values, summed */
} Stack;

typedef struct Stacks {
    Stack *v;
    size_t n, cap;
    ReportIndex index;
} Stacks;

typedef struct StackKey {
    const Profile *p;
    const Stacks *st;
    const ReportSample *s;
} StackKey;

static bool stack_eq(const void *ctx, int item)
{
    const StackKey *k = ctx;
    const ReportSample *a = k->s, *b = &k->p->samples[k->st->v[item].sample];
    return a->tid == b->tid && a->group == b->group && a->nframes == b->nframes &&
           memcmp(report_profile_frames(k->p, a), report_profile_frames(k->p, b), a->nframes * sizeof(int)) == 0;
}

static void collect_stacks(const Profile *p, Stacks *st)
{
    for (size_t i = 0; i < p->nsamples; i++) {
        const ReportSample *s = &p->samples[i];
        uint64_t h = base_fnv1a(BASE_FNV1A_BASIS, &s->tid, sizeof s->tid);
        h = base_fnv1a(h, &s->group, sizeof s->group);
        h = base_fnv1a(h, report_profile_frames(p, s), s->nframes * sizeof(int));
        StackKey key = {p, st, s};
        int found = report_index_find(&st->index, h, stack_eq, &key);
        ReportAllocValues v = report_profile_alloc_values(p, i);
        if (found >= 0) {
            Stack *d = &st->v[found];
            d->count++;
            d->weight += s->weight;
            d->alloc.objects += v.objects;
            d->alloc.live_bytes += v.live_bytes;
            d->alloc.live_objects += v.live_objects;
            continue;
        }
        report_mem_reserve(&st->v, &st->cap, st->n + 1, sizeof *st->v);
        st->v[st->n] = (Stack){i, 1, s->weight, v};
        report_index_insert(&st->index, h, (int)st->n++);
    }
}

/* -- The message ---------------------------------------------------------- */


/* -- Runs of inlined frames ----------------------------------------------- */

/* Runs of frames one address stands for (inlined methods, innermost first,
 * and the frame they were inlined into), each to become one Location. */
typedef struct Chains {
    int *frames;      /* the runs' location indices, back to back */
    size_t nframes, frames_cap;
    size_t *first;    /* run k: frames[first[k] .. first[k] + len[k]) */
    uint32_t *len;
    size_t n, cap, len_cap;
    ReportIndex index;
} Chains;

/* How many frames from frames[0] on make one run (1: no inlining there). */
static uint32_t run_length(const Profile *p, const int *frames, uint32_t nframes)
{
    uint64_t address = p->locations[frames[0]].address;
    uint32_t j = 0;
    while (j + 1 < nframes && p->functions[p->locations[frames[j]].function].inlined_into &&
           p->locations[frames[j + 1]].address == address)
        j++;
    return j + 1;
}

typedef struct ChainKey {
    const Chains *c;
    const int *frames;
    uint32_t len;
} ChainKey;

static bool chain_eq(const void *ctx, int item)
{
    const ChainKey *k = ctx;
    return k->c->len[item] == k->len &&
           memcmp(k->c->frames + k->c->first[item], k->frames, k->len * sizeof *k->frames) == 0;
}

/* The run's number, interned. */
static size_t chain_of(Chains *c, const int *frames, uint32_t len)
{
    uint64_t h = base_fnv1a(BASE_FNV1A_BASIS, frames, len * sizeof *frames);
    ChainKey key = {c, frames, len};
    int found = report_index_find(&c->index, h, chain_eq, &key);
    if (found >= 0)
        return (size_t)found;
    report_mem_reserve(&c->frames, &c->frames_cap, c->nframes + len, sizeof *c->frames);
    memcpy(c->frames + c->nframes, frames, len * sizeof *frames);
    report_mem_reserve(&c->first, &c->cap, c->n + 1, sizeof *c->first);
    report_mem_reserve(&c->len, &c->len_cap, c->n + 1, sizeof *c->len);
    c->first[c->n] = c->nframes;
    c->len[c->n] = len;
    c->nframes += len;
    report_index_insert(&c->index, h, (int)c->n);
    return c->n++;
}

static void chains_free(Chains *c)
{
    free(c->frames);
    free(c->first);
    free(c->len);
    report_index_free(&c->index);
}

typedef struct Message {
    Perftools__Profiles__Profile profile;
    Perftools__Profiles__ValueType types[4], period_type;
    Perftools__Profiles__ValueType *type_ptrs[4];
    size_t ntypes;
    Perftools__Profiles__Mapping *mappings, **mapping_ptrs;
    Perftools__Profiles__Function *functions, **function_ptrs;
    uint64_t *function_ids; /* Profile function -> pprof Function id */
    Perftools__Profiles__Location *locations, **location_ptrs;
    Perftools__Profiles__Line *lines, **line_ptrs;
    Perftools__Profiles__Sample *samples, **sample_ptrs;
    Perftools__Profiles__Label *labels, **label_ptrs;
    uint64_t *location_ids;
    int64_t *values;
    int64_t *comments;
    size_t ncomments;
    Stacks stacks;
    Chains chains;
    Perftools__Profiles__Line **chain_line_ptrs;
    /* with the site and bytecode range labels: up to five per sample
     * (thread, pid, cmd, site, bytecodes) */
    Perftools__Profiles__Label *range_labels, **range_label_ptrs;
} Message;

static void add_comment(Message *m, Builder *b, char *owned_text)
{
    m->comments[m->ncomments++] = str_id_owned(b, owned_text);
}

static void build_mappings(Message *m, Builder *b)
{
    const Profile *p = b->p;
    m->mappings = report_mem_array(p->nmappings, sizeof *m->mappings);
    m->mapping_ptrs = report_mem_array(p->nmappings, sizeof *m->mapping_ptrs);
    for (size_t i = 0; i < p->nmappings; i++) {
        const ReportMappingInfo *src = &p->mappings[i];
        Perftools__Profiles__Mapping *d = &m->mappings[i];
        perftools__profiles__mapping__init(d);
        d->id = i + 1;
        d->memory_start = src->start;
        d->memory_limit = src->limit;
        d->file_offset = src->offset;
        d->filename = str_id(b, src->file);
        d->build_id = str_id(b, src->build_id);
        /* Symbols were resolved by the producer: readers must not try again. */
        d->has_functions = true;
        m->mapping_ptrs[i] = d;
    }
    for (size_t i = 0; i < p->nfunctions; i++)
        if (p->functions[i].mapping >= 0 && p->functions[i].file)
            m->mappings[p->functions[i].mapping].has_filenames = true;
    for (size_t i = 0; i < p->nlocations; i++) {
        const ReportFunctionInfo *f = &p->functions[p->locations[i].function];
        if (f->mapping >= 0 && p->locations[i].line > 0)
            m->mappings[f->mapping].has_line_numbers = true;
    }
    m->profile.n_mapping = p->nmappings;
    m->profile.mapping = m->mapping_ptrs;
}

typedef struct FunctionKey {
    const Message *m;
    const Perftools__Profiles__Function *f;
} FunctionKey;

static bool function_eq(const void *ctx, int item)
{
    const FunctionKey *k = ctx;
    const Perftools__Profiles__Function *a = k->f, *b = &k->m->functions[item];
    return a->name == b->name && a->filename == b->filename && a->start_line == b->start_line;
}

static void build_functions(Message *m, Builder *b)
{
    const Profile *p = b->p;
    m->functions = report_mem_array(p->nfunctions, sizeof *m->functions);
    m->function_ptrs = report_mem_array(p->nfunctions, sizeof *m->function_ptrs);
    m->function_ids = report_mem_array(p->nfunctions, sizeof *m->function_ids);
    ReportIndex index = {0};
    size_t n = 0;
    for (size_t i = 0; i < p->nfunctions; i++) {
        const ReportFunctionInfo *src = &p->functions[i];
        Perftools__Profiles__Function f;
        perftools__profiles__function__init(&f);
        f.name = str_id(b, src->name);
        f.system_name = f.name;
        f.filename = str_id(b, src->file);
        f.start_line = src->start_line;
        /* strings are interned: equal ids are equal strings */
        uint64_t h = base_fnv1a(BASE_FNV1A_BASIS, &f.name, sizeof f.name);
        h = base_fnv1a(h, &f.filename, sizeof f.filename);
        h = base_fnv1a(h, &f.start_line, sizeof f.start_line);
        FunctionKey key = {m, &f};
        int found = report_index_find(&index, h, function_eq, &key);
        if (found >= 0) {
            m->function_ids[i] = m->functions[found].id;
            continue;
        }
        f.id = n + 1;
        m->functions[n] = f;
        m->function_ptrs[n] = &m->functions[n];
        m->function_ids[i] = f.id;
        report_index_insert(&index, h, (int)n);
        n++;
    }
    report_index_free(&index);
    m->profile.n_function = n;
    m->profile.function = m->function_ptrs;
}

/* The stacks and the runs of inlined frames in them. */
static void collect_chains(Message *m, const Profile *p)
{
    collect_stacks(p, &m->stacks);
    for (size_t i = 0; i < m->stacks.n; i++) {
        const ReportSample *s = &p->samples[m->stacks.v[i].sample];
        const int *frames = report_profile_frames(p, s);
        for (uint32_t f = 0; f < s->nframes;) {
            uint32_t len = run_length(p, frames + f, s->nframes - f);
            if (len > 1)
                chain_of(&m->chains, frames + f, len);
            f += len;
        }
    }
}

static void build_locations(Message *m, Builder *b)
{
    const Profile *p = b->p;
    size_t nchains = m->chains.n;
    m->locations = report_mem_array(p->nlocations + nchains, sizeof *m->locations);
    m->location_ptrs = report_mem_array(p->nlocations + nchains, sizeof *m->location_ptrs);
    m->lines = report_mem_array(p->nlocations, sizeof *m->lines);
    m->line_ptrs = report_mem_array(p->nlocations, sizeof *m->line_ptrs);
    for (size_t i = 0; i < p->nlocations; i++) {
        const ReportLocation *src = &p->locations[i];
        const ReportFunctionInfo *f = &p->functions[src->function];
        Perftools__Profiles__Line *line = &m->lines[i];
        perftools__profiles__line__init(line);
        line->function_id = m->function_ids[src->function];
        line->line = src->line;
        m->line_ptrs[i] = line;
        Perftools__Profiles__Location *d = &m->locations[i];
        perftools__profiles__location__init(d);
        d->id = i + 1;
        d->mapping_id = f->mapping >= 0 ? (uint64_t)f->mapping + 1 : 0;
        d->address = src->address;
        d->n_line = 1;
        d->line = &m->line_ptrs[i];
        m->location_ptrs[i] = d;
    }
    const Chains *c = &m->chains;
    m->chain_line_ptrs = report_mem_array(c->nframes ? c->nframes : 1, sizeof *m->chain_line_ptrs);
    for (size_t k = 0; k < nchains; k++) {
        const int *frames = c->frames + c->first[k];
        const ReportLocation *caller = &p->locations[frames[c->len[k] - 1]];
        const ReportFunctionInfo *f = &p->functions[caller->function];
        Perftools__Profiles__Location *d = &m->locations[p->nlocations + k];
        perftools__profiles__location__init(d);
        d->id = p->nlocations + k + 1;
        d->mapping_id = f->mapping >= 0 ? (uint64_t)f->mapping + 1 : 0;
        if (f->mapping >= 0)
            m->mappings[f->mapping].has_inline_frames = true;
        d->address = caller->address;
        d->n_line = c->len[k];
        d->line = &m->chain_line_ptrs[c->first[k]];
        for (uint32_t j = 0; j < c->len[k]; j++)
            d->line[j] = &m->lines[frames[j]];
        m->location_ptrs[p->nlocations + k] = d;
    }
    m->profile.n_location = p->nlocations + nchains;
    m->profile.location = m->location_ptrs;
}

static int64_t saturated(double v)
{
    return v >= 0x1p63 ? INT64_MAX : v > 0 ? (int64_t)llround(v) : 0;
}

/* alloc_objects, alloc_space[, inuse_objects, inuse_space] */
static void alloc_values(int64_t *value, const Stack *s, size_t n)
{
    value[0] = saturated(s->alloc.objects);
    value[1] = s->weight > INT64_MAX ? INT64_MAX : (int64_t)s->weight;
    if (n == 4) {
        value[2] = saturated(s->alloc.live_objects);
        value[3] = s->alloc.live_bytes > INT64_MAX ? INT64_MAX : (int64_t)s->alloc.live_bytes;
    }
}

static void build_samples(Message *m, Builder *b, int64_t period)
{
    const Profile *p = b->p;
    Stacks *st = &m->stacks;
    size_t nids = 0;
    for (size_t i = 0; i < st->n; i++)
        nids += p->samples[st->v[i].sample].nframes;
    m->samples = report_mem_array(st->n, sizeof *m->samples);
    m->sample_ptrs = report_mem_array(st->n, sizeof *m->sample_ptrs);
    /* up to three labels a sample: thread, pid, cmd */
    m->labels = report_mem_array(st->n * 3, sizeof *m->labels);
    m->label_ptrs = report_mem_array(st->n * 3, sizeof *m->label_ptrs);
    m->location_ids = report_mem_array(nids, sizeof *m->location_ids);
    m->values = report_mem_array(st->n * m->ntypes, sizeof *m->values);
    int64_t thread = str_id(b, "thread");
    int64_t pid_key = p->ngroups ? str_id(b, "pid") : 0, cmd_key = p->ngroups ? str_id(b, "cmd") : 0;
    size_t next_id = 0;
    for (size_t i = 0; i < st->n; i++) {
        const ReportSample *s = &p->samples[st->v[i].sample];
        const int *frames = report_profile_frames(p, s);
        Perftools__Profiles__Sample *d = &m->samples[i];
        perftools__profiles__sample__init(d);
        d->location_id = &m->location_ids[next_id];
        d->n_location_id = 0;
        for (uint32_t f = 0; f < s->nframes;) {
            uint32_t len = run_length(p, frames + f, s->nframes - f);
            m->location_ids[next_id++] =
                len > 1 ? p->nlocations + chain_of(&m->chains, frames + f, len) + 1 : (uint64_t)frames[f] + 1;
            d->n_location_id++;
            f += len;
        }
        d->value = &m->values[i * m->ntypes];
        d->n_value = m->ntypes;
        d->value[0] = (int64_t)st->v[i].count;
        /* cpu: measured where samples are CPU-weighted, else a period each
         * (saturated: a huge period times many samples must not wrap) */
        if (p->is_alloc)
            alloc_values(d->value, &st->v[i], m->ntypes);
        else if (p->header.cpu_weighted)
            d->value[1] = st->v[i].weight > INT64_MAX ? INT64_MAX : (int64_t)st->v[i].weight;
        else if (__builtin_mul_overflow((int64_t)st->v[i].count, period, &d->value[1]))
            d->value[1] = INT64_MAX;
        Perftools__Profiles__Label *l = &m->labels[i * 3];
        d->label = &m->label_ptrs[i * 3];
        if (s->tid) {
            perftools__profiles__label__init(l);
            l->key = thread;
            l->num = s->tid;
            d->label[d->n_label++] = l++;
        }
        if (s->group > 0 && s->group <= p->ngroups) {
            const ReportGroup *g = &p->groups[s->group - 1];
            perftools__profiles__label__init(l);
            l->key = pid_key;
            l->num = g->pid;
            d->label[d->n_label++] = l++;
            perftools__profiles__label__init(l);
            l->key = cmd_key;
            l->str = str_id(b, g->cmd ? g->cmd : "");
            d->label[d->n_label++] = l++;
        }
        if (d->n_label == 0)
            d->label = NULL;
        m->sample_ptrs[i] = d;
    }
    m->profile.n_sample = st->n;
    m->profile.sample = m->sample_ptrs;
}

/* After "thread" (and "pid", "cmd"): the bytecode range of the leaf, where it has one, by
 * the text report's rule (report_ranges_add); in an allocation profile the
 * allocating method ("site") and its range, by the allocation report's. */
static void build_range_labels(Message *m, Builder *b)
{
    const Profile *p = b->p;
    const Stacks *st = &m->stacks;
    m->range_labels = report_mem_array(st->n * 2, sizeof *m->range_labels);
    m->range_label_ptrs = report_mem_array(st->n * 5, sizeof *m->range_label_ptrs);
    int64_t key = str_id(b, "bytecodes"), site_key = str_id(b, "site");
    for (size_t i = 0; i < st->n; i++) {
        const ReportSample *s = &p->samples[st->v[i].sample];
        uint32_t at = p->is_alloc ? report_alloc_site_frame(p, s) : 0;
        const ReportLocation *loc = &p->locations[report_profile_frames(p, s)[at]];
        const ReportFunctionInfo *f = &p->functions[loc->function];
        bool site = p->is_alloc && f->kind != REPORT_FUNCTION_CLASS;
        if (!site && !report_ranges_apply(f))
            continue;
        Perftools__Profiles__Sample *d = &m->samples[i];
        Perftools__Profiles__Label **labels = &m->range_label_ptrs[i * 5];
        for (size_t k = 0; k < d->n_label; k++) /* thread, and pid and cmd in a merged profile */
            labels[k] = d->label[k];
        d->label = labels;
        if (site) {
            Perftools__Profiles__Label *l = &m->range_labels[i * 2 + 1];
            perftools__profiles__label__init(l);
            l->key = site_key;
            char *inlined = report_inlined_label(f); /* the allocation report's row for it */
            l->str = inlined ? str_id_owned(b, inlined) : str_id(b, f->name);
            labels[d->n_label++] = l;
        }
        if (!report_ranges_apply(f))
            continue;
        /* above the innermost frame (1 in an allocation stack, below its
         * class) a machine-code address is a return address: its call is
         * the byte before (as report/alloctext.c counts it) */
        uint64_t address = loc->address;
        if (at > 1 && f->region == REPORT_REGION_GENERATED && address > 0)
            address--;
        uint32_t from, to;
        report_ranges_range_of(f->map, f->nmap, f->last_bcpc, address >= f->start ? address - f->start : 0, &from,
                               &to);
        Perftools__Profiles__Label *l = &m->range_labels[i * 2];
        perftools__profiles__label__init(l);
        l->key = key;
        l->str = str_id_owned(b, format("%u->%u", from, to));
        labels[d->n_label++] = l;
    }
}

static void build(Message *m, Builder *b)
{
    const Profile *p = b->p;
    const ReportHeader *h = &p->header;
    perftools__profiles__profile__init(&m->profile);
    str_id(b, ""); /* index 0 */

    int64_t period = report_profile_period_ns(p);
    static const char *const type_names[2][2] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    static const char *const alloc_names[4][2] = {
        {"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
    const char *const(*names)[2] = p->is_alloc ? alloc_names : type_names;
    m->ntypes = p->is_alloc && p->alloc.live ? 4 : 2;
    for (size_t i = 0; i < m->ntypes; i++) {
        perftools__profiles__value_type__init(&m->types[i]);
        m->types[i].type = str_id(b, i == 1 && h->wall_clock && !p->is_alloc ? "wall" : names[i][0]);
        m->types[i].unit = str_id(b, names[i][1]);
        m->type_ptrs[i] = &m->types[i];
    }
    m->profile.n_sample_type = m->ntypes;
    m->profile.sample_type = m->type_ptrs;
    m->profile.default_sample_type = m->types[1].type;
    perftools__profiles__value_type__init(&m->period_type);
    if (p->is_alloc) { /* as Go's heap profiles */
        m->period_type.type = str_id(b, "space");
        m->period_type.unit = str_id(b, "bytes");
        period = p->alloc.interval > INT64_MAX ? INT64_MAX : (int64_t)p->alloc.interval;
    } else {
        m->period_type.type = m->types[1].type;
        m->period_type.unit = m->types[1].unit;
    }
    m->profile.period_type = &m->period_type;
    m->profile.period = period;
    m->profile.time_nanos = h->start_ns ? h->start_ns : (int64_t)h->start_wall * 1000000000;
    m->profile.duration_nanos = h->seconds > 0 ? llround(h->seconds * 1e9) : 0;

    build_mappings(m, b);
    build_functions(m, b);
    collect_chains(m, p);
    build_locations(m, b);
    build_samples(m, b, period);
    build_range_labels(m, b);

    /* One per warning, up to 3 fixed comments (mode, lost, rejected), one per note. */
    m->comments = report_mem_array(3 + p->nwarnings + p->nnotes, sizeof *m->comments);
    for (size_t i = 0; i < p->nwarnings; i++)
        add_comment(m, b, format("warning: %s", p->warnings[i]));
    if (h->mode)
        add_comment(m, b,
                    h->mode_reason ? format("sampled with %s (%s)", h->mode, h->mode_reason)
                                   : format("sampled with %s", h->mode));
    if (h->lost_samples)
        add_comment(m, b, format("%llu samples lost", (unsigned long long)h->lost_samples));
    if (p->rejected_samples)
        add_comment(m, b, format("%llu samples dropped: invalid frames", (unsigned long long)p->rejected_samples));
    for (size_t i = 0; i < p->nnotes; i++)
        m->comments[m->ncomments++] = str_id(b, p->notes[i]);
    m->profile.n_comment = m->ncomments;
    m->profile.comment = m->comments;

    /* Last: every string above has been interned by now. protobuf-c takes
     * char ** but only reads through it while packing. */
    m->profile.n_string_table = b->nstrings;
    m->profile.string_table = (char **)b->strings;
}

static void message_free(Message *m, Builder *b)
{
    free(m->mappings);
    free(m->mapping_ptrs);
    free(m->functions);
    free(m->function_ptrs);
    free(m->function_ids);
    free(m->locations);
    free(m->location_ptrs);
    free(m->lines);
    free(m->line_ptrs);
    free(m->chain_line_ptrs);
    chains_free(&m->chains);
    free(m->samples);
    free(m->sample_ptrs);
    free(m->labels);
    free(m->label_ptrs);
    free(m->location_ids);
    free(m->values);
    free(m->comments);
    free(m->stacks.v);
    free(m->range_labels);
    free(m->range_label_ptrs);
    report_index_free(&m->stacks.index);
    free(b->strings);
    report_index_free(&b->string_index);
    for (size_t i = 0; i < b->nowned; i++)
        free(b->owned[i]);
    free(b->owned);
}

/* -- gzip and the file ---------------------------------------------------- */

static bool gzip(const uint8_t *in, size_t n, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    if (n > UINT_MAX / 2) { /* zlib counts in uInt; no real profile comes near */
        snprintf(err, errlen, "profile too large to compress (%zu bytes)", n);
        return false;
    }
    z_stream z = {0};
    /* windowBits 15 + 16: a gzip header and trailer, not a zlib stream. */
    int rc = deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) {
        snprintf(err, errlen, "zlib deflateInit2: %s", z.msg ? z.msg : zError(rc));
        return false;
    }
    size_t cap = deflateBound(&z, (uLong)n);
    uint8_t *buf = report_mem_alloc(cap);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    rc = deflate(&z, Z_FINISH);
    if (rc != Z_STREAM_END) {
        snprintf(err, errlen, "zlib deflate: %s", z.msg ? z.msg : zError(rc));
        deflateEnd(&z);
        free(buf);
        return false;
    }
    *outlen = z.total_out;
    *out = buf;
    deflateEnd(&z);
    return true;
}

static bool write_stream(FILE *f, const uint8_t *data, size_t n, const char *name, char *err, size_t errlen)
{
    if (fwrite(data, 1, n, f) == n && fflush(f) == 0)
        return true;
    snprintf(err, errlen, "cannot write %s: %s", name, strerror(errno));
    return false;
}

/* The gzipped, packed profile in *gz (malloc'd). */
static bool pack(const Profile *p, uint8_t **gz, size_t *gzlen, char *err, size_t errlen)
{
    Builder b = {.p = p};
    Message m = {0};
    build(&m, &b);
    size_t n = perftools__profiles__profile__get_packed_size(&m.profile);
    uint8_t *packed = report_mem_alloc(n);
    perftools__profiles__profile__pack(&m.profile, packed);
    message_free(&m, &b);
    bool ok = gzip(packed, n, gz, gzlen, err, errlen);
    free(packed);
    return ok;
}

bool report_write_pprof_stream(FILE *f, const Profile *p, char *err, size_t errlen)
{
    char scratch[1];
    if (!err || errlen == 0) { /* callers that ignore the message still get false */
        err = scratch;
        errlen = sizeof scratch;
    }
    uint8_t *gz = NULL;
    size_t gzlen = 0;
    bool ok = pack(p, &gz, &gzlen, err, errlen) && write_stream(f, gz, gzlen, "the pprof profile", err, errlen);
    free(gz);
    return ok;
}

bool report_write_pprof(const char *path, const Profile *p, char *err, size_t errlen)
{
    char scratch[1];
    if (!err || errlen == 0) {
        err = scratch;
        errlen = sizeof scratch;
    }
    uint8_t *gz = NULL;
    size_t gzlen = 0;
    if (!pack(p, &gz, &gzlen, err, errlen))
        return false;
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL;
    if (!f)
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
    else
        ok = write_stream(f, gz, gzlen, path, err, errlen);
    if (f && fclose(f) != 0 && ok) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        ok = false;
    }
    free(gz);
    return ok;
}
