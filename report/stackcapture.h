/*
 * report/stackcapture.h — the whole-stack walk of proto/stackabi.h in C,
 * for the walkers that run in user space: vmprofd's ptrace mode (the
 * target stopped, its memory read with process_vm_readv) and the in-VM
 * sampler (in the SIGPROF handler, reading its own memory). The eBPF
 * program of vmprofd's perf mode is the same algorithm in BPF
 * (vmprofd/bpf/stackwalk.bpf.c); keep the two in step.
 *
 * Memory goes through a small cache of aligned blocks filled by one read
 * call each, so a walk of a hundred frames costs a handful of system calls;
 * a block that cannot be read is a fault (PROF_RAW_F_FAULT), never a crash.
 * Nothing here allocates: async-signal-safe when the block reader is.
 *
 * Who may call: vmprofd/ (ptrace mode), profiler/ (in-VM sampler), tests.
 */
#ifndef REPORT_STACKCAPTURE_H
#define REPORT_STACKCAPTURE_H

#include "proto/stackabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STACKCAPTURE_BLOCK 512 /* bytes per cached block: a few frames each */
#define STACKCAPTURE_BLOCKS 16

/* Reads len bytes at addr into buf; false when any of them is unreadable. */
typedef bool (*StackReadFn)(void *ctx, uint64_t addr, void *buf, size_t len);

typedef struct StackReader {
    StackReadFn read;
    void *ctx;
    uint64_t tag[STACKCAPTURE_BLOCKS]; /* block address + 1; 0: empty */
    uint8_t data[STACKCAPTURE_BLOCKS][STACKCAPTURE_BLOCK];
    unsigned next;                     /* round-robin victim */
    uint64_t reads;                    /* block reads made (for the cost figures) */
} StackReader;

/* The sampled user registers the walk starts from. */
typedef struct StackRegs {
    uint64_t ip, sp, bp, r14, r15;
} StackRegs;

/* Forgets the cache: the memory changes between samples. */
void report_stackcapture_reset(StackReader *r, StackReadFn read, void *ctx);

/* Walks as proto/stackabi.h says; raw's time, pid and tid are the
 * caller's. f may be NULL (the VM published none): a native walk only. */
void report_stackcapture(StackReader *r, const ProfWalkFacts *f, const StackRegs *regs, ProfRawStack *raw);

#endif
