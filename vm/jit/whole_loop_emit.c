/*
 * vm/jit/whole_loop_emit.c — the machine code of the plans vm/jit/whole_loop.c
 * makes (vm/jit/DESIGN.md, "Whole loops and bodies"): the values in their
 * registers, an if's tests and moves, the commit, and the bail into the
 * plain code.
 */
#include "vm/jit/whole_loop.h"

#include <string.h>

static X64Reg gpr(const JitWholeLoop *L, int id) { return (X64Reg)L->node[id].reg; }
static X64Xmm xmm(const JitWholeLoop *L, int id) { return (X64Xmm)L->node[id].reg; }

static X64Mem field_mem(X64Reg obj, int f) { return jit_x64_mem(obj, (int32_t)(8 + 8 * f)); }

static void emit_darith(X64Buf *b, uint8_t op, X64Xmm dst, X64Xmm src)
{
    switch (op) {
    case BC_SEND_ADD: jit_x64_addsd_xx(b, dst, src); break;
    case BC_SEND_SUB: jit_x64_subsd_xx(b, dst, src); break;
    case BC_SEND_MUL: jit_x64_mulsd_xx(b, dst, src); break;
    default: VM_ASSERT(op == JIT_DOUBLE_OP_DIVIDE); jit_x64_divsd_xx(b, dst, src); break;
    }
}

/* x := the Double in r, immediate (in line) or boxed or a zero (in the cold
 * section), else to bail. When consumes, r is decoded in place (it dies
 * here); else it is kept. Clobbers rdx, r11. */
static void unbox(Compiler *c, X64Reg r, X64Xmm x, bool consumes, X64Label *bail)
{
    X64Buf *b = &c->b;
    X64Label done = JIT_X64_LABEL("unboxed"), other = JIT_X64_LABEL("not an immediate Double"),
             zero = JIT_X64_LABEL("a zero");
    X64Reg w = consumes ? r : R11;
    jit_x64_lea_rm(b, RDX, jit_x64_mem(r, -OOP_FLOAT_TAG));
    jit_x64_test_ri(b, RDX, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &other);
    jit_x64_cmp_ri(b, r, OOP_FLOAT_ZEROS);
    jit_x64_jcc_label32(b, JIT_X64_CC_B, &zero);
    if (w != r) jit_x64_mov_rr(b, w, r);
    jit_x64_ror_ri(b, w, 4); /* gc/object.h: the tag back up, the exponent's bias off */
    jit_x64_sub_rl(b, w, &c->float_bias);
    jit_x64_movq_xr(b, x, w);
    jit_x64_jmp_forward(b, &done);
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &zero); /* the sign is all a zero has */
    jit_x64_mov_rr(b, R11, r);
    jit_x64_shr_ri(b, R11, 3);
    jit_x64_shl_ri(b, R11, 63);
    jit_x64_movq_xr(b, x, R11);
    jit_x64_jmp_label32(b, &done);
    jit_x64_label_bind(b, &other);
    jit_x64_test_ri(b, r, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, bail);
    jit_x64_mov_rm(b, RDX, jit_x64_mem(r, 0));
    jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
    jit_x64_cmp_ri(b, RDX, CLASS_INDEX_DOUBLE);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, bail);
    jit_x64_movsd_xm(b, x, jit_x64_mem(r, 8));
    jit_x64_jmp_label32(b, &done);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &done);
}

/* Compares r with the Oop v (clobbers r11). */
static void cmp_oop(Compiler *c, X64Reg r, Oop v)
{
    if (jit_compile_fits_i32((int64_t)v)) {
        jit_x64_cmp_ri(&c->b, r, (int32_t)v);
    } else {
        jit_x64_mov_ri(&c->b, R11, (int64_t)v);
        jit_x64_cmp_rr(&c->b, r, R11);
    }
}

static bool is_exit(uint8_t kind)
{
    return kind == WN_EXIT || kind == WN_FEXIT || kind == WN_BEXIT || kind == WN_DEXIT;
}

/* Each if's labels: its else arm, its join (set up as the emission begins). */
static X64Label if_label[WL_IFS_MAX][2];

/* The moves at the end of if k's then arm (or else arm) into its selects:
 * in their order, since a select's register may be a value an earlier one
 * moved and freed, but never one a later one moves. */
static void arm_moves(Compiler *c, const JitWholeLoop *L, int k, bool then_arm)
{
    X64Buf *b = &c->b;
    bool then_on_1 = true;
    for (int i = 0; i < L->n; i++)
        if (L->node[i].kind == WN_IF && L->node[i].v == k) then_on_1 = L->node[i].op;
    for (int i = 0; i < L->n; i++) {
        const WNode *n = &L->node[i];
        if (n->kind != WN_SELECT || n->ifk != k) continue;
        bool a_side = then_arm == then_on_1; /* a: the value when the flag is 1 */
        int from = a_side ? n->a : n->b;
        if ((a_side && n->op == 1) || (!a_side && n->op == 2)) {
            jit_x64_mov_ri(b, (X64Reg)n->reg, n->v);
        } else if (n->type == WT_DBL) {
            if (n->reg != L->node[from].reg) jit_x64_movsd_xx(b, (X64Xmm)n->reg, (X64Xmm)L->node[from].reg);
        } else if (n->reg != L->node[from].reg) {
            jit_x64_mov_rr(b, (X64Reg)n->reg, (X64Reg)L->node[from].reg);
        }
    }
}

/* Whether the else arm after node i (its WN_ELSE) emits nothing. */
static bool arm_empty(const JitWholeLoop *L, int i)
{
    for (int k = 0; k < L->n; k++)
        if (L->node[k].kind == WN_SELECT && L->node[k].ifk == (int)L->node[i].v) return false;
    for (int k = i + 1; k < L->n && !(L->node[k].kind == WN_JOIN && L->node[k].v == L->node[i].v); k++) {
        const WNode *n = &L->node[k];
        if (!jit_whole_before_loop(n) && !(n->type != WT_NONE && n->reg < 0)) return false;
    }
    return true;
}

static void if_labels_init(void)
{
    for (int k = 0; k < WL_IFS_MAX; k++) {
        jit_x64_label_init(&if_label[k][0], "whole code's else arm");
        jit_x64_label_init(&if_label[k][1], "whole code's if joined");
    }
}

static void emit_node(Compiler *c, const JitWholeLoop *L, int i, X64Label *bail, X64Label *leave)
{
    X64Buf *b = &c->b;
    const WNode *n = &L->node[i];
    if (n->type != WT_NONE && n->reg < 0 && !n->fused) return; /* a load nothing uses */
    switch ((WKind)n->kind) {
    case WN_IF: { /* only the arm taken runs: a select after the join ignores the other's registers */
        const WNode *f = &L->node[n->a];
        if (f->fused) { /* the compare just before: its condition holds when the flag would be 1 */
            X64Cond cc = f->kind == WN_ICMP ? (X64Cond)f->op : jit_double_ordered_cond(f->op);
            jit_x64_jcc_label32(b, n->op ? jit_x64_cc_negate(cc) : cc, &if_label[n->v][0]);
            break;
        }
        jit_x64_test_rr(b, gpr(L, n->a), gpr(L, n->a));
        jit_x64_jcc_label32(b, n->op ? JIT_X64_CC_Z : JIT_X64_CC_NZ, &if_label[n->v][0]);
        break;
    }
    case WN_ELSE:
        arm_moves(c, L, (int)n->v, true);
        if (!arm_empty(L, i)) jit_x64_jmp_label32(b, &if_label[n->v][1]);
        jit_x64_label_bind(b, &if_label[n->v][0]);
        break;
    case WN_JOIN:
        arm_moves(c, L, (int)n->v, false);
        jit_x64_label_bind(b, &if_label[n->v][1]);
        break;
    case WN_TEMP: jit_x64_mov_rm(b, gpr(L, i), jit_compile_temp_slot((int)n->v)); break;
    /* an inlined callee's receiver and arguments lie on the machine stack
     * where its send would find them (the last argument at rsp: fp word 2) */
    case WN_ARG:
        jit_x64_mov_rm(b, gpr(L, i),
                       L->inlined ? jit_x64_mem(RSP, (int32_t)(8 * (n->v - 2))) : jit_compile_arg_slot((int)n->v));
        break;
    case WN_SELF:
        jit_x64_mov_rm(b, gpr(L, i), L->inlined ? jit_x64_mem(RSP, 8 * L->nargs) : jit_compile_self_slot());
        break;
    case WN_CONST: jit_x64_mov_ri(b, gpr(L, i), n->v); break;
    case WN_DCONST: {
        int64_t bits;
        memcpy(&bits, &n->d, sizeof bits);
        if (bits == 0) {
            jit_x64_xorps_xx(b, xmm(L, i), xmm(L, i));
        } else {
            jit_x64_mov_ri(b, R11, bits);
            jit_x64_movq_xr(b, xmm(L, i), R11);
        }
        break;
    }
    case WN_FIELD: jit_x64_mov_rm(b, gpr(L, i), field_mem(gpr(L, n->a), (int)n->v)); break;
    case WN_UNBOX: unbox(c, gpr(L, n->a), xmm(L, i), n->consumes, bail); break;
    case WN_OUTER: { /* through the closure's outer contexts to a frame that is still live */
        X64Reg d = gpr(L, i);
        jit_x64_mov_rm(b, R11, jit_compile_arg_slot(2 + c->nargs)); /* the closure */
        jit_x64_mov_rm(b, R11, field_mem(R11, BLOCK_OUTER_CONTEXT));
        for (int l = n->op; l > 1; l--) {
            jit_x64_mov_rm(b, R11, field_mem(R11, CTX_CLOSURE));
            jit_x64_mov_rm(b, R11, field_mem(R11, BLOCK_OUTER_CONTEXT));
        }
        jit_x64_mov_rm(b, R11, field_mem(R11, CTX_FRAME));
        jit_x64_test_ri(b, R11, 1); /* a live frame is a tagged pointer (vm/model/frame.h, ctx_frame) */
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, bail);
        Oop outer = jit_whole_outer_method(c, n->op);
        int on = vm_method_nargs(outer), v = (int)n->v;
        int32_t disp = v < on ? 8 * (1 + on - v) : 8 * (FRAME_FIRST_TEMP - (v - on)); /* frame_var */
        jit_x64_mov_rm(b, d, jit_x64_mem(R11, disp - 1));
        break;
    }
    case WN_PHI: { /* its value as the loop begins */
        X64Mem from = n->a < 0 ? jit_compile_temp_slot((int)n->v) : field_mem(gpr(L, n->a), (int)n->v);
        if (n->type == WT_DBL) {
            jit_x64_mov_rm(b, R11, from);
            unbox(c, R11, xmm(L, i), true, bail);
        } else {
            jit_x64_mov_rm(b, gpr(L, i), from);
            if (n->type == WT_INT) {
                jit_x64_test_ri(b, gpr(L, i), 1);
                jit_x64_jcc_label32(b, JIT_X64_CC_Z, bail);
            }
        }
        break;
    }
    case WN_IS_INT:
        jit_x64_test_ri(b, gpr(L, n->a), 1);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, bail);
        break;
    case WN_CLASS:
        jit_x64_test_ri(b, gpr(L, n->a), 7);
        jit_x64_jcc_label32(b, JIT_X64_CC_NZ, bail);
        jit_x64_mov_rm32(b, RDX, jit_x64_mem(gpr(L, n->a), 0));
        jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
        jit_x64_cmp_ri(b, RDX, (int32_t)n->v);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, bail);
        break;
    case WN_DISTINCT:
        jit_x64_cmp_rr(b, gpr(L, n->a), gpr(L, n->b));
        jit_x64_jcc_label32(b, JIT_X64_CC_E, bail);
        break;
    case WN_IARITH: {
        /* computed in its own register (a failed test leaves the registers
         * to the plain code, which reads the frame), unless that is b's */
        X64Reg d = gpr(L, i), t = n->b >= 0 && gpr(L, n->b) == d ? R11 : d;
        if (t != gpr(L, n->a)) jit_x64_mov_rr(b, t, gpr(L, n->a));
        if (n->op == BC_SEND_MUL) { /* (2a+1 - 1) * b + 1, b untagged */
            jit_x64_sub_ri(b, t, 1);
            if (n->b < 0) {
                jit_x64_imul_rri(b, t, t, (int32_t)(n->v >> 1));
            } else {
                jit_x64_mov_rr(b, RDX, gpr(L, n->b));
                jit_x64_sar_ri(b, RDX, 1);
                jit_x64_imul_rr(b, t, RDX);
            }
            jit_x64_jcc_label32(b, JIT_X64_CC_O, bail);
            jit_x64_or_ri(b, t, 1);
        } else if (n->b < 0) { /* (2a+1) ± (2k+1) ∓ 1 */
            if (n->op == BC_SEND_ADD) jit_x64_add_ri(b, t, (int32_t)(n->v - 1));
            else jit_x64_sub_ri(b, t, (int32_t)(n->v - 1));
            jit_x64_jcc_label32(b, JIT_X64_CC_O, bail);
        } else if (n->op == BC_SEND_ADD) { /* (2a+1) + (2b+1) - 1 */
            jit_x64_lea_rm(b, RDX, jit_x64_mem(gpr(L, n->b), -1));
            jit_x64_add_rr(b, t, RDX);
            jit_x64_jcc_label32(b, JIT_X64_CC_O, bail);
        } else { /* (2a+1) - (2b+1) + 1: the difference is even, so or sets the tag */
            jit_x64_sub_rr(b, t, gpr(L, n->b));
            jit_x64_jcc_label32(b, JIT_X64_CC_O, bail);
            jit_x64_or_ri(b, t, 1);
        }
        if (t != d) jit_x64_mov_rr(b, d, t);
        break;
    }
    case WN_IABS: /* tagged: -(2x+1) + 2 is 2(-x)+1 */
        jit_x64_mov_ri(b, R11, 2);
        jit_x64_sub_rr(b, R11, gpr(L, n->a));
        jit_x64_jcc_label32(b, JIT_X64_CC_O, bail);
        if (gpr(L, i) != gpr(L, n->a)) jit_x64_mov_rr(b, gpr(L, i), gpr(L, n->a));
        jit_x64_cmp_ri(b, gpr(L, i), 0);
        jit_x64_cmovcc_rr(b, JIT_X64_CC_L, gpr(L, i), R11);
        break;
    case WN_DARITH: {
        X64Xmm d = xmm(L, i), x = xmm(L, n->a), y = xmm(L, n->b);
        if (d == x) emit_darith(b, n->op, d, y);
        else if (d == y && n->op != BC_SEND_SUB && n->op != JIT_DOUBLE_OP_DIVIDE) emit_darith(b, n->op, d, x);
        else {
            VM_ASSERT(d != y);
            jit_x64_movsd_xx(b, d, x); /* movaps: a whole copy, no dependency on d's old value */
            emit_darith(b, n->op, d, y);
        }
        break;
    }
    case WN_SQRT:
        if (xmm(L, i) != xmm(L, n->a)) jit_x64_movsd_xx(b, xmm(L, i), xmm(L, n->a));
        jit_x64_sqrtsd_xx(b, xmm(L, i), xmm(L, i));
        break;
    case WN_SIZE: {
        jit_compile_array_in_or(c, gpr(L, n->a), gpr(L, i), bail);
        break;
    }
    case WN_AT:
        jit_x64_mov_rr(b, R11, gpr(L, n->b));
        jit_x64_sar_ri(b, R11, 1);
        jit_x64_sub_ri(b, R11, 1);
        jit_x64_cmp_rr(b, R11, gpr(L, n->s));
        jit_x64_jcc_label32(b, JIT_X64_CC_AE, bail); /* unsigned: also an index below 1 */
        jit_x64_mov_rm(b, gpr(L, i), jit_x64_mem_index(gpr(L, n->a), R11, 8, 8));
        break;
    case WN_INDEX:
        jit_x64_mov_rr(b, gpr(L, i), gpr(L, n->b));
        jit_x64_sar_ri(b, gpr(L, i), 1);
        jit_x64_sub_ri(b, gpr(L, i), 1);
        jit_x64_cmp_rr(b, gpr(L, i), gpr(L, n->s));
        jit_x64_jcc_label32(b, JIT_X64_CC_AE, bail); /* unsigned: also an index below 1 */
        break;
    case WN_ICMP: /* tagged SmallIntegers order as their values */
        if (!n->fused) jit_x64_xor_rr(b, gpr(L, i), gpr(L, i));
        if (n->b < 0) jit_x64_cmp_ri(b, gpr(L, n->a), (int32_t)n->v);
        else jit_x64_cmp_rr(b, gpr(L, n->a), gpr(L, n->b));
        if (!n->fused) jit_x64_setcc_r(b, (X64Cond)n->op, gpr(L, i));
        break;
    case WN_DCMP:
        if (!n->fused) jit_x64_xor_rr(b, gpr(L, i), gpr(L, i));
        jit_x64_ucomisd_xx(b, xmm(L, n->b), xmm(L, n->a));
        if (!n->fused) jit_x64_setcc_r(b, jit_double_ordered_cond(n->op), gpr(L, i));
        break;
    case WN_TRUTH: {
        X64Label done = JIT_X64_LABEL("a Boolean");
        jit_x64_xor_rr(b, gpr(L, i), gpr(L, i));
        cmp_oop(c, gpr(L, n->a), c->rt->true_obj);
        jit_x64_setcc_r(b, JIT_X64_CC_E, gpr(L, i));
        jit_x64_jcc_label32(b, JIT_X64_CC_E, &done);
        cmp_oop(c, gpr(L, n->a), c->rt->false_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, bail); /* the plain code sends mustBeBoolean */
        jit_x64_label_bind(b, &done);
        break;
    }
    case WN_DEXIT: {
        X64Cond cc = jit_double_ordered_cond(n->op);
        jit_x64_ucomisd_xx(b, xmm(L, n->b), xmm(L, n->a));
        jit_x64_jcc_label32(b, n->v ? cc : jit_x64_cc_negate(cc), leave);
        break;
    }
    case WN_FEXIT:
        jit_x64_test_rr(b, gpr(L, n->a), gpr(L, n->a));
        jit_x64_jcc_label32(b, n->v ? JIT_X64_CC_NZ : JIT_X64_CC_Z, leave);
        break;
    case WN_BEXIT:
        cmp_oop(c, gpr(L, n->a), n->v ? c->rt->true_obj : c->rt->false_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_E, leave);
        cmp_oop(c, gpr(L, n->a), n->v ? c->rt->false_obj : c->rt->true_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, bail); /* the plain code sends mustBeBoolean */
        break;
    case WN_SELECT:
        if (n->ifk >= 0) break; /* moved into at its arms' ends */
        if (n->type == WT_DBL) {
            X64Label done = JIT_X64_LABEL("selected");
            jit_x64_movsd_xx(b, xmm(L, i), xmm(L, n->b));
            jit_x64_test_rr(b, gpr(L, n->s), gpr(L, n->s));
            jit_x64_jcc_label32(b, JIT_X64_CC_Z, &done);
            jit_x64_movsd_xx(b, xmm(L, i), xmm(L, n->a));
            jit_x64_label_bind(b, &done);
        } else {
            /* an immediate in a scratch register; d may be a's or b's (a carried value's) */
            X64Reg d = gpr(L, i), x = n->op == 1 ? R11 : gpr(L, n->a), y = n->op == 2 ? RDX : gpr(L, n->b);
            if (n->op) jit_x64_mov_ri(b, n->op == 1 ? R11 : RDX, n->v);
            if (d == x) {
                jit_x64_test_rr(b, gpr(L, n->s), gpr(L, n->s));
                jit_x64_cmovcc_rr(b, JIT_X64_CC_Z, d, y);
            } else {
                if (d != y) jit_x64_mov_rr(b, d, y);
                jit_x64_test_rr(b, gpr(L, n->s), gpr(L, n->s));
                jit_x64_cmovcc_rr(b, JIT_X64_CC_NZ, d, x);
            }
        }
        break;
    case WN_EXIT: /* tagged SmallIntegers order as their values */
        if (n->b < 0) jit_x64_cmp_ri(b, gpr(L, n->a), (int32_t)n->v);
        else jit_x64_cmp_rr(b, gpr(L, n->a), gpr(L, n->b));
        jit_x64_jcc_label32(b, (X64Cond)n->op, leave);
        break;
    }
}

/* x := the Double in x encoded as an immediate (gc/object.h), or to bail
 * when it needs a box. Clobbers rdx, r11. */
static void encode(Compiler *c, X64Xmm x, X64Label *bail)
{
    X64Buf *b = &c->b;
    X64Label out = JIT_X64_LABEL("out of the window"), done = JIT_X64_LABEL("encoded");
    jit_double_biased_or(c, x, R11, RDX, &out);
    jit_x64_rol_ri(b, R11, 4);
    jit_x64_movq_xr(b, x, R11);
    jit_x64_jmp_forward(b, &done);
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &out);
    jit_x64_movq_rx(b, R11, x);
    jit_x64_lea_rm(b, RDX, jit_x64_mem_index(R11, R11, 1, 0)); /* all but the sign */
    jit_x64_test_rr(b, RDX, RDX);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, bail);
    jit_x64_shr_ri(b, R11, 63); /* ±0.0: the sign over the tag */
    jit_x64_shl_ri(b, R11, 3);
    jit_x64_or_ri(b, R11, OOP_FLOAT_TAG);
    jit_x64_movq_xr(b, x, R11);
    jit_x64_jmp_label32(b, &done);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &done);
}

static void mark(Compiler *c, size_t pc, size_t *marked)
{
    if (jit_x64_size(&c->b) == *marked) return;
    jit_compile_map_here(c, pc, JIT_MAP_LOCAL);
    *marked = jit_x64_size(&c->b);
}

/* To bail when a collection is wanted (the plain code's back jump takes
 * the safepoint) or, for a loop with inlined accessors, a tracer holds the
 * method probes (the plain code's sends fire them): the interrupt check's
 * one test of both. Clobbers rdx, r11. */
static void back_edge_test(Compiler *c, const JitWholeLoop *L, X64Label *bail)
{
    X64Buf *b = &c->b;
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->collect_wanted);
    if (L->uses_accessors && c->rt->method_probe_semaphores) {
        intptr_t d = (intptr_t)c->rt->method_probe_semaphores - (intptr_t)c->rt->collect_wanted;
        VM_ASSERT(d == (int32_t)d);
        jit_x64_movzx_rm8(b, RDX, jit_x64_mem(R11, 0));
        jit_x64_or_rm(b, RDX, jit_x64_mem(R11, (int32_t)d)); /* both semaphores, and 32 bits of 0 */
    } else {
        jit_x64_cmp_m8i(b, jit_x64_mem(R11, 0), 0);
    }
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, bail);
}

/* The stress mode (--deopt-every): every Nth run of this point leaves to
 * the plain code. Clobbers r11. */
static void stress_test(Compiler *c, X64Label *bail)
{
    X64Buf *b = &c->b;
    if (!c->rt->deopt_countdown) return;
    X64Label stress = JIT_X64_LABEL("stress bail");
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->deopt_countdown);
    jit_x64_dec_m(b, jit_x64_mem(R11, 0));
    jit_x64_jcc_label32(b, JIT_X64_CC_LE, &stress);
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &stress);
    jit_x64_mov_mi32(b, jit_x64_mem(R11, 0), c->rt->deopt_every);
    jit_x64_jmp_label32(b, bail);
    jit_compile_cold_end(c);
}

/* To bail while a tracer holds the method probes: the plain code's inlined
 * accessors and Boolean sends send then, which fires method__entry. */
static void probe_test(Compiler *c, const JitWholeLoop *L, X64Label *bail)
{
    if (!L->uses_accessors || !c->rt->method_probe_semaphores) return;
    jit_x64_mov_ri(&c->b, R11, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
    jit_x64_cmp_mi(&c->b, jit_x64_mem(R11, 0), 0);
    jit_x64_jcc_label32(&c->b, JIT_X64_CC_NE, bail);
}

/* The nodes computed before the loop (before) or in it; a mask (or NULL)
 * picks some of them. */
static void emit_nodes(Compiler *c, const JitWholeLoop *L, bool before, const bool *only, X64Label *bail,
                       X64Label *leave, size_t *marked)
{
    for (int i = 0; i < L->n; i++) {
        if (jit_whole_before_loop(&L->node[i]) != before || (only && !only[i])) continue;
        c->pc = L->node[i].pc;
        emit_node(c, L, i, bail, leave);
        mark(c, c->pc, marked);
    }
}

/* The iteration's (or body's) end: the carried values' registers first
 * (the encodings below overwrite a stored Double's register), then every
 * encoding (which may bail) before the first store. */
static void commit(Compiler *c, const JitWholeLoop *L, X64Label *bail, size_t *marked)
{
    X64Buf *b = &c->b;
    c->pc = L->back;
    for (int i = 0; i < L->n; i++) {
        const WNode *n = &L->node[i];
        if (n->kind != WN_PHI || L->node[n->next].reg == n->reg) continue;
        if (n->type == WT_DBL) jit_x64_movsd_xx(b, xmm(L, i), xmm(L, n->next));
        else jit_x64_mov_rr(b, gpr(L, i), gpr(L, n->next));
    }
    mark(c, c->pc, marked);
    for (int s = 0; s < L->nstores; s++) { /* an object that must remember what it gets: the plain code stores */
        const WStore *st = &L->store[s];
        const WNode *v = &L->node[st->value];
        if (st->obj < 0 || v->type != WT_OOP || v->is_int || v->kind == WN_CONST) continue;
        X64Label ok = JIT_X64_LABEL("no barrier needed");
        c->pc = st->pc;
        jit_compile_barrier_unneeded_in(c, gpr(L, st->obj), gpr(L, st->value), &ok);
        jit_x64_jmp_label32(b, bail);
        jit_x64_label_bind(b, &ok);
        mark(c, c->pc, marked);
    }
    bool encoded[WL_NODES_MAX] = { false };
    for (int s = 0; s < L->nstores; s++) {
        int v = L->store[s].value;
        if (L->node[v].type != WT_DBL || encoded[v]) continue;
        c->pc = L->store[s].pc;
        encode(c, xmm(L, v), bail);
        encoded[v] = true;
        mark(c, c->pc, marked);
    }
    for (int s = 0; s < L->nstores; s++) {
        const WStore *st = &L->store[s];
        if (st->obj == -2) continue; /* a body's answer: pushed by the caller */
        X64Mem m = st->index >= 0  ? jit_x64_mem_index(gpr(L, st->obj), gpr(L, st->index), 8, 8)
                   : st->obj >= 0 ? field_mem(gpr(L, st->obj), st->field)
                                  : jit_compile_temp_slot(st->field);
        const WNode *v = &L->node[st->value];
        if (v->type == WT_DBL) jit_x64_movsd_mx(b, m, xmm(L, st->value));
        else if (jit_whole_stored_immediate(v)) jit_x64_mov_mi32(b, m, (int32_t)v->v);
        else jit_x64_mov_mr(b, m, gpr(L, st->value));
        c->pc = st->pc;
        mark(c, c->pc, marked);
    }
}

void jit_whole_loop_emit(Compiler *c, const JitWholeLoop *L)
{
    X64Buf *b = &c->b;
    X64Label top = JIT_X64_LABEL("whole loop"), bail = JIT_X64_LABEL("again in the plain code"),
             leave = JIT_X64_LABEL("whole loop left");
    size_t saved_pc = c->pc;
    size_t marked = jit_x64_size(b);
    if_labels_init();
    c->pc = L->head;
    if (L->body) {
        /* a body: its values in order, the commit, its answer on the real
         * stack where the plain code's return takes it */
        stress_test(c, &bail);
        probe_test(c, L, &bail);
        emit_nodes(c, L, false, NULL, &bail, &leave, &marked);
        commit(c, L, &bail, &marked);
        c->pc = L->back;
        if (L->answer >= 0) {
            const WNode *a = &L->node[L->answer];
            if (a->type == WT_DBL) {
                jit_x64_movq_rx(b, R11, xmm(L, L->answer)); /* encoded by the commit */
                jit_x64_push_r(b, R11);
            } else {
                jit_x64_push_r(b, gpr(L, L->answer));
            }
        }
        jit_x64_jmp_label32(b, &c->labels[L->back]);
        mark(c, L->back, &marked);
    } else {
        back_edge_test(c, L, &bail); /* a tracer on the probes, a collection wanted */
        /* before the loop: what every iteration would compute alike; what
         * the exit test reads first, and the test, so that a loop that runs
         * no iteration (NBody's last row) leaves before the rest */
        bool exit_first[WL_NODES_MAX] = { false }, rest[WL_NODES_MAX];
        for (int i = L->n - 1; i >= 0; i--) {
            const WNode *n = &L->node[i];
            if (is_exit(n->kind) || exit_first[i])
                for (int k = 0; k < 3; k++) {
                    int o = k == 0 ? n->a : k == 1 ? n->b : n->s;
                    if (o >= 0 && jit_whole_before_loop(&L->node[o])) exit_first[o] = true;
                }
        }
        /* (the guards on those values too: a test reads only tested values) */
        for (int i = 0; i < L->n; i++) {
            const WNode *n = &L->node[i];
            if (jit_whole_before_loop(n) && n->type == WT_NONE && n->a >= 0 && exit_first[n->a] && (n->b < 0 || exit_first[n->b]))
                exit_first[i] = true;
            rest[i] = !exit_first[i];
        }
        emit_nodes(c, L, true, exit_first, &bail, &leave, &marked);
        for (int i = 0; i < L->n; i++)
            if (is_exit(L->node[i].kind) && jit_whole_before_loop(&L->node[L->node[i].a]) &&
                (L->node[i].b < 0 || jit_whole_before_loop(&L->node[L->node[i].b]))) {
                c->pc = L->node[i].pc;
                emit_node(c, L, i, &bail, &leave);
                mark(c, c->pc, &marked);
            }
        emit_nodes(c, L, true, rest, &bail, &leave, &marked);
        size_t mis = jit_x64_size(b) % 16;
        if (mis) jit_x64_nop(b, 16 - mis);
        jit_x64_label_bind(b, &top);
        marked = jit_x64_size(b);
        c->pc = L->head;
        stress_test(c, &bail); /* every Nth iteration runs in the plain code */
        emit_nodes(c, L, false, NULL, &bail, &leave, &marked);
        commit(c, L, &bail, &marked);
        /* a safepoint is the plain code's: the state here is the head's */
        c->pc = L->back;
        back_edge_test(c, L, &bail);
        jit_x64_jmp_label32(b, &top);
        mark(c, L->back, &marked);
        jit_x64_label_bind(b, &leave);
        /* r8 is the plain code's region register: no lazy temp to write back */
        if (c->region_of[L->head]) jit_x64_xor_rr(b, JIT_GUARD_REG, JIT_GUARD_REG);
        jit_x64_jmp_label32(b, &c->labels[L->exit]);
        mark(c, L->back, &marked);
    }
    jit_x64_label_bind(b, &bail);
    if (c->rt->whole_loop_counts) { /* --code-zone-stats: the runs redone in the plain code */
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)&c->rt->whole_loop_counts[1]);
        jit_x64_inc_m(b, jit_x64_mem(R11, 0));
        c->rt->whole_loop_counts[0]++;
    }
    c->pc = saved_pc;
}

void jit_whole_inline_emit(Compiler *c, const JitWholeLoop *L, X64Label *done)
{
    X64Buf *b = &c->b;
    X64Label bail = JIT_X64_LABEL("again in the inlined body's templates (emitted next)"),
             leave = JIT_X64_LABEL("(no exit)");
    size_t saved_pc = c->pc;
    size_t marked = jit_x64_size(b);
    VM_ASSERT(L->inlined);
    if_labels_init();
    c->pc = 0;
    stress_test(c, &bail); /* (the inline guard has tested the probes) */
    emit_nodes(c, L, false, NULL, &bail, &leave, &marked);
    commit(c, L, &bail, &marked);
    c->pc = L->back;
    if (L->answer < 0) jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8 * L->nargs)); /* ^self */
    else if (L->node[L->answer].type == WT_DBL) jit_x64_movq_rx(b, RAX, xmm(L, L->answer)); /* encoded by the commit */
    else if (jit_whole_stored_immediate(&L->node[L->answer]) && L->node[L->answer].reg < 0) jit_x64_mov_ri(b, RAX, L->node[L->answer].v);
    else jit_x64_mov_rr(b, RAX, gpr(L, L->answer));
    jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * (L->nargs + 1))); /* the receiver and arguments */
    jit_x64_jmp_label32(b, done);
    mark(c, L->back, &marked);
    jit_x64_label_bind(b, &leave);
    jit_x64_label_bind(b, &bail);
    if (c->rt->whole_loop_counts) {
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)&c->rt->whole_loop_counts[1]);
        jit_x64_inc_m(b, jit_x64_mem(R11, 0));
        c->rt->whole_loop_counts[0]++;
    } else {
        jit_x64_nop(b, 1); /* (the templates' first map entry is not the return's mcpc) */
    }
    c->pc = saved_pc;
}
