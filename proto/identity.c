/*
 * proto/identity.c — a process's identity and stale export segments. See
 * identity.h.
 */
#include "proto/identity.h"

#include "proto/export.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t prof_proc_read(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t used = 0;
    while (used + 1 < len) {
        ssize_t n = read(fd, buf + used, len - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    return (ssize_t)used;
}

/* Field 22 of /proc/PID/stat. The command name in parentheses may hold
 * spaces and ')': fields are counted after the last ')'. */
static bool start_ticks(pid_t pid, uint64_t *out)
{
    char path[64], buf[1024];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/self/stat");
    else
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (prof_proc_read(path, buf, sizeof buf) <= 0)
        return false;
    const char *p = strrchr(buf, ')');
    if (!p)
        return false;
    p++; /* at the space before field 3 */
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return false;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p + 1, &end, 10);
    if (errno != 0 || end == p + 1)
        return false;
    *out = v;
    return true;
}

bool prof_identity_of(pid_t pid, ProfIdentity *out)
{
    memset(out, 0, sizeof *out);
    if (!start_ticks(pid, &out->start_ticks))
        return false;
    if (prof_proc_read("/proc/sys/kernel/random/boot_id", out->boot_id, sizeof out->boot_id) < 0)
        out->boot_id[0] = '\0';
    out->boot_id[strcspn(out->boot_id, "\n")] = '\0';
    return true;
}

bool prof_identity_equal(const ProfIdentity *a, const ProfIdentity *b)
{
    return a->start_ticks == b->start_ticks && strncmp(a->boot_id, b->boot_id, sizeof a->boot_id) == 0;
}

static bool pid_alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno != ESRCH;
}

ProfProcessState prof_process_state(pid_t pid, const ProfIdentity *id)
{
    ProfIdentity now;
    if (!prof_identity_of(pid, &now))
        return pid_alive(pid) ? PROF_PROCESS_UNKNOWN : PROF_PROCESS_GONE;
    if (!prof_identity_equal(&now, id))
        return PROF_PROCESS_GONE;
    /* a zombie has exited: only its parent has not reaped it yet */
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (prof_proc_read(path, buf, sizeof buf) <= 0)
        return pid_alive(pid) ? PROF_PROCESS_UNKNOWN : PROF_PROCESS_GONE;
    const char *paren = strrchr(buf, ')');
    if (paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'))
        return PROF_PROCESS_GONE;
    return PROF_PROCESS_ALIVE;
}

ProfSegmentOwner prof_segment_owner(const void *header, size_t len, pid_t pid)
{
    if (pid <= 0)
        return PROF_SEGMENT_UNKNOWN;
    /* the pid first: a dead pid's segment is stale whatever its bytes say */
    if (!pid_alive(pid))
        return PROF_SEGMENT_STALE;
    ProfExportHeader h;
    if (len < offsetof(ProfExportHeader, boot_id) + sizeof h.boot_id)
        return PROF_SEGMENT_UNKNOWN;
    memcpy(&h, header, sizeof h);
    if (h.magic != PROF_EXPORT_MAGIC || h.version < PROF_EXPORT_VERSION_IDENTITY ||
        h.header_size < sizeof(ProfExportHeader))
        return PROF_SEGMENT_UNKNOWN;
    ProfIdentity now, made;
    if (!prof_identity_of(pid, &now))
        return pid_alive(pid) ? PROF_SEGMENT_UNKNOWN : PROF_SEGMENT_STALE;
    memset(&made, 0, sizeof made);
    made.start_ticks = h.start_ticks;
    memcpy(made.boot_id, h.boot_id, sizeof made.boot_id);
    made.boot_id[sizeof made.boot_id - 1] = '\0';
    return prof_identity_equal(&now, &made) ? PROF_SEGMENT_OURS : PROF_SEGMENT_STALE;
}

pid_t prof_segment_pid(const char *name)
{
    if (strncmp(name, "stvm-", 5) != 0 || name[5] < '1' || name[5] > '9')
        return 0;
    char *end;
    errno = 0;
    long v = strtol(name + 5, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0 || v > 4194304) /* PID_MAX_LIMIT */
        return 0;
    return (pid_t)v;
}

int prof_segment_sweep(pid_t spare)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int dfd = dirfd(d), removed = 0;
    uid_t me = geteuid();
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t pid = prof_segment_pid(e->d_name);
        if (pid == 0 || pid == self || pid == spare)
            continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        struct stat st;
        char header[sizeof(ProfExportHeader)];
        ssize_t n = -1;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (me == 0 || st.st_uid == me))
            n = pread(fd, header, sizeof header, 0);
        close(fd);
        if (n < 0 || prof_segment_owner(header, (size_t)n, pid) != PROF_SEGMENT_STALE)
            continue;
        /* the name may have been given to a new segment since we opened it */
        struct stat again;
        if (fstatat(dfd, e->d_name, &again, AT_SYMLINK_NOFOLLOW) == 0 && again.st_ino == st.st_ino &&
            again.st_dev == st.st_dev && unlinkat(dfd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
