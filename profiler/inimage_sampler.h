/*
 * profiler/inimage_sampler.h — the in-VM sampler: where the VM thread is, about
 * 1400 times a second, kept in a circular buffer until Smalltalk collects
 * it (Cog's VMProfiler, reference 004 section 2.2: a separate thread
 * collecting the VM thread's pc into a large circular buffer).
 *
 * Mechanism: a timer thread sends SIGPROF to the VM thread (tgkill) on an
 * absolute CLOCK_MONOTONIC schedule; the VM thread's handler reads the
 * interrupted rip and r15 from its ucontext and CLOCK_MONOTONIC, and
 * appends them to a lock-free single-producer ring. Why this and not
 * perf_event_open on the VM thread with its mmap ring drained by the
 * sampler thread:
 *   - it needs no permission: perf events are refused under
 *     kernel.perf_event_paranoid >= 3, in containers and under seccomp,
 *     and the in-VM profiler is the one that must work wherever stvm runs
 *     (vmprofd already is the perf_event profiler, with its ptrace fallback);
 *   - the handler reads r15 straight from the interrupted context, so
 *     interpreted samples resolve to methods (vm/interp/interp.h) without asking
 *     perf for user registers;
 *   - the timer thread needs no real-time priority: it sleeps to absolute
 *     deadlines, so a late wake-up delays one tick instead of shifting all
 *     later ones, and ticks it overslept are counted (`late`), not sent in
 *     a burst.
 * The price is one signal delivery per sample on the VM thread (~2 us:
 * ~0.3 % at 1400 Hz; scripts/bench-inimage measures it), and wall-clock
 * rather than CPU-time sampling: a VM thread blocked in a system call is
 * sampled there (its pc is in libc, the report's "rest"), and one waiting
 * for a CPU is sampled where it waits. So each sample carries the CPU time
 * the thread used since the previous one (the handler runs on it:
 * CLOCK_THREAD_CPUTIME_ID is exact there) and reports weigh samples by it.
 * On a busy machine a timer thread at normal priority wakes when the VM
 * thread passes a scheduling point (its system calls), so ticks would
 * follow the VM's rhythm: it asks for SCHED_FIFO, and the report says when
 * that was refused (vmprofd's ptrace sampler measured the bias: 28-33 %
 * for 25).
 *
 * Safety of the handler: it is async-signal-safe (clock_gettime, plain
 * stores, one release store of the head) and runs on an alternate signal
 * stack, because the VM thread's rsp may be on a stack page of machine
 * code, where the kernel's signal frame (several KiB with AVX state) must
 * not land. SA_RESTART: system calls the signal interrupts are restarted.
 * The handler stays installed once installed (a SIGPROF still pending
 * after stop must not take the default action, which kills the process);
 * it records only while sampling and only on the thread that started it.
 *
 * Ring: `capacity` samples (a power of two); the oldest are overwritten
 * when it is full (counted). Reading (count, copy) and clearing happen on
 * the VM thread with SIGPROF blocked, so they never race the handler and
 * may be done while sampling runs.
 *
 * Who may call: the VM thread (start, stop, clear, copy, stats), through
 * the VMProfiler primitives (vm/boot/prim_profiler.c), and tests.
 */
#ifndef PROFILER_INIMAGE_SAMPLER_H
#define PROFILER_INIMAGE_SAMPLER_H

#include "proto/stackabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1400 Hz: Cog's VMProfiler's "approximate cadence of 1.4kHz" (reference
 * 004), and vmprofd's default, so both profilers' reports compare. */
#define PROF_SAMPLER_DEFAULT_HZ 1400
#define PROF_SAMPLER_MAX_HZ 20000
/* 2^20 samples (40 MiB, and up to 512 MiB of whole stacks, both touched
 * only as used): 12 minutes at 1400 Hz before the oldest go. */
#define PROF_SAMPLER_DEFAULT_CAPACITY (1u << 20)

typedef struct ProfSample {
    uint64_t time_ns; /* CLOCK_MONOTONIC, the clock of the code events */
    uint64_t pc;      /* the interrupted instruction */
    uint64_t r15;     /* the interpreter's ip when pc is in the interpreter */
    uint64_t cpu_ns;  /* the VM thread's CPU time since its previous sample: the sample's weight */
    uint64_t stack_at; /* the sampler's own: where its whole stack is kept + 1 (0: none) */
} ProfSample;

typedef struct ProfSamplerStats {
    bool running;
    uint32_t hz;
    uint64_t ticks;       /* signals sent since start */
    uint64_t late;        /* ticks skipped because the timer thread woke too late */
    uint64_t taken;       /* samples recorded since start */
    uint64_t overwritten; /* oldest samples lost to a full ring since start */
    uint64_t start_ns, stop_ns; /* CLOCK_MONOTONIC of the last start and stop (0: none yet) */
    /* The VM thread's time on a CPU and runnable but waiting for one
     * between the last start and stop (or now), from schedstat. */
    bool have_sched;
    uint64_t sched_run_ns, sched_wait_ns;
    bool realtime;        /* the timer thread ran at SCHED_FIFO (see inimage_sampler.c) */
} ProfSamplerStats;

/* Starts sampling the calling thread at hz (1..PROF_SAMPLER_MAX_HZ) into
 * a ring of capacity samples (rounded up to a power of two; 0: default).
 * The ring is cleared. False with a reason in err when already running or
 * when a resource (memory, the thread, the handler) cannot be had. */
bool prof_sampler_start(uint32_t hz, size_t capacity, char *err, size_t errlen);
/* Stops the timer thread (joins it). False when it was not running. */
bool prof_sampler_stop(void);
/* Empties the ring (running or not); answers how many samples it held. */
size_t prof_sampler_clear(void);
/* Samples in the ring now. */
size_t prof_sampler_count(void);
/* Copies up to max samples, oldest first; answers how many. */
size_t prof_sampler_copy(ProfSample *out, size_t max);
void prof_sampler_stats(ProfSamplerStats *out);
/* The whole stack the handler walked for the sample taken at time_ns
 * (proto/stackabi.h), while the ring still holds the sample and its
 * stack; false otherwise (overwritten by newer ones, or the VM published
 * no walk facts). */
bool prof_sampler_stack(uint64_t time_ns, ProfRawStack *out);

#endif
