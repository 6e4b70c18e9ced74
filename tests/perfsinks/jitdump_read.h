/*
 * tests/perfsinks/jitdump_read.h — reading and checking a jitdump file, for the
 * tests of stvm's writer (profiler/jitdump.c).
 *
 * Written from perf's jitdump specification
 * (tools/perf/Documentation/jitdump-specification.txt), not from the writer:
 * fields are read at the offsets the specification gives, never through
 * profiler/jitdump.h's structs, so a layout mistake there shows up here.
 *
 * jd_file_read checks the structure (header, every record's size and
 * fields, strings terminated inside their record, records tiling the file);
 * jd_file_check checks the meaning (debug info right before the load it
 * describes, rows inside that load's code in increasing address order, the
 * last allowed one past its end, indexes unique, moves naming a
 * loaded index at its current address, CLOSE last, timestamps in order,
 * addresses inside the code zone).
 *
 * Who may call: tests.
 */
#ifndef TESTS_PERF_JITDUMP_READ_H
#define TESTS_PERF_JITDUMP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { JD_LOAD = 0, JD_MOVE = 1, JD_DEBUG_INFO = 2, JD_CLOSE = 3, JD_UNWINDING_INFO = 4 };

typedef struct JdRow {
    uint64_t addr;
    uint32_t line, discrim;
    const char *file; /* inside the file's bytes */
} JdRow;

typedef struct JdRecord {
    uint32_t id, total_size;
    uint64_t timestamp;
    size_t offset; /* of the record in the file */
    /* LOAD and MOVE */
    uint32_t pid, tid;
    uint64_t vma, code_size, code_index;
    /* LOAD */
    uint64_t code_addr;
    const char *name;
    const uint8_t *code;
    /* MOVE */
    uint64_t old_code_addr, new_code_addr;
    /* DEBUG_INFO (code_addr too) */
    JdRow *rows;
    uint64_t nrows;
} JdRecord;

typedef struct JdFile {
    uint8_t *data;
    size_t size;
    uint32_t magic, version, header_size, elf_mach, pid;
    uint64_t timestamp, flags;
    JdRecord *recs;
    size_t nrecs;
    size_t loads, moves, debug_infos, closes, unwinding_infos;
} JdFile;

typedef struct JdCheck {
    uint64_t zone_lo, zone_hi; /* code must lie in [lo, hi); both 0: not checked */
} JdCheck;

/* false with a message (naming the offset) when the file is malformed. */
bool jd_file_read(const char *path, JdFile *f, char *err, size_t errlen);
bool jd_file_check(const JdFile *f, const JdCheck *c, char *err, size_t errlen);
void jd_file_free(JdFile *f);

/* The LOAD with code_index, or NULL. */
const JdRecord *jd_file_load(const JdFile *f, uint64_t code_index);

#endif
