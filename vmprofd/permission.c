/*
 * vmprofd/permission.c — turning EACCES/EPERM/ENOSYS into a cause and a fix.
 * See permission.h.
 */
#define _GNU_SOURCE /* process_vm_readv, ppoll, pipe2, strsignal, __WALL: Linux interfaces */
#include "vmprofd/permission.h"

#include "proto/identity.h"

#include "vmprofd/options.h"
#include "vmprofd/target.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38 /* Linux 5.8; older headers lack it */
#endif

static int read_int_file(const char *path, int missing)
{
    char buf[64];
    return prof_proc_read(path, buf, sizeof buf) > 0 ? atoi(buf) : missing;
}

int vmprofd_permission_perf_paranoid(void)
{
    return read_int_file("/proc/sys/kernel/perf_event_paranoid", -100);
}

bool vmprofd_permission_has_cap(int cap)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return geteuid() == 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return geteuid() == 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nCapEff:");
    if (!p)
        return geteuid() == 0;
    unsigned long long eff = strtoull(p + 8, NULL, 16);
    return cap < 64 && ((eff >> cap) & 1) != 0;
}

/* "uid 1000 (alice)" */
static void describe_uid(uid_t uid, char *buf, size_t len)
{
    struct passwd *pw = getpwuid(uid);
    if (pw && pw->pw_name)
        snprintf(buf, len, "uid %u (%s)", (unsigned)uid, pw->pw_name);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* When the target belongs to someone else, says so; false otherwise. */
static bool explain_other_owner(pid_t pid, const char *what, const char *cap, char *buf, size_t len)
{
    uid_t owner;
    if (!vmprofd_target_uid(pid, &owner) || owner == geteuid())
        return false;
    char theirs[96], ours[96];
    describe_uid(owner, theirs, sizeof theirs);
    describe_uid(geteuid(), ours, sizeof ours);
    snprintf(buf, len,
             "%s refused: pid %d belongs to %s and vmprofd runs as %s; run vmprofd as that user, "
             "or as root / with %s",
             what, (int)pid, theirs, ours, cap);
    return true;
}

void vmprofd_permission_explain_perf(pid_t pid, int errnum, char *buf, size_t len)
{
    int paranoid = vmprofd_permission_perf_paranoid();
    bool privileged = vmprofd_permission_has_cap(CAP_PERFMON) || vmprofd_permission_has_cap(CAP_SYS_ADMIN);
    switch (errnum) {
    case ENOSYS:
        snprintf(buf, len,
                 "perf_event refused: this kernel has no perf_event_open (ENOSYS: built without "
                 "CONFIG_PERF_EVENTS, or blocked by a seccomp filter such as a container's)");
        return;
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP:
        snprintf(buf, len, "perf_event refused: the kernel offers no software cpu-clock event (%s)",
                 strerror(errnum));
        return;
    case EACCES:
    case EPERM:
        if (paranoid >= 3 && !privileged) {
            snprintf(buf, len,
                     "perf_event refused: kernel.perf_event_paranoid is %d (need <= 2 for user-space "
                     "profiling of your own processes, or CAP_PERFMON); to allow it: "
                     "sudo sysctl -w kernel.perf_event_paranoid=2",
                     paranoid);
            return;
        }
        if (!privileged && explain_other_owner(pid, "perf_event", "CAP_PERFMON", buf, len))
            return;
        snprintf(buf, len,
                 "perf_event refused (%s) although kernel.perf_event_paranoid is %d: the target may "
                 "not be dumpable (setuid program), or a security module (SELinux, AppArmor) or a "
                 "seccomp filter forbids perf_event_open",
                 strerror(errnum), paranoid);
        return;
    default:
        snprintf(buf, len, "perf_event_open failed: %s", strerror(errnum));
        return;
    }
}

void vmprofd_permission_explain_ptrace(pid_t pid, int errnum, char *buf, size_t len)
{
    if (errnum == ESRCH) {
        snprintf(buf, len, "ptrace refused: process %d is gone", (int)pid);
        return;
    }
    if (errnum == ENOSYS) {
        snprintf(buf, len, "ptrace refused: ptrace is not available (ENOSYS; a seccomp filter may block it)");
        return;
    }
    if (errnum != EPERM && errnum != EACCES) {
        snprintf(buf, len, "ptrace failed: %s", strerror(errnum));
        return;
    }
    pid_t tracer = vmprofd_target_tracer(pid);
    if (tracer > 0) {
        snprintf(buf, len,
                 "ptrace refused: pid %d is already traced by pid %d (a debugger or another "
                 "profiler); detach that first",
                 (int)pid, (int)tracer);
        return;
    }
    bool privileged = vmprofd_permission_has_cap(CAP_SYS_PTRACE);
    if (!privileged && explain_other_owner(pid, "ptrace", "CAP_SYS_PTRACE", buf, len))
        return;
    int scope = read_int_file("/proc/sys/kernel/yama/ptrace_scope", -1);
    if (scope == 1 && !privileged) {
        snprintf(buf, len,
                 "ptrace refused: kernel.yama.ptrace_scope is 1 (only a parent may trace its "
                 "children): start the program under vmprofd (vmprofd [options] -- COMMAND), or "
                 "sudo sysctl -w kernel.yama.ptrace_scope=0, or give vmprofd CAP_SYS_PTRACE");
        return;
    }
    if (scope == 2 && !privileged) {
        snprintf(buf, len,
                 "ptrace refused: kernel.yama.ptrace_scope is 2 (only CAP_SYS_PTRACE may attach): "
                 "run vmprofd as root, or sudo sysctl -w kernel.yama.ptrace_scope=1 and launch the "
                 "program under vmprofd (-- COMMAND)");
        return;
    }
    if (scope == 3) {
        snprintf(buf, len,
                 "ptrace refused: kernel.yama.ptrace_scope is 3 (no process may be traced until "
                 "reboot); use perf_event instead (kernel.perf_event_paranoid <= 2)");
        return;
    }
    snprintf(buf, len,
             "ptrace refused (%s): the target may not be dumpable (setuid program), or a security "
             "module (SELinux, AppArmor) or a seccomp filter forbids ptrace",
             strerror(errnum));
}

/* -- Least privilege ------------------------------------------------------- */

#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8 */
#endif

static uint64_t bit(int cap) { return 1ull << cap; }

/* The CapPrm of pid (a hex mask in /proc/PID/status); false when unread. */
static bool target_permitted(pid_t pid, uint64_t *out)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (prof_proc_read(path, buf, sizeof buf) <= 0)
        return false;
    const char *p = strstr(buf, "\nCapPrm:");
    if (!p)
        return false;
    *out = strtoull(p + 8, NULL, 16);
    return true;
}

/* Whether our uid and groups alone (no capability) may write the file at
 * path, or create it in its folder when it does not exist. ACLs aside: a
 * folder they open to us is taken for closed, which only keeps a
 * capability. */
static bool writable_without_caps(const char *path)
{
    struct stat st;
    char dir[4096];
    if (lstat(path, &st) != 0) {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        if (stat(dir, &st) != 0)
            return false;
        if (!S_ISDIR(st.st_mode))
            return false;
    }
    mode_t want = S_ISDIR(st.st_mode) ? 3 : 2; /* folder: write and search; file: write */
    mode_t have;
    if (st.st_uid == geteuid())
        have = (st.st_mode >> 6) & 7;
    else if (st.st_gid == getegid())
        have = (st.st_mode >> 3) & 7;
    else {
        have = st.st_mode & 7;
        gid_t groups[256];
        int n = getgroups(256, groups);
        for (int i = 0; i < n; i++)
            if (groups[i] == st.st_gid)
                have = (st.st_mode >> 3) & 7;
    }
    return (have & want) == want;
}

uint64_t vmprofd_permission_needed(const char *mode, pid_t pid, const VmprofdOptions *o)
{
    uint64_t keep;
    if (strcmp(mode, "ptrace") == 0) {
        keep = bit(CAP_SYS_PTRACE);
    } else {
        int last = read_int_file("/proc/sys/kernel/cap_last_cap", CAP_LAST_CAP);
        keep = last >= CAP_PERFMON ? bit(CAP_PERFMON) | bit(CAP_BPF) : bit(CAP_SYS_ADMIN);
    }
    uid_t owner;
    uint64_t theirs;
    bool other_user = !vmprofd_target_uid(pid, &owner) || owner != geteuid();
    if (other_user || !target_permitted(pid, &theirs) || (theirs & ~keep) != 0)
        keep |= bit(CAP_SYS_PTRACE);
    if (other_user)
        keep |= bit(CAP_DAC_READ_SEARCH);
    for (size_t i = 0; o && i < o->noutputs; i++)
        if (strcmp(o->outputs[i].path, "-") != 0 && !writable_without_caps(o->outputs[i].path))
            keep |= bit(CAP_DAC_OVERRIDE);
    if (o && o->debug_resolutions && !writable_without_caps(o->debug_resolutions))
        keep |= bit(CAP_DAC_OVERRIDE);
    return keep;
}

bool vmprofd_permission_drop(const char *mode, pid_t pid, const VmprofdOptions *o, char *err, size_t len)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) != 0) {
        snprintf(err, len, "cannot read our capabilities: %s", strerror(errno));
        return false;
    }
    uint64_t permitted = data[0].permitted | (uint64_t)data[1].permitted << 32;
    uint64_t inheritable = data[0].inheritable | (uint64_t)data[1].inheritable << 32;
    if (permitted == 0 && inheritable == 0)
        return true; /* an ordinary user: nothing to give up */
    uint64_t keep = vmprofd_permission_needed(mode, pid, o) & permitted;
    /* The bounding set first: dropping from it needs CAP_SETPCAP, which goes
     * next. It only limits what an exec could gain; vmprofd execs nothing
     * after this, but a flaw that made it exec would gain nothing either. */
    int last = read_int_file("/proc/sys/kernel/cap_last_cap", CAP_LAST_CAP);
    if (permitted & bit(CAP_SETPCAP))
        for (int cap = 0; cap <= last && cap < 64; cap++)
            if (!(keep & bit(cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
                (void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0); /* EINVAL: a cap this kernel lacks */
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); /* EINVAL before Linux 4.3 */
    data[0].effective = data[0].permitted = (uint32_t)keep;
    data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
    data[0].inheritable = data[1].inheritable = 0;
    if (syscall(SYS_capset, &hdr, data) != 0) {
        snprintf(err, len, "cannot drop the capabilities this mode does not need: %s", strerror(errno));
        return false;
    }
    return true;
}
