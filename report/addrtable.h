/*
 * report/addrtable.h — a hash table from a code address to one 64-bit
 * value: the one table keyed by code address, shared by the writers and
 * readers of the VM's code events (profiler/codelog_writer.c's mirror of
 * live pieces, profiler/livecode.c's pieces a sink was told about,
 * report/codemap.c's open spans) and report/symbolize.c's address cache,
 * so lookup, growth and deletion are written once.
 *
 * A key is (space, addr): space is a small tag that keeps address spaces
 * apart (ProfCodeSpace: machine code, bytecodes; 0 when there is one). The
 * value is the caller's: an index, or a pointer through uintptr_t. The
 * table owns nothing a value points to.
 *
 *   slot   addr (8) | value (8) | space (1) | used (1) | padding
 *
 * Storage: open addressing with linear probing over a power-of-two array,
 * deletion by backward shift (no tombstones: a table that sees millions of
 * moves and frees never degrades), grown by doubling at 3/4 load. A hash
 * because a code compaction moves every survivor at once: each move is a
 * take and a put, O(1) expected. First size 256 slots (6 KiB): a start of
 * stvm announces ~200 pieces (the core's methods, the trampolines), and
 * each page calloc clears is a page fault at every start
 * (scripts/bench-startup).
 *
 * Invariants: at most one entry per key; count is the number of used
 * slots; a put right after a take never allocates, so re-keying an entry
 * (take, then put at the new key) cannot fail.
 *
 * Who may call: report/, profiler/ (it sits in report/, the lowest library
 * both link), tests. Not thread-safe.
 */
#ifndef REPORT_ADDRTABLE_H
#define REPORT_ADDRTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ReportAddrSlot {
    uint64_t addr;
    uint64_t value;
    uint8_t space;
    bool used;
} ReportAddrSlot;

/* Zero-initialised, it is an empty table that has allocated nothing. */
typedef struct ReportAddrTable {
    ReportAddrSlot *slots; /* cap slots; NULL while cap is 0 */
    size_t cap;            /* 0 or a power of two */
    size_t count;
} ReportAddrTable;

#define REPORT_ADDRTABLE_FIRST_CAP 256

/* The value at (space, addr) into *value (may be NULL); false when absent. */
bool report_addrtable_get(const ReportAddrTable *t, uint8_t space, uint64_t addr, uint64_t *value);
/* Sets the value at (space, addr), adding the key or overwriting its value.
 * false when the table could not grow (out of memory): it is unchanged. */
bool report_addrtable_put(ReportAddrTable *t, uint8_t space, uint64_t addr, uint64_t value);
/* Removes (space, addr), its value into *value (may be NULL); false when
 * absent. */
bool report_addrtable_take(ReportAddrTable *t, uint8_t space, uint64_t addr, uint64_t *value);
/* Iteration: start *cursor at 0; answers the next used slot, or NULL at
 * the end. In slot order, which is no order of the keys. The table must
 * not change during a walk. */
const ReportAddrSlot *report_addrtable_next(const ReportAddrTable *t, size_t *cursor);
/* Removes every entry and keeps the memory. */
void report_addrtable_clear(ReportAddrTable *t);
/* Removes every entry and frees the memory: the table is as zero-initialised. */
void report_addrtable_free(ReportAddrTable *t);

#endif
