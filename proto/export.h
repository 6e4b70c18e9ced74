/*
 * proto/export.h — the ABI between stvm and its profilers.
 *
 * stvm publishes, in a POSIX shared-memory object named "/stvm-<pid>"
 * (so /dev/shm/stvm-<pid>), mode 0600 so only its user can open it:
 *
 *   offset 0                      ProfExportHeader   (fixed after creation)
 *   header.counters_offset        ProfCounters       (updated while running)
 *   header.code_log_offset        code event log     (version >= 2; 0 = absent)
 *
 * Plain C types of fixed width only; every struct's size is pinned below,
 * so vmprofd (which links nothing of the VM) and stvm agree byte for byte.
 * A reader checks magic, version, header_size and that every offset and
 * size lies inside segment_size before it trusts anything, and treats a
 * failed check as "no export" with a warning — never a crash.
 *
 * Counters are written by the VM thread only. Each field is an aligned
 * 64-bit word, so a reader never sees a torn value; `seq` is a seqlock
 * (odd while the GC statistics are being copied in) for readers that want
 * a consistent set.
 *
 * Versions: 1 had no code event log (code_log_* reserved, zero). 2 adds
 * it; the header and the counters are unchanged, so a version-1 reader
 * reads a version-2 segment's counters and a version-2 reader accepts a
 * version-1 segment (JIT'd code then stays one anonymous zone).
 *
 * Version 3 adds what a profiler needs to walk whole stacks at a sample
 * (proto/stackabi.h): the walk facts (header.walk_offset, walk_size)
 * and, in each LOAD, the piece's unwind pairs (after its source string).
 * A reader of version 3 that meets an older segment has no walk facts and
 * says so in its stacks; it never guesses.
 *
 * Version 4 adds who made the segment (start_ticks, boot_id: the process's
 * start time from /proc/PID/stat and the boot it started in, as
 * proto/identity.h computes them). A pid alone does not name a process: a
 * VM killed by SIGKILL leaves its segment, and a later process may get its
 * pid. A reader trusts a segment only when both match the target's; an
 * older segment cannot be matched and is read with a warning.
 *
 * Version 5 adds the allocation sample log (header.alloc_log_offset,
 * alloc_log_size; proto/allocabi.h), the one region a profiler writes
 * (its request); everything before it is unchanged, so a version-4 reader
 * reads a version-5 segment (header_size says how much of the header is
 * there) and a version-5 reader of an older segment cannot sample
 * allocations, and says so.
 *
 * Version 6 adds inlining (issue 26): a LOAD with flag INLINE carries,
 * after its unwind pairs, the methods the JIT inlined into the piece and
 * the code ranges each owns (the inline section below). Nothing else
 * changes: a version-5 reader ignores the flag and the bytes past the
 * unwind pairs (it reads a LOAD up to its counts and never asks for the
 * rest), so it reads a version-6 log and sees inlined code as the
 * piece's own method; a version-6 reader of an older log meets no INLINE
 * flag and sees none.
 *
 * A wire format (proto/): header-only, it depends on nothing, and stvm and
 * vmprofd share it at build time through the CMake target proto_export.
 *
 * Who may include: profiler/ (writer), vm/ (the counters it increments in
 * place), vmprofd/ and report/ (readers), tests.
 */
#ifndef PROTO_EXPORT_H
#define PROTO_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#define PROF_EXPORT_MAGIC 0x464f5250d56d7473ull /* "stm\xd5PROF" little-endian */
#define PROF_EXPORT_VERSION 6
#define PROF_EXPORT_VERSION_CODE_LOG 2 /* the first version with a code event log */
#define PROF_EXPORT_VERSION_STACKS 3   /* the first with walk facts and unwind pairs */
#define PROF_EXPORT_VERSION_IDENTITY 4 /* the first that says which process made it */
#define PROF_EXPORT_VERSION_ALLOC 5    /* the first with an allocation sample log */
#define PROF_EXPORT_VERSION_INLINE 6   /* the first whose LOADs may carry inline sections */
#define PROF_EXPORT_NAME_FMT "/stvm-%d"     /* shm_open name; the file is /dev/shm/stvm-<pid> */
#define PROF_EXPORT_PATH_FMT "/dev/shm/stvm-%d"
#define PROF_EXPORT_PATH_MAX 512

/* What a piece of code is (code events, constituents). */
typedef enum ProfCodeKind {
    PROF_CODE_METHOD = 1,     /* a compiled method (primitive stubs too) */
    PROF_CODE_BLOCK = 2,      /* a compiled block */
    PROF_CODE_CLOSED_PIC = 3,
    PROF_CODE_OPEN_PIC = 4,
    PROF_CODE_TRAMPOLINE = 5, /* trampolines and enilopmarts */
    PROF_CODE_BYTECODES = 6,  /* a method's bytecodes, for samples the interpreter takes */
} ProfCodeKind;

typedef struct ProfCounters {
    uint64_t seq;              /* seqlock over the GC statistics block */
    /* sizes (absolute) */
    uint64_t eden_bytes;
    uint64_t stack_pages;
    uint64_t code_bytes;       /* machine-code zone size; 0 without a JIT */
    uint64_t old_bytes;        /* old space in use */
    uint64_t old_free_bytes;   /* old space not yet used */
    /* garbage collection (copied after every collection) */
    uint64_t scavenges;
    uint64_t scavenge_usecs;
    uint64_t full_gcs;
    uint64_t full_usecs;
    uint64_t tenures;
    uint64_t objects_tenured;
    uint64_t root_table_overflows;
    uint64_t bytes_allocated;
    uint64_t bytes_freed;
    /* machine code (the JIT's) */
    uint64_t code_compactions;
    uint64_t code_compaction_usecs;
    /* events (incremented in place by the VM) */
    uint64_t process_switches;
    uint64_t interrupt_checks;
    uint64_t event_checks;
    uint64_t stack_overflows;
    uint64_t page_divorces;
    uint64_t reserved[8];      /* zero; room for counters without a version bump */
} ProfCounters;

typedef struct ProfExportHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;      /* sizeof(ProfExportHeader) of the writer */
    uint64_t segment_size;     /* bytes in the whole object */
    int32_t pid;
    int32_t vm_tid;            /* the thread that runs Smalltalk */
    uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC when the VM started */
    uint64_t counters_offset;
    uint64_t counters_size;    /* sizeof(ProfCounters) of the writer */
    uint64_t code_log_offset;  /* 0 when the segment has no code event log */
    uint64_t code_log_size;
    uint64_t code_zone_start;  /* machine-code zone bounds; 0 without a JIT */
    uint64_t code_zone_end;
    char vm_path[PROF_EXPORT_PATH_MAX]; /* the VM executable (/proc/self/exe) */
    uint64_t walk_offset;      /* version >= 3: ProfWalkFacts (proto/stackabi.h); 0 = absent */
    uint64_t walk_size;
    uint64_t start_ticks;      /* version >= 4: /proc/self/stat field 22 (clock ticks after boot) */
    char boot_id[40];          /* version >= 4: /proc/sys/kernel/random/boot_id, NUL-terminated */
    uint64_t alloc_log_offset; /* version >= 5: proto/allocabi.h; 0 = absent (--no-alloc-log) */
    uint64_t alloc_log_size;
} ProfExportHeader;

_Static_assert(sizeof(ProfCounters) == 8 * 30, "ProfCounters layout is ABI");
_Static_assert(offsetof(ProfCounters, scavenges) == 48, "ProfCounters layout is ABI");
_Static_assert(offsetof(ProfCounters, process_switches) == 136, "ProfCounters layout is ABI");
_Static_assert(offsetof(ProfExportHeader, counters_offset) == 40, "ProfExportHeader layout is ABI");
_Static_assert(sizeof(ProfExportHeader) == 168 + PROF_EXPORT_PATH_MAX, "ProfExportHeader layout is ABI");
_Static_assert(offsetof(ProfExportHeader, alloc_log_offset) == 152 + PROF_EXPORT_PATH_MAX, "ProfExportHeader layout is ABI");
#define PROF_EXPORT_HEADER_V4_SIZE (152 + PROF_EXPORT_PATH_MAX)
_Static_assert(offsetof(ProfExportHeader, start_ticks) == 104 + PROF_EXPORT_PATH_MAX, "ProfExportHeader layout is ABI");
#define PROF_EXPORT_HEADER_V3_SIZE (104 + PROF_EXPORT_PATH_MAX)
#define PROF_EXPORT_HEADER_V2_SIZE (88 + PROF_EXPORT_PATH_MAX)

/* -- The code event log (version >= 2) -----------------------------------------
 *
 * What code lives where, and since when: every piece of machine code the
 * JIT loads, moves or frees, and every method's bytecodes, so a profiler
 * resolves a sample against the code *as it was when the sample was
 * taken*. The region at header.code_log_offset (header.code_log_size bytes):
 *
 *   +--------------------+  code_log_offset
 *   | ProfCodeLogControl |  128 bytes: geometry, positions, newest checkpoint
 *   +--------------------+  code_log_offset + control.ring_offset
 *   | ring               |  control.ring_size bytes, a power of two
 *   +--------------------+
 *
 * The ring holds a stream of records. A record's *position* is its byte
 * offset in the stream since the log opened (64-bit: never wraps); its
 * bytes are at ring[position & (ring_size - 1)] onward and may run past
 * the ring's end into its start. Records and positions are 8-aligned.
 *
 * Writer (the VM thread, one record at a time; it never waits for readers):
 *   1. write_begin = end + size   (release store)  bytes of the stream below
 *                                 write_begin - ring_size are being overwritten
 *   2. copy the record into the ring
 *   3. write_end = end + size     (release store)  the record is complete
 * Reader, from its cursor c:
 *   0. copies the control block until two copies agree (a copy from another
 *      process is not atomic even per word: a torn one could be ahead of the
 *      writer, and positions only grow)
 *   1. e = write_end               (acquire)
 *   2. copy the stream [c, e) out of the ring
 *   3. b = write_begin             (acquire)
 *   4. b - ring_size > c: the bytes copied first may have been overwritten
 *      while copying: everything from c on is lost (recover, below);
 *      otherwise every record in [c, e) is intact.
 * Every record also carries its sequence number (0, 1, 2, … without gaps)
 * and a checksum of its bytes, so a torn or corrupt record (a writer that
 * died mid-record, a reader that copied the control block torn, a hostile
 * process) is recognised and its lengths are never trusted.
 *
 * Checkpoints (the constituents snapshot of reference 004, 3.1, as
 * records): the run
 *     CHECKPOINT_BEGIN, LOAD (flag CHECKPOINT) × n, CHECKPOINT_END(n)
 * restates every piece alive at one moment, all stamped with that time.
 * Replaying the stream from a checkpoint's BEGIN onto an empty zone
 * rebuilds the zone exactly. control.checkpoint_pos is the position of the
 * newest complete checkpoint's BEGIN, stored (release) after its END is
 * committed. The VM writes one when the log opens (position 0: the
 * trampolines and whatever else is already alive), then whenever the
 * stream has grown by half a ring since the last, just before the next
 * record. So the newest checkpoint and all that follows it are in the ring
 * at every moment, provided a checkpoint is smaller than half the ring
 * less one record; otherwise the VM sets PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG,
 * warns, and late readers see only what follows their arrival (make the
 * ring bigger: stvm --export-log-size). The VM writes checkpoints from its
 * own mirror of the live pieces (private memory, the encoded LOAD bodies),
 * so a checkpoint costs one copy of the live set per half ring of events
 * and nothing while no code is loaded, moved or freed.
 *
 * Readers: a reader that joins starts at position 0 while nothing has been
 * overwritten (write_begin <= ring_size: the whole history), else at
 * checkpoint_pos. A reader that fell behind (step 4) or met a bad record
 * recovers at the first checkpoint after the damage: between its last good
 * record and that checkpoint's time the zone is unknown, and it says so
 * instead of guessing. A reader that keeps up skips checkpoints.
 *
 * Time: every record carries CLOCK_MONOTONIC nanoseconds, the clock of
 * perf_event samples opened with use_clockid = 1, clockid = CLOCK_MONOTONIC
 * (and of ptrace-mode samples). A piece loaded at t_load and freed or moved
 * away at t_end owns its bytes for samples with t_load <= time < t_end:
 * the VM announces a load after the code is complete and before it runs, a
 * free before the bytes are reused, and it runs no machine code while
 * pieces move.
 *
 * Spaces: machine code (the code zone) and bytecodes (methods' bytecodes in
 * the heap, for samples the interpreter takes: start is the address of the
 * first bytecode, size the bytecode count, bcpc = address - start) are two
 * address spaces; a reader looks a value up in the space it came from (an
 * instruction pointer, or the interpreter's ip register).
 *
 * Record header (ProfCodeRecord, 32 bytes), then the body of its type:
 *
 *   byte 0        4           8           16          24     26      28    32
 *       +--------+-----------+-----------+-----------+------+-------+-----+
 *       | size   | checksum  | seq       | time_ns   | type | flags | 0   |
 *       +--------+-----------+-----------+-----------+------+-------+-----+
 *   size      the whole record, header included, a multiple of 8, at most
 *             ring_size / PROF_CODE_LOG_MAX_RECORD_FRACTION
 *   checksum  prof_code_log_checksum() of bytes [8, size)
 *
 *   LOAD   ProfCodeLoadRecord (48 bytes), then
 *            map    map_count  × (u32 offset from start, u32 bcpc), by offset
 *            lines  line_count × (u32 bcpc, u32 line), by bcpc
 *            name   name_len bytes and a NUL ("Class>>sel", "[] in Class>>sel",
 *                   "sel (closed PIC)", "ceSend")
 *            source source_len bytes and a NUL (the .som file; may be relative
 *                   to the VM's working directory; empty when unknown)
 *            unwind unwind_count × (u32 offset from start, u32 PROF_UNWIND_* rule),
 *                   by offset (version 3; proto/stackabi.h)
 *            inline section, only with flag INLINE (version 6), below
 *            zeros up to the record's size
 *
 * The inline section (version 6), byte-packed right after the unwind
 * pairs (so not aligned: readers copy it out), every integer little-endian:
 *
 *     ProfCodeInlineHeader      scope_count, range_count (8 bytes)
 *     scopes  scope_count × ProfCodeInlineScopeRecord (24 bytes each):
 *             line_count, bytecode_size, call_bcpc, parent (i32, -1: the
 *             piece's own method), name_len, source_len (u16), zero (u32)
 *     ranges  range_count × (u32 start, u32 end, u32 scope): [start, end)
 *             offsets from the piece's start, sorted by start, disjoint,
 *             non-empty, end <= size; scope < scope_count, the innermost
 *             scope there
 *     then per scope, in scope order:
 *             lines  line_count × (u32 bcpc, u32 line), by bcpc
 *             name   name_len bytes and a NUL ("Class>>sel"; cut at NAME_MAX)
 *             source source_len bytes and a NUL (empty when unknown)
 *
 * What it means (profiler/codeevents.h states the JIT's guarantees): map
 * pairs at offsets inside a range carry bcpcs of that range's scope's
 * method, a range begins with a pair of its scope, and the code right
 * after it with one of the enclosing scope. A sample at offset o is the
 * innermost scope of the range holding o (its bcpc from the map), then
 * each parent at its child's call_bcpc, then the piece's own method.
 * A reader rejects (as a corrupt record) a section whose counts overrun
 * the record, whose strings are not strings, whose ranges are unsorted,
 * overlap, are empty, pass the piece's size or name a scope that does not
 * exist, or whose parents do not form a tree (a parent index out of
 * bounds, or a cycle).
 *
 * Truncation (flag TRUNCATED), in order, until the record fits: the
 * piece's lines and every scope's lines go; then the map keeps its first
 * pairs; then, if the names, unwind pairs, scopes and ranges alone are
 * still too big, the inline section goes (flag INLINE cleared): the piece
 * is then seen as its own method throughout, as by a version-5 reader.
 * Ranges are never cut singly: a partial set would give wrong frames.
 *   MOVE   ProfCodeMoveRecord: the piece at `from` now starts at `to`
 *   FREE   ProfCodeFreeRecord: the piece at `start` is gone
 *   CHECKPOINT_BEGIN  no body
 *   CHECKPOINT_END    ProfCodeCheckpointEnd: the BEGIN's seq, the LOAD count
 */

#define PROF_CODE_LOG_MAGIC 0x474f4c43d56d7473ull /* "stm\xd5CLOG" little-endian */
#define PROF_CODE_LOG_MIN_RING (64u << 10)
#define PROF_CODE_LOG_MAX_RING (1ull << 30)
/* Default ring: SOM's core library and smalltalk/bench define ~740 methods,
 * whose bytecodes announced at start-up take ~200 bytes each (~150 KB);
 * the worst churn measured, five benchmarks in turn in a 64 KiB code zone
 * (tests/vmprofd/som/CodeChurn.som, ~1000 compactions a second), writes
 * 8.2 MB of events a second, so 4 MiB is half a second of it: ten of
 * vmprofd's 50 ms polls. Pages nobody writes cost nothing. */
#define PROF_CODE_LOG_DEFAULT_RING (4u << 20)
/* A record is at most 1/8 of the ring: checkpoints must fit in half a ring
 * less one record (above), so this leaves them at least 3/8 of it; a LOAD
 * too big is written without its lines, then with the first map pairs
 * that fit (flag TRUNCATED). The largest method of smalltalk/ maps to a
 * few hundred bytes; the smallest ring (64 KiB) allows 8 KiB. */
#define PROF_CODE_LOG_MAX_RECORD_FRACTION 8
#define PROF_CODE_LOG_NAME_MAX 1023   /* longer names are cut */
#define PROF_CODE_LOG_SOURCE_MAX 4095 /* longer paths are dropped */

typedef enum ProfCodeSpace {
    PROF_CODE_SPACE_MACHINE = 0,   /* the JIT's code zone */
    PROF_CODE_SPACE_BYTECODES = 1, /* methods' bytecodes in the heap */
    PROF_CODE_SPACE_COUNT
} ProfCodeSpace;

typedef enum ProfCodeRecordType {
    PROF_CODE_REC_LOAD = 1,
    PROF_CODE_REC_MOVE = 2,
    PROF_CODE_REC_FREE = 3,
    PROF_CODE_REC_CHECKPOINT_BEGIN = 4,
    PROF_CODE_REC_CHECKPOINT_END = 5,
} ProfCodeRecordType;

#define PROF_CODE_REC_F_CHECKPOINT 1u /* a LOAD restating a live piece inside a checkpoint */
#define PROF_CODE_REC_F_TRUNCATED 2u  /* a LOAD without (part of) its map or lines: too big */
#define PROF_CODE_REC_F_INLINE 4u     /* version 6: the LOAD ends with an inline section */

#define PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG 1u /* the live set outgrew half the ring */

typedef struct ProfCodeLogControl {
    uint64_t magic;          /* PROF_CODE_LOG_MAGIC, stored last (release) */
    uint32_t control_size;   /* sizeof(ProfCodeLogControl) of the writer */
    uint32_t flags;          /* PROF_CODE_LOG_F_* */
    uint64_t ring_offset;    /* from the start of the log region; 64-aligned */
    uint64_t ring_size;      /* a power of two, PROF_CODE_LOG_MIN_RING .. _MAX_RING */
    uint64_t write_begin;    /* stream positions, see above */
    uint64_t write_end;
    uint64_t checkpoint_pos; /* the newest complete checkpoint's BEGIN */
    uint64_t checkpoints;    /* checkpoints written */
    uint64_t records;        /* records written: the next record's seq */
    uint64_t truncated;      /* LOADs written without their map or lines */
    /* The interpreter's bytecode ip, for samples that land in the
     * interpreter (published by the VM when it keeps the ip in a register):
     * inside the function that contains address interp_fn, register
     * interp_ip_reg - 1 (perf_event's x86 register numbering,
     * PERF_REG_X86_*) holds the address of the bytecode being executed,
     * to be looked up in PROF_CODE_SPACE_BYTECODES. 0, 0: not published. */
    uint64_t interp_fn;
    uint32_t interp_ip_reg;
    uint32_t reserved0;
    uint64_t reserved[4];
} ProfCodeLogControl;

typedef struct ProfCodeRecord {
    uint32_t size;
    uint32_t checksum;
    uint64_t seq;
    uint64_t time_ns;
    uint16_t type;  /* ProfCodeRecordType */
    uint16_t flags; /* PROF_CODE_REC_F_* */
    uint32_t zero;
} ProfCodeRecord;

typedef struct ProfCodeLoadRecord {
    uint64_t start;          /* machine code: the piece's first byte (its header); bytecodes: the first bytecode */
    uint64_t size;           /* bytes (machine code) or bytecodes */
    uint64_t code_start;     /* first instruction (machine code), = start for bytecodes */
    uint32_t kind;           /* ProfCodeKind */
    uint32_t bytecode_size;  /* bytecodes of the method or block; 0 for PICs and trampolines */
    uint32_t map_count;
    uint32_t line_count;
    uint16_t name_len;
    uint16_t source_len;
    uint32_t unwind_count;   /* version 3: unwind pairs after the source; 0 before */
} ProfCodeLoadRecord;

typedef struct ProfCodeInlineHeader {
    uint32_t scope_count;
    uint32_t range_count;
} ProfCodeInlineHeader;

typedef struct ProfCodeInlineScopeRecord {
    uint32_t line_count;
    uint32_t bytecode_size;  /* bytecodes of the inlined method */
    uint32_t call_bcpc;      /* the send in the parent scope */
    int32_t parent;          /* -1: the piece's own method */
    uint16_t name_len;
    uint16_t source_len;
    uint32_t zero;
} ProfCodeInlineScopeRecord;

typedef struct ProfCodeInlineRangeRecord {
    uint32_t start, end, scope;
} ProfCodeInlineRangeRecord;

typedef struct ProfCodeMoveRecord {
    uint64_t from, to, size;
    uint32_t space; /* ProfCodeSpace */
    uint32_t zero;
} ProfCodeMoveRecord;

typedef struct ProfCodeFreeRecord {
    uint64_t start, size;
    uint32_t space;
    uint32_t zero;
} ProfCodeFreeRecord;

typedef struct ProfCodeCheckpointEnd {
    uint64_t begin_seq; /* seq of this checkpoint's BEGIN */
    uint64_t pieces;    /* LOAD records between them */
} ProfCodeCheckpointEnd;

_Static_assert(sizeof(ProfCodeLogControl) == 128, "ProfCodeLogControl layout is ABI");
_Static_assert(offsetof(ProfCodeLogControl, write_begin) == 32, "ProfCodeLogControl layout is ABI");
_Static_assert(offsetof(ProfCodeLogControl, write_end) == 40, "ProfCodeLogControl layout is ABI");
_Static_assert(offsetof(ProfCodeLogControl, checkpoint_pos) == 48, "ProfCodeLogControl layout is ABI");
_Static_assert(offsetof(ProfCodeLogControl, interp_fn) == 80, "ProfCodeLogControl layout is ABI");
_Static_assert(sizeof(ProfCodeRecord) == 32, "ProfCodeRecord layout is ABI");
_Static_assert(offsetof(ProfCodeRecord, seq) == 8, "ProfCodeRecord layout is ABI");
_Static_assert(offsetof(ProfCodeRecord, time_ns) == 16, "ProfCodeRecord layout is ABI");
_Static_assert(offsetof(ProfCodeRecord, type) == 24, "ProfCodeRecord layout is ABI");
_Static_assert(sizeof(ProfCodeLoadRecord) == 48, "ProfCodeLoadRecord layout is ABI");
_Static_assert(offsetof(ProfCodeLoadRecord, kind) == 24, "ProfCodeLoadRecord layout is ABI");
_Static_assert(offsetof(ProfCodeLoadRecord, name_len) == 40, "ProfCodeLoadRecord layout is ABI");
_Static_assert(sizeof(ProfCodeInlineHeader) == 8, "ProfCodeInlineHeader layout is ABI");
_Static_assert(sizeof(ProfCodeInlineScopeRecord) == 24, "ProfCodeInlineScopeRecord layout is ABI");
_Static_assert(offsetof(ProfCodeInlineScopeRecord, name_len) == 16, "ProfCodeInlineScopeRecord layout is ABI");
_Static_assert(sizeof(ProfCodeInlineRangeRecord) == 12, "ProfCodeInlineRangeRecord layout is ABI");
_Static_assert(sizeof(ProfCodeMoveRecord) == 32, "ProfCodeMoveRecord layout is ABI");
_Static_assert(sizeof(ProfCodeFreeRecord) == 24, "ProfCodeFreeRecord layout is ABI");
_Static_assert(sizeof(ProfCodeCheckpointEnd) == 16, "ProfCodeCheckpointEnd layout is ABI");

/* FNV-1a, 32 bits (the published offset basis and prime): each byte step
 * is a bijection of the running hash, so any single changed byte changes
 * the result. Shared by the writer and every reader so they cannot drift. */
static inline uint32_t prof_code_log_checksum(const void *bytes, size_t n)
{
    const uint8_t *p = (const uint8_t *)bytes;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

#endif
