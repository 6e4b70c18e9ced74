/*
 * profiler/inimage_sampler.c — the in-VM sampler: a timer thread, SIGPROF on
 * the VM thread, a ring of (time, pc, r15, CPU time since the last). See
 * inimage_sampler.h for why.
 */
#define _GNU_SOURCE /* gettid/tgkill through syscall, REG_RIP and REG_R15 in ucontext */
#include "profiler/inimage_sampler.h"

#include "profiler/codeevents.h"
#include "profiler/ownmem.h"
#include "profiler/publish.h"
#include "report/stackcapture.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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
static uint64_t cpu_at_last_sample; /* the VM thread's: set at start, then by the handler alone */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static pid_t vm_pid_for_reads, vm_tid_for_reads;

/* -- Whole stacks (proto/stackabi.h), walked in the handler ------------- */

/* Walked stacks are kept packed (their header and only the words they
 * use, ~250 bytes for a stack of a dozen frames) in a byte ring reserved
 * at PROF_STACK_BYTES_PER_SAMPLE per sample of the sample ring and touched
 * only as used: a profile as long as the sample ring holds keeps every
 * stack unless its stacks are unusually deep, and a profile's memory grows
 * with its length, not with its limit. A sample names its record by the
 * record's position in the bytes ever written (ProfSample's stack_at); a
 * record is intact while fewer than the ring's size bytes were written
 * after its start. */
#define PROF_STACK_BYTES_PER_SAMPLE 512u
#define PROF_STACK_HEADER offsetof(ProfRawStack, kernel)
static unsigned char *stack_ring;
static uint64_t stack_ring_bytes; /* a power of two */
static uint64_t stack_written;    /* bytes ever written: the handler's, read with SIGPROF blocked */
static ProfRawStack walked;       /* the handler's scratch: SIGPROF is blocked while it runs */
static StackReader stack_reader;

static void ring_copy(uint64_t pos, void *buf, size_t len, bool put)
{
    uint64_t at = pos & (stack_ring_bytes - 1);
    size_t first = at + len <= stack_ring_bytes ? len : (size_t)(stack_ring_bytes - at);
    unsigned char *b = buf;
    if (put) {
        memcpy(stack_ring + at, b, first);
        memcpy(stack_ring, b + first, len - first);
    } else {
        memcpy(b, stack_ring + at, first);
        memcpy(b + first, stack_ring, len - first);
    }
}

/* Copies the words r uses after its header to or from the ring from pos
 * (the counts in r's header say how many); answers the position after. */
static uint64_t ring_words(uint64_t pos, ProfRawStack *r, bool put)
{
    const struct {
        uint64_t *words;
        size_t n;
    } parts[] = {{r->kernel, r->nkernel}, {r->leaf, r->nleaf}, {r->st, r->nst}, {r->root, r->nroot}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ring_copy(pos, parts[i].words, 8u * parts[i].n, put);
        pos += 8u * parts[i].n;
    }
    return pos;
}

/* Appends r packed; answers its position + 1 (0: not kept). */
static uint64_t stack_keep(ProfRawStack *r)
{
    assert(r->nkernel <= PROF_RAW_MAX_KERNEL && r->nleaf <= PROF_RAW_MAX_LEAF && r->nst <= PROF_RAW_MAX_ST &&
           r->nroot <= PROF_RAW_MAX_ROOT);
    uint64_t pos = stack_written;
    ring_copy(pos, r, PROF_STACK_HEADER, true);
    stack_written = ring_words(pos + PROF_STACK_HEADER, r, true);
    return pos + 1;
}

static bool stack_fetch(uint64_t stack_at, ProfRawStack *out)
{
    if (!stack_ring || stack_at == 0 || stack_written - (stack_at - 1) > stack_ring_bytes)
        return false; /* none walked, or overwritten since */
    uint64_t p = stack_at - 1;
    ring_copy(p, out, PROF_STACK_HEADER, false);
    size_t words = (size_t)out->nkernel + out->nleaf + out->nst + out->nroot;
    if (out->nkernel > PROF_RAW_MAX_KERNEL || out->nleaf > PROF_RAW_MAX_LEAF || out->nst > PROF_RAW_MAX_ST ||
        out->nroot > PROF_RAW_MAX_ROOT || words * 8u + PROF_STACK_HEADER > stack_written - p)
        return false;
    ring_words(p + PROF_STACK_HEADER, out, false);
    return true;
}

/* Walks the interrupted thread's stack; answers where it was kept + 1 (0: not walked). */
static uint64_t walk_stack(const ucontext_t *uc, uint64_t time_ns)
{
    const ProfWalkFacts *f = prof_publish_walk_facts();
    if (!stack_ring || !f)
        return 0;
    const greg_t *g = uc->uc_mcontext.gregs;
    StackRegs regs = {(uint64_t)g[REG_RIP], (uint64_t)g[REG_RSP], (uint64_t)g[REG_RBP], (uint64_t)g[REG_R14],
                      (uint64_t)g[REG_R15]};
    report_stackcapture_reset(&stack_reader, prof_ownmem_read, (void *)f);
    report_stackcapture(&stack_reader, f, &regs, &walked);
    walked.pid = (uint32_t)vm_pid_for_reads;
    walked.tid = (uint32_t)vm_tid_for_reads;
    walked.time_ns = time_ns;
    return stack_keep(&walked);
}

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
    uint64_t cpu = thread_cpu_ns();
    ProfSample s = {
        .time_ns = prof_clock_ns(),
        .pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP],
        .r15 = (uint64_t)uc->uc_mcontext.gregs[REG_R15],
        .cpu_ns = cpu - cpu_at_last_sample,
    };
    cpu_at_last_sample = cpu;
    uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    if (h - t > ring_mask) { /* full: the oldest goes */
        atomic_store_explicit(&tail, t + 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&overwritten, 1, memory_order_relaxed);
    }
    s.stack_at = walk_stack(uc, s.time_ns);
    ring[h & ring_mask] = s;
    atomic_store_explicit(&head, h + 1, memory_order_release);
    atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
    errno = saved_errno;
}

/* The VM thread's schedstat: CPU time and run-queue wait (ns). */
static bool read_sched(pid_t tid, uint64_t *run, uint64_t *wait)
{
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    unsigned long long r, w;
    bool ok = fgets(buf, sizeof buf, f) && sscanf(buf, "%llu %llu", &r, &w) == 2;
    fclose(f);
    if (ok) {
        *run = r;
        *wait = w;
    }
    return ok;
}

static bool have_sched0, have_sched1;
static uint64_t sched_run0, sched_wait0, sched_run1, sched_wait1;
static _Atomic bool timer_realtime;

static void *timer_main(void *arg)
{
    (void)arg;
    /* the lowest real-time priority beats every normal task (inimage_sampler.h
     * says why it matters); refused without CAP_SYS_NICE, and said */
    struct sched_param rt = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    atomic_store(&timer_realtime, pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) == 0);
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
    vm_pid_for_reads = vm_pid;
    vm_tid_for_reads = vm_tid;
    if (stack_ring_bytes != (uint64_t)cap * PROF_STACK_BYTES_PER_SAMPLE) {
        if (stack_ring)
            munmap(stack_ring, stack_ring_bytes);
        stack_ring_bytes = (uint64_t)cap * PROF_STACK_BYTES_PER_SAMPLE;
        void *m = mmap(NULL, stack_ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        stack_ring = m == MAP_FAILED ? NULL : m; /* without: samples without stacks, said in the report */
        if (!stack_ring)
            stack_ring_bytes = 0;
    }
    stack_written = 0;
    prof_ownmem_init();
    rate_hz = hz;
    cpu_at_last_sample = thread_cpu_ns();
    have_sched0 = read_sched(vm_tid, &sched_run0, &sched_wait0);
    have_sched1 = false;
    atomic_store(&timer_realtime, false);
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
    have_sched1 = read_sched(vm_tid, &sched_run1, &sched_wait1);
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

bool prof_sampler_stack(uint64_t time_ns, ProfRawStack *out)
{
    if (!stack_ring || time_ns == 0)
        return false;
    sigset_t old;
    block_sigprof(&old);
    uint64_t h = atomic_load(&head), t = atomic_load(&tail);
    /* times grow with the index: a binary search over the samples held */
    uint64_t a = t, b = h;
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        if (ring[mid & ring_mask].time_ns < time_ns)
            a = mid + 1;
        else
            b = mid;
    }
    bool found = a < h && ring[a & ring_mask].time_ns == time_ns && stack_fetch(ring[a & ring_mask].stack_at, out);
    restore_mask(&old);
    return found;
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
    out->realtime = atomic_load(&timer_realtime);
    uint64_t run = sched_run1, wait = sched_wait1;
    bool end = running ? read_sched(vm_tid, &run, &wait) : have_sched1;
    if (have_sched0 && end && run >= sched_run0 && wait >= sched_wait0) {
        out->have_sched = true;
        out->sched_run_ns = run - sched_run0;
        out->sched_wait_ns = wait - sched_wait0;
    }
}
