/*
 * vmprofd/resolve.h — turning the stored samples (raw addresses) into a
 * report Profile: each address becomes a location through the symbolizer,
 * each sample a stack of locations, leaf first.
 *
 * Kernel addresses (a cpu-clock sample that hit a system call) become one
 * "[kernel]" function in the "rest" region on top of the user stack: the
 * kernel's own symbols are not ours to resolve, but the time is real.
 *
 * Who may call: vmprofd/session.c.
 */
#ifndef VMPROFD_RESOLVE_H
#define VMPROFD_RESOLVE_H

#include "report/report.h"
#include "vmprofd/samples.h"
#include "vmprofd/symbolize.h"

/* sym may be NULL (the target vanished before it could be described):
 * every user address then resolves to "[unknown]". */
void vmprofd_resolve_samples(Profile *p, Symbolizer *sym, const SampleStore *st);

#endif
