/*
 * report/alloclog_reader.h — reading the export's allocation sample log
 * (proto/allocabi.h) into a list of sampled allocations: each with its
 * weight (the bytes it stands for), its object's size and class, its whole
 * stack (a report/samples.h StoredSample, resolved later like a CPU
 * sample's), and whether it was alive in the VM's newest LIVE answer.
 *
 * The ring is read with report/ring.h (the code log's protocol). Nothing
 * read is trusted: a record whose size, checksum or body fails a check is
 * skipped, never used; a reader that fell behind or met damage resumes at
 * the writer's current end. What it lost it counts from the records'
 * sequence numbers (every record has one, without gaps), so a report
 * says how much is missing instead of showing a plausible wrong answer.
 *
 * The same code serves vmprofd (pread on another process's segment) and
 * the in-VM profiler (memcpy from its own mapping): the log is seen only
 * through a read function.
 *
 * Who may call: vmprofd/, stvm's in-VM profiler, tests. Not thread-safe.
 */
#ifndef REPORT_ALLOCLOG_READER_H
#define REPORT_ALLOCLOG_READER_H

#include "proto/allocabi.h"
#include "report/index.h"
#include "report/ring.h"
#include "report/samples.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ReportAllocRecord {
    uint64_t seq;             /* the SAMPLE record's: what LIVE answers name */
    uint64_t time_ns;
    uint64_t weight;          /* bytes it stands for */
    uint64_t size;            /* the object's bytes (> 0) */
    uint64_t bytes_allocated; /* the VM's counter just after it */
    uint32_t class_index;
    uint16_t flags;           /* PROF_ALLOC_F_* */
    bool live;                /* named by the newest complete LIVE answer */
    int name;                 /* into ReportAllocLog.names: the class name */
    size_t stack;             /* into ReportAllocLog.stacks.v */
} ReportAllocRecord;

typedef struct ReportAllocStats {
    uint64_t records;         /* good records taken in */
    uint64_t samples, starts, stops, live_records;
    uint64_t lost;            /* records never read: seq gaps after an overrun or damage */
    uint64_t overruns;        /* the writer overwrote what was not yet read */
    uint64_t bad_records;     /* torn, corrupt, out of sequence, or with a body that fails its checks */
    uint64_t dropped;         /* good samples not kept: out of memory */
} ReportAllocStats;

typedef struct ReportAllocLog {
    ReportRing ring;
    ProfAllocLogControl control; /* as of the last poll */
    bool joined;
    bool from_start;          /* join at the log's start (a VM we launched), not at its end */
    uint64_t pos, next_seq;
    bool resync;              /* the next record's seq tells how many were lost */
    bool uncounted;           /* ... except at the join: what came before was not ours */
    ReportAllocStats stats;
    /* the samples, in seq order, and their stacks */
    ReportAllocRecord *v;
    size_t n, cap;
    SampleStore stacks;
    char **names;             /* class names, interned */
    size_t nnames, names_cap;
    ReportIndex name_index;
    /* sampling periods (START .. STOP): the VM's own count of the bytes
     * allocated while it sampled */
    uint64_t interval;        /* the newest START's */
    bool sampling;            /* a START without its STOP yet */
    uint64_t period_start;    /* the VM's counter at that START */
    uint64_t counted_bytes;   /* over the closed periods */
    uint64_t last_bytes;      /* the counter in the newest record that has one */
    uint32_t stop_why;        /* the newest STOP's PROF_ALLOC_STOP_*; 0 none */
    /* LIVE: the newest complete answer */
    bool have_live;
    uint64_t live_answers;    /* the request_live value it answered (PROF_ALLOC_LIVE_AT_EXIT at exit) */
    uint64_t live_count;      /* seqs it named */
    uint64_t live_unknown;    /* of those, seqs of samples this reader never saw */
    uint64_t *pending;        /* the answer being read (records with F_MORE) */
    size_t npending, pending_cap;
    bool pending_open;
    uint64_t pending_answers, pending_total;
} ReportAllocLog;

/* Reads and checks the control block of a region of region_size bytes.
 * from_start: take the samples already in the ring (a VM launched with
 * STVM_ALLOC_SAMPLE sampled its start-up for us); else join at the
 * writer's end (those samples were someone else's). False with err. */
bool report_alloclog_open(ReportAllocLog *r, uint64_t region_size, ReportRingReadFn read, void *ctx, bool from_start,
                          char *err, size_t errlen);
/* Takes in every record written since the last poll. Answers the number
 * of records taken; warn gets a message (empty when none) for anything
 * lost or damaged in this poll. */
size_t report_alloclog_poll(ReportAllocLog *r, char *warn, size_t warnlen);
/* The VM's count of the bytes allocated while it sampled, over every
 * sampling period seen (an open period ends at the newest record). */
uint64_t report_alloclog_counted_bytes(const ReportAllocLog *r);
void report_alloclog_close(ReportAllocLog *r);

#endif
