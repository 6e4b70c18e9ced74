/*
 * proto/allocabi.h — sampled allocations: what the VM publishes so a
 * profiler sees who allocates, with whole stacks, and what of it stays
 * alive (export version 5: header.alloc_log_offset, alloc_log_size).
 *
 * Sampling (the VM): about one sample per `interval` bytes allocated,
 * drawn as a Poisson process over the stream of allocated bytes (the gap
 * to the next sample point is exponential with mean `interval`). The
 * allocation during which a sample point falls is sampled; its record
 * carries `weight`, the gap that ended at that point (the bytes from the
 * previous point; the sum of the gaps when one object holds several
 * points) — the bytes the sample stands for. Each method's or class's
 * share is unbiased, large objects' too: the gap before a point does not
 * depend on where the point falls (Poisson), so an object's expected
 * weight is its size. The weights add up to the bytes allocated up to the
 * newest point (short of the VM's counter by the tail after it, one
 * interval on average). An estimate of the objects a sample stands for is
 * weight / size. Every allocation counts (the
 * interpreter, primitives, machine code's inline allocation, large
 * objects straight into old space, method and class creation); tenuring
 * and compaction move objects and allocate nothing.
 *
 * The untraced cost is nothing on the fast path: machine code and the
 * interpreter bump eden's top against gc_eden_soft_limit, which the VM
 * lowers to the next sample point while sampling (as HotSpot samples
 * allocations with its TLAB end); the slow path then takes the sample and
 * raises the limit again.
 *
 * The region at header.alloc_log_offset (header.alloc_log_size bytes):
 *
 *   +---------------------+  alloc_log_offset
 *   | ProfAllocLogControl |  256 bytes: geometry, positions, the request, the VM's state
 *   +---------------------+  alloc_log_offset + control.ring_offset
 *   | ring                |  control.ring_size bytes, a power of two
 *   +---------------------+
 *
 * The ring is written and read exactly as the code event log's
 * (proto/export.h: positions, write_begin / write_end, the reader's four
 * steps and its recovery), with the same record header (ProfCodeRecord:
 * size, checksum by prof_code_log_checksum, seq, CLOCK_MONOTONIC time,
 * type, flags) and the record types below. There are no checkpoints: a
 * reader that falls behind loses the samples overwritten, counts them
 * (seq has a gap) and says so. A reader that joins starts at write_end:
 * the samples before it were taken for someone else.
 *
 * The request (the one field block a profiler writes; the VM reads it
 * when it polls: at every collection and every slow-path allocation):
 *   request_interval   mean bytes between samples; 0: nobody asks
 *   request_until_ns   CLOCK_MONOTONIC; past it the request has lapsed
 *                      (a profiler that died stops costing anything). A
 *                      profiler renews it (now + PROF_ALLOC_LEASE_NS) at
 *                      least every PROF_ALLOC_LEASE_NS / 4
 *   request_live       a profiler adds 1 to ask for what is alive: at its
 *                      next safe point the VM runs a full GC and writes
 *                      LIVE records answering that value
 *   request_live_at_exit  nonzero: when the VM exits normally (its program
 *                      returned, `system exit:`), it first writes a final
 *                      STOP and LIVE (answering PROF_ALLOC_LIVE_AT_EXIT)
 *                      after a full GC
 * Stores of the request: interval and live flags first, request_until_ns
 * last (release); the VM reads request_until_ns first (acquire).
 *
 * A VM started with STVM_ALLOC_SAMPLE=BYTES in its environment (vmprofd
 * sets it for a COMMAND it launches, so allocation at start-up is seen)
 * makes that request itself when it creates its segment, with a lease of
 * PROF_ALLOC_LEASE_NS, and removes the variable from its environment (the
 * processes it starts do not inherit it). STVM_ALLOC_SAMPLE_LIVE=1 sets
 * request_live_at_exit too.
 *
 * Records (types PROF_ALLOC_REC_*), bodies after the 32-byte header:
 *   START   ProfAllocStart: sampling began (or the interval changed)
 *   SAMPLE  ProfAllocSample, the class name (name_len bytes, NUL), zeros to
 *           8-alignment, then a ProfRawStack (proto/stackabi.h; raw_size
 *           bytes at raw_offset from the record's start): the whole stack
 *           of the allocation, walked in the VM by report/stackcapture.c
 *           from the frame of the code that asked for the object (the
 *           allocator's and the sampler's own frames are not in it)
 *   STOP    ProfAllocStop: sampling ended (lapsed, cancelled, exit)
 *   LIVE    ProfAllocLive, then count × u64: the seqs of SAMPLE records
 *           whose objects are alive after the full GC that answered
 *           `answers`. One answer may take several records (flag
 *           PROF_ALLOC_REC_F_MORE on all but the last). The VM follows
 *           sampled objects through every move (scavenges, tenuring,
 *           compaction) as weak references: following keeps nothing alive.
 *
 * Plain fixed-width C types; part of the export's wire format.
 *
 * Who may include: profiler/ (the writer), gc/ (sampling constants), vm/,
 * report/ and vmprofd/ (readers), tests.
 */
#ifndef PROTO_ALLOCABI_H
#define PROTO_ALLOCABI_H

#include "proto/export.h"
#include "proto/stackabi.h"

#include <stddef.h>
#include <stdint.h>

#define PROF_ALLOC_LOG_MAGIC 0x434f4c41d56d7473ull /* "stm\xd5ALOC" little-endian */
/* Go's runtime.MemProfileRate and async-profiler's default interval. */
#define PROF_ALLOC_DEFAULT_INTERVAL (512u << 10)
/* A SAMPLE record is ~2.5 KB (its whole stack); 8 MiB holds ~3300: at the
 * default interval 1.7 GB of allocation, over a second of the fastest
 * allocating benchmark, twenty of vmprofd's 50 ms polls. Pages nobody
 * writes cost nothing. */
#define PROF_ALLOC_LOG_DEFAULT_RING (8u << 20)
#define PROF_ALLOC_LOG_MIN_RING (64u << 10)
#define PROF_ALLOC_LOG_MAX_RING (1ull << 30)
#define PROF_ALLOC_LEASE_NS 5000000000ull
#define PROF_ALLOC_CLASS_NAME_MAX 255 /* longer names are cut */
#define PROF_ALLOC_LIVE_AT_EXIT (~0ull) /* LIVE.answers of the records written at exit */
#define PROF_ALLOC_SAMPLE_ENV "STVM_ALLOC_SAMPLE"
#define PROF_ALLOC_SAMPLE_LIVE_ENV "STVM_ALLOC_SAMPLE_LIVE"

typedef enum ProfAllocRecordType {
    PROF_ALLOC_REC_START = 1,
    PROF_ALLOC_REC_SAMPLE = 2,
    PROF_ALLOC_REC_STOP = 3,
    PROF_ALLOC_REC_LIVE = 4,
} ProfAllocRecordType;

#define PROF_ALLOC_REC_F_MORE 1u /* LIVE: more records answer the same request */

#define PROF_ALLOC_F_OLD 1u      /* SAMPLE: allocated straight into old space */
#define PROF_ALLOC_F_UNTRACKED 2u /* SAMPLE: not followed (the table was full): never in LIVE */

#define PROF_ALLOC_STOP_LAPSED 1u    /* ProfAllocStop.why: request_until_ns passed */
#define PROF_ALLOC_STOP_CANCELLED 2u /* request_interval became 0 */
#define PROF_ALLOC_STOP_EXIT 3u      /* the VM is exiting */

typedef struct ProfAllocLogControl {
    uint64_t magic;            /* PROF_ALLOC_LOG_MAGIC, stored last (release) */
    uint32_t control_size;     /* sizeof(ProfAllocLogControl) of the writer */
    uint32_t flags;
    uint64_t ring_offset;      /* from the start of the region; 64-aligned */
    uint64_t ring_size;        /* a power of two, PROF_ALLOC_LOG_MIN_RING .. _MAX_RING */
    uint64_t write_begin;      /* stream positions, as the code log's */
    uint64_t write_end;
    uint64_t records;          /* records written: the next record's seq */
    uint64_t reserved0;
    /* The request (written by a profiler) */
    uint64_t request_interval;
    uint64_t request_until_ns;
    uint64_t request_live;
    uint64_t request_live_at_exit;
    uint64_t request_reserved[4];
    /* The VM's state (written by the VM) */
    uint64_t active_interval;  /* the mean interval it samples with now; 0: not sampling */
    uint64_t bytes_allocated;  /* its counter of all bytes allocated, as of its newest record */
    uint64_t live_answered;    /* the request_live value the newest complete LIVE answer answers */
    uint64_t tracked;          /* sampled objects followed now */
    uint64_t untracked;        /* samples not followed: the table was full */
    uint64_t samples;          /* SAMPLE records written */
    uint64_t reserved[10];
} ProfAllocLogControl;

typedef struct ProfAllocStart {
    uint64_t interval;         /* mean bytes between samples */
    uint64_t bytes_allocated;  /* the VM's counter when sampling began */
} ProfAllocStart;

typedef struct ProfAllocSample {
    uint64_t weight;           /* bytes this sample stands for: the gap(s) ending inside the object */
    uint64_t size;             /* the object's bytes: header, overflow word, storage, padding */
    uint64_t bytes_allocated;  /* the VM's counter just after this allocation */
    uint32_t class_index;
    uint16_t name_len;         /* bytes of the class name that follows, without its NUL */
    uint16_t flags;            /* PROF_ALLOC_F_* */
    uint32_t raw_offset;       /* from the record's start to its ProfRawStack; 8-aligned */
    uint32_t raw_size;         /* sizeof(ProfRawStack) of the writer */
} ProfAllocSample;

typedef struct ProfAllocStop {
    uint64_t bytes_allocated;  /* the VM's counter when sampling ended */
    uint32_t why;              /* PROF_ALLOC_STOP_* */
    uint32_t zero;
} ProfAllocStop;

typedef struct ProfAllocLive {
    uint64_t answers;          /* the request_live value answered; PROF_ALLOC_LIVE_AT_EXIT at exit */
    uint64_t count;            /* seqs in this record */
    uint64_t total;            /* seqs in the whole answer (all its records) */
    uint64_t gc_time_ns;       /* CLOCK_MONOTONIC when the full GC ended */
} ProfAllocLive;

_Static_assert(sizeof(ProfAllocLogControl) == 256, "ProfAllocLogControl layout is ABI");
_Static_assert(offsetof(ProfAllocLogControl, write_begin) == 32, "ProfAllocLogControl layout is ABI");
_Static_assert(offsetof(ProfAllocLogControl, request_interval) == 64, "ProfAllocLogControl layout is ABI");
_Static_assert(offsetof(ProfAllocLogControl, active_interval) == 128, "ProfAllocLogControl layout is ABI");
_Static_assert(sizeof(ProfAllocStart) == 16, "ProfAllocStart layout is ABI");
_Static_assert(sizeof(ProfAllocSample) == 40, "ProfAllocSample layout is ABI");
_Static_assert(sizeof(ProfAllocStop) == 16, "ProfAllocStop layout is ABI");
_Static_assert(sizeof(ProfAllocLive) == 32, "ProfAllocLive layout is ABI");

#endif
