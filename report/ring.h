/*
 * report/ring.h — reading one of the export's record rings from outside
 * its writer: the part the code event log (codelog_reader.c) and the
 * allocation sample log (alloclog_reader.c) share. The protocol is the
 * code log's (proto/export.h, "The code event log": positions,
 * write_begin / write_end, the reader's four steps, the record header
 * with its size, checksum and seq); what the records mean, and how a
 * reader recovers from damage, is each log's own.
 *
 * Both logs' control blocks start alike (magic, control_size, flags,
 * ring_offset, ring_size, write_begin, write_end, then a word that moves
 * with them): the offsets are pinned below, so one reader serves both.
 *
 * Nothing read is trusted: the geometry is checked at open, the positions
 * at every refresh, each record's size and checksum before its body is
 * looked at. Messages start with the log's name ("code log: …").
 *
 * Who may call: report/codelog_reader.c, report/alloclog_reader.c, tests.
 * Not thread-safe.
 */
#ifndef REPORT_RING_H
#define REPORT_RING_H

#include "proto/allocabi.h"
#include "proto/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies len bytes at offset (from the start of the log region, never
 * past region_size) into buf; false when they cannot be read. */
typedef bool (*ReportRingReadFn)(void *ctx, uint64_t offset, void *buf, size_t len);

/* The control block words every ring reader looks at. */
#define REPORT_RING_RING_OFFSET 16
#define REPORT_RING_WRITE_BEGIN 32
#define REPORT_RING_WRITE_END 40
#define REPORT_RING_AGREE_END 56 /* [write_begin, here) must agree in two copies */
_Static_assert(offsetof(ProfCodeLogControl, ring_offset) == REPORT_RING_RING_OFFSET, "ring control layout");
_Static_assert(offsetof(ProfCodeLogControl, write_begin) == REPORT_RING_WRITE_BEGIN, "ring control layout");
_Static_assert(offsetof(ProfCodeLogControl, write_end) == REPORT_RING_WRITE_END, "ring control layout");
_Static_assert(offsetof(ProfAllocLogControl, ring_offset) == REPORT_RING_RING_OFFSET, "ring control layout");
_Static_assert(offsetof(ProfAllocLogControl, write_begin) == REPORT_RING_WRITE_BEGIN, "ring control layout");
_Static_assert(offsetof(ProfAllocLogControl, write_end) == REPORT_RING_WRITE_END, "ring control layout");

typedef struct ReportRing {
    const char *what;       /* "code log", "allocation log": the start of every message */
    ReportRingReadFn read;
    void *ctx;
    uint64_t region_size;
    uint64_t ring_offset, ring_size, max_record;
    uint64_t last_end;      /* write_end at the last refresh: it never goes back */
    uint8_t *buf;           /* the copy of the stream being parsed; 8-aligned */
    size_t cap;
} ReportRing;

/* Reads the control block (struct_size bytes, into control) of a region of
 * region_size bytes and checks it: magic (its first word), control_size,
 * a power-of-two ring from min to max, an aligned ring_offset inside the
 * region. On success r is set up (records at most ring_size / max_fraction
 * bytes). False with the reason in why. */
bool report_ring_open(ReportRing *r, const char *what, uint64_t region_size, ReportRingReadFn read, void *ctx,
                      void *control, size_t struct_size, uint64_t magic, uint64_t min_ring, uint64_t max_ring,
                      uint64_t max_fraction, char *why, size_t whylen);
void report_ring_close(ReportRing *r);

/* Reads the control block (size bytes) into c until two copies agree on
 * [write_begin, REPORT_RING_AGREE_END) (a copy of another process's
 * memory is not atomic even per word), then checks that the geometry is
 * unchanged and the positions make sense: write_end never goes back,
 * write_begin is ahead of it by less than a record. False with a message
 * in why: try again at the next poll. */
bool report_ring_refresh(ReportRing *r, void *c, size_t size, char *why, size_t whylen);
static inline uint64_t report_ring_write_begin(const void *c)
{
    uint64_t v;
    __builtin_memcpy(&v, (const uint8_t *)c + REPORT_RING_WRITE_BEGIN, sizeof v);
    return v;
}
static inline uint64_t report_ring_write_end(const void *c)
{
    uint64_t v;
    __builtin_memcpy(&v, (const uint8_t *)c + REPORT_RING_WRITE_END, sizeof v);
    return v;
}

typedef enum ReportRingCopy {
    REPORT_RING_COPIED,     /* r->buf holds the stream [pos, pos + n), intact */
    REPORT_RING_OVERRUN,    /* the writer overwrote some of it while it was copied */
    REPORT_RING_UNREADABLE, /* the ring cannot be read any more */
} ReportRingCopy;
/* Steps 2 to 4 of the protocol: copies [pos, pos + n) (n at most the ring)
 * and re-reads write_begin; begin_before is write_begin as refreshed. */
ReportRingCopy report_ring_copy(ReportRing *r, uint64_t pos, size_t n, uint64_t begin_before);

/* The bytes to copy next from pos when the writer is at end: up to a
 * chunk, never less than two records. */
size_t report_ring_chunk(const ReportRing *r, uint64_t pos, uint64_t end);

typedef enum ReportRingRecord {
    REPORT_RING_RECORD,     /* a whole record whose size and checksum are right */
    REPORT_RING_PARTIAL,    /* its end is in the next chunk */
    REPORT_RING_BAD,        /* why says what */
} ReportRingRecord;
/* Checks the record at buf[off] of a chunk of n bytes copied from stream
 * position chunk_pos, the writer being at write_end; fills h. */
ReportRingRecord report_ring_record(const ReportRing *r, size_t off, size_t n, uint64_t chunk_pos, uint64_t write_end,
                                    ProfCodeRecord *h, const char **why);

/* A poll's warning: the first trouble of a poll is the one worth reading,
 * so warn is written only while it is still empty. */
void report_ring_say(char *warn, size_t warnlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
