/*
 * vmprofd/session.c — drives one profiling run. See session.h.
 */
#define _GNU_SOURCE /* process_vm_readv, ppoll, pipe2, strsignal, __WALL: Linux interfaces */
#include "vmprofd/session.h"
#include "vmprofd/stopsignals.h"

#include "report/report.h"
#include "vmprofd/export_reader.h"
#include "vmprofd/codelog_poll.h"
#include "vmprofd/offcpu.h"
#include "vmprofd/output.h"
#include "vmprofd/permission.h"
#include "vmprofd/progress.h"
#include "report/resolve.h"
#include "vmprofd/sampler.h"
#include "report/samples.h"
#include "report/symbolize.h"
#include "vmprofd/unwind.h"
#include "vmprofd/target.h"
#include "proto/identity.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Rescan period for threads created since we attached (perf samples a
 * thread only once it has its own event; ptrace's TRACECLONE needs no
 * rescan but gets one as a safety net). A /proc/PID/task listing costs
 * ~20 us, so 100 ms: a thread started later misses at most its first
 * 100 ms. */
#define SESSION_RESCAN_MS 100
/* Housekeeping period: libraries loaded since (symbolizer refresh), the
 * export segment appearing, the countdown. */
#define SESSION_HOUSEKEEPING_MS 250
/* Longest wait inside a sampler before the session looks at the clock
 * and the stop flag again. */
#define SESSION_POLL_MS 100
/* Code event log polls: the worst churn measured (CodeChurn.som in a
 * 64 KiB code zone) logs 8.2 MB of events a second, so the default 4 MiB
 * ring lasts half a second; polling every 50 ms leaves a tenfold margin,
 * and a poll that finds nothing new is one pread. */
#define SESSION_CODE_LOG_MS 50
/* After an overrun the period halves, down to this: 10 ms keeps up with
 * that churn in a ring of 128 KiB. */
#define SESSION_CODE_LOG_MIN_MS 10
/* While a VM is starting and its export not yet read, the session looks for
 * the export every millisecond: until it has the walk facts, the eBPF
 * walker sees native frames only, and a VM booting from its snapshot runs
 * the program's machine code within ~5 ms (tests/stacks: at 50 ms the
 * program's first ~40 samples had no Smalltalk frames). The polls end as
 * soon as the export is read; a process that never makes one (not stvm,
 * --no-export) is polled at 1 ms for its first SESSION_START_WINDOW_MS. */
#define SESSION_START_POLL_MS 1
#define SESSION_START_WINDOW_MS 2000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct Session {
    const VmprofdOptions *o;
    Target target;
    const SamplerOps *ops;
    Sampler *sampler;
    Symbolizer *sym;
    char sym_exe[PROF_EXPORT_PATH_MAX]; /* what the symbolizer was made with */
    char sym_why[512];                  /* why the last one could not be made */
    uint64_t sym_zone_start, sym_zone_end;
    ExportReader *exp;
    ExportStatus exp_status;
    char exp_msg[512];
    CodeLogPoll code;
    char code_why[512];      /* why there is no code event log, when there is none */
    /* How to walk the VM's stacks (the samplers read it at every sample:
     * size 0 until the export has been read), and why there is none. */
    ProfWalkFacts facts;
    char facts_why[256];
    uint64_t whole, partial; /* samples with a whole stack, and without */
    uint64_t partial_unwalked; /* of partial: the sampler delivered no walk (unwound natively) */
    uint64_t early;          /* without, taken before the VM's export could be read */
    char cwd[4096];         /* the target's working directory (relative .som paths) */
    int code_poll_ms;       /* the code log's poll period: SESSION_CODE_LOG_MS, less after overruns */
    bool have_start;
    ProfCounters start, end;
    SampleStore store;
    uint64_t dropped;       /* out of memory while storing */
    char exe[PROF_EXPORT_PATH_MAX];
    char mode_reason[1024];
    Progress progress;
    char stale_msg[640];    /* a dead VM's segment was found under the target's pid */
    bool no_export_arg;     /* the target is an stvm run with --no-export */
    char end_state[64];     /* the target's state when sampling ended ("S (sleeping)") */
    size_t threads_at_end;  /* its threads when sampling ended */
    OffCpuTally offcpu;     /* --event wall: samples by what the thread did off the CPU */
    /* How it is driven: the command line (cli: messages on stderr, signals,
     * privileges dropped) or vmprofd/engine.c (messages into err only). */
    const volatile sig_atomic_t *stop; /* nonzero: stop sampling (a signal's number) */
    bool cli;
    char err[1024];         /* why it could not profile */
    /* After sampling, for the command line's last words: */
    SamplerStats final;
    double seconds;
    bool runs_on;           /* --seconds stopped sampling a command that runs on */
    bool debug_ok;
} Session;

static void fail(Session *ss, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Session *ss, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ss->err, sizeof ss->err, fmt, ap);
    va_end(ap);
    if (ss->cli)
        fprintf(stderr, "vmprofd: %s\n", ss->err);
}

/* -- Samples arriving ---------------------------------------------------- */

static void store_sample(Session *ss, const RawSample *r);

/* --event wall: an off-CPU sample gets its "[off-CPU: ...]" leaf. */
static void label_off_cpu(Session *ss, const RawSample *r, StoredSample *s)
{
    if (!vmprofd_offcpu_is_off(r->state)) {
        vmprofd_offcpu_count(&ss->offcpu, NULL);
        return;
    }
    char label[VMPROFD_OFFCPU_LABEL_MAX];
    vmprofd_offcpu_label(r->state, r->syscall_nr, label, sizeof label);
    vmprofd_offcpu_count(&ss->offcpu, label);
    s->label = report_samples_label(&ss->store, label);
}

static void on_sample(void *ctx, const RawSample *r)
{
    Session *ss = ctx;
    size_t before = ss->store.n;
    store_sample(ss, r);
    if (r->has_cpu && ss->store.n > before)
        ss->store.v[ss->store.n - 1].weight = r->cpu_ns;
    if (ss->o->event == VMPROFD_EVENT_WALL && ss->store.n > before)
        label_off_cpu(ss, r, &ss->store.v[ss->store.n - 1]);
}

static void store_sample(Session *ss, const RawSample *r)
{
    if (r->raw && (r->raw->flags & PROF_RAW_F_NO_FACTS)) {
        /* walked before the VM's facts were known: native frames only */
        if (ss->facts.size == 0 && !ss->exp)
            ss->early++;
        else
            ss->partial++;
        if (!report_samples_add_raw(&ss->store, r->raw)) {
            ss->dropped++;
            return;
        }
        /* an older VM's interpreter ip register (r12..r15, PERF_REG_X86_R12 = 20) */
        uint32_t reg = ss->code.active ? ss->code.log.control.interp_ip_reg : 0;
        if (reg >= 21 && reg <= 24 && !(r->raw->flags & PROF_RAW_F_KERNEL))
            ss->store.v[ss->store.n - 1].interp_ip = r->raw->top_words[reg - 21];
        return;
    }
    if (r->raw) {
        ss->whole++;
        if (!report_samples_add_raw(&ss->store, r->raw))
            ss->dropped++;
        return;
    }
    if (__atomic_load_n(&ss->facts.size, __ATOMIC_ACQUIRE) == 0 && !ss->exp) {
        ss->early++; /* the VM has not published yet: it is starting (or no stvm at all) */
    } else {
        ss->partial++;
        ss->partial_unwalked++;
    }
    uint64_t pcs[REPORT_MAX_FRAMES];
    size_t n = 0;
    if (r->regs.ip != 0) {
        if (ss->sym && (r->regs.sp || r->regs.bp || r->stack_len))
            n = vmprofd_unwind(ss->sym, &r->regs, r->stack, r->stack_len, pcs, REPORT_MAX_FRAMES);
        else
            pcs[n++] = r->regs.ip;
    }
    if (!report_samples_add(&ss->store, r->time_ns, r->tid, r->kernel_ip, pcs, n)) {
        ss->dropped++;
        return;
    }
    /* the interpreter's ip, when the VM says which register holds it */
    uint32_t reg = ss->code.active ? ss->code.log.control.interp_ip_reg : 0;
    uint64_t ip;
    if (reg != 0 && r->regs.ip != 0 && vmprofd_unwind_reg(&r->regs, (int)reg - 1, &ip))
        ss->store.v[ss->store.n - 1].interp_ip = ip;
}

/* -- The export segment and the symbolizer --------------------------------- */

static void try_export(Session *ss)
{
    if (ss->exp)
        return;
    ss->exp = vmprofd_export_open(ss->target.pid, &ss->exp_status, ss->exp_msg, sizeof ss->exp_msg);
    if (!ss->exp) {
        if (ss->exp_status == VMPROFD_EXPORT_STALE && !ss->stale_msg[0])
            snprintf(ss->stale_msg, sizeof ss->stale_msg, "%s", ss->exp_msg);
        return;
    }
    char msg[256];
    ss->have_start = vmprofd_export_read_counters(ss->exp, &ss->start, msg, sizeof msg);
    ProfWalkFacts f;
    if (vmprofd_export_walk_facts(ss->exp, &f, ss->facts_why, sizeof ss->facts_why)) {
        uint32_t size = f.size;
        f.size = 0;
        ss->facts = f;
        __atomic_store_n(&ss->facts.size, size, __ATOMIC_RELEASE); /* samplers check size: the rest first */
    }
    if (!vmprofd_codelog_open(&ss->code, ss->exp, ss->o->quiet, ss->code_why, sizeof ss->code_why)) {
        if (!ss->o->warnings_inside)
            fprintf(stderr, "vmprofd: warning: %s\n", ss->code_why);
    } else {
        vmprofd_codelog_poll(&ss->code);
    }
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/cwd", (int)ss->target.pid);
    ssize_t n = readlink(link, ss->cwd, sizeof ss->cwd - 1);
    ss->cwd[n > 0 ? n : 0] = '\0';
}

/* (Re)creates the symbolizer when it is missing or the export now names
 * the VM executable or a code zone it was not made with. */
static void ensure_symbolizer(Session *ss)
{
    const char *exe = NULL;
    uint64_t zs = 0, ze = 0;
    if (ss->exp) {
        const ProfExportHeader *h = vmprofd_export_header(ss->exp);
        exe = h->vm_path[0] ? h->vm_path : NULL;
        zs = h->code_zone_start;
        ze = h->code_zone_end;
    }
    if (ss->sym && strcmp(ss->sym_exe, exe ? exe : "") == 0 && ss->sym_zone_start == zs && ss->sym_zone_end == ze) {
        report_symbolizer_refresh(ss->sym);
        return;
    }
    Symbolizer *s = report_symbolizer_new(ss->target.pid, exe, zs, ze, ss->sym_why, sizeof ss->sym_why);
    if (!s)
        return; /* the target may be gone; the previous one (if any) still serves */
    if (ss->sym)
        report_symbolizer_free(ss->sym);
    ss->sym = s;
    snprintf(ss->sym_exe, sizeof ss->sym_exe, "%s", exe ? exe : "");
    ss->sym_zone_start = zs;
    ss->sym_zone_end = ze;
}

/* Reads the code log; a log that the VM overran since the last poll gets
 * read twice as often from then on. */
static void poll_code(Session *ss)
{
    uint64_t overruns = ss->code.log.stats.overruns;
    vmprofd_codelog_poll(&ss->code);
    if (ss->code.active && ss->code.log.stats.overruns > overruns && ss->code_poll_ms > SESSION_CODE_LOG_MIN_MS) {
        ss->code_poll_ms /= 2;
        if (ss->code_poll_ms < SESSION_CODE_LOG_MIN_MS)
            ss->code_poll_ms = SESSION_CODE_LOG_MIN_MS;
    }
}

/* -- Choosing a sampler ------------------------------------------------------ */

static bool open_sampler(Session *ss)
{
    const VmprofdOptions *o = ss->o;
    SamplerConfig cfg = {
        .pid = ss->target.pid,
        .launched = ss->target.launched,
        .rate_hz = o->rate_hz,
        .stack_bytes = o->stack_bytes,
        .regs_mask = vmprofd_unwind_regs_mask(),
        .facts = &ss->facts,
        .wall = o->event == VMPROFD_EVENT_WALL,
    };
    char perf_err[1024] = "", ptrace_err[1024] = "";
    bool refused = false;
    /* --event wall: only the ptrace sampler sees threads that do not run
     * (options.c refuses --mode perf with it) */
    if (o->mode != VMPROFD_MODE_PTRACE && !cfg.wall) {
        ss->sampler = vmprofd_sampler_perf.open(&cfg, &refused, perf_err, sizeof perf_err);
        if (ss->sampler) {
            ss->ops = &vmprofd_sampler_perf;
            if (o->mode == VMPROFD_MODE_PERF)
                snprintf(ss->mode_reason, sizeof ss->mode_reason, "asked for with --mode perf");
            return true;
        }
        if (o->mode == VMPROFD_MODE_PERF || !refused) {
            fail(ss, "cannot profile pid %d: %s", (int)ss->target.pid, perf_err);
            return false;
        }
    }
    ss->sampler = vmprofd_sampler_ptrace.open(&cfg, &refused, ptrace_err, sizeof ptrace_err);
    if (ss->sampler) {
        ss->ops = &vmprofd_sampler_ptrace;
        if (o->mode == VMPROFD_MODE_PTRACE) {
            snprintf(ss->mode_reason, sizeof ss->mode_reason, "asked for with --mode ptrace");
        } else if (cfg.wall) {
            snprintf(ss->mode_reason, sizeof ss->mode_reason,
                     "--event wall samples every thread, running or not; perf's cpu-clock sees running threads "
                     "only");
        } else {
            /* perf_err may be long: a cut reason still says what failed */
            if (snprintf(ss->mode_reason, sizeof ss->mode_reason, "%s; using ptrace", perf_err) >=
                (int)sizeof ss->mode_reason)
                ss->mode_reason[sizeof ss->mode_reason - 2] = '.';
            if (ss->cli)
                fprintf(stderr, "vmprofd: %s\n", ss->mode_reason);
        }
        return true;
    }
    if (o->mode == VMPROFD_MODE_PTRACE)
        fail(ss, "cannot profile pid %d: %s", (int)ss->target.pid, ptrace_err);
    else
        fail(ss, "cannot profile pid %d:\n  %s\n  %s", (int)ss->target.pid, perf_err, ptrace_err);
    return false;
}

/* -- Notes for the report ------------------------------------------------------ */

static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, " (exit status %d)", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, " (killed by signal %d, %s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        buf[0] = '\0';
}

/* Whether exe is stvm (by its name: a VM that publishes nothing says
 * nothing else about itself). */
static bool runs_stvm(const char *exe)
{
    const char *slash = strrchr(exe, '/');
    const char *base = slash ? slash + 1 : exe;
    return strncmp(base, "stvm", 4) == 0;
}

/* What the profile cannot show, at the top of the report and on stderr
 * (-q does not silence these). */
static void warn(const Session *ss, Profile *p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void warn(const Session *ss, Profile *p, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report_profile_add_warning(p, "%s", msg);
    if (!ss->o->warnings_inside)
        fprintf(stderr, "vmprofd: warning: %s\n", msg);
}

static void add_warnings(Session *ss, Profile *p, const SamplerStats *final, double seconds)
{
    int pid = (int)ss->target.pid;
    if (!ss->exp) {
        if (ss->stale_msg[0])
            warn(ss, p, "%s", ss->stale_msg);
        if (ss->exp_status == VMPROFD_EXPORT_INVALID)
            warn(ss, p, "%s: counters unavailable, machine code unresolved", ss->exp_msg);
        else if (ss->no_export_arg)
            warn(ss, p, "pid %d is an stvm run with --no-export: its machine code shows as [unknown], without "
                    "Smalltalk frames or VM counters (run it without --no-export)", pid);
        else if (runs_stvm(ss->exe))
            warn(ss, p, "pid %d runs stvm but published no export segment (" PROF_EXPORT_PATH_FMT "): its machine "
                    "code shows as [unknown], without Smalltalk frames or VM counters (its stderr says why)",
                 pid, pid);
        else
            warn(ss, p, "pid %d (%s) is not an stvm: it publishes no " PROF_EXPORT_PATH_FMT "; native code "
                    "only, no VM tables", pid, ss->exe[0] ? ss->exe : "executable unknown", pid);
    } else if (vmprofd_export_identity_unchecked(ss->exp)) {
        warn(ss, p, "the export segment of pid %d comes from an stvm older than export version %d: vmprofd cannot "
                "tell whether pid %d made it or a dead process that had the pid before", pid,
             PROF_EXPORT_VERSION_IDENTITY, pid);
    }
    if (ss->store.n == 0) {
        if (ss->o->event == VMPROFD_EVENT_WALL)
            warn(ss, p, "no samples: pid %d %s after %.3f s, before a tick of the wall clock could sample it", pid,
                 ss->target.exited ? "exited" : "was not sampled", seconds);
        else if (ss->target.exited)
            warn(ss, p, "no samples: pid %d exited after %.3f s before it used a sampling period of CPU time", pid,
                 seconds);
        else if ((double)final->cpu_ns > 2e9 / ss->o->rate_hz)
            warn(ss, p, "no samples: pid %d used %.3f s of CPU time in the %.3f s sampled, but none of its samples "
                    "reached vmprofd (%s)", pid, (double)final->cpu_ns / 1e9, seconds,
                 final->lost ? "the kernel's ring overflowed" : "a fault of vmprofd's: please report it");
        else
            warn(ss, p, "no samples: pid %d used no CPU time in the %.3f s sampled (it was %s)", pid, seconds,
                 ss->end_state[0] ? ss->end_state : "in a state /proc did not say");
    }
    if (!ss->target.exited && ss->threads_at_end > 0 && final->threads > ss->threads_at_end)
        warn(ss, p, "%llu of the %llu threads sampled exited before the end: their samples up to then are counted%s",
             (unsigned long long)(final->threads - ss->threads_at_end), (unsigned long long)final->threads,
             ss->ops == &vmprofd_sampler_perf ? "; threads that lived less than 100 ms may have none" : "");
}

/* Launch mode after --seconds: COMMAND runs on, vmprofd waits (signals
 * still pass to it) to exit with its status. */
static void wait_for_command(Target *t)
{
    int status;
    pid_t r;
    while ((r = waitpid(t->pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (r == t->pid)
        vmprofd_target_set_status(t, status);
}

/* -- The run --------------------------------------------------------------- */

/* Starts or finds the target and opens a sampler on it; false after
 * printing why not. */
static bool attach(Session *ss)
{
    const VmprofdOptions *o = ss->o;
    char err[1024];
    if (o->command) {
        if (!vmprofd_target_launch(&ss->target, o->command, err, sizeof err)) {
            fail(ss, "%s", err);
            return false;
        }
    } else {
        if (!vmprofd_target_attach(&ss->target, o->pid, err, sizeof err)) {
            fail(ss, "%s", err);
            return false;
        }
        /* Before the sampler: the symbolizer reads /proc/PID/maps now,
         * while the target surely lives, and the unwinder needs it. */
        try_export(ss);
        ensure_symbolizer(ss);
        vmprofd_target_exe(ss->target.pid, ss->exe, sizeof ss->exe);
        ss->no_export_arg = vmprofd_target_has_arg(ss->target.pid, "--no-export");
    }
    if (!open_sampler(ss))
        return false;
    if (o->command) {
        if (!vmprofd_target_release(&ss->target, err, sizeof err)) {
            fail(ss, "cannot run '%s': %s", o->command[0],
                 strncmp(err, "cannot run the command: ", 24) == 0 ? err + 24 : err);
            return false;
        }
        /* from now on a signal for vmprofd is COMMAND's (perf and py-spy do so) */
        vmprofd_stopsignals_forward_to(ss->target.pid);
        ensure_symbolizer(ss);
        vmprofd_target_exe(ss->target.pid, ss->exe, sizeof ss->exe);
        for (char **a = o->command + 1; *a && strcmp(*a, "--") != 0; a++)
            ss->no_export_arg |= strcmp(*a, "--no-export") == 0;
    }
    if (!ss->ops->start(ss->sampler, err, sizeof err)) {
        fail(ss, "%s", err);
        return false;
    }
    /* permission.h; not in a server that profiles others after this one */
    if (ss->cli && !vmprofd_permission_drop(ss->ops->mode, ss->target.pid, o, err, sizeof err))
        fprintf(stderr, "vmprofd: warning: %s\n", err);
    return true;
}

static Session *session_new(const VmprofdOptions *o, const volatile sig_atomic_t *stop, bool cli)
{
    Session *ss = calloc(1, sizeof *ss);
    if (!ss)
        return NULL;
    ss->o = o;
    ss->stop = stop;
    ss->cli = cli;
    ss->code_poll_ms = o->code_log_poll_ms > 0 ? o->code_log_poll_ms : SESSION_CODE_LOG_MS;
    ss->target.pidfd = ss->target.go_fd = ss->target.exec_fd = -1;
    return ss;
}

static void session_free(Session *ss)
{
    if (ss->sampler) {
        SamplerStats st;
        ss->ops->close(ss->sampler, on_sample, ss, &st);
        ss->sampler = NULL;
    }
    if (ss->sym)
        report_symbolizer_free(ss->sym);
    vmprofd_codelog_close(&ss->code);
    vmprofd_export_close(ss->exp);
    vmprofd_target_close(&ss->target);
    report_samples_free(&ss->store);
    vmprofd_offcpu_free(&ss->offcpu);
    free(ss);
}

/* Attaches (or launches), samples until the time is up, *ss->stop or the
 * target's exit, detaches and builds the profile in *out: 0. Else the exit
 * status for the command line, with why in ss->err. */
static int session_collect(Session *ss, Profile **out)
{
    const VmprofdOptions *o = ss->o;
    *out = NULL;
    if (!attach(ss)) {
        /* A launched command not yet released exits when its pipe closes;
         * one already running runs on, unprofiled. */
        return ss->target.exec_errno == ENOENT ? 127 : ss->target.exec_errno ? 126 : 1;
    }

    /* dead VMs' segments (SIGKILL leaves them); the target's is judged by try_export */
    if (ss->cli)
        prof_segment_sweep(ss->target.pid);

    /* A command is sampled until it exits unless --seconds caps it. */
    bool capped = !o->command || o->seconds_given;
    time_t start_wall = time(NULL);
    double t0 = now_s(), last_house = t0, last_rescan = t0, last_code = t0, end_time = 0;
    char stop_note[256] = "";
    for (;;) {
        double now = now_s();
        double left = capped ? o->seconds - (now - t0) : 3600.0;
        if (left <= 0) {
            end_time = t0 + o->seconds;
            break;
        }
        int sig = *ss->stop;
        if (sig) {
            end_time = now;
            if (sig > 0) /* VMPROFD_ENGINE_CUT (engine.h): the caller's interval ended, nothing to note */
                snprintf(stop_note, sizeof stop_note, "stopped by %s after %.3f s", strsignal(sig), now - t0);
            break;
        }
        SamplerStats st;
        ss->ops->stats(ss->sampler, &st);
        if (st.target_exited || vmprofd_target_check_exit(&ss->target)) {
            end_time = now;
            if (st.have_status && !ss->target.have_status)
                vmprofd_target_set_status(&ss->target, st.status);
            ss->target.exited = true;
            break;
        }
        if ((now - last_rescan) * 1000.0 >= SESSION_RESCAN_MS) {
            last_rescan = now;
            ss->ops->rescan(ss->sampler);
        }
        bool starting = !ss->exp && (now - t0) * 1000.0 < SESSION_START_WINDOW_MS;
        if ((now - last_code) * 1000.0 >= (starting ? SESSION_START_POLL_MS : ss->code_poll_ms)) {
            last_code = now;
            /* a launched VM makes its segment as it boots: until vmprofd
             * reads it, samples lack the interpreter's ip */
            if (!ss->exp) {
                try_export(ss);
                if (ss->exp)
                    ensure_symbolizer(ss);
            }
            poll_code(ss);
        }
        if ((now - last_house) * 1000.0 >= SESSION_HOUSEKEEPING_MS) {
            last_house = now;
            try_export(ss);
            ensure_symbolizer(ss);
            if (ss->cli)
                vmprofd_progress_update(&ss->progress, ss->target.pid, left, ss->store.n);
        }
        int timeout = (int)(left * 1000.0) + 1;
        int poll_ms = starting ? SESSION_START_POLL_MS : ss->code.active || !ss->exp ? ss->code_poll_ms : SESSION_POLL_MS;
        if (timeout > poll_ms)
            timeout = poll_ms;
        ss->ops->poll(ss->sampler, timeout, vmprofd_target_exit_fd(&ss->target), on_sample, ss);
    }
    if (ss->cli)
        vmprofd_progress_clear(&ss->progress);
    double seconds = end_time - t0;
    if (!ss->target.exited) {
        vmprofd_target_state(ss->target.pid, ss->end_state, sizeof ss->end_state);
        free(vmprofd_target_threads(ss->target.pid, &ss->threads_at_end));
    }
    bool runs_on = o->command && !ss->target.exited; /* --seconds stopped sampling a command */
    ss->runs_on = runs_on;
    ss->seconds = seconds;
    if (runs_on && ss->cli)
        fprintf(stderr, "vmprofd: sampled %.3f s as --seconds asked; %s (pid %d) keeps running: vmprofd waits "
                        "for it to end and exits with its status (Ctrl-C reaches it)\n",
                seconds, o->command[0], (int)ss->target.pid);

    /* The last counters before detaching; the descriptor outlives an
     * exited VM's unlink, so this works after exit too. */
    bool have_end = false;
    char msg[256];
    if (ss->exp)
        have_end = vmprofd_export_read_counters(ss->exp, &ss->end, msg, sizeof msg);

    SamplerStats final;
    memset(&final, 0, sizeof final);
    char final_note[512] = "";
    const char *sn = ss->ops->note(ss->sampler);
    if (sn)
        snprintf(final_note, sizeof final_note, "%s", sn);
    ss->ops->close(ss->sampler, on_sample, ss, &final);
    ss->sampler = NULL;
    ss->final = final;
    if (final.have_status && !ss->target.have_status)
        vmprofd_target_set_status(&ss->target, final.status);
    if (ss->target.exited && ss->target.launched && !ss->target.have_status)
        vmprofd_target_check_exit(&ss->target); /* reap it for the status */
    /* The code events up to the last sample (the descriptor outlives an
     * exited VM's unlink). */
    vmprofd_codelog_poll(&ss->code);
    /* The handlers stay until the outputs are written: a second Ctrl-C
     * must not lose the profile of the first. */

    /* -- Build the profile -- */
    Profile *p = report_profile_new();
    const ProfExportHeader *eh = ss->exp ? vmprofd_export_header(ss->exp) : NULL;
    ReportHeader h;
    memset(&h, 0, sizeof h);
    h.vm_path = eh && eh->vm_path[0] ? eh->vm_path : ss->exe[0] ? ss->exe : "(unknown executable)";
    h.start_wall = start_wall;
    h.seconds = seconds;
    h.requested_hz = o->rate_hz;
    h.wall_clock = ss->o->event == VMPROFD_EVENT_WALL;
    h.mode = h.wall_clock ? "ptrace (wall-clock)" : ss->ops->mode;
    h.mode_reason = ss->mode_reason[0] ? ss->mode_reason : NULL;
    h.lost_samples = final.lost + ss->dropped;
    h.cpu_weighted = final.cpu_weighted;
    h.have_sched = final.have_sched;
    h.sched_run_ns = final.sched_run_ns;
    h.sched_wait_ns = final.sched_wait_ns;
    h.have_counters = ss->have_start && have_end;
    if (h.have_counters) {
        h.start = ss->start;
        h.end = ss->end;
    }
    h.native_only = !ss->exp && ss->exp_status != VMPROFD_EXPORT_INVALID && !ss->no_export_arg && !runs_stvm(ss->exe);
    report_profile_set_header(p, &h);
    add_warnings(ss, p, &final, seconds);

    if (ss->target.exited) {
        char st[128] = "";
        if (ss->target.have_status)
            describe_status(ss->target.status, st, sizeof st);
        report_profile_add_note(p, "target exited after %.3f s%s", seconds, st);
    }
    if (stop_note[0])
        report_profile_add_note(p, "%s", stop_note);
    if (ss->cli && vmprofd_stopsignals_forwarded())
        report_profile_add_note(p, "%s sent to vmprofd was passed to the command",
                                strsignal(vmprofd_stopsignals_forwarded()));
    if (final_note[0])
        report_profile_add_note(p, "%s", final_note); /* e.g. kernel samples excluded, and why */
    if (o->event == VMPROFD_EVENT_WALL) {
        char share[1024];
        vmprofd_offcpu_summary(&ss->offcpu, share, sizeof share);
        report_profile_add_note(p, "%s; each sample is one tick of wall-clock time (%.0f Hz) of one thread, "
                                   "runnable threads count as on-CPU", share, o->rate_hz);
    }
    if (ss->exp && !h.have_counters)
        report_profile_add_note(p, "the stvm export segment of pid %d became unreadable: counters unavailable",
                                (int)ss->target.pid);
    if (ss->exp && ss->stale_msg[0])
        report_profile_add_note(p, "%s (removed; the VM then published its own)", ss->stale_msg);
    /* Lost samples are counted in the header (the report prints them);
     * here only why they were lost. */
    if (final.lost && ss->ops == &vmprofd_sampler_perf)
        report_profile_add_note(p, "lost samples: the kernel's ring buffer was full (vmprofd did not keep up)");
    else if (final.lost)
        report_profile_add_note(p, "lost samples: vmprofd's timer fired late (it waited for a CPU), or a thread "
                                   "vanished mid-sample");
    if (final.throttled)
        report_profile_add_note(p, "the kernel throttled sampling %llu times (kernel.perf_event_max_sample_rate)",
                                (unsigned long long)final.throttled);
    if (final.foreign)
        report_profile_add_note(p, "%llu samples from processes the command started were left out",
                                (unsigned long long)final.foreign);
    if (ss->dropped)
        report_profile_add_note(p, "%llu samples dropped: out of memory", (unsigned long long)ss->dropped);
    if (!ss->sym)
        report_profile_add_note(p, "the target's memory map could not be read (%s): addresses are unresolved",
                                ss->sym_why[0] ? ss->sym_why : "no attempt succeeded");

    if (ss->exp && !ss->code.active && ss->code_why[0])
        report_profile_add_note(p, "%s", ss->code_why);
    vmprofd_codelog_notes(&ss->code, p);
    if (ss->code_poll_ms < SESSION_CODE_LOG_MS)
        report_profile_add_note(p, "the code event log was overrun: vmprofd read it every %d ms instead of %d "
                                   "(stvm --export-log-size makes the ring bigger)",
                                ss->code_poll_ms, SESSION_CODE_LOG_MS);
    ResolveCode code = {
        .map = ss->code.active ? ss->code.map : NULL,
        .zone_start = eh ? eh->code_zone_start : 0,
        .zone_end = eh ? eh->code_zone_end : 0,
        .cwd = ss->cwd[0] ? ss->cwd : NULL,
        .interp_fn = ss->code.active && ss->code.log.control.interp_ip_reg ? ss->code.log.control.interp_fn : 0,
        .return_to_interpreter = ss->facts.return_to_interpreter,
    };
    if (ss->early && ss->whole)
        report_profile_add_note(p, "%" PRIu64 " samples taken before the VM's export could be read have native "
                                   "frames only (the VM was starting)", ss->early);
    if (!ss->whole && (ss->early || ss->partial)) {
        /* no sample could be walked: say why, once */
        const char *why = ss->facts_why[0] ? ss->facts_why
                          : ss->exp        ? "the sampler delivered them without a walk; they were unwound natively"
                          : ss->exp_msg[0] ? ss->exp_msg
                                           : "the target published no export segment (not an stvm, or stvm --no-export)";
        report_profile_add_note(p, "stacks partial: no sample was walked through the Smalltalk frames (%s): at most "
                                   "their innermost one is shown", why);
    } else if (ss->partial && ss->facts.size == 0) {
        report_profile_add_note(p, "stacks partial: %" PRIu64 " of %" PRIu64 " samples were not walked through the "
                                   "Smalltalk frames: at most their innermost one is shown (%s)",
                                ss->partial, ss->partial + ss->whole + ss->early,
                                ss->facts_why[0] ? ss->facts_why : "the VM published no walk facts");
    } else if (ss->partial) {
        /* say which kind they were, not a guess at why; what they show is
         * what report/resolve.c makes of a sample without a walk: native
         * frames up to the first Smalltalk frame, if any, then "Smalltalk
         * callers not walked" */
        uint64_t unfacted = ss->partial - ss->partial_unwalked;
        char kinds[256];
        snprintf(kinds, sizeof kinds,
                 "%" PRIu64 " walked before the sampler had the VM's walk facts, %" PRIu64
                 " delivered by the sampler without a walk and unwound natively",
                 unfacted, ss->partial_unwalked);
        report_profile_add_note(p, "stacks partial: %" PRIu64 " of %" PRIu64 " samples were not walked through the "
                                   "Smalltalk frames: at most their innermost one is shown (%s)",
                                ss->partial, ss->partial + ss->whole + ss->early, kinds);
    }
    bool debug_ok = true;
    if (o->debug_resolutions) {
        code.debug = fopen(o->debug_resolutions, "w");
        code.debug_all_frames = ss->whole > 0;
        if (!code.debug) {
            fprintf(stderr, "vmprofd: cannot write %s: %s\n", o->debug_resolutions, strerror(errno));
            debug_ok = false;
        }
    }
    report_resolve_samples(p, ss->sym, &ss->store, &code);
    if (code.debug && fclose(code.debug) != 0) {
        fprintf(stderr, "vmprofd: cannot write %s: %s\n", o->debug_resolutions, strerror(errno));
        debug_ok = false;
    }
    if (code.lost || code.before)
        report_profile_add_note(p, "%" PRIu64 " samples in JIT'd code could not be attributed: %" PRIu64
                                   " while code events were missing, %" PRIu64 " before the code log began",
                                code.lost + code.before, code.lost, code.before);
    ss->debug_ok = debug_ok;
    *out = p;
    return 0;
}

Profile *vmprofd_session_collect(const VmprofdOptions *o, const volatile sig_atomic_t *stop, char *err, size_t errlen)
{
    if (o->event == VMPROFD_EVENT_ALLOC)
        return vmprofd_alloc_session_collect(o, stop, err, errlen);
    Session *ss = session_new(o, stop, false);
    if (!ss) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    Profile *p = NULL;
    if (session_collect(ss, &p) != 0)
        snprintf(err, errlen, "%s", ss->err[0] ? ss->err : "cannot profile");
    session_free(ss);
    return p;
}

int vmprofd_session_run(const VmprofdOptions *o)
{
    if (o->event == VMPROFD_EVENT_ALLOC) /* no sampler of ours: the VM samples (alloc_session.c) */
        return vmprofd_alloc_session_run(o);
    /* before anything starts: no profile is lost to a path that cannot take it */
    if (!vmprofd_output_check_all(o))
        return 1;
    Session *ss = session_new(o, vmprofd_stopsignals_flag(), true);
    if (!ss) {
        fprintf(stderr, "vmprofd: out of memory\n");
        return 1;
    }
    vmprofd_stopsignals_install();
    /* a launched command shares the terminal: a countdown would cut into its lines */
    vmprofd_progress_init(&ss->progress, o->quiet || o->command != NULL);
    Profile *p;
    int code = session_collect(ss, &p);
    if (code != 0) {
        session_free(ss);
        vmprofd_stopsignals_restore();
        return code;
    }
    SamplerStats final = ss->final;
    double seconds = ss->seconds;
    bool runs_on = ss->runs_on;
    /* A report on stdout waits for COMMAND's end, after all its output. */
    bool wrote = vmprofd_output_write_all(o, p, true, !runs_on) && ss->debug_ok;

    if (!o->quiet) {
        double cpu_s = (double)final.cpu_ns / 1e9;
        char rate[96];
        if (o->event == VMPROFD_EVENT_WALL)
            snprintf(rate, sizeof rate, "wall-clock, %.1f %% off-CPU",
                     ss->offcpu.samples ? 100.0 * (double)ss->offcpu.off / (double)ss->offcpu.samples : 0.0);
        else if (cpu_s > 0.001)
            snprintf(rate, sizeof rate, "%.1f Hz of target CPU time", (double)ss->store.n / cpu_s);
        else
            snprintf(rate, sizeof rate, "target CPU time unknown");
        char foreign[96] = "";
        if (final.foreign)
            snprintf(foreign, sizeof foreign, ", %llu from child processes left out (their CPU time is counted)",
                     (unsigned long long)final.foreign);
        fprintf(stderr,
                "vmprofd: %zu samples in %.3f s from %llu thread%s (%s, asked %.0f Hz; cpu %.3f s), %llu lost%s; mode %s\n",
                ss->store.n, seconds, (unsigned long long)final.threads, final.threads == 1 ? "" : "s", rate, o->rate_hz,
                cpu_s, (unsigned long long)(final.lost + ss->dropped), foreign, ss->ops->mode);
    }

    if (runs_on) {
        wait_for_command(&ss->target);
        wrote = vmprofd_output_write_all(o, p, false, true) && wrote;
    }
    vmprofd_stopsignals_restore();
    int status = wrote ? 0 : 1; /* vmprofd's own failure is never hidden behind COMMAND's success */
    if (wrote && o->command && ss->target.have_status)
        status = vmprofd_target_exit_status(&ss->target);
    report_profile_free(p);
    session_free(ss);
    return status;
}
