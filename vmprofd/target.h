/*
 * vmprofd/target.h — the process being profiled: finding it (--pid) or
 * starting it (-- COMMAND), listing its threads, noticing its exit, and
 * facts about it read from /proc (owner, executable, CPU time).
 *
 * A launched command is forked at once but waits on a pipe before exec, so
 * the samplers can attach to it first (perf: enable_on_exec; ptrace: seize)
 * and see it from its first instruction; vmprofd_target_release lets it
 * exec and reports an exec failure as an error.
 *
 * Exit is watched through a pidfd (readable once the process has exited),
 * which also guards against the pid being reused while we sample.
 *
 * Who may call: vmprofd/session.c, vmprofd/sample_*.c, vmprofd/permission.c,
 * vmprofd/engine.c.
 */
#ifndef VMPROFD_TARGET_H
#define VMPROFD_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Target {
    pid_t pid;
    bool launched;    /* our child, started from -- COMMAND */
    int pidfd;        /* -1 when the kernel has no pidfd_open */
    int go_fd;        /* launch: the child execs when this is written or closed */
    int exec_fd;      /* launch: reads EOF after a successful exec, else its errno */
    bool exited;
    bool have_status; /* launched child: its wait status is known */
    int status;
    int exec_errno;   /* launch: why exec failed (0: it did not, or unknown) */
} Target;

/* --pid: checks that pid is a live process other than vmprofd itself.
 * A thread id is accepted and means its process. Answers false with
 * "no process with pid N" (or why else it cannot be a target) in err. */
bool vmprofd_target_attach(Target *t, pid_t pid, char *err, size_t errlen);

/* -- COMMAND: forks a child that waits before exec (see above). */
bool vmprofd_target_launch(Target *t, char *const argv[], char *err, size_t errlen);
/* Lets the launched child exec; false (and the child reaped) when the
 * exec failed: err says why ("cannot run 'foo': No such file or directory"). */
bool vmprofd_target_release(Target *t, char *err, size_t errlen);

/* Non-blocking: true once the target has exited. For a launched child it
 * also reaps it and records the wait status when it is still ours to reap. */
bool vmprofd_target_check_exit(Target *t);
/* A sampler reaped the child (ptrace waits for its tracees): record it. */
void vmprofd_target_set_status(Target *t, int status);
/* What vmprofd exits with for its launched COMMAND (have_status): the
 * command's exit status, 128 + the signal that killed it, else 1. */
int vmprofd_target_exit_status(const Target *t);
/* The fd to poll for exit (the pidfd), or -1. */
int vmprofd_target_exit_fd(const Target *t);
void vmprofd_target_close(Target *t);

/* Raises vmprofd's soft limit of open files to the hard one (each thread
 * of every target takes a descriptor): a command launched later gets the
 * limit vmprofd was started with. Who may call: vmprofd_main.c, first. */
void vmprofd_target_raise_fd_limit(void);

/* Thread ids of pid from /proc/PID/task, malloc'd (caller frees);
 * NULL with *n == 0 when the process is gone (errno ENOENT) or the list
 * cannot be read (errno says why: EMFILE, ENOMEM). */
pid_t *vmprofd_target_threads(pid_t pid, size_t *n);
/* Real uid of pid (/proc/PID/status). */
bool vmprofd_target_uid(pid_t pid, uid_t *uid);
/* The executable (/proc/PID/exe), "" when unreadable. */
void vmprofd_target_exe(pid_t pid, char *buf, size_t len);
/* TracerPid of pid from /proc/PID/status: 0 when not traced. */
pid_t vmprofd_target_tracer(pid_t pid);
/* Its state as /proc/PID/status words it ("S (sleeping)"); false when gone. */
bool vmprofd_target_state(pid_t pid, char *buf, size_t len);
/* Whether its command line (/proc/PID/cmdline) has arg, before a "--". */
bool vmprofd_target_has_arg(pid_t pid, const char *arg);

#endif
