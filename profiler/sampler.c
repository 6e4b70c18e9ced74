/*
 * profiler/sampler.c — the in-VM sampler: a timer thread, SIGPROF on the VM
 * thread, a ring of (time, pc, r15). See sampler.h for why.
 */
#define _GNU_SOURCE /* gettid/tgkill through syscall, REG_RIP and REG_R15 in ucontext */
#include "profiler/sampler.h"

#include "profiler/codeevents.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* The handler's stack: its frame plus the kernel's signal frame (AVX-512
 * state is ~2.7 KiB); 64 KiB leaves a wide margin. */
#define ALT_STACK_BYTES (64 * 1024)

/* -- The ring (written by the handler, read on the same thread) ---------- */

static ProfSample *ring;
static size_t ring_mask;
/* head: samples ever written; tail: the oldest still held. Only the VM
 * thread touches them (the handler, or code running with SIGPROF
 * blocked), so relaxed atomics suffice: they keep the compiler from
 * caching them across the handler. */
static _Atomic uint64_t head, tail;
static _Atomic uint64_t taken, overwritten;
static _Atomic bool recording;
static _Thread_local bool is_sampled_thread;

/* -- The timer thread ------------------------------------------------------ */

static pthread_t timer;
static pid_t vm_pid, vm_tid;
static bool running;
static uint32_t rate_hz;
static _Atomic bool stop_wanted;
static _Atomic uint64_t ticks, late;
static uint64_t start_ns, stop_ns;
static bool handler_installed;

static void on_sigprof(int sig, siginfo_t *info, void *ucv)
{
    (void)sig;
    (void)info;
    if (!is_sampled_thread || !atomic_load_explicit(&recording, memory_order_relaxed))
        return;
    int saved_errno = errno;
    const ucontext_t *uc = ucv;
    ProfSample s = {
        .time_ns = prof_clock_ns(),
        .pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP],
        .r15 = (uint64_t)uc->uc_mcontext.gregs[REG_R15],
    };
    uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    if (h - t > ring_mask) { /* full: the oldest goes */
        atomic_store_explicit(&tail, t + 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&overwritten, 1, memory_order_relaxed);
    }
    ring[h & ring_mask] = s;
    atomic_store_explicit(&head, h + 1, memory_order_release);
    atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
    errno = saved_errno;
}

static void *timer_main(void *arg)
{
    (void)arg;
    uint64_t period = 1000000000u / rate_hz;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&stop_wanted)) {
        next.tv_nsec += (long)period;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        if (atomic_load(&stop_wanted))
            break;
        if (syscall(SYS_tgkill, vm_pid, vm_tid, SIGPROF) != 0)
            break; /* the VM thread is gone */
        atomic_fetch_add(&ticks, 1);
        /* Overslept (no real-time priority): skip the missed deadlines
         * rather than firing them in a burst. */
        uint64_t now = prof_clock_ns(), due = (uint64_t)next.tv_sec * 1000000000u + (uint64_t)next.tv_nsec;
        if (now > due + period) {
            uint64_t missed = (now - due) / period;
            atomic_fetch_add(&late, missed);
            due += missed * period;
            next.tv_sec = (time_t)(due / 1000000000u);
            next.tv_nsec = (long)(due % 1000000000u);
        }
    }
    return NULL;
}

/* -- Set-up ------------------------------------------------------------------ */

static bool install_handler(char *err, size_t errlen)
{
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
        stack_t ss = {.ss_sp = malloc(ALT_STACK_BYTES), .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
        if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0) {
            snprintf(err, errlen, "cannot set the sampler's signal stack: %s", strerror(ss.ss_sp ? errno : ENOMEM));
            free(ss.ss_sp);
            return false;
        }
        /* kept for the thread's life: a late SIGPROF may still use it */
    }
    if (handler_installed)
        return true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0) {
        snprintf(err, errlen, "cannot install the SIGPROF handler: %s", strerror(errno));
        return false;
    }
    handler_installed = true;
    return true;
}

static void block_sigprof(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

static void restore_mask(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

bool prof_sampler_start(uint32_t hz, size_t capacity, char *err, size_t errlen)
{
    if (running) {
        snprintf(err, errlen, "the sampler is already running");
        return false;
    }
    if (hz < 1 || hz > PROF_SAMPLER_MAX_HZ) {
        snprintf(err, errlen, "sampling rate %u Hz is not in 1..%u", hz, PROF_SAMPLER_MAX_HZ);
        return false;
    }
    if (capacity == 0)
        capacity = PROF_SAMPLER_DEFAULT_CAPACITY;
    size_t cap = 1;
    while (cap < capacity)
        cap <<= 1;
    sigset_t old;
    block_sigprof(&old);
    if (!ring || ring_mask + 1 != cap) {
        ProfSample *r = malloc(cap * sizeof *r);
        if (!r) {
            restore_mask(&old);
            snprintf(err, errlen, "cannot allocate the sample ring (%zu samples)", cap);
            return false;
        }
        free(ring);
        ring = r;
        ring_mask = cap - 1;
    }
    atomic_store(&head, 0);
    atomic_store(&tail, 0);
    atomic_store(&taken, 0);
    atomic_store(&overwritten, 0);
    atomic_store(&ticks, 0);
    atomic_store(&late, 0);
    if (!install_handler(err, errlen)) {
        restore_mask(&old);
        return false;
    }
    is_sampled_thread = true;
    vm_pid = getpid();
    vm_tid = (pid_t)syscall(SYS_gettid);
    rate_hz = hz;
    atomic_store(&stop_wanted, false);
    atomic_store(&recording, true);
    /* the timer thread blocks every signal: they are the VM's */
    sigset_t all, mine;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &mine);
    int rc = pthread_create(&timer, NULL, timer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &mine, NULL);
    if (rc != 0) {
        atomic_store(&recording, false);
        restore_mask(&old);
        snprintf(err, errlen, "cannot start the sampler thread: %s", strerror(rc));
        return false;
    }
    running = true;
    start_ns = prof_clock_ns();
    stop_ns = 0;
    restore_mask(&old);
    return true;
}

bool prof_sampler_stop(void)
{
    if (!running)
        return false;
    atomic_store(&stop_wanted, true);
    pthread_join(timer, NULL);
    /* a signal sent before the join may still be pending: it finds
     * recording off and returns */
    atomic_store(&recording, false);
    running = false;
    stop_ns = prof_clock_ns();
    return true;
}

size_t prof_sampler_clear(void)
{
    sigset_t old;
    block_sigprof(&old);
    uint64_t h = atomic_load(&head), t = atomic_load(&tail);
    atomic_store(&tail, h);
    restore_mask(&old);
    return (size_t)(h - t);
}

size_t prof_sampler_count(void)
{
    sigset_t old;
    block_sigprof(&old);
    uint64_t n = atomic_load(&head) - atomic_load(&tail);
    restore_mask(&old);
    return (size_t)n;
}

size_t prof_sampler_copy(ProfSample *out, size_t max)
{
    sigset_t old;
    block_sigprof(&old);
    uint64_t h = atomic_load(&head), t = atomic_load(&tail);
    size_t n = 0;
    for (uint64_t i = t; i < h && n < max; i++)
        out[n++] = ring[i & ring_mask];
    restore_mask(&old);
    return n;
}

void prof_sampler_stats(ProfSamplerStats *out)
{
    memset(out, 0, sizeof *out);
    out->running = running;
    out->hz = rate_hz;
    out->ticks = atomic_load(&ticks);
    out->late = atomic_load(&late);
    out->taken = atomic_load(&taken);
    out->overwritten = atomic_load(&overwritten);
    out->start_ns = start_ns;
    out->stop_ns = stop_ns;
}
