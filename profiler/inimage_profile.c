/*
 * profiler/inimage_profile.c — the in-VM profile: a private code timeline, the
 * counters, and the report through report/ (see inimage_profile.h).
 */
#define _GNU_SOURCE /* open_memstream, gettid through syscall */
#include "profiler/inimage_profile.h"

#include "profiler/allocsampler.h"
#include "profiler/codeevents.h"
#include "profiler/publish.h"
#include "report/allocprof.h"
#include "report/codemap.h"
#include "report/report.h"
#include "report/resolve.h"
#include "report/samples.h"
#include "report/symbolize.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static ProfInimageState state;
static ProfInimageVm vm;
static ReportCodeMap *timeline;
static ProfCounters start_counters, end_counters;
static time_t start_wall;
static uint64_t begin_ns, end_ns;
static bool sink_added;

/* -- The private sink: code events straight into the timeline ---------------- */

static ProfCodeSpace space_of(uint64_t addr)
{
    return addr >= vm.zone_start && addr < vm.zone_end ? PROF_CODE_SPACE_MACHINE : PROF_CODE_SPACE_BYTECODES;
}

static void on_load(const ProfCodeLoad *e, void *ctx)
{
    (void)ctx;
    if (state != PROF_INIMAGE_ACTIVE)
        return;
    /* the event's pairs are (uint32, uint32), as the report's entries */
    ReportMapEntry *map = e->map_count ? malloc(e->map_count * sizeof *map) : NULL;
    ReportLineEntry *lines = e->line_count ? malloc(e->line_count * sizeof *lines) : NULL;
    for (uint32_t i = 0; map && i < e->map_count; i++)
        map[i] = (ReportMapEntry){.mcpc = e->map[2 * i], .bcpc = e->map[2 * i + 1]};
    for (uint32_t i = 0; lines && i < e->line_count; i++)
        lines[i] = (ReportLineEntry){.bcpc = e->lines[2 * i], .line = e->lines[2 * i + 1]};
    ReportCodePiece piece = {
        .kind = e->kind,
        .bytecode_size = e->bytecode_size,
        .size = e->size,
        .code_offset = e->code_start - e->start,
        .name = e->name,
        .source = e->source,
        .map = map,
        .nmap = map ? e->map_count : 0,
        .lines = lines,
        .nlines = lines ? e->line_count : 0,
        .truncated = (e->map_count && !map) || (e->line_count && !lines),
        .unwind = e->unwind,
        .nunwind = e->unwind ? e->unwind_count : 0,
    };
    /* inlined methods: the same frames as vmprofd shows (report/resolve.h) */
    uint32_t nscopes = e->scopes && e->ranges && e->range_count ? e->scope_count : 0;
    ReportInlineScope *scopes = nscopes ? calloc(nscopes, sizeof *scopes) : NULL;
    ReportInlineRange *ranges = scopes ? malloc(e->range_count * sizeof *ranges) : NULL;
    bool inl = scopes && ranges;
    for (uint32_t i = 0; inl && i < nscopes; i++) {
        const ProfInlineScope *sc = &e->scopes[i];
        ReportLineEntry *sl = sc->lines && sc->line_count ? malloc(sc->line_count * sizeof *sl) : NULL;
        for (uint32_t k = 0; sl && k < sc->line_count; k++)
            sl[k] = (ReportLineEntry){.bcpc = sc->lines[2 * k], .line = sc->lines[2 * k + 1]};
        scopes[i] = (ReportInlineScope){.name = sc->name, .source = sc->source, .lines = sl,
                                        .nlines = sl ? sc->line_count : 0, .bytecode_size = sc->bytecode_size,
                                        .call_bcpc = sc->call_bcpc, .parent = sc->parent};
    }
    for (uint32_t i = 0; inl && i < e->range_count; i++)
        ranges[i] = (ReportInlineRange){e->ranges[i].start, e->ranges[i].end, e->ranges[i].scope};
    if (inl) {
        piece.scopes = scopes;
        piece.nscopes = nscopes;
        piece.ranges = ranges;
        piece.nranges = e->range_count;
        const char *why;
        if (!report_codemap_check_inline(&piece, &why)) {
            /* the JIT broke its promise (codeevents.h): the piece stays one method */
            static bool warned;
            if (!warned)
                fprintf(stderr, "stvm: warning: in-VM profiler: %s's inlined methods ignored: %s\n",
                        e->name ? e->name : "?", why);
            warned = true;
            piece.nscopes = piece.nranges = 0;
        }
    }
    ProfCodeSpace sp = e->kind == PROF_CODE_BYTECODES ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE;
    report_codemap_load(timeline, prof_code_event_time(), sp, e->start, &piece);
    for (uint32_t i = 0; scopes && i < nscopes; i++)
        free((ReportLineEntry *)scopes[i].lines);
    free(scopes);
    free(ranges);
    free(map);
    free(lines);
}

static void on_move(uint64_t from, uint64_t to, uint64_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    if (state == PROF_INIMAGE_ACTIVE)
        report_codemap_move(timeline, prof_code_event_time(), space_of(from), from, to);
}

static void on_free(uint64_t start, uint64_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    if (state == PROF_INIMAGE_ACTIVE)
        report_codemap_unload(timeline, prof_code_event_time(), space_of(start), start);
}

static const ProfCodeSink sink = {.name = "in-VM profiler", .load = on_load, .move = on_move, .free = on_free};

/* -- Begin, end ------------------------------------------------------------------- */

ProfInimageState prof_inimage_state(void) { return state; }

bool prof_inimage_begin(const ProfInimageVm *v, char *err, size_t errlen)
{
    if (state != PROF_INIMAGE_IDLE) {
        snprintf(err, errlen, "a profile is already %s", state == PROF_INIMAGE_ACTIVE ? "running" : "waiting for its report");
        return false;
    }
    if (!sink_added && !prof_code_sink_add(&sink)) {
        snprintf(err, errlen, "no room for the in-VM profiler's code event sink (%d sinks at most)", PROF_CODE_MAX_SINKS);
        return false;
    }
    sink_added = true;
    ReportCodeMap *m = report_codemap_new();
    if (!m) {
        snprintf(err, errlen, "out of memory for the code timeline");
        return false;
    }
    vm = *v;
    timeline = m;
    state = PROF_INIMAGE_ACTIVE;
    /* the replay stamps its loads with one time: the timeline is known
     * from there on */
    uint64_t t = prof_clock_ns();
    report_codemap_known(timeline, t);
    prof_code_replay(&sink);
    prof_publish_read_counters(&start_counters);
    start_wall = time(NULL);
    begin_ns = prof_clock_ns();
    return true;
}

bool prof_inimage_end(char *err, size_t errlen)
{
    if (state != PROF_INIMAGE_ACTIVE) {
        snprintf(err, errlen, "%s", state == PROF_INIMAGE_IDLE ? "no profile is running" : "the profile has already ended");
        return false;
    }
    end_ns = prof_clock_ns();
    prof_publish_read_counters(&end_counters);
    state = PROF_INIMAGE_ENDED;
    return true;
}

bool prof_inimage_discard(void)
{
    if (state == PROF_INIMAGE_IDLE)
        return false;
    report_codemap_free(timeline);
    timeline = NULL;
    state = PROF_INIMAGE_IDLE;
    return true;
}

/* -- What both reports share ------------------------------------------------------ */

/* The VM's own executable, its symbolizer and the code timeline to resolve against. */
typedef struct Own {
    char exe[4096];
    char cwd[4096];
    char serr[256];
    Symbolizer *sym;
    ResolveCode code;
} Own;

static void own_open(Own *o)
{
    memset(o, 0, sizeof *o);
    ssize_t el = readlink("/proc/self/exe", o->exe, sizeof o->exe - 1);
    if (el <= 0)
        snprintf(o->exe, sizeof o->exe, "(unknown executable)");
    o->sym = report_symbolizer_new(getpid(), NULL, vm.zone_start, vm.zone_end, o->serr, sizeof o->serr);
    o->code = (ResolveCode){
        .map = timeline,
        .zone_start = vm.zone_start,
        .zone_end = vm.zone_end,
        .cwd = getcwd(o->cwd, sizeof o->cwd),
        .interp_fn = vm.interp_fn,
        .return_to_interpreter = prof_publish_walk_facts() ? prof_publish_walk_facts()->return_to_interpreter : 0,
    };
}

/* The header both reports start from: the executable, the profile's
 * interval and the counters at its ends. */
static ReportHeader own_header(const Own *o, const char *mode)
{
    return (ReportHeader){
        .vm_path = o->exe,
        .start_wall = start_wall,
        .seconds = (double)(end_ns - begin_ns) / 1e9,
        .mode = mode,
        .have_counters = true,
        .start = start_counters,
        .end = end_counters,
    };
}

static void own_notes(const Own *o, Profile *p)
{
    if (!o->sym)
        report_profile_add_note(p, "the VM's own memory map could not be read (%s): native addresses are unresolved",
                                o->serr);
}

/* The report of p as text (or folded stacks), malloc'd; frees p and the
 * symbolizer, and ends the profile (back to IDLE). NULL with a reason. */
static char *own_finish(Own *o, Profile *p, bool lines, bool folded, size_t *len, char *err, size_t errlen)
{
    if (o->code.nothing || o->code.before)
        report_profile_add_note(p, "%" PRIu64 " samples in the code zone found no code there (%" PRIu64
                                   " before the profile's code timeline)",
                                o->code.nothing + o->code.before, o->code.before);
    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    bool ok = out != NULL;
    if (ok) {
        ReportTextOptions to = {.lines = lines, .range_min_samples = 10};
        ok = folded ? report_write_folded(out, p, err, errlen) : report_write_text(out, p, &to, err, errlen);
        ok = fclose(out) == 0 && ok;
    } else {
        snprintf(err, errlen, "out of memory for the report");
    }
    report_profile_free(p);
    if (o->sym)
        report_symbolizer_free(o->sym);
    prof_inimage_discard();
    if (!ok) {
        free(text);
        return NULL;
    }
    *len = tlen;
    return text;
}

/* -- The report ---------------------------------------------------------------------- */

char *prof_inimage_report(const ProfSample *s, size_t n, const ProfInimageReportOptions *opt, size_t *len,
                          char *err, size_t errlen)
{
    if (state != PROF_INIMAGE_ENDED) {
        snprintf(err, errlen, "%s", state == PROF_INIMAGE_IDLE ? "no profile was begun" : "the profile has not ended");
        return NULL;
    }
    SampleStore store;
    memset(&store, 0, sizeof store);
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    static ProfRawStack raw; /* ~2.3 KB: not on the VM thread's stack */
    uint64_t partial = 0;
    for (size_t i = 0; i < n; i++) {
        if (prof_sampler_stack(s[i].time_ns, &raw)) {
            if (!report_samples_add_raw(&store, &raw)) {
                report_samples_free(&store);
                snprintf(err, errlen, "out of memory for %zu samples", n);
                return NULL;
            }
            store.v[store.n - 1].weight = s[i].cpu_ns;
            continue;
        }
        partial++;
        if (!report_samples_add(&store, s[i].time_ns, tid, 0, &s[i].pc, 1)) {
            report_samples_free(&store);
            snprintf(err, errlen, "out of memory for %zu samples", n);
            return NULL;
        }
        store.v[store.n - 1].interp_ip = s[i].r15; /* used only where pc is in the interpreter */
        store.v[store.n - 1].weight = s[i].cpu_ns;
    }

    Own own;
    own_open(&own);
    Profile *p = report_profile_new();
    ReportHeader h = own_header(&own, "the in-VM sampler (SIGPROF from a timer thread)");
    if (opt && opt->seconds > 0)
        h.seconds = opt->seconds;
    h.requested_hz = opt ? opt->requested_hz : 0;
    h.lost_samples = opt ? opt->lost_samples : 0;
    h.cpu_weighted = true; /* the sampler's ticks are wall-clock (profiler/inimage_sampler.h) */
    h.have_sched = opt && opt->have_sched;
    h.sched_run_ns = opt ? opt->sched_run_ns : 0;
    h.sched_wait_ns = opt ? opt->sched_wait_ns : 0;
    report_profile_set_header(p, &h);
    own_notes(&own, p);
    if (opt && !opt->realtime)
        report_profile_add_note(p, "the sampler's timer thread ran at normal priority (SCHED_FIFO refused; it needs "
                                   "root or CAP_SYS_NICE): on a busy machine its ticks may follow the VM's system "
                                   "calls, and shares lean toward the code after them");
    if (partial)
        report_profile_add_note(p, "stacks partial: %" PRIu64 " of %zu samples have no Smalltalk frames (their "
                                   "whole stacks were overwritten by newer ones, or never walked: no walk facts)",
                                partial, n);
    report_resolve_samples(p, own.sym, &store, &own.code);
    char *text = own_finish(&own, p, opt && opt->lines, opt && opt->folded, len, err, errlen);
    report_samples_free(&store);
    return text;
}

/* -- The allocation report ------------------------------------------------------------ */

typedef struct OwnRegion {
    const uint8_t *bytes;
    size_t size;
} OwnRegion;

static OwnRegion alloc_region;
static ReportAllocLog alloc_log; /* large: not on the VM thread's stack */
static bool alloc_attached;
static char alloc_warn[512];

/* The private log is this process's memory: a copy, bounds checked as
 * the reader checks everything. */
static bool read_own_region(void *ctx, uint64_t offset, void *buf, size_t len)
{
    const OwnRegion *r = ctx;
    if (offset > r->size || len > r->size - offset)
        return false;
    memcpy(buf, r->bytes + offset, len);
    return true;
}

static void drain_alloc_log(void *ctx)
{
    (void)ctx;
    char warn[512] = "";
    report_alloclog_poll(&alloc_log, warn, sizeof warn);
    if (warn[0] && !alloc_warn[0])
        snprintf(alloc_warn, sizeof alloc_warn, "%s", warn);
}

bool prof_inimage_alloc_attach(const void *region, size_t region_bytes, char *err, size_t errlen)
{
    prof_inimage_alloc_detach();
    alloc_region = (OwnRegion){.bytes = region, .size = region_bytes};
    memset(&alloc_log, 0, sizeof alloc_log);
    alloc_warn[0] = '\0';
    if (!report_alloclog_open(&alloc_log, region_bytes, read_own_region, &alloc_region, true, err, errlen))
        return false;
    alloc_attached = true;
    prof_allocsampler_private_drain(drain_alloc_log, NULL);
    return true;
}

void prof_inimage_alloc_detach(void)
{
    if (!alloc_attached)
        return;
    prof_allocsampler_private_drain(NULL, NULL);
    report_alloclog_close(&alloc_log);
    alloc_attached = false;
}

char *prof_inimage_alloc_report(const ProfInimageAllocOptions *opt, size_t *len, char *err, size_t errlen)
{
    if (state != PROF_INIMAGE_ENDED) {
        snprintf(err, errlen, "%s", state == PROF_INIMAGE_IDLE ? "no profile was begun" : "the profile has not ended");
        return NULL;
    }
    if (!alloc_attached) {
        snprintf(err, errlen, "no allocation log is attached");
        return NULL;
    }
    drain_alloc_log(NULL);
    const ReportAllocLog *log = &alloc_log;
    Own own;
    own_open(&own);
    Profile *p = report_profile_new();
    ReportHeader h = own_header(&own, "the VM's allocation sampler (in the VM)");
    h.lost_samples = log->stats.lost + log->stats.dropped;
    report_profile_set_header(p, &h);
    if (alloc_warn[0])
        report_profile_add_warning(p, "%s", alloc_warn);
    if (log->stats.lost)
        report_profile_add_warning(p, "%" PRIu64 " records of the allocation log were overwritten before they were "
                                      "read: the estimates are short by about that many samples' bytes",
                                   log->stats.lost);
    if (log->n == 0)
        report_profile_add_warning(p, "no allocation samples: the block allocated less than the interval (%" PRIu64
                                      " bytes)",
                                   opt ? opt->interval : 0);
    own_notes(&own, p);
    report_alloc_build(p, log, false, opt ? opt->interval : 0, own.sym, &own.code);
    char *text = own_finish(&own, p, opt && opt->lines, opt && opt->folded, len, err, errlen);
    prof_inimage_alloc_detach();
    return text;
}
