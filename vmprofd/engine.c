/*
 * vmprofd/engine.c — vmprofd inside a long-running process. See engine.h.
 */
#define _GNU_SOURCE /* strchrnul */
#include "vmprofd/engine.h"

#include "proto/allocabi.h"
#include "proto/export.h"
#include "proto/identity.h"
#include "vmprofd/export_reader.h"
#include "vmprofd/permission.h"
#include "vmprofd/session.h"
#include "vmprofd/target.h"

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -- Finding the VMs ------------------------------------------------------------ */

/* The command line of pid, arguments joined by spaces, control bytes as
 * '?' (it goes into HTML, labels and logs). "" when unreadable. */
static void read_cmd(pid_t pid, char *buf, size_t len)
{
    char path[64], raw[VMPROFD_ENGINE_CMD_MAX];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    ssize_t n = prof_proc_read(path, raw, sizeof raw);
    size_t out = 0;
    for (ssize_t i = 0; n > 0 && i < n && out + 1 < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '\0') {
            if (i + 1 == n)
                break;
            c = ' ';
        } else if (c < 0x20 || c == 0x7f) {
            c = '?';
        }
        buf[out++] = (char)c;
    }
    buf[out] = '\0';
}

/* The wall-clock time pid started: the boot time (/proc/stat's btime)
 * plus its start in clock ticks; 0 when either is unknown. */
static time_t start_time(pid_t pid)
{
    ProfIdentity id;
    if (!prof_identity_of(pid, &id))
        return 0;
    char stat[8192];
    if (prof_proc_read("/proc/stat", stat, sizeof stat) <= 0)
        return 0;
    const char *b = strstr(stat, "\nbtime ");
    long hz = sysconf(_SC_CLK_TCK);
    if (!b || hz <= 0)
        return 0;
    long long btime = strtoll(b + 7, NULL, 10);
    return (time_t)(btime + (long long)(id.start_ticks / (uint64_t)hz));
}

bool vmprofd_engine_find(pid_t pid, VmprofdProcess *out)
{
    memset(out, 0, sizeof *out);
    if (pid <= 0 || pid == getpid())
        return false;
    char path[64];
    snprintf(path, sizeof path, PROF_EXPORT_PATH_FMT, (int)pid);
    if (access(path, F_OK) != 0)
        return false;
    /* alive at all (another user's process answers EPERM) */
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    out->pid = pid;
    ExportStatus st;
    char msg[512];
    ExportReader *r = vmprofd_export_open(pid, &st, msg, sizeof msg);
    if (!r && (st == VMPROFD_EXPORT_ABSENT || st == VMPROFD_EXPORT_STALE))
        return false; /* gone meanwhile, or a dead VM's segment under a reused pid */
    if (!vmprofd_target_uid(pid, &out->uid))
        out->uid = (uid_t)-1;
    read_cmd(pid, out->cmd, sizeof out->cmd);
    out->start = start_time(pid);
    if (!r) {
        snprintf(out->why, sizeof out->why, "%s", msg);
        return true;
    }
    vmprofd_export_close(r);
    if (out->uid != geteuid() && !vmprofd_permission_has_cap(CAP_SYS_PTRACE)) {
        snprintf(out->why, sizeof out->why,
                 "pid %d belongs to uid %d; vmprofd runs as uid %d without CAP_SYS_PTRACE", (int)pid,
                 (int)out->uid, (int)geteuid());
        return true;
    }
    out->may_profile = true;
    return true;
}

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const VmprofdProcess *)a)->pid, y = ((const VmprofdProcess *)b)->pid;
    return (x > y) - (x < y);
}

size_t vmprofd_engine_list(VmprofdProcess **out)
{
    *out = NULL;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    VmprofdProcess *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t pid = prof_segment_pid(e->d_name);
        if (pid == 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            VmprofdProcess *nv = realloc(v, ncap * sizeof *nv);
            if (!nv)
                break;
            v = nv;
            cap = ncap;
        }
        if (vmprofd_engine_find(pid, &v[n]))
            n++;
    }
    closedir(d);
    if (n == 0) {
        free(v);
        return 0;
    }
    qsort(v, n, sizeof *v, by_pid);
    *out = v;
    return n;
}

/* -- Profiling ------------------------------------------------------------------ */

void vmprofd_engine_options(const VmprofdEngineRequest *rq, VmprofdOptions *o)
{
    memset(o, 0, sizeof *o);
    o->pid = rq->pid;
    o->seconds = rq->seconds;
    o->seconds_given = true;
    o->event = rq->event;
    o->rate_hz = rq->rate_hz > 0                        ? rq->rate_hz
                 : rq->event == VMPROFD_EVENT_WALL ? VMPROFD_DEFAULT_WALL_RATE_HZ
                                                    : VMPROFD_DEFAULT_RATE_HZ;
    o->mode = rq->event == VMPROFD_EVENT_WALL ? VMPROFD_MODE_PTRACE : rq->mode;
    o->stack_bytes = VMPROFD_DEFAULT_STACK_BYTES;
    o->alloc_interval = rq->alloc_interval ? rq->alloc_interval : PROF_ALLOC_DEFAULT_INTERVAL;
    o->quiet = true; /* no countdown, no summary lines: the caller logs */
    o->warnings_inside = !rq->log_warnings;
}

static const volatile sig_atomic_t never_stop = 0;

Profile *vmprofd_engine_profile(const VmprofdEngineRequest *rq, char *err, size_t errlen)
{
    if (!(rq->seconds > 0)) {
        snprintf(err, errlen, "the profile's duration must be above 0 s");
        return NULL;
    }
    VmprofdOptions o;
    vmprofd_engine_options(rq, &o);
    return vmprofd_session_collect(&o, rq->stop ? rq->stop : &never_stop, err, errlen);
}

typedef struct Job {
    VmprofdEngineRequest rq;
    Profile *p;
    char err[1024];
    pthread_t thread;
    bool started;
} Job;

static void *run_job(void *arg)
{
    Job *j = arg;
    j->p = vmprofd_engine_profile(&j->rq, j->err, sizeof j->err);
    return NULL;
}

Profile *vmprofd_engine_profile_many(const VmprofdEngineRequest *rq, const pid_t *pids, const char *const *cmds,
                                     size_t n, char *err, size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "no process to profile");
        return NULL;
    }
    Job *jobs = calloc(n, sizeof *jobs);
    if (!jobs) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        jobs[i].rq = *rq;
        jobs[i].rq.pid = pids[i];
        int rc = pthread_create(&jobs[i].thread, NULL, run_job, &jobs[i]);
        jobs[i].started = rc == 0;
        if (rc != 0)
            snprintf(jobs[i].err, sizeof jobs[i].err, "cannot start a thread: %s", strerror(rc));
    }
    Profile *all = report_profile_new();
    size_t merged = 0;
    char first_err[1024] = "";
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].started)
            pthread_join(jobs[i].thread, NULL);
        if (!jobs[i].p) {
            report_profile_add_warning(all, "pid %d could not be profiled: %s", (int)pids[i], jobs[i].err);
            if (!first_err[0])
                snprintf(first_err, sizeof first_err, "pid %d: %s", (int)pids[i], jobs[i].err);
            continue;
        }
        char cmd[VMPROFD_ENGINE_CMD_MAX] = "";
        if (cmds && cmds[i])
            snprintf(cmd, sizeof cmd, "%s", cmds[i]);
        else
            read_cmd(pids[i], cmd, sizeof cmd);
        if (report_profile_merge(all, jobs[i].p, pids[i], cmd))
            merged++;
        report_profile_free(jobs[i].p);
    }
    free(jobs);
    if (merged > 0)
        report_profile_add_note(all, "%zu processes sampled at once, merged: each sample is labelled with its pid "
                                     "and command line (pprof labels pid and cmd)", merged);
    if (merged == 0) {
        snprintf(err, errlen, "%s", first_err[0] ? first_err : "no process could be profiled");
        report_profile_free(all);
        return NULL;
    }
    return all;
}
