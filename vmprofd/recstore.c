/*
 * vmprofd/recstore.c — the folder of `vmprofd record --continuous`. See
 * recstore.h.
 */
#define _GNU_SOURCE /* renameat2, RENAME_NOREPLACE */
#include "vmprofd/recstore.h"

#include "report/safefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct RecFile {
    struct timespec mtime;
    uint64_t size;
    char *rel; /* "PID-TICKS/NAME.pb.gz" under host_dir */
};

static const char PB_SUFFIX[] = ".pb.gz";
static const char TMP_MARK[] = ".pb.gz.tmp.";

void vmprofd_recstore_stamp(const struct timespec *t, char out[24])
{
    struct tm tm;
    time_t sec = t->tv_sec;
    gmtime_r(&sec, &tm);
    size_t n = strftime(out, 24, "%Y%m%dT%H%M%S", &tm);
    unsigned ms = (unsigned)(t->tv_nsec / 1000000) % 1000u;
    snprintf(out + n, 24 - n, ".%03uZ", ms);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "NAME.pb.gz.tmp." and 12 hex digits: report_safefile_temp's names. */
static bool is_temporary(const char *name)
{
    const char *mark = strstr(name, TMP_MARK);
    if (!mark || mark == name)
        return false;
    const char *hex = mark + sizeof TMP_MARK - 1;
    if (strlen(hex) != 12)
        return false;
    for (; *hex; hex++)
        if (!((*hex >= '0' && *hex <= '9') || (*hex >= 'a' && *hex <= 'f')))
            return false;
    return true;
}

static bool make_dir(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0750) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return true;
        snprintf(err, errlen, "%s is not a folder", path);
        return false;
    }
    snprintf(err, errlen, "cannot make %s: %s", path, strerror(errno));
    return false;
}

static bool push(RecStore *s, const struct timespec *mtime, uint64_t size, const char *rel)
{
    if (s->n == s->cap) {
        if (s->head > 0) { /* slide the live part down before growing */
            memmove(s->files, s->files + s->head, (s->n - s->head) * sizeof *s->files);
            s->n -= s->head;
            s->head = 0;
        }
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 256;
            RecFile *f = realloc(s->files, cap * sizeof *f);
            if (!f)
                return false;
            s->files = f;
            s->cap = cap;
        }
    }
    char *copy = strdup(rel);
    if (!copy)
        return false;
    s->files[s->n++] = (RecFile){.mtime = *mtime, .size = size, .rel = copy};
    s->bytes += size;
    return true;
}

static int by_mtime(const void *a, const void *b)
{
    const RecFile *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->rel, y->rel);
}

/* One pass over the process folders: temporaries of ours removed, profiles indexed. */
static bool scan(RecStore *s, size_t *swept, char *err, size_t errlen)
{
    DIR *host = opendir(s->host_dir);
    if (!host) {
        snprintf(err, errlen, "cannot read %s: %s", s->host_dir, strerror(errno));
        return false;
    }
    struct dirent *pe;
    while ((pe = readdir(host))) {
        if (pe->d_name[0] == '.')
            continue;
        int pfd = openat(dirfd(host), pe->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
            continue; /* a file, or a link: not ours */
        DIR *proc = fdopendir(pfd);
        if (!proc) {
            close(pfd);
            continue;
        }
        struct dirent *fe;
        while ((fe = readdir(proc))) {
            struct stat st;
            if (fstatat(pfd, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
                continue;
            if (is_temporary(fe->d_name)) {
                if (st.st_uid == geteuid() && unlinkat(pfd, fe->d_name, 0) == 0)
                    ++*swept;
                continue;
            }
            if (!ends_with(fe->d_name, PB_SUFFIX))
                continue;
            char rel[600];
            snprintf(rel, sizeof rel, "%s/%s", pe->d_name, fe->d_name);
            if (!push(s, &st.st_mtim, (uint64_t)st.st_size, rel)) {
                closedir(proc);
                closedir(host);
                snprintf(err, errlen, "out of memory indexing %s", s->host_dir);
                return false;
            }
        }
        closedir(proc);
    }
    closedir(host);
    if (s->n > s->head)
        qsort(s->files + s->head, s->n - s->head, sizeof *s->files, by_mtime);
    return true;
}

/* Oldest first, while a limit is passed. Called with the lock held. */
static void enforce(RecStore *s)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    while (s->head < s->n) {
        RecFile *f = &s->files[s->head];
        bool too_old = s->keep_age_s > 0 &&
                       (double)(now.tv_sec - f->mtime.tv_sec) + (now.tv_nsec - f->mtime.tv_nsec) / 1e9 > s->keep_age_s;
        bool too_big = s->keep_bytes > 0 && s->bytes > s->keep_bytes;
        if (!too_old && !too_big)
            break;
        char path[sizeof s->host_dir + 600];
        snprintf(path, sizeof path, "%s/%s", s->host_dir, f->rel);
        if (unlink(path) == 0)
            s->removed++;
        char *slash = strrchr(path, '/');
        *slash = '\0';
        (void)rmdir(path); /* the process folder, once empty; ENOTEMPTY otherwise */
        s->bytes -= f->size;
        free(f->rel);
        s->head++;
    }
}

bool vmprofd_recstore_open(RecStore *s, const char *dir, double keep_age_s, uint64_t keep_bytes, size_t *swept,
                           char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    *swept = 0;
    if (gethostname(s->host, sizeof s->host) != 0 || !s->host[0])
        snprintf(s->host, sizeof s->host, "localhost");
    s->host[sizeof s->host - 1] = '\0';
    for (char *c = s->host; *c; c++) /* a folder name, whatever the kernel was told */
        if (*c == '/')
            *c = '_';
    if (!make_dir(dir, err, errlen))
        return false;
    if (snprintf(s->host_dir, sizeof s->host_dir, "%s/%s", dir, s->host) >= (int)sizeof s->host_dir) {
        snprintf(err, errlen, "the folder name %s is too long", dir);
        return false;
    }
    if (!make_dir(s->host_dir, err, errlen))
        return false;
    s->keep_age_s = keep_age_s;
    s->keep_bytes = keep_bytes;
    pthread_mutex_init(&s->lock, NULL);
    if (!scan(s, swept, err, errlen)) {
        vmprofd_recstore_close(s);
        return false;
    }
    enforce(s);
    return true;
}

void vmprofd_recstore_close(RecStore *s)
{
    for (size_t i = s->head; i < s->n; i++)
        free(s->files[i].rel);
    free(s->files);
    s->files = NULL;
    s->head = s->n = s->cap = 0;
    pthread_mutex_destroy(&s->lock);
}

bool vmprofd_recstore_process_dir(RecStore *s, pid_t pid, uint64_t start_ticks, char *out, size_t outlen, char *err,
                                  size_t errlen)
{
    if (snprintf(out, outlen, "%s/%d-%llu", s->host_dir, (int)pid, (unsigned long long)start_ticks) >= (int)outlen) {
        snprintf(err, errlen, "the folder name under %s is too long", s->host_dir);
        return false;
    }
    pthread_mutex_lock(&s->lock);
    bool ok = make_dir(out, err, errlen);
    pthread_mutex_unlock(&s->lock);
    return ok;
}

static bool write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* rename(2) that never replaces: renameat2 where the file system has it,
 * else link + unlink (which refuses an existing name too). */
static int rename_new(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(from, to) != 0)
        return -1;
    unlink(from);
    return 0;
}

bool vmprofd_recstore_write(RecStore *s, const char *pdir, const struct timespec *start, const void *data, size_t len,
                            char *path, size_t pathlen, char *err, size_t errlen)
{
    char stamp[24];
    vmprofd_recstore_stamp(start, stamp);
    pthread_mutex_lock(&s->lock);
    bool ok = false;
    /* again: the limits may have removed the folder with its last file */
    if (!make_dir(pdir, err, errlen))
        goto out;
    char final[4200], tmp[4300];
    snprintf(final, sizeof final, "%s/%s%s", pdir, stamp, PB_SUFFIX);
    int fd = report_safefile_temp(final, O_WRONLY, 0640, tmp, sizeof tmp, err, errlen);
    if (fd < 0)
        goto out;
    if (!write_all(fd, data, len) || fdatasync(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    struct stat st;
    fstat(fd, &st);
    close(fd);
    for (int n = 0; n < 100; n++) {
        if (n > 0)
            snprintf(final, sizeof final, "%s/%s-%d%s", pdir, stamp, n, PB_SUFFIX);
        if (rename_new(tmp, final) == 0) {
            ok = true;
            break;
        }
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
            break;
        }
    }
    if (!ok) {
        if (errno == EEXIST)
            snprintf(err, errlen, "cannot name the interval at %s: 100 files have its start", final);
        unlink(tmp);
        goto out;
    }
    snprintf(path, pathlen, "%s", final);
    const char *rel = final + strlen(s->host_dir) + 1;
    if (!push(s, &st.st_mtim, (uint64_t)st.st_size, rel)) {
        /* written, but not counted against the limits until the next start */
    }
    enforce(s);
out:
    pthread_mutex_unlock(&s->lock);
    return ok;
}
