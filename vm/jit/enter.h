/*
 * vm/jit/enter.h — switching between the C stack and the Smalltalk stack pages
 * (vm/jit/DESIGN.md, "One stack, one interpreter loop"): the enilopmarts the
 * interpreter calls to run machine code, the ceReturnToInterpreter
 * trampoline machine code returns through, and the trampolines through which
 * machine code calls C runtime routines.
 *
 * Machine code runs on a stack page with rsp = Smalltalk sp and rbp =
 * Smalltalk fp (vm/model/frame.h's layout). The C interpreter is never nested: it
 * calls an enilopmart, which saves the C callee-saved registers on the C
 * stack and the C rsp in jit_cstate, switches to the page and jumps; machine
 * code comes back only by leaving through a trampoline that restores the C
 * rsp and returns from the enilopmart with a JitStatus.
 *
 *   C stack while machine code runs (grows down)
 *   +---------------------------------+
 *   | C caller of the enilopmart      |
 *   | return address into C           |
 *   | rbp rbx r12 r13 r14 r15         |  pushed in this order
 *   +---------------------------------+ <- jit_cstate.c_sp
 *   | runtime routines run here,      |  rsp = c_sp & -16 before the call
 *   | below the enilopmart's frame    |
 *
 *   Smalltalk page after jit_enter (regs->sp = top of receiver and args)
 *   | receiver, args (the caller's)   |
 *   +---------------------------------+ <- regs->sp
 *   | ceReturnToInterpreter           |  the callee's fp[1]
 *   +---------------------------------+ <- rsp at `entry`
 *
 * Leaving machine code:
 *   - RETURNED: a frame returned to ceReturnToInterpreter. Its epilogue
 *     (mov rsp, rbp; pop rbp; ret) popped its own frame and return address:
 *     regs->sp is the top of the receiver and args again (the interpreter
 *     pops them), regs->fp the caller's fp, regs->result the answer (rax).
 *   - INTERPRET / RESUME: a runtime routine asked to leave
 *     (jit_enter_request_exit) and returned. regs->sp points at the return
 *     address into machine code that its trampoline was called with,
 *     regs->fp is the calling frame's fp; regs->result is not written.
 *
 * Runtime trampolines are `call`ed by machine code with up to
 * JIT_ENTER_MAX_RUNTIME_ARGS arguments in rdi, rsi, rdx, passed to the C
 * routine unchanged. They record the Smalltalk rsp (pointing at the return
 * address) and rbp in jit_cstate.st_sp/st_fp — what a GC's frame walk and
 * the routine itself read — run the routine on the C stack, and then either
 * reload rsp/rbp from st_sp/st_fp (a routine may move frames and rewrite
 * them) and return rax to machine code, or leave as above; either way they
 * then clear st_sp (a profiler's anchor: proto/stackabi.h).
 *
 * Invariants:
 *   - jit_cstate describes the innermost enilopmart only: a runtime routine
 *     must not call an enilopmart (the interpreter is never nested).
 *   - A runtime call that returns preserves rbx, rbp and r12–r15 (the C
 *     ABI's callee-saved registers) and clobbers the others; one that exits
 *     never comes back, so only the stack page survives it. Templates keep
 *     every live value on the stack page anyway (vm/jit/DESIGN.md).
 *   - The generated code uses rax, rcx and r11 as scratch, never the
 *     argument registers before the C call.
 *   - Not compatible with CET shadow stacks (a return address is pushed,
 *     not called); Linux enables those per process only on request.
 *
 * Who may call: the interpreter (the enilopmarts), the JIT's compiler and
 * runtime (trampolines, jit_cstate), the GC's frame walk (st_sp/st_fp).
 */
#ifndef JIT_ENTER_H
#define JIT_ENTER_H

#include "gc/object.h"
#include "vm/interp/jitinterface.h"
#include "vm/jit/zone.h"

#include <stddef.h>
#include <stdint.h>

#define JIT_ENTER_MAX_RUNTIME_ARGS 3 /* rdi, rsi, rdx; chosen here: the routines planned in vm/jit/DESIGN.md need at most three */

/* Generates the enilopmarts and ceReturnToInterpreter into z's trampoline
 * area. false with a message in err when the area is full. */
bool jit_enter_init(JitEnter *e, JitZone *z, char *err, size_t errlen);

/* Generates a trampoline calling fn(rdi, rsi, rdx) — nargs of them, at most
 * JIT_ENTER_MAX_RUNTIME_ARGS — for machine code to `call`; its entry, or
 * NULL when the trampoline area is full. fn answers what machine code gets
 * in rax, or calls jit_enter_request_exit. */
uint8_t *jit_enter_runtime_trampoline(JitZone *z, const void *fn, int nargs);

/* From a runtime routine: when it returns, leave machine code and return
 * from the enilopmart with `status` (INTERPRET or RESUME). */
void jit_enter_request_exit(JitStatus status);

/* Like jit_enter_runtime_trampoline, but the routine answers the address to
 * continue at (a compiled callee's entry) and the trampoline jumps there
 * with the machine-code caller's return address on top of the stack; or it
 * requests an exit (and its answer is ignored). */
uint8_t *jit_enter_dispatch_trampoline(JitZone *z, const void *fn, int nargs);

/* `mov rax, [slot]; ret`: where a dispatch routine sends machine code when
 * it computed the send's answer itself (a primitive) and left it in *slot. */
uint8_t *jit_enter_answer_trampoline(JitZone *z, const uint64_t *slot);

#endif
