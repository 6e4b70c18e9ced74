/*
 * profiler/codeevents.h — what happens to the VM's code, told to whoever
 * listens: the export's code event log, the perf map, the jitdump file, the
 * in-VM profiler, the ground-truth file of tests (profiler/codetruth.h).
 *
 * The VM (vm/jit/jitpublish.c for machine code, vm/loader/bytecodepublish.c for the
 * methods' bytecodes) calls prof_code_load / _move / _free; each registered
 * sink gets every event in the order it happened. A sink registered late
 * asks the VM to replay the loads of everything alive (prof_code_replay,
 * through the function the VM installed with prof_code_set_replay).
 *
 * Every event has one CLOCK_MONOTONIC time, taken as it is fanned out and
 * read by the sinks with prof_code_event_time(), so all sinks (the export's
 * log, a ground-truth file) stamp an event identically.
 *
 * Addresses are absolute. `map` pairs are (offset from start, bcpc) in
 * increasing offset order, exactly the JIT's mcpc -> bcpc map; `lines` pairs
 * are (bcpc, source line) in increasing bcpc order. Pointers in a
 * ProfCodeLoad are valid only during the call: a sink copies what it keeps.
 *
 * Inlining (issue 26): a piece that holds the machine code of methods the
 * JIT inlined into its own method carries their scopes and the code ranges
 * each one owns. The JIT guarantees, and every sink relies on:
 *   - ranges are sorted by start, disjoint, non-empty, with end <= size,
 *     offsets from start like the map's; a range names the innermost
 *     scope at its offsets (a scope inlined into an inlined scope has
 *     ranges of its own, cut out of its parent's);
 *   - scope parents form a tree rooted at -1 (the piece's own method);
 *   - map pairs whose offset lies in a range carry bcpcs of that range's
 *     scope's method; every range begins with a map pair of its scope, and
 *     the code right after a range (when any) begins with one of the
 *     enclosing scope;
 *   - call_bcpc is a bcpc of the parent scope's method (the send inlined).
 * A sample at offset o then stands for the frames: the innermost scope s
 * of the range holding o at its bcpc from the map, then s's parents, each
 * at its child's call_bcpc, ending with the piece's own method at the
 * outermost scope's call_bcpc. The profiler's bytecode ranges follow
 * report/ranges.h over each method's own pairs: s's method's are the
 * pairs inside ranges of scopes with its name and bytecode_size, the
 * piece's own method's the pairs outside every range. The code log writer
 * checks the first two rules (report_codemap_check_inline) and leaves out
 * a section that breaks them, with the piece's map (whose pairs in the
 * ranges are not the piece's method's) and a warning; scope indices, parents and
 * strings are checked by every reader.
 *
 * Who may call: vm/ (the events, the replay function, and adding the perf
 * map and jitdump sinks at start-up), profiler/ sinks (registration,
 * replay). Single thread: the VM thread.
 */
#ifndef PROFILER_CODEEVENTS_H
#define PROFILER_CODEEVENTS_H

#include "proto/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One method the JIT inlined into a piece. */
typedef struct ProfInlineScope {
    const char *name;        /* "Class>>sel" of the inlined method */
    const char *source;      /* its .som file; NULL or "" when unknown */
    const uint32_t *lines;   /* line_count pairs (bcpc, line), by bcpc, like the piece's own */
    uint32_t line_count;
    uint32_t bytecode_size;  /* bytecodes of the inlined method */
    uint32_t call_bcpc;      /* bcpc of the send in the parent scope */
    int32_t parent;          /* index of the enclosing scope; -1: the piece's own method */
} ProfInlineScope;

/* [start, end): offsets from the piece's start, like map offsets; the
 * code of scope `scope` (its innermost one there). */
typedef struct ProfInlineRange {
    uint32_t start, end, scope;
} ProfInlineRange;

typedef struct ProfCodeLoad {
    uint32_t kind;            /* ProfCodeKind (proto/export.h) */
    const char *name;         /* "Class>>sel", "[] in Class>>sel", "sel (closed PIC)", "ceSend" */
    uint64_t start, size;     /* the whole piece, header included for machine code */
    uint64_t code_start;      /* first instruction (start + header) */
    const uint32_t *map;      /* map_count pairs: (offset from start, bcpc) */
    uint32_t map_count;
    const char *source;       /* the .som file, or NULL */
    const uint32_t *lines;    /* line_count pairs: (bcpc, line) */
    uint32_t line_count;
    uint32_t bytecode_size;   /* bytecodes of the method or block; 0 for PICs and trampolines */
    uint64_t code_size;       /* bytes of instructions from code_start (the map and literal
                                 table follow them in the piece); 0 = up to start + size */
    /* unwind_count pairs (offset from start, PROF_UNWIND_* rule of
     * proto/stackabi.h) by offset: a pc's rule is the last pair at or
     * below it; none: frameless throughout (PICs, stubs) */
    const uint32_t *unwind;
    uint32_t unwind_count;
    /* inlined methods (above); none: scope_count = range_count = 0 */
    const struct ProfInlineScope *scopes;
    uint32_t scope_count;
    const struct ProfInlineRange *ranges;
    uint32_t range_count;
} ProfCodeLoad;

/* The instructions of load e: [*code, *code + *size), with code_start's and
 * code_size's defaults (the perf map and the jitdump name only these). */
static inline void prof_code_load_instructions(const ProfCodeLoad *e, uint64_t *code, uint64_t *size)
{
    *code = e->code_start ? e->code_start : e->start;
    *size = e->code_size ? e->code_size : e->start + e->size - *code;
}

typedef struct ProfCodeSink {
    const char *name;
    void (*load)(const ProfCodeLoad *e, void *ctx);
    void (*move)(uint64_t from, uint64_t to, uint64_t size, void *ctx);
    void (*free)(uint64_t start, uint64_t size, void *ctx);
    void *ctx;
} ProfCodeSink;

#define PROF_CODE_MAX_SINKS 8

/* false when all PROF_CODE_MAX_SINKS slots are taken. The sink struct must
 * outlive the VM (static). */
bool prof_code_sink_add(const ProfCodeSink *sink);
/* True when anyone listens: callers skip building events otherwise. */
bool prof_code_observed(void);

/* CLOCK_MONOTONIC in ns: the clock of every profiler timestamp (code
 * events, in-VM samples, jitdump records), the one perf_event samples carry.
 * Async-signal-safe. */
uint64_t prof_clock_ns(void);

void prof_code_load(const ProfCodeLoad *e);
void prof_code_move(uint64_t from, uint64_t to, uint64_t size);
void prof_code_free(uint64_t start, uint64_t size);
/* CLOCK_MONOTONIC nanoseconds of the event being delivered (or replayed). */
uint64_t prof_code_event_time(void);

/* The VM installs the function that re-announces every live piece of code
 * (as loads, to one sink); a sink added after code exists calls
 * prof_code_replay(itself). */
typedef void (*ProfCodeReplayFn)(const ProfCodeSink *to);
void prof_code_set_replay(ProfCodeReplayFn fn);
void prof_code_replay(const ProfCodeSink *to);

#endif
