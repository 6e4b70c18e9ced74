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
 * Who may call: vmprofd/sample_perf.c, vmprofd/sample_ptrace.c; the
 * dropping of privileges below: vmprofd/session.c.
 */
#ifndef VMPROFD_PERMISSION_H
#define VMPROFD_PERMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* errnum: what perf_event_open answered for a thread of pid. */
void vmprofd_permission_explain_perf(pid_t pid, int errnum, char *buf, size_t len);
/* errnum: what PTRACE_SEIZE answered for a thread of pid. */
void vmprofd_permission_explain_ptrace(pid_t pid, int errnum, char *buf, size_t len);

/* -- Least privilege ------------------------------------------------------
 *
 * What each mode needs once its sampler runs (docs/vmprofd.md, "Privileges"):
 *   perf_event  CAP_PERFMON (events on threads the target starts later;
 *               CAP_SYS_ADMIN on kernels before 5.8, which lack it) and
 *               CAP_BPF (the eBPF walker is attached to each new event)
 *   ptrace      CAP_SYS_PTRACE
 * and in either mode, for a target of another user or with capabilities
 * we would not keep: CAP_SYS_PTRACE (its memory, /proc/PID/maps), and for
 * another user's target CAP_DAC_READ_SEARCH (its export segment, mode
 * 0600); CAP_DAC_OVERRIDE when an output (o's files) could not be written
 * by our uid and groups alone. Every other capability is dropped from the
 * effective, permitted, inheritable, ambient and bounding sets, so nothing
 * vmprofd reads from the target can make use of them.
 *
 * mode: the sampler's SamplerOps.mode ("ptrace", "perf_event ..."); pid
 * the target; o the options (outputs). True when done (or nothing was
 * held); false with the reason in err, the capabilities then unchanged.
 * Who may call: vmprofd/session.c, once the sampler has started. */
struct VmprofdOptions;
bool vmprofd_permission_drop(const char *mode, pid_t pid, const struct VmprofdOptions *o, char *err, size_t len);
/* The capabilities vmprofd_permission_drop keeps, as a CapEff mask. */
uint64_t vmprofd_permission_needed(const char *mode, pid_t pid, const struct VmprofdOptions *o);

/* kernel.perf_event_paranoid, or -100 when the file is missing. */
int vmprofd_permission_perf_paranoid(void);
/* Whether vmprofd's effective capabilities include capability cap. */
bool vmprofd_permission_has_cap(int cap);

#endif
