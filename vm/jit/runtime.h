/*
 * vm/jit/runtime.h — the JIT runtime: compiling hot methods, the runtime
 * routines machine code calls through enter.c's trampolines, linking send
 * sites and PICs (compacting the zone when it is full: vm/jit/compact.h),
 * mapping return addresses back to bytecode pcs (vm/jit/DESIGN.md,
 * "Integration notes").
 *
 * It sits above the interpreter (vm/interp/jitinterface.h holds the state they
 * share and the hooks through which the interpreter calls back here) and
 * drives the code generator, which knows the machine code.
 *
 * Who may call: vm/boot/, the rest of vm/jit/.
 */
#ifndef VM_JIT_RUNTIME_H
#define VM_JIT_RUNTIME_H

#include "gc/heap.h"
#include "vm/jit/compile.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/jitstate.h"
#include "vm/jit/zone.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Makes the code zone and its trampolines and sets vm/interp/jitinterface.h's
 * state and hooks. */
bool vm_jit_init(size_t code_bytes, char *err, size_t errlen);
/* Inlining (vm/jit/inline.c): callees of at most budget bytecode bytes (0:
 * none); deopt_every > 0: every deopt_every-th bytecode an inlined body
 * starts deoptimizes there instead (a stress mode). */
void vm_jit_set_inlining(int budget, int deopt_every);
/* Tier-up (vm/jit/DESIGN.md, "Tier-up"): a method compiled with plain sends
 * that had no feedback is recompiled after `after` more invocations, its
 * linked sites as inlining's feedback; 0: never. Only with inlining on. */
void vm_jit_set_tier_up(int32_t after);
#define VM_JIT_INLINE_BUDGET_DEFAULT 48
/* On by default since the profilers see through inlined code (issue 26:
 * samples in an inlined body are the callee's, "B>>sel (inlined into A>>sel)");
 * --no-inline turns it off. */
#define VM_JIT_INLINE_BY_DEFAULT 1
/* On by default (--no-tier-up turns it off) since a recompile keeps what the
 * old code inlined and a body turned off recompiles its method: Are We Fast
 * Yet, callgrind, 6 iterations at a quarter of the standard counts, Richards
 * -8.7 %, Permute -6.9 %, none worse than +0.3 %; one iteration at the
 * standard counts DeltaBlue -0.1 %, Havlak -1.0 %, CD -2.8 %
 * (vm/jit/DESIGN.md, "Tier-up"; docs/performance.md). */
#define VM_JIT_TIER_UP_BY_DEFAULT 1
#define VM_JIT_TIER_UP_AFTER_DEFAULT 1000
/* Innermost counted loops compiled whole as well (vm/jit/whole_loop.c);
 * --no-whole-loops turns it off. */
#define VM_JIT_WHOLE_LOOPS_BY_DEFAULT 1
/* m's compiled code (a primitive method's stub), compiling it now. NULL
 * with the reason in why when the JIT declines it. */
JitMethod *vm_jit_compile_now(Oop m, char *why, size_t whylen);
/* --disassemble (vm/jit/jitdisasm.c): spec is 'Class>>selector' or
 * 'Class class>>selector'. */
bool vm_jit_disassemble(const char *spec, FILE *out, char *err, size_t errlen);
/* --disassemble-after: the same at the end of a run, printing the code the
 * run compiled (compiled now if it was not). */
bool vm_jit_disassemble_after(const char *spec, FILE *out, char *err, size_t errlen);

/* --code-zone-stats (vm/jit/zonestats.c): reference 002's Tables 1 and 2. */
void vm_jit_print_zone_stats(FILE *out);

/* Called when the counter reaches the threshold (the interpreter calls it
 * through vm_jit_hooks): vm/interp/jitinterface.h's VmJitHooks.compile. */
intptr_t vm_jit_compile(Oop method, Oop *live_ra);

/* On-stack replacement: the interpreter frame fp of a compiled method is
 * at the backward jump at jump_bcpc. When machine code can take the frame
 * over, makes it a machine-code frame (its return goes to the caller as
 * machine code's would) and answers where to continue: the compiled
 * backward jump. NULL, with nothing changed, when it cannot: the frame is
 * the first on its page, or its machine-code caller pushed a different
 * argument count (a rewritten send). */
uint8_t *vm_jit_osr_entry(Oop *fp, size_t jump_bcpc);

/* Machine code's GC roots: the pending oop, the methods' heap methods and
 * PICs' selectors, and the literals machine code holds. */
void vm_jit_visit_roots(GcVisitFn visit, void *ctx);
/* The GC's client hooks: a scavenge visits only the young referrers'
 * literals, and the list forgets methods whose literals all grew old. */
void vm_jit_before_collect(bool full);
void vm_jit_after_collect(bool full);

#endif
