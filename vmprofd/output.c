/*
 * vmprofd/output.c — a Profile to its requested outputs. See output.h.
 */
#include "vmprofd/output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The flame graph's title: what was profiled, as the user typed it
 * ("vmprofd: stvm -cp smalltalk/bench BenchRunner Richards 30"), cut to
 * what the title line holds. */
static const char *flame_title(const VmprofdOptions *o, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "vmprofd:");
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

static bool write_stream(const VmprofdOptions *o, const VmprofdOutput *out, const Profile *p,
                         const ReportTextOptions *topt, char *err, size_t errlen)
{
    bool to_stdout = strcmp(out->path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(out->path, "w");
    if (!f) {
        snprintf(err, errlen, "%s", strerror(errno));
        return false;
    }
    char title[160];
    ReportFlameOptions fopt = {.title = flame_title(o, title, sizeof title)};
    bool ok = out->format == VMPROFD_FORMAT_TEXT       ? report_write_text(f, p, topt, err, errlen)
              : out->format == VMPROFD_FORMAT_FLAMEGRAPH ? report_write_flamegraph(f, p, &fopt, err, errlen)
                                                         : report_write_folded(f, p, err, errlen);
    /* fflush/fclose report a full disk or a closed pipe the writes hid. */
    if (to_stdout) {
        if (fflush(f) != 0 && ok) {
            snprintf(err, errlen, "%s", strerror(errno));
            ok = false;
        }
    } else if (fclose(f) != 0 && ok) {
        snprintf(err, errlen, "%s", strerror(errno));
        ok = false;
    }
    return ok;
}

bool vmprofd_output_write_all(const VmprofdOptions *o, const Profile *p)
{
    /* REPORT.md: bytecode ranges for JIT'd methods with more than 10 samples. */
    ReportTextOptions topt = {.lines = o->lines, .range_min_samples = 10, .callers = o->callers};
    bool all_ok = true;
    for (size_t i = 0; i < o->noutputs; i++) {
        const VmprofdOutput *out = &o->outputs[i];
        char err[512] = "";
        bool ok = out->format == VMPROFD_FORMAT_PPROF ? report_write_pprof(out->path, p, err, sizeof err)
                                                      : write_stream(o, out, p, &topt, err, sizeof err);
        const char *name = strcmp(out->path, "-") == 0 ? "stdout" : out->path;
        if (!ok) {
            fprintf(stderr, "vmprofd: cannot write the %s profile to %s: %s (check the path and free space)\n",
                    vmprofd_options_format_name(out->format), name, err[0] ? err : "unknown error");
            all_ok = false;
        } else if (!o->quiet && strcmp(out->path, "-") != 0) {
            fprintf(stderr, "vmprofd: wrote %s profile to %s\n", vmprofd_options_format_name(out->format), name);
        }
    }
    return all_ok;
}
