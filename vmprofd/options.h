/*
 * vmprofd/options.h — vmprofd's command line, parsed into one struct.
 *
 * Output scheme (documented in --help): every output is a (path, format)
 * pair. `-o FILE` starts one; a `--format` right after it (before the next
 * -o) sets its format, otherwise the file name decides (*.pb.gz, *.pb,
 * *.pprof: pprof; *.folded: folded; *.svg: flame graph; another *.gz is
 * refused, since only pprof is gzipped; anything else: text).
 * `--text/--pprof/--folded/--flamegraph FILE` are shorthands. A `--format`
 * with no -o before it is the format of the report on stdout — except
 * when the only output is one `-o FILE` without a format of its own: then
 * it is that file's (`--format X -o F` = `-o F --format X`). No output
 * option at all: text on stdout.
 *
 * Who may call: vmprofd/vmprofd_main.c (parse), vmprofd/session.c (read).
 */
#ifndef VMPROFD_OPTIONS_H
#define VMPROFD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

typedef enum VmprofdFormat {
    VMPROFD_FORMAT_TEXT,
    VMPROFD_FORMAT_PPROF,
    VMPROFD_FORMAT_FOLDED,
    VMPROFD_FORMAT_FLAMEGRAPH,
} VmprofdFormat;

typedef enum VmprofdMode {
    VMPROFD_MODE_AUTO,   /* perf_event, ptrace when perf events are refused */
    VMPROFD_MODE_PERF,
    VMPROFD_MODE_PTRACE,
} VmprofdMode;

/* What a sample is taken on (--event). */
typedef enum VmprofdEvent {
    VMPROFD_EVENT_CPU,   /* CPU time of each thread (default) */
    VMPROFD_EVENT_ALLOC, /* bytes allocated by an stvm (proto/allocabi.h) */
    VMPROFD_EVENT_WALL,  /* wall-clock time of every thread, running or not */
} VmprofdEvent;

typedef struct VmprofdOutput {
    const char *path; /* "-" is stdout */
    VmprofdFormat format;
    bool format_given; /* by --format or a shorthand, not guessed from the name */
} VmprofdOutput;

/* More outputs than one per format and file is never useful; 16 bounds a
 * fixed array without limiting anyone. */
#define VMPROFD_MAX_OUTPUTS 16

#define VMPROFD_DEFAULT_SECONDS 10.0
#define VMPROFD_DEFAULT_RATE_HZ 1400.0      /* ARCHITECTURE.md: "about 1.4 kHz" */
/* --event wall stops every thread at each tick, sleeping or not, for
 * ~50 us each (sample_ptrace.c): at 1.4 kHz a target would stand still 7 %
 * of its time per thread. 100 Hz is py-spy's default rate (its --idle is
 * the same kind of profile) and costs 0.5 %; async-profiler's wall mode
 * ticks every 50 ms but samples a subset of threads per tick. */
#define VMPROFD_DEFAULT_WALL_RATE_HZ 100.0
/* perf_event_max_sample_rate's default is 100000; no sampler here gets near. */
#define VMPROFD_MAX_RATE_HZ 100000.0
/* User stack copied per sample for unwinding. On stvm running Richards,
 * 2 KiB let 74 % of the samples unwind to _start, 4 KiB 99.9 %, 8 KiB
 * 100 %; each KiB costs the target time per sample (16 KiB: ~7 us with
 * perf on a Firecracker VM, against ~22 us for the sample itself), so 8.
 * perf requires a multiple of 8 below 64 KiB per sample record. */
#define VMPROFD_DEFAULT_STACK_BYTES 8192u
#define VMPROFD_MAX_STACK_BYTES 32768u
/* --alloc-interval: Go's runtime.MemProfileRate and async-profiler's
 * default (proto/allocabi.h: PROF_ALLOC_DEFAULT_INTERVAL). */
#define VMPROFD_MIN_ALLOC_INTERVAL 256u
#define VMPROFD_MAX_ALLOC_INTERVAL (1ull << 40)

typedef struct VmprofdOptions {
    pid_t pid;            /* 0: launch `command` instead */
    char **command;       /* argv after "--", NULL-terminated; NULL with --pid */
    double seconds;       /* with --pid always; with a command only when seconds_given */
    bool seconds_given;   /* -s: a command is sampled until it exits without it */
    double rate_hz;
    VmprofdMode mode;
    VmprofdEvent event;   /* --event */
    uint64_t alloc_interval; /* --alloc-interval BYTES: mean bytes between allocation samples */
    bool alloc_interval_given;
    bool live;            /* --live: what the sampled objects left alive (--event alloc) */
    uint32_t stack_bytes;
    bool lines;
    bool callers; /* --callers: the text report's callers section */
    bool quiet;
    const char *debug_resolutions; /* --debug-resolutions FILE: each JIT'd leaf's resolution */
    int code_log_poll_ms;          /* --code-log-poll MS: the first poll period; 0 = the default */
    /* Not from the command line: vmprofd/engine.c's callers (a server, a
     * recorder) keep what a profile cannot show inside it (its warnings)
     * instead of also saying it on stderr. */
    bool warnings_inside;
    bool help;
    bool version;
    VmprofdOutput outputs[VMPROFD_MAX_OUTPUTS];
    size_t noutputs;
} VmprofdOptions;

/* Fills o from argv. Answers false with a one-line reason in err (the
 * caller prints it and exits 2). After --help/--version it answers true
 * with o->help / o->version set and need not be checked further. */
bool vmprofd_options_parse(int argc, char **argv, VmprofdOptions *o, char *err, size_t errlen);
void vmprofd_options_usage(FILE *out);

const char *vmprofd_options_format_name(VmprofdFormat f);
const char *vmprofd_options_event_name(VmprofdEvent e);
/* "cpu", "alloc", "wall"; false for anything else. */
bool vmprofd_options_parse_event(const char *s, VmprofdEvent *e);
/* A size: "524288", "1.5M", "512K", "512KiB", "1G", "2T" (powers of 1024,
 * as Go and async-profiler write them), "100B"; false when not one (a
 * sign, an exponent, 2^63 bytes or more). For every option that takes
 * bytes (--alloc-interval, record's --keep-size). */
bool vmprofd_options_parse_bytes(const char *s, uint64_t *out);

/* A subcommand's usage error, in one form for all of them (as git's):
 * "vmprofd COMMAND: MSG['ARG']" and where its --help is; answers 2, the
 * exit status of bad usage. */
int vmprofd_options_usage_error(const char *command, const char *msg, const char *arg);

#endif
