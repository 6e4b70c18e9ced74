/*
 * vmprofd/alloc_session.c — one `vmprofd --event alloc` run: the VM samples
 * its own allocations (proto/allocabi.h) and vmprofd asks for them, reads
 * them and reports "who allocates".
 *
 *   attach (--pid)       write the request (interval, then request_until_ns
 *                        last), renew its lease at every poll, read the
 *                        allocation log and the code event log; at the end
 *                        (--live) raise request_live and wait, bounded, for
 *                        the VM's LIVE answer; then cancel (interval 0)
 *   launch (-- COMMAND)  the command starts with STVM_ALLOC_SAMPLE=<interval>
 *                        (and STVM_ALLOC_SAMPLE_LIVE=1 with --live) so its
 *                        start-up is sampled; the VM writes its final STOP
 *                        and LIVE as it exits, read through the descriptor
 *                        that outlives its unlink of the segment
 *
 * No perf_event or ptrace: nothing stops or traces the target. Samples
 * resolve through the code timeline and the resolve pipeline of CPU
 * samples (report/allocprof.h). What was lost is said, never guessed.
 */
#define _GNU_SOURCE /* strsignal */
#include "vmprofd/session.h"
#include "vmprofd/stopsignals.h"

#include "report/allocprof.h"
#include "report/alloclog_reader.h"
#include "report/report.h"
#include "report/resolve.h"
#include "report/symbolize.h"
#include "vmprofd/export_reader.h"
#include "vmprofd/codelog_poll.h"
#include "vmprofd/output.h"
#include "vmprofd/target.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Log polls: the next poll comes when the VM will have written about
 * 1/ALLOC_POLL_FRACTION of the ring at the rate it wrote since the last
 * one, never later than ALLOC_POLL_MAX_MS nor sooner than ALLOC_POLL_MIN_MS.
 * A fixed period does not do: AllocMethods under the JIT writes an 8 MiB
 * ring in 0.1 s at the default interval, and a loaded machine wakes
 * vmprofd late, so the margin must grow with the rate. Until the VM has
 * written something (a launched command booting) the polls are short: the
 * first burst must not find vmprofd asleep. A poll with nothing new is
 * two preads, so even the longest period costs nothing measurable. */
#define ALLOC_POLL_MAX_MS 20
#define ALLOC_POLL_MIN_MS 1
#define ALLOC_POLL_START_MS 5
#define ALLOC_POLL_FRACTION 16
/* How long a launched command may take to publish its export segment. */
#define ALLOC_EXPORT_WAIT_MS 5000
/* --live: how long the VM may take to reach a safe point, collect and
 * answer (a VM blocked in a system call answers when it wakes). */
#define ALLOC_LIVE_WAIT_MS 5000

typedef struct AllocSession {
    const VmprofdOptions *o;
    Target target;
    ExportReader *exp;
    ProfAllocLogControl *req; /* the request, mapped */
    ReportAllocLog log;
    bool log_open;
    CodeLogPoll code;
    char code_why[512];
    Symbolizer *sym;
    char exe[PROF_EXPORT_PATH_MAX];
    char cwd[4096];
    ProfCounters start, end;
    bool have_start, have_end;
    uint64_t warnings;        /* allocation log warnings */
    char first_warning[256];
    uint64_t live_asked;      /* the request_live value we wait for; 0: none */
    bool live_timed_out;
    const volatile sig_atomic_t *stop; /* nonzero: stop sampling (a signal's number) */
} AllocSession;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    /* interrupted by a signal: the loop looks at it sooner */
    poll(NULL, 0, ms);
}

/* -- The request ---------------------------------------------------------------- */

/* proto/allocabi.h: interval and live flags first, request_until_ns last
 * (release); the VM reads request_until_ns first (acquire). */
static void renew(AllocSession *as)
{
    if (as->req)
        __atomic_store_n(&as->req->request_until_ns, now_ns() + PROF_ALLOC_LEASE_NS, __ATOMIC_RELEASE);
}

static void request(AllocSession *as, uint64_t interval)
{
    if (!as->req)
        return;
    __atomic_store_n(&as->req->request_interval, interval, __ATOMIC_RELAXED);
    renew(as);
}

/* -- Reading -------------------------------------------------------------------- */

static void poll_logs(AllocSession *as)
{
    if (as->log_open) {
        char warn[256];
        report_alloclog_poll(&as->log, warn, sizeof warn);
        if (warn[0]) {
            if (as->warnings++ == 0)
                snprintf(as->first_warning, sizeof as->first_warning, "%s", warn);
            if (as->warnings <= VMPROFD_CODELOG_MAX_PRINTED && !as->o->quiet)
                fprintf(stderr, "vmprofd: warning: %s\n", warn);
        }
    }
    vmprofd_codelog_poll(&as->code);
}

/* How long to sleep after a poll that found `written` bytes `elapsed_ns`
 * after the one before (see ALLOC_POLL_FRACTION). */
static int next_poll_ms(const AllocSession *as, uint64_t written, uint64_t elapsed_ns)
{
    if (as->log.pos == 0)
        return ALLOC_POLL_START_MS;
    if (written == 0)
        return ALLOC_POLL_MAX_MS;
    double ms = (double)(as->log.ring.ring_size / ALLOC_POLL_FRACTION) * ((double)elapsed_ns / 1e6) / (double)written;
    return ms < ALLOC_POLL_MIN_MS ? ALLOC_POLL_MIN_MS : ms > ALLOC_POLL_MAX_MS ? ALLOC_POLL_MAX_MS : (int)ms;
}

static void ensure_symbolizer(AllocSession *as)
{
    if (as->sym) {
        report_symbolizer_refresh(as->sym);
        return;
    }
    const ProfExportHeader *h = vmprofd_export_header(as->exp);
    char err[512];
    as->sym = report_symbolizer_new(as->target.pid, h->vm_path[0] ? h->vm_path : NULL, h->code_zone_start,
                                    h->code_zone_end, err, sizeof err);
}

/* Opens the target's export and checks that it can sample allocations;
 * false with what to do in why. */
static bool open_export(AllocSession *as, char *why, size_t whylen)
{
    int pid = (int)as->target.pid;
    ExportStatus status;
    char msg[512];
    as->exp = vmprofd_export_open(as->target.pid, &status, msg, sizeof msg);
    if (!as->exp) {
        bool no_export = vmprofd_target_has_arg(as->target.pid, "--no-export");
        vmprofd_target_exe(as->target.pid, as->exe, sizeof as->exe);
        const char *slash = strrchr(as->exe, '/');
        bool stvm = strncmp(slash ? slash + 1 : as->exe, "stvm", 4) == 0;
        if (status == VMPROFD_EXPORT_ABSENT && no_export)
            snprintf(why, whylen, "pid %d is an stvm run with --no-export: it publishes no allocation samples (run it "
                                  "without --no-export)", pid);
        else if (status == VMPROFD_EXPORT_ABSENT && !stvm)
            snprintf(why, whylen, "pid %d (%s) is not an stvm: --event alloc needs the VM's allocation sampler "
                                  "(use --event cpu for other programs)", pid, as->exe[0] ? as->exe : "executable unknown");
        else
            snprintf(why, whylen, "%s: --event alloc needs the VM's export segment", msg);
        return false;
    }
    const ProfExportHeader *h = vmprofd_export_header(as->exp);
    if (h->version < PROF_EXPORT_VERSION_ALLOC || h->header_size < sizeof(ProfExportHeader)) {
        snprintf(why, whylen, "pid %d runs an stvm older than export version %d (it has %" PRIu32 "): it cannot sample "
                              "allocations (use a newer stvm, or --event cpu)", pid, PROF_EXPORT_VERSION_ALLOC, h->version);
        return false;
    }
    if (!vmprofd_export_has_alloc_log(as->exp)) {
        snprintf(why, whylen, "pid %d is an stvm run with its allocation log turned off (--no-alloc-log): run "
                              "it without that option to sample allocations", pid);
        return false;
    }
    char err[256];
    if (!report_alloclog_open(&as->log, h->alloc_log_size, vmprofd_export_read_alloc_log, as->exp, as->target.launched,
                              err, sizeof err)) {
        snprintf(why, whylen, "pid %d's allocation log is unusable: %s", pid, err);
        return false;
    }
    as->log_open = true;
    as->req = vmprofd_export_alloc_request(as->exp, err, sizeof err);
    if (!as->req) {
        snprintf(why, whylen, "cannot ask pid %d for allocation samples: %s", pid, err);
        return false;
    }
    as->have_start = vmprofd_export_read_counters(as->exp, &as->start, err, sizeof err);
    if (!vmprofd_codelog_open(&as->code, as->exp, as->o->quiet, as->code_why, sizeof as->code_why) &&
        !as->o->warnings_inside)
        fprintf(stderr, "vmprofd: warning: %s\n", as->code_why);
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/cwd", pid);
    ssize_t n = readlink(link, as->cwd, sizeof as->cwd - 1);
    as->cwd[n > 0 ? n : 0] = '\0';
    vmprofd_target_exe(as->target.pid, as->exe, sizeof as->exe);
    ensure_symbolizer(as);
    return true;
}

/* Launch mode: the command with the request in its environment, released
 * at once; its export appears as it boots. */
static bool launch(AllocSession *as, char *why, size_t whylen)
{
    char interval[32];
    snprintf(interval, sizeof interval, "%" PRIu64, as->o->alloc_interval);
    setenv(PROF_ALLOC_SAMPLE_ENV, interval, 1);
    if (as->o->live)
        setenv(PROF_ALLOC_SAMPLE_LIVE_ENV, "1", 1);
    bool ok = vmprofd_target_launch(&as->target, as->o->command, why, whylen);
    unsetenv(PROF_ALLOC_SAMPLE_ENV);
    unsetenv(PROF_ALLOC_SAMPLE_LIVE_ENV);
    if (!ok)
        return false;
    char err[512];
    if (!vmprofd_target_release(&as->target, err, sizeof err)) {
        snprintf(why, whylen, "cannot run '%s': %s", as->o->command[0],
                 strncmp(err, "cannot run the command: ", 24) == 0 ? err + 24 : err);
        return false;
    }
    vmprofd_stopsignals_forward_to(as->target.pid);
    uint64_t deadline = now_ns() + ALLOC_EXPORT_WAIT_MS * 1000000ull;
    for (;;) {
        ExportStatus status;
        char msg[512];
        ExportReader *probe = vmprofd_export_open(as->target.pid, &status, msg, sizeof msg);
        if (probe) {
            vmprofd_export_close(probe);
            return open_export(as, why, whylen);
        }
        if (vmprofd_target_check_exit(&as->target) || now_ns() > deadline) {
            bool exited = as->target.exited || vmprofd_target_check_exit(&as->target);
            bool no_export = false;
            for (char **a = as->o->command + 1; *a && strcmp(*a, "--") != 0; a++)
                no_export |= strcmp(*a, "--no-export") == 0;
            if (no_export)
                snprintf(why, whylen, "'%s' runs with --no-export: it publishes no allocation samples (run it without "
                                      "--no-export)", as->o->command[0]);
            else
                snprintf(why, whylen, "'%s' %s without publishing an stvm export segment: --event alloc needs an "
                                      "stvm (use --event cpu for other programs)", as->o->command[0],
                         exited ? "exited" : "ran for 5 s");
            return false;
        }
        sleep_ms(1);
    }
}

/* -- The end -------------------------------------------------------------------- */

/* --live, the VM still running: ask, and wait (bounded) for the answer. */
static void ask_live(AllocSession *as)
{
    if (!as->req)
        return;
    uint64_t want = __atomic_load_n(&as->req->request_live, __ATOMIC_ACQUIRE) + 1;
    __atomic_store_n(&as->req->request_live, want, __ATOMIC_RELAXED);
    renew(as);
    as->live_asked = want;
    uint64_t deadline = now_ns() + ALLOC_LIVE_WAIT_MS * 1000000ull;
    while (now_ns() < deadline) {
        sleep_ms(10);
        renew(as);
        poll_logs(as);
        if (as->log.have_live && as->log.live_answers == want)
            return;
        if (vmprofd_target_check_exit(&as->target))
            break; /* its exit-time answer, if it wrote one, is in the log */
    }
    poll_logs(as);
    if (!(as->log.have_live && (as->log.live_answers == want || as->log.live_answers == PROF_ALLOC_LIVE_AT_EXIT)))
        as->live_timed_out = true;
}

/* What the profile cannot show: collected while it is built, then at the
 * top of the report and on stderr (-q does not silence them). */
typedef struct Warnings {
    char text[8][512];
    int n;
} Warnings;

static void warn(Warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(Warnings *w, const char *fmt, ...)
{
    if (w->n == (int)(sizeof w->text / sizeof w->text[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text[w->n++], sizeof w->text[0], fmt, ap);
    va_end(ap);
}

static Profile *build_profile(AllocSession *as, time_t start_wall, double seconds, const char *stop_note)
{
    const VmprofdOptions *o = as->o;
    Profile *p = report_profile_new();
    const ProfExportHeader *eh = vmprofd_export_header(as->exp);
    const ReportAllocLog *lg = &as->log;
    ReportHeader h;
    memset(&h, 0, sizeof h);
    h.vm_path = eh->vm_path[0] ? eh->vm_path : as->exe;
    h.start_wall = start_wall;
    h.seconds = seconds;
    h.mode = "the VM's allocation sampler";
    h.lost_samples = lg->stats.lost + lg->stats.dropped;
    h.have_counters = as->have_start && as->have_end;
    if (h.have_counters) {
        h.start = as->start;
        h.end = as->end;
    }
    report_profile_set_header(p, &h);
    int pid = (int)as->target.pid;
    Warnings ws = {.n = 0};
    Warnings *w = &ws;
    if (lg->stats.lost)
        warn(w, "%" PRIu64 " records of the allocation log were lost before vmprofd read them (the VM overwrote them "
                "%" PRIu64 " time%s): the estimates are short by about that many samples' bytes", lg->stats.lost,
             lg->stats.overruns, lg->stats.overruns == 1 ? "" : "s");
    if (lg->stats.bad_records)
        warn(w, "%" PRIu64 " damaged records of the allocation log were skipped", lg->stats.bad_records);
    if (lg->stats.dropped)
        warn(w, "%" PRIu64 " samples dropped: out of memory", lg->stats.dropped);
    if (lg->n == 0)
        warn(w, "no allocation samples: pid %d %s", pid,
             lg->stats.starts || lg->sampling
                 ? "allocated less than the interval while sampled"
                 : "never started sampling (a VM looks at requests when it allocates or collects: it allocated "
                   "nothing, or was blocked)");
    if (o->live && !lg->have_live)
        warn(w, "--live: pid %d never said what stayed alive%s", pid,
             as->live_timed_out ? " (it did not answer within 5 s: blocked, or not at a safe point)"
             : as->target.exited ? " (it exited without its exit-time answer: killed, or it did not exit normally)"
                                 : "");
    uint64_t untracked = 0;
    for (size_t i = 0; i < lg->n; i++)
        untracked += (lg->v[i].flags & PROF_ALLOC_F_UNTRACKED) != 0;
    if (o->live && lg->have_live && lg->n && untracked == lg->n)
        warn(w, "--live: pid %d followed none of its %zu sampled objects (it cannot follow objects, or its table was "
                "full): what stayed alive is unknown", pid, lg->n);
    else if (o->live && lg->have_live && untracked)
        warn(w, "--live: pid %d did not follow %" PRIu64 " of its %zu sampled objects (its table was full): the live "
                "figures leave them out and are low by up to %.1f%%", pid, untracked, lg->n,
             100.0 * (double)untracked / (double)lg->n);
    for (int i = 0; i < ws.n; i++) {
        report_profile_add_warning(p, "%s", ws.text[i]);
        if (!as->o->warnings_inside)
            fprintf(stderr, "vmprofd: warning: %s\n", ws.text[i]);
    }
    if (as->warnings)
        report_profile_add_note(p, "allocation log: %" PRIu64 " warning%s (first: %s)", as->warnings,
                                as->warnings == 1 ? "" : "s", as->first_warning);
    if (as->target.exited) {
        char st[128] = "";
        if (as->target.have_status && WIFEXITED(as->target.status))
            snprintf(st, sizeof st, " (exit status %d)", WEXITSTATUS(as->target.status));
        else if (as->target.have_status && WIFSIGNALED(as->target.status))
            snprintf(st, sizeof st, " (killed by signal %d, %s)", WTERMSIG(as->target.status),
                     strsignal(WTERMSIG(as->target.status)));
        report_profile_add_note(p, "target exited after %.3f s%s", seconds, st);
    }
    if (stop_note[0])
        report_profile_add_note(p, "%s", stop_note);
    if (lg->stop_why == PROF_ALLOC_STOP_LAPSED)
        report_profile_add_note(p, "the VM stopped sampling once: vmprofd's request lapsed (it did not renew it in "
                                   "time)");
    if (!as->code.active && as->code_why[0])
        report_profile_add_note(p, "%s", as->code_why);
    vmprofd_codelog_notes(&as->code, p);
    ResolveCode code = {
        .map = as->code.active ? as->code.map : NULL,
        .zone_start = eh->code_zone_start,
        .zone_end = eh->code_zone_end,
        .cwd = as->cwd[0] ? as->cwd : NULL,
        .interp_fn = as->code.active && as->code.log.control.interp_ip_reg ? as->code.log.control.interp_fn : 0,
    };
    ProfWalkFacts f;
    char why[128];
    if (vmprofd_export_walk_facts(as->exp, &f, why, sizeof why))
        code.return_to_interpreter = f.return_to_interpreter;
    report_alloc_build(p, lg, o->live, o->alloc_interval, as->sym, &code);
    if (code.lost || code.before)
        report_profile_add_note(p, "%" PRIu64 " frames in JIT'd code could not be attributed: %" PRIu64
                                   " while code events were missing, %" PRIu64 " before the code log began",
                                code.lost + code.before, code.lost, code.before);
    return p;
}

static AllocSession *alloc_new(const VmprofdOptions *o, const volatile sig_atomic_t *stop)
{
    AllocSession *as = calloc(1, sizeof *as);
    if (!as)
        return NULL;
    as->o = o;
    as->stop = stop;
    as->target.pidfd = as->target.go_fd = as->target.exec_fd = -1;
    return as;
}

static void alloc_free(AllocSession *as)
{
    if (as->log_open)
        report_alloclog_close(&as->log);
    vmprofd_codelog_close(&as->code);
    if (as->sym)
        report_symbolizer_free(as->sym);
    vmprofd_export_close(as->exp);
    vmprofd_target_close(&as->target);
    free(as);
}

/* Attaches (or launches), samples until the time is up, *as->stop or the
 * target's exit, and builds the profile in *out: 0. Else the exit status
 * for the command line, with why in why (a launched command that could not
 * be profiled has been waited for). */
static int alloc_collect(AllocSession *as, Profile **out, char *why, size_t whylen)
{
    const VmprofdOptions *o = as->o;
    *out = NULL;
    bool ok;
    if (o->command) {
        ok = launch(as, why, whylen);
    } else {
        ok = vmprofd_target_attach(&as->target, o->pid, why, whylen) && open_export(as, why, whylen);
        if (ok)
            request(as, o->alloc_interval);
    }
    if (!ok) {
        int code = as->target.exec_errno == ENOENT ? 127 : as->target.exec_errno ? 126 : 1;
        if (as->target.launched && !as->target.exited) {
            /* a launched command runs on unprofiled; vmprofd waits for it */
            int status;
            while (waitpid(as->target.pid, &status, 0) < 0 && errno == EINTR)
                ;
        }
        return code;
    }
    if (!o->quiet)
        fprintf(stderr, "vmprofd: sampling the allocations of pid %d, one sample per %" PRIu64 " bytes on average\n",
                (int)as->target.pid, o->alloc_interval);

    bool capped = !o->command || o->seconds_given;
    time_t start_wall = time(NULL);
    uint64_t t0 = now_ns(), last_house = t0, last_poll = t0;
    double seconds = 0;
    char stop_note[256] = "";
    for (;;) {
        uint64_t now = now_ns();
        seconds = (double)(now - t0) / 1e9;
        if (capped && seconds >= o->seconds) {
            seconds = o->seconds;
            break;
        }
        int sig = *as->stop;
        if (sig) {
            if (sig > 0) /* VMPROFD_ENGINE_CUT (engine.h): nothing to note */
                snprintf(stop_note, sizeof stop_note, "stopped by %s after %.3f s", strsignal(sig), seconds);
            break;
        }
        if (vmprofd_target_check_exit(&as->target)) {
            as->target.exited = true;
            break;
        }
        renew(as);
        uint64_t before = as->log.pos;
        poll_logs(as);
        if (now - last_house >= 250000000ull) {
            last_house = now;
            ensure_symbolizer(as);
        }
        sleep_ms(next_poll_ms(as, as->log.pos - before, now - last_poll));
        last_poll = now;
    }
    char err[256];
    as->have_end = vmprofd_export_read_counters(as->exp, &as->end, err, sizeof err);
    if (!as->target.exited) {
        ensure_symbolizer(as);
        poll_logs(as);
        if (o->live)
            ask_live(as);
        request(as, 0); /* cancelled: the VM writes its STOP at its next poll */
        for (int i = 0; i < 20 && !as->log.stop_why && !vmprofd_target_check_exit(&as->target); i++) {
            sleep_ms(5);
            poll_logs(as);
        }
    }
    poll_logs(as); /* the final records (at exit: STOP, LIVE); the descriptor outlives the unlink */
    if (as->target.launched && as->target.exited && !as->target.have_status)
        vmprofd_target_check_exit(&as->target);
    *out = build_profile(as, start_wall, seconds, stop_note);
    if (!o->quiet)
        fprintf(stderr, "vmprofd: %zu allocation samples in %.3f s, %" PRIu64 " lost\n", as->log.n, seconds,
                as->log.stats.lost);
    return 0;
}

Profile *vmprofd_alloc_session_collect(const VmprofdOptions *o, const volatile sig_atomic_t *stop, char *err,
                                       size_t errlen)
{
    AllocSession *as = alloc_new(o, stop);
    if (!as) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    Profile *p = NULL;
    alloc_collect(as, &p, err, errlen);
    alloc_free(as);
    return p;
}

int vmprofd_alloc_session_run(const VmprofdOptions *o)
{
    if (!vmprofd_output_check_all(o))
        return 1;
    vmprofd_stopsignals_install();
    AllocSession *as = alloc_new(o, vmprofd_stopsignals_flag());
    if (!as) {
        fprintf(stderr, "vmprofd: out of memory\n");
        vmprofd_stopsignals_restore();
        return 1;
    }
    char why[1024];
    Profile *p;
    int code = alloc_collect(as, &p, why, sizeof why);
    if (code != 0) {
        fprintf(stderr, "vmprofd: %s\n", why);
        alloc_free(as);
        vmprofd_stopsignals_restore();
        return code;
    }
    bool runs_on = o->command && !as->target.exited;
    bool wrote = vmprofd_output_write_all(o, p, true, !runs_on);
    if (runs_on) {
        int status;
        pid_t r;
        while ((r = waitpid(as->target.pid, &status, 0)) < 0 && errno == EINTR)
            ;
        if (r == as->target.pid)
            vmprofd_target_set_status(&as->target, status);
        wrote = vmprofd_output_write_all(o, p, false, true) && wrote;
    }
    vmprofd_stopsignals_restore();
    int status = wrote ? 0 : 1;
    if (wrote && o->command && as->target.have_status)
        status = vmprofd_target_exit_status(&as->target);
    report_profile_free(p);
    alloc_free(as);
    return status;
}
