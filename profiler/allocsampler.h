/*
 * profiler/allocsampler.h — the VM's side of allocation profiling
 * (proto/allocabi.h): the sampler gc/ calls (gc/heap.h, GcAllocSampler)
 * and the logs it writes its records into.
 *
 * A log is a region laid out as the export's (ProfAllocLogControl, then
 * the ring) whose request block a consumer writes and whose records it
 * reads by the protocol of proto/allocabi.h. There are two:
 *   - the export's (profiler/publish.c opens it in the segment), for
 *     vmprofd and any other profiler outside the process;
 *   - a private one (prof_allocsampler_private_open), for a consumer
 *     inside the VM (VMProfiler spyAllocationsOn:): the same layout and
 *     records in private memory, requested and read the same way.
 * The VM samples with the smallest interval any live request asks for;
 * every log whose request is live gets every SAMPLE record. Each log has
 * its own START/STOP records, seqs and LIVE answers.
 *
 * Requests are polled by gc/ (every slow-path allocation, every
 * collection): a request's lease is checked against the clock at
 * collections, at samples and when the request changes. A live request
 * asks gc/ for a full GC at the next safe point; the answer is written at
 * the poll after it.
 *
 * Sampled objects are followed with gc/weak.h, tagged with their SAMPLE
 * records' seqs (the export log's in the low 32 bits + 1, the private
 * log's in the high 32 bits + 1, 0: not written there).
 *
 * Who may call: vm/ (boot, exit), profiler/publish.c. The VM thread only.
 */
#ifndef PROFILER_ALLOCSAMPLER_H
#define PROFILER_ALLOCSAMPLER_H

#include "proto/allocabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes a region needs for a ring of ring_bytes (control block + ring). */
size_t prof_alloclog_region_bytes(uint64_t ring_bytes);

/* The VM's class names: the name of the class whose instances have
 * class_index (into buf, or a constant); must not allocate. */
typedef const char *(*ProfAllocClassNameFn)(uint32_t class_index, char *buf, size_t len);

/* Installs the sampler in gc/ (once, at boot: the walk facts are copied;
 * NULL: native stacks only), and takes STVM_ALLOC_SAMPLE and
 * STVM_ALLOC_SAMPLE_LIVE out of the environment. */
void prof_allocsampler_init(const ProfWalkFacts *walk, ProfAllocClassNameFn class_name);

/* The export's log in region (zeroed by the caller or fresh): ring_bytes a
 * power of two in PROF_ALLOC_LOG_MIN_RING .. _MAX_RING. Then makes the
 * request STVM_ALLOC_SAMPLE / STVM_ALLOC_SAMPLE_LIVE asked for at init.
 * False with a reason. */
bool prof_allocsampler_open_export(void *region, size_t region_bytes, uint64_t ring_bytes, char *err, size_t errlen);
/* There will be no export log: warns if STVM_ALLOC_SAMPLE asked for one. */
void prof_allocsampler_no_export(void);

/* The private log: a region of prof_alloclog_region_bytes(ring_bytes) in
 * private memory, answered (NULL with a reason). Its consumer writes the
 * request (request_interval, then request_until_ns last with a release
 * store: UINT64_MAX for no lease) and reads the ring like a profiler.
 * One at a time; close frees it (sampling for it stops at once). */
ProfAllocLogControl *prof_allocsampler_private_open(uint64_t ring_bytes, char *err, size_t errlen);
void prof_allocsampler_private_close(void);

/* fn(ctx) is called right after a record is written to the private log
 * whenever half its ring has been written since the last call (or since
 * this one): a consumer that reads only at the end (VMProfiler) drains the
 * ring there instead of losing the oldest records. fn runs inside an
 * allocation: it must not allocate in the heap or collect. NULL: none;
 * private_close forgets it. */
void prof_allocsampler_private_drain(void (*fn)(void *ctx), void *ctx);

/* Polls the requests now (the VM calls it after writing a private request
 * to have it take effect before the next allocation). */
void prof_allocsampler_poll(void);

/* The VM exits normally: every log sampling gets a STOP (exit), and those
 * whose request_live_at_exit is set a LIVE answer PROF_ALLOC_LIVE_AT_EXIT,
 * after a full GC when can_collect (the program returned: no frame is
 * left), else as of the last collection (`system exit:` runs inside a
 * primitive, where the VM may not collect). */
void prof_allocsampler_exit(bool can_collect);

#endif
