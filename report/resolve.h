/*
 * report/resolve.h — turning the stored samples (raw addresses) into a
 * report Profile: each address becomes a location through the symbolizer,
 * each sample a stack of locations, leaf first.
 *
 * Addresses in the VM's code zone are resolved against the code as it was
 * at the sample's time (a report/codemap.h timeline): one function per
 * Smalltalk method or block with its mcpc->bcpc map (bytecode ranges), its
 * .som file and lines; PICs by selector and kind; trampolines by name.
 * Without a code event log, or where the log cannot say (events lost,
 * before it began), the zone stays one anonymous row, named for why. The
 * zone's addresses never go through the symbolizer's address cache: the
 * same address means different code at different times.
 *
 * Samples the interpreter takes: when the VM publishes the register that
 * holds its bytecode ip (ProfCodeLogControl.interp_fn / interp_ip_reg) and
 * a sample's leaf lies in that interpreter function, the register's value
 * is looked up among the methods' bytecodes at the sample's time, and the
 * method, "Class>>sel (interpreted)" in the vanilla region, becomes the
 * leaf above the interpreter's frame, with one bytecode range per bytecode.
 *
 * Machine code with inlined methods (report/codemap.h's inline scopes):
 * an address there is several frames, innermost first: each inlined method
 * as "Class>>sel (inlined)" (report.h) at its bytecode range, then the
 * method it was inlined into at the send's bcpc, down to the piece's own
 * method; caller frames of a whole stack whose return address lies in
 * inlined code get the same chain. --debug-resolutions adds a line "i"
 * per inlined frame after the piece's "m" line.
 *
 * Kernel addresses (a cpu-clock sample that hit a system call) become one
 * "[kernel]" function in the "rest" region on top of the user stack: the
 * kernel's own symbols are not ours to resolve, but the time is real.
 *
 * Who may call: vmprofd/session.c, the in-VM profiler (profiler/inimage_profile.c),
 * tests.
 */
#ifndef REPORT_RESOLVE_H
#define REPORT_RESOLVE_H

#include "report/codemap.h"
#include "report/report.h"
#include "report/samples.h"
#include "report/symbolize.h"

#include <stdio.h>

typedef struct ResolveCode {
    ReportCodeMap *map;        /* NULL: no code event log */
    uint64_t zone_start, zone_end; /* the code zone; 0, 0 without a JIT */
    const char *cwd;           /* the target's working directory, for relative .som paths; NULL */
    FILE *debug;               /* --debug-resolutions: one line per leaf in the zone; NULL */
    bool debug_all_frames;     /* ... and per caller frame in the zone too */
    uint64_t interp_fn;        /* an address inside the interpreter function; 0: not published */
    uint64_t return_to_interpreter; /* ceReturnToInterpreter (walk facts); 0: unknown */
    /* counts of leaf frames in the zone, filled by report_resolve_samples */
    uint64_t zone_leaves, resolved, nothing, lost, before;
    uint64_t interpreted;      /* samples attributed to an interpreted method */
} ResolveCode;

/* sym may be NULL (the target vanished before it could be described):
 * every user address then resolves to "[unknown]". code may be NULL. */
void report_resolve_samples(Profile *p, Symbolizer *sym, const SampleStore *st, ResolveCode *code);

/* The same one sample at a time, for producers that add more to each
 * (report/allocprof.c: the class of a sampled object as its leaf). */
typedef struct ReportResolver ReportResolver;
/* Room for the frames of one sample: a whole stack's every part, and the
 * rows a partial one adds. */
#define REPORT_RESOLVE_ROOM (PROF_RAW_MAX_KERNEL + PROF_RAW_MAX_LEAF + PROF_RAW_MAX_ST + PROF_RAW_MAX_ROOT + 16 + \
                             REPORT_MAX_FRAMES + 2 + 2 * REPORT_INLINE_MAX_DEPTH)
ReportResolver *report_resolver_new(Profile *p, Symbolizer *sym, ResolveCode *code);
/* The stack of st->v[i] as locations of p, leaf first, into frames
 * (REPORT_RESOLVE_ROOM of them); answers how many (at least one). */
size_t report_resolver_stack(ReportResolver *r, const SampleStore *st, size_t i, int *frames);
void report_resolver_free(ReportResolver *r);

#endif
