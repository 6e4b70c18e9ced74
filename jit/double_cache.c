/*
 * jit/double_cache.c — Double temps held in xmm registers through an
 * innermost loop (jit/DESIGN.md, "Cached Double temps").
 *
 * Storing a Double into a temp encodes it (immediate) or boxes it, and the
 * next read tests and decodes it again: in a loop such as Mandelbrot's that
 * round trip lies on the critical path of every iteration. In a cached
 * region, temp t also lives in xmm(t) under one invariant:
 *
 *     whenever temp t's slot holds a Double, xmm(t) holds its value.
 *
 * A read of t as a Double operand then still loads and tests the slot's
 * Oop (the test is a predicted branch, off the value's path) but takes the
 * value from xmm(t). The invariant is made where control enters the region
 * (the fall-through into its head, OSR at its back jump's safepoint) and
 * after every call inside it (calls clobber every xmm register; a block the
 * callee runs may store into t), and kept by every store into t. What
 * holds in a slot that is not a Double does not matter: its reads take the
 * SmallInteger or the send path.
 *
 * A region is an innermost loop (head .. its JUMP_BACK) that only pushes,
 * stores temps, computes with special sends and inlined accessors that
 * call nothing but their generic send, and jumps within itself; anything
 * else (other sends, field stores, blocks, outer variables) makes it plain
 * code.
 */
#include "jit/compile_int.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"
#include "vm/model/vm.h"

/* Bytecodes a region may hold: none calls anything but a send through
 * jit_compile_send_call (the special sends' generic send, mustBeBoolean)
 * or the back jump's safepoint. */
static bool region_op(const Compiler *c, size_t pc)
{
    switch (c->code[pc]) {
    case BC_DUP: case BC_POP: case BC_PUSH_FIELD: case BC_PUSH_SELF: case BC_PUSH_NIL: case BC_PUSH_TRUE:
    case BC_PUSH_FALSE: case BC_PUSH_0: case BC_PUSH_1: case BC_PUSH_LITERAL: case BC_PUSH_LITERAL_W:
    case BC_PUSH_ARG: case BC_PUSH_TEMP: case BC_STORE_TEMP: case BC_POP_TEMP:
    case BC_SEND_ADD: case BC_SEND_SUB: case BC_SEND_MUL: case BC_SEND_LT: case BC_SEND_GT: case BC_SEND_LE:
    case BC_SEND_GE: case BC_SEND_EQ: case BC_SEND_AT:
    case BC_JUMP: case BC_JUMP_IF_TRUE: case BC_JUMP_IF_FALSE: return true;
    case BC_SEND: case BC_SEND_W: {
        uint32_t ci;
        bool setter;
        int field;
        return jit_double_send_kind(c, pc) != JIT_DOUBLE_SEND_NONE || jit_compile_accessor(c, pc, &ci, &setter, &field);
    }
    default: return false;
    }
}

static bool double_op(const Compiler *c, size_t pc)
{
    uint8_t op = c->code[pc];
    if (op >= BC_SEND_ADD && op <= BC_SEND_EQ) return jit_double_inline(c, op);
    return (op == BC_SEND || op == BC_SEND_W) && jit_double_send_kind(c, pc) != JIT_DOUBLE_SEND_NONE;
}

/* The region of the JUMP_BACK at back, into r; false when there is none. */
static bool region_at(Compiler *c, size_t back, JitDoubleRegion *r)
{
    long head = jit_compile_jump_target(c->code, back);
    if (head < 0 || (size_t)head >= back) return false;
    size_t lo = (size_t)head, end = back + vm_bytecode_length[BC_JUMP_BACK];
    bool computes = false;
    bool seen[VM_COMPILE_MAX_VARS] = { false };
    r->lo = lo;
    r->hi = back;
    r->n = 0;
    for (size_t pc = lo; pc < back; pc += vm_bytecode_length[c->code[pc]]) {
        if (!region_op(c, pc)) return false;
        long t = jit_compile_jump_target(c->code, pc);
        if (t >= 0 && (size_t)t < lo) return false; /* (also another loop's back jump) */
        computes |= double_op(c, pc);
        uint8_t op = c->code[pc];
        if (op == BC_PUSH_TEMP || op == BC_STORE_TEMP || op == BC_POP_TEMP) {
            int v = c->code[pc + 1];
            if (!seen[v] && r->n < JIT_DOUBLE_CACHED_MAX) r->temp[r->n++] = (uint8_t)v;
            seen[v] = true;
        }
    }
    if (!computes || r->n == 0) return false;
    /* no way in but the head's fall-through and the region's own jumps */
    for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]]) {
        if (pc >= lo && pc < end) continue;
        long t = jit_compile_jump_target(c->code, pc);
        if (t >= (long)lo && t < (long)end) return false;
    }
    return true;
}

void jit_double_cache_plan(Compiler *c)
{
    c->nregions = 0;
    for (size_t pc = 0; pc < c->len && c->nregions < JIT_DOUBLE_REGIONS_MAX; pc += vm_bytecode_length[c->code[pc]]) {
        if (c->code[pc] != BC_JUMP_BACK) continue;
        JitDoubleRegion r;
        if (!region_at(c, pc, &r)) continue;
        r.refill = JIT_X64_LABEL("Double temps refill");
        c->regions[c->nregions++] = r;
        for (size_t q = r.lo; q <= r.hi; q++) c->region_of[q] = (uint8_t)c->nregions;
    }
}

/* Measured from the encodings, with margin: a call's detour to the refill
 * is 12 bytes, the refill about 70 a temp, a store's own load about 70. */
size_t jit_double_cache_bound(const Compiler *c)
{
    size_t bound = 0;
    for (int i = 0; i < c->nregions; i++) {
        const JitDoubleRegion *r = &c->regions[i];
        size_t ops = 0;
        for (size_t pc = r->lo; pc <= r->hi; pc += vm_bytecode_length[c->code[pc]]) ops++;
        bound += (ops + 2) * 24 + (size_t)r->n * 96 + ops * 96; /* calls' detours, the refill, stores */
    }
    return bound;
}

static const JitDoubleRegion *current(const Compiler *c)
{
    uint8_t id = c->region_of[c->pc];
    return id ? &c->regions[id - 1] : NULL;
}

static X64Xmm xmm_of(int i) { return (X64Xmm)(JIT_X64_XMM2 + i); }

int jit_double_cached(const Compiler *c, const SimEntry *e)
{
    const JitDoubleRegion *r = current(c);
    if (!r || !e || e->kind != SIM_TEMP) return -1;
    for (int i = 0; i < r->n; i++)
        if (r->temp[i] == e->v) return (int)xmm_of(i);
    return -1;
}

/* xmm x := the value of the Oop in r11 when it is a Double; nothing
 * otherwise. Clobbers rdx, r11. */
static void value_of_r11(Compiler *c, X64Xmm x)
{
    X64Label done = JIT_X64_LABEL("cached");
    jit_double_load(c, R11, x, -1, false, &done);
    jit_x64_label_bind(&c->b, &done);
}

static X64Mem temp_slot(int t) { return jit_x64_mem(RBP, 8 * (FRAME_FIRST_TEMP - t)); }

/* The loads, in line. */
static void load_all(Compiler *c, const JitDoubleRegion *r)
{
    for (int i = 0; i < r->n; i++) {
        jit_x64_mov_rm(&c->b, R11, temp_slot(r->temp[i]));
        value_of_r11(c, xmm_of(i));
    }
}

void jit_double_cache_enter(Compiler *c)
{
    uint8_t id = c->region_of[c->pc];
    if (id) load_all(c, &c->regions[id - 1]);
}

void jit_double_cache_load(Compiler *c)
{
    uint8_t id = c->region_of[c->pc];
    if (!id) return;
    X64Label back = JIT_X64_LABEL("cache loaded");
    jit_x64_lea_rl(&c->b, RSI, &back);
    jit_x64_jmp_label32(&c->b, &c->regions[id - 1].refill);
    jit_x64_label_bind(&c->b, &back);
}

/* Out of line, once per region: a call site's copy of the loads was a
 * kilobyte for 14 temps, and NBody's loop has dozens of call sites (their
 * slow paths); the head's, run at every entry, stays in line. */
void jit_double_cache_refill(Compiler *c)
{
    uint8_t id = c->region_of[c->pc];
    if (!id) return;
    JitDoubleRegion *r = &c->regions[id - 1];
    VM_ASSERT(c->pc == r->hi);
    jit_x64_label_bind(&c->b, &r->refill);
    load_all(c, r);
    jit_x64_jmp_r(&c->b, RSI);
}

void jit_double_cache_stored(Compiler *c, int t, bool from_rax)
{
    SimEntry e = { SIM_TEMP, t };
    int x = jit_double_cached(c, &e);
    if (x < 0) return;
    if (from_rax && c->xmm0_pc == c->pc) {
        jit_x64_movsd_xx(&c->b, (X64Xmm)x, JIT_X64_XMM0);
        return;
    }
    jit_x64_mov_rm(&c->b, R11, temp_slot(t));
    value_of_r11(c, (X64Xmm)x);
}

void jit_double_cache_answer(Compiler *c)
{
    if (!current(c)) return;
    jit_x64_mov_rr(&c->b, R11, RAX);
    value_of_r11(c, JIT_X64_XMM0);
}
