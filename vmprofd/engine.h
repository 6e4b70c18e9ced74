/*
 * vmprofd/engine.h — vmprofd as a library inside a long-running process
 * (vmprofd serve, vmprofd record): which stvm processes there are to
 * profile, and one profile of one or several of them, answered as a
 * Profile (report/report.h) that any renderer writes.
 *
 *   vmprofd_engine_list     the live stvm processes that publish an export
 *                           segment (/dev/shm/stvm-<pid>, proto/export.h),
 *                           each with whether this process may profile it
 *   vmprofd_engine_profile  samples one pid (--event cpu, wall or alloc)
 *                           for a time, or until *stop; the same run as
 *                           `vmprofd -p PID` (vmprofd/session.c), without
 *                           its outputs, signal handlers or dropping of
 *                           privileges
 *   vmprofd_engine_profile_many
 *                           several pids at once, a thread each, merged
 *                           into one profile with the sample labels "pid"
 *                           and "cmd" (report_profile_merge)
 *
 * Thread-safe: every call has its own state; several may run at once in
 * different threads (a ptrace sampler waits for its own thread's tracees
 * only). Nothing here exits, prints to stdout or changes signal handling;
 * what a profile cannot show is among its warnings (on stderr too when
 * asked: log_warnings).
 *
 * Who may call: vmprofd/serve*.c, vmprofd/record*.c, tests.
 */
#ifndef VMPROFD_ENGINE_H
#define VMPROFD_ENGINE_H

#include "report/report.h"
#include "vmprofd/options.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define VMPROFD_ENGINE_CMD_MAX 512

typedef struct VmprofdProcess {
    pid_t pid;
    uid_t uid;                          /* its real user */
    time_t start;                       /* when it started (wall clock, s); 0: unknown */
    char cmd[VMPROFD_ENGINE_CMD_MAX];   /* its command line, arguments joined by spaces, cut to fit */
    bool may_profile;                   /* this process can read its export segment and sample it */
    char why[600];                      /* when not: why ("owned by uid 0; vmprofd runs as uid 65534 ...") */
} VmprofdProcess;

/* The live stvm processes with an export segment, sorted by pid, in a
 * malloc'd array (*out; the caller frees it; NULL when none): answers how
 * many. Dead VMs' segments (SIGKILL leaves them) are not listed. */
size_t vmprofd_engine_list(VmprofdProcess **out);

/* One of them by pid: true when pid is a live stvm with an export segment
 * (may_profile then says whether this process may profile it). */
bool vmprofd_engine_find(pid_t pid, VmprofdProcess *out);

typedef struct VmprofdEngineRequest {
    pid_t pid;
    VmprofdEvent event;       /* cpu, wall or alloc */
    double seconds;           /* > 0 */
    double rate_hz;           /* 0: the command line's default for the event */
    uint64_t alloc_interval;  /* --event alloc: 0: the default (proto/allocabi.h) */
    VmprofdMode mode;         /* VMPROFD_MODE_AUTO: perf_event, else ptrace */
    /* Nonzero: stop now and answer what was collected (shutdown: the
     * signal's number, which the profile notes; VMPROFD_ENGINE_CUT: the
     * caller's interval ends, noted nowhere). NULL: run the whole time.
     * Set it from any thread or a signal handler. */
    const volatile sig_atomic_t *stop;
    /* Also say the profile's warnings on stderr ("vmprofd: warning: ..."),
     * as the command line does; false: they are inside the profile only. */
    bool log_warnings;
} VmprofdEngineRequest;

/* *stop's value for an end the caller chose (vmprofd record's interval
 * boundaries), not a signal. */
#define VMPROFD_ENGINE_CUT (-1)

/* Samples rq->pid; the profile (the caller frees it), or NULL with a
 * one-line reason in err. */
Profile *vmprofd_engine_profile(const VmprofdEngineRequest *rq, char *err, size_t errlen);

/* Each of pids (cmds[i] its command line for the "cmd" label; cmds may be
 * NULL) sampled at once with rq's event, rate and time, each in its own
 * thread, merged into one profile. A pid that could not be profiled is a
 * warning in it; NULL (err says why) only when none could. */
Profile *vmprofd_engine_profile_many(const VmprofdEngineRequest *rq, const pid_t *pids, const char *const *cmds,
                                     size_t n, char *err, size_t errlen);

/* The request's options as the command line would have them (tests). */
void vmprofd_engine_options(const VmprofdEngineRequest *rq, VmprofdOptions *o);

#endif
