/*
 * vmprofd/bpf/config.h — what vmprofd tells the eBPF stack walker
 * (stackwalk.bpf.c, its .bss through the skeleton): the target and the
 * VM's walk facts. Plain types: included by the BPF program and by
 * vmprofd/sample_bpf.c.
 */
#ifndef VMPROFD_BPF_CONFIG_H
#define VMPROFD_BPF_CONFIG_H

#include "profiler/stackabi.h"

struct vmprofd_bpf_config {
    prof_u32 tgid;
    prof_u32 pad;
    ProfWalkFacts facts; /* size 0 until the VM has published them: native walks only */
};

#endif
