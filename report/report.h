/*
 * report/report.h — a profile (samples + what they resolve to) and its
 * four renderings: the VMProfiler text report (../shared/design/REPORT.md),
 * pprof's profile.proto (gzipped), folded stacks, and an SVG flame graph.
 *
 * Producers (vmprofd, and stvm's in-VM profiler: profiler/inimage_profile.c) build
 * a Profile with the report_profile_* functions: they intern mappings,
 * functions and locations (resolved addresses) and add samples whose
 * frames are location indices, leaf first. A Profile never resolves an
 * address itself: its producer does, with report/resolve.h (stored samples
 * through report/symbolize.h for native code and report/codemap.h for the
 * VM's code at the sample's time). report/ depends on neither program.
 *
 * Regions (REPORT.md): "generated" = the JIT's code zone (methods, blocks,
 * PICs, trampolines); "vanilla" = the VM executable's own functions; "rest"
 * = every other mapping (libc, the kernel, other libraries, unknown).
 *
 * Bytecode ranges: a Smalltalk method or block may carry its
 * machine-code-pc -> bytecode-pc map; the text report then splits that
 * function's samples into ranges by the leaf address (REPORT.md, "Bytecode
 * ranges"). Interpreted methods ("Class>>sel (interpreted)", in the vanilla
 * region) carry one too, over their bytecodes: addresses there are
 * bytecode addresses, so each bytecode is a range of its own.
 *
 * Inlined methods (issue 26): a method the JIT inlined into another is a
 * function of its own, "Class>>sel (inlined)" with inlined_into set, whose
 * map holds only its own pairs of the machine code it was inlined into:
 * its samples split into its bytecode ranges, and the method it was
 * inlined into keeps only the ranges of its own code. The text report
 * makes it a row "Class>>sel (inlined into Other>>sel)".
 *
 * Who may call: vmprofd/, profiler/ (in-VM), tests. Not thread-safe.
 */
#ifndef REPORT_REPORT_H
#define REPORT_REPORT_H

#include "proto/export.h" /* ProfCounters */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef enum ReportRegion {
    REPORT_REGION_GENERATED = 0,
    REPORT_REGION_VANILLA = 1,
    REPORT_REGION_REST = 2,
} ReportRegion;

typedef struct ReportMapEntry {
    uint32_t mcpc; /* offset from the function's start */
    uint32_t bcpc;
} ReportMapEntry;

typedef struct ReportLineEntry {
    uint32_t bcpc; /* first bytecode pc of a run */
    uint32_t line;
} ReportLineEntry;

/* What a function row stands for: code, or (allocation profiles) the
 * class of the sampled objects, a pseudo-function that is each stack's
 * leaf, named "[Class]". */
typedef enum ReportFunctionKind {
    REPORT_FUNCTION_CODE = 0,
    REPORT_FUNCTION_CLASS = 1,
} ReportFunctionKind;

typedef struct ReportFunctionInfo {
    const char *name;       /* "gc_scavenge_run", "Integer>>benchFib", "[libc.so.6]" */
    const char *file;       /* source file, or NULL */
    int start_line;         /* 0 when unknown */
    ReportRegion region;
    uint64_t start;         /* first address; 0 when unknown */
    uint64_t size;          /* bytes; 0 when unknown */
    int mapping;            /* report_profile_add_mapping's index, or -1 */
    /* Smalltalk methods and blocks only, JIT'd or interpreted (may be empty): */
    const ReportMapEntry *map; /* sorted by mcpc */
    size_t nmap;
    uint32_t last_bcpc;     /* the method's last bytecode pc (end of the last range) */
    const ReportLineEntry *lines; /* bcpc -> source line, for --lines */
    size_t nlines;
    ReportFunctionKind kind;
    /* A method the JIT inlined ("Class>>sel (inlined)"): the method of the
     * piece it was inlined into, whose machine code holds it; else NULL.
     * Its frames share their address with the frame below them (the
     * method it was inlined into, or the next inlined one): pprof makes
     * such a run one Location with a Line each (report/pprof.c). */
    const char *inlined_into;
} ReportFunctionInfo;

typedef struct ReportMappingInfo {
    uint64_t start, limit, offset;
    const char *file;       /* path, "[vdso]", "[code zone]" … */
    const char *build_id;   /* hex, or NULL */
} ReportMappingInfo;

typedef struct ReportHeader {
    const char *vm_path;    /* executable of the profiled process */
    time_t start_wall;      /* wall-clock time the profile started */
    int64_t start_ns;       /* the same to the ns (report_profile_set_interval); 0: start_wall's second */
    double seconds;         /* profiled wall time */
    double requested_hz;
    const char *mode;       /* "perf_event (cpu-clock)", "ptrace", "in-VM sampler" */
    const char *mode_reason;/* why that mode (NULL if asked for) */
    uint64_t lost_samples;
    /* Wall-clock samplers (ptrace, the in-VM sampler) catch a thread that
     * waits for a CPU as if it ran: there each sample weighs the CPU time
     * its thread used since its previous sample (read while it stood
     * still), and every count shown is those weights over the sampling
     * period, "weighted samples". Otherwise every sample weighs 1. */
    bool cpu_weighted;
    /* The sampled threads' time on a CPU and runnable but waiting for one
     * while sampled (schedstat); have_sched false: not known. */
    bool have_sched;
    uint64_t sched_run_ns, sched_wait_ns;
    bool have_counters;     /* start/end below are valid */
    ProfCounters start, end;
    /* Not an stvm (or one that publishes nothing): the text report is one
     * table of native functions, without the VM's tables and counters. */
    bool native_only;
    /* Every thread sampled at the rate, running or not (vmprofd --event
     * wall): each sample is a period of wall-clock time, pprof's value
     * "wall/nanoseconds". */
    bool wall_clock;
} ReportHeader;

typedef struct ReportTextOptions {
    bool lines;             /* --lines: source lines next to bytecode ranges */
    int range_min_samples;  /* functions with more samples get ranges (REPORT.md: 10) */
    bool callers;           /* --callers: who called the top functions (report/callers.c) */
} ReportTextOptions;

typedef struct Profile Profile;

Profile *report_profile_new(void);
void report_profile_free(Profile *p);
void report_profile_set_header(Profile *p, const ReportHeader *h); /* copies strings */
/* The wall-clock interval the profile covers, start to the ns (pprof's
 * time_nanos and duration_nanos): vmprofd record's intervals. */
void report_profile_set_interval(Profile *p, int64_t start_ns, double seconds);
/* The profiled wall time the header states (its seconds). */
double report_profile_seconds(const Profile *p);
/* Free-form notes printed at the end of the text report ("target exited", …). */
void report_profile_add_note(Profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What the profile cannot show (not an stvm, a stale segment, no CPU used):
 * printed at the top of the text report as "warning: …", and first among
 * pprof's comments. The producer also says them on stderr. */
void report_profile_add_warning(Profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Interning: the same mapping / function (by name+region+start, and size
 * and bytecode info: two blocks of one method share a name) / location (by
 * function+address) answers the same index. Strings and arrays are
 * copied. */
int report_profile_add_mapping(Profile *p, const ReportMappingInfo *m);
int report_profile_add_function(Profile *p, const ReportFunctionInfo *f);
int report_profile_add_location(Profile *p, int function, uint64_t address, int line);
/* frames: location indices, leaf first (at least one). The sample weighs 1. */
void report_profile_add_sample(Profile *p, uint64_t time_ns, uint32_t tid, const int *frames, size_t nframes);
/* The same with its weight: the CPU ns its thread used since its previous
 * sample, in a profile whose header says cpu_weighted. */
void report_profile_add_weighted_sample(Profile *p, uint64_t time_ns, uint32_t tid, const int *frames, size_t nframes,
                                        uint64_t weight);

size_t report_profile_sample_count(const Profile *p);

/* -- Allocation profiles (vmprofd --event alloc; report/allocprof.h builds
 * them from the VM's allocation log). A sample is a sampled allocation:
 * its weight is the bytes it stands for, its leaf frame the object's
 * class (kind REPORT_FUNCTION_CLASS), and it carries the estimates below.
 * Every rendering then counts bytes where a CPU profile counts samples:
 * the text report "who allocates" (report/alloctext.c), pprof's
 * alloc_objects/alloc_space (and inuse_* when live), folded stacks and
 * flame graphs weighted by bytes. */
typedef struct ReportAllocHeader {
    uint64_t interval;       /* mean bytes between samples (pprof's period) */
    uint64_t counted_bytes;  /* the VM's own count of the bytes allocated while sampled; 0: unknown */
    uint64_t lost;           /* samples (records) of the log never read */
    uint64_t bad;            /* records skipped as damaged */
    bool live;               /* asked what stays alive (--live) */
    bool live_answered;      /* ... and the VM answered: the inuse values are real */
    uint64_t untracked;      /* samples the VM did not follow (never counted live) */
} ReportAllocHeader;

typedef struct ReportAllocValues {
    double objects;          /* the objects the sample stands for: weight / size */
    uint64_t live_bytes;     /* weight when the object was alive at the end, else 0 */
    double live_objects;
} ReportAllocValues;

/* Makes p an allocation profile (copies a). */
void report_profile_set_alloc(Profile *p, const ReportAllocHeader *a);
/* A sampled allocation: frames leaf first (the class first), weight its
 * bytes. */
void report_profile_add_alloc_sample(Profile *p, uint64_t time_ns, uint32_t tid, const int *frames, size_t nframes,
                                     uint64_t bytes, const ReportAllocValues *v);

/* Adds src's samples to dst (functions, mappings and locations interned
 * anew), each labelled with the process it came from: pprof's sample
 * labels "pid" (a number) and "cmd" (a string). dst takes its header,
 * kind (CPU or allocation) and period from the first profile merged into
 * it while it is empty; warnings and notes are copied, prefixed with
 * "pid N: ". A CPU-weighted src merged into a dst that is not (or the
 * reverse) has its weights converted to dst's unit. False, dst unchanged,
 * when the kinds differ (an allocation profile into a CPU one). */
bool report_profile_merge(Profile *dst, const Profile *src, int64_t pid, const char *cmd);

/* Renderings. Each returns false (with a message in err) on I/O failure.
 * report_write_text: opt may be NULL (no --lines, ranges for more than 10
 * samples, as REPORT.md says). */
bool report_write_text(FILE *out, const Profile *p, const ReportTextOptions *opt, char *err, size_t errlen);
bool report_write_pprof(const char *path, const Profile *p, char *err, size_t errlen);
/* The same into an open stream (flushed, not closed). */
bool report_write_pprof_stream(FILE *f, const Profile *p, char *err, size_t errlen);
bool report_write_folded(FILE *out, const Profile *p, char *err, size_t errlen);
/* A self-contained interactive SVG flame graph of the whole stacks
 * (report/flamegraph.c); opt may be NULL. */
typedef struct ReportFlameOptions {
    const char *title; /* NULL: "vmprofd flame graph" */
    /* Non-NULL: a differential flame graph (vmprofd diff): widths from the
     * profile drawn, colours by how each frame's share changed from base's
     * (red grew, blue shrank), both shares in its hover text. */
    const Profile *base;
} ReportFlameOptions;
bool report_write_flamegraph(FILE *out, const Profile *p, const ReportFlameOptions *opt, char *err, size_t errlen);

#endif
