/*
 * vmprofd/sample_perf.c — sampling with perf_event_open (see sampler.h).
 *
 An attached process gets one software cpu-clock event per thread
 * (cpu = -1: it follows the thread across CPUs), each with its own mmap'd
 * ring buffer, because the kernel only lets per-task events share a buffer
 * when they watch the same task; /proc/PID/task is rescanned for new
 * threads. A launched command gets, on its first thread, one event per
 * CPU with inherit = 1 and enable_on_exec = 1: every thread it creates
 * inherits them and writes into the buffer of the CPU it runs on, and
 * counting starts at exec. (Per-CPU because the kernel refuses to mmap an
 * inherited event with cpu = -1: all children would contend for one
 * buffer.)
 *
 * Ring buffer protocol (perf_event_open(2), "MMAP layout"): the kernel
 * advances data_head; we read it with acquire ordering (the man page's
 * rmb()), consume records up to it, and publish data_tail with release
 * ordering so the kernel never overwrites a record we are still reading.
 * The buffer is writable (PROT_WRITE), so the kernel drops new samples
 * instead of overwriting and tells us with PERF_RECORD_LOST.
 *
 * Walking the ring and decoding its records (the sample layout for our
 * sample_type) are in perfring.c.
 */
#define _GNU_SOURCE /* process_vm_readv, ppoll, pipe2, strsignal, __WALL: Linux interfaces */
#include "vmprofd/sampler.h"
#include "vmprofd/sample_bpf.h"
#include "vmprofd/perfring.h"

#include "vmprofd/permission.h"
#include "vmprofd/target.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

/* 256 data pages = 1 MiB per ring: at 1400 Hz with 8 KiB stack copies a
 * busy thread makes ~12 MB/s, so the ring holds ~90 ms of samples (45 ms
 * at --stack-bytes 16384); we are woken at a quarter full and poll at
 * least every 100 ms. Halved on EPERM (locked-memory limit,
 * kernel.perf_event_mlock_kb) down to 8 pages. */
#define PERF_RING_PAGES 256
#define PERF_RING_MIN_PAGES 8

typedef struct PerfRing {
    pid_t tid;
    int cpu;         /* -1: follows the thread; else this CPU (launched) */
    int fd;
    uint8_t *base;   /* metadata page, then the data pages */
    size_t map_len;
    uint8_t *data;
    uint64_t data_size; /* a power of two */
    bool dead;       /* the thread exited (POLLHUP): drained once more, then retired */
} PerfRing;

struct Sampler {
    SamplerConfig cfg;
    struct perf_event_attr attr;
    PerfRing *rings;
    size_t nrings, caprings;
    size_t pages;    /* data pages per ring (halved when mlock limits bite) */
    uint64_t samples, lost, foreign, throttled;
    PerfSampleLayout layout; /* of our samples (attr's sample_type and regs) */
    uint8_t *scratch; /* a record that wraps the end of the ring, reassembled */
    uint32_t *tids;   /* distinct threads seen in samples (inherited ones have no ring of their own) */
    size_t ntids, captids;
    /* Rings of exited threads are closed at once (a program that starts
     * thousands of short threads must not cost a MiB and an fd each);
     * their CPU time is kept here, their ids so rescans skip them. */
    uint64_t retired_cpu_ns;
    pid_t *retired;
    size_t nretired, capretired;
    struct pollfd *pfds;
    size_t *pfd_ring;
    char note[512];
    /* The eBPF stack walker (sample_bpf.h): while loaded, every sample is
     * its record and the perf rings carry only lost and throttle records. */
    SampleBpf *bpf;
    bool bpf_has_facts;
    uint64_t bpf_samples, bpf_unattached;
    char bpf_why[512];
    char notes[2000];
};

static long perf_event_open(struct perf_event_attr *attr, pid_t tid, int cpu)
{
    return syscall(SYS_perf_event_open, attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,6"); at most max.
 * Falls back to 0 .. nprocs-1. */
static size_t online_cpus(int *cpus, size_t max)
{
    size_t n = 0;
    FILE *f = fopen("/sys/devices/system/cpu/online", "r");
    if (f) {
        int a, b;
        char sep;
        while (n < max && fscanf(f, "%d", &a) == 1) {
            b = a;
            if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
                if (fscanf(f, "%d", &b) != 1)
                    break;
                if (fscanf(f, "%c", &sep) != 1)
                    sep = '\n';
            }
            for (int c = a; c <= b && n < max; c++)
                cpus[n++] = c;
            if (sep != ',')
                break;
        }
        fclose(f);
    }
    if (n == 0) {
        long np = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < np && n < max; c++)
            cpus[n++] = (int)c;
    }
    return n;
}

/* Index of bit `bit` among the set bits of mask, or -1 when not set. */
static int packed_index(uint64_t mask, int bit)
{
    if (!((mask >> bit) & 1))
        return -1;
    return __builtin_popcountll(mask & ((1ull << bit) - 1));
}

/* -- Opening events ------------------------------------------------------ */

static bool is_refusal(int e)
{
    return e == EACCES || e == EPERM || e == ENOENT || e == ENOSYS || e == ENODEV || e == EOPNOTSUPP;
}

/* Opens the event for one thread and maps its buffer. Answers 0, or an
 * errno with a message in err (ESRCH: the thread has exited). */
static int ring_open(Sampler *s, pid_t tid, int cpu, char *err, size_t errlen)
{
    long fd = perf_event_open(&s->attr, tid, cpu);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && !s->attr.exclude_kernel) {
        /* Kernel samples need perf_event_paranoid <= 1 or CAP_PERFMON;
         * user-space samples are what we are after, so drop the kernel. */
        s->attr.exclude_kernel = 1;
        snprintf(s->note, sizeof s->note,
                 "kernel samples excluded: kernel.perf_event_paranoid is %d (including them needs <= 1 "
                 "or CAP_PERFMON), so time the target spends in system calls is not sampled",
                 vmprofd_permission_perf_paranoid());
        fd = perf_event_open(&s->attr, tid, cpu);
    }
    if (fd < 0) {
        int e = errno;
        if (is_refusal(e)) {
            vmprofd_permission_explain_perf(s->cfg.pid, e, err, errlen);
        } else if (e == EINVAL) {
            FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
            long max = 0;
            if (f) {
                if (fscanf(f, "%ld", &max) != 1)
                    max = 0;
                fclose(f);
            }
            if (max > 0 && s->cfg.rate_hz > (double)max)
                snprintf(err, errlen,
                         "--rate %.0f is above kernel.perf_event_max_sample_rate (%ld): lower --rate, or "
                         "sudo sysctl -w kernel.perf_event_max_sample_rate=%.0f",
                         s->cfg.rate_hz, max, s->cfg.rate_hz);
            else
                snprintf(err, errlen,
                         "perf_event_open rejected the event (EINVAL): the kernel may lack CLOCK_MONOTONIC "
                         "timestamps (Linux >= 4.1) or user register/stack sampling; try --mode ptrace");
        } else if (e == EMFILE || e == ENFILE) {
            snprintf(err, errlen, "out of file descriptors (one per thread): raise the limit with ulimit -n");
        } else {
            snprintf(err, errlen, "perf_event_open for thread %d failed: %s", (int)tid, strerror(e));
        }
        return e;
    }

    long pagesize = sysconf(_SC_PAGESIZE);
    void *base = MAP_FAILED;
    size_t len = 0;
    for (;;) {
        len = (size_t)(s->pages + 1) * (size_t)pagesize;
        base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
        if (base != MAP_FAILED || errno != EPERM || s->pages <= PERF_RING_MIN_PAGES)
            break;
        s->pages /= 2; /* over the locked-memory allowance: try a smaller ring */
    }
    if (base == MAP_FAILED) {
        int e = errno;
        snprintf(err, errlen,
                 "cannot map the perf ring buffer of thread %d: %s%s", (int)tid, strerror(e),
                 e == EPERM ? " (locked-memory limit: raise ulimit -l or kernel.perf_event_mlock_kb)" : "");
        close((int)fd);
        return e;
    }

    if (s->nrings == s->caprings) {
        size_t cap = s->caprings ? 2 * s->caprings : 8;
        PerfRing *r = realloc(s->rings, cap * sizeof *r);
        struct pollfd *p = realloc(s->pfds, (cap + 2) * sizeof *p); /* + the wake fd and the BPF ring */
        if (p)
            s->pfds = p;
        size_t *pr = realloc(s->pfd_ring, (cap + 2) * sizeof *pr);
        if (pr)
            s->pfd_ring = pr;
        if (!r || !p || !pr) {
            if (r)
                s->rings = r;
            munmap(base, len);
            close((int)fd);
            snprintf(err, errlen, "out of memory");
            return ENOMEM;
        }
        s->rings = r;
        s->caprings = cap;
    }
    if (s->bpf) {
        char why[512];
        if (!vmprofd_bpf_attach(s->bpf, (int)fd, why, sizeof why)) {
            s->bpf_unattached++;
            /* the first reason is kept: later threads fail the same way */
            if (s->bpf_unattached == 1 && snprintf(s->bpf_why, sizeof s->bpf_why, "thread %d: %s", (int)tid, why) < 0)
                s->bpf_why[0] = '\0';
        }
    }
    struct perf_event_mmap_page *meta = base;
    PerfRing *r = &s->rings[s->nrings++];
    r->tid = tid;
    r->cpu = cpu;
    r->fd = (int)fd;
    r->base = base;
    r->map_len = len;
    /* data_offset/data_size exist since Linux 4.1; before, data follows
     * the metadata page and fills the rest. */
    uint64_t off = meta->data_offset ? meta->data_offset : (uint64_t)pagesize;
    r->data = (uint8_t *)base + off;
    r->data_size = meta->data_size ? meta->data_size : (uint64_t)s->pages * (uint64_t)pagesize;
    r->dead = false;
    return 0;
}

static bool have_ring(const Sampler *s, pid_t tid)
{
    for (size_t i = 0; i < s->nrings; i++)
        if (s->rings[i].tid == tid)
            return true;
    for (size_t i = 0; i < s->nretired; i++)
        if (s->retired[i] == tid)
            return true;
    return false;
}

static void ring_close(PerfRing *r)
{
    munmap(r->base, r->map_len);
    close(r->fd);
}

static void perf_free(Sampler *s)
{
    vmprofd_bpf_close(s->bpf); /* its links first: they hold the events */
    for (size_t i = 0; i < s->nrings; i++)
        ring_close(&s->rings[i]);
    free(s->rings);
    free(s->pfds);
    free(s->pfd_ring);
    free(s->scratch);
    free(s->tids);
    free(s->retired);
    free(s);
}

static Sampler *perf_open(const SamplerConfig *cfg, bool *refused, char *err, size_t errlen)
{
    *refused = false;
    Sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->scratch = malloc(VMPROFD_PERFRING_MAX_RECORD))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->pages = PERF_RING_PAGES;

    struct perf_event_attr *a = &s->attr;
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_CPU_CLOCK;
    a->freq = 1;
    a->sample_freq = (uint64_t)llround(cfg->rate_hz);
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    /* Whole stacks are walked in the kernel where BPF is allowed; the
     * registers and the stack copy are then not needed. */
    s->bpf = vmprofd_bpf_open(cfg->pid, s->bpf_why, sizeof s->bpf_why);
    if (s->bpf) {
        /* nothing more: the walker's record is the sample */
    } else if (cfg->regs_mask) {
        a->sample_type |= PERF_SAMPLE_REGS_USER;
        a->sample_regs_user = cfg->regs_mask;
    }
    if (cfg->stack_bytes && !s->bpf) {
        a->sample_type |= PERF_SAMPLE_STACK_USER;
        a->sample_stack_user = cfg->stack_bytes;
    }
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC; /* the clock of the stvm export's events */
    a->disabled = 1;              /* enabled once the ring is mapped */
    a->exclude_hv = 1;
    /* Without privilege, paranoid 2 allows user space only: ask for that
     * right away rather than after a refusal. */
    if (vmprofd_permission_perf_paranoid() >= 2 && !vmprofd_permission_has_cap(CAP_PERFMON) &&
        !vmprofd_permission_has_cap(CAP_SYS_ADMIN)) {
        a->exclude_kernel = 1;
        snprintf(s->note, sizeof s->note,
                 "kernel samples excluded: kernel.perf_event_paranoid is %d (including them needs <= 1 "
                 "or CAP_PERFMON), so time the target spends in system calls is not sampled",
                 vmprofd_permission_perf_paranoid());
    }
    a->watermark = 1;
    if (cfg->launched) {
        a->inherit = 1;        /* threads the command creates write into our ring */
        a->enable_on_exec = 1; /* start counting at exec, not in our fork child */
    }

    uint64_t mask = s->bpf ? 0 : cfg->regs_mask;
    s->layout.sample_type = a->sample_type;
    s->layout.regs_mask = cfg->regs_mask;
    s->layout.nregs = (unsigned)__builtin_popcountll(mask);
    s->layout.ip_index = packed_index(mask, PERF_REG_X86_IP);
    s->layout.sp_index = packed_index(mask, PERF_REG_X86_SP);
    s->layout.bp_index = packed_index(mask, PERF_REG_X86_BP);

    /* Launched: (its pid, each CPU). Attached: (each thread, any CPU). */
    enum { MAX_CPUS = 1024 };
    size_t n = 0;
    pid_t *tids = NULL;
    int *cpus = NULL;
    if (cfg->launched) {
        cpus = malloc(MAX_CPUS * sizeof *cpus);
        n = cpus ? online_cpus(cpus, MAX_CPUS) : 0;
    } else {
        tids = vmprofd_target_threads(cfg->pid, &n);
    }
    if (n == 0) {
        int e = errno;
        free(tids);
        free(cpus);
        if (cfg->launched)
            snprintf(err, errlen, "cannot list the online CPUs");
        else if (e == ENOENT || e == ESRCH)
            snprintf(err, errlen, "no process with pid %d", (int)cfg->pid);
        else
            snprintf(err, errlen, "cannot list the threads of pid %d: %s%s", (int)cfg->pid, strerror(e),
                     e == EMFILE || e == ENFILE ? " (raise the limit: ulimit -n)" : "");
        perf_free(s);
        return NULL;
    }
    long pagesize = sysconf(_SC_PAGESIZE);
    a->wakeup_watermark = (uint32_t)((uint64_t)s->pages * (uint64_t)pagesize / 4);
    for (size_t i = 0; i < n; i++) {
        int e = cfg->launched ? ring_open(s, cfg->pid, cpus[i], err, errlen) : ring_open(s, tids[i], -1, err, errlen);
        if (e == ESRCH)
            continue; /* the thread exited between listing and opening */
        if (cfg->launched && e == ENODEV)
            continue; /* the CPU went offline */
        if (e != 0) {
            *refused = is_refusal(e);
            free(tids);
            free(cpus);
            perf_free(s);
            return NULL;
        }
        a->wakeup_watermark = (uint32_t)((uint64_t)s->pages * (uint64_t)pagesize / 4);
    }
    free(tids);
    free(cpus);
    if (s->nrings == 0) {
        snprintf(err, errlen, "process %d exited before it could be sampled", (int)cfg->pid);
        perf_free(s);
        return NULL;
    }
    return s;
}

static void push_facts(Sampler *s);

static bool perf_start(Sampler *s, char *err, size_t errlen)
{
    push_facts(s); /* attached: the facts are known, so the first sample is walked whole */
    if (s->cfg.launched)
        return true; /* enable_on_exec does it */
    for (size_t i = 0; i < s->nrings; i++) {
        if (ioctl(s->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0) != 0 && errno != ESRCH) {
            snprintf(err, errlen, "cannot enable sampling of thread %d: %s", (int)s->rings[i].tid, strerror(errno));
            return false;
        }
    }
    return true;
}

static void perf_rescan(Sampler *s)
{
    if (s->cfg.launched)
        return; /* inherit covers the command's threads */
    size_t n;
    pid_t *tids = vmprofd_target_threads(s->cfg.pid, &n);
    for (size_t i = 0; i < n; i++) {
        if (have_ring(s, tids[i]))
            continue;
        char err[512];
        int e = ring_open(s, tids[i], -1, err, sizeof err);
        if (e == 0)
            ioctl(s->rings[s->nrings - 1].fd, PERF_EVENT_IOC_ENABLE, 0);
        else if (e != ESRCH)
            fprintf(stderr, "vmprofd: warning: thread %d not sampled: %s\n", (int)tids[i], err);
    }
    free(tids);
}

/* -- Reading the ring ---------------------------------------------------- */

static void note_tid(Sampler *s, uint32_t tid)
{
    if (s->ntids > 0 && s->tids[s->ntids - 1] == tid)
        return;
    for (size_t i = 0; i < s->ntids; i++)
        if (s->tids[i] == tid)
            return;
    if (s->ntids == s->captids) {
        size_t cap = s->captids ? 2 * s->captids : 16;
        uint32_t *t = realloc(s->tids, cap * sizeof *t);
        if (!t)
            return;
        s->tids = t;
        s->captids = cap;
    }
    s->tids[s->ntids++] = tid;
}

typedef struct DrainCtx {
    Sampler *s;
    SampleSink sink;
    void *ctx;
} DrainCtx;

static void handle_record(void *vctx, const struct perf_event_header *h, const uint8_t *rec)
{
    DrainCtx *d = vctx;
    Sampler *s = d->s;
    switch (h->type) {
    case PERF_RECORD_SAMPLE: {
        RawSample r;
        if (!vmprofd_perfring_sample(&s->layout, h, rec, &r))
            return;
        if ((pid_t)r.pid != s->cfg.pid) {
            s->foreign++; /* a process the launched command forked: not our target */
            return;
        }
        s->samples++;
        note_tid(s, r.tid);
        d->sink(d->ctx, &r);
        break;
    }
    case PERF_RECORD_LOST: {
        uint64_t lost;
        if (vmprofd_perfring_lost(h, rec, &lost))
            s->lost += lost;
        break;
    }
    case PERF_RECORD_THROTTLE:
        s->throttled++;
        break;
    default:
        break;
    }
}

static void drain(Sampler *s, PerfRing *r, SampleSink sink, void *ctx)
{
    struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)r->base;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    DrainCtx d = {s, sink, ctx};
    vmprofd_perfring_drain(r->data, r->data_size, head, &meta->data_tail, s->scratch, handle_record, &d);
}

/* Closes the rings of exited threads, after their last drain. */
static void retire_dead(Sampler *s)
{
    for (size_t i = 0; i < s->nrings;) {
        PerfRing *r = &s->rings[i];
        if (!r->dead) {
            i++;
            continue;
        }
        uint64_t v;
        if (read(r->fd, &v, sizeof v) == (ssize_t)sizeof v)
            s->retired_cpu_ns += v;
        if (s->nretired == s->capretired) {
            size_t cap = s->capretired ? 2 * s->capretired : 16;
            pid_t *t = realloc(s->retired, cap * sizeof *t);
            if (!t)
                return; /* keep the ring open; try again next time */
            s->retired = t;
            s->capretired = cap;
        }
        s->retired[s->nretired++] = r->tid;
        ring_close(r);
        s->rings[i] = s->rings[--s->nrings];
    }
}

typedef struct BpfDelivery {
    Sampler *s;
    SampleSink sink;
    void *ctx;
} BpfDelivery;

static void deliver_raw(void *vctx, const ProfRawStack *raw)
{
    BpfDelivery *d = vctx;
    RawSample rs;
    memset(&rs, 0, sizeof rs);
    rs.time_ns = raw->time_ns;
    rs.pid = raw->pid;
    rs.tid = raw->tid;
    rs.regs.ip = raw->nleaf ? raw->leaf[0] : raw->top_pc;
    rs.raw = raw;
    note_tid(d->s, raw->tid);
    d->s->samples++;
    d->s->bpf_samples++;
    d->sink(d->ctx, &rs);
}

/* Hands the walker the VM's facts as soon as vmprofd has them: before the
 * events are enabled when attaching (the export is read first), else at
 * the next poll, before it waits. */
static void push_facts(Sampler *s)
{
    const ProfWalkFacts *f = s->cfg.facts;
    if (s->bpf && !s->bpf_has_facts && f && __atomic_load_n(&f->size, __ATOMIC_ACQUIRE)) {
        vmprofd_bpf_set_facts(s->bpf, f); /* the VM has published: walk its frames from now on */
        s->bpf_has_facts = true;
    }
}

static void drain_bpf(Sampler *s, SampleSink sink, void *ctx)
{
    if (!s->bpf)
        return;
    push_facts(s);
    BpfDelivery d = {s, sink, ctx};
    vmprofd_bpf_drain(s->bpf, deliver_raw, &d);
}

static void perf_poll(Sampler *s, int timeout_ms, int wake_fd, SampleSink sink, void *ctx)
{
    push_facts(s);
    size_t n = 0;
    for (size_t i = 0; i < s->nrings; i++) {
        if (s->rings[i].dead)
            continue;
        s->pfds[n] = (struct pollfd){.fd = s->rings[i].fd, .events = POLLIN};
        s->pfd_ring[n++] = i;
    }
    size_t nrings_polled = n;
    if (wake_fd >= 0)
        s->pfds[n++] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    if (s->bpf)
        s->pfds[n++] = (struct pollfd){.fd = vmprofd_bpf_fd(s->bpf), .events = POLLIN};
    if (n > 0 && poll(s->pfds, n, timeout_ms) > 0) {
        for (size_t i = 0; i < nrings_polled; i++)
            if (s->pfds[i].revents & (POLLHUP | POLLERR | POLLNVAL))
                s->rings[s->pfd_ring[i]].dead = true; /* its thread exited */
    } else if (n == 0) {
        struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < s->nrings; i++)
        drain(s, &s->rings[i], sink, ctx);
    drain_bpf(s, sink, ctx);
    retire_dead(s);
}

static void perf_stats(Sampler *s, SamplerStats *out)
{
    memset(out, 0, sizeof *out);
    out->samples = s->samples;
    out->lost = s->lost + (s->bpf ? vmprofd_bpf_dropped(s->bpf) : 0);
    out->foreign = s->foreign;
    out->throttled = s->throttled;
    out->threads = s->ntids;
    out->cpu_ns = s->retired_cpu_ns;
    /* A cpu-clock event counts the nanoseconds its thread ran while
     * enabled (inherited threads included): exactly the CPU time sampled. */
    for (size_t i = 0; i < s->nrings; i++) {
        uint64_t v;
        if (read(s->rings[i].fd, &v, sizeof v) == (ssize_t)sizeof v)
            out->cpu_ns += v;
    }
}

static void perf_close(Sampler *s, SampleSink sink, void *ctx, SamplerStats *final)
{
    for (size_t i = 0; i < s->nrings; i++)
        ioctl(s->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
    for (size_t i = 0; i < s->nrings; i++)
        drain(s, &s->rings[i], sink, ctx);
    drain_bpf(s, sink, ctx);
    perf_stats(s, final);
    perf_free(s);
}

static const char *perf_note(Sampler *s)
{
    const char *stacks = NULL;
    char buf[1200];
    if (!s->bpf) {
        snprintf(buf, sizeof buf, "stacks partial: the eBPF stack walker could not be loaded (%s): Smalltalk frames "
                                  "are missing from the stacks", s->bpf_why);
        stacks = buf;
    } else if (s->bpf_unattached) {
        snprintf(buf, sizeof buf, "stacks partial: the eBPF stack walker is missing from %" PRIu64 " threads (%s)",
                 s->bpf_unattached, s->bpf_why);
        stacks = buf;
    }
    snprintf(s->notes, sizeof s->notes, "%s%s%s", s->note, s->note[0] && stacks ? "; " : "", stacks ? stacks : "");
    return s->notes[0] ? s->notes : NULL;
}

const SamplerOps vmprofd_sampler_perf = {
    .mode = "perf_event (cpu-clock)",
    .open = perf_open,
    .start = perf_start,
    .poll = perf_poll,
    .rescan = perf_rescan,
    .stats = perf_stats,
    .close = perf_close,
    .note = perf_note,
};
