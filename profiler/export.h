/*
 * profiler/export.h — the ABI between stvm and its profilers.
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
 * Who may include: profiler/ (writer), vmprofd/ and report/ (readers).
 */
#ifndef PROFILER_EXPORT_H
#define PROFILER_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#define PROF_EXPORT_MAGIC 0x464f5250d56d7473ull /* "stm\xd5PROF" little-endian */
#define PROF_EXPORT_VERSION 1
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
} ProfExportHeader;

_Static_assert(sizeof(ProfCounters) == 8 * 30, "ProfCounters layout is ABI");
_Static_assert(offsetof(ProfCounters, scavenges) == 48, "ProfCounters layout is ABI");
_Static_assert(offsetof(ProfCounters, process_switches) == 136, "ProfCounters layout is ABI");
_Static_assert(offsetof(ProfExportHeader, counters_offset) == 40, "ProfExportHeader layout is ABI");
_Static_assert(sizeof(ProfExportHeader) == 88 + PROF_EXPORT_PATH_MAX, "ProfExportHeader layout is ABI");

#endif
