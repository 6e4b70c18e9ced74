/*
 * tests/unit/jit/test_enter.c — the enilopmarts, ceReturnToInterpreter and
 * runtime-call trampolines, driving small machine-code "methods" written by
 * hand with the encoder into the code zone. Each method keeps vm/model/frame.h's
 * layout: prologue push rbp; mov rbp, rsp; push method, context, flags,
 * self; epilogue mov rsp, rbp; pop rbp; ret.
 *
 * The interpreter side is faked on a 64 KiB stack page: an interpreter frame
 * pointer near the top, then the receiver and one argument, as the
 * interpreter's send leaves them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "vm/jit/enter.h"
#include "vm/jit/x64.h"
#include "vm/jit/x64_regs.h"
#include "vm/model/frame.h"

#define ZONE_BYTES ((size_t)64 << 10)
#define TRAMP_BYTES ((size_t)4 << 10)
#define METHOD_MAX_CODE 512
#define PAGE_WORDS (VM_STACK_PAGE_BYTES / sizeof(Oop))

#define TEST_NIL oop_from_int(-7) /* the context slot's "nil": no heap here */

static JitZone zone;
static JitEnter jit;
static Oop *page;       /* [page, page + PAGE_WORDS) */
static Oop *interp_fp;  /* the fake interpreter frame */
static Oop *interp_sp;  /* top of receiver and argument */
static const Oop receiver = 0x10000; /* an aligned "object" address */

static int setup(void **state)
{
    (void)state;
    char err[256];
    JitZoneConfig cfg = { .zone_bytes = ZONE_BYTES, .trampoline_bytes = TRAMP_BYTES };
    assert_true(jit_zone_init(&zone, &cfg, err, sizeof err));
    assert_true(jit_enter_init(&jit, &zone, err, sizeof err));
    void *p = mmap(NULL, VM_STACK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    page = p;
    interp_fp = page + PAGE_WORDS - 8;
    interp_sp = interp_fp - 6; /* receiver at interp_sp[1], argument at interp_sp[0] */
    interp_sp[1] = receiver;
    interp_sp[0] = oop_from_int(5);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    munmap(page, VM_STACK_PAGE_BYTES);
    jit_zone_release(&zone);
    return 0;
}

static JitRegs interp_regs(void) { return (JitRegs){ .sp = interp_sp, .fp = interp_fp, .result = 0 }; }
static bool on_page(const void *p) { return (const Oop *)p >= page && (const Oop *)p < page + PAGE_WORDS; }
/* Where the method's frame goes when entered from interp_regs(). */
static Oop *method_fp(void) { return interp_sp - 2; }

/* -- Hand-written methods ------------------------------------------------------------ */

typedef struct Method {
    JitMethod *m;
    X64Buf b;
} Method;

/* Allocates a method piece and emits the prologue of a 1-argument method. */
static void method_begin(Method *mt, intptr_t id)
{
    mt->m = jit_zone_alloc(&zone, JIT_KIND_METHOD, JIT_METHOD_CODE + METHOD_MAX_CODE);
    assert_non_null(mt->m);
    mt->m->method = oop_from_int(id);
    X64Buf *b = &mt->b;
    jit_x64_buf_init(b, jit_method_code(mt->m), METHOD_MAX_CODE);
    jit_x64_push_r(b, RBP);
    jit_x64_mov_rr(b, RBP, RSP);
    jit_x64_mov_ri64(b, RAX, (uint64_t)(uintptr_t)mt->m);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RAX, offsetof(JitMethod, method)));
    jit_x64_push_r(b, RAX);                                             /* fp[-1] method */
    jit_x64_push_i32(b, (int32_t)TEST_NIL);                             /* fp[-2] context */
    jit_x64_push_i32(b, (int32_t)oop_from_int(FRAME_FLAGS_MAKE(1, 0, false))); /* fp[-3] flags */
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RBP, 8 * (2 + 1)));
    jit_x64_push_r(b, RAX); /* fp[-4] self */
}

static uint8_t *method_end(Method *mt)
{
    X64Buf *b = &mt->b;
    jit_x64_mov_rr(b, RSP, RBP);
    jit_x64_pop_r(b, RBP);
    jit_x64_ret(b);
    const char *why = NULL;
    assert_true(jit_x64_finish(b, &why));
    JitMethodLayout l;
    assert_true(jit_method_layout(&l, jit_x64_size(b), 0, 0, 0));
    jit_method_apply_layout(mt->m, &l);
    jit_zone_shrink(&zone, mt->m, l.size);
    return jit_method_code(mt->m);
}

/* Junk in every C callee-saved register the method does not need. */
static void emit_clobber_callee_saved(X64Buf *b)
{
    static const X64Reg regs[] = { JIT_X64_RBX, JIT_X64_R12, JIT_X64_R13, JIT_X64_R14, JIT_X64_R15 };
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        jit_x64_mov_ri64(b, regs[i], 0x5a5a5a5a00000000u + i);
}

static void frame_header_is_layout(Oop *fp, JitMethod *m)
{
    assert_ptr_equal((void *)fp[FRAME_SAVED_IP], jit.return_to_interpreter);
    assert_ptr_equal((Oop *)fp[FRAME_SAVED_FP], interp_fp);
    assert_int_equal(fp[FRAME_METHOD], m->method);
    assert_int_equal(fp[FRAME_CONTEXT], TEST_NIL);
    assert_int_equal(frame_nargs(fp), 1);
    assert_int_equal(fp[FRAME_RECEIVER], receiver);
}

/* -- Runtime routines ----------------------------------------------------------------- */

static struct {
    bool local_on_page, aligned, args_ok;
    Oop *st_fp, *st_sp;
    JitRegs *regs;
} seen;

static Oop rt_increment(Oop *fp, Oop arg, Oop three)
{
    int local = 0;
    seen.local_on_page = on_page(&local);
    seen.aligned = ((uintptr_t)__builtin_frame_address(0) & 15) == 0; /* push rbp after a 16-aligned call */
    seen.args_ok = oop_int(three) == 3;
    seen.st_fp = jit_cstate.st_fp;
    seen.st_sp = jit_cstate.st_sp;
    seen.regs = jit_cstate.regs;
    seen.args_ok = seen.args_ok && fp == jit_cstate.st_fp; /* rdi carried the method's fp */
    return oop_from_int(oop_int(arg) + 1);
}

static Oop rt_exit_interpret(void)
{
    seen.st_fp = jit_cstate.st_fp;
    jit_enter_request_exit(JIT_STATUS_INTERPRET);
    return 0;
}

static Oop rt_exit_resume(void)
{
    jit_enter_request_exit(JIT_STATUS_RESUME);
    return 0;
}

/* A method answering rt(fp, arg, 3), or with no args, rt() + 1. */
static uint8_t *method_calling(intptr_t id, const uint8_t *tramp, int nargs, Method *mt)
{
    method_begin(mt, id);
    X64Buf *b = &mt->b;
    emit_clobber_callee_saved(b);
    if (nargs == 3) {
        jit_x64_mov_rr(b, RDI, RBP);
        jit_x64_mov_rm(b, RSI, jit_x64_mem(RBP, 8 * 2)); /* the argument */
        jit_x64_mov_ri(b, RDX, (int64_t)oop_from_int(3));
    }
    jit_x64_call_rel32(b, tramp);
    if (nargs == 0) jit_x64_add_ri(b, RAX, 2); /* SmallInteger + 1 */
    return method_end(mt);
}

/* -- Tests ------------------------------------------------------------------------------ */

/* -- Dispatch and answer trampolines ---------------------------------------------------- */

static uint8_t *dispatch_target;  /* what rt_dispatch answers */
static uint64_t answer_slot;      /* the answer trampoline's value */

static uint64_t rt_dispatch(Oop *fp, Oop arg, Oop three)
{
    (void)arg;
    seen.args_ok = fp == jit_cstate.st_fp && oop_int(three) == 3;
    return (uint64_t)(uintptr_t)dispatch_target;
}

static uint64_t rt_dispatch_exit(void)
{
    jit_enter_request_exit(JIT_STATUS_INTERPRET);
    return 0;
}

/* A one-argument method answering a constant. */
static uint8_t *method_answering(intptr_t id, Oop value, Method *mt)
{
    method_begin(mt, id);
    jit_x64_mov_ri64(&mt->b, RAX, value);
    return method_end(mt);
}

static void dispatch_jumps_into_the_callee_which_returns_to_the_caller(void **state)
{
    (void)state;
    Method callee, caller;
    dispatch_target = method_answering(20, oop_from_int(42), &callee);
    uint8_t *tramp = jit_enter_dispatch_trampoline(&zone, (const void *)rt_dispatch, 3);
    assert_non_null(tramp);
    uint8_t *entry = method_calling(21, tramp, 3, &caller);
    memset(&seen, 0, sizeof seen);
    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_RETURNED);
    assert_int_equal(regs.result, oop_from_int(42)); /* the callee's answer reached the caller */
    assert_true(seen.args_ok);
    assert_ptr_equal(regs.sp, interp_sp);
    assert_ptr_equal(regs.fp, interp_fp);
}

static void answer_trampoline_returns_the_slot_to_the_caller(void **state)
{
    (void)state;
    Method caller;
    dispatch_target = jit_enter_answer_trampoline(&zone, &answer_slot);
    assert_non_null(dispatch_target);
    answer_slot = oop_from_int(-7);
    uint8_t *tramp = jit_enter_dispatch_trampoline(&zone, (const void *)rt_dispatch, 3);
    uint8_t *entry = method_calling(22, tramp, 3, &caller);
    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_RETURNED);
    assert_int_equal(regs.result, oop_from_int(-7));
    assert_ptr_equal(regs.fp, interp_fp);
}

static void dispatch_can_still_exit_to_the_interpreter(void **state)
{
    (void)state;
    Method caller;
    uint8_t *tramp = jit_enter_dispatch_trampoline(&zone, (const void *)rt_dispatch_exit, 0);
    uint8_t *entry = method_calling(23, tramp, 0, &caller);
    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_INTERPRET);
    assert_ptr_equal(regs.fp, method_fp());
    assert_true(jit_method_contains(caller.m, (void *)*regs.sp)); /* the return address into it */
}

static void constant_method_returns_to_the_interpreter(void **state)
{
    (void)state;
    Method mt;
    method_begin(&mt, 1);
    jit_x64_mov_ri(&mt.b, RAX, (int64_t)oop_from_int(42));
    uint8_t *entry = method_end(&mt);

    JitRegs regs = interp_regs();
    for (int i = 0; i < 3; i++) { /* the C stack does not creep */
        regs = interp_regs();
        assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_RETURNED);
    }
    assert_int_equal(regs.result, oop_from_int(42));
    assert_ptr_equal(regs.sp, interp_sp); /* receiver and argument are the interpreter's to pop */
    assert_ptr_equal(regs.fp, interp_fp);
    assert_int_equal(interp_sp[1], receiver);
    assert_int_equal(interp_sp[0], oop_from_int(5));
    frame_header_is_layout(method_fp(), mt.m); /* the popped frame's bytes remain */
}

static void method_reads_its_argument_through_fp(void **state)
{
    (void)state;
    Method mt;
    method_begin(&mt, 2);
    jit_x64_mov_rm(&mt.b, RAX, jit_x64_mem(RBP, 8 * 2)); /* fp[2]: the only argument */
    jit_x64_add_rm(&mt.b, RAX, jit_x64_mem(RBP, 8 * FRAME_FLAGS)); /* + flags, both tagged */
    jit_x64_sub_ri(&mt.b, RAX, 1);
    uint8_t *entry = method_end(&mt);
    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_RETURNED);
    assert_int_equal(oop_int(regs.result), 5 + FRAME_FLAGS_MAKE(1, 0, false));
}

static void runtime_call_runs_on_the_c_stack_and_returns_to_machine_code(void **state)
{
    (void)state;
    uint8_t *tramp = jit_enter_runtime_trampoline(&zone, (const void *)rt_increment, 3);
    assert_non_null(tramp);
    Method mt;
    uint8_t *entry = method_calling(3, tramp, 3, &mt);
    memset(&seen, 0, sizeof seen);
    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_RETURNED);
    assert_int_equal(regs.result, oop_from_int(6));
    assert_ptr_equal(regs.sp, interp_sp);
    assert_ptr_equal(regs.fp, interp_fp);
    assert_false(seen.local_on_page);
    assert_true(seen.aligned);
    assert_true(seen.args_ok);
    assert_ptr_equal(seen.st_fp, method_fp());
    assert_ptr_equal(seen.st_sp, method_fp() + FRAME_RECEIVER - 1); /* the call's return address */
    assert_true(jit_method_contains(mt.m, (void *)*seen.st_sp));
    assert_ptr_equal(seen.regs, &regs);
    frame_header_is_layout(method_fp(), mt.m);
}

static void exit_request_leaves_to_the_interpreter_and_return_to_resumes(void **state)
{
    (void)state;
    uint8_t *tramp = jit_enter_runtime_trampoline(&zone, (const void *)rt_exit_interpret, 0);
    assert_non_null(tramp);
    Method mt;
    uint8_t *entry = method_calling(4, tramp, 0, &mt);

    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_INTERPRET);
    assert_int_equal(jit_cstate.exit_status, JIT_STATUS_NONE);
    assert_ptr_equal(regs.fp, method_fp());
    assert_ptr_equal(seen.st_fp, method_fp());
    assert_ptr_equal(regs.sp, method_fp() + FRAME_RECEIVER - 1);
    uint8_t *ret = (uint8_t *)*regs.sp;
    assert_true(jit_method_contains(mt.m, ret));
    frame_header_is_layout(method_fp(), mt.m);

    /* The interpreter pops the return address, runs a method with it as
     * fp[1] and, when that returns 10, returns into machine code. */
    regs.sp++;
    regs.result = oop_from_int(10);
    assert_int_equal(jit.return_to(&regs, ret), JIT_STATUS_RETURNED);
    assert_int_equal(regs.result, oop_from_int(11));
    assert_ptr_equal(regs.sp, interp_sp);
    assert_ptr_equal(regs.fp, interp_fp);
}

static void resume_request_answers_resume(void **state)
{
    (void)state;
    uint8_t *tramp = jit_enter_runtime_trampoline(&zone, (const void *)rt_exit_resume, 0);
    Method mt;
    uint8_t *entry = method_calling(5, tramp, 0, &mt);
    JitRegs regs = interp_regs();
    assert_int_equal(jit.enter(&regs, entry), JIT_STATUS_RESUME);
    assert_ptr_equal(regs.fp, method_fp());
    assert_ptr_equal(regs.sp, method_fp() + FRAME_RECEIVER - 1);
}

/* Eight values live across each switch: at -O2 they sit in rbx, r12–r15
 * (and the C stack), which every method here overwrites. Answers a checksum
 * of the statuses and the values. */
__attribute__((noinline)) static uint64_t live_across(const volatile uint64_t *seed, uint8_t *e_exit, uint8_t *e_inc)
{
    uint64_t a = seed[0], b = seed[1] * 3, c = seed[2] ^ a, d = seed[3] + b, e = seed[4] * c, f = seed[5] - d,
             g = seed[6] | e, h = seed[7] ^ f;
    JitRegs regs = interp_regs();
    uint64_t s = (uint64_t)jit.enter(&regs, e_exit);
    s = s * 31 + (a ^ (b << 1) ^ (c << 2) ^ (d << 3) ^ (e << 4) ^ (f << 5) ^ (g << 6) ^ (h << 7));
    uint8_t *ret = (uint8_t *)*regs.sp++;
    regs.result = oop_from_int(1);
    s = s * 31 + (uint64_t)jit.return_to(&regs, ret);
    s = s * 31 + (a * b + c * d + e * f + g * h);
    regs = interp_regs();
    s = s * 31 + (uint64_t)jit.enter(&regs, e_inc);
    return s * 31 + (a + b + c + d + e + f + g + h);
}

static void callee_saved_registers_survive_enter_exit_and_return(void **state)
{
    (void)state;
    uint8_t *t_exit = jit_enter_runtime_trampoline(&zone, (const void *)rt_exit_interpret, 0);
    uint8_t *t_inc = jit_enter_runtime_trampoline(&zone, (const void *)rt_increment, 3);
    Method m1, m2;
    uint8_t *e_exit = method_calling(6, t_exit, 0, &m1);
    uint8_t *e_inc = method_calling(7, t_inc, 3, &m2);
    static const volatile uint64_t seed[8] = { 11, 22, 33, 44, 55, 66, 77, 88 };
    uint64_t a = seed[0], b = seed[1] * 3, c = seed[2] ^ a, d = seed[3] + b, e = seed[4] * c, f = seed[5] - d,
             g = seed[6] | e, h = seed[7] ^ f;
    uint64_t want = JIT_STATUS_INTERPRET;
    want = want * 31 + (a ^ (b << 1) ^ (c << 2) ^ (d << 3) ^ (e << 4) ^ (f << 5) ^ (g << 6) ^ (h << 7));
    want = want * 31 + JIT_STATUS_RETURNED;
    want = want * 31 + (a * b + c * d + e * f + g * h);
    want = want * 31 + JIT_STATUS_RETURNED;
    want = want * 31 + (a + b + c + d + e + f + g + h);
    assert_int_equal(live_across(seed, e_exit, e_inc), want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constant_method_returns_to_the_interpreter),
        cmocka_unit_test(method_reads_its_argument_through_fp),
        cmocka_unit_test(runtime_call_runs_on_the_c_stack_and_returns_to_machine_code),
        cmocka_unit_test(exit_request_leaves_to_the_interpreter_and_return_to_resumes),
        cmocka_unit_test(resume_request_answers_resume),
        cmocka_unit_test(callee_saved_registers_survive_enter_exit_and_return),
        cmocka_unit_test(dispatch_jumps_into_the_callee_which_returns_to_the_caller),
        cmocka_unit_test(answer_trampoline_returns_the_slot_to_the_caller),
        cmocka_unit_test(dispatch_can_still_exit_to_the_interpreter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
