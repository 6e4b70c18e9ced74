/*
 * vmprofd/output.c — a Profile to its requested outputs. See output.h.
 */
#include "vmprofd/output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool write_stream(const VmprofdOutput *out, const Profile *p, const ReportTextOptions *topt, char *err,
                         size_t errlen)
{
    bool to_stdout = strcmp(out->path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(out->path, "w");
    if (!f) {
        snprintf(err, errlen, "%s", strerror(errno));
        return false;
    }
    bool ok = out->format == VMPROFD_FORMAT_TEXT       ? report_write_text(f, p, topt, err, errlen)
              : out->format == VMPROFD_FORMAT_FLAMEGRAPH ? report_write_flamegraph(f, p, NULL, err, errlen)
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
                                                      : write_stream(out, p, &topt, err, sizeof err);
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
