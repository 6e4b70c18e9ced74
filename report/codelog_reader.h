/*
 * report/codelog_reader.h — reading the export's code event log (the protocol
 * and the record layouts are in proto/export.h, "The code event log") into a
 * ReportCodeMap.
 *
 * The reader sees the log region only through a read function, so the same
 * code serves vmprofd (pread on the segment of another process) and stvm's
 * in-VM profiler (memcpy from its own mapping). Nothing read is trusted:
 * the control block is checked at open and at every poll, every record's
 * size, checksum, sequence number, type and body before anything in it is
 * used. What goes wrong is counted and told in a warning, and the reader
 * carries on from the next checkpoint; it never crashes, never loops, and
 * never turns a damaged record into a resolution.
 *
 * Poll often enough that the VM does not write a whole ring between two
 * polls (vmprofd polls every 50 ms; at the default 4 MiB that takes a VM
 * writing 80 MB of events a second). One that falls behind is told and
 * recovers at the next checkpoint, with a gap in between.
 *
 * Who may call: vmprofd/, stvm's in-VM profiler, tests. Not thread-safe.
 */
#ifndef REPORT_CODELOG_READER_H
#define REPORT_CODELOG_READER_H

#include "proto/export.h"
#include "report/codemap.h"
#include "report/ring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* As report/ring.h's: copies bytes of the log region. */
typedef ReportRingReadFn ReportCodeLogReadFn;

typedef enum ReportCodeLogMode {
    REPORT_CODELOG_JOINING,    /* at a checkpoint's BEGIN, not yet inside */
    REPORT_CODELOG_APPLYING,   /* inside a checkpoint, rebuilding from it */
    REPORT_CODELOG_FOLLOWING,  /* in step with the writer */
    REPORT_CODELOG_SKIPPING,   /* inside a checkpoint that restates what is known */
    REPORT_CODELOG_LOST,       /* waiting for a checkpoint past the damage */
} ReportCodeLogMode;

typedef struct ReportCodeLogStats {
    uint64_t records;       /* applied or skipped, all good */
    uint64_t loads, moves, frees;
    uint64_t checkpoints;   /* complete checkpoints seen */
    uint64_t truncated;     /* loads without (all of) their map or lines */
    uint64_t inlined;       /* loads with an inline section (version 6) */
    uint64_t bad_records;   /* torn, corrupt, out of sequence */
    uint64_t overruns;      /* the writer overwrote what we had not read */
    uint64_t recoveries;    /* rebuilt from a checkpoint after damage or overrun */
} ReportCodeLogStats;

typedef struct ReportCodeLog {
    ReportRing ring;        /* the protocol (report/ring.h) */
    ReportCodeLogMode mode;
    bool joined;            /* found a starting checkpoint */
    uint64_t pos;           /* next stream position to parse */
    uint64_t next_seq;      /* its expected sequence number */
    uint64_t lost_at;       /* LOST: recover from a checkpoint at or after this position */
    uint64_t last_time;     /* of the last good record */
    uint64_t cp_seq, cp_pieces;
    ReportCodeLogStats stats;
    ProfCodeLogControl control; /* as of the last poll */
    /* one LOAD's inline section, decoded (copied out: it is not aligned) */
    ReportInlineScope *scopes;
    size_t scopes_cap;
    ReportInlineRange *ranges;
    size_t ranges_cap;
    ReportLineEntry *scope_lines;
    size_t scope_lines_cap;
} ReportCodeLog;

/* Reads and checks the control block (the region is region_size bytes).
 * False with the reason in err. */
bool report_codelog_open(ReportCodeLog *r, uint64_t region_size, ReportCodeLogReadFn read, void *ctx, char *err,
                         size_t errlen);
/* Reads every record written since the last poll into map. Answers the
 * number of records taken in; warn gets a message (empty when none) for
 * anything lost or damaged in this poll. */
size_t report_codelog_poll(ReportCodeLog *r, ReportCodeMap *map, char *warn, size_t warnlen);
void report_codelog_close(ReportCodeLog *r);

#endif
