/*
 * vmprofd/record.h — `vmprofd record --continuous --dir DIR`: every stvm of
 * the host profiled all the time, one pprof per process per interval.
 *
 * The recorder finds the VMs the way `vmprofd serve` does (the engine's
 * list, vmprofd/engine.h), each time /dev/shm gains an entry (inotify) and
 * once a second besides, and profiles each on a thread of its own through
 * the engine, one call per interval. Intervals are aligned to the wall
 * clock (with --interval 60s they end on every whole minute, UTC), so the
 * profiles of all the VMs of a host line up; a VM's first interval starts
 * when the recorder finds it, its last ends when it exits (kept: partial),
 * and each starts when the one before it ended. Files: vmprofd/recstore.h.
 *
 * Each profile carries, beside the samples: sample labels pid and cmd
 * (as `vmprofd serve` labels a profile of several VMs), comments
 * host=, pid=, cmd=, build_id= (the GNU build id of the VM's executable),
 * boot_id=, start_ticks=, interval_start= and interval_end= (UTC, ISO
 * 8601, ms), and pprof's time_nanos / duration_nanos for the interval.
 *
 * SIGTERM or SIGINT: every interval in progress ends there and is written,
 * then the recorder exits 0. A recorder killed outright loses its
 * intervals in progress; the next one sweeps their temporaries and goes on
 * in the same folders (never overwriting a file).
 *
 * Who may call: vmprofd/vmprofd_main.c.
 */
#ifndef VMPROFD_RECORD_H
#define VMPROFD_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmprofd/options.h"

#define VMPROFD_RECORD_DEFAULT_INTERVAL_S 60.0
/* Continuous profiling's usual rate (Parca Agent: "100 times per second",
 * parca.dev/docs/ingestion), 14 x below the one-shot default of 1400 Hz:
 * what it costs the VM, measured by scripts/bench-fleet, is in
 * docs/fleet.md. */
#define VMPROFD_RECORD_DEFAULT_RATE_HZ 100.0
#define VMPROFD_RECORD_DEFAULT_KEEP_AGE_S (7 * 86400.0)
#define VMPROFD_RECORD_DEFAULT_KEEP_BYTES (1ull << 30)
/* Intervals shorter than this are refused: each one re-attaches. */
#define VMPROFD_RECORD_MIN_INTERVAL_S 0.2

typedef struct RecordOptions {
    const char *dir;
    double interval_s;
    double rate_hz;
    double keep_age_s;   /* 0: none */
    uint64_t keep_bytes; /* 0: none */
    VmprofdEvent event;  /* cpu or alloc */
    const char *match;   /* --match GLOB: only VMs whose command line matches (fnmatch); NULL: all */
    bool quiet;          /* no line per file written */
    bool help;
} RecordOptions;

/* argv[0] is "record". false with a one-line reason in err. */
bool vmprofd_record_parse(int argc, char **argv, RecordOptions *o, char *err, size_t errlen);
void vmprofd_record_usage(FILE *out);
/* "90s", "500ms", "5m", "2h", "7d", or seconds; false when not a duration. */
bool vmprofd_record_parse_duration(const char *s, double *seconds);

/* The command: 0 after SIGTERM/SIGINT, 1 when it cannot start, 2 usage. */
int vmprofd_record_main(int argc, char **argv);

#endif
