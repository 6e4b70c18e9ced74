/*
 * vmprofd/bpf/config.h — what vmprofd tells the eBPF stack walker
 * (stackwalk.bpf.c, its .bss through the skeleton): the target and the
 * VM's walk facts. Plain types: included by the BPF program and by
 * vmprofd/sample_bpf.c.
 */
#ifndef VMPROFD_BPF_CONFIG_H
#define VMPROFD_BPF_CONFIG_H

#include "proto/stackabi.h"

struct vmprofd_bpf_config {
    prof_u32 tgid;     /* the target, as vmprofd's pid namespace numbers it */
    prof_u32 pad;
    /* vmprofd's pid namespace (the kernel's dev_t and the inode of
     * /proc/self/ns/pid): in a container the kernel's own pids are not the
     * ones vmprofd sees. 0: use the kernel's. */
    prof_u64 pidns_dev, pidns_ino;
    ProfWalkFacts facts; /* size 0 until the VM has published them: native walks only */
};

#endif
