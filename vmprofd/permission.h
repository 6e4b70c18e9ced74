/*
 * vmprofd/permission.h — why the kernel refused to let us sample, and
 * what the user can do about it.
 *
 * The kernel answers EACCES/EPERM for half a dozen reasons; these functions
 * look at the settings that decide (kernel.perf_event_paranoid,
 * kernel.yama.ptrace_scope, our capabilities, the target's owner, an
 * existing tracer) and write one sentence naming the cause and the fix,
 * e.g. "perf_event refused: kernel.perf_event_paranoid is 3 (need <= 2 for
 * user-space profiling of your own processes, or CAP_PERFMON); to allow
 * it: sudo sysctl -w kernel.perf_event_paranoid=2".
 *
 * Who may call: vmprofd/sample_perf.c, vmprofd/sample_ptrace.c.
 */
#ifndef VMPROFD_PERMISSION_H
#define VMPROFD_PERMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* errnum: what perf_event_open answered for a thread of pid. */
void vmprofd_permission_explain_perf(pid_t pid, int errnum, char *buf, size_t len);
/* errnum: what PTRACE_SEIZE answered for a thread of pid. */
void vmprofd_permission_explain_ptrace(pid_t pid, int errnum, char *buf, size_t len);

/* kernel.perf_event_paranoid, or -100 when the file is missing. */
int vmprofd_permission_perf_paranoid(void);
/* Whether vmprofd's effective capabilities include capability cap. */
bool vmprofd_permission_has_cap(int cap);

#endif
