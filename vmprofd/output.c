/*
 * vmprofd/output.c — a Profile to its requested outputs. See output.h.
 */
#include "vmprofd/output.h"

#include "report/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The flame graph's title: what was profiled, as the user typed it
 * ("vmprofd: stvm -cp smalltalk/bench BenchRunner Richards 30"), cut to
 * what the title line holds. */
static const char *flame_title(const VmprofdOptions *o, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, o->event == VMPROFD_EVENT_ALLOC ? "vmprofd, bytes allocated:" : "vmprofd:");
    if (!o->command) {
        snprintf(buf + n, len - n, " pid %d", (int)o->pid);
        return buf;
    }
    for (size_t i = 0; o->command[i] && n + 1 < len; i++) {
        const char *arg = o->command[i], *slash = strrchr(arg, '/');
        if (i == 0 && slash) /* the program's name, not its build directory */
            arg = slash + 1;
        int w = snprintf(buf + n, len - n, " %s", arg);
        n = w < 0 || (size_t)w >= len - n ? len - 1 : n + (size_t)w;
    }
    if (n + 1 >= len && len > 4)
        memcpy(buf + len - 4, "...", 4); /* cut: say so */
    return buf;
}

/* -- Checking before sampling ------------------------------------------------ */

/* The folder path lives in ("." for a bare name). */
static void folder_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/* Where the profile goes: a regular file (new or replaced) is written to a
 * temporary file beside it and renamed over it, so a reader sees the old
 * file or the whole new one; anything else (/dev/null, a pipe, a
 * terminal) is written in place. */
static bool replaced_whole(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

static bool check_output(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s is a folder: give a file name (e.g. %s/profile.txt)", path, path);
            return false;
        }
        if (!S_ISREG(st.st_mode)) {
            int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0 && errno != ENXIO) { /* ENXIO: a pipe without its reader yet */
                snprintf(err, errlen, "%s", strerror(errno));
                return false;
            }
            if (fd >= 0)
                close(fd);
            return true;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "%s", strerror(errno));
        return false;
    }
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "the folder %s does not exist", dir);
        return false;
    }
    /* the one sure test that a file can be made there (permissions, a
     * read-only file system, ACLs): make one */
    char probe[4200], why[512];
    int fd = report_safefile_temp(path, O_WRONLY, 0600, probe, sizeof probe, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create files in %.300s: %s", dir, why);
        return false;
    }
    close(fd);
    unlink(probe);
    return true;
}

bool vmprofd_output_check_all(const VmprofdOptions *o)
{
    bool ok = true;
    for (size_t i = 0; i < o->noutputs; i++) {
        const VmprofdOutput *out = &o->outputs[i];
        char err[4400];
        if (strcmp(out->path, "-") != 0 && !check_output(out->path, err, sizeof err)) {
            fprintf(stderr, "vmprofd: cannot write the %s profile to %s: %s\n",
                    vmprofd_options_format_name(out->format), out->path, err);
            ok = false;
        }
    }
    if (o->debug_resolutions) {
        char err[4400];
        if (!check_output(o->debug_resolutions, err, sizeof err)) {
            fprintf(stderr, "vmprofd: cannot write --debug-resolutions to %s: %s\n", o->debug_resolutions, err);
            ok = false;
        }
    }
    return ok;
}

/* -- Writing ------------------------------------------------------------------ */

static bool render(const VmprofdOptions *o, const VmprofdOutput *out, FILE *f, const Profile *p,
                   const ReportTextOptions *topt, char *err, size_t errlen)
{
    char title[160];
    ReportFlameOptions fopt = {.title = flame_title(o, title, sizeof title)};
    switch (out->format) {
    case VMPROFD_FORMAT_TEXT: return report_write_text(f, p, topt, err, errlen);
    case VMPROFD_FORMAT_FLAMEGRAPH: return report_write_flamegraph(f, p, &fopt, err, errlen);
    case VMPROFD_FORMAT_FOLDED: return report_write_folded(f, p, err, errlen);
    case VMPROFD_FORMAT_PPROF: return report_write_pprof_stream(f, p, err, errlen);
    }
    return false;
}

/* A new file gets the mode fopen would have given it; a replaced one keeps its own. */
static mode_t file_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return st.st_mode & 07777;
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

static bool write_one(const VmprofdOptions *o, const VmprofdOutput *out, const Profile *p,
                      const ReportTextOptions *topt, char *err, size_t errlen)
{
    if (strcmp(out->path, "-") == 0) {
        bool ok = render(o, out, stdout, p, topt, err, errlen);
        /* fflush reports a full disk or a closed pipe the writes hid */
        if (fflush(stdout) != 0 && ok) {
            snprintf(err, errlen, "%s", strerror(errno));
            ok = false;
        }
        return ok;
    }
    if (!replaced_whole(out->path)) {
        FILE *f = fopen(out->path, "w");
        if (!f) {
            snprintf(err, errlen, "%s", strerror(errno));
            return false;
        }
        bool ok = render(o, out, f, p, topt, err, errlen);
        if (fclose(f) != 0 && ok) {
            snprintf(err, errlen, "%s", strerror(errno));
            ok = false;
        }
        return ok;
    }
    char tmp[4200];
    /* a new name no one can guess, created exclusively: never a planted file */
    int fd = report_safefile_temp(out->path, O_WRONLY, 0600, tmp, sizeof tmp, err, errlen);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        snprintf(err, errlen, "%s", strerror(errno));
        close(fd);
        unlink(tmp);
        return false;
    }
    bool ok = fchmod(fd, file_mode(out->path)) == 0 || (snprintf(err, errlen, "%s", strerror(errno)), false);
    ok = ok && render(o, out, f, p, topt, err, errlen);
    if (ok && (fflush(f) != 0 || fsync(fd) != 0)) {
        snprintf(err, errlen, "%s", strerror(errno));
        ok = false;
    }
    if (fclose(f) != 0 && ok) {
        snprintf(err, errlen, "%s", strerror(errno));
        ok = false;
    }
    if (ok && rename(tmp, out->path) != 0) {
        snprintf(err, errlen, "cannot rename %.300s to it: %s", tmp, strerror(errno));
        ok = false;
    }
    if (!ok)
        unlink(tmp); /* never a half file left behind */
    return ok;
}

bool vmprofd_output_write_all(const VmprofdOptions *o, const Profile *p, bool files, bool to_stdout)
{
    /* REPORT.md: bytecode ranges for JIT'd methods with more than 10 samples. */
    ReportTextOptions topt = {.lines = o->lines, .range_min_samples = 10, .callers = o->callers};
    bool all_ok = true;
    for (size_t i = 0; i < o->noutputs; i++) {
        const VmprofdOutput *out = &o->outputs[i];
        bool is_stdout = strcmp(out->path, "-") == 0;
        if (is_stdout ? !to_stdout : !files)
            continue;
        char err[512] = "";
        bool ok = write_one(o, out, p, &topt, err, sizeof err);
        const char *name = is_stdout ? "stdout" : out->path;
        if (!ok) {
            /* the reason is strerror's text, whichever call failed */
            bool fds = strstr(err, strerror(EMFILE)) || strstr(err, strerror(ENFILE));
            fprintf(stderr, "vmprofd: cannot write the %s profile to %s: %s (%s)\n",
                    vmprofd_options_format_name(out->format), name, err[0] ? err : "unknown error",
                    fds ? "raise the limit: ulimit -n" : "check the path and free space");
            all_ok = false;
        } else if (!o->quiet && !is_stdout) {
            fprintf(stderr, "vmprofd: wrote %s profile to %s\n", vmprofd_options_format_name(out->format), name);
        }
    }
    return all_ok;
}
