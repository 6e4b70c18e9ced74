/*
 * vmprofd/sample_ptrace.c — sampling with ptrace, for when perf events are
 * refused or --mode ptrace asks for it (see sampler.h).
 *
 * Every thread is PTRACE_SEIZEd (which, unlike PTRACE_ATTACH, does not stop
 * it) with PTRACE_O_TRACECLONE, so threads it creates are traced from
 * birth.
 *
 * On each tick of a timer at the sampling rate, every thread that is
 * running (state R in /proc/.../stat: a sleeping thread uses no CPU, and
 * cpu-clock sampling would not see it either) is stopped with
 * PTRACE_INTERRUPT; we wait for its stop, take PTRACE_GETREGS and a copy of
 * its stack (process_vm_readv), and PTRACE_CONT it before unwinding, so the
 * thread is stopped only for the copy (~40-60 us).
 *
 * Ticks are wall-clock, not the target's CPU time, on purpose: the only
 * CPU clock one process can read of another (sum_exec_runtime, behind
 * clock_getcpuclockid and schedstat) is brought up to date at scheduler
 * ticks and whenever the target itself asks for its CPU time, so sampling
 * when it crosses a threshold piles samples onto those points (measured:
 * tests/vmprofd/ratio.c's light() got 45 % instead of 25 %). The cost is
 * that a thread waiting for a CPU on an overloaded machine is sampled as
 * if it ran. So each sample is weighted by the CPU time its thread used
 * since its previous sample: that clock *is* exact while the thread
 * stands in our ptrace-stop (the scheduler brought it up to date when it
 * switched the thread out), and a sample of a thread that waited for a
 * CPU the whole period weighs nothing. Threads we skip (not running) get
 * their baseline moved on at the tick, so a sample never weighs CPU time
 * spent before the thread's previous tick. schedstat's second field, the
 * time runnable but waiting, goes to the report as it is.
 *
 * Weights cannot mend one bias: on a busy machine vmprofd itself waits for
 * a CPU at its ticks, and gets one when the target passes a scheduling
 * point (its system calls update its runtime and end an expired slice),
 * so the ticks follow the target's rhythm; a 1:3 split measured 28-33 %
 * for 25, weighted or not. vmprofd therefore samples at a real-time
 * priority (SCHED_FIFO, not inherited by children), which takes a CPU at
 * each tick whatever runs; measured: 24.7-25.2 %. Where that is not
 * allowed (no CAP_SYS_NICE) the report says so.
 *
 * The rate is nonetheless held per second of the target's CPU time, like
 * cpu-clock's: the tick period starts at 1/rate, each tick is moved back
 * by the time the sampled threads stood still, and every
 * PTRACE_STEER_WINDOW_NS the period is corrected by the ratio of samples
 * taken to CPU time used (the stale clock is fine over that window). That
 * absorbs what the stops cost the target in kernel time and, on an
 * overloaded machine, the time a thread spends waiting for a CPU.
 *
 * Each tick is jittered uniformly by ±20 % around the period (with
 * absolute deadlines, so the mean rate stays exact): a program whose work
 * repeats with the sampling period would otherwise always be caught at the
 * same phase. A tick that fires late is skipped (see PTRACE_MAX_LATENESS).
 *
 * Wall-clock mode (SamplerConfig.wall, --event wall) samples every thread
 * at each tick, running or not: its state is read from /proc first (R
 * counts as on-CPU, runnable or running alike, as py-spy counts "active"),
 * then it is stopped like a running one. PTRACE_INTERRUPT wakes a thread
 * blocked in an interruptible system call; the call returns one of the
 * kernel's -ERESTART* codes, the thread enters its interrupt-stop with
 * orig_rax still holding the call's number (that is where the system call
 * an off-CPU sample names comes from: /proc/.../syscall would need another
 * read per thread and says the same), and when we resume it without a
 * signal the kernel restarts the call (nanosleep with its remaining time),
 * so the program sees nothing. The exceptions are the calls Linux never
 * restarts after a stop (signal(7): epoll_wait, semop, sigtimedwait, ...),
 * which return EINTR as they do when a debugger or py-spy stops the
 * program. There is no CPU-time weighting or rate steering in this mode:
 * every sample weighs one tick of wall-clock time.
 *
 * Stops that are not ours are passed through so the target behaves as if
 * untraced: a signal-delivery-stop is resumed with its signal, a group-stop
 * (SIGSTOP, SIGTSTP, ...) is left in effect with PTRACE_LISTEN, clone
 * events admit the new thread. On every way out (--seconds, signal, error)
 * close() interrupts and PTRACE_DETACHes each thread, delivering a signal
 * it was about to receive. If vmprofd itself is killed, the kernel detaches
 * and resumes the tracees.
 */
#define _GNU_SOURCE /* process_vm_readv, ppoll, pipe2, strsignal, __WALL: Linux interfaces */
#include "vmprofd/sampler.h"

#include "report/stackcapture.h"

#include "vmprofd/permission.h"
#include "vmprofd/target.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ±20 %: wide enough that no realistic periodic loop stays in phase for
 * more than a few ticks, narrow enough that samples stay evenly spread. */
#define PTRACE_JITTER 0.20

typedef struct PtThread {
    pid_t tid;
    int stat_fd;        /* /proc/PID/task/TID/stat, re-read each tick */
    int sched_fd;       /* /proc/PID/task/TID/schedstat: CPU time, run-queue wait (ns) */
    bool have_sched;    /* the fields below were read */
    uint64_t run0, wait0;       /* at the start of sampling (or the thread's birth) */
    uint64_t run_last, wait_last; /* at its last reading */
    uint64_t run_weighed;       /* CPU time up to which samples have weighed it */
    bool gone;          /* exited (or detached as not ours) */
    bool group_stopped; /* in a group-stop we left in effect (PTRACE_LISTEN) */
    /* Wall mode: the system call of its last sample, and the ip it was
     * made from. A call our stop interrupted is resumed as restart_syscall
     * from the same ip when it restarts through its restart block
     * (nanosleep, poll, timed futex waits), so later samples see that
     * number: they get the call it stands for. */
    long last_nr;
    uint64_t last_nr_ip;
} PtThread;

struct Sampler {
    SamplerConfig cfg;
    PtThread *th;
    size_t nth, capth;
    uint64_t samples, lost, seen_threads;
    uint64_t interval_ns;  /* 1 / rate */
    double period_ns;      /* mean tick period, steered so samples per CPU second match the rate */
    uint64_t win_wall, win_cpu, win_samples; /* start of the current steering window */
    clockid_t cpu_clock;   /* the target's process CPU clock, for the stats only */
    bool have_clock;
    uint64_t cpu_first;    /* its value when sampling started */
    uint64_t cpu_now;      /* ... at the last tick */
    size_t *running;       /* scratch: indices of the threads to sample this tick */
    char *states;          /* scratch, wall mode: their state letters, read before the stop */
    uint64_t next_tick;    /* CLOCK_MONOTONIC ns */
    uint64_t rng;
    bool started;
    uint8_t *stack;
    StackReader reader;    /* the whole-stack walk's memory, while the thread is stopped */
    ProfRawStack raw;
    pid_t reading;         /* the stopped thread the reader reads */
    int sigfd;             /* SIGCHLD: a tracee changed state */
    sigset_t oldmask;
    bool realtime;         /* sampling at SCHED_FIFO (see the top) */
    int old_policy;        /* to restore at close */
    struct sched_param old_param;
    char note[256];
    bool exited;           /* the whole target exited */
    bool have_status;
    int status;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: jitter needs no cryptography, only independence from the
 * target's rhythm. */
static double rand01(Sampler *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (double)((s->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* Steering (see the top of the file): windows of 250 ms, at least 50 ms of
 * CPU time (the clock is up to a 4 ms scheduler tick stale), corrections
 * of at most ±25 % per window, and a period between 1/4 and 4 times 1/rate. */
#define PTRACE_STEER_WINDOW_NS 250000000ull
#define PTRACE_STEER_MIN_CPU_NS 50000000ull

static void steer(Sampler *s, uint64_t now, uint64_t cpu)
{
    if (now - s->win_wall < PTRACE_STEER_WINDOW_NS)
        return;
    uint64_t dcpu = cpu - s->win_cpu, dsamples = s->samples - s->win_samples;
    if (dcpu >= PTRACE_STEER_MIN_CPU_NS && dsamples > 0) {
        double want = s->cfg.rate_hz * (double)dcpu / 1e9;
        double f = (double)dsamples / want; /* > 1: too many samples, lengthen */
        if (f > 1.25)
            f = 1.25;
        if (f < 0.8)
            f = 0.8;
        s->period_ns *= f;
        double lo = (double)s->interval_ns / 4, hi = (double)s->interval_ns * 4;
        s->period_ns = s->period_ns < lo ? lo : s->period_ns > hi ? hi : s->period_ns;
    }
    s->win_wall = now;
    s->win_cpu = cpu;
    s->win_samples = s->samples;
}

static uint64_t jittered(Sampler *s, uint64_t ns)
{
    double f = 1.0 - PTRACE_JITTER + 2.0 * PTRACE_JITTER * rand01(s);
    return (uint64_t)((double)ns * f);
}

/* The target's CPU time so far (all threads, ns; up to a scheduler tick
 * stale, which is fine for the achieved-rate statistic). */
static bool read_cpu(Sampler *s, uint64_t *out)
{
    struct timespec ts;
    if (!s->have_clock || clock_gettime(s->cpu_clock, &ts) != 0)
        return false;
    *out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return true;
}

/* -- CPU time and run-queue wait per thread (schedstat) ------------------- */

/* Exact only while the thread is off a CPU (stopped, sleeping, waiting):
 * a running thread's figures are brought up to date at scheduler ticks. */
static bool sched_read(PtThread *t)
{
    char buf[128];
    if (t->sched_fd < 0)
        return false;
    ssize_t n = pread(t->sched_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    unsigned long long run, wait;
    if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
        return false;
    /* never backwards: a stale reading after an exact one */
    if (!t->have_sched || run > t->run_last)
        t->run_last = run;
    if (!t->have_sched || wait > t->wait_last)
        t->wait_last = wait;
    t->have_sched = true;
    return true;
}

static void sched_baseline(PtThread *t)
{
    t->have_sched = false;
    if (!sched_read(t))
        return;
    t->run0 = t->run_weighed = t->run_last;
    t->wait0 = t->wait_last;
}

/* -- The thread table ---------------------------------------------------- */

static PtThread *find_thread(Sampler *s, pid_t tid)
{
    for (size_t i = 0; i < s->nth; i++)
        if (s->th[i].tid == tid)
            return &s->th[i];
    return NULL;
}

static PtThread *add_thread(Sampler *s, pid_t tid)
{
    PtThread *t = find_thread(s, tid);
    if (t) {
        t->gone = false;
        return t;
    }
    if (s->nth == s->capth) {
        size_t cap = s->capth ? 2 * s->capth : 8;
        PtThread *bigger = realloc(s->th, cap * sizeof *bigger);
        if (!bigger)
            return NULL;
        s->th = bigger;
        size_t *run = realloc(s->running, cap * sizeof *run);
        if (!run)
            return NULL;
        s->running = run;
        char *states = realloc(s->states, cap);
        if (!states)
            return NULL;
        s->states = states;
        s->capth = cap;
    }
    t = &s->th[s->nth++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->last_nr = -1;
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)s->cfg.pid, (int)tid);
    t->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)s->cfg.pid, (int)tid);
    t->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
    sched_baseline(t);
    s->seen_threads++;
    return t;
}

static void thread_gone(PtThread *t)
{
    t->gone = true;
    if (t->stat_fd >= 0)
        close(t->stat_fd);
    t->stat_fd = -1;
    if (t->sched_fd >= 0)
        close(t->sched_fd);
    t->sched_fd = -1;
}

/* The thread's state letter in /proc (R, S, D, T, t, Z, X, ...); '?' when
 * it cannot be read, 0 when the thread is gone. */
static char thread_state(PtThread *t)
{
    char buf[512];
    if (t->stat_fd < 0)
        return '?';
    ssize_t n = pread(t->stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may contain ") " */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether the thread is on a CPU or waiting for one. */
static bool thread_running(PtThread *t)
{
    char st = thread_state(t);
    return st == 'R' || st == '?'; /* cannot tell: sample it */
}

static long tgid_of(pid_t tid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nTgid:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

/* -- Stops that are not samples ------------------------------------------ */

static bool is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void note_exit(Sampler *s, pid_t tid, int status)
{
    PtThread *t = find_thread(s, tid);
    if (t)
        thread_gone(t);
    /* The leader's exit is reported after all other threads are gone. */
    if (tid == s->cfg.pid) {
        s->exited = true;
        s->have_status = s->cfg.launched; /* only our own child's status is ours to report */
        s->status = status;
    }
}

/* Handles a wait status that is not the interrupt-stop we wait for:
 * resumes the thread the way an untraced thread would continue. Answers
 * true when the status was such an interrupt-stop (left for the caller). */
static bool pass_through(Sampler *s, pid_t tid, int status)
{
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        note_exit(s, tid, status);
        return false;
    }
    if (!WIFSTOPPED(status))
        return false;
    int sig = WSTOPSIG(status), event = status >> 16;
    PtThread *t = find_thread(s, tid);
    if (!t) {
        /* A thread auto-attached by TRACECLONE whose stop came before its
         * parent's clone event. A clone that is not a thread of the target
         * is detached: it is another process. */
        if (tgid_of(tid) != s->cfg.pid) {
            ptrace(PTRACE_DETACH, tid, 0, 0);
            return false;
        }
        t = add_thread(s, tid);
    }
    if (event == PTRACE_EVENT_STOP) {
        if (is_stop_signal(sig)) {
            /* Group-stop: keep it stopped, as without us, until SIGCONT. */
            if (t)
                t->group_stopped = true;
            ptrace(PTRACE_LISTEN, tid, 0, 0);
            return false;
        }
        if (t)
            t->group_stopped = false;
        return true;
    }
    if (event == PTRACE_EVENT_CLONE) {
        unsigned long child = 0;
        if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 && child > 0 && !find_thread(s, (pid_t)child)) {
            if (tgid_of((pid_t)child) == s->cfg.pid)
                add_thread(s, (pid_t)child);
        }
        ptrace(PTRACE_CONT, tid, 0, 0);
        return false;
    }
    if (event != 0) {
        ptrace(PTRACE_CONT, tid, 0, 0); /* exec and other events: nothing to do */
        return false;
    }
    /* Signal-delivery-stop: deliver the signal as if we were not here. */
    ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
    return false;
}

/* An interrupt-stop nobody asked for (a sample abandoned on a signal to
 * vmprofd, or a new thread's first stop): just resume it. */
static void resume_unexpected(pid_t tid)
{
    ptrace(PTRACE_CONT, tid, 0, 0);
}

static void drain_events(Sampler *s)
{
    /* __WNOTHREAD: only this thread's tracees; vmprofd serve runs a sampler in each of several threads */
    int status;
    pid_t tid;
    while ((tid = waitpid(-1, &status, WNOHANG | __WALL | __WNOTHREAD)) > 0) {
        if (pass_through(s, tid, status))
            resume_unexpected(tid);
    }
}

/* -- Taking a sample ----------------------------------------------------- */

/* user_regs_struct in perf_event_x86_regs order (asm/perf_regs.h). */
static uint64_t perf_reg(const struct user_regs_struct *r, int i)
{
    switch (i) {
    case PERF_REG_X86_AX: return r->rax;
    case PERF_REG_X86_BX: return r->rbx;
    case PERF_REG_X86_CX: return r->rcx;
    case PERF_REG_X86_DX: return r->rdx;
    case PERF_REG_X86_SI: return r->rsi;
    case PERF_REG_X86_DI: return r->rdi;
    case PERF_REG_X86_BP: return r->rbp;
    case PERF_REG_X86_SP: return r->rsp;
    case PERF_REG_X86_IP: return r->rip;
    case PERF_REG_X86_FLAGS: return r->eflags;
    case PERF_REG_X86_CS: return r->cs;
    case PERF_REG_X86_SS: return r->ss;
    case PERF_REG_X86_DS: return r->ds;
    case PERF_REG_X86_ES: return r->es;
    case PERF_REG_X86_FS: return r->fs;
    case PERF_REG_X86_GS: return r->gs;
    case PERF_REG_X86_R8: return r->r8;
    case PERF_REG_X86_R9: return r->r9;
    case PERF_REG_X86_R10: return r->r10;
    case PERF_REG_X86_R11: return r->r11;
    case PERF_REG_X86_R12: return r->r12;
    case PERF_REG_X86_R13: return r->r13;
    case PERF_REG_X86_R14: return r->r14;
    case PERF_REG_X86_R15: return r->r15;
    default: return 0; /* not in user_regs_struct (e.g. XMM): left zero */
    }
}

/* Copies up to cfg.stack_bytes from sp upward. One iovec element per page,
 * because process_vm_readv never splits an element: the copy then stops
 * at the first unmapped page above the stack instead of failing whole. */
static size_t copy_stack(Sampler *s, uint64_t sp)
{
    enum { MAX_IOV = 16 };
    struct iovec local, remote[MAX_IOV];
    size_t want = s->cfg.stack_bytes, n = 0, total = 0;
    uint64_t addr = sp;
    while (total < want && n < MAX_IOV) {
        uint64_t page_end = (addr | 4095) + 1;
        size_t len = (size_t)(page_end - addr);
        if (len > want - total)
            len = want - total;
        remote[n++] = (struct iovec){.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
        addr += len;
        total += len;
    }
    if (total == 0)
        return 0;
    local = (struct iovec){.iov_base = s->stack, .iov_len = total};
    ssize_t got = process_vm_readv(s->cfg.pid, &local, 1, remote, n, 0);
    return got > 0 ? (size_t)got : 0;
}

/* How long to poll for a thread's stop before sleeping on it: well above
 * the usual 15-20 us (measured on a 2-vCPU Firecracker VM), well below a
 * sampling interval. Not at real-time priority: there a spin on the
 * target's own CPU would keep it from reaching its stop, and a real-time
 * waiter is woken at once anyway. */
#define PTRACE_SPIN_NS 200000ull

/* The walk's block reader: the stopped thread's memory. */
static bool read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
    Sampler *s = ctx;
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(s->reading, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* Stops one running thread, samples it and resumes it. By index, not
 * pointer: a clone event handled while waiting may grow the table. */
static uint64_t sample_thread(Sampler *s, size_t idx, char state, SampleSink sink, void *ctx)
{
    pid_t tid = s->th[idx].tid;
    uint64_t t0 = now_ns();
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) {
        if (errno != ESRCH) /* ESRCH: exiting; its exit status will tell */
            s->lost++;
        return 0;
    }
    int status;
    /* Spin on WNOHANG first: the stop takes ~20 us to arrive, and sleeping
     * in waitpid would add vmprofd's own wake-up (another ~25 us on a
     * virtual machine) to the time the target stands still. */
    uint64_t spin_until = s->realtime ? 0 : now_ns() + PTRACE_SPIN_NS;
    for (;;) {
        pid_t r = waitpid(tid, &status, __WALL | (now_ns() < spin_until ? WNOHANG : 0));
        if (r == 0)
            continue;
        if (r < 0) {
            if (errno == EINTR)
                return 0; /* vmprofd was signalled: the stop is resumed later */
            thread_gone(&s->th[idx]);
            s->lost++;
            return 0;
        }
        if (pass_through(s, tid, status))
            break; /* our interrupt-stop */
        if (s->th[idx].gone || s->th[idx].group_stopped)
            return 0;
    }
    struct user_regs_struct regs;
    PtThread *t = &s->th[idx];
    bool weighed = sched_read(t);
    if (ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0 || (!weighed && !s->cfg.wall)) {
        s->lost++; /* no registers, or no CPU time to weigh the sample by */
        ptrace(PTRACE_CONT, tid, 0, 0);
        return now_ns() - t0;
    }
    RawSample rs;
    memset(&rs, 0, sizeof rs);
    rs.syscall_nr = -1;
    if (s->cfg.wall) {
        /* one tick of wall-clock time, whatever the thread did with it */
        rs.state = state;
        long nr = (long)regs.orig_rax;
        if (nr == __NR_restart_syscall && t->last_nr_ip == regs.rip && t->last_nr >= 0)
            nr = t->last_nr;
        else if (nr >= 0) {
            t->last_nr = nr;
            t->last_nr_ip = regs.rip;
        }
        if (state != 'R' && nr >= 0)
            rs.syscall_nr = nr;
    } else {
        rs.has_cpu = true;
        rs.cpu_ns = t->run_last - t->run_weighed;
    }
    t->run_weighed = t->run_last;
    rs.time_ns = now_ns();
    rs.pid = (uint32_t)s->cfg.pid;
    rs.tid = (uint32_t)tid;
    rs.regs.ip = regs.rip;
    rs.regs.sp = regs.rsp;
    rs.regs.bp = regs.rbp;
    rs.regs.mask = s->cfg.regs_mask;
    size_t k = 0;
    for (int bit = 0; bit < 64 && k < sizeof rs.regs.regs / sizeof rs.regs.regs[0]; bit++)
        if ((s->cfg.regs_mask >> bit) & 1)
            rs.regs.regs[k++] = perf_reg(&regs, bit);
    if (s->cfg.facts && __atomic_load_n(&s->cfg.facts->size, __ATOMIC_ACQUIRE)) {
        /* the whole stack, read while the thread stands still (proto/stackabi.h) */
        StackRegs sr = {regs.rip, regs.rsp, regs.rbp, regs.r14, regs.r15};
        s->reading = tid;
        report_stackcapture_reset(&s->reader, read_target, s);
        report_stackcapture(&s->reader, s->cfg.facts, &sr, &s->raw);
        s->raw.time_ns = rs.time_ns;
        s->raw.pid = rs.pid;
        s->raw.tid = rs.tid;
        rs.raw = &s->raw;
    } else {
        rs.stack = s->stack;
        rs.stack_len = s->cfg.stack_bytes ? copy_stack(s, regs.rsp) : 0;
    }
    ptrace(PTRACE_CONT, tid, 0, 0); /* resume before the (slow) unwinding */
    uint64_t stopped = now_ns() - t0;
    s->samples++;
    sink(ctx, &rs);
    return stopped;
}

/* A tick that runs more than a quarter interval after its deadline does
 * not sample. vmprofd was then waiting for a CPU, and on a busy machine it
 * gets one when the target passes a scheduling point (a system call, the
 * end of a time slice): sampling then would pile samples onto those
 * points. Such ticks are counted as lost samples instead. */
#define PTRACE_MAX_LATENESS(interval_ns) ((interval_ns) / 4)

/* Samples the running threads. Answers how long, on average, each
 * sampled thread stood still (ns): the caller moves the next tick back by
 * that much, so stopped time does not count as sampled time and the rate
 * holds per second of the target's running time, as with perf. */
static uint64_t tick(Sampler *s, bool late, SampleSink sink, void *ctx)
{
    size_t nrun = 0;
    for (size_t i = 0; i < s->nth; i++) {
        PtThread *t = &s->th[i];
        if (t->gone)
            continue;
        if (s->cfg.wall && !t->group_stopped) {
            /* Every thread; the state is read before our stop changes it
             * to 't'. A group-stopped thread (SIGSTOP) is left alone: it
             * stands in PTRACE_LISTEN, and waking it is not ours to do. */
            char st = thread_state(t);
            if (st == 0 || st == 'Z' || st == 'X')
                continue; /* exiting: its exit status comes through waitpid */
            s->states[nrun] = st == '?' ? 'R' : st;
            s->running[nrun++] = i;
        } else if (!t->group_stopped && thread_running(t)) {
            s->states[nrun] = 'R';
            s->running[nrun++] = i;
        } else if (sched_read(t)) {
            t->run_weighed = t->run_last; /* off a CPU: exact, and not this tick's to weigh */
        }
    }
    uint64_t cpu;
    if (read_cpu(s, &cpu)) {
        s->cpu_now = cpu;
        if (!s->cfg.wall) /* wall mode: the rate is per second of wall-clock time */
            steer(s, now_ns(), cpu);
    }
    if (late) {
        s->lost += nrun;
        return 0;
    }
    /* By index: a clone event handled while sampling may grow s->th. */
    uint64_t stopped = 0;
    for (size_t k = 0; k < nrun; k++)
        stopped += sample_thread(s, s->running[k], s->states[k], sink, ctx);
    return nrun ? stopped / nrun : 0;
}

/* -- Attaching ----------------------------------------------------------- */

static void detach_all(Sampler *s);

static bool seize(Sampler *s, pid_t tid, int *err)
{
    if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACECLONE) == 0) {
        add_thread(s, tid);
        return true;
    }
    *err = errno;
    return false;
}

/* Seizes every listed thread; threads created meanwhile by a thread not
 * yet seized are not auto-attached, so list again until nothing is new. */
static int seize_all(Sampler *s, bool *any)
{
    for (int round = 0; round < 100; round++) {
        size_t n;
        pid_t *tids = vmprofd_target_threads(s->cfg.pid, &n);
        bool added = false;
        for (size_t i = 0; i < n; i++) {
            if (find_thread(s, tids[i]))
                continue;
            int e = 0;
            if (seize(s, tids[i], &e)) {
                added = *any = true;
            } else if (e == EPERM && vmprofd_target_tracer(tids[i]) == getpid()) {
                add_thread(s, tids[i]); /* auto-attached through TRACECLONE already */
            } else if (e != ESRCH) {
                free(tids);
                return e;
            }
        }
        free(tids);
        if (!added)
            return 0;
    }
    return 0;
}

static void ptrace_free(Sampler *s)
{
    for (size_t i = 0; i < s->nth; i++) {
        if (s->th[i].stat_fd >= 0)
            close(s->th[i].stat_fd);
        if (s->th[i].sched_fd >= 0)
            close(s->th[i].sched_fd);
    }
    if (s->sigfd >= 0) {
        close(s->sigfd);
        sigprocmask(SIG_SETMASK, &s->oldmask, NULL);
    }
    free(s->th);
    free(s->running);
    free(s->states);
    free(s->stack);
    free(s);
}

static Sampler *ptrace_open(const SamplerConfig *cfg, bool *refused, char *err, size_t errlen)
{
    *refused = false;
    Sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->stack = malloc(cfg->stack_bytes ? cfg->stack_bytes : 8))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->sigfd = -1;
    s->interval_ns = (uint64_t)(1e9 / cfg->rate_hz);
    /* Any process's CPU clock is readable (no permission check), and it
     * stays valid only while the process lives. */
    s->have_clock = clock_getcpuclockid(cfg->pid, &s->cpu_clock) == 0;
    s->rng = now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;

    /* SIGCHLD through a signalfd, so waiting for "next tick or a tracee
     * event or the target's exit" is one ppoll. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &s->oldmask);
    s->sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->sigfd < 0) {
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &s->oldmask, NULL);
        ptrace_free(s);
        return NULL;
    }

    bool any = false;
    int e = 0;
    if (cfg->launched) {
        any = seize(s, cfg->pid, &e);
    } else {
        e = seize_all(s, &any);
    }
    if (e != 0 || !any) {
        if (e == 0 || e == ESRCH)
            snprintf(err, errlen, "no process with pid %d", (int)cfg->pid);
        else
            vmprofd_permission_explain_ptrace(cfg->pid, e, err, errlen);
        *refused = e == EPERM || e == EACCES || e == ENOSYS;
        detach_all(s); /* threads seized before the refusal must not stay traced */
        ptrace_free(s);
        return NULL;
    }
    /* Timer slack (50 us by default) would blur a 714 us interval. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    return s;
}

/* The lowest real-time priority is enough: any beats every normal task.
 * The work per tick is tens of microseconds, and the kernel's real-time
 * throttling (sched_rt_runtime_us) bounds it even if that changed. */
static void go_realtime(Sampler *s)
{
    s->old_policy = sched_getscheduler(0);
    sched_getparam(0, &s->old_param);
    struct sched_param rt = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt) == 0) {
        s->realtime = true;
        return;
    }
    snprintf(s->note, sizeof s->note,
             "ptrace sampling ran at normal priority (SCHED_FIFO refused: %s; it needs root or CAP_SYS_NICE): on a "
             "busy machine its ticks may follow the target's system calls, and shares lean toward the code after "
             "them",
             strerror(errno));
}

static bool ptrace_start(Sampler *s, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    s->started = true;
    go_realtime(s);
    for (size_t i = 0; i < s->nth; i++) /* CPU time and waits count from here, not from the seize */
        if (!s->th[i].gone)
            sched_baseline(&s->th[i]);
    if (read_cpu(s, &s->cpu_first))
        s->cpu_now = s->cpu_first; /* CPU time counts from here, not from the seize */
    else
        s->have_clock = false;
    s->period_ns = (double)s->interval_ns;
    s->win_wall = now_ns();
    s->win_cpu = s->cpu_first;
    s->win_samples = 0;
    s->next_tick = now_ns() + jittered(s, s->interval_ns);
    return true;
}

static void ptrace_poll(Sampler *s, int timeout_ms, int wake_fd, SampleSink sink, void *ctx)
{
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        drain_events(s);
        if (s->exited)
            return;
        uint64_t now = now_ns();
        if (s->started && now >= s->next_tick) {
            uint64_t stopped = tick(s, now - s->next_tick > PTRACE_MAX_LATENESS(s->interval_ns), sink, ctx);
            /* wall mode: ticks keep to the wall clock, stopped time included */
            s->next_tick += jittered(s, (uint64_t)s->period_ns) + (s->cfg.wall ? 0 : stopped);
            now = now_ns();
            if (now > s->next_tick + (uint64_t)s->period_ns)
                s->next_tick = now + jittered(s, (uint64_t)s->period_ns); /* fell behind: do not burst */
            continue;
        }
        if (now >= deadline)
            return;
        uint64_t until = s->started && s->next_tick < deadline ? s->next_tick : deadline;
        uint64_t wait = until - now;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull), .tv_nsec = (long)(wait % 1000000000ull)};
        struct pollfd p[2] = {{.fd = s->sigfd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
        int r = ppoll(p, wake_fd >= 0 ? 2 : 1, &ts, NULL);
        if (r < 0 && errno == EINTR)
            return; /* SIGINT/SIGTERM for the session */
        if (r > 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                ;
        }
        if (r > 0 && wake_fd >= 0 && (p[1].revents & POLLIN)) {
            drain_events(s);
            return;
        }
    }
}

static void ptrace_rescan(Sampler *s)
{
    bool any = false;
    seize_all(s, &any);
}

static void ptrace_stats(Sampler *s, SamplerStats *out)
{
    memset(out, 0, sizeof *out);
    out->samples = s->samples;
    out->lost = s->lost;
    out->threads = s->seen_threads;
    out->cpu_ns = s->cpu_now - s->cpu_first;
    out->cpu_weighted = !s->cfg.wall; /* a sample that could not be weighed was counted lost */
    for (size_t i = 0; i < s->nth; i++) {
        const PtThread *t = &s->th[i];
        if (!t->have_sched)
            continue;
        out->have_sched = true;
        out->sched_run_ns += t->run_last - t->run0;
        out->sched_wait_ns += t->wait_last - t->wait0;
    }
    out->target_exited = s->exited;
    out->have_status = s->have_status;
    out->status = s->status;
}

/* Detaches from every thread. PTRACE_DETACH needs the thread in a
 * ptrace-stop, so each is interrupted first; a signal that arrives
 * meanwhile is handed over with the detach. */
static void detach_all(Sampler *s)
{
    for (size_t i = 0; i < s->nth; i++) {
        if (s->th[i].gone)
            continue;
        if (ptrace(PTRACE_INTERRUPT, s->th[i].tid, 0, 0) != 0 && errno == ESRCH)
            thread_gone(&s->th[i]);
    }
    for (;;) {
        bool pending = false;
        for (size_t i = 0; i < s->nth; i++)
            pending |= !s->th[i].gone;
        if (!pending)
            return;
        int status;
        pid_t tid = waitpid(-1, &status, __WALL | __WNOTHREAD);
        if (tid < 0) {
            if (errno == EINTR)
                continue; /* a second Ctrl-C must not leave threads stopped */
            return;       /* ECHILD: no tracees left */
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            note_exit(s, tid, status);
            continue;
        }
        if (!WIFSTOPPED(status))
            continue;
        int sig = WSTOPSIG(status), event = status >> 16;
        if (event == PTRACE_EVENT_CLONE) {
            /* The new thread is attached to us and will report a stop:
             * track it so it gets detached too. */
            unsigned long child = 0;
            if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 && child > 0)
                add_thread(s, (pid_t)child);
        }
        int deliver = (event == 0) ? sig : 0; /* a signal-delivery-stop's signal */
        PtThread *t = find_thread(s, tid);
        if (t && s->started)
            sched_read(t); /* stopped: its last exact figures */
        ptrace(PTRACE_DETACH, tid, 0, (void *)(long)deliver);
        if (!t)
            t = add_thread(s, tid);
        if (t)
            thread_gone(t);
    }
}

static void ptrace_close(Sampler *s, SampleSink sink, void *ctx, SamplerStats *final)
{
    (void)sink, (void)ctx; /* every sample was delivered when it was taken */
    uint64_t cpu;
    if (s->started && read_cpu(s, &cpu))
        s->cpu_now = cpu;
    detach_all(s);
    if (s->realtime)
        sched_setscheduler(0, s->old_policy, &s->old_param); /* the outputs are written at normal priority */
    ptrace_stats(s, final);
    ptrace_free(s);
}

static const char *ptrace_note(Sampler *s)
{
    return s->note[0] ? s->note : NULL;
}

const SamplerOps vmprofd_sampler_ptrace = {
    .mode = "ptrace",
    .open = ptrace_open,
    .start = ptrace_start,
    .poll = ptrace_poll,
    .rescan = ptrace_rescan,
    .stats = ptrace_stats,
    .close = ptrace_close,
    .note = ptrace_note,
};
