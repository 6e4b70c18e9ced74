/*
 * vmprofd/codelog_poll.c — reading the target's code event log while sampling
 * (see codelog_poll.h).
 */
#include "vmprofd/codelog_poll.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool vmprofd_codelog_open(CodeLogPoll *j, ExportReader *exp, bool quiet, char *why, size_t whylen)
{
    memset(j, 0, sizeof *j);
    const ProfExportHeader *h = vmprofd_export_header(exp);
    if (h->version < PROF_EXPORT_VERSION_CODE_LOG) {
        snprintf(why, whylen,
                 "the stvm export is version %" PRIu32 ", without a code event log: JIT'd code is one [code zone] "
                 "row (an older stvm)",
                 h->version);
        return false;
    }
    if (!vmprofd_export_has_code_log(exp)) {
        snprintf(why, whylen, "the stvm export has no code event log (the VM could not make one): JIT'd code is one "
                              "[code zone] row");
        return false;
    }
    char err[256];
    if (!report_codelog_open(&j->log, h->code_log_size, vmprofd_export_read_log, exp, err, sizeof err)) {
        snprintf(why, whylen, "the stvm export's code event log is unusable: %s; JIT'd code is one [code zone] row", err);
        return false;
    }
    j->exp = exp;
    j->quiet = quiet;
    j->map = report_codemap_new();
    j->active = true;
    return true;
}

void vmprofd_codelog_poll(CodeLogPoll *j)
{
    if (!j->active)
        return;
    char warn[256];
    report_codelog_poll(&j->log, j->map, warn, sizeof warn);
    if (!warn[0])
        return;
    if (j->warnings == 0)
        snprintf(j->first_warning, sizeof j->first_warning, "%s", warn);
    if (j->warnings < VMPROFD_CODELOG_MAX_PRINTED && !j->quiet)
        fprintf(stderr, "vmprofd: warning: %s\n", warn);
    j->warnings++;
}

void vmprofd_codelog_notes(const CodeLogPoll *j, Profile *p)
{
    if (!j->active)
        return;
    const ReportCodeLogStats *s = &j->log.stats;
    if (j->warnings)
        report_profile_add_note(p, "code event log: %" PRIu64 " warning%s (first: %s)", j->warnings,
                                j->warnings == 1 ? "" : "s", j->first_warning);
    if (s->recoveries)
        report_profile_add_note(p,
                                "code event log: events lost %" PRIu64 " time%s (%" PRIu64 " overrun%s, %" PRIu64
                                " bad record%s); samples in JIT'd code while events were missing are counted as "
                                "[code zone: events lost]",
                                s->recoveries, s->recoveries == 1 ? "" : "s", s->overruns, s->overruns == 1 ? "" : "s",
                                s->bad_records, s->bad_records == 1 ? "" : "s");
    if (s->truncated)
        report_profile_add_note(p,
                                "code event log: %" PRIu64 " method%s too large for the log came without all of "
                                "their bytecode ranges or lines (stvm --export-log-size)",
                                s->truncated, s->truncated == 1 ? "" : "s");
}

void vmprofd_codelog_close(CodeLogPoll *j)
{
    if (!j->active)
        return;
    report_codelog_close(&j->log);
    report_codemap_free(j->map);
    j->map = NULL;
    j->active = false;
}
