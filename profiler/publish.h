/*
 * profiler/publish.h — stvm writes its export segment (proto/export.h).
 *
 * prof_publish_open creates /dev/shm/stvm-<pid> (mode 0600) and answers the
 * ProfCounters the VM increments in place; when the segment cannot be
 * created (or --no-export), the counters live in private memory instead and
 * the VM runs on unchanged. The segment is unlinked at exit.
 *
 * It also opens the segment's code event log (profiler/codelog_writer.h): a
 * sink of the VM's code events is registered and the code already alive is
 * replayed into the log's first checkpoint, so open after the JIT has made
 * its trampolines and before any method exists, or the log misses nothing
 * anyway (the replay covers what profiler/codeevents' replay function knows).
 *
 * With an allocation sample log (proto/allocabi.h) after the code log,
 * written by profiler/allocsampler.c.
 *
 * Who may call: vm/ (boot, GC hook). Single writer: the VM thread.
 */
#ifndef PROFILER_PUBLISH_H
#define PROFILER_PUBLISH_H

#include "proto/export.h"
#include "proto/stackabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ProfPublishInit {
    bool enabled;          /* false: private counters only */
    uint64_t eden_bytes;
    uint64_t stack_pages;
    uint64_t code_bytes;
    uint64_t code_zone_start, code_zone_end; /* 0 without a JIT */
    uint64_t start_monotonic_ns;
    uint64_t code_log_bytes; /* the log's ring (--export-log-size); 0: PROF_CODE_LOG_DEFAULT_RING */
    const ProfWalkFacts *walk; /* how to walk the VM's stacks (copied); NULL: none */
    /* the allocation sample log's ring (--alloc-log-size); 0: PROF_ALLOC_LOG_DEFAULT_RING;
     * no_alloc_log: none (--no-alloc-log); without one, STVM_ALLOC_SAMPLE gets a warning. The sampler (profiler/allocsampler.h) must be
     * initialised first: opening the log applies STVM_ALLOC_SAMPLE. */
    uint64_t alloc_log_bytes;
    bool no_alloc_log;
} ProfPublishInit;

/* Never fails: answers the counters to increment. err gets a warning when
 * the shared segment could not be made (the caller may print it). */
ProfCounters *prof_publish_open(const ProfPublishInit *init, char *err, size_t errlen);
/* Copies the collector's statistics in (under the seqlock). */
void prof_publish_gc(void);
/* A copy of the counters now (the in-VM profiler's start and end; works
 * with --no-export too). */
void prof_publish_read_counters(ProfCounters *out);
/* The walk facts given to prof_publish_open (also with --no-export: the
 * in-VM sampler walks with them), or NULL. */
const ProfWalkFacts *prof_publish_walk_facts(void);
/* Tells profilers where the interpreter keeps its bytecode ip
 * (ProfCodeLogControl.interp_fn / interp_ip_reg): inside the function that
 * contains interp_fn, perf_event x86 register perf_reg holds it. */
void prof_publish_interp_ip(const void *interp_fn, unsigned perf_reg);
void prof_publish_close(void);

#endif
