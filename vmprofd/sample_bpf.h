/*
 * vmprofd/sample_bpf.h — the eBPF stack walker (vmprofd/bpf/stackwalk.bpf.c)
 * for perf_event mode: loaded once, attached to every cpu-clock event
 * vmprofd opens, it walks each sample's whole stack in the kernel
 * (proto/stackabi.h) and hands ProfRawStack records through a BPF ring
 * buffer. Why eBPF: profiler/STACKS.md.
 *
 * Who may call: vmprofd/sample_perf.c, tests.
 */
#ifndef VMPROFD_SAMPLE_BPF_H
#define VMPROFD_SAMPLE_BPF_H

#include "proto/stackabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct SampleBpf SampleBpf;

/* Loads the walker for process pid. NULL with the reason (what was refused
 * and what to do) when the kernel or this build cannot run it. */
SampleBpf *vmprofd_bpf_open(pid_t pid, char *why, size_t whylen);
/* Gives the walker the VM's facts (once they are known; until then it
 * walks native frames only). */
void vmprofd_bpf_set_facts(SampleBpf *b, const ProfWalkFacts *f);
/* Runs the walker on every overflow of the perf event perf_fd (its own
 * sample is then not written). */
bool vmprofd_bpf_attach(SampleBpf *b, int perf_fd, char *why, size_t whylen);
/* The fd to poll for records. */
int vmprofd_bpf_fd(SampleBpf *b);
/* Delivers the records waiting, oldest first; answers how many. */
int vmprofd_bpf_drain(SampleBpf *b, void (*fn)(void *ctx, const ProfRawStack *r), void *ctx);
/* Records the ring had no room for. */
uint64_t vmprofd_bpf_dropped(SampleBpf *b);
void vmprofd_bpf_close(SampleBpf *b);

#endif
