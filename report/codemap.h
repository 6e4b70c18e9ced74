/*
 * report/codemap.h — the VM's code over time: which piece of code (JIT'd
 * method or block, PIC, trampoline, or a method's bytecodes) owned which
 * addresses at which moment, rebuilt from the VM's code events, so that a
 * sample is resolved against the code as it was when the sample was taken
 * (Cog's VMProfiler resolved every sample against the zone as it was when
 * profiling stopped, so samples in code freed or moved since went to
 * whatever lay there at the end).
 *
 *   piece   what one LOAD described: name, kind, size, mcpc->bcpc map,
 *           source file and bcpc->line table (copied here)
 *   span    one piece at one address for one time interval
 *           [t_begin, t_end): a load opens a span, a move closes it and
 *           opens another for the same piece at the new address, a free
 *           closes it
 *
 * Events are fed in the order they happened (report/codelog_reader.c does so
 * from the export's log). Two address spaces are kept apart (ProfCodeSpace):
 * machine code, looked up with instruction pointers, and bytecodes, looked up
 * with the interpreter's ip.
 *
 * What the map knows about time: nothing before the first state it was
 * given (report_codemap_known), and nothing inside a gap, where the events
 * were lost (report_codemap_lost until the next known state): a lookup
 * there answers BEFORE or GAP, never a guess.
 *
 * Invariants: at most one open span per (space, start); spans never have
 * t_end < t_begin; times fed in decreasing order are taken as equal to the
 * last (the writer is one thread on one monotonic clock, so only a corrupt
 * log does that).
 *
 * Who may call: vmprofd/, stvm's in-VM profiler, tests. Not thread-safe.
 */
#ifndef REPORT_CODEMAP_H
#define REPORT_CODEMAP_H

#include "proto/export.h"
#include "report/report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A method the JIT inlined into a piece (proto/export.h, "The inline
 * section"; the meaning in profiler/codeevents.h). */
typedef struct ReportInlineScope {
    const char *name;         /* "Class>>sel" of the inlined method */
    const char *source;       /* NULL when unknown */
    const ReportLineEntry *lines; /* sorted by bcpc */
    size_t nlines;
    uint32_t bytecode_size;   /* of the inlined method */
    uint32_t call_bcpc;       /* the send in the parent scope */
    int32_t parent;           /* enclosing scope; -1: the piece's own method */
    /* made by report_codemap_load, ignored in what a producer hands in: the
     * map pairs of the piece inside ranges of this scope's method (every
     * scope of the same name and size in the piece), by offset, so the
     * ranges.h rule over them gives this method's bytecode ranges */
    const ReportMapEntry *map;
    size_t nmap;
} ReportInlineScope;

typedef struct ReportInlineRange {
    uint32_t start, end;      /* [start, end) offsets from the piece's start */
    uint32_t scope;           /* the innermost scope there */
} ReportInlineRange;

/* One frame of the chain at an offset: scope -1 is the piece's own method. */
typedef struct ReportInlineFrame {
    int32_t scope;
    uint32_t bc_from, bc_to;  /* the bytecode range (an inlined scope's parents: call_bcpc twice) */
    uint32_t line;            /* of bc_to in that method, 0 when unknown */
} ReportInlineFrame;

/* Deepest chain of inlined scopes a lookup follows (a longer one is cut at
 * its innermost end). */
#define REPORT_INLINE_MAX_DEPTH 32

typedef struct ReportCodePiece {
    uint32_t kind;            /* ProfCodeKind */
    uint32_t bytecode_size;   /* bytecodes of the method or block; 0: none */
    uint64_t size;            /* bytes of machine code, or bytecodes */
    uint64_t code_offset;     /* first instruction - start */
    const char *name;
    const char *source;       /* NULL when unknown */
    const ReportMapEntry *map; /* (offset from start, bcpc), sorted by offset */
    size_t nmap;
    const ReportLineEntry *lines; /* sorted by bcpc */
    size_t nlines;
    bool truncated;           /* the log dropped part of its map or lines */
    const uint32_t *unwind;   /* pairs (offset from start, PROF_UNWIND_* rule), by offset */
    size_t nunwind;           /* 0: frameless throughout (proto/stackabi.h) */
    /* inlined methods (version 6; none: 0, 0); report_codemap_check_inline
     * says whether a producer's are sound */
    const ReportInlineScope *scopes;
    size_t nscopes;
    const ReportInlineRange *ranges; /* by start, disjoint */
    size_t nranges;
    /* made by report_codemap_load: the map pairs outside every range (the
     * piece's own method's; = map when it has no ranges) */
    const ReportMapEntry *own_map;
    size_t nown_map;
} ReportCodePiece;

typedef enum ReportCodeStatus {
    REPORT_CODE_FOUND = 0,
    REPORT_CODE_NOTHING,  /* known, and no piece was there */
    REPORT_CODE_GAP,      /* events were lost around that time */
    REPORT_CODE_BEFORE,   /* before the first known state */
} ReportCodeStatus;

typedef struct ReportCodeHit {
    const ReportCodePiece *piece; /* the map's copy */
    uint64_t start;               /* where the piece was at that time */
    uint64_t t_begin, t_end;      /* ... and from when to when (t_end UINT64_MAX: still) */
    uint32_t span;                /* identifies (piece, start, interval) */
    uint32_t bc_from, bc_to;      /* machine code: the bytecode range (REPORT.md); bytecodes: the bcpc twice */
    uint32_t line;                /* source line of bc_to, 0 when unknown */
    /* machine code in an inlined range: its innermost scope (else -1); the
     * bytecode range and line above are then the piece's own method's at
     * the outermost scope's call_bcpc (report_codemap_inline_chain gives
     * every frame) */
    int32_t scope;
} ReportCodeHit;

typedef struct ReportCodeMapStats {
    uint64_t loads, moves, frees;
    uint64_t anomalies;    /* a move or free of an unknown piece, a load over a live one */
    uint64_t gaps;         /* times events were lost */
} ReportCodeMapStats;

typedef struct ReportCodeMap ReportCodeMap;

ReportCodeMap *report_codemap_new(void);
void report_codemap_free(ReportCodeMap *m);

/* The state is known from time on (the first call sets where BEFORE ends;
 * after report_codemap_lost it ends the gap). */
void report_codemap_known(ReportCodeMap *m, uint64_t time);
/* Events after time were lost: every live span ends at time and lookups
 * answer GAP from there until the next report_codemap_known. */
void report_codemap_lost(ReportCodeMap *m, uint64_t time);

/* piece is copied (strings, map, lines). */
void report_codemap_load(ReportCodeMap *m, uint64_t time, ProfCodeSpace space, uint64_t start,
                         const ReportCodePiece *piece);
void report_codemap_move(ReportCodeMap *m, uint64_t time, ProfCodeSpace space, uint64_t from, uint64_t to);
void report_codemap_unload(ReportCodeMap *m, uint64_t time, ProfCodeSpace space, uint64_t start);

/* What owned address in space at time. hit is filled when FOUND. */
ReportCodeStatus report_codemap_resolve(ReportCodeMap *m, uint64_t time, uint64_t address, ProfCodeSpace space,
                                        ReportCodeHit *hit);

/* Whether piece's scopes and ranges follow export.h's rules (ranges
 * sorted, disjoint, non-empty, within size, of existing scopes; parents a
 * tree); false with the rule broken in *why. A piece without any passes. */
bool report_codemap_check_inline(const ReportCodePiece *piece, const char **why);
/* The frames a machine-code offset of piece p stands for, innermost first,
 * the piece's own method (scope -1) last, into out (room > 0); answers how
 * many. Without inlining: one frame, as report_codemap_resolve's hit. */
size_t report_codemap_inline_chain(const ReportCodePiece *p, uint64_t offset, ReportInlineFrame *out, size_t room);
/* The range of p holding offset, or -1. */
int64_t report_codemap_inline_range_at(const ReportCodePiece *p, uint64_t offset);

/* The piece's last bytecode pc: the end of its last bytecode range (SOM
 * methods and blocks end in a one-byte return, so it is the last byte). */
uint32_t report_codemap_last_bcpc(const ReportCodePiece *p);
/* The smallest line of its line table (where pprof's start_line points). */
uint32_t report_codemap_first_line(const ReportCodePiece *p);

ReportCodeMapStats report_codemap_stats(const ReportCodeMap *m);
size_t report_codemap_span_count(const ReportCodeMap *m);

#endif
