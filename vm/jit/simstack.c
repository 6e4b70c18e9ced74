/*
 * vm/jit/simstack.c — the simulated stack (declared in vm/jit/compile_int.h).
 *
 * Stack-to-register mapping (reference 002, StackToRegisterMappingCogit): the
 * top of the operand stack is described at compile time by descriptors; the
 * real stack (rsp) holds everything below them. Push bytecodes only push a
 * descriptor; consumers read operands straight from where the descriptors say
 * (a register, an immediate, a frame slot) and `flush` materialises them, in
 * order, onto the real stack:
 *
 *   SIM_CONST  an immediate Oop (SmallIntegers, nil, true, false; literals
 *              that are SmallIntegers): never changes
 *   SIM_SELF, SIM_ARG k   frame slots nothing writes while the method runs
 *   SIM_TEMP t, SIM_FIELD i   a temp or self's field as it is *now*: a store
 *              into the same variable first flushes every deeper descriptor
 *   SIM_LIT i  the method's literal i (read through the frame's method slot)
 *   SIM_RAX    a value in rax (a send's or inline operation's result); at
 *              most one, and no code that clobbers rax runs while it lives
 *              except code that consumes it
 *
 * The real stack must hold the whole operand stack (nsim == 0) wherever
 * another path or the VM can meet the code: at jump targets and before
 * every jump, at every call (sends, runtime calls: registers are not roots
 * for the GC, and every mcpc -> bcpc map entry must find its frame complete
 * for the interpreter, OSR and the profiler), and before bytecodes that are
 * compiled as plain templates over the real stack. Special sends flush what
 * lies below their operands before their fast path, so the fast path and
 * the generic send (whose slow path pushes the operands the fast path loaded
 * into rax/rcx) meet with the same real stack and the result in rax.
 * (SimKind and SimEntry are in vm/jit/compile_int.h.)
 */
#include "vm/jit/compile_int.h"

#include "vm/model/frame.h"
#include "vm/model/vm.h"

#include <string.h>

void jit_sim_push(Compiler *c, SimKind kind, int64_t v)
{
    VM_ASSERT(c->nsim < (int)c->len + 2, "simulated stack overflow");
    if (kind == SIM_RAX)
        for (int i = 0; i < c->nsim; i++) VM_ASSERT(c->sim[i].kind != SIM_RAX, "two values in rax");
    c->sim[c->nsim++] = (SimEntry){ kind, v };
}

/* Pushes e onto the real stack; only r11 is scratch (rax may be another
 * entry's). */
void jit_sim_materialise(Compiler *c, SimEntry e)
{
    X64Buf *b = &c->b;
    switch (e.kind) {
    case SIM_CONST:
        if (jit_compile_fits_i32(e.v)) {
            jit_x64_push_i32(b, (int32_t)e.v);
        } else {
            jit_x64_mov_ri(b, R11, e.v);
            jit_x64_push_r(b, R11);
        }
        break;
    case SIM_SELF: jit_x64_push_m(b, jit_compile_self_slot()); break;
    case SIM_ARG: jit_x64_push_m(b, jit_compile_arg_slot((int)e.v)); break;
    case SIM_TEMP:
        jit_double_lazy_touch(c, (int)e.v);
        jit_x64_push_m(b, jit_compile_temp_slot((int)e.v));
        break;
    case SIM_FIELD:
        jit_x64_mov_rm(b, R11, jit_compile_self_slot());
        jit_x64_push_m(b, jit_x64_mem(R11, (int32_t)(8 + 8 * e.v)));
        break;
    case SIM_LIT:
        jit_x64_mov_rm(b, R11, jit_x64_mem(RBP, 8 * FRAME_METHOD));
        jit_x64_push_m(b, jit_compile_lit_of(R11, (int)e.v));
        break;
    case SIM_RAX: jit_x64_push_r(b, RAX); break;
    }
}

/* r := the value e describes (r is its own scratch). */
void jit_sim_load(Compiler *c, SimEntry e, X64Reg r)
{
    X64Buf *b = &c->b;
    switch (e.kind) {
    case SIM_CONST: jit_x64_mov_ri(b, r, e.v); break;
    case SIM_SELF: jit_x64_mov_rm(b, r, jit_compile_self_slot()); break;
    case SIM_ARG: jit_x64_mov_rm(b, r, jit_compile_arg_slot((int)e.v)); break;
    case SIM_TEMP:
        jit_double_lazy_touch(c, (int)e.v);
        jit_x64_mov_rm(b, r, jit_compile_temp_slot((int)e.v));
        break;
    case SIM_FIELD:
        jit_x64_mov_rm(b, r, jit_compile_self_slot());
        jit_x64_mov_rm(b, r, jit_x64_mem(r, (int32_t)(8 + 8 * e.v)));
        break;
    case SIM_LIT:
        jit_x64_mov_rm(b, r, jit_x64_mem(RBP, 8 * FRAME_METHOD));
        jit_x64_mov_rm(b, r, jit_compile_lit_of(r, (int)e.v));
        break;
    case SIM_RAX:
        if (r != RAX) jit_x64_mov_rr(b, r, RAX);
        break;
    }
}

/* Materialises all but the top `keep` descriptors (the deepest first). */
void jit_sim_flush_below(Compiler *c, int keep)
{
    int n = c->nsim - keep;
    if (n <= 0) return;
    for (int i = 0; i < n; i++) jit_sim_materialise(c, c->sim[i]);
    memmove(c->sim, c->sim + n, (size_t)keep * sizeof *c->sim);
    c->nsim = keep;
}

void jit_sim_flush(Compiler *c) { jit_sim_flush_below(c, 0); }

/* Whether no send can change the value descriptor e reads: constants,
 * self, arguments, literals, and temps when no block of the method writes
 * an outer variable (c->temps_stable). Fields and rax can change. */
static bool sim_stable(const Compiler *c, SimEntry e)
{
    switch (e.kind) {
    case SIM_CONST: case SIM_SELF: case SIM_ARG: case SIM_LIT: return true;
    case SIM_TEMP: return c->temps_stable;
    default: return false;
    }
}

/* Below the k operands of a special or accessor send whose fast path makes
 * no call: pushes the descriptors up to the last one a send could change
 * and holds the stable ones above it aside (c->held), so that operands met
 * later still know where their values are (a cached temp's register, a
 * constant). The send's slow path pushes them under its operands, as the
 * frame must be whole at its map entry, and drops them after the call: the
 * values did not change. hold_end puts them back under the answer. When
 * some operand is on the real stack nothing can be held (the real stack is
 * always below the simulated one). */
void jit_sim_hold_below(Compiler *c, int k)
{
    VM_ASSERT(c->nheld == 0, "descriptors held twice");
    int n = c->nsim - k;
    if (n <= 0) return;
    int m = n; /* sim[m .. n) are stable */
    while (m > 0 && sim_stable(c, c->sim[m - 1])) m--;
    for (int i = 0; i < m; i++) jit_sim_materialise(c, c->sim[i]);
    c->nheld = n - m;
    memcpy(c->held, c->sim + m, (size_t)c->nheld * sizeof *c->sim);
    memmove(c->sim, c->sim + n, (size_t)k * sizeof *c->sim);
    c->nsim = k;
}

void jit_sim_hold_end(Compiler *c)
{
    if (!c->nheld) return;
    VM_ASSERT(c->nsim + c->nheld <= (int)c->len + 2, "simulated stack overflow");
    memmove(c->sim + c->nheld, c->sim, (size_t)c->nsim * sizeof *c->sim);
    memcpy(c->sim, c->held, (size_t)c->nheld * sizeof *c->sim);
    c->nsim += c->nheld;
    c->nheld = 0;
}

/* Whether a descriptor below the top reads variable (kind, v). */
bool jit_sim_reads_below_top(const Compiler *c, SimKind kind, int64_t v)
{
    for (int i = 0; i < c->nsim - 1; i++)
        if (c->sim[i].kind == kind && c->sim[i].v == v) return true;
    return false;
}

/* r := the top of the operand stack, popped. */
void jit_sim_pop_into(Compiler *c, X64Reg r)
{
    if (c->nsim) jit_sim_load(c, c->sim[--c->nsim], r);
    else jit_x64_pop_r(&c->b, r);
}
