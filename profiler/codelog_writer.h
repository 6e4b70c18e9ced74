/*
 * profiler/codelog_writer.h — the writer of the export's code event log:
 * records in a ring any number of readers copy from, checkpoints restating
 * the live pieces (the layout, the protocol and why they are correct are in
 * proto/export.h, "The code event log").
 *
 * The writer works on a region of memory it is given (the export segment
 * in stvm, a plain buffer in tests) and keeps, in private memory, a mirror
 * of every live piece: the encoded body of its LOAD record keyed by space
 * and start address, moved and dropped as the pieces are. Checkpoints are
 * written from the mirror, so the log never asks the VM for anything.
 *
 * Events carry their time; the caller stamps them (profiler/codeevents.h's
 * prof_code_event_time() in the VM). A MOVE or FREE names no space: the
 * piece's mirror entry says which, else the code zone's bounds do.
 *
 * Failure to allocate the mirror turns checkpoints off (flag and warning);
 * events are still logged. Nothing here blocks, and nothing a reader does
 * can affect the writer: positions and sequence numbers are kept privately
 * and only copied out.
 *
 * Who may call: profiler/publish.c, tests. Single thread: the VM thread.
 */
#ifndef PROFILER_CODELOG_WRITER_H
#define PROFILER_CODELOG_WRITER_H

#include "profiler/codeevents.h"
#include "proto/export.h"
#include "report/addrtable.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ProfCodeLogEntry ProfCodeLogEntry; /* a live piece in the mirror (codelog_writer.c) */

typedef struct ProfCodeLog {
    ProfCodeLogControl *ctl; /* in the region */
    uint8_t *ring;
    uint64_t ring_size, max_record;
    uint64_t end, seq;            /* private copies of write_end and records */
    uint64_t last_checkpoint;     /* position of the last checkpoint started (written or refused) */
    bool in_checkpoint;
    uint64_t cp_begin_seq, cp_begin_pos, cp_pieces;
    uint64_t zone_start, zone_end; /* machine-code space, for MOVE/FREE of unknown pieces */
    /* the mirror: (space, start) -> ProfCodeLogEntry * (report/addrtable.h) */
    ReportAddrTable mirror;
    uint64_t mirror_bytes;        /* what a checkpoint of it takes in the ring */
    bool mirror_failed;
    uint8_t *scratch;             /* one record being assembled */
    size_t scratch_cap;
    void (*warn)(const char *msg); /* once per kind of trouble; may be NULL */
    bool warned_too_big, warned_oom, warned_inline;
} ProfCodeLog;

/* Bytes a region needs for a ring of ring_bytes (control block + ring). */
size_t prof_codelog_region_bytes(uint64_t ring_bytes);
/* ring_bytes: a power of two from PROF_CODE_LOG_MIN_RING to _MAX_RING.
 * Zeroes the region, writes the control block (magic last). False with a
 * reason when the sizes are wrong. */
bool prof_codelog_init(ProfCodeLog *log, void *region, size_t region_bytes, uint64_t ring_bytes,
                       uint64_t zone_start, uint64_t zone_end, char *err, size_t errlen);
/* Frees the mirror and the scratch buffer (the region is the caller's). */
void prof_codelog_release(ProfCodeLog *log);

void prof_codelog_load(ProfCodeLog *log, uint64_t time_ns, const ProfCodeLoad *e);
void prof_codelog_move(ProfCodeLog *log, uint64_t time_ns, uint64_t from, uint64_t to, uint64_t size);
void prof_codelog_free(ProfCodeLog *log, uint64_t time_ns, uint64_t start, uint64_t size);

/* A checkpoint the caller fills: loads between begin and end are written
 * as checkpoint LOADs (and enter the mirror). The log's first checkpoint
 * is made this way, from the VM's replay of its live code. */
void prof_codelog_checkpoint_begin(ProfCodeLog *log, uint64_t time_ns);
void prof_codelog_checkpoint_end(ProfCodeLog *log, uint64_t time_ns);
/* A checkpoint from the mirror (the log makes these itself every half
 * ring; tests call it directly). */
void prof_codelog_checkpoint(ProfCodeLog *log, uint64_t time_ns);

/* Publishes where the interpreter keeps its bytecode ip (export.h). */
void prof_codelog_set_interp(ProfCodeLog *log, uint64_t interp_fn, uint32_t perf_reg);

/* A sink for profiler/codeevents.h whose ctx is log: events are stamped
 * with prof_code_event_time(). */
void prof_codelog_sink(ProfCodeLog *log, ProfCodeSink *out);

#endif
