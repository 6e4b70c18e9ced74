/*
 * profiler/publish.h — stvm writes its export segment (profiler/export.h).
 *
 * prof_publish_open creates /dev/shm/stvm-<pid> (mode 0600) and answers the
 * ProfCounters the VM increments in place; when the segment cannot be
 * created (or --no-export), the counters live in private memory instead and
 * the VM runs on unchanged. The segment is unlinked at exit.
 *
 * Who may call: vm/ (boot, GC hook). Single writer: the VM thread.
 */
#ifndef PROFILER_PUBLISH_H
#define PROFILER_PUBLISH_H

#include "profiler/export.h"

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
} ProfPublishInit;

/* Never fails: answers the counters to increment. err gets a warning when
 * the shared segment could not be made (the caller may print it). */
ProfCounters *prof_publish_open(const ProfPublishInit *init, char *err, size_t errlen);
/* Copies the collector's statistics in (under the seqlock). */
void prof_publish_gc(void);
/* Path of the segment, or NULL when private. */
const char *prof_publish_path(void);
void prof_publish_close(void);

#endif
