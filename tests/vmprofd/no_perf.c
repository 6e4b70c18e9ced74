/*
 * tests/vmprofd/no_perf.c — runs a command on which the kernel refuses
 * perf_event_open, as a hardened kernel or a container would.
 *
 *   no_perf ERRNO COMMAND [ARGS...]      ERRNO: EACCES, EPERM, ENOENT or ENOSYS
 *
 * Installs a seccomp filter (real kernel policy, inherited across exec)
 * that makes perf_event_open fail with ERRNO and allows everything else,
 * then execs COMMAND. The tests use it to drive vmprofd's fallback from
 * perf_event to ptrace.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: no_perf EACCES|EPERM|ENOENT|ENOSYS COMMAND [ARGS...]\n");
        return 2;
    }
    int err = strcmp(argv[1], "EACCES") == 0   ? EACCES
              : strcmp(argv[1], "EPERM") == 0  ? EPERM
              : strcmp(argv[1], "ENOENT") == 0 ? ENOENT
              : strcmp(argv[1], "ENOSYS") == 0 ? ENOSYS
                                               : 0;
    if (err == 0) {
        fprintf(stderr, "no_perf: unknown errno name '%s'\n", argv[1]);
        return 2;
    }
    struct sock_filter filter[] = {
        /* Other architectures' syscall numbers differ: allow them untouched. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("no_perf: seccomp");
        return 1;
    }
    execvp(argv[2], &argv[2]);
    fprintf(stderr, "no_perf: cannot run %s: %s\n", argv[2], strerror(errno));
    return 127;
}
