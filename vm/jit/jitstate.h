/*
 * vm/jit/jitstate.h — the VM's one JIT: its code zone, the addresses its
 * machine code calls (the compiler's and the PICs' runtimes, the
 * primitive-answer trampoline), its option and its statistics, and the
 * names of those addresses.
 *
 * Below the rest of the runtime: vm_jit_init (vm/jit/runtime.c) fills it
 * in, and compaction (compact.c) and the code events (jitpublish.c), which
 * runtime.c calls, read it without calling back up.
 *
 * Who may call: vm/jit/, vm/boot/.
 */
#ifndef VM_JIT_JITSTATE_H
#define VM_JIT_JITSTATE_H

#include "vm/jit/compile.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/zone.h"

#include <stdbool.h>
#include <stdint.h>

/* What the runtime did, for --code-zone-stats (the zone counts the rest). */
typedef struct VmJitStats {
    uint64_t compiled, declined, stubs;   /* methods compiled, declined; primitive stubs */
    uint64_t links;                       /* unlinked -> monomorphic */
    uint64_t pics_closed, pics_open;      /* PICs made */
    uint64_t megamorphic_links;           /* sites sent to an open PIC */
    uint64_t unlinked_by_compaction;      /* sites whose callee was freed */
    uint64_t young_referrers_added;       /* methods that cached a young global */
    uint64_t osr_entries;                 /* interpreter frames continued in machine code */
    uint64_t inlined;                     /* sends compiled with their callee inlined */
    uint64_t tier_ups;                    /* methods recompiled by tier-up */
    uint64_t deopts;                      /* inlined bodies that went back to the interpreter */
    uint64_t inline_disabled;             /* inlined bodies turned off for deoptimizing again and again */
    uint64_t deopt_recompiles;            /* methods recompiled without a body they turned off */
    uint64_t whole_loops[2];              /* loops and bodies compiled whole; runs they redid in the plain code */
    uint64_t runtime_boxes;               /* Doubles machine code had the runtime box: a chain's answer with eden full, a lazy temp's out of the window */
} VmJitStats;
extern VmJitStats vm_jit_stats;
extern bool vm_jit_verify; /* --jit-verify */
extern int vm_jit_deopt_every; /* --deopt-every; 0: off */

/* Set by vm_jit_init only; the rest read them through the two calls below. */
extern JitZone vm_jit_code_zone;
extern JitCompileRuntime vm_jit_compile_runtime;
extern JitPicRuntime vm_jit_pic_runtime;
extern uint8_t *vm_jit_prim_return;

JitZone *vm_jit_zone(void);
const JitCompileRuntime *vm_jit_runtime(void);

/* The name of a trampoline or of a VM variable machine code embeds; NULL
 * for anything else. */
const char *vm_jit_trampoline_name(const void *addr);

#endif
