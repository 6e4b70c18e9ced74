/*
 * report/safefile.c — files created where others can write. See safefile.h.
 */
#define _GNU_SOURCE
#include "report/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* An entry of ours may be replaced by another of ours between the lstat
 * and the unlink (another process with the same uid); a few rounds, then
 * a plain error. Others cannot replace it in a sticky folder (/tmp). */
#define SAFEFILE_ROUNDS 4

/* "uid 65534 (nobody)" */
static void describe_uid(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *found = NULL;
    char names[1024];
    if (getpwuid_r(uid, &pw, names, sizeof names, &found) == 0 && found && found->pw_name)
        snprintf(buf, len, "uid %u (%s)", (unsigned)uid, found->pw_name);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* The checks on what we just created: fd is closed and -1 answered when
 * one fails (only another process racing with root's own files could make
 * one fail after O_EXCL; they hold the rule, not this one call). */
static int check_created(int fd, const char *path, mode_t mode, char *err, size_t errlen)
{
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "cannot check %s: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) why = "is not a regular file";
    else if (st.st_uid != geteuid()) why = "is not ours";
    else if (st.st_nlink != 1) why = "has more than one link";
    else if (st.st_mode & 07777 & ~mode) why = "has mode bits we did not ask for";
    if (!why) return fd;
    snprintf(err, errlen, "%s, just created, %s: not written", path, why);
    close(fd);
    errno = EPERM;
    return -1;
}

int report_safefile_create(const char *path, int flags, mode_t mode, unsigned opts, char *err, size_t errlen)
{
    flags &= O_ACCMODE | O_APPEND;
    for (int round = 0; round < SAFEFILE_ROUNDS; round++) {
        int fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0) return check_created(fd, path, mode, err, errlen);
        if (errno != EEXIST) {
            int e = errno;
            snprintf(err, errlen, "cannot create %s: %s", path, strerror(e));
            errno = e;
            return -1;
        }
        struct stat st;
        if (lstat(path, &st) != 0) {
            if (errno == ENOENT) continue; /* gone meanwhile: try again */
            int e = errno;
            snprintf(err, errlen, "cannot look at %s, which is in the way: %s", path, strerror(e));
            errno = e;
            return -1;
        }
        if (st.st_uid != geteuid()) {
            char owner[96];
            describe_uid(st.st_uid, owner, sizeof owner);
            snprintf(err, errlen, "%s belongs to %s, not to us: it was left alone, nothing is written to it", path,
                     owner);
            errno = EEXIST;
            return REPORT_SAFEFILE_FOREIGN;
        }
        if (!(opts & REPORT_SAFEFILE_REPLACE_OWN)) {
            snprintf(err, errlen, "cannot create %s: it exists", path);
            errno = EEXIST;
            return -1;
        }
        /* ours and stale: remove the entry itself (a link, not its target) */
        if (unlink(path) != 0 && errno != ENOENT) {
            int e = errno;
            snprintf(err, errlen, "cannot remove the stale %s: %s", path, strerror(e));
            errno = e;
            return -1;
        }
    }
    snprintf(err, errlen, "cannot create %s: it kept coming back", path);
    errno = EEXIST;
    return -1;
}

int report_safefile_temp(const char *final, int flags, mode_t mode, char *tmp, size_t tmplen, char *err,
                         size_t errlen)
{
    for (int round = 0; round < SAFEFILE_ROUNDS; round++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            int e = errno;
            snprintf(err, errlen, "cannot name a temporary for %s: getrandom: %s", final, strerror(e));
            errno = e;
            return -1;
        }
        int n = snprintf(tmp, tmplen, "%s.tmp.%02x%02x%02x%02x%02x%02x", final, r[0], r[1], r[2], r[3], r[4], r[5]);
        if (n < 0 || (size_t)n >= tmplen) {
            snprintf(err, errlen, "cannot name a temporary for %s: the path is too long", final);
            errno = ENAMETOOLONG;
            return -1;
        }
        /* never REPLACE_OWN: a name that exists was not ours to take */
        int fd = report_safefile_create(tmp, flags, mode, 0, err, errlen);
        if (fd >= 0) return fd;
        if (errno != EEXIST) return -1;
    }
    snprintf(err, errlen, "cannot create a temporary for %s: every random name was taken", final);
    errno = EEXIST;
    return -1;
}
