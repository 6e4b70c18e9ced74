/*
 * report/samples.h — the samples of one run, kept as unwound stacks of raw
 * addresses until sampling ends.
 *
 * Samples are unwound as they arrive (the stack copy is only valid then,
 * and 16 KiB per sample would not fit in memory for long runs) but
 * resolved to names only at the end (resolve.c), when the symbolizer has
 * seen every library the target loaded. A stack is leaf first.
 *
 * Layout: one growing array of StoredSample and one of addresses; sample i
 * owns pcs[first .. first + npcs).
 *
 * Who may call: vmprofd/session.c, report/resolve.c, the in-VM profiler
 * (profiler/inimage_profile.c).
 */
#ifndef REPORT_SAMPLES_H
#define REPORT_SAMPLES_H

#include "proto/stackabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper stacks are cut at the root end; recursive Smalltalk code can
 * nest the interpreter deeper than any profile needs to show. */
#define REPORT_MAX_FRAMES 128

typedef struct StoredSample {
    uint64_t time_ns;
    uint32_t tid;
    uint32_t npcs;      /* user-space frames, may be 0 for a kernel-only sample */
    uint64_t kernel_ip; /* 0: the sample was in user space */
    uint64_t interp_ip; /* the interpreter's bytecode ip register, when the VM publishes it; else 0 */
    uint64_t weight;    /* 1; the CPU ns its thread used since its previous sample, where the sampler weighs
                         * samples (report.h: cpu_weighted), set by the producer after adding */
    size_t first;       /* index of the leaf pc in SampleStore.pcs */
    /* A whole stack walked at the sample (proto/stackabi.h): then pcs
     * holds kernel[], leaf[], st[], root[] of the ProfRawStack one after
     * the other (nkernel + nleaf + nst + nroot = npcs) and top its top_pc,
     * top_sp, top_fp, top_bytes and top_words. */
    bool whole;
    uint8_t raw_mode;
    uint16_t nkernel, nleaf, nst, nroot;
    uint32_t raw_flags, raw_why;
    uint64_t top[4 + PROF_RAW_TOP_WORDS];
    /* 0, or 1 + the index in SampleStore.labels of a pseudo-frame above
     * the leaf (wall-clock sampling: "[off-CPU: read]"), set by the
     * producer after adding. */
    uint32_t label;
} StoredSample;

typedef struct SampleStore {
    StoredSample *v;
    size_t n, cap;
    uint64_t *pcs;
    size_t npcs, cappcs;
    char **labels;      /* distinct leaf pseudo-frame names (StoredSample.label) */
    size_t nlabels;
} SampleStore;

/* False when out of memory (the sample is dropped). */
bool report_samples_add(SampleStore *st, uint64_t time_ns, uint32_t tid, uint64_t kernel_ip, const uint64_t *pcs,
                         size_t npcs);
/* A whole stack; false when out of memory (the sample is dropped). */
bool report_samples_add_raw(SampleStore *st, const ProfRawStack *raw);
/* The label id (StoredSample.label) of a pseudo-frame name, made on first
 * use; 0 when out of memory. */
uint32_t report_samples_label(SampleStore *st, const char *name);
void report_samples_free(SampleStore *st);

#endif
