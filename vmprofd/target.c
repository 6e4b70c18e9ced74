/*
 * vmprofd/target.c — the profiled process: attach by pid, launch a command,
 * threads, exit, and /proc facts. See target.h.
 */
#define _GNU_SOURCE /* process_vm_readv, ppoll, pipe2, strsignal, __WALL: Linux interfaces */
#include "vmprofd/target.h"

#include "proto/identity.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* -- /proc facts ------------------------------------------------------- */

/* Reads a small /proc file into buf (NUL-terminated); false when absent or empty. */
static bool read_proc(const char *path, char *buf, size_t len)
{
    return prof_proc_read(path, buf, len) > 0;
}

/* The value after "Key:" in /proc/PID/status, or NULL. */
static const char *status_field(const char *status, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = status; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':')
            return line + klen + 1;
    }
    return NULL;
}

static bool status_long(pid_t pid, const char *key, long *out)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (!read_proc(path, buf, sizeof buf))
        return false;
    const char *v = status_field(buf, key);
    if (!v)
        return false;
    char *end;
    long l = strtol(v, &end, 10);
    if (end == v)
        return false;
    *out = l;
    return true;
}

bool vmprofd_target_uid(pid_t pid, uid_t *uid)
{
    long l;
    if (!status_long(pid, "Uid", &l))
        return false;
    *uid = (uid_t)l;
    return true;
}

pid_t vmprofd_target_tracer(pid_t pid)
{
    long l;
    return status_long(pid, "TracerPid", &l) ? (pid_t)l : 0;
}

bool vmprofd_target_state(pid_t pid, char *buf, size_t len)
{
    char path[64], status[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (!read_proc(path, status, sizeof status))
        return false;
    const char *v = status_field(status, "State");
    if (!v)
        return false;
    v += strspn(v, " \t");
    snprintf(buf, len, "%.*s", (int)strcspn(v, "\n"), v);
    return true;
}

bool vmprofd_target_has_arg(pid_t pid, const char *arg)
{
    char path[64];
    static char cmdline[65536]; /* one caller at a time: the session's thread */
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t used = 0;
    while (used < (ssize_t)sizeof cmdline - 1) {
        ssize_t n = read(fd, cmdline + used, sizeof cmdline - 1 - (size_t)used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += n;
    }
    close(fd);
    cmdline[used] = '\0';
    for (ssize_t i = 0; i < used; i += (ssize_t)strlen(cmdline + i) + 1) {
        if (strcmp(cmdline + i, "--") == 0)
            break;
        if (strcmp(cmdline + i, arg) == 0)
            return true;
    }
    return false;
}

void vmprofd_target_exe(pid_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

/* The state letter of /proc/PID/stat, or 0. The command name in
 * parentheses may itself contain ") ", so search from the last ')'. */
static char proc_state(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!read_proc(path, buf, sizeof buf))
        return 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

pid_t *vmprofd_target_threads(pid_t pid, size_t *n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    *n = 0;
    DIR *d = opendir(path);
    if (!d)
        return NULL;
    size_t cap = 16;
    pid_t *tids = malloc(cap * sizeof *tids);
    struct dirent *e;
    while (tids && (e = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || tid <= 0)
            continue;
        if (*n == cap) {
            pid_t *bigger = realloc(tids, 2 * cap * sizeof *tids);
            if (!bigger)
                break;
            tids = bigger;
            cap *= 2;
        }
        tids[(*n)++] = (pid_t)tid;
    }
    closedir(d);
    if (tids)
        qsort(tids, *n, sizeof *tids, cmp_pid);
    return tids;
}

/* -- Attach and exit ---------------------------------------------------- */

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
#else
    (void)pid;
#endif
    return -1;
}

static void target_init(Target *t, pid_t pid)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->pidfd = -1;
    t->go_fd = -1;
    t->exec_fd = -1;
}

bool vmprofd_target_attach(Target *t, pid_t pid, char *err, size_t errlen)
{
    target_init(t, pid);
    if (pid == getpid()) {
        snprintf(err, errlen, "pid %d is vmprofd itself", (int)pid);
        return false;
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        snprintf(err, errlen, "no process with pid %d", (int)pid);
        return false;
    }
    long tgid;
    if (status_long(pid, "Tgid", &tgid) && tgid != pid && tgid > 0) {
        /* /proc/TID works for any thread; a thread id means its process. */
        fprintf(stderr, "vmprofd: %d is a thread of process %ld; profiling process %ld\n", (int)pid, tgid, tgid);
        t->pid = pid = (pid_t)tgid;
    }
    char st = proc_state(pid);
    if (st == 'Z' || st == 'X') {
        snprintf(err, errlen, "process %d has already exited (it is a zombie waiting for its parent)", (int)pid);
        return false;
    }
    if (st == 0 && kill(pid, 0) != 0 && errno == ESRCH) {
        snprintf(err, errlen, "no process with pid %d", (int)pid);
        return false;
    }
    t->pidfd = open_pidfd(pid);
    return true;
}

static struct rlimit fd_limit_at_start;
static bool fd_limit_raised;

void vmprofd_target_raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max)
        return;
    fd_limit_at_start = r;
    r.rlim_cur = r.rlim_max;
    fd_limit_raised = setrlimit(RLIMIT_NOFILE, &r) == 0; /* else: EMFILE errors name ulimit -n */
}

bool vmprofd_target_launch(Target *t, char *const argv[], char *err, size_t errlen)
{
    target_init(t, 0);
    int go[2], ex[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(ex, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot create a pipe to start '%s': %s", argv[0], strerror(errno));
        return false;
    }
    pid_t child = fork();
    if (child < 0) {
        snprintf(err, errlen, "cannot start '%s': fork: %s", argv[0], strerror(errno));
        close(go[0]), close(go[1]), close(ex[0]), close(ex[1]);
        return false;
    }
    if (child == 0) {
        /* The command must not inherit vmprofd's signal mask or ignored
         * signals: both survive exec. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        close(go[1]);
        close(ex[0]);
        char c;
        ssize_t n;
        while ((n = read(go[0], &c, 1)) < 0 && errno == EINTR)
            ;
        if (n != 1)
            _exit(127); /* vmprofd gave up before releasing us */
        if (fd_limit_raised)
            (void)setrlimit(RLIMIT_NOFILE, &fd_limit_at_start); /* select() users need FD_SETSIZE */
        execvp(argv[0], argv);
        int e = errno;
        while (write(ex[1], &e, sizeof e) < 0 && errno == EINTR)
            ;
        _exit(127);
    }
    close(go[0]);
    close(ex[1]);
    t->pid = child;
    t->launched = true;
    t->go_fd = go[1];
    t->exec_fd = ex[0];
    t->pidfd = open_pidfd(child);
    return true;
}

bool vmprofd_target_release(Target *t, char *err, size_t errlen)
{
    char c = 'g';
    while (write(t->go_fd, &c, 1) < 0 && errno == EINTR)
        ;
    close(t->go_fd);
    t->go_fd = -1;
    int e = 0;
    ssize_t n;
    while ((n = read(t->exec_fd, &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(t->exec_fd);
    t->exec_fd = -1;
    if (n == 0)
        return true; /* the close-on-exec pipe closed: exec succeeded */
    t->exec_errno = n == (ssize_t)sizeof e ? e : 0;
    snprintf(err, errlen, "cannot run the command: %s", n == (ssize_t)sizeof e ? strerror(e) : "it died before exec");
    return false;
}

void vmprofd_target_set_status(Target *t, int status)
{
    t->exited = true;
    t->have_status = true;
    t->status = status;
}

int vmprofd_target_exit_status(const Target *t)
{
    return WIFEXITED(t->status) ? WEXITSTATUS(t->status) : WIFSIGNALED(t->status) ? 128 + WTERMSIG(t->status) : 1;
}

bool vmprofd_target_check_exit(Target *t)
{
    if (t->exited)
        return true;
    if (t->launched) {
        /* Peek first (WNOWAIT): when the ptrace sampler traces the child, a
         * plain waitpid would also consume its ptrace stops, which belong to
         * the sampler. Reap only a real exit. */
        siginfo_t info;
        memset(&info, 0, sizeof info);
        int r = waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOHANG | WNOWAIT);
        if (r == 0 && info.si_pid == t->pid &&
            (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)) {
            int status;
            if (waitpid(t->pid, &status, WNOHANG | __WALL) == t->pid) {
                vmprofd_target_set_status(t, status);
                return true;
            }
        } else if (r < 0 && errno == ECHILD) {
            t->exited = true; /* a ptrace sampler reaped it and told us via set_status */
            return true;
        }
    }
    if (t->pidfd >= 0) {
        struct pollfd p = {.fd = t->pidfd, .events = POLLIN};
        if (poll(&p, 1, 0) == 1) {
            /* The pidfd can tell before waitid sees the zombie: a launched
             * child has exited, so wait for its status (it comes at once)
             * rather than report an exit without one. */
            int status;
            if (t->launched && !t->have_status && waitpid(t->pid, &status, __WALL) == t->pid)
                vmprofd_target_set_status(t, status);
            t->exited = true;
            return true;
        }
        return false;
    }
    char st = proc_state(t->pid);
    if (st == 0 || st == 'Z' || st == 'X') {
        t->exited = true;
        return true;
    }
    return false;
}

int vmprofd_target_exit_fd(const Target *t)
{
    return t->pidfd;
}

void vmprofd_target_close(Target *t)
{
    if (t->go_fd >= 0) {
        /* Never released: closing the pipe makes the child _exit(127). */
        close(t->go_fd);
        t->go_fd = -1;
        if (t->launched && !t->exited)
            waitpid(t->pid, &t->status, 0);
    }
    if (t->exec_fd >= 0)
        close(t->exec_fd);
    if (t->pidfd >= 0)
        close(t->pidfd);
    t->exec_fd = t->pidfd = -1;
}
