/*
 * profiler/livecode.h — the pieces of machine code a sink has been told
 * about and that are still alive, keyed by the address of their piece.
 *
 * Its job: code events name a piece by its start address only when it
 * moves or is freed (profiler/codeevents.h), but the perf map needs the
 * moved piece's name again and the jitdump its code_index, instruction
 * offset and size. A sink puts a piece on load, re-keys it on move and takes
 * it out on free.
 *
 * Invariants:
 *   - At most one entry per start address: a load at an address already
 *     held replaces the old entry (its code was freed without a word, or
 *     moved over), so a stale entry can never answer for new code.
 *   - Entries own their name (a copy).
 *
 * Storage: report/addrtable.h's table from start to the entry (one
 * allocation each). A hash because compaction moves every survivor in one
 * go: each move is one take and one put, O(1) expected.
 *
 * Who may call: profiler/ sinks. Single thread (the VM thread).
 */
#ifndef PROFILER_LIVECODE_H
#define PROFILER_LIVECODE_H

#include "report/addrtable.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ProfLiveEntry {
    uint64_t start;       /* the piece (header included): the key */
    uint64_t code_offset; /* first instruction = start + code_offset */
    uint64_t code_size;   /* bytes of instructions */
    uint64_t index;       /* the sink's own number for the piece (jitdump code_index) */
    char *name;           /* owned copy, or NULL */
} ProfLiveEntry;

/* Zero-initialised, an empty table. */
typedef struct ProfLiveCode {
    ReportAddrTable by_start; /* start -> ProfLiveEntry * (malloc'd; no code lives at 0) */
} ProfLiveCode;

/* Adds or replaces the entry for e->start; copies e->name. false when out of
 * memory (the table is unchanged). */
bool prof_livecode_put(ProfLiveCode *t, const ProfLiveEntry *e);
/* The entry for start, or NULL; valid until the next put/take/move. */
const ProfLiveEntry *prof_livecode_get(const ProfLiveCode *t, uint64_t start);
/* Re-keys the entry at `from` to `to`, replacing whatever `to` held; false
 * (and nothing changes) when `from` is unknown. */
bool prof_livecode_move(ProfLiveCode *t, uint64_t from, uint64_t to);
/* Removes the entry at start; false when there was none. */
bool prof_livecode_take(ProfLiveCode *t, uint64_t start);
/* Empties the table and frees its memory. */
void prof_livecode_clear(ProfLiveCode *t);
/* A code sink's free event (profiler/codeevents.h) for a sink whose ctx is
 * its ProfLiveCode: neither the perf map nor the jitdump can say a piece
 * was freed, so this only forgets it, and a later move of other code to its
 * address is not mistaken for it. */
void prof_livecode_sink_free(uint64_t start, uint64_t size, void *live);

#endif
