/*
 * vm/jit/double_inline.c — the Double fast paths of vm/jit/compile.c's special
 * sends: + - * < > <= >= = on boxed Doubles, and chains of them that keep
 * their intermediate results unboxed (see "Chains" below and vm/jit/DESIGN.md).
 */
#include "vm/jit/compile_int.h"

#include "vm/jit/compile.h"

#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <string.h>

bool jit_double_inline(const Compiler *c, uint8_t op)
{
    return c->rt->double_prims && ((*c->rt->double_prims >> (op - BC_SEND_ADD)) & 1);
}

/* x := the integer in r as a Double. cvtsi2sd writes only x's low half and so
 * waits for whatever last wrote x; zeroing x first cuts that dependency. */
static void double_from_int(X64Buf *b, X64Xmm x, X64Reg r)
{
    jit_x64_xorps_xx(b, x, x);
    jit_x64_cvtsi2sd_xr(b, x, r);
}

/* x := d, an immediate in the instruction stream (clobbers r11). */
static void load_constant(Compiler *c, X64Xmm x, double d)
{
    int64_t bits;
    memcpy(&bits, &d, sizeof bits);
    jit_x64_mov_ri(&c->b, R11, bits);
    jit_x64_movq_xr(&c->b, x, R11);
}

/* x := the value of the immediate Double in r other than a zero (gc/object.h:
 * rotate the tag back up, take the exponent's bias off), then to done; to
 * zero for the two zeros. Keeps r unless it is r11; clobbers rdx, r11. */
static void decode_immediate_to(Compiler *c, X64Reg r, X64Xmm x, X64Label *zero, X64Label *done)
{
    X64Buf *b = &c->b;
    jit_x64_cmp_ri(b, r, OOP_FLOAT_ZEROS);
    jit_x64_jcc_label32(b, JIT_X64_CC_B, zero);
    if (r != R11) jit_x64_mov_rr(b, R11, r);
    jit_x64_ror_ri(b, R11, 4);
    jit_x64_sub_rl(b, R11, &c->float_bias);
    jit_x64_movq_xr(b, x, R11);
    jit_x64_jmp_forward(b, done);
}

/* x := the zero in r, the immediate Double whose sign is all it has. */
static void decode_zero(Compiler *c, X64Reg r, X64Xmm x)
{
    X64Buf *b = &c->b;
    if (r != R11) jit_x64_mov_rr(b, R11, r);
    jit_x64_shr_ri(b, R11, 3);
    jit_x64_shl_ri(b, R11, 63);
    jit_x64_movq_xr(b, x, R11);
}

static void load_from_slot(Compiler *c, X64Reg r, X64Xmm x, int cached, bool ints_too, X64Label *other);

void jit_double_load(Compiler *c, X64Reg r, X64Xmm x, int cached, bool ints_too, X64Label *other)
{
    int32_t lazy = cached >= 0 ? jit_double_lazy_bit(c, cached) : 0;
    if (!lazy) {
        load_from_slot(c, r, x, cached, ints_too, other);
        return;
    }
    /* a lazy temp (vm/jit/double_cache.c): its register while its bit is
     * set, and r (its slot) tested as ever when not */
    X64Buf *b = &c->b;
    X64Label slot = JIT_X64_LABEL("lazy temp's slot"), have = JIT_X64_LABEL("lazy operand loaded");
    jit_x64_test_ri(b, JIT_GUARD_REG, lazy);
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, &slot);
    jit_x64_movsd_xx(b, x, (X64Xmm)cached);
    jit_x64_jmp_forward(b, &have);
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &slot);
    const JitDoubleRegion *region = jit_double_region_at_pc(c); /* r was not loaded: the slot holds the value */
    int t = region->temp[cached - (int)jit_double_region_xmm(0)];
    jit_x64_mov_rm(b, r, jit_compile_temp_slot(t));
    load_from_slot(c, r, x, cached, ints_too, other);
    jit_x64_jmp_label32(b, &have);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &have);
}

static void load_from_slot(Compiler *c, X64Reg r, X64Xmm x, int cached, bool ints_too, X64Label *other)
{
    X64Buf *b = &c->b;
    X64Label have = JIT_X64_LABEL("operand loaded"), not_immediate = JIT_X64_LABEL("not an immediate Double"),
             integer = JIT_X64_LABEL("SmallInteger operand"), zero = JIT_X64_LABEL("a zero");
    /* the immediate Double in line: it is what these paths are for; the
     * zeros, boxed Doubles and SmallIntegers in the cold section */
    jit_x64_lea_rm(b, RDX, jit_x64_mem(r, -OOP_FLOAT_TAG));
    jit_x64_test_ri(b, RDX, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &not_immediate);
    if (cached >= 0) {
        jit_x64_movsd_xx(b, x, (X64Xmm)cached);
        jit_x64_jmp_forward(b, &have);
    } else {
        decode_immediate_to(c, r, x, &zero, &have);
    }
    jit_compile_cold_begin(c);
    if (cached < 0) {
        jit_x64_label_bind(b, &zero);
        decode_zero(c, r, x);
        jit_x64_jmp_label32(b, &have);
    }
    jit_x64_label_bind(b, &not_immediate);
    jit_x64_test_ri(b, r, 7); /* now a SmallInteger or an object */
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, ints_too ? &integer : other);
    jit_x64_mov_rm(b, RDX, jit_x64_mem(r, 0));
    jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
    jit_x64_cmp_ri(b, RDX, CLASS_INDEX_DOUBLE);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, other);
    if (cached >= 0) jit_x64_movsd_xx(b, x, (X64Xmm)cached);
    else jit_x64_movsd_xm(b, x, jit_x64_mem(r, 8));
    if (ints_too) {
        jit_x64_jmp_label32(b, &have);
        jit_x64_label_bind(b, &integer);
        jit_x64_mov_rr(b, R11, r);
        jit_x64_sar_ri(b, R11, 1);
        double_from_int(b, x, R11);
    }
    jit_x64_jmp_forward(b, &have);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &have);
}

static void number_or(Compiler *c, X64Reg r, X64Xmm x, bool ints_too, X64Label *slow)
{
    jit_double_load(c, r, x, -1, ints_too, slow);
}

/* number_or, or for a cached temp (cached >= 0) its register's value. */
static void operand_or(Compiler *c, X64Reg r, int cached, X64Xmm x, bool ints_too, X64Label *slow)
{
    jit_double_load(c, r, x, cached, ints_too, slow);
}

static bool lit_double(const Compiler *c, const SimEntry *e, double *d)
{
    if (!e || e->kind != SIM_LIT) return false;
    Oop v = obj_slots(c->method)[METHOD_FIXED_SLOTS + e->v];
    if (!vm_is_double(v)) return false;
    *d = oop_double(v);
    return true;
}

JitOperandFacts jit_double_facts(const Compiler *c, const SimEntry *r, const SimEntry *a)
{
    JitOperandFacts f = { .same = false };
    f.receiver_double = lit_double(c, r, &f.receiver_value);
    f.arg_double = lit_double(c, a, &f.arg_value);
    f.receiver_xmm = jit_double_cached(c, r);
    f.arg_xmm = jit_double_cached(c, a);
    /* a variable read twice with nothing between: the same Oop */
    f.same = r && a && r->kind == a->kind && r->v == a->v &&
             (r->kind == SIM_TEMP || r->kind == SIM_ARG || r->kind == SIM_SELF || r->kind == SIM_FIELD ||
              r->kind == SIM_LIT);
    return f;
}

/* xmm0 := the Double receiver (rax), xmm1 := the argument (rcx: a Double,
 * or a SmallInteger converted when ints_too), or to slow; keeps rax, rcx. */
static void doubles_or(Compiler *c, JitOperandFacts f, bool ints_too, X64Label *slow)
{
    if (f.receiver_double) load_constant(c, JIT_X64_XMM0, f.receiver_value);
    else operand_or(c, RAX, f.receiver_xmm, JIT_X64_XMM0, false, slow);
    if (f.same) jit_x64_movsd_xx(&c->b, JIT_X64_XMM1, JIT_X64_XMM0);
    else if (f.arg_double) load_constant(c, JIT_X64_XMM1, f.arg_value);
    else operand_or(c, RCX, f.arg_xmm, JIT_X64_XMM1, ints_too, slow);
}

/* rdi := eden's top, rdx := rdi + 16, r11 := &eden top; to slow when eden
 * is past its soft limit — which is 0 while a tracer watches allocations
 * (gc/heap.h), so the object__alloc probe sees the Double the primitive
 * then allocates. Writes nothing. */
/* Where p lies from eden's top, when r11 (holding &eden top) can reach it
 * with a 32-bit displacement: the VM's globals lie together, and each
 * Double then costs a register load less (Mandelbrot boxes seven an
 * iteration). */
static bool near_eden_top(const Compiler *c, const void *p, int32_t *d)
{
    intptr_t delta = (intptr_t)p - (intptr_t)c->rt->eden_top;
    *d = (int32_t)delta;
    return delta == (intptr_t)*d;
}

static void eden_room_or(Compiler *c, X64Label *slow)
{
    X64Buf *b = &c->b;
    int32_t d;
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->eden_top);
    jit_x64_mov_rm(b, RDI, jit_x64_mem(R11, 0));
    jit_x64_lea_rm(b, RDX, jit_x64_mem(RDI, 16));
    if (near_eden_top(c, c->rt->eden_limit, &d)) {
        jit_x64_cmp_rm(b, RDX, jit_x64_mem(R11, d));
    } else {
        jit_x64_mov_ri(b, RSI, (int64_t)(uintptr_t)c->rt->eden_limit);
        jit_x64_cmp_rm(b, RDX, jit_x64_mem(RSI, 0));
    }
    jit_x64_jcc_label32(b, JIT_X64_CC_A, slow);
}

/* rax := a new Double holding xmm0 at rdi, as eden_room_or left rdi, rdx
 * and r11 (eden's top moves to rdx), counted as gc_alloc_fast counts. */
static void box_at_rdi(Compiler *c)
{
    X64Buf *b = &c->b;
    int32_t d;
    jit_x64_mov_mr(b, jit_x64_mem(R11, 0), RDX);
    jit_x64_mov_ri(b, RDX, (int64_t)((uint64_t)CLASS_INDEX_DOUBLE | ((uint64_t)FMT_WORDS << OBJ_FORMAT_SHIFT) |
                                       ((uint64_t)1 << OBJ_SLOTS_SHIFT)));
    jit_x64_mov_mr(b, jit_x64_mem(RDI, 0), RDX);
    jit_x64_movsd_mx(b, jit_x64_mem(RDI, 8), JIT_X64_XMM0);
    if (near_eden_top(c, c->rt->bytes_allocated, &d)) {
        jit_x64_add_mi(b, jit_x64_mem(R11, d), 16);
    } else {
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->bytes_allocated);
        jit_x64_add_mi(b, jit_x64_mem(R11, 0), 16);
    }
    jit_x64_mov_rr(b, RAX, RDI);
}

/* rax := the immediate Double of xmm0, then to done; when xmm0's value
 * must be boxed (gc/object.h, oop_float_encode: out of the exponent window,
 * the tag comes out wrong) goes on in the cold section with rax and rcx
 * intact: the caller boxes, jumps and ends the cold section. Clobbers rdx,
 * rdi. */
void jit_double_biased_or(Compiler *c, X64Xmm x, X64Reg r, X64Reg scratch, X64Label *out)
{
    X64Buf *b = &c->b;
    jit_x64_movq_rx(b, r, x);
    jit_x64_add_rl(b, r, &c->float_bias);
    /* the tag and "e is not 896" (just below the window) in one unsigned
     * compare (gc/object.h, OOP_FLOAT_WINDOW_LO): two instructions and a
     * branch fewer than testing the rotated word's tag and top byte */
    jit_x64_lea_rm(b, scratch, jit_x64_mem_index(r, r, 1, 0));
    jit_x64_sub_rl(b, scratch, &c->float_window_lo);
    jit_x64_cmp_rl(b, scratch, &c->float_window_span);
    jit_x64_jcc_label32(b, JIT_X64_CC_AE, out);
}

static void immediate_or_cold(Compiler *c, X64Label *done)
{
    X64Buf *b = &c->b;
    X64Label out_of_window = JIT_X64_LABEL("exponent out of the window"), boxed = JIT_X64_LABEL("boxed");
    jit_double_biased_or(c, JIT_X64_XMM0, RDI, RDX, &out_of_window);
    jit_x64_mov_rr(b, RAX, RDI);
    jit_x64_rol_ri(b, RAX, 4);
    jit_x64_jmp_forward(b, done);
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &out_of_window);
    jit_x64_movq_rx(b, RDI, JIT_X64_XMM0);
    jit_x64_add_rr(b, RDI, RDI); /* all but the sign */
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &boxed);
    jit_x64_movq_rx(b, RDI, JIT_X64_XMM0); /* ±0.0: the sign over the tag */
    jit_x64_shr_ri(b, RDI, 63);
    jit_x64_shl_ri(b, RDI, 3);
    jit_x64_lea_rm(b, RAX, jit_x64_mem(RDI, OOP_FLOAT_TAG));
    jit_x64_jmp_label32(b, done);
    jit_x64_label_bind(b, &boxed);
}

/* rax := xmm0 as a Double, then to done: an immediate, or a new boxed
 * Double, or to slow when eden has no room (eden_room_or). Nothing is
 * written on the way to slow; rax and rcx stay intact until then. */
static void answer_double(Compiler *c, X64Label *slow, X64Label *done)
{
    immediate_or_cold(c, done);
    eden_room_or(c, slow);
    box_at_rdi(c);
    jit_x64_jmp_forward(&c->b, done);
    jit_compile_cold_end(c);
}

/* rax := xmm0 as a Double, then to done, for a chain that reserved no
 * room (c->rt->box_double): an immediate, a box bumped into eden, or one
 * the runtime makes when eden is full (the call may collect: the chain's
 * operands are consumed, the real stack is the plain code's at bcpc, and
 * a cached region's registers are refilled after it). In the cold section;
 * clobbers rdx, rdi, rsi, r11. */
static void box_answer_cold(Compiler *c, size_t bcpc, X64Label *done)
{
    X64Buf *b = &c->b;
    X64Label call = JIT_X64_LABEL("box by the runtime");
    immediate_or_cold(c, done); /* in line: the cold section begins (nested) */
    eden_room_or(c, &call);
    box_at_rdi(c);
    jit_x64_jmp_label32(b, done);
    jit_x64_label_bind(b, &call);
    if (jit_double_region_at_pc(c) && jit_double_region_at_pc(c)->lazy) {
        /* the call's refill reads the slots: the lazy temps go there first,
         * and the answer waits in C memory meanwhile (a write-back may call) */
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)(c->rt->lazy_buffer + 2 * JIT_LAZY_BUFFER_TEMPS));
        jit_x64_movsd_mx(b, jit_x64_mem(R11, 0), JIT_X64_XMM0);
        jit_double_cache_flush(c, bcpc);
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)(c->rt->lazy_buffer + 2 * JIT_LAZY_BUFFER_TEMPS));
        jit_x64_movsd_xm(b, JIT_X64_XMM0, jit_x64_mem(R11, 0));
    }
    jit_x64_movq_rx(b, RDI, JIT_X64_XMM0);
    jit_x64_call_rel32(b, c->rt->box_double);
    jit_compile_map_here(c, bcpc, JIT_MAP_OTHER);
    jit_double_cache_load(c); /* the call used the xmm registers */
    jit_x64_jmp_label32(b, done);
    jit_compile_cold_end(c);
}

static void arith_xx(Compiler *c, uint8_t op, X64Xmm dst, X64Xmm src)
{
    X64Buf *b = &c->b;
    switch (op) {
    case BC_SEND_ADD: jit_x64_addsd_xx(b, dst, src); break;
    case BC_SEND_SUB: jit_x64_subsd_xx(b, dst, src); break;
    case BC_SEND_MUL: jit_x64_mulsd_xx(b, dst, src); break;
    default: VM_ASSERT(op == JIT_DOUBLE_OP_DIVIDE); jit_x64_divsd_xx(b, dst, src); break;
    }
}

void jit_double_arith(Compiler *c, uint8_t op, JitOperandFacts f, X64Label *slow, X64Label *done)
{
    doubles_or(c, f, true, slow);
    arith_xx(c, op, JIT_X64_XMM0, JIT_X64_XMM1);
    answer_double(c, slow, done);
}

void jit_double_arith_lazy(Compiler *c, uint8_t op, JitOperandFacts f, X64Label *slow, int lazy, int s, size_t next)
{
    doubles_or(c, f, true, slow);
    arith_xx(c, op, JIT_X64_XMM0, JIT_X64_XMM1);
    jit_double_lazy_store_fast(c, lazy, s, next);
}

_Static_assert(BC_COUNT < JIT_DOUBLE_OP_DIVIDE, "chain ops beyond the bytecodes");

JitDoubleSend jit_double_send_kind(const Compiler *c, size_t pc)
{
    const uint8_t *p = c->code + pc;
    VM_ASSERT(p[0] == BC_SEND || p[0] == BC_SEND_W);
    unsigned lit = p[0] == BC_SEND ? p[1] : (unsigned)p[1] | (unsigned)p[2] << 8;
    int nargs = p[0] == BC_SEND ? p[2] : p[3];
    Oop sel = obj_slots(c->method)[METHOD_FIXED_SLOTS + lit];
    size_t len = obj_byte_length(sel);
    const uint8_t *name = obj_bytes(sel);
    if (nargs == 1 && len == 2 && memcmp(name, "//", 2) == 0 && c->rt->double_divide_inline &&
        *c->rt->double_divide_inline)
        return JIT_DOUBLE_SEND_DIVIDE;
    if (nargs == 0 && len == 4 && memcmp(name, "sqrt", 4) == 0 && c->rt->double_sqrt_inline &&
        *c->rt->double_sqrt_inline)
        return JIT_DOUBLE_SEND_SQRT;
    return JIT_DOUBLE_SEND_NONE;
}

/* Double // (IEEE division: by zero too, as the primitive) with a Double
 * or SmallInteger argument, and sqrt (sqrtsd rounds as C's sqrt; a
 * negative receiver answers NaN). */
void jit_double_send(Compiler *c, JitDoubleSend kind, JitOperandFacts f, X64Label *slow, X64Label *done)
{
    X64Buf *b = &c->b;
    if (kind == JIT_DOUBLE_SEND_DIVIDE) {
        doubles_or(c, f, true, slow);
        jit_x64_divsd_xx(b, JIT_X64_XMM0, JIT_X64_XMM1);
    } else {
        VM_ASSERT(kind == JIT_DOUBLE_SEND_SQRT);
        if (f.receiver_double) load_constant(c, JIT_X64_XMM0, f.receiver_value);
        else operand_or(c, RAX, f.receiver_xmm, JIT_X64_XMM0, false, slow);
        jit_x64_sqrtsd_xx(b, JIT_X64_XMM0, JIT_X64_XMM0);
    }
    answer_double(c, slow, done);
}

/* The condition that answers receiver op argument after ucomisd of the
 * argument with the receiver (in that order). ucomisd sets CF and ZF when
 * unordered: a NaN makes A and AE (`<`, `<=`) false and B and BE (`>`,
 * `>=`) true, as the primitives answer (vm/prims/prim_double.c). */
X64Cond jit_double_ordered_cond(uint8_t op)
{
    switch (op) {
    case BC_SEND_LT: return JIT_X64_CC_A;
    case BC_SEND_LE: return JIT_X64_CC_AE;
    case BC_SEND_GT: return JIT_X64_CC_B;
    default: VM_ASSERT(op == BC_SEND_GE); return JIT_X64_CC_BE;
    }
}

X64Cond jit_double_compare(Compiler *c, uint8_t op, JitOperandFacts f, X64Label *slow)
{
    X64Buf *b = &c->b;
    doubles_or(c, f, false, slow);
    if (op != BC_SEND_EQ) {
        jit_x64_ucomisd_xx(b, JIT_X64_XMM1, JIT_X64_XMM0);
        return jit_double_ordered_cond(op);
    }
    jit_x64_ucomisd_xx(b, JIT_X64_XMM0, JIT_X64_XMM1);
    jit_x64_jcc_label32(b, JIT_X64_CC_P, slow); /* an unordered = is the primitive's */
    return JIT_X64_CC_E;
}

/* -- Chains ----------------------------------------------------------------------------
 * `2.0 * zr * zi + ci`, `zr2 + zi2 <= 4.0`, `x - (y * z)`: special sends
 * each of which takes the previous one's answer as its receiver (its
 * argument pushed in between by one simple push) or as its argument (its
 * receiver already on the real stack), with nothing else in between. The
 * first one's Double fast path then runs the whole chain in xmm0 and boxes
 * only the last answer (none when the last is a comparison). Every other
 * path is the plain code the main loop compiles for each send; the chain
 * leaves to it at a send's first instruction (its bytecode's label), with
 * the answer so far boxed into rax as the plain code has it there, when an
 * operand is not a Double. A box, when the answer is out of the immediate
 * window, is bumped into eden or made by the runtime (box_answer_cold), a
 * call that may collect but never sees the unboxed value: it is the call's
 * argument, and what the chain consumed is gone. Without the runtime's
 * trampoline (unit tests' runtimes) the chain reserves the box's room in
 * eden before it starts instead. */

/* Bytecodes that push a descriptor and emit nothing (vm/jit/compile.c's
 * emit_bytecode): e, and the next pc. */
static bool simple_push(const Compiler *c, size_t pc, SimEntry *e, size_t *next)
{
    const uint8_t *p = c->code + pc;
    switch (p[0]) {
    case BC_PUSH_SELF: *e = (SimEntry){ SIM_SELF, 0 }; break;
    case BC_PUSH_0: *e = (SimEntry){ SIM_CONST, (int64_t)oop_from_int(0) }; break;
    case BC_PUSH_1: *e = (SimEntry){ SIM_CONST, (int64_t)oop_from_int(1) }; break;
    case BC_PUSH_LITERAL:
    case BC_PUSH_LITERAL_W: {
        unsigned lit = p[0] == BC_PUSH_LITERAL ? p[1] : (unsigned)p[1] | (unsigned)p[2] << 8;
        Oop v = obj_slots(c->method)[METHOD_FIXED_SLOTS + lit];
        *e = oop_is_int(v) ? (SimEntry){ SIM_CONST, (int64_t)v } : (SimEntry){ SIM_LIT, lit };
        break;
    }
    case BC_PUSH_FIELD: *e = (SimEntry){ SIM_FIELD, p[1] }; break;
    case BC_PUSH_ARG: *e = (SimEntry){ SIM_ARG, p[1] }; break;
    case BC_PUSH_TEMP: *e = (SimEntry){ SIM_TEMP, p[1] }; break;
    default: return false;
    }
    *next = pc + vm_bytecode_length[p[0]];
    return true;
}

/* The link op of the bytecode at pc, or 0 when it cannot be one. */
static uint8_t chain_op(const Compiler *c, size_t pc)
{
    uint8_t op = c->code[pc];
    switch (op) {
    case BC_SEND_ADD: case BC_SEND_SUB: case BC_SEND_MUL:
    case BC_SEND_LT: case BC_SEND_GT: case BC_SEND_LE: case BC_SEND_GE: return jit_double_inline(c, op) ? op : 0;
    case BC_SEND:
    case BC_SEND_W:
        switch (jit_double_send_kind(c, pc)) {
        case JIT_DOUBLE_SEND_DIVIDE: return JIT_DOUBLE_OP_DIVIDE;
        case JIT_DOUBLE_SEND_SQRT: return JIT_DOUBLE_OP_SQRT;
        default: return 0;
        }
    default: return 0; /* `=` is left out: its unordered case is the primitive's */
    }
}

/* Answers a Double (the others compare). */
static bool is_arith(uint8_t op)
{
    return op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL || op == JIT_DOUBLE_OP_DIVIDE ||
           op == JIT_DOUBLE_OP_SQRT;
}

static size_t link_next(const Compiler *c, const JitDoubleLink *l)
{
    return l->pc + vm_bytecode_length[c->code[l->pc]];
}

/* Where the code after link l continues: l's next bytecode, which must be
 * no jump target (the main loop would flush rax there first), or for a
 * comparison the conditional jump it fuses with (emit_special's rule). */
static bool chain_can_end(const Compiler *c, const JitDoubleLink *l)
{
    size_t next = link_next(c, l);
    return next < c->len && !c->target[next];
}

int jit_double_chain_scan(const Compiler *c, size_t pc, JitDoubleLink *links, int max)
{
    VM_ASSERT(max >= 1);
    uint8_t op = c->code[pc];
    if (!is_arith(op) || !jit_double_inline(c, op)) return 0;
    links[0] = (JitDoubleLink){ .op = op, .pc = pc };
    int n = 1;
    size_t q = pc + 1;
    while (n < max && is_arith(links[n - 1].op) && q < c->len && !c->target[q]) {
        JitDoubleLink l = { .prev_is_receiver = false };
        size_t at = q;
        if (simple_push(c, q, &l.other, &at)) {
            l.prev_is_receiver = true;
            if (at >= c->len || c->target[at]) break;
        }
        l.op = chain_op(c, at);
        if (!l.op || (l.op == JIT_DOUBLE_OP_SQRT && l.prev_is_receiver)) break; /* that push is sqrt's receiver */
        if (l.op == JIT_DOUBLE_OP_SQRT) l.prev_is_receiver = true;
        l.pc = at;
        links[n++] = l;
        q = link_next(c, &l);
    }
    while (n > 1 && !chain_can_end(c, &links[n - 1])) n--;
    return n;
}

/* x := the value of descriptor e (rcx is scratch), or to slow unless it is
 * a Double (or a SmallInteger when ints_too). A literal Double is read at
 * compile time: literals never change, and a Double's value never does. */
static void other_or(Compiler *c, SimEntry e, X64Xmm x, bool ints_too, X64Label *slow)
{
    X64Buf *b = &c->b;
    if (e.kind == SIM_LIT) {
        Oop v = obj_slots(c->method)[METHOD_FIXED_SLOTS + e.v];
        if (vm_is_double(v)) {
            load_constant(c, x, oop_double(v));
            return;
        }
    }
    if (e.kind == SIM_CONST && oop_is_int((Oop)e.v)) {
        if (!ints_too) {
            jit_x64_jmp_label32(b, slow);
            return;
        }
        jit_x64_mov_ri(b, R11, oop_int((Oop)e.v));
        double_from_int(b, x, R11);
        return;
    }
    int cached = jit_double_cached(c, &e);
    if (!(c->lazy_read_ok && jit_double_lazy_bit(c, cached))) jit_sim_load(c, e, RCX); /* else jit_double_load reads the slot */
    operand_or(c, RCX, cached, x, ints_too, slow);
}

/* Measured from the encodings below, with margin: about 250 bytes to test
 * (immediate, boxed or SmallInteger operands) and start, per later link 140
 * to test and compute and 60 for its bail, and 150 to encode or box the
 * answer. */
size_t jit_double_chain_bound(int n) { return n < 2 ? 0 : 448 + 400 * (size_t)n; }

void jit_double_chain(Compiler *c, const JitDoubleLink *links, int n, int s, JitOperandFacts f, X64Label *fallback)
{
    X64Buf *b = &c->b;
    VM_ASSERT(n >= 2 && is_arith(links[0].op));
    X64Label bails[JIT_DOUBLE_CHAIN_MAX];
    doubles_or(c, f, true, fallback);
    /* the room for the answer's box: reserved up front only without the
     * runtime's boxing (five instructions a chain; the answer is nearly
     * always an immediate) */
    bool reserve = !c->rt->box_double;
    if (reserve) eden_room_or(c, fallback); /* rdi, rdx, r11 are recomputed where the box is made */
    arith_xx(c, links[0].op, JIT_X64_XMM0, JIT_X64_XMM1);
    if (s) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * s)); /* as the plain code drops them */
    X64Cond cc = JIT_X64_CC_E;
    for (int k = 1; k < n; k++) {
        const JitDoubleLink *l = &links[k];
        bails[k] = JIT_X64_LABEL("chain bail");
        bool arith = is_arith(l->op);
        if (l->op == JIT_DOUBLE_OP_SQRT) {
            jit_x64_sqrtsd_xx(b, JIT_X64_XMM0, JIT_X64_XMM0);
        } else if (l->prev_is_receiver) {
            /* a lazy temp may be a `+ - *` link's argument (vm/jit/double_cache.c) */
            c->lazy_read_ok = l->op == BC_SEND_ADD || l->op == BC_SEND_SUB || l->op == BC_SEND_MUL;
            other_or(c, l->other, JIT_X64_XMM1, arith, &bails[k]);
            c->lazy_read_ok = false;
            if (arith) arith_xx(c, l->op, JIT_X64_XMM0, JIT_X64_XMM1);
            else jit_x64_ucomisd_xx(b, JIT_X64_XMM1, JIT_X64_XMM0);
        } else {
            jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
            number_or(c, RCX, JIT_X64_XMM1, false, &bails[k]);
            if (arith) {
                arith_xx(c, l->op, JIT_X64_XMM1, JIT_X64_XMM0);
                jit_x64_movsd_xx(b, JIT_X64_XMM0, JIT_X64_XMM1);
            } else {
                jit_x64_ucomisd_xx(b, JIT_X64_XMM0, JIT_X64_XMM1);
            }
            jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8)); /* lea keeps the flags */
        }
        if (!arith) cc = jit_double_ordered_cond(l->op);
    }
    const JitDoubleLink *last = &links[n - 1];
    size_t next = link_next(c, last);
    int lazy = is_arith(last->op) ? jit_double_lazy_store(c, next) : -1;
    if (lazy >= 0) {
        jit_double_lazy_store_fast(c, lazy, 0, next); /* the operands are dropped already */
    } else if (is_arith(last->op) && !reserve) {
        box_answer_cold(c, last->pc, &c->labels[next]);
    } else if (is_arith(last->op)) {
        immediate_or_cold(c, &c->labels[next]);
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->eden_top);
        jit_x64_mov_rm(b, RDI, jit_x64_mem(R11, 0));
        jit_x64_lea_rm(b, RDX, jit_x64_mem(RDI, 16));
        box_at_rdi(c);
        jit_x64_jmp_label32(b, &c->labels[next]);
        jit_compile_cold_end(c);
    } else {
        long br = jit_compile_fused_branch(c, next);
        if (br >= 0) { /* as emit_special fuses the jump */
            uint8_t br_op = c->code[br];
            if (br_op == BC_JUMP_IF_FALSE) cc = jit_x64_cc_negate(cc);
            jit_compile_jcc_to(c, cc, &c->labels[jit_compile_jump_target(c->code, (size_t)br)], (size_t)br);
            jit_x64_jmp_label32(b, &c->labels[(size_t)br + vm_bytecode_length[br_op]]);
        } else {
            jit_compile_set_boolean(c, cc);
            jit_x64_jmp_label32(b, &c->labels[next]);
        }
    }
    jit_compile_cold_begin(c);
    for (int k = 1; k < n; k++) {
        /* the answer so far boxed, where the plain code of link k expects it */
        jit_x64_label_bind(b, &bails[k]);
        if (!reserve) { /* its push, if any, emitted nothing */
            box_answer_cold(c, links[k].pc, &c->labels[links[k].pc]);
            continue;
        }
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->eden_top);
        jit_x64_mov_rm(b, RDI, jit_x64_mem(R11, 0));
        jit_x64_lea_rm(b, RDX, jit_x64_mem(RDI, 16));
        box_at_rdi(c);
        jit_x64_jmp_label32(b, &c->labels[links[k].pc]); /* its push, if any, emitted nothing */
    }
    jit_compile_cold_end(c);
}
