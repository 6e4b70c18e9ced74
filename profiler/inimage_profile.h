/*
 * profiler/inimage_profile.h — the in-VM profile behind `VMProfiler spyOn:`: the
 * code events of the profiled interval kept as a timeline, the counters at
 * its start and end, and the report built from the sampler's samples the
 * way vmprofd builds it, so both print the same VMProfiler text.
 *
 *   prof_inimage_begin   a fresh report/codemap timeline fed by a private
 *                        code event sink (profiler/codeevents.h): the live
 *                        code is replayed into it, then every load, move
 *                        and free as it happens, stamped with the event's
 *                        time. Needs no export segment (--no-export works).
 *   prof_inimage_end     the counters and time at the end; the timeline
 *                        stops taking events.
 *   prof_inimage_alloc_report  the same for the sampled allocations of a
 *                        private allocation log: "who allocates".
 *   prof_inimage_report  samples (profiler/inimage_sampler.h) -> report/samples
 *                        store -> report/resolve (code zone against the
 *                        timeline at each sample's time, the interpreter's
 *                        r15 against the methods' bytecodes, native code
 *                        through report/symbolize on the own process) ->
 *                        report_write_text. Ends the profile.
 *
 * The sink stays registered once added (codeevents has no removal) and
 * drops events while no profile is begun, so an idle VM pays one call per
 * code event.
 *
 * Who may call: vm/boot/prim_profiler.c (the VMProfiler primitives), tests.
 * Single thread: the VM thread.
 */
#ifndef PROFILER_INIMAGE_PROFILE_H
#define PROFILER_INIMAGE_PROFILE_H

#include "profiler/inimage_sampler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ProfInimageVm {
    uint64_t zone_start, zone_end; /* the JIT's code zone; 0, 0 with --no-jit */
    uint64_t interp_fn;            /* an address in the interpreter function (vm_interp_code_start) */
} ProfInimageVm;

typedef enum ProfInimageState {
    PROF_INIMAGE_IDLE,   /* nothing begun (or the last report was made) */
    PROF_INIMAGE_ACTIVE, /* begun, taking code events */
    PROF_INIMAGE_ENDED,  /* ended, waiting for its report */
} ProfInimageState;

ProfInimageState prof_inimage_state(void);
/* False with a reason when a profile is already begun (ended or not), or
 * the sink cannot be registered. */
bool prof_inimage_begin(const ProfInimageVm *vm, char *err, size_t errlen);
/* False with a reason unless a profile is active. */
bool prof_inimage_end(char *err, size_t errlen);

typedef struct ProfInimageReportOptions {
    double requested_hz;
    uint64_t lost_samples;   /* ticks the sampler missed or overwrote */
    double seconds;          /* sampled time; <= 0: from begin to end */
    bool lines;              /* source lines next to bytecode ranges */
    bool folded;             /* folded stacks (one line per distinct whole stack) instead of the text */
    bool realtime;           /* the sampler's timer thread had SCHED_FIFO (profiler/inimage_sampler.h) */
    bool have_sched;         /* the VM thread's CPU time and run-queue wait while sampled: */
    uint64_t sched_run_ns, sched_wait_ns;
} ProfInimageReportOptions;

/* The VMProfiler text report of n samples against the ended profile, as a
 * malloc'd NUL-terminated string (*len its length), and back to IDLE.
 * NULL with a reason when no profile has ended, or out of memory. */
char *prof_inimage_report(const ProfSample *s, size_t n, const ProfInimageReportOptions *opt, size_t *len,
                          char *err, size_t errlen);
typedef struct ProfInimageAllocOptions {
    uint64_t interval;       /* the mean bytes between samples asked for */
    bool lines;              /* source lines next to bytecode ranges */
    bool folded;             /* folded stacks weighted by bytes, the class as the leaf */
} ProfInimageAllocOptions;

/* Reads the private allocation log at region (profiler/allocsampler.h,
 * region_bytes) from its start: drained whenever half its ring is written,
 * so a long block loses nothing. False with a reason. */
bool prof_inimage_alloc_attach(const void *region, size_t region_bytes, char *err, size_t errlen);
void prof_inimage_alloc_detach(void);
/* The allocation report ("who allocates", report/allocprof.h) of the
 * attached log's records against the ended profile's code timeline, as
 * vmprofd --event alloc prints it; malloc'd; detaches the log and goes
 * back to IDLE. NULL with a reason when no profile has ended or no log is
 * attached. */
char *prof_inimage_alloc_report(const ProfInimageAllocOptions *opt, size_t *len, char *err, size_t errlen);
/* Drops a begun or ended profile (back to IDLE); false when idle. */
bool prof_inimage_discard(void);

#endif
