/*
 * profiler/jitdump.h — the jitdump file: every piece of machine code the
 * JIT makes, with its bytes, source lines and moves, timestamped, for
 * `perf inject --jit` to turn into ELF files that perf report and perf
 * annotate resolve samples against as they were when each sample was taken.
 *
 * The format is perf's (tools/perf/Documentation/jitdump-specification.txt,
 * version 1 of the file header). All fields little-endian as the host
 * writes them; records follow each other without padding.
 *
 *   file header (40 bytes)
 *   byte 0       4         8            12         16     20     24          32
 *       +--------+---------+------------+----------+------+------+-----------+-------+
 *       | magic  | version | total_size | elf_mach | pad1 | pid  | timestamp | flags |
 *       | JiTD   | 1       | 40         | 62       | 0    |      | u64       | 0     |
 *       +--------+---------+------------+----------+------+------+-----------+-------+
 *
 *   record header (16 bytes), then the payload:
 *       +--------+------------+-----------+
 *       | id u32 | total_size | timestamp |  total_size counts header + payload
 *       +--------+------------+-----------+
 *
 *   JIT_CODE_DEBUG_INFO (2): code_addr u64, nr_entry u64, then nr_entry x
 *       { addr u64, line u32, discrim u32 (0), file name NUL-terminated }
 *   JIT_CODE_LOAD (0): pid u32, tid u32, vma u64, code_addr u64,
 *       code_size u64, code_index u64, name NUL-terminated, code bytes
 *   JIT_CODE_MOVE (1): pid u32, tid u32, vma u64, old_code_addr u64,
 *       new_code_addr u64, code_size u64, code_index u64
 *   JIT_CODE_CLOSE (3): nothing
 *
 * What stvm writes:
 *   - one LOAD per piece the JIT makes (methods, blocks, primitive stubs,
 *     PICs, trampolines), code_index counting from 1; vma = code_addr = the
 *     first instruction after the 48-byte JitMethod header, code_size the
 *     instructions only (not the map and literal table after them). The
 *     bytes are the code as compiled: send sites linked later patch the live
 *     copy, not the file.
 *   - before the LOAD of a method or block with a source file and line
 *     table, its DEBUG_INFO: one row per mcpc->bcpc map entry. A map entry's
 *     mcpc is the address just past its instruction (vm/jit/map.h), so the
 *     code *up to* it is its bytecode's: the row at the code start carries
 *     the line of the first entry's bytecode and the row at each entry's
 *     mcpc the line of the next entry's; a DWARF line row covers its
 *     address up to the next row. Lines come from the method's (bcpc, line)
 *     table: the line of the last pair at or before the bcpc. A last row at
 *     the code's end (one past its last byte) repeats the last line: perf
 *     inject ends the DWARF sequence at the last row it is given, so without
 *     it the last line would cover nothing (and a one-line method would have
 *     no line at all). The file name is the .som file's base name (as
 *     backtraces print it).
 *     With inlined methods (profiler/codeevents.h) a row also starts where
 *     an inlined range begins or ends, and "the next entry" is the next of
 *     the same method: in a range of inlined method B, the row carries B's
 *     .som file and the line, in B's table, of B's next map entry (entries
 *     of a method inlined into B, in between, belong to that one); outside
 *     every range, the piece's own entries and file, as above.
 *   - a MOVE for every piece compaction slides, with the code_index of its
 *     LOAD (perf maps the same ELF image at the new address).
 *   - CLOSE at exit.
 *   - nothing when code is freed: the format has no such record. perf keeps
 *     a freed piece's image mapped at its address until a later LOAD or MOVE
 *     covers it, which, in stvm's zone, is the next code put there.
 *   - timestamps are CLOCK_MONOTONIC in nanoseconds, header flags 0 (not an
 *     architecture clock): `perf record -k 1` (clockid CLOCK_MONOTONIC) takes
 *     samples on the same clock, and perf inject refuses other recordings.
 *
 * The file is named jit-PID.dump (perf inject finds it by that pattern)
 * and mapped once, one page, PROT_READ|PROT_EXEC: perf record logs
 * executable mappings only, and that mapping is how perf inject learns
 * where the dump is. A directory on a noexec mount refuses the mapping;
 * open then fails with a message.
 *
 * Each record goes out in one write(2) as its event happens, so a VM that
 * crashes leaves a valid file (without CLOSE, which is optional).
 *
 * Who may call: vm/main.c (open, then prof_code_sink_add and
 * prof_code_replay with the sink it answers); tests. Single thread.
 */
#ifndef PROFILER_JITDUMP_H
#define PROFILER_JITDUMP_H

#include "profiler/codeevents.h"

#include <stddef.h>
#include <stdint.h>

#define PROF_JITDUMP_MAGIC 0x4A695444u /* "JiTD" read as a little-endian u32 */
#define PROF_JITDUMP_VERSION 1
#define PROF_JITDUMP_NAME_FMT "jit-%d.dump"

enum {
    PROF_JITDUMP_CODE_LOAD = 0,
    PROF_JITDUMP_CODE_MOVE = 1,
    PROF_JITDUMP_CODE_DEBUG_INFO = 2,
    PROF_JITDUMP_CODE_CLOSE = 3,
    PROF_JITDUMP_CODE_UNWINDING_INFO = 4,
};



typedef struct ProfJitdumpHeader {
    uint32_t magic, version, total_size, elf_mach, pad1, pid;
    uint64_t timestamp, flags;
} ProfJitdumpHeader;

typedef struct ProfJitdumpRecord {
    uint32_t id, total_size;
    uint64_t timestamp;
} ProfJitdumpRecord;

/* JIT_CODE_UNWINDING_INFO: before a load, how to unwind its code (the
 * .eh_frame then .eh_frame_hdr of profiler/ehframe.h), padded to 8 bytes. */
typedef struct ProfJitdumpUnwinding {
    ProfJitdumpRecord p;
    uint64_t unwinding_size;    /* .eh_frame + .eh_frame_hdr */
    uint64_t eh_frame_hdr_size;
    uint64_t mapped_size;       /* the same: nothing of it is mapped at run time */
} ProfJitdumpUnwinding;

typedef struct ProfJitdumpLoad {
    ProfJitdumpRecord r;
    uint32_t pid, tid;
    uint64_t vma, code_addr, code_size, code_index;
    /* then: name, NUL, code bytes */
} ProfJitdumpLoad;

typedef struct ProfJitdumpMove {
    ProfJitdumpRecord r;
    uint32_t pid, tid;
    uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
} ProfJitdumpMove;

typedef struct ProfJitdumpDebugInfo {
    ProfJitdumpRecord r;
    uint64_t code_addr, nr_entry;
    /* then nr_entry ProfJitdumpDebugEntry, each followed by its file name and NUL */
} ProfJitdumpDebugInfo;

typedef struct ProfJitdumpDebugEntry {
    uint64_t addr;
    uint32_t line, discrim;
} ProfJitdumpDebugEntry;

_Static_assert(sizeof(ProfJitdumpHeader) == 40, "file header is 40 bytes");
_Static_assert(offsetof(ProfJitdumpHeader, pid) == 20, "pid at 20");
_Static_assert(offsetof(ProfJitdumpHeader, timestamp) == 24, "timestamp at 24");
_Static_assert(offsetof(ProfJitdumpHeader, flags) == 32, "flags at 32");
_Static_assert(sizeof(ProfJitdumpRecord) == 16, "record header is 16 bytes");
_Static_assert(sizeof(ProfJitdumpLoad) == 56, "load: header + 40 bytes, then the name");
_Static_assert(offsetof(ProfJitdumpLoad, vma) == 24, "load vma at 24");
_Static_assert(offsetof(ProfJitdumpLoad, code_index) == 48, "load code_index at 48");
_Static_assert(sizeof(ProfJitdumpMove) == 64, "move: header + 48 bytes");
_Static_assert(offsetof(ProfJitdumpMove, old_code_addr) == 32, "move old_code_addr at 32");
_Static_assert(sizeof(ProfJitdumpDebugInfo) == 32, "debug info: header + 16 bytes, then entries");
_Static_assert(sizeof(ProfJitdumpDebugEntry) == 16, "debug entry: 16 bytes, then the file name");

/* Creates DIR/jit-PID.dump, DIR "." when NULL, writes the file header, maps
 * the file executable, and answers the sink to register; the file is closed
 * (CLOSE written) at exit. A file or link of ours at that path is stale and
 * replaced; one of another user is left alone (report/safefile.h): a
 * warning on stderr, and the sink answered writes nothing. NULL with a message in err when
 * the file cannot be created, written or mapped. Opening again closes the
 * previous dump first. */
const ProfCodeSink *prof_jitdump_open(const char *dir, char *err, size_t errlen);
/* Writes JIT_CODE_CLOSE and closes the file (also registered with atexit);
 * the sink then ignores events. */
void prof_jitdump_close(void);
/* The dump's path, "" when none is open. */
const char *prof_jitdump_path(void);

#endif
