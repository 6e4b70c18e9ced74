/*
 * profiler/ownmem.h — reading the VM's own memory for a stack walk in the
 * VM (report/stackcapture.h's StackReadFn): plainly where it is mapped for
 * sure (the stack pages, their descriptors, the VM thread's C stack),
 * through process_vm_readv elsewhere, which fails instead of faulting on a
 * bad pointer. Async-signal-safe once initialised.
 *
 * Who may call: profiler/ (the in-VM sampler's SIGPROF handler, the
 * allocation sampler). The VM thread calls prof_ownmem_init first.
 */
#ifndef PROFILER_OWNMEM_H
#define PROFILER_OWNMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Notes the calling thread's C stack and the process; once is enough. */
void prof_ownmem_init(void);
/* A StackReadFn: ctx is the walk's const ProfWalkFacts *. */
bool prof_ownmem_read(void *ctx, uint64_t addr, void *buf, size_t len);

#endif
