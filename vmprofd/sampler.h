/*
 * vmprofd/sampler.h — the interface both samplers implement:
 * sample_perf.c (perf_event_open, the kernel samples for us) and
 * sample_ptrace.c (we stop each thread on a timer and read its registers).
 *
 * Life of a sampler, driven by session.c:
 *
 *   open ──► start ──► { poll | rescan }* ──► close
 *
 * open attaches to the target and may fail; it then says whether the
 * failure is a refusal (permission, kernel without perf events), after
 * which session.c may try the other sampler, or a hard error. For a
 * launched target, open runs while the child waits before exec, and
 * start after the child has been released.
 *
 * Samples are delivered through a callback, one RawSample at a time; its
 * pointers are valid only during the call. Samplers never symbolize:
 * that is session.c's business (through symbolize.h), so both modes
 * produce the same kind of data.
 *
 * Who may call: vmprofd/session.c.
 */
#ifndef VMPROFD_SAMPLER_H
#define VMPROFD_SAMPLER_H

#include "proto/stackabi.h"
#include "vmprofd/unwind.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct RawSample {
    uint64_t time_ns;     /* CLOCK_MONOTONIC (the clock of the stvm export) */
    uint32_t pid, tid;
    uint64_t kernel_ip;   /* the sample hit the kernel at this ip; 0 otherwise */
    UnwindRegs regs;      /* user-space registers; regs.mask == 0: only ip/sp/bp */
    const uint8_t *stack; /* user stack from regs.sp upward */
    size_t stack_len;
    /* The whole stack, walked at the sample (proto/stackabi.h); NULL when
     * the sampler could not walk it (no facts, eBPF refused): then regs and
     * the stack copy above are all there is. */
    const ProfRawStack *raw;
    /* ptrace: the CPU time (ns) the thread used since its previous sample,
     * read while it stood still, when has_cpu (the sample's weight). */
    bool has_cpu;
    uint64_t cpu_ns;
    /* Wall-clock sampling (SamplerConfig.wall): the thread's state in
     * /proc/PID/task/TID/stat when the tick found it ('R' running or
     * runnable: on-CPU; 'S', 'D', ...: off-CPU), and for an off-CPU thread
     * the system call it was blocked in (-1: none, or not readable). */
    char state;
    long syscall_nr;
} RawSample;

typedef void (*SampleSink)(void *ctx, const RawSample *s);

typedef struct SamplerConfig {
    pid_t pid;
    bool launched;        /* pid is our child, stopped before exec */
    double rate_hz;
    uint32_t stack_bytes;
    uint64_t regs_mask;   /* vmprofd_unwind_regs_mask() */
    /* What the VM publishes to walk its stacks (export version 3): its size
     * is 0 until vmprofd has read the export (a launched VM publishes after
     * open), so a sampler checks it at each sample. Valid until close. */
    const ProfWalkFacts *facts;
    /* ptrace only (--event wall): every thread is sampled at each tick,
     * running or not, each sample weighs one period of wall-clock time,
     * and RawSample.state / syscall_nr say what an off-CPU thread did. */
    bool wall;
} SamplerConfig;

typedef struct SamplerStats {
    uint64_t samples;     /* delivered */
    uint64_t lost;        /* the kernel or we could not record them */
    uint64_t foreign;     /* from other processes (launched command's children), dropped */
    uint64_t throttled;   /* perf: times the kernel throttled the event */
    uint64_t threads;     /* threads sampled at some point */
    uint64_t cpu_ns;      /* CPU time of the sampled threads while sampling; 0 unknown */
    bool cpu_weighted;    /* every sample has_cpu */
    bool have_sched;      /* schedstat of the sampled threads while sampled: */
    uint64_t sched_run_ns, sched_wait_ns; /* on a CPU; runnable, waiting for one */
    bool target_exited;   /* the sampler saw the whole target exit */
    bool have_status;     /* ... and its wait status (launched child) */
    int status;
} SamplerStats;

typedef struct Sampler Sampler;

/* Errors: open answers NULL with a message in err; *refused is true when
 * the kernel refused this mode (permission, missing support), so another
 * mode may succeed. */
typedef struct SamplerOps {
    const char *mode;     /* for the report: "perf_event (cpu-clock)", "ptrace" */
    Sampler *(*open)(const SamplerConfig *cfg, bool *refused, char *err, size_t errlen);
    bool (*start)(Sampler *s, char *err, size_t errlen);
    /* Waits up to timeout_ms for samples and delivers them; returns early
     * when wake_fd (or -1) becomes readable or a signal arrives. */
    void (*poll)(Sampler *s, int timeout_ms, int wake_fd, SampleSink sink, void *ctx);
    /* Picks up threads the target created since open or the last rescan. */
    void (*rescan)(Sampler *s);
    void (*stats)(Sampler *s, SamplerStats *out);
    /* Stops sampling, delivers what is still buffered, detaches from every
     * thread (the target runs on as if never sampled), fills the final
     * stats and frees s. */
    void (*close)(Sampler *s, SampleSink sink, void *ctx, SamplerStats *final);
    /* A note for the report, e.g. why kernel samples are excluded; NULL. */
    const char *(*note)(Sampler *s);
} SamplerOps;

extern const SamplerOps vmprofd_sampler_perf;
extern const SamplerOps vmprofd_sampler_ptrace;

#endif
