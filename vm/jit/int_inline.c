/*
 * vm/jit/int_inline.c — the SmallInteger fast paths of special sends
 * (arithmetic, comparisons' operand test, bit operations, shifts, division)
 * and isNil/notNil, inline; the Double ones are in vm/jit/double_inline.c.
 * Their answers are the primitives' (vm/interp/smallint.h), tested against
 * those functions in tests/unit/jit/test_compile.c. Declared in
 * vm/jit/compile_int.h; called by vm/jit/compile.c's emit_special.
 */
#include "vm/jit/compile_int.h"

#include "vm/jit/compile.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/model/vm.h"

/* Whether special send op may take its SmallInteger fast path: Integer's
 * method for it is the VM's primitive (vm/interp/special.h). */
bool jit_int_inline(const Compiler *c, uint8_t op)
{
    return c->rt->int_prims && ((*c->rt->int_prims >> (op - BC_SEND_ADD)) & 1);
}

/* To `slow` unless receiver (rax) and argument (rcx) are both SmallIntegers;
 * arg_int: the argument is one (a constant), only the receiver is tested. */
void jit_int_both_or(Compiler *c, bool arg_int, X64Label *slow)
{
    X64Buf *b = &c->b;
    if (arg_int) {
        jit_x64_test_ri(b, RAX, 1);
    } else {
        jit_x64_mov_rr(b, RDX, RAX);
        jit_x64_and_rr(b, RDX, RCX);
        jit_x64_test_ri(b, RDX, 1);
    }
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, slow);
}

/* rdx := the tagged product of receiver (rax) and argument (rcx), to `slow`
 * on overflow; rax and rcx are kept (the slow path pushes them). */
static void arith_mul(Compiler *c, X64Label *slow)
{
    X64Buf *b = &c->b;
    /* a * 2b, then tag */
    jit_x64_mov_rr(b, RDX, RAX);
    jit_x64_sar_ri(b, RDX, 1);
    jit_x64_lea_rm(b, R11, jit_x64_mem(RCX, -1));
    jit_x64_imul_rr(b, RDX, R11);
    jit_x64_jcc_label32(b, JIT_X64_CC_O, slow);
    jit_x64_or_ri(b, RDX, 1);
}

/* rax := receiver (rax) op argument (rcx) as SmallIntegers, then to done;
 * to not_ints unless both are SmallIntegers, to overflow when the answer
 * is not one (rax, rcx intact on both ways). + and - compute in rax itself
 * (two instructions fewer than in a copy, for benchFib's three and every
 * loop counter): on overflow code after the fast path takes the wrapped answer
 * back, as two's complement addition can be undone exactly. */
void jit_int_arith(Compiler *c, uint8_t op, bool arg_int, int64_t arg_const, X64Label *not_ints,
                   X64Label *overflow, X64Label *done)
{
    X64Buf *b = &c->b;
    jit_int_both_or(c, arg_int, not_ints);
    if (op == BC_SEND_MUL) {
        arith_mul(c, overflow);
        jit_x64_mov_rr(b, RAX, RDX);
        jit_x64_jmp_forward(b, done);
        return;
    }
    X64Label undo = JIT_X64_LABEL("overflow undone");
    int64_t twice = arg_const - 1; /* 2b: the tagged constant less its tag */
    bool add = op == BC_SEND_ADD;
    if (arg_int && jit_compile_fits_i32(twice)) {
        /* (2a+1) + 2b, (2a+1) - 2b: overflows exactly when the generic form would */
        if (add) jit_x64_add_ri(b, RAX, (int32_t)twice);
        else jit_x64_sub_ri(b, RAX, (int32_t)twice);
        jit_x64_jcc_label32(b, JIT_X64_CC_O, &undo);
        jit_x64_jmp_forward(b, done);
        jit_compile_cold_begin(c);
        jit_x64_label_bind(b, &undo);
        if (add) jit_x64_sub_ri(b, RAX, (int32_t)twice);
        else jit_x64_add_ri(b, RAX, (int32_t)twice);
    } else if (add) { /* (2a+1) - 1 + (2b+1): the - 1 cannot overflow */
        jit_x64_sub_ri(b, RAX, 1);
        jit_x64_add_rr(b, RAX, RCX);
        jit_x64_jcc_label32(b, JIT_X64_CC_O, &undo);
        jit_x64_jmp_forward(b, done);
        jit_compile_cold_begin(c);
        jit_x64_label_bind(b, &undo);
        jit_x64_sub_rr(b, RAX, RCX);
        jit_x64_add_ri(b, RAX, 1);
    } else { /* (2a+1) - (2b+1) is even and fits, so + 1 cannot overflow */
        jit_x64_sub_rr(b, RAX, RCX);
        jit_x64_jcc_label32(b, JIT_X64_CC_O, &undo);
        jit_x64_add_ri(b, RAX, 1);
        jit_x64_jmp_forward(b, done);
        jit_compile_cold_begin(c);
        jit_x64_label_bind(b, &undo);
        jit_x64_add_rr(b, RAX, RCX);
    }
    jit_x64_jmp_label32(b, overflow);
    jit_compile_cold_end(c);
}

/* rax := x (untagged receiver), r11 := y (untagged argument), to slow when
 * y is 0; then rax := x / y truncated, rdx := x rem: y (idiv). */
static void int_divide(Compiler *c, X64Label *slow)
{
    X64Buf *b = &c->b;
    jit_x64_mov_rr(b, R11, RCX);
    jit_x64_sar_ri(b, R11, 1);
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, slow); /* sar sets ZF from its result */
    jit_x64_sar_ri(b, RAX, 1);
    jit_x64_cqo(b);
    jit_x64_idiv_r(b, R11); /* |x| < 2^62: never the idiv overflow of INT64_MIN / -1 */
}

/* The SmallInteger cases of the Integer primitives vm/interp/smallint.h holds (the
 * same answers, tested against those functions in tests/unit/jit), to slow
 * for everything else; isNil/notNil on nil and SmallIntegers when their
 * classes' methods answer a constant. Answers false for other bytecodes. */
bool jit_int_fast_path(Compiler *c, uint8_t op, X64Label *slow, X64Label *done)
{
    X64Buf *b = &c->b;
    if (op == BC_SEND_IS_NIL || op == BC_SEND_NOT_NIL) {
        int k = op == BC_SEND_NOT_NIL;
        Oop on_nil = c->rt->nil_answers ? c->rt->nil_answers[k] : 0;
        Oop on_int = c->rt->int_answers ? c->rt->int_answers[k] : 0;
        if (!on_nil && !on_int && !c->rt->nil_table) return false;
        X64Label pointer = JIT_X64_LABEL("pointer receiver");
        if (on_nil) {
            X64Label not_nil = JIT_X64_LABEL("not nil");
            jit_compile_cmp_rax_oop(c, c->rt->nil);
            jit_x64_jcc_label32(b, JIT_X64_CC_NE, &not_nil);
            jit_x64_mov_ri(b, RAX, (int64_t)on_nil);
            jit_x64_jmp_forward(b, done);
            jit_x64_label_bind(b, &not_nil);
        }
        jit_x64_test_ri(b, RAX, 1);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, &pointer);
        if (on_int) {
            jit_x64_mov_ri(b, RAX, (int64_t)on_int);
            jit_x64_jmp_forward(b, done);
        } else {
            jit_x64_jmp_label32(b, slow);
        }
        jit_x64_label_bind(b, &pointer);
        if (c->rt->nil_table) { /* the class's entry, when its method answers a constant */
            jit_x64_test_ri(b, RAX, 7);
            jit_x64_jcc_label32(b, JIT_X64_CC_NZ, slow); /* another immediate */
            jit_x64_mov_rm(b, RDX, jit_x64_mem(RAX, 0));
            jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
            jit_x64_cmp_ri(b, RDX, (int32_t)c->rt->nil_table_classes);
            jit_x64_jcc_label32(b, JIT_X64_CC_AE, slow);
            jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->nil_table);
            jit_x64_movzx_rm8(b, RDX, jit_x64_mem_index(R11, RDX, 1, 0));
            jit_x64_test_ri(b, RDX, (int32_t)(1u << (2 * k))); /* VM_SPECIAL_NIL_KNOWN(k) */
            jit_x64_jcc_label32(b, JIT_X64_CC_Z, slow);         /* the send fills it, or computes */
            jit_x64_mov_ri(b, RAX, (int64_t)c->rt->false_obj);
            jit_x64_mov_ri(b, RCX, (int64_t)c->rt->true_obj);
            jit_x64_test_ri(b, RDX, (int32_t)(2u << (2 * k))); /* VM_SPECIAL_NIL_TRUE(k) */
            jit_x64_cmovcc_rr(b, JIT_X64_CC_NZ, RAX, RCX);
            jit_x64_jmp_forward(b, done);
        } else {
            jit_x64_jmp_label32(b, slow);
        }
        return true;
    }
    if (!(op >= BC_SEND_BIT_AND && op <= BC_SEND_NEGATED) || op == BC_SEND_NOT_EQUAL || !jit_int_inline(c, op))
        return false;
    if (op == BC_SEND_ABS || op == BC_SEND_NEGATED) {
        jit_x64_test_ri(b, RAX, 1);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, slow);
        if (op == BC_SEND_ABS) {
            jit_x64_test_rr(b, RAX, RAX);
            jit_x64_jcc_label32(b, JIT_X64_CC_NS, done); /* the receiver is the answer */
        }
        jit_x64_mov_ri(b, RDX, 2); /* 2 - (2x + 1) = 2(-x) + 1 */
        jit_x64_sub_rr(b, RDX, RAX);
        jit_x64_jcc_label32(b, JIT_X64_CC_O, slow); /* -x of the minimum SmallInteger is large */
        jit_x64_mov_rr(b, RAX, RDX);
        jit_x64_jmp_forward(b, done);
        return true;
    }
    jit_int_both_or(c, false, slow);
    switch (op) {
    case BC_SEND_BIT_AND: jit_x64_and_rr(b, RAX, RCX); break; /* tag bits: 1 & 1 */
    case BC_SEND_BIT_XOR:
        jit_x64_xor_rr(b, RAX, RCX);
        jit_x64_or_ri(b, RAX, 1);
        break;
    case BC_SEND_MAX: /* self < arg ifTrue: [arg] ifFalse: [self]; tagging keeps the order */
        jit_x64_cmp_rr(b, RAX, RCX);
        jit_x64_cmovcc_rr(b, JIT_X64_CC_L, RAX, RCX);
        break;
    case BC_SEND_MIN: /* self > arg ifTrue: [arg] ifFalse: [self] */
        jit_x64_cmp_rr(b, RAX, RCX);
        jit_x64_cmovcc_rr(b, JIT_X64_CC_G, RAX, RCX);
        break;
    case BC_SEND_SHIFT_LEFT:
        jit_x64_sar_ri(b, RCX, 1); /* y */
        jit_x64_cmp_ri(b, RCX, 62);
        jit_x64_jcc_label32(b, JIT_X64_CC_A, slow); /* unsigned: a negative y too */
        jit_x64_sub_ri(b, RAX, 1);                 /* 2x */
        jit_x64_mov_rr(b, RDX, RAX);
        jit_x64_shl_rcl(b, RDX);                   /* 2x << y */
        jit_x64_mov_rr(b, R11, RDX);
        jit_x64_sar_rcl(b, R11);
        jit_x64_cmp_rr(b, R11, RAX);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, slow); /* bits lost: a large integer */
        jit_x64_or_ri(b, RDX, 1);
        jit_x64_mov_rr(b, RAX, RDX);
        break;
    case BC_SEND_SHIFT_RIGHT: {
        X64Label shift = JIT_X64_LABEL("shift"), same = JIT_X64_LABEL(">>> 0"), shift_done = JIT_X64_LABEL(">>> done");
        jit_x64_sar_ri(b, RCX, 1); /* y */
        jit_x64_jcc_label32(b, JIT_X64_CC_S, slow); /* a negative shift: the primitive's error */
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, &same);
        jit_x64_test_rr(b, RAX, RAX);
        jit_x64_jcc_label32(b, JIT_X64_CC_S, slow); /* a negative receiver is read as 64 bits */
        jit_x64_cmp_ri(b, RCX, 63);
        jit_x64_jcc_label32(b, JIT_X64_CC_LE, &shift);
        jit_x64_mov_ri(b, RCX, 63); /* every bit of x >= 0 is gone */
        jit_x64_label_bind(b, &shift);
        jit_x64_sar_ri(b, RAX, 1);
        jit_x64_sar_rcl(b, RAX);
        jit_x64_lea_rm(b, RAX, jit_x64_mem_index(RAX, RAX, 1, 1));
        jit_x64_jmp_label32(b, &shift_done);
        jit_x64_label_bind(b, &same); /* >>> 0 answers the receiver, still in rax */
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8));
        jit_x64_label_bind(b, &shift_done);
        break;
    }
    case BC_SEND_DIV:
        int_divide(c, slow);
        jit_x64_add_rr(b, RAX, RAX);
        jit_x64_jcc_label32(b, JIT_X64_CC_O, slow); /* minimum / -1 is large */
        jit_x64_or_ri(b, RAX, 1);
        break;
    case BC_SEND_MOD: {
        X64Label tag = JIT_X64_LABEL("tag remainder");
        int_divide(c, slow);
        jit_x64_test_rr(b, RDX, RDX);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, &tag);
        jit_x64_mov_rr(b, RAX, RDX);
        jit_x64_xor_rr(b, RAX, R11);
        jit_x64_jcc_label32(b, JIT_X64_CC_NS, &tag); /* same signs: floored = truncated */
        jit_x64_add_rr(b, RDX, R11);
        jit_x64_label_bind(b, &tag);
        jit_x64_lea_rm(b, RAX, jit_x64_mem_index(RDX, RDX, 1, 1));
        break;
    }
    default: /* REM */
        int_divide(c, slow);
        jit_x64_lea_rm(b, RAX, jit_x64_mem_index(RDX, RDX, 1, 1));
        break;
    }
    jit_x64_jmp_forward(b, done);
    return true;
}
