/*
 * vm/jit/enter.c — the enilopmarts, ceReturnToInterpreter and the runtime-call
 * trampolines (the stacks they switch between are drawn in vm/jit/enter.h).
 */
#include "vm/jit/enter.h"

#include "vm/jit/piece.h"
#include "vm/jit/x64.h"
#include "vm/jit/x64_regs.h"
#include "proto/stackabi.h"
#include "vm/model/vm.h"

#include <stdio.h>

/* Room to emit one piece in; each needs well under half of it. */
#define PIECE_MAX_CODE 256

/* The C ABI's callee-saved registers, in push order (vm/jit/enter.h's drawing). */
static const X64Reg callee_saved[] = { JIT_X64_RBP, JIT_X64_RBX, JIT_X64_R12,
                                       JIT_X64_R13, JIT_X64_R14, JIT_X64_R15 };
#define N_CALLEE_SAVED (sizeof callee_saved / sizeof callee_saved[0])

static X64Mem cstate(int32_t offset) { return jit_x64_mem(R11, offset); }

void jit_enter_request_exit(JitStatus status)
{
    VM_ASSERT(status == JIT_STATUS_INTERPRET || status == JIT_STATUS_RESUME,
              "a runtime routine can only exit to INTERPRET or RESUME, not %d", (int)status);
    jit_cstate.exit_status = status;
}

/* -- Pieces ---------------------------------------------------------------------- */

#define PIECE_MAX_UNWIND 4

/* A trampoline piece and the unwind rules of its code. */
typedef struct Piece {
    JitPiece p;
    uint32_t unwind[2 * PIECE_MAX_UNWIND]; /* vm/jit/jitmethod.h's unwind table */
    uint32_t nunwind;
} Piece;

/* From the next instruction on, a profiler unwinds this piece by `rule`. */
static void unwind_from_here(Piece *p, uint32_t rule)
{
    VM_ASSERT(p->nunwind < PIECE_MAX_UNWIND);
    p->unwind[2 * p->nunwind] = (uint32_t)jit_x64_size(&p->p.b);
    p->unwind[2 * p->nunwind + 1] = rule;
    p->nunwind++;
}

static bool piece_begin(Piece *p, JitZone *z, int nargs)
{
    p->nunwind = 0;
    return jit_piece_begin(&p->p, z, JIT_KIND_TRAMPOLINE, PIECE_MAX_CODE, 0, nargs);
}

/* Keeps what was emitted and gives the rest of the piece back. */
static uint8_t *piece_end(Piece *p, JitZone *z)
{
    return jit_method_code(jit_piece_end(&p->p, z, NULL, p->unwind, p->nunwind, "vm/jit/enter.c"));
}

/* -- Emitters ---------------------------------------------------------------------- */

/* r11 = &jit_cstate (the zone need not be within rel32 reach of the VM's data). */
static void emit_load_cstate(X64Buf *b) { jit_x64_mov_ri64(b, R11, (uint64_t)(uintptr_t)&jit_cstate); }

/* C side of an enilopmart: save the callee-saved registers and C rsp,
 * remember regs (rdi), switch to regs->sp/fp. */
static void emit_save_c(X64Buf *b)
{
    for (size_t i = 0; i < N_CALLEE_SAVED; i++) jit_x64_push_r(b, callee_saved[i]);
    emit_load_cstate(b);
    jit_x64_mov_mr(b, cstate(offsetof(JitCState, c_sp)), RSP);
    /* machine code owns the thread until the interpreter says otherwise
     * (proto/stackabi.h: a profiler reads the state from jit_cstate now) */
    jit_x64_mov_mi32(b, cstate(offsetof(JitCState, mode)), PROF_STATE_MACHINE);
    jit_x64_mov_mr(b, cstate(offsetof(JitCState, regs)), RDI);
    jit_x64_mov_rm(b, RSP, jit_x64_mem(RDI, offsetof(JitRegs, sp)));
    jit_x64_mov_rm(b, RBP, jit_x64_mem(RDI, offsetof(JitRegs, fp)));
}

/* Leave to C with the status in eax: r11 = &jit_cstate. */
static void emit_leave_c(X64Buf *b)
{
    jit_x64_mov_rm(b, RSP, cstate(offsetof(JitCState, c_sp)));
    for (size_t i = N_CALLEE_SAVED; i-- > 0;) jit_x64_pop_r(b, callee_saved[i]);
    jit_x64_ret(b);
}

/* ceReturnToInterpreter: reached by a frame's `ret`, rax = its answer. */
static void emit_return_to_interpreter(X64Buf *b)
{
    emit_load_cstate(b);
    jit_x64_mov_rm(b, RCX, cstate(offsetof(JitCState, regs)));
    jit_x64_mov_mr(b, jit_x64_mem(RCX, offsetof(JitRegs, sp)), RSP);
    jit_x64_mov_mr(b, jit_x64_mem(RCX, offsetof(JitRegs, fp)), RBP);
    jit_x64_mov_mr(b, jit_x64_mem(RCX, offsetof(JitRegs, result)), RAX);
    jit_x64_mov_ri32(b, RAX, JIT_STATUS_RETURNED);
    emit_leave_c(b);
}

/* jit_enter(regs, entry): the return address marks the interpreter. */
static void emit_enter(X64Buf *b, const uint8_t *return_to_interpreter)
{
    emit_save_c(b);
    jit_x64_mov_ri64(b, RAX, (uint64_t)(uintptr_t)return_to_interpreter);
    jit_x64_push_r(b, RAX);
    jit_x64_jmp_r(b, RSI);
}

/* jit_return_to(regs, addr): rax = regs->result, as a runtime call answers. */
static void emit_return_to(X64Buf *b)
{
    emit_save_c(b);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RDI, offsetof(JitRegs, result)));
    jit_x64_jmp_r(b, RSI);
}

/* A runtime call: rdi, rsi, rdx are fn's arguments and stay untouched. */
/* dispatch: on a normal return the routine answers an entry address, and
 * the trampoline jumps there with the caller's return address still on the
 * stack (a send machine code makes straight into a compiled callee). */
static void emit_runtime_call(Piece *p, const void *fn, bool dispatch)
{
    X64Buf *b = &p->p.b;
    X64Label leave = JIT_X64_LABEL("leave");
    emit_load_cstate(b);
    jit_x64_mov_mr(b, cstate(offsetof(JitCState, st_sp)), RSP);
    jit_x64_mov_mr(b, cstate(offsetof(JitCState, st_fp)), RBP);
    jit_x64_mov_rm(b, RSP, cstate(offsetof(JitCState, c_sp)));
    unwind_from_here(p, PROF_UNWIND_CSTATE); /* on the C stack: st_sp/st_fp say where machine code is */
    jit_x64_and_ri(b, RSP, -16); /* the C ABI: rsp 16-aligned at a call */
    jit_x64_mov_ri64(b, RAX, (uint64_t)(uintptr_t)fn);
    jit_x64_call_r(b, RAX);
    emit_load_cstate(b); /* r11 is caller-saved */
    jit_x64_cmp_mi(b, cstate(offsetof(JitCState, exit_status)), JIT_STATUS_NONE);
    jit_x64_jcc_label(b, JIT_X64_CC_NE, &leave);
    /* rbp first: once rsp is on the page, the piece is FRAMELESS (a
     * profiler reads the caller's fp from rbp) */
    jit_x64_mov_rm(b, RBP, cstate(offsetof(JitCState, st_fp)));
    jit_x64_mov_rm(b, RSP, cstate(offsetof(JitCState, st_sp)));
    unwind_from_here(p, PROF_UNWIND_FRAMELESS);
    /* back on the page: no C runs for machine code any more (the anchor) */
    jit_x64_mov_mi32(b, cstate(offsetof(JitCState, st_sp)), 0);
    if (dispatch)
        jit_x64_jmp_r(b, RAX);
    else
        jit_x64_ret(b);

    jit_x64_label_bind(b, &leave);
    unwind_from_here(p, PROF_UNWIND_CSTATE); /* st_sp/st_fp stay valid until the interpreter takes over */
    jit_x64_mov_rm(b, RCX, cstate(offsetof(JitCState, regs)));
    jit_x64_mov_rm(b, RAX, cstate(offsetof(JitCState, st_sp)));
    jit_x64_mov_mr(b, jit_x64_mem(RCX, offsetof(JitRegs, sp)), RAX);
    jit_x64_mov_rm(b, RAX, cstate(offsetof(JitCState, st_fp)));
    jit_x64_mov_mr(b, jit_x64_mem(RCX, offsetof(JitRegs, fp)), RAX);
    /* the routine is done: the anchor goes, and the rest is the switch */
    jit_x64_mov_mi32(b, cstate(offsetof(JitCState, st_sp)), 0);
    unwind_from_here(p, PROF_UNWIND_SWITCH);
    jit_x64_mov_rm(b, RAX, cstate(offsetof(JitCState, exit_status)));
    jit_x64_mov_mi32(b, cstate(offsetof(JitCState, exit_status)), JIT_STATUS_NONE);
    emit_leave_c(b);
}

/* -- Public ------------------------------------------------------------------------ */

bool jit_enter_init(JitEnter *e, JitZone *z, char *err, size_t errlen)
{
    Piece p;
    if (!piece_begin(&p, z, 0)) goto full;
    unwind_from_here(&p, PROF_UNWIND_SWITCH);
    emit_return_to_interpreter(&p.p.b);
    e->return_to_interpreter = piece_end(&p, z);

    if (!piece_begin(&p, z, 2)) goto full;
    unwind_from_here(&p, PROF_UNWIND_SWITCH);
    emit_enter(&p.p.b, e->return_to_interpreter);
    e->enter = (JitEnilopmart)(void *)piece_end(&p, z);

    if (!piece_begin(&p, z, 2)) goto full;
    unwind_from_here(&p, PROF_UNWIND_SWITCH);
    emit_return_to(&p.p.b);
    e->return_to = (JitEnilopmart)(void *)piece_end(&p, z);
    return true;

full:
    snprintf(err, errlen, "the code zone's trampoline area is too small for the enilopmarts (%d bytes each)",
             JIT_METHOD_CODE + PIECE_MAX_CODE);
    return false;
}

uint8_t *jit_enter_runtime_trampoline(JitZone *z, const void *fn, int nargs)
{
    VM_ASSERT(nargs >= 0 && nargs <= JIT_ENTER_MAX_RUNTIME_ARGS, "a runtime routine takes 0..%d arguments, not %d",
              JIT_ENTER_MAX_RUNTIME_ARGS, nargs);
    Piece p;
    if (!piece_begin(&p, z, nargs)) return NULL;
    emit_runtime_call(&p, fn, false);
    return piece_end(&p, z);
}

uint8_t *jit_enter_dispatch_trampoline(JitZone *z, const void *fn, int nargs)
{
    VM_ASSERT(nargs >= 0 && nargs <= JIT_ENTER_MAX_RUNTIME_ARGS, "a runtime routine takes 0..%d arguments, not %d",
              JIT_ENTER_MAX_RUNTIME_ARGS, nargs);
    Piece p;
    if (!piece_begin(&p, z, nargs)) return NULL;
    emit_runtime_call(&p, fn, true);
    return piece_end(&p, z);
}

uint8_t *jit_enter_answer_trampoline(JitZone *z, const uint64_t *slot)
{
    Piece p;
    if (!piece_begin(&p, z, 0)) return NULL;
    jit_x64_mov_ri64(&p.p.b, JIT_X64_RAX, (uint64_t)(uintptr_t)slot); /* mov rax, slot */
    jit_x64_mov_rm(&p.p.b, JIT_X64_RAX, jit_x64_mem(JIT_X64_RAX, 0));   /* mov rax, [rax] */
    jit_x64_ret(&p.p.b);
    return piece_end(&p, z);
}
