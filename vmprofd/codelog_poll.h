/*
 * vmprofd/codelog_poll.h — the target's code over time, read while sampling: the
 * export's code event log (report/codelog_reader.h) replayed into a timeline
 * (report/codemap.h), so that samples, resolved only when sampling ends, meet
 * the code as it was when each was taken.
 *
 * Polled every few tens of milliseconds by session.c (a poll with nothing
 * new costs one pread of the control block) and once more after the
 * sampler has delivered its last samples. Trouble in the log (damage, an
 * overrun) is printed on stderr for the first few times and summed up in
 * the report's notes.
 *
 * Who may call: vmprofd/session.c, tests.
 */
#ifndef VMPROFD_CODELOG_POLL_H
#define VMPROFD_CODELOG_POLL_H

#include "report/codelog_reader.h"
#include "report/codemap.h"
#include "report/report.h"
#include "vmprofd/export_reader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Warnings printed on stderr before vmprofd only counts them. */
#define VMPROFD_CODELOG_MAX_PRINTED 3

typedef struct CodeLogPoll {
    bool active;          /* a log is being read */
    ExportReader *exp;    /* borrowed */
    ReportCodeLog log;
    ReportCodeMap *map;
    bool quiet;           /* no stderr */
    uint64_t warnings;
    char first_warning[256];
} CodeLogPoll;

/* Starts on exp's log. False with the reason in why: a version-1 segment,
 * a segment without a log, a log whose control block fails its checks. */
bool vmprofd_codelog_open(CodeLogPoll *j, ExportReader *exp, bool quiet, char *why, size_t whylen);
/* Takes in what the VM logged since the last poll. */
void vmprofd_codelog_poll(CodeLogPoll *j);
/* Notes for the report: warnings, recoveries, truncated loads. */
void vmprofd_codelog_notes(const CodeLogPoll *j, Profile *p);
void vmprofd_codelog_close(CodeLogPoll *j);

#endif
