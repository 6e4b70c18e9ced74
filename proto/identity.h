/*
 * proto/identity.h — which process a pid names: its start time and the boot
 * it started in, as the export segment records them (proto/export.h,
 * version 4). The writer (stvm, for itself) and the readers (vmprofd, for
 * its target) compute them here, the same way, so they compare equal
 * exactly when they describe one process.
 *
 * A pid is reused; (boot id, start ticks, pid) is not: two processes with
 * one pid cannot start in the same clock tick, since the first must have
 * exited and been reaped before the kernel hands its pid out again.
 *
 * The library proto_identity (proto/identity.c) links nothing but libc:
 * plain /proc reads, no allocation.
 *
 * Who may include: profiler/publish.c, vmprofd/, tests.
 */
#ifndef PROTO_IDENTITY_H
#define PROTO_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ProfIdentity {
    uint64_t start_ticks; /* /proc/PID/stat field 22 */
    char boot_id[40];     /* /proc/sys/kernel/random/boot_id, "" when unknown */
} ProfIdentity;

/* Reads at most len - 1 bytes of a small file (/proc's) into buf,
 * NUL-terminated, retrying short reads; the bytes read, -1 when it cannot
 * be opened. The one /proc reader of stvm's profiler side and vmprofd. */
ssize_t prof_proc_read(const char *path, char *buf, size_t len);

/* The identity of pid (0: this process). false when the process is gone;
 * boot_id stays "" on a kernel without it (then only start_ticks count). */
bool prof_identity_of(pid_t pid, ProfIdentity *out);
bool prof_identity_equal(const ProfIdentity *a, const ProfIdentity *b);

/* Whether the process whose identity is id still runs as pid. */
typedef enum ProfProcessState {
    PROF_PROCESS_ALIVE,
    PROF_PROCESS_GONE,    /* no process has the pid, another one has it, or it exited (a zombie) */
    PROF_PROCESS_UNKNOWN, /* the pid is taken but /proc could not be read (out of file descriptors,
                           * of memory): not proof of an exit */
} ProfProcessState;
ProfProcessState prof_process_state(pid_t pid, const ProfIdentity *id);

/* What a segment's header says of its maker, against the process that now
 * has its pid. */
typedef enum ProfSegmentOwner {
    PROF_SEGMENT_OURS,      /* the process with that pid made it */
    PROF_SEGMENT_STALE,     /* its maker is gone: no process has the pid, or another one does */
    PROF_SEGMENT_UNKNOWN,   /* cannot tell: a segment older than version 4, or still being made */
} ProfSegmentOwner;

/* header: the segment's first bytes (len of them); pid: the pid it is named for. */
ProfSegmentOwner prof_segment_owner(const void *header, size_t len, pid_t pid);

/* Removes the segments in /dev/shm that are provably stale and that this
 * process may remove (its own user's; root: anyone's): those of pids no
 * process has, and those whose maker's identity differs from the live
 * process with that pid. Each is re-checked by inode just before its
 * unlink, so a segment made meanwhile by a new process is kept. The
 * caller's own pid and spare (0: none) are left alone: vmprofd spares its
 * target's, to say what it found there. Answers how many were removed.
 * Cheap: one readdir of /dev/shm. */
int prof_segment_sweep(pid_t spare);

/* The pid an export segment's file name in /dev/shm names ("stvm-<digits>",
 * a pid in range), else 0: for whoever lists the segments. */
pid_t prof_segment_pid(const char *name);

#endif
