/*
 * profiler/inimage.c — the in-VM profile: a private code timeline, the
 * counters, and the report through report/ (see inimage.h).
 */
#define _GNU_SOURCE /* open_memstream, gettid through syscall */
#include "profiler/inimage.h"

#include "profiler/codeevents.h"
#include "profiler/publish.h"
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
    ProfCodeSpace sp = e->kind == PROF_CODE_BYTECODES ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE;
    report_codemap_load(timeline, prof_code_event_time(), sp, e->start, &piece);
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

    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = '\0';
    char serr[256] = "";
    Symbolizer *sym = report_symbolizer_new(getpid(), NULL, vm.zone_start, vm.zone_end, serr, sizeof serr);

    Profile *p = report_profile_new();
    ReportHeader h = {
        .vm_path = exe[0] ? exe : "(unknown executable)",
        .start_wall = start_wall,
        .seconds = opt && opt->seconds > 0 ? opt->seconds : (double)(end_ns - begin_ns) / 1e9,
        .requested_hz = opt ? opt->requested_hz : 0,
        .mode = "the in-VM sampler (SIGPROF from a timer thread)",
        .lost_samples = opt ? opt->lost_samples : 0,
        .cpu_weighted = true, /* the sampler's ticks are wall-clock (profiler/invm_sampler.h) */
        .have_sched = opt && opt->have_sched,
        .sched_run_ns = opt ? opt->sched_run_ns : 0,
        .sched_wait_ns = opt ? opt->sched_wait_ns : 0,
        .have_counters = true,
        .start = start_counters,
        .end = end_counters,
    };
    report_profile_set_header(p, &h);
    if (!sym)
        report_profile_add_note(p, "the VM's own memory map could not be read (%s): native addresses are unresolved",
                                serr);
    if (opt && !opt->realtime)
        report_profile_add_note(p, "the sampler's timer thread ran at normal priority (SCHED_FIFO refused; it needs "
                                   "root or CAP_SYS_NICE): on a busy machine its ticks may follow the VM's system "
                                   "calls, and shares lean toward the code after them");
    char cwd[4096];
    ResolveCode code = {
        .map = timeline,
        .zone_start = vm.zone_start,
        .zone_end = vm.zone_end,
        .cwd = getcwd(cwd, sizeof cwd),
        .interp_fn = vm.interp_fn,
        .return_to_interpreter = prof_publish_walk_facts() ? prof_publish_walk_facts()->return_to_interpreter : 0,
    };
    if (partial)
        report_profile_add_note(p, "stacks partial: %" PRIu64 " of %zu samples have no Smalltalk frames (their "
                                   "whole stacks were overwritten by newer ones, or never walked: no walk facts)",
                                partial, n);
    report_resolve_samples(p, sym, &store, &code);
    if (code.nothing || code.before)
        report_profile_add_note(p, "%" PRIu64 " samples in the code zone found no code there (%" PRIu64
                                   " before the profile's code timeline)",
                                code.nothing + code.before, code.before);

    char *text = NULL;
    size_t tlen = 0;
    FILE *out = open_memstream(&text, &tlen);
    bool ok = out != NULL;
    if (ok) {
        ReportTextOptions to = {.lines = opt && opt->lines, .range_min_samples = 10};
        ok = opt && opt->folded ? report_write_folded(out, p, err, errlen) : report_write_text(out, p, &to, err, errlen);
        ok = fclose(out) == 0 && ok;
    } else {
        snprintf(err, errlen, "out of memory for the report");
    }
    report_profile_free(p);
    if (sym)
        report_symbolizer_free(sym);
    report_samples_free(&store);
    prof_inimage_discard();
    if (!ok) {
        free(text);
        return NULL;
    }
    *len = tlen;
    return text;
}
