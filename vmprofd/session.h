/*
 * vmprofd/session.h — one profiling run from attach to written outputs.
 *
 *   attach or launch ─► open the export, create the symbolizer, choose and
 *   open a sampler (perf_event, else ptrace) ─► sample until --seconds,
 *   SIGINT/SIGTERM or the target's exit (rescanning threads, refreshing
 *   the symbolizer and the countdown meanwhile) ─► detach ─► resolve the
 *   samples into a report Profile ─► write every output.
 *
 * Whatever ends the sampling, what was collected is written.
 *
 * Who may call: vmprofd/vmprofd_main.c; the collect functions: vmprofd/engine.c.
 */
#ifndef VMPROFD_SESSION_H
#define VMPROFD_SESSION_H

#include "vmprofd/options.h"

#include "report/report.h"

#include <signal.h>
#include <sys/types.h>

/* Answers the process exit status: 0 written, 1 could not profile or
 * could not write an output. Messages go to stderr. */
int vmprofd_session_run(const VmprofdOptions *o);

/* --event alloc (vmprofd/alloc_session.c): the VM samples its allocations
 * and vmprofd reads them; same exit statuses. */
int vmprofd_alloc_session_run(const VmprofdOptions *o);

/* The same run without the command line's outputs, signals or privilege
 * dropping (vmprofd/engine.c; -- COMMAND is the command line's alone):
 * samples o->pid until o->seconds, *stop becoming nonzero or the target's
 * exit, and answers the profile (warnings and notes inside; the caller
 * frees it), or NULL with the reason in err. Reentrant: each call has its
 * own state, so several may run in threads at once. */
Profile *vmprofd_session_collect(const VmprofdOptions *o, const volatile sig_atomic_t *stop, char *err, size_t errlen);
Profile *vmprofd_alloc_session_collect(const VmprofdOptions *o, const volatile sig_atomic_t *stop, char *err,
                                       size_t errlen);


#endif
