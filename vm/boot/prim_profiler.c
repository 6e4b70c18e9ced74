/*
 * vm/boot/prim_profiler.c — the VMProfiler primitives (class side of
 * smalltalk/core/VMProfiler.som): the code zone's constituents (reference
 * 004, 3.1), the in-VM sampler (profiler/inimage_sampler.h), the VM counters, and
 * the in-VM profile whose report is vmprofd's (profiler/inimage_profile.h).
 *
 * Answers (all addresses and times are SmallIntegers: user addresses and
 * CLOCK_MONOTONIC nanoseconds fit in 62 bits):
 *
 *   constituents        flat Array of pairs, ascending addresses:
 *                         name (String)  start (Integer)
 *                         name (String)  Array(start mcpc1 bcpc1 mcpc2 bcpc2 ...)
 *                       the second form for compiled methods and blocks with
 *                       a mcpc -> bcpc map (mcpc absolute, bcpc the map's
 *                       0-based bytecode pc); names as the code events name
 *                       them ("Class>>sel", "[] in Class>>sel",
 *                       "sel (closed PIC)", "ceSend"). A method with inlined
 *                       methods (vm/jit/inline.c) lists only its own code's
 *                       pairs, and each inlined range follows it as a piece of
 *                       its own, "B>>sel (inlined into A>>sel)" with
 *                       Array(range start, B's pairs inside the range): a
 *                       map's bcpcs are each of one method. Then 'CCFree' (start of
 *                       the unused part of the zone) and 'CCEnd' (the limit of
 *                       the code part: the young referrers list starts there).
 *                       --no-jit: only the markers, both 0.
 *   primCollectSamples  flat Array, 3 Integers a sample, oldest first:
 *                         time_ns  pc  r15
 *   primCounters /      flat Array of pairs: name (String)  value (Integer)
 *   primSamplerStats
 *
 *   primStartAllocSampling: bytes
 *                       opens the private allocation log (one at a time) and
 *                       asks the VM to sample about one allocation per
 *                       `bytes` into it; false when it is open already
 *   primStopAllocSampling
 *                       stops sampling for it (the log stays for the
 *                       report); false when it was not sampling
 *   primAllocReport: how   the allocation report of the log against the
 *                       ended profile (how: a Boolean for source lines, or
 *                       #folded), and the log closed
 *   primDiscardAllocLog closes the log; false when none was open
 *
 * State errors are answers, not failures: starting a running sampler or
 * stopping a stopped one answers false, begin/end of the profile likewise;
 * a report without an ended profile, or bad arguments, fail the primitive.
 */
#include "gc/heap.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/map.h"
#include "vm/jit/zone.h"
#include "profiler/allocsampler.h"
#include "profiler/inimage_profile.h"
#include "profiler/inimage_sampler.h"
#include "profiler/publish.h"
#include "vm/interp/interp.h"
#include "vm/interp/jitinterface.h"
#include "vm/jit/jitpublish.h"
#include "vm/jit/runtime.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Oop new_array(size_t n, const char *what)
{
    Oop a = vm_array_new(n);
    if (!a) vm_out_of_memory(what);
    return a;
}

static Oop new_string(const char *s, const char *what)
{
    Oop o = vm_string_from_cstr(s);
    if (!o) vm_out_of_memory(what);
    return o;
}

static Oop int_oop(uint64_t v) { return oop_from_int((intptr_t)v); }

/* -- Constituents ------------------------------------------------------------ */

/* The map pairs of m in [lo, hi) (mcpc offsets), inside an inline range or
 * outside every one (own): Array(start, mcpc bcpc ...), start absolute. */
static Oop map_pairs(const JitMethod *m, uint64_t start, uint32_t lo, uint32_t hi, bool own)
{
    size_t n = 0;
    JitMapIter it;
    JitMapEntry me;
    for (int pass = 0; pass < 2; pass++) {
        Oop a = pass ? new_array(1 + 2 * n, "constituents") : 0;
        size_t k = 1;
        if (pass) gc_store(a, 0, int_oop(start));
        jit_map_iter_init(&it, jit_method_map(m));
        while (jit_map_iter_next(&it, &me)) {
            bool in = own ? jit_method_inline_scope_at(m, me.mcpc) < 0 : me.mcpc >= lo && me.mcpc < hi;
            if (!in) continue;
            if (!pass) {
                n++;
            } else if (k + 1 < 1 + 2 * n) {
                gc_store(a, k++, int_oop((uint64_t)(uintptr_t)m + me.mcpc));
                gc_store(a, k++, int_oop(me.bcpc));
            }
        }
        if (pass) return a;
        if (n == 0) return int_oop(start); /* no pairs: the first form */
    }
    return 0;
}

static Oop piece_value(const JitMethod *m)
{
    uint64_t start = (uint64_t)(uintptr_t)m;
    if (!jit_method_is_compiled(m) || m->map_count == 0) return int_oop(start);
    return map_pairs(m, start, 0, m->size, true);
}

/* Constituents one piece stands for: itself and its inlined ranges. */
static size_t piece_constituents(const JitMethod *m)
{
    return 1 + (jit_method_is_compiled(m) ? jit_method_inline_range_count(m) : 0);
}

static bool p_constituents(Oop *a, Oop *r)
{
    (void)a;
    size_t n = 0;
    JitZone *z = vm_jit_enabled ? vm_jit_zone() : NULL;
    if (z)
        for (JitMethod *m = jit_zone_first(z); m; m = jit_zone_next(z, m)) n += piece_constituents(m);
    Oop out = new_array(2 * n + 4, "constituents");
    size_t k = 0;
    char name[600], inner[600], label[1300];
    if (z)
        for (JitMethod *m = jit_zone_first(z); m && k < 2 * n; m = jit_zone_next(z, m)) {
            gc_store(out, k++, new_string(vm_jit_publish_name(m, name, sizeof name), "constituents"));
            gc_store(out, k++, piece_value(m));
            if (!jit_method_is_compiled(m)) continue;
            const JitInlineRange *ranges = jit_method_inline_ranges(m);
            const JitInlineScope *scopes = jit_method_inline_scopes(m);
            for (uint32_t i = 0, nr = jit_method_inline_range_count(m); i < nr && k < 2 * n; i++) {
                snprintf(label, sizeof label, "%s (inlined into %s)",
                         vm_method_name(scopes[ranges[i].scope].method, inner, sizeof inner), name);
                gc_store(out, k++, new_string(label, "constituents"));
                gc_store(out, k++, map_pairs(m, (uint64_t)(uintptr_t)m + ranges[i].start, ranges[i].start,
                                             ranges[i].end, false));
            }
        }
    gc_store(out, k++, new_string("CCFree", "constituents"));
    gc_store(out, k++, int_oop(z ? (uint64_t)(uintptr_t)jit_zone_free_start(z) : 0));
    gc_store(out, k++, new_string("CCEnd", "constituents"));
    gc_store(out, k++, int_oop(z ? (uint64_t)(uintptr_t)jit_zone_young_base(z) : 0));
    *r = out;
    return true;
}

/* -- The sampler ------------------------------------------------------------------ */

static bool p_start_sampling(Oop *a, Oop *r)
{
    if (!oop_is_int(a[1]) || oop_int(a[1]) < 1 || oop_int(a[1]) > PROF_SAMPLER_MAX_HZ)
        return vm_prim_error("VMProfiler: the sampling rate must be an Integer from 1 to %d (Hz)", PROF_SAMPLER_MAX_HZ);
    ProfSamplerStats st;
    prof_sampler_stats(&st);
    if (st.running) {
        *r = vm_false;
        return true;
    }
    char err[256];
    if (!prof_sampler_start((uint32_t)oop_int(a[1]), 0, err, sizeof err)) return vm_prim_error("VMProfiler: %s", err);
    *r = vm_true;
    return true;
}

static bool p_stop_sampling(Oop *a, Oop *r)
{
    (void)a;
    *r = vm_bool(prof_sampler_stop());
    return true;
}

static bool p_clear_samples(Oop *a, Oop *r)
{
    (void)a;
    *r = int_oop(prof_sampler_clear());
    return true;
}

static bool p_sample_count(Oop *a, Oop *r)
{
    (void)a;
    *r = int_oop(prof_sampler_count());
    return true;
}

/* primCollectSamples' Array: per sample its time (ns, CLOCK_MONOTONIC), pc,
 * r15 and weight (the VM thread's CPU ns since the previous sample). */
#define PROF_SAMPLE_SLOTS 4

static bool p_collect_samples(Oop *a, Oop *r)
{
    (void)a;
    size_t n = prof_sampler_count();
    ProfSample *s = malloc((n ? n : 1) * sizeof *s);
    if (!s) vm_out_of_memory("collected samples");
    n = prof_sampler_copy(s, n); /* may be fewer: none are added while copying */
    Oop out = new_array(PROF_SAMPLE_SLOTS * n, "collected samples");
    for (size_t i = 0; i < n; i++) {
        gc_store(out, PROF_SAMPLE_SLOTS * i, int_oop(s[i].time_ns));
        gc_store(out, PROF_SAMPLE_SLOTS * i + 1, int_oop(s[i].pc));
        /* r15 is the bytecode ip only where pc is in interpret(); elsewhere
         * (libc, the sanitizers' runtimes) it is whatever that code left,
         * which need not fit a SmallInteger: 0 then, as no ip is */
        gc_store(out, PROF_SAMPLE_SLOTS * i + 2, int_oop(s[i].r15 < (1ull << 62) ? s[i].r15 : 0));
        gc_store(out, PROF_SAMPLE_SLOTS * i + 3, int_oop(s[i].cpu_ns));
    }
    free(s);
    *r = out;
    return true;
}

typedef struct Named {
    const char *name;
    uint64_t value;
} Named;

static Oop pairs(const Named *v, size_t n, const char *what)
{
    Oop out = new_array(2 * n, what);
    for (size_t i = 0; i < n; i++) {
        gc_store(out, 2 * i, new_string(v[i].name, what));
        gc_store(out, 2 * i + 1, int_oop(v[i].value));
    }
    return out;
}

static bool p_sampler_stats(Oop *a, Oop *r)
{
    (void)a;
    ProfSamplerStats st;
    prof_sampler_stats(&st);
    Named v[] = {
        {"running", st.running}, {"hz", st.hz},
        {"ticks", st.ticks},     {"late", st.late},
        {"taken", st.taken},     {"overwritten", st.overwritten},
        {"held", prof_sampler_count()},
    };
    *r = pairs(v, sizeof v / sizeof v[0], "sampler stats");
    return true;
}

static bool p_counters(Oop *a, Oop *r)
{
    (void)a;
    ProfCounters c;
    prof_publish_read_counters(&c);
    Named v[] = {
        {"edenBytes", c.eden_bytes},
        {"stackPages", c.stack_pages},
        {"codeBytes", c.code_bytes},
        {"oldBytes", c.old_bytes},
        {"oldFreeBytes", c.old_free_bytes},
        {"scavenges", c.scavenges},
        {"scavengeUsecs", c.scavenge_usecs},
        {"fullGCs", c.full_gcs},
        {"fullGCUsecs", c.full_usecs},
        {"tenures", c.tenures},
        {"objectsTenured", c.objects_tenured},
        {"rootTableOverflows", c.root_table_overflows},
        {"bytesAllocated", c.bytes_allocated},
        {"bytesFreed", c.bytes_freed},
        {"codeCompactions", c.code_compactions},
        {"codeCompactionUsecs", c.code_compaction_usecs},
        {"processSwitches", c.process_switches},
        {"interruptChecks", c.interrupt_checks},
        {"eventChecks", c.event_checks},
        {"stackOverflows", c.stack_overflows},
        {"pageDivorces", c.page_divorces},
    };
    *r = pairs(v, sizeof v / sizeof v[0], "counters");
    return true;
}

/* -- The profile ------------------------------------------------------------------- */

static bool p_begin_profile(Oop *a, Oop *r)
{
    (void)a;
    if (prof_inimage_state() != PROF_INIMAGE_IDLE) {
        *r = vm_false;
        return true;
    }
    ProfInimageVm v = {.interp_fn = (uint64_t)vm_interp_code_start() + 1}; /* inside (vm/boot/boot.c says why) */
    if (vm_jit_enabled) {
        v.zone_start = vm_jit_zone_start;
        v.zone_end = vm_jit_zone_end;
    }
    char err[256];
    if (!prof_inimage_begin(&v, err, sizeof err)) return vm_prim_error("VMProfiler: %s", err);
    *r = vm_true;
    return true;
}

static bool p_end_profile(Oop *a, Oop *r)
{
    (void)a;
    char err[128];
    *r = vm_bool(prof_inimage_end(err, sizeof err));
    return true;
}

static bool p_discard_profile(Oop *a, Oop *r)
{
    (void)a;
    *r = vm_bool(prof_inimage_discard());
    return true;
}

/* samples: primCollectSamples' Array; lines: a Boolean (source lines next to
 * bytecode ranges). */
static bool p_report(Oop *a, Oop *r)
{
    if (!vm_is_array(a[1])) return vm_prim_error("VMProfiler report: expects the Array primCollectSamples answers");
    char how[16] = "";
    if (vm_is_symbol(a[2])) vm_string_cstr(a[2], how, sizeof how);
    bool folded = strcmp(how, "folded") == 0;
    if (a[2] != vm_true && a[2] != vm_false && !folded)
        return vm_prim_error("VMProfiler report:lines: expects a Boolean, or #folded for folded stacks");
    size_t len = obj_num_slots(a[1]);
    if (len % PROF_SAMPLE_SLOTS != 0)
        return vm_prim_error("VMProfiler report: the samples Array has %zu elements, not %d a sample", len,
                             PROF_SAMPLE_SLOTS);
    const Oop *e = obj_slots(a[1]);
    for (size_t i = 0; i < len; i++)
        if (!oop_is_int(e[i]) || oop_int(e[i]) < 0)
            return vm_prim_error("VMProfiler report: element %zu of the samples is not a non-negative Integer", i + 1);
    if (prof_inimage_state() != PROF_INIMAGE_ENDED)
        return vm_prim_error("VMProfiler report: no profile has ended (send primBeginProfile, then primEndProfile)");
    size_t n = len / PROF_SAMPLE_SLOTS;
    ProfSample *s = malloc((n ? n : 1) * sizeof *s);
    if (!s) vm_out_of_memory("the profile's samples");
    for (size_t i = 0; i < n; i++)
        s[i] = (ProfSample){.time_ns = (uint64_t)oop_int(e[PROF_SAMPLE_SLOTS * i]),
                            .pc = (uint64_t)oop_int(e[PROF_SAMPLE_SLOTS * i + 1]),
                            .r15 = (uint64_t)oop_int(e[PROF_SAMPLE_SLOTS * i + 2]),
                            .cpu_ns = (uint64_t)oop_int(e[PROF_SAMPLE_SLOTS * i + 3])};
    ProfSamplerStats st;
    prof_sampler_stats(&st);
    ProfInimageReportOptions opt = {
        .requested_hz = st.hz,
        .lost_samples = st.late + st.overwritten,
        .seconds = !st.running && st.stop_ns > st.start_ns ? (double)(st.stop_ns - st.start_ns) / 1e9 : 0,
        .lines = a[2] == vm_true,
        .folded = folded,
        .realtime = st.realtime,
        .have_sched = st.have_sched,
        .sched_run_ns = st.sched_run_ns,
        .sched_wait_ns = st.sched_wait_ns,
    };
    char err[256];
    size_t tlen = 0;
    char *text = prof_inimage_report(s, n, &opt, &tlen, err, sizeof err);
    free(s);
    if (!text) return vm_prim_error("VMProfiler report: %s", err);
    Oop str = vm_string_new(text, tlen);
    free(text);
    if (!str) vm_out_of_memory("the profile's report");
    *r = str;
    return true;
}

/* -- Allocations (profiler/allocsampler.h's private log) ----------------------------- */

static ProfAllocLogControl *alloc_log;
static uint64_t alloc_interval;

static bool p_start_alloc_sampling(Oop *a, Oop *r)
{
    if (!oop_is_int(a[1]) || oop_int(a[1]) < 256 || (uint64_t)oop_int(a[1]) > ((uint64_t)1 << 40))
        return vm_prim_error("VMProfiler primStartAllocSampling: expects bytes from 256 to 2^40");
    if (alloc_log) {
        *r = vm_false;
        return true;
    }
    char err[256];
    alloc_log = prof_allocsampler_private_open(PROF_ALLOC_LOG_DEFAULT_RING, err, sizeof err);
    if (!alloc_log) return vm_prim_error("VMProfiler: %s", err);
    if (!prof_inimage_alloc_attach(alloc_log, prof_alloclog_region_bytes(alloc_log->ring_size), err, sizeof err)) {
        prof_allocsampler_private_close();
        alloc_log = NULL;
        return vm_prim_error("VMProfiler: %s", err);
    }
    alloc_interval = (uint64_t)oop_int(a[1]);
    alloc_log->request_interval = alloc_interval;
    __atomic_store_n(&alloc_log->request_until_ns, UINT64_MAX, __ATOMIC_RELEASE); /* no lease: we stop it */
    prof_allocsampler_poll();
    *r = vm_true;
    return true;
}

static bool p_stop_alloc_sampling(Oop *a, Oop *r)
{
    (void)a;
    bool was = alloc_log && alloc_log->request_interval != 0;
    if (was) {
        alloc_log->request_interval = 0;
        prof_allocsampler_poll(); /* its STOP, now */
    }
    *r = vm_bool(was);
    return true;
}

static bool p_discard_alloc_log(Oop *a, Oop *r)
{
    (void)a;
    *r = vm_bool(alloc_log != NULL);
    prof_inimage_alloc_detach();
    if (alloc_log) prof_allocsampler_private_close();
    alloc_log = NULL;
    return true;
}

static bool p_alloc_report(Oop *a, Oop *r)
{
    char how[16] = "";
    if (vm_is_symbol(a[1])) vm_string_cstr(a[1], how, sizeof how);
    bool folded = strcmp(how, "folded") == 0;
    if (a[1] != vm_true && a[1] != vm_false && !folded)
        return vm_prim_error("VMProfiler primAllocReport: expects a Boolean, or #folded for folded stacks");
    if (!alloc_log)
        return vm_prim_error("VMProfiler primAllocReport: no allocation log (send primStartAllocSampling: first)");
    if (prof_inimage_state() != PROF_INIMAGE_ENDED)
        return vm_prim_error("VMProfiler primAllocReport: no profile has ended (send primBeginProfile, then "
                             "primEndProfile)");
    ProfInimageAllocOptions opt = {.interval = alloc_interval, .lines = a[1] == vm_true, .folded = folded};
    char err[256];
    size_t tlen = 0;
    char *text = prof_inimage_alloc_report(&opt, &tlen, err, sizeof err);
    prof_allocsampler_private_close();
    alloc_log = NULL;
    if (!text) return vm_prim_error("VMProfiler primAllocReport: %s", err);
    Oop str = vm_string_new(text, tlen);
    free(text);
    if (!str) vm_out_of_memory("the allocation report");
    *r = str;
    return true;
}

const VmPrimDef vm_prims_profiler[] = {
    {"VMProfiler", true, "constituents", p_constituents},
    {"VMProfiler", true, "primStartSampling:", p_start_sampling},
    {"VMProfiler", true, "primStopSampling", p_stop_sampling},
    {"VMProfiler", true, "primClearSamples", p_clear_samples},
    {"VMProfiler", true, "primSampleCount", p_sample_count},
    {"VMProfiler", true, "primCollectSamples", p_collect_samples},
    {"VMProfiler", true, "primSamplerStats", p_sampler_stats},
    {"VMProfiler", true, "primCounters", p_counters},
    {"VMProfiler", true, "primBeginProfile", p_begin_profile},
    {"VMProfiler", true, "primEndProfile", p_end_profile},
    {"VMProfiler", true, "primDiscardProfile", p_discard_profile},
    {"VMProfiler", true, "primReport:lines:", p_report},
    {"VMProfiler", true, "primStartAllocSampling:", p_start_alloc_sampling},
    {"VMProfiler", true, "primStopAllocSampling", p_stop_alloc_sampling},
    {"VMProfiler", true, "primAllocReport:", p_alloc_report},
    {"VMProfiler", true, "primDiscardAllocLog", p_discard_alloc_log},
    {NULL, false, NULL, NULL},
};
