/*
 * vm/jit/double_cache.c — Double temps held in xmm registers through an
 * innermost loop (vm/jit/DESIGN.md, "Cached Double temps").
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
 *
 * Receiver guards. An inlined getter tests its receiver's class and that
 * no tracer holds the method probes: seven instructions, and NBody's loop
 * runs eighteen of them a pair of bodies on two temps. In a region, temp
 * guard_temp[i] read by getters of one class C has bit i in r8 under the
 * same kind of invariant:
 *
 *     whenever bit i of r8 is set, temp guard_temp[i] holds an object of
 *     class C and no tracer held the method probes when it was set.
 *
 * The bits are computed where the xmm registers are loaded (the region's
 * entry, OSR, after every call: r8 is the C ABI's to clobber), recomputed
 * at every store into a guarded temp and cleared at the back jump when a
 * tracer holds the probes; such a getter then tests its bit alone. A
 * tracer that attaches while an iteration runs is seen at its next call,
 * store or back jump instead of at the next getter: the attach is
 * asynchronous, and the first activation after it that fires is still the
 * next one the VM sees. A setter whose receiver was pushed from a guarded
 * temp (plan_setters) compares it with the temp's slot before testing the
 * bit: a call in the argument's code may have stored into the temp.
 *
 * Lazy temps. Storing a `+ - *` answer into a cached temp encoded it and
 * wrote the slot (nine instructions), and each read tested the slot again
 * (four), though in Mandelbrot's loop nothing but the next `+ - *` reads
 * it. A cached temp t = temp[i] likely to hold a Double whose every read in
 * the region is a `+ - *` operand (the receiver with one simple push
 * between, or the argument right before the send) is lazy: bit 16 + i of
 * r8 under the invariant
 *
 *     whenever bit 16 + i of r8 is set, xmm(i) holds t's value, a Double,
 *     and t's slot may hold an older one.
 *
 * A fast path whose answer is popped into t sets the bit and leaves the
 * answer in xmm(i) (no encoding, no store); a read tests the bit before
 * the slot; every other store into t clears it. Before every call in the
 * region, and where its jumps leave it, the write-back encodes each set
 * temp into its slot and clears the bits (a value out of the immediate
 * window goes to the runtime, which boxes it and may collect); where a
 * special send that read a lazy temp leaves its Double path (for the
 * SmallIntegers' path or the send), the write-back runs and the operands
 * are read again from their slots. The region's entries (head, OSR, the
 * refill after a call) clear the bits. Any other read of a lazy temp's
 * slot (jit_double_lazy_touch: a copy, a push for a send) redoes the
 * compile without lazy temps.
 */
#include "vm/jit/compile_int.h"

#include "vm/jit/compile.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <string.h>

/* Bytecodes a region may hold: none calls anything but a send through
 * the send trampoline (the special sends' generic send, mustBeBoolean)
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

/* The temps r's getters read (PUSH_TEMP t, then the inlined getter),
 * those whose sites agree on one class. */
static void plan_guards(const Compiler *c, JitDoubleRegion *r)
{
    r->nguards = 0;
    bool mixed[VM_COMPILE_MAX_VARS] = { false };
    uint32_t seen[VM_COMPILE_MAX_VARS] = { 0 }; /* class index + 1 */
    for (size_t pc = r->lo; pc < r->hi; pc += vm_bytecode_length[c->code[pc]]) {
        size_t send = pc + vm_bytecode_length[BC_PUSH_TEMP];
        uint32_t ci;
        bool setter;
        int field;
        if (c->code[pc] != BC_PUSH_TEMP || send >= r->hi || c->target[send] ||
            (c->code[send] != BC_SEND && c->code[send] != BC_SEND_W) || !jit_compile_accessor(c, send, &ci, &setter, &field) ||
            setter)
            continue;
        int t = c->code[pc + 1];
        if (seen[t] && seen[t] != ci + 1) mixed[t] = true;
        seen[t] = ci + 1;
    }
    for (int t = 0; t < VM_COMPILE_MAX_VARS && r->nguards < JIT_DOUBLE_GUARDS_MAX; t++) {
        if (!seen[t] || mixed[t]) continue;
        r->guard_temp[r->nguards] = (uint8_t)t;
        r->guard_class[r->nguards++] = seen[t] - 1;
    }
}

/* The setters of r whose receiver slot was pushed by PUSH_TEMP of a guarded
 * temp: the region's code run over a stack of "pushed from temp t" (-1:
 * anything else), forgotten where control merges. */
static void plan_setters(const Compiler *c, JitDoubleRegion *r)
{
    enum { DEPTH = 32 };
    int stack[DEPTH], n = 0;
    r->nsetters = 0;
    for (size_t pc = r->lo; pc < r->hi; pc += vm_bytecode_length[c->code[pc]]) {
        const uint8_t *p = c->code + pc;
        if (c->target[pc]) n = 0;
        int pops = 0, pushes = 0, pushed = -1;
        uint32_t ci;
        bool setter;
        int field;
        switch (p[0]) {
        case BC_PUSH_TEMP: pushes = 1, pushed = p[1]; break;
        case BC_DUP: pushes = 1, pushed = n ? stack[n - 1] : -1; break;
        case BC_STORE_TEMP:
        case BC_POP_TEMP:
            for (int i = 0; i < n; i++) /* the slots pushed before hold its old value */
                if (stack[i] == p[1]) stack[i] = -1;
            pops = p[0] == BC_POP_TEMP;
            break;
        case BC_SEND:
        case BC_SEND_W: {
            int nargs = p[0] == BC_SEND ? p[2] : p[3];
            if (nargs == 1 && n >= 2 && stack[n - 2] >= 0 && r->nsetters < JIT_DOUBLE_SETTERS_MAX &&
                jit_compile_accessor(c, pc, &ci, &setter, &field) && setter) {
                for (int g = 0; g < r->nguards; g++)
                    if (r->guard_temp[g] == stack[n - 2] && r->guard_class[g] == ci) {
                        r->setter_pc[r->nsetters] = (uint32_t)pc;
                        r->setter_guard[r->nsetters++] = (uint8_t)g;
                    }
            }
            pops = nargs + 1, pushes = 1;
            break;
        }
        default: {
            int effect = vm_bytecode_effect[p[0]];
            if (effect == BC_VARIABLE || jit_compile_jump_target(c->code, pc) >= 0) {
                n = 0;
                continue;
            }
            pops = p[0] >= BC_SEND_ADD && p[0] <= BC_SEND_LAST_SPECIAL ? vm_special_nargs[p[0] - BC_SEND_ADD] + 1
                                                                        : (effect < 0 ? -effect : 0);
            pushes = pops + effect;
            break;
        }
        }
        n = pops > n ? 0 : n - pops;
        for (int i = 0; i < pushes; i++) {
            if (n == DEPTH) { /* forget the deepest */
                memmove(stack, stack + 1, (DEPTH - 1) * sizeof stack[0]);
                n--;
            }
            stack[n++] = pushed;
        }
    }
}

void jit_double_cache_plan(Compiler *c)
{
    c->nregions = 0;
    for (size_t pc = 0; pc < c->len && c->nregions < JIT_DOUBLE_REGIONS_MAX; pc += vm_bytecode_length[c->code[pc]]) {
        if (c->code[pc] != BC_JUMP_BACK) continue;
        JitDoubleRegion r;
        if (!region_at(c, pc, &r)) continue;
        plan_guards(c, &r);
        plan_setters(c, &r);
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
        bound += (size_t)r->nguards * 64 + ops * 64 + 48;      /* the guards: refill, stores, back jump */
        if (r->lazy) /* the write-back, its sites (calls, exits, Double paths left), reads and stores */
            bound += (size_t)r->n * 160 + (size_t)r->nexits * 96 + ops * 256;
    }
    return bound;
}

static const JitDoubleRegion *current(const Compiler *c) { return jit_double_region_at_pc(c); }
static X64Xmm xmm_of(int i) { return jit_double_region_xmm(i); }

/* xmm x := the value of the Oop in r11 when it is a Double; nothing
 * otherwise. Clobbers rdx, r11. */
static void value_of_r11(Compiler *c, X64Xmm x)
{
    X64Label done = JIT_X64_LABEL("cached");
    jit_double_load(c, R11, x, -1, false, &done);
    jit_x64_label_bind(&c->b, &done);
}

static X64Mem temp_slot(int t) { return jit_x64_mem(RBP, 8 * (FRAME_FIRST_TEMP - t)); }

/* To skip when a tracer holds the method probes (clobbers scratch). */
static void probes_free_or(Compiler *c, X64Reg scratch, X64Label *skip)
{
    if (!c->rt->method_probe_semaphores) return;
    jit_x64_mov_ri(&c->b, scratch, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
    jit_x64_cmp_mi(&c->b, jit_x64_mem(scratch, 0), 0); /* both semaphores, and 32 bits of 0 */
    jit_x64_jcc_label32(&c->b, JIT_X64_CC_NE, skip);
}

/* Sets guard i's bit when v (kept) is an object of its class. Clobbers rdx. */
static void guard_set_if(Compiler *c, const JitDoubleRegion *r, int i, X64Reg v)
{
    X64Buf *b = &c->b;
    X64Label skip = JIT_X64_LABEL("guard not set");
    jit_x64_test_ri(b, v, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &skip);
    jit_x64_mov_rm32(b, RDX, jit_x64_mem(v, 0));
    jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
    jit_x64_cmp_ri(b, RDX, (int32_t)r->guard_class[i]);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &skip);
    jit_x64_or_ri(b, JIT_GUARD_REG, (int32_t)1 << i);
    jit_x64_label_bind(b, &skip);
}

/* The loads, in line. */
static void load_all(Compiler *c, const JitDoubleRegion *r)
{
    for (int i = 0; i < r->n; i++) {
        jit_x64_mov_rm(&c->b, R11, temp_slot(r->temp[i]));
        value_of_r11(c, xmm_of(i));
    }
    if (r->lazy && !r->nguards) jit_x64_xor_rr(&c->b, JIT_GUARD_REG, JIT_GUARD_REG); /* slots and registers agree */
    if (!r->nguards) return;
    X64Label none = JIT_X64_LABEL("no guards");
    jit_x64_xor_rr(&c->b, JIT_GUARD_REG, JIT_GUARD_REG);
    probes_free_or(c, R11, &none);
    for (int i = 0; i < r->nguards; i++) {
        jit_x64_mov_rm(&c->b, R11, temp_slot(r->guard_temp[i]));
        guard_set_if(c, r, i, R11);
    }
    jit_x64_label_bind(&c->b, &none);
}

int32_t jit_double_cache_guard(const Compiler *c, const SimEntry *e, uint32_t class_index)
{
    const JitDoubleRegion *r = current(c);
    if (!r || !e || e->kind != SIM_TEMP) return 0;
    for (int i = 0; i < r->nguards; i++)
        if (r->guard_temp[i] == e->v && r->guard_class[i] == class_index) return (int32_t)1 << i;
    return 0;
}

int32_t jit_double_cache_setter_guard(const Compiler *c, uint32_t class_index, int *temp)
{
    const JitDoubleRegion *r = current(c);
    for (int i = 0; r && i < r->nsetters; i++) {
        int g = r->setter_guard[i];
        if (r->setter_pc[i] == c->pc && r->guard_class[g] == class_index) {
            *temp = r->guard_temp[g];
            return (int32_t)1 << g;
        }
    }
    return 0;
}

void jit_double_cache_guard_probes(Compiler *c)
{
    const JitDoubleRegion *r = current(c);
    if (!r || !r->nguards || !c->rt->method_probe_semaphores) return;
    X64Buf *b = &c->b;
    X64Label free = JIT_X64_LABEL("probes free");
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
    jit_x64_cmp_mi(b, jit_x64_mem(R11, 0), 0);
    jit_x64_jcc_label32(b, JIT_X64_CC_E, &free);
    if (r->lazy) jit_x64_and_ri(b, JIT_GUARD_REG, (int32_t)~(((uint32_t)1 << JIT_DOUBLE_LAZY_SHIFT) - 1)); /* not the lazy bits */
    else jit_x64_xor_rr(b, JIT_GUARD_REG, JIT_GUARD_REG);
    jit_x64_label_bind(b, &free);
}

/* -- Lazy temps ------------------------------------------------------------------------ */

static bool lazy_simple_push(uint8_t op)
{
    switch (op) {
    case BC_PUSH_SELF: case BC_PUSH_0: case BC_PUSH_1: case BC_PUSH_LITERAL: case BC_PUSH_LITERAL_W:
    case BC_PUSH_FIELD: case BC_PUSH_ARG: case BC_PUSH_TEMP: return true;
    default: return false;
    }
}

/* A `+ - *` at pc that machine code computes on Doubles in line, trying
 * the Double path first (emit_special's double_first): temp t likely holds
 * a Double, or the interpreter ran the site on Doubles. */
static bool lazy_consumer(const Compiler *c, size_t pc, int t)
{
    uint8_t op = c->code[pc];
    return (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) && !c->target[pc] && jit_double_inline(c, op) &&
           (c->likely_double[t] || (c->rt->site_saw_double && c->rt->site_saw_double(c->code + pc)));
}

/* Every read of temp t in r is an operand of a `+ - *` (lazy_consumer):
 * its argument (the send right after the push) or its receiver (one
 * simple push between, or a push and an inlined getter of what it
 * pushed). */
static bool reads_only_as_operands(const Compiler *c, const JitDoubleRegion *r, int t)
{
    for (size_t pc = r->lo; pc < r->hi; pc += vm_bytecode_length[c->code[pc]]) {
        if (c->code[pc] != BC_PUSH_TEMP || c->code[pc + 1] != t) continue;
        size_t q = pc + vm_bytecode_length[BC_PUSH_TEMP];
        if (q >= r->hi) return false;
        if (lazy_consumer(c, q, t)) continue;
        if (!lazy_simple_push(c->code[q]) || c->target[q]) return false;
        size_t q2 = q + vm_bytecode_length[c->code[q]];
        if (q2 >= r->hi) return false;
        if (lazy_consumer(c, q2, t)) continue;
        /* NBody's `dx * jBody mass`: the argument an inlined getter's answer */
        uint32_t ci;
        bool setter;
        int field;
        uint8_t op = c->code[q2];
        if ((op != BC_SEND && op != BC_SEND_W) || c->target[q2] || !jit_compile_accessor(c, q2, &ci, &setter, &field) || setter)
            return false;
        size_t q3 = q2 + vm_bytecode_length[op];
        if (q3 >= r->hi || !lazy_consumer(c, q3, t)) return false;
    }
    return true;
}

/* The targets outside r of its jumps, each reached from r alone (r ends in
 * its JUMP_BACK, so nothing falls out of it): false when there are more
 * than JIT_DOUBLE_EXITS_MAX or code outside r reaches one too. */
static bool plan_exits(const Compiler *c, JitDoubleRegion *r)
{
    r->nexits = 0;
    for (size_t pc = r->lo; pc <= r->hi; pc += vm_bytecode_length[c->code[pc]]) {
        long t = jit_compile_jump_target(c->code, pc);
        if (t < 0 || ((size_t)t >= r->lo && (size_t)t <= r->hi)) continue;
        bool known = false;
        for (int k = 0; k < r->nexits; k++) known |= r->exit_pc[k] == (size_t)t;
        if (known) continue;
        if (r->nexits == JIT_DOUBLE_EXITS_MAX) return false;
        r->exit_pc[r->nexits++] = (size_t)t;
    }
    size_t prev = SIZE_MAX;
    for (size_t pc = 0; pc < c->len; prev = pc, pc += vm_bytecode_length[c->code[pc]]) {
        bool inside = pc >= r->lo && pc <= r->hi;
        long t = jit_compile_jump_target(c->code, pc);
        for (int k = 0; k < r->nexits; k++) {
            if (!inside && t == (long)r->exit_pc[k]) return false;
            if (pc == r->exit_pc[k] && prev != SIZE_MAX && prev != r->hi) {
                uint8_t op = c->code[prev]; /* what falls into it */
                if (op != BC_JUMP && op != BC_JUMP_BACK && op != BC_RETURN_TOP && op != BC_RETURN_SELF &&
                    op != BC_RETURN_NONLOCAL)
                    return false;
            }
        }
    }
    return true;
}

void jit_double_lazy_plan(Compiler *c)
{
    for (int k = 0; k < c->nregions; k++) {
        JitDoubleRegion *r = &c->regions[k];
        r->lazy = 0;
        jit_x64_label_init(&r->flush, "lazy temps' write-back");
        if (c->lazy_off || !c->rt->lazy_box || !c->rt->lazy_buffer || !plan_exits(c, r)) continue;
        for (int i = 0; i < r->n && i < 16; i++) {
            int t = r->temp[i];
            bool guard = false;
            for (int g = 0; g < r->nguards; g++) guard |= r->guard_temp[g] == t;
            bool stored = false; /* a temp the loop only reads gains nothing: its bit would stay clear */
            for (size_t pc = r->lo; pc < r->hi; pc += vm_bytecode_length[c->code[pc]])
                stored |= (c->code[pc] == BC_POP_TEMP || c->code[pc] == BC_STORE_TEMP) && c->code[pc + 1] == t;
            if (!guard && stored && reads_only_as_operands(c, r, t)) r->lazy |= (uint32_t)1 << i;
        }
    }
}

void jit_double_lazy_touch(Compiler *c, int t)
{
    const JitDoubleRegion *r = current(c);
    if (!r || !r->lazy || c->lazy_read_ok) return;
    for (int i = 0; i < r->n; i++)
        if (r->temp[i] == t && ((r->lazy >> i) & 1)) c->lazy_broken = true;
}

int jit_double_lazy_store(const Compiler *c, size_t next)
{
    const JitDoubleRegion *r = current(c);
    if (!r || !r->lazy || c->nheld || next >= r->hi || c->target[next] || c->code[next] != BC_POP_TEMP) return -1;
    if (next + vm_bytecode_length[BC_POP_TEMP] > r->hi) return -1;
    for (int i = 0; i < r->n; i++)
        if (r->temp[i] == c->code[next + 1] && ((r->lazy >> i) & 1)) return i;
    return -1;
}

void jit_double_lazy_store_fast(Compiler *c, int i, int s, size_t next)
{
    X64Buf *b = &c->b;
    jit_x64_movsd_xx(b, xmm_of(i), JIT_X64_XMM0);
    jit_x64_or_ri(b, JIT_GUARD_REG, (int32_t)((uint32_t)1 << (JIT_DOUBLE_LAZY_SHIFT + i)));
    if (s) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * s));
    jit_x64_jmp_label32(b, &c->labels[next + vm_bytecode_length[BC_POP_TEMP]]);
}

/* The region's write-back, out of line (entered with the way back in rsi):
 * each lazy temp whose bit is set is encoded into its slot and its bit
 * cleared; a value out of the immediate window is left to the runtime: its
 * bits and temp go to the runtime's buffer, its bit stays set, and edx
 * comes back non-zero. Clobbers rdx, rdi, r11. */
static void emit_write_back(Compiler *c, JitDoubleRegion *r)
{
    X64Buf *b = &c->b;
    jit_x64_label_bind(b, &r->flush);
    jit_x64_xor_rr(b, RDX, RDX);
    for (int i = 0; i < r->n; i++) {
        if (!((r->lazy >> i) & 1)) continue;
        int32_t bit = (int32_t)((uint32_t)1 << (JIT_DOUBLE_LAZY_SHIFT + i));
        X64Label next = JIT_X64_LABEL("next lazy temp"), out = JIT_X64_LABEL("out of the window"),
                 runtime = JIT_X64_LABEL("boxed by the runtime");
        jit_x64_test_ri(b, JIT_GUARD_REG, bit);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, &next);
        jit_double_biased_or(c, xmm_of(i), RDI, R11, &out);
        jit_x64_rol_ri(b, RDI, 4);
        jit_x64_mov_mr(b, temp_slot(r->temp[i]), RDI);
        jit_x64_and_ri(b, JIT_GUARD_REG, ~bit);
        jit_x64_jmp_label32(b, &next);
        jit_x64_label_bind(b, &out);
        jit_x64_movq_rx(b, RDI, xmm_of(i));
        jit_x64_lea_rm(b, R11, jit_x64_mem_index(RDI, RDI, 1, 0));
        jit_x64_test_rr(b, R11, R11);
        jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &runtime);
        jit_x64_shr_ri(b, RDI, 63); /* ±0.0: the sign over the tag */
        jit_x64_shl_ri(b, RDI, 3);
        jit_x64_or_ri(b, RDI, OOP_FLOAT_TAG);
        jit_x64_mov_mr(b, temp_slot(r->temp[i]), RDI);
        jit_x64_and_ri(b, JIT_GUARD_REG, ~bit);
        jit_x64_jmp_label32(b, &next);
        jit_x64_label_bind(b, &runtime);
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->lazy_buffer);
        jit_x64_movsd_mx(b, jit_x64_mem(R11, 8 * i), xmm_of(i));
        jit_x64_mov_mi32(b, jit_x64_mem(R11, 8 * (JIT_LAZY_BUFFER_TEMPS + i)), r->temp[i]);
        jit_x64_or_ri(b, RDX, 1);
        jit_x64_label_bind(b, &next);
    }
    jit_x64_jmp_r(b, RSI);
}

/* The write-back of r's lazy temps from here; refill: the registers are
 * made again after a runtime call (not where the code leaves r). */
static void flush_site(Compiler *c, JitDoubleRegion *r, size_t bcpc, bool refill)
{
    X64Buf *b = &c->b;
    X64Label back = JIT_X64_LABEL("written back"), runtime = JIT_X64_LABEL("boxes by the runtime"),
             done = JIT_X64_LABEL("lazy temps in their slots");
    jit_x64_lea_rl(b, RSI, &back);
    jit_x64_jmp_label32(b, &r->flush);
    jit_x64_label_bind(b, &back);
    jit_x64_test_rr(b, RDX, RDX);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &runtime);
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &runtime);
    jit_x64_mov_rr(b, RDI, JIT_GUARD_REG);
    jit_x64_shr_ri(b, RDI, JIT_DOUBLE_LAZY_SHIFT); /* bit i: temp[i]'s value is in the buffer */
    jit_x64_call_rel32(b, c->rt->lazy_box);
    jit_compile_map_here(c, bcpc, JIT_MAP_OTHER);
    if (refill) {
        X64Label again = JIT_X64_LABEL("refilled");
        jit_x64_lea_rl(b, RSI, &again);
        jit_x64_jmp_label32(b, &r->refill);
        jit_x64_label_bind(b, &again);
    }
    jit_x64_jmp_label32(b, &done);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &done);
}

void jit_double_cache_flush(Compiler *c, size_t bcpc)
{
    uint8_t id = c->region_of[c->pc];
    if (id && c->regions[id - 1].lazy) flush_site(c, &c->regions[id - 1], bcpc, true);
}

void jit_double_cache_exit(Compiler *c, size_t pc)
{
    for (int k = 0; k < c->nregions; k++) {
        JitDoubleRegion *r = &c->regions[k];
        if (!r->lazy) continue;
        for (int e = 0; e < r->nexits; e++)
            if (r->exit_pc[e] == pc) flush_site(c, r, pc, false);
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
    if (r->lazy) emit_write_back(c, r);
}

/* Guard i's bit after its temp was stored from r (kept; value as
 * jit_double_cache_stored's). Clobbers rdx. */
static void guard_stored(Compiler *c, const JitDoubleRegion *r, int i, const SimEntry *value, X64Reg v)
{
    X64Buf *b = &c->b;
    jit_x64_and_ri(b, JIT_GUARD_REG, ~((int32_t)1 << i));
    bool constant = value && value->kind == SIM_CONST; /* (v may not hold it: a mov of an imm32) */
    if (constant && (oop_is_imm((Oop)value->v) || obj_class_index((Oop)value->v) != r->guard_class[i]))
        return; /* nil, a SmallInteger: no object of the class */
    X64Label skip = JIT_X64_LABEL("guard stays clear");
    probes_free_or(c, RDX, &skip);
    if (constant) jit_x64_or_ri(b, JIT_GUARD_REG, (int32_t)1 << i);
    else guard_set_if(c, r, i, v);
    jit_x64_label_bind(b, &skip);
}

void jit_double_cache_stored(Compiler *c, int t, const SimEntry *value, X64Reg r)
{
    const JitDoubleRegion *region = current(c);
    for (int i = 0; region && i < region->nguards; i++)
        if (region->guard_temp[i] == t) guard_stored(c, region, i, value, r);
    SimEntry e = { SIM_TEMP, t };
    int x = jit_double_cached(c, &e);
    if (x < 0) return;
    int32_t lazy = jit_double_lazy_bit(c, x);
    if (lazy) jit_x64_and_ri(&c->b, JIT_GUARD_REG, ~lazy); /* the slot holds the value now */
    if (value && value->kind == SIM_CONST) {
        if (!vm_is_double((Oop)value->v)) return; /* holds no Double */
        jit_x64_mov_rm(&c->b, R11, temp_slot(t)); /* r may not hold it (a mov of an imm32) */
        r = R11;
    }
    int from = jit_double_cached(c, value);
    if (from < 0 && value && value->kind == SIM_RAX && c->xmm0_pc == c->pc) from = JIT_X64_XMM0;
    if (from >= 0) { /* whenever the value is a Double, that register holds it */
        if (from != x) jit_x64_movsd_xx(&c->b, (X64Xmm)x, (X64Xmm)from);
        return;
    }
    X64Label done = JIT_X64_LABEL("cached");
    jit_double_load(c, r, (X64Xmm)x, -1, false, &done);
    jit_x64_label_bind(&c->b, &done);
}

void jit_double_cache_answer(Compiler *c)
{
    if (!current(c)) return;
    jit_x64_mov_rr(&c->b, R11, RAX);
    value_of_r11(c, JIT_X64_XMM0);
}
