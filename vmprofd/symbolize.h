/*
 * vmprofd/symbolize.h — native addresses of a live process to functions,
 * files and lines (elfutils libdwfl over /proc/PID/maps), and user-stack
 * unwinding from sampled registers + a copy of the stack (libunwind, with
 * frame pointers as the fallback).
 *
 * Resolved addresses are interned straight into a report Profile: the
 * answer is a location index for report_profile_add_sample. Region: the
 * VM executable's own code is REPORT_REGION_VANILLA, the machine-code zone
 * (when the VM exports one) REPORT_REGION_GENERATED, everything else
 * REPORT_REGION_REST. An address no module covers still gets a location
 * (function "[unknown]" in region rest), never an error.
 *
 * Who may call: vmprofd/ only.
 */
#ifndef VMPROFD_SYMBOLIZE_H
#define VMPROFD_SYMBOLIZE_H

#include "report/report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Symbolizer Symbolizer;

/* Attaches to pid's address space description (it does not stop it).
 * vm_exe: path of the executable whose code is "vanilla" (NULL = the
 * target's /proc/PID/exe). code_zone_*: generated-code range, or 0, 0. */
Symbolizer *vmprofd_symbolizer_new(pid_t pid, const char *vm_exe, uint64_t code_zone_start,
                                   uint64_t code_zone_end, char *err, size_t errlen);
/* Re-reads the maps (libraries loaded since). Cheap when nothing changed. */
void vmprofd_symbolizer_refresh(Symbolizer *s);
void vmprofd_symbolizer_free(Symbolizer *s);

/* addr -> location index in p. is_return_address: addr came from an
 * unwound caller frame, so look up addr-1 (the call instruction).
 * Answers are cached per address for one Profile: passing a different
 * Profile pointer than the previous call starts a fresh cache. */
int vmprofd_symbolize(Symbolizer *s, Profile *p, uint64_t addr, bool is_return_address);

/* Interns the VM executable's mapping into p (as vmprofd_symbolize would)
 * and answers its index, or -1 when no module is the VM. Called first, it
 * makes the executable the profile's first mapping: pprof takes the first
 * mapping for the main binary. */
int vmprofd_symbolize_vm_mapping(Symbolizer *s, Profile *p);

/* What vmprofd_symbolize resolves an address to, without a Profile (for
 * diagnostics and tests). Strings belong to the Symbolizer and stay valid
 * until the next lookup, refresh or free. */
typedef struct SymbolizedAddr {
    const char *function;    /* "vm_interp_run", "[libc.so.6]", "[unknown]", "[kernel]", "[code zone]" */
    const char *file;        /* source file of the function (DWARF), or NULL */
    int line;                /* source line of the address within it, 0 when unknown */
    int function_line;       /* line the function is declared on, 0 when unknown */
    ReportRegion region;
    uint64_t function_start; /* 0 when unknown */
    uint64_t function_size;
    const char *module;      /* mapped file ("/usr/lib/.../libc.so.6", "[code zone]"), or NULL */
    uint64_t module_start, module_end, module_offset;
    const char *build_id;    /* hex, or NULL */
} SymbolizedAddr;

void vmprofd_symbolize_lookup(Symbolizer *s, uint64_t addr, bool is_return_address, SymbolizedAddr *out);

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
