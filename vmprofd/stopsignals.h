/*
 * vmprofd/stopsignals.h — SIGINT, SIGTERM and SIGHUP for a one-shot profile
 * (session.c, alloc_session.c): they stop sampling and the profile is
 * written, as perf record does; once a launched COMMAND runs they are
 * passed to it instead (perf and py-spy do so), and vmprofd ends when it
 * ends. SIGPIPE and SIGXFSZ are ignored so a closed stdout or a file size
 * limit is a failed write that is said, not a death.
 *
 * `record` and `serve` have their own handling (they run until told to stop).
 */
#ifndef VMPROFD_STOPSIGNALS_H
#define VMPROFD_STOPSIGNALS_H

#include <signal.h>
#include <sys/types.h>

/* Clears the flag and the forwarding, then installs the handlers. */
void vmprofd_stopsignals_install(void);
/* The three signals back to their default action. */
void vmprofd_stopsignals_restore(void);
/* The signal that asked to stop, or 0. */
const volatile sig_atomic_t *vmprofd_stopsignals_flag(void);
/* From now on the signals go to pid (a launched command). */
void vmprofd_stopsignals_forward_to(pid_t pid);
/* The last signal passed on to that pid, or 0. */
int vmprofd_stopsignals_forwarded(void);

#endif
