/*
 * vmprofd/unwind.h — user-stack unwinding of a sample taken from another
 * process: sampled registers + a copy of the stack (libunwind over the
 * Symbolizer's module table: report/symbolize.h, "For a native stack
 * unwinder"), frame pointers as the fallback.
 *
 * Who may call: vmprofd/, tests.
 */
#ifndef VMPROFD_UNWIND_H
#define VMPROFD_UNWIND_H

#include "report/symbolize.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Registers of a sample as perf_event delivers them with
 * PERF_SAMPLE_REGS_USER (x86-64: the mask vmprofd_unwind_regs_mask()):
 * regs[] is packed, one value per set bit of mask in ascending bit order
 * (so with the mask below, regs[8] is PERF_REG_X86_IP and regs[9] R8).
 * ip, sp and bp are also given on their own and take precedence. */
typedef struct UnwindRegs {
    uint64_t ip, sp, bp;
    uint64_t regs[24]; /* in perf_event_x86_regs order, as many as the mask asks */
    uint64_t mask;
} UnwindRegs;

uint64_t vmprofd_unwind_regs_mask(void);
/* The value of perf_event register perf_reg (PERF_REG_X86_*) in r; false
 * when the sample does not carry it. */
bool vmprofd_unwind_reg(const UnwindRegs *r, int perf_reg, uint64_t *out);

/* Walks the user stack of a sample: pcs[0] = regs->ip, then return
 * addresses. stack/stack_len: bytes copied from regs->sp upward (may be
 * empty: then frame pointers are followed through process_vm_readv).
 * Answers the number of pcs written (>= 1). */
size_t vmprofd_unwind(Symbolizer *s, const UnwindRegs *regs, const uint8_t *stack, size_t stack_len,
                      uint64_t *pcs, size_t max_pcs);

#endif
