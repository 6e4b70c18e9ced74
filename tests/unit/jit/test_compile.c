/*
 * tests/unit/jit/test_compile.c — the template compiler against a real heap:
 * heap methods built as vm/loader/loader.c's make_method builds them (already
 * quickened), compiled into a code zone and run through vm/jit/enter.h's
 * enilopmart on a fake stack page, with C routines standing in for the
 * interpreter's send, safepoint and write-barrier runtime; and compiled send
 * sites kept right when compaction slides their callees (vm/jit/relocate.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "gc/heap.h"
#include "vm/jit/compile.h"
#include "vm/jit/enter.h"
#include "vm/jit/map.h"
#include "vm/jit/relocate.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/verify.h"
#include "vm/model/counter.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"
#include "vm/interp/smallint.h"
#include "vm/interp/special.h"

#define ZONE_BYTES ((size_t)256 << 10)
#define TRAMP_BYTES ((size_t)4 << 10)
#define PAGE_WORDS (VM_STACK_PAGE_BYTES / sizeof(Oop))
#define MAX_LITS 8

static JitZone zone;
static JitEnter jit;
static JitCompileRuntime rt;
static uint64_t int_prims = ~(uint64_t)0; /* every Integer method the primitive, unless a test says not */
static Oop nil, tru, fals;
static Oop *page, *interp_fp;
/* What the prologue's stack check reads: the current page's base. */
static struct { Oop *base; } fake_page;
static void *fake_page_ptr = &fake_page;

/* -- The fake runtime ------------------------------------------------------------ */

typedef Oop (*SendHook)(int64_t tag, int64_t nargs, Oop *args, Oop rcvr);

static struct {
    int sends, safepoints, barriers, entry_slow;
    int64_t last_tag, last_nargs;
    Oop last_rcvr, last_args[4];
    uint8_t *last_ret;   /* the send's return address */
    Oop frame_method, frame_context, frame_flags, frame_self;
    SendHook hook;
    int safepoints_to_clear; /* gc_collect_wanted goes false after this many */
    Oop last_barrier_obj;
} seen;

/* The unlinked send (vm/jit/sendsite.h): edi = the selector tag and nargs. */
static Oop rt_send(uint64_t site_tag)
{
    int64_t tag = jit_sendsite_tag_selector((uint32_t)site_tag), nargs = jit_sendsite_tag_nargs((uint32_t)site_tag);
    Oop *sp = jit_cstate.st_sp, *fp = jit_cstate.st_fp;
    seen.sends++;
    seen.last_tag = tag;
    seen.last_nargs = nargs;
    seen.last_ret = (uint8_t *)sp[0];
    for (int64_t i = 0; i < nargs && i < 4; i++) seen.last_args[i] = sp[nargs - i]; /* arg 0 deepest */
    seen.last_rcvr = sp[1 + nargs];
    seen.frame_method = fp[FRAME_METHOD];
    seen.frame_context = fp[FRAME_CONTEXT];
    seen.frame_flags = fp[FRAME_FLAGS];
    seen.frame_self = fp[FRAME_RECEIVER];
    return seen.hook ? seen.hook(tag, nargs, seen.last_args, seen.last_rcvr) : oop_from_int(-1);
}

/* The entry checks' slow path: count it and go on past the checks. */
static uint64_t rt_entry_slow(uint64_t unused, uint8_t *resume)
{
    (void)unused;
    seen.entry_slow++;
    return (uint64_t)(uintptr_t)resume;
}

static uint64_t rt_unexpected(void)
{
    fail_msg("a class miss or primitive call in a test that links nothing");
    return 0;
}

static Oop rt_safepoint(void)
{
    seen.safepoints++;
    if (seen.safepoints == seen.safepoints_to_clear) gc_collect_wanted = false;
    return 0;
}

static Oop rt_barrier(Oop obj)
{
    seen.barriers++;
    seen.last_barrier_obj = obj;
    gc_remember(obj);
    return 0;
}

/* Inlining's feedback (vm/jit/inline.c): the one site the test names. */
static struct {
    const uint8_t *site;
    uint32_t class_index;
    Oop method;
    int deopts;
    uint64_t bcpc, words;
    Oop values[8]; /* what lay above the arguments, top first */
    Oop answer;    /* what the fake interpreter answers */
} inl;

static bool fake_site_method(const uint8_t *site, uint32_t *class_index, Oop *method)
{
    if (!inl.site || site != inl.site) return false;
    *class_index = inl.class_index;
    *method = inl.method;
    return true;
}

/* The deopt: records the frame the interpreter would build and, instead of
 * running the callee, answers inl.answer through the continuation as the
 * interpreter's return into machine code would (the trampoline returns to
 * st_sp[0] with rax). */
static uint64_t fake_deopt(uint64_t bcpc, uint64_t words, uint8_t *cont)
{
    Oop *sp = jit_cstate.st_sp;
    inl.deopts++;
    inl.bcpc = bcpc;
    inl.words = words;
    for (uint64_t i = 0; i < words && i < 8; i++) inl.values[i] = sp[1 + i];
    sp[words] = (Oop)cont;
    jit_cstate.st_sp = sp + words;
    return inl.answer;
}

static void visit_no_roots(GcVisitFn visit, void *ctx, void *client)
{
    (void)visit, (void)ctx, (void)client;
}

static int setup(void **state)
{
    (void)state;
    char err[256];
    GcConfig gcc = { .heap_bytes = (size_t)64 << 20, .eden_bytes = (size_t)64 << 10 };
    assert_true(gc_heap_init(&gcc, err, sizeof err));
    GcClient client = { .visit_roots = visit_no_roots };
    gc_set_client(&client);
    nil = gc_alloc_old(CLASS_INDEX_NIL, FMT_POINTERS, 0);
    tru = gc_alloc_old(CLASS_INDEX_TRUE, FMT_POINTERS, 0);
    fals = gc_alloc_old(CLASS_INDEX_FALSE, FMT_POINTERS, 0);
    gc_set_fill(nil);
    JitZoneConfig zc = { .zone_bytes = ZONE_BYTES, .trampoline_bytes = TRAMP_BYTES };
    assert_true(jit_zone_init(&zone, &zc, err, sizeof err));
    assert_true(jit_enter_init(&jit, &zone, err, sizeof err));
    rt = (JitCompileRuntime){
        .send = jit_enter_runtime_trampoline(&zone, (const void *)rt_send, 1),
        .method_abort = jit_enter_runtime_trampoline(&zone, (const void *)rt_unexpected, 0),
        .entry_slow = jit_enter_dispatch_trampoline(&zone, (const void *)rt_entry_slow, 2),
        .primitive = jit_enter_runtime_trampoline(&zone, (const void *)rt_unexpected, 0),
        .page = &fake_page_ptr,
        .headroom_words = VM_STACK_HEADROOM_WORDS,
        .safepoint = jit_enter_runtime_trampoline(&zone, (const void *)rt_safepoint, 0),
        .barrier = jit_enter_runtime_trampoline(&zone, (const void *)rt_barrier, 1),
        .collect_wanted = &gc_collect_wanted,
        .old_start = &gc_old_start,
        .nil = nil, .true_obj = tru, .false_obj = fals,
        .int_prims = &int_prims,
        .site_method = fake_site_method,
        .deopt = jit_enter_runtime_trampoline(&zone, (const void *)fake_deopt, 3),
        .inline_budget = 48,
    };
    int_prims = ~(uint64_t)0;
    assert_non_null(rt.send);
    assert_non_null(rt.safepoint);
    assert_non_null(rt.barrier);
    void *p = mmap(NULL, VM_STACK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    page = p;
    fake_page.base = page;
    interp_fp = page + PAGE_WORDS - 8;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    munmap(page, VM_STACK_PAGE_BYTES);
    jit_zone_release(&zone);
    gc_heap_release();
    return 0;
}

static int reset(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    gc_collect_wanted = false;
    int_prims = ~(uint64_t)0;
    rt.double_prims = NULL;
    rt.double_divide_inline = rt.double_sqrt_inline = NULL;
    memset(&inl, 0, sizeof inl);
    rt.deopt_countdown = NULL;
    rt.tier_up_after = 0;
    return 0;
}

/* -- Methods and running them --------------------------------------------------------- */

/* As vm/loader/loader.c's make_method, with code already quickened. */
static Oop make_method_full(int nargs, int ntemps, const Oop *lits, size_t nlits, const uint8_t *code, size_t len,
                            bool is_block, intptr_t prim)
{
    size_t ptr_slots = METHOD_FIXED_SLOTS + nlits;
    size_t code_slots = (len + 7) / 8;
    Oop m = gc_alloc_old(CLASS_INDEX_METHOD, FMT_METHOD + (unsigned)(code_slots * 8 - len), ptr_slots + code_slots);
    assert_true(m != 0);
    obj_slots(m)[METHOD_HEADER] = oop_from_int(vm_method_make_header(ptr_slots, nargs, ntemps, 16, is_block));
    for (size_t i = 1; i < ptr_slots; i++) obj_slots(m)[i] = nil;
    obj_slots(m)[METHOD_PRIMITIVE] = oop_from_int(prim);
    vm_counter_set(m, 0);
    for (size_t i = 0; i < nlits; i++) obj_slots(m)[METHOD_FIXED_SLOTS + i] = lits[i];
    memcpy(vm_method_bytecodes(m), code, len);
    return m;
}

#define METHOD(nargs, ntemps, lits, ...)                                                                     \
    make_method_full((nargs), (ntemps), (lits), sizeof(lits) / sizeof(Oop), (const uint8_t[]){ __VA_ARGS__ }, \
                     sizeof((const uint8_t[]){ __VA_ARGS__ }), false, 0)

static Oop no_lits[1];
#define METHOD0(nargs, ntemps, ...)                                                                     \
    make_method_full((nargs), (ntemps), no_lits, 0, (const uint8_t[]){ __VA_ARGS__ },                 \
                     sizeof((const uint8_t[]){ __VA_ARGS__ }), false, 0)

static JitMethod *compile_ok(Oop m)
{
    char why[200] = "";
    JitMethod *jm = jit_compile(&zone, &rt, m, why, sizeof why);
    if (!jm) fail_msg("declined: %s", why);
    assert_int_equal(jm->kind, JIT_KIND_METHOD);
    assert_int_equal(jm->method, m);
    assert_int_equal(jm->nargs, vm_method_nargs(m));
    assert_true(jm->map_offset <= jm->size);
    return jm;
}

/* Pushes receiver and args like the interpreter's send, enters, answers the result. */
static Oop run(JitMethod *jm, Oop rcvr, int nargs, ...)
{
    Oop *sp = interp_fp - 6;
    *sp = rcvr;
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) *--sp = va_arg(ap, Oop);
    va_end(ap);
    JitRegs regs = { .sp = sp, .fp = interp_fp };
    assert_int_equal(jit.enter(&regs, jit_method_unchecked_entry(jm)), JIT_STATUS_RETURNED);
    assert_ptr_equal(regs.sp, sp);
    assert_ptr_equal(regs.fp, interp_fp);
    return regs.result;
}

static Oop I(intptr_t v) { return oop_from_int(v); }

/* The bcpc the map gives the latest send's return address. */
static uint32_t bcpc_of_last_send(JitMethod *jm, JitMapKind *kind)
{
    assert_true(jit_method_contains(jm, seen.last_ret));
    JitMapEntry e;
    assert_true(jit_map_bcpc_at(jit_method_map(jm), jit_method_offset(jm, seen.last_ret), &e));
    assert_int_equal(e.mcpc, jit_method_offset(jm, seen.last_ret));
    *kind = e.kind;
    return e.bcpc;
}

/* -- Tests ---------------------------------------------------------------------------- */

static void constants_and_self(void **state)
{
    (void)state;
    Oop lits[] = { I(42) };
    assert_int_equal(run(compile_ok(METHOD(0, 0, lits, BC_PUSH_LITERAL, 0, BC_RETURN_TOP)), I(7), 0), I(42));
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_RETURN_SELF)), I(7), 0), I(7));
    assert_int_equal(run(compile_ok(METHOD0(1, 0, BC_PUSH_SELF, BC_RETURN_TOP)), I(8), 1, I(1)), I(8));
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_PUSH_NIL, BC_RETURN_TOP)), I(8), 0), nil);
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_PUSH_TRUE, BC_RETURN_TOP)), I(8), 0), tru);
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_PUSH_FALSE, BC_RETURN_TOP)), I(8), 0), fals);
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_PUSH_0, BC_RETURN_TOP)), I(8), 0), I(0));
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_PUSH_1, BC_DUP, BC_SEND_ADD, BC_RETURN_TOP)), I(8), 0), I(2));
    assert_int_equal(run(compile_ok(METHOD0(0, 0, BC_PUSH_1, BC_PUSH_0, BC_POP, BC_RETURN_TOP)), I(8), 0), I(1));
    assert_int_equal(seen.sends, 0);
}

/* The unchecked entry's stack check: a frame that would reach into the
 * headroom above the page base takes the slow path; one that fits does not. */
static void entry_checks_room_on_the_page(void **state)
{
    (void)state;
    JitMethod *jm = compile_ok(METHOD0(0, 3, BC_PUSH_SELF, BC_RETURN_TOP));
    Oop *sp = interp_fp - 6; /* where run() puts the receiver */
    int words = FRAME_HEADER_WORDS + 3 + 16 + 1 + VM_STACK_HEADROOM_WORDS; /* max stack 16 (make_method_full) */
    fake_page.base = sp - words; /* exactly fits */
    assert_int_equal(run(jm, I(5), 0), I(5));
    assert_int_equal(seen.entry_slow, 0);
    fake_page.base = sp - words + 1; /* one word short */
    assert_int_equal(run(jm, I(5), 0), I(5));
    assert_int_equal(seen.entry_slow, 1);
    fake_page.base = page;
}

/* Answers what the interpreter would for a special send the code handed over. */
static Oop special_in_c(int64_t tag, int64_t nargs, Oop *args, Oop rcvr)
{
    assert_true(jit_send_tag_is_special(tag));
    int bc = jit_send_tag_bytecode(tag);
    assert_int_equal(nargs, vm_special_nargs[bc - BC_SEND_ADD]);
    if (!oop_is_int(rcvr) || !oop_is_int(args[0])) return I(-999); /* "not understood" */
    intptr_t a = oop_int(rcvr), b = oop_int(args[0]), r;
    bool ovf = bc == BC_SEND_ADD ? __builtin_add_overflow(a, b, &r)
               : bc == BC_SEND_SUB ? __builtin_sub_overflow(a, b, &r)
                                   : __builtin_mul_overflow(a, b, &r);
    return ovf || !oop_int_fits(r) ? I(-777) : I(r); /* -777: "a LargeInteger" */
}

static void arithmetic_fast_paths_and_overflow_sends(void **state)
{
    (void)state;
    seen.hook = special_in_c;
    /* a: x b: y  ^ (x + y) * (x - y); PUSH_ARG k = fp[k]: x at 3, y at 2 */
    JitMethod *jm = compile_ok(METHOD0(2, 0, BC_PUSH_ARG, 3, BC_PUSH_ARG, 2, BC_SEND_ADD, BC_PUSH_ARG, 3, BC_PUSH_ARG,
                                       2, BC_SEND_SUB, BC_SEND_MUL, BC_RETURN_TOP));
    assert_int_equal(run(jm, nil, 2, I(7), I(3)), I(40));
    assert_int_equal(run(jm, nil, 2, I(-7), I(30)), I(23 * -37));
    assert_int_equal(seen.sends, 0);

    static const uint8_t ops[] = { BC_SEND_ADD, BC_SEND_SUB, BC_SEND_MUL };
    static const intptr_t cases[][2] = {
        { OOP_INT_MAX, 1 }, { OOP_INT_MIN, -1 }, { OOP_INT_MIN, 1 }, { OOP_INT_MAX, -1 }, { OOP_INT_MAX, 2 },
        { OOP_INT_MIN, OOP_INT_MIN }, { (intptr_t)1 << 31, (intptr_t)1 << 31 }, { -5, 3 }, { 0, OOP_INT_MIN },
        { OOP_INT_MIN, 0 }, { 12345, -678 }, { -1, OOP_INT_MIN },
    };
    for (size_t o = 0; o < 3; o++) {
        JitMethod *bin = compile_ok(METHOD0(2, 0, BC_PUSH_ARG, 3, BC_PUSH_ARG, 2, ops[o], BC_RETURN_TOP));
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            intptr_t a = cases[k][0], b = cases[k][1];
            seen.sends = 0;
            Oop want = special_in_c(jit_send_tag_special(ops[o]), 1, (Oop[]){ I(b) }, I(a));
            assert_int_equal(run(bin, nil, 2, I(a), I(b)), want);
            assert_int_equal(seen.sends, want == I(-777) ? 1 : 0); /* only overflow leaves the fast path */
            if (seen.sends) {
                assert_int_equal(seen.last_tag, jit_send_tag_special(ops[o]));
                assert_int_equal(seen.last_rcvr, I(a));
                assert_int_equal(seen.last_args[0], I(b));
                JitMapKind kind;
                assert_int_equal(bcpc_of_last_send(bin, &kind), 4);
                assert_int_equal(kind, JIT_MAP_SEND);
            }
        }
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            /* the argument a SmallInteger constant (a literal): an immediate operand */
            intptr_t a = cases[k][0], b = cases[k][1];
            Oop lit[] = { I(b) };
            JitMethod *cm = compile_ok(METHOD(1, 0, lit, BC_PUSH_ARG, 2, BC_PUSH_LITERAL, 0, ops[o], BC_RETURN_TOP));
            seen.sends = 0;
            Oop want = special_in_c(jit_send_tag_special(ops[o]), 1, (Oop[]){ I(b) }, I(a));
            assert_int_equal(run(cm, nil, 1, I(a)), want);
            assert_int_equal(seen.sends, want == I(-777) ? 1 : 0);
            if (seen.sends) {
                assert_int_equal(seen.last_rcvr, I(a));
                assert_int_equal(seen.last_args[0], I(b));
            }
        }
        seen.sends = 0;
        assert_int_equal(run(bin, nil, 2, I(1), nil), I(-999)); /* a non-integer argument */
        assert_int_equal(run(bin, nil, 2, tru, I(1)), I(-999));
        assert_int_equal(seen.sends, 2);
        assert_int_equal(seen.last_rcvr, tru);
    }
}

static Oop compare_in_c(int64_t tag, int64_t nargs, Oop *args, Oop rcvr)
{
    (void)nargs;
    int bc = jit_send_tag_bytecode(tag);
    if (bc == BC_SEND_IDENTICAL) return rcvr == args[0] ? tru : fals;
    return I(-999);
}

static void comparisons_and_identity(void **state)
{
    (void)state;
    seen.hook = compare_in_c;
    static const struct { uint8_t op; bool (*f)(intptr_t, intptr_t); } ops[] = {
        { BC_SEND_LT, NULL }, { BC_SEND_GT, NULL }, { BC_SEND_LE, NULL },
        { BC_SEND_GE, NULL }, { BC_SEND_EQ, NULL }, { BC_SEND_NE, NULL },
    };
    static const intptr_t vals[] = { OOP_INT_MIN, -3, 0, 3, OOP_INT_MAX };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        JitMethod *jm = compile_ok(METHOD0(2, 0, BC_PUSH_ARG, 3, BC_PUSH_ARG, 2, ops[o].op, BC_RETURN_TOP));
        for (size_t i = 0; i < 5; i++)
            for (size_t j = 0; j < 5; j++) {
                intptr_t a = vals[i], b = vals[j];
                bool want = ops[o].op == BC_SEND_LT ? a < b : ops[o].op == BC_SEND_GT ? a > b
                          : ops[o].op == BC_SEND_LE ? a <= b : ops[o].op == BC_SEND_GE ? a >= b
                          : ops[o].op == BC_SEND_EQ ? a == b : a != b;
                assert_int_equal(run(jm, nil, 2, I(a), I(b)), want ? tru : fals);
            }
        for (size_t j = 0; j < 5; j++) { /* a constant argument: cmp with an immediate when it fits */
            Oop lit[] = { I(vals[j]) };
            JitMethod *cm = compile_ok(METHOD(1, 0, lit, BC_PUSH_ARG, 2, BC_PUSH_LITERAL, 0, ops[o].op, BC_RETURN_TOP));
            for (size_t i = 0; i < 5; i++) {
                intptr_t a = vals[i], b = vals[j];
                bool want = ops[o].op == BC_SEND_LT ? a < b : ops[o].op == BC_SEND_GT ? a > b
                          : ops[o].op == BC_SEND_LE ? a <= b : ops[o].op == BC_SEND_GE ? a >= b
                          : ops[o].op == BC_SEND_EQ ? a == b : a != b;
                assert_int_equal(run(cm, nil, 1, I(a)), want ? tru : fals);
            }
        }
        assert_int_equal(seen.sends, 0);
        assert_int_equal(run(jm, nil, 2, nil, I(1)), I(-999));
        assert_int_equal(seen.sends, 1);
        assert_int_equal(seen.last_tag, jit_send_tag_special(ops[o].op));
        seen.sends = 0;
    }
    JitMethod *id = compile_ok(METHOD0(2, 0, BC_PUSH_ARG, 3, BC_PUSH_ARG, 2, BC_SEND_IDENTICAL, BC_RETURN_TOP));
    assert_int_equal(run(id, nil, 2, I(5), I(5)), tru);
    assert_int_equal(run(id, nil, 2, I(5), I(6)), fals);
    assert_int_equal(run(id, nil, 2, nil, nil), tru);
    assert_int_equal(seen.sends, 0);
    assert_int_equal(run(id, nil, 2, nil, tru), fals); /* generic */
    assert_int_equal(seen.sends, 1);
    assert_int_equal(seen.last_tag, jit_send_tag_special(BC_SEND_IDENTICAL));
}

/* What vm/interp/smallint.h's SmallInteger cases answer, -777 where they decline. */
static Oop int_special_in_c(int op, intptr_t x, intptr_t y)
{
    intptr_t r = 0;
    bool ok;
    switch (op) {
    case BC_SEND_BIT_AND: ok = true, r = x & y; break;
    case BC_SEND_BIT_XOR: ok = true, r = x ^ y; break;
    case BC_SEND_SHIFT_LEFT: ok = vm_int_shift_left_small(x, y, &r); break;
    case BC_SEND_SHIFT_RIGHT: ok = vm_int_shift_right_small(x, y, &r); break;
    case BC_SEND_DIV: ok = vm_int_div_small(x, y, &r); break;
    case BC_SEND_MOD: ok = vm_int_mod_small(x, y, &r); break;
    case BC_SEND_REM: ok = vm_int_rem_small(x, y, &r); break;
    case BC_SEND_MAX: ok = true, r = x < y ? y : x; break;
    case BC_SEND_MIN: ok = true, r = x > y ? y : x; break;
    case BC_SEND_ABS: ok = x >= 0 ? (r = x, true) : vm_int_negated_small(x, &r); break;
    default: ok = vm_int_negated_small(x, &r); break;
    }
    return ok ? I(r) : I(-777);
}

static Oop int_special_send(int64_t tag, int64_t nargs, Oop *args, Oop rcvr)
{
    (void)nargs;
    (void)args;
    (void)rcvr;
    (void)tag;
    return I(-777);
}

/* The inline SmallInteger paths answer what vm/interp/smallint.h does, and send
 * (here: answer -777) exactly where it declines; with Integer's method not
 * the primitive they always send. */
static void integer_special_sends_match_the_c_cases(void **state)
{
    (void)state;
    seen.hook = int_special_send;
    static const intptr_t vals[] = { OOP_INT_MIN, OOP_INT_MIN + 1, -((intptr_t)1 << 40) - 3, -65, -64, -63, -62, -7,
                                     -2, -1, 0, 1, 2, 3, 7, 61, 62, 63, 64, 65, 100, (intptr_t)1 << 40,
                                     OOP_INT_MAX - 1, OOP_INT_MAX };
    size_t nv = sizeof vals / sizeof vals[0];
    for (int op = BC_SEND_BIT_AND; op <= BC_SEND_NEGATED; op++) {
        if (op == BC_SEND_NOT_EQUAL) continue;
        bool unary = op == BC_SEND_ABS || op == BC_SEND_NEGATED;
        JitMethod *jm = unary ? compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, op, BC_RETURN_TOP))
                              : compile_ok(METHOD0(2, 0, BC_PUSH_ARG, 3, BC_PUSH_ARG, 2, op, BC_RETURN_TOP));
        for (size_t i = 0; i < nv; i++)
            for (size_t j = 0; j < (unary ? 1 : nv); j++) {
                Oop want = int_special_in_c(op, vals[i], vals[j]);
                Oop got = unary ? run(jm, nil, 1, I(vals[i])) : run(jm, nil, 2, I(vals[i]), I(vals[j]));
                if (got != want)
                    fail_msg("%s %ld %ld: got %ld, want %ld", vm_bytecode_name[op], (long)vals[i], (long)vals[j],
                             (long)oop_int(got), (long)oop_int(want));
            }
        seen.sends = 0;
        assert_int_equal(unary ? run(jm, nil, 1, nil) : run(jm, nil, 2, I(1), nil), I(-777));
        assert_int_equal(seen.sends, 1);
        assert_int_equal(seen.last_tag, jit_send_tag_special(op));
    }
    int_prims = 0;
    JitMethod *jm = compile_ok(METHOD0(2, 0, BC_PUSH_ARG, 3, BC_PUSH_ARG, 2, BC_SEND_BIT_AND, BC_RETURN_TOP));
    seen.sends = 0;
    assert_int_equal(run(jm, nil, 2, I(3), I(5)), I(-777));
    assert_int_equal(seen.sends, 1);
}

/* ^ arg at: 1 put: 2 — and value, value:, length — always go generic. */
static void other_special_sends_are_sends(void **state)
{
    (void)state;
    JitMethod *jm = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, BC_PUSH_1, BC_PUSH_0, BC_SEND_AT_PUT, BC_PUSH_ARG, 2,
                                       BC_SEND_LENGTH, BC_SEND_VALUE1, BC_SEND_VALUE, BC_PUSH_1, BC_SEND_AT,
                                       BC_RETURN_TOP));
    assert_int_equal(run(jm, nil, 1, I(9)), I(-1));
    assert_int_equal(seen.sends, 5);
    assert_int_equal(seen.last_tag, jit_send_tag_special(BC_SEND_AT));
    assert_int_equal(seen.last_nargs, 1);
    JitMapKind kind;
    assert_int_equal(bcpc_of_last_send(jm, &kind), 11);
}

/* i := 1. sum := 0. [i <= limit] whileTrue: [sum := sum + i. i := i + 1]. ^ sum */
static Oop loop_method(Oop limit)
{
    Oop lits[] = { limit };
    return METHOD(0, 2, lits, BC_PUSH_1, BC_POP_TEMP, 0, BC_PUSH_0, BC_POP_TEMP, 1,
                  /* 6 */ BC_PUSH_TEMP, 0, BC_PUSH_LITERAL, 0, BC_SEND_LE, /* 11 */ BC_JUMP_IF_FALSE, 16, 0,
                  /* 14 */ BC_PUSH_TEMP, 1, BC_PUSH_TEMP, 0, BC_SEND_ADD, BC_POP_TEMP, 1,
                  /* 21 */ BC_PUSH_TEMP, 0, BC_PUSH_1, BC_SEND_ADD, BC_POP_TEMP, 0,
                  /* 27 */ BC_JUMP_BACK, 24, 0, /* 30 */ BC_PUSH_TEMP, 1, BC_RETURN_TOP);
}

static Oop limit_obj;
static Oop le_limit_3(int64_t tag, int64_t nargs, Oop *args, Oop rcvr)
{
    assert_int_equal(jit_send_tag_bytecode(tag), BC_SEND_LE);
    assert_int_equal(nargs, 1);
    assert_int_equal(args[0], limit_obj);
    return oop_int(rcvr) <= 3 ? tru : fals;
}

static void loop_with_fused_compare_and_safepoints(void **state)
{
    (void)state;
    JitMethod *jm = compile_ok(loop_method(I(100)));
    assert_int_equal(run(jm, nil, 0), I(5050));
    assert_int_equal(seen.sends, 0);
    assert_int_equal(seen.safepoints, 0);

    gc_collect_wanted = true; /* every backward jump calls the safepoint until it clears */
    seen.safepoints_to_clear = 60;
    assert_int_equal(run(jm, nil, 0), I(5050));
    assert_int_equal(seen.safepoints, 60);
    assert_int_equal(seen.entry_slow, 1); /* the entry's interrupt check saw it first */
    assert_false(gc_collect_wanted);

    /* The fused compare's generic path: the answer goes through the jump's test. */
    limit_obj = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    seen.hook = le_limit_3;
    JitMethod *slow = compile_ok(loop_method(limit_obj));
    assert_int_equal(run(slow, nil, 0), I(6));
    assert_int_equal(seen.sends, 4);
    JitMapKind kind;
    assert_int_equal(bcpc_of_last_send(slow, &kind), 10);
    assert_int_equal(kind, JIT_MAP_SEND);
    /* The map has the fused branch (bcpc 11) and the backward jump (27). */
    JitMapEntry e;
    assert_true(jit_map_mcpc_for(jit_method_map(slow), 11, &e));
    assert_int_equal(e.kind, JIT_MAP_LOCAL);
    /* the jump's safepoint call, in the cold section after the jump's own entry */
    JitMapIter it;
    bool backjump = false;
    jit_map_iter_init(&it, jit_method_map(slow));
    while (!backjump && jit_map_iter_next(&it, &e)) backjump = e.bcpc == 27 && e.kind == JIT_MAP_BACKJUMP;
    assert_true(backjump);
    assert_true(jit_map_mcpc_for(jit_method_map(slow), 27, &e));
    assert_true(e.kind == JIT_MAP_LOCAL || e.kind == JIT_MAP_BACKJUMP);
}

static void temps_and_arguments_store(void **state)
{
    (void)state;
    /* a: x  | t |  t := x. x := 5. ^ t + x  (store keeps the value: STORE_TEMP then POP) */
    JitMethod *jm = compile_ok(METHOD0(1, 1, BC_PUSH_TEMP, 0, BC_POP, BC_PUSH_ARG, 2, BC_STORE_TEMP, 0, BC_POP,
                                       BC_PUSH_1, BC_POP_ARG, 2, BC_PUSH_TEMP, 0, BC_PUSH_ARG, 2, BC_SEND_ADD,
                                       BC_PUSH_1, BC_STORE_ARG, 2, BC_SEND_ADD, BC_RETURN_TOP));
    assert_int_equal(run(jm, nil, 1, I(40)), I(42));
    /* an unassigned temp is nil */
    assert_int_equal(run(compile_ok(METHOD0(0, 3, BC_PUSH_TEMP, 2, BC_RETURN_TOP)), nil, 0), nil);
}

static void fields_with_write_barrier(void **state)
{
    (void)state;
    /* a: v  field1 := v. ^ field0 */
    JitMethod *pop = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, BC_POP_FIELD, 1, BC_PUSH_FIELD, 0, BC_RETURN_TOP));
    /* a: v  ^ field0 := v */
    JitMethod *store = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, BC_STORE_FIELD, 0, BC_RETURN_TOP));
    Oop old = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 2);
    Oop old2 = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 2);
    obj_slots(old)[0] = I(11);
    /* New old objects start remembered (gc/heap.c); a scavenge that finds no
     * young pointer in them forgets them. No roots: nothing young survives. */
    assert_true(gc_collect(false));
    assert_false(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_false(obj_header(old2) & OBJ_GC_REMEMBERED);
    Oop young = gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 2);
    assert_true(gc_is_young(young));
    assert_true(gc_is_old(old));

    assert_int_equal(run(pop, old, 1, I(3)), I(11)); /* an immediate: no barrier */
    assert_int_equal(obj_slots(old)[1], I(3));
    assert_int_equal(run(pop, old, 1, old2), I(11)); /* old into old: none */
    assert_int_equal(seen.barriers, 0);
    assert_false(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(run(pop, old, 1, young), I(11)); /* young into old: remembered */
    assert_int_equal(obj_slots(old)[1], young);
    assert_int_equal(seen.barriers, 1);
    assert_int_equal(seen.last_barrier_obj, old);
    assert_true(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(run(pop, old, 1, young), I(11)); /* already remembered */
    assert_int_equal(seen.barriers, 1);

    obj_slots(young)[0] = I(5);
    assert_int_equal(run(pop, young, 1, old2), I(5)); /* a young object: none */
    assert_int_equal(obj_slots(young)[1], old2);
    assert_int_equal(seen.barriers, 1);

    assert_int_equal(run(store, old2, 1, young), young);
    assert_int_equal(obj_slots(old2)[0], young);
    assert_int_equal(seen.barriers, 2);
    assert_int_equal(seen.last_barrier_obj, old2);
}

static Oop answer_99(int64_t tag, int64_t nargs, Oop *args, Oop rcvr)
{
    (void)tag, (void)nargs, (void)args, (void)rcvr;
    return I(99);
}

static void plain_send_reaches_the_runtime(void **state)
{
    (void)state;
    seen.hook = answer_99;
    /* a: x  | t |  ^ (self foo: x bar: 3) + 1 ; literal 0 the selector, 1 the 3 */
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    Oop lits[] = { nil, sel, I(3) };
    Oop m = METHOD(1, 1, lits, BC_PUSH_SELF, BC_PUSH_ARG, 2, BC_PUSH_LITERAL, 2, /* 5 */ BC_SEND, 1, 2, BC_PUSH_1,
                   BC_SEND_ADD, BC_RETURN_TOP);
    JitMethod *jm = compile_ok(m);
    Oop rcvr = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    assert_int_equal(run(jm, rcvr, 1, I(17)), I(100));
    assert_int_equal(seen.sends, 1);
    assert_int_equal(seen.last_tag, 1);
    assert_int_equal(seen.last_nargs, 2);
    assert_int_equal(seen.last_rcvr, rcvr);
    assert_int_equal(seen.last_args[0], I(17));
    assert_int_equal(seen.last_args[1], I(3));
    assert_int_equal(seen.frame_method, m);
    assert_int_equal(seen.frame_context, nil);
    assert_int_equal(seen.frame_self, rcvr);
    assert_true(oop_is_int(seen.frame_flags));
    intptr_t flags = oop_int(seen.frame_flags);
    assert_true(flags & FRAME_FLAG_MACHINE_CODE);
    assert_int_equal(VM_FRAME_GET(flags, CALLER_NARGS), 1); /* its caller pushed its one arg */
    assert_int_equal(flags & ~FRAME_FLAG_MACHINE_CODE & ~VM_FRAME_MASK(CALLER_NARGS),
                     FRAME_FLAGS_MAKE(1, 1, false));
    JitMapKind kind;
    assert_int_equal(bcpc_of_last_send(jm, &kind), 5);
    assert_int_equal(kind, JIT_MAP_SEND);

    /* SEND_W, with a 16-bit literal index. */
    Oop wm = METHOD(0, 0, lits, BC_PUSH_SELF, BC_SEND_W, 1, 0, 0, BC_RETURN_TOP);
    JitMethod *wj = compile_ok(wm);
    assert_int_equal(run(wj, rcvr, 0), I(99));
    assert_int_equal(seen.last_tag, 1);
    assert_int_equal(seen.last_nargs, 0);
    assert_int_equal(bcpc_of_last_send(wj, &kind), 1);
}

/* The simulated stack (vm/jit/compile.c): pushes are only described until a
 * consumer needs them; a store into a temp whose earlier value is still
 * only described must not change that value; a send finds every kind of
 * described operand, an earlier send's answer among them, on the real
 * stack; a value made on both arms of a branch meets the operand left
 * below the branch. */
static void simulated_stack_keeps_values_exact(void **state)
{
    (void)state;
    seen.hook = answer_99;
    /* | t |  t := 1. ^ t + (t := 5) */
    Oop five[] = { I(5) };
    JitMethod *st = compile_ok(METHOD(0, 1, five, BC_PUSH_1, BC_POP_TEMP, 0, BC_PUSH_TEMP, 0, BC_PUSH_LITERAL, 0,
                                      BC_STORE_TEMP, 0, BC_SEND_ADD, BC_RETURN_TOP));
    assert_int_equal(run(st, nil, 0), I(6));
    /* field0 := 1. ^ field0 + (field0 := 5): the same for a field */
    Oop obj = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 2);
    JitMethod *sf = compile_ok(METHOD(0, 0, five, BC_PUSH_1, BC_POP_FIELD, 0, BC_PUSH_FIELD, 0, BC_PUSH_LITERAL, 0,
                                      BC_STORE_FIELD, 0, BC_SEND_ADD, BC_RETURN_TOP));
    assert_int_equal(run(sf, obj, 0), I(6));
    assert_int_equal(obj_slots(obj)[0], I(5));
    assert_int_equal(seen.sends, 0);

    /* a: x  ^ self foo: x bar: lit baz: field1 qux: (self foo) */
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1), lit = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    Oop lits[] = { nil, sel, lit };
    obj_slots(obj)[1] = I(55);
    JitMethod *sends = compile_ok(METHOD(1, 0, lits, BC_PUSH_SELF, BC_PUSH_ARG, 2, BC_PUSH_LITERAL, 2, BC_PUSH_FIELD, 1,
                                         BC_PUSH_SELF, BC_SEND, 1, 0, BC_SEND, 1, 4, BC_RETURN_TOP));
    assert_int_equal(run(sends, obj, 1, I(17)), I(99));
    assert_int_equal(seen.sends, 2);
    assert_int_equal(seen.last_nargs, 4);
    assert_int_equal(seen.last_rcvr, obj);
    assert_int_equal(seen.last_args[0], I(17));
    assert_int_equal(seen.last_args[1], lit);
    assert_int_equal(seen.last_args[2], I(55));
    assert_int_equal(seen.last_args[3], I(99)); /* the first send's answer, kept in rax, then flushed */
    JitMapKind kind;
    assert_int_equal(bcpc_of_last_send(sends, &kind), 11);
    assert_int_equal(kind, JIT_MAP_SEND);

    /* a: flag  ^ 1 + (flag ifTrue: [1] ifFalse: [0]) */
    JitMethod *merge = compile_ok(METHOD0(1, 0, BC_PUSH_1, BC_PUSH_ARG, 2, BC_JUMP_IF_FALSE, 4, 0, BC_PUSH_1,
                                          BC_JUMP, 1, 0, BC_PUSH_0, BC_SEND_ADD, BC_RETURN_TOP));
    assert_int_equal(run(merge, nil, 1, tru), I(2));
    assert_int_equal(run(merge, nil, 1, fals), I(1));
    /* constant conditions decide at compile time: ^ true ifTrue: [1] ifFalse: [0] */
    JitMethod *folded = compile_ok(METHOD0(0, 0, BC_PUSH_TRUE, BC_JUMP_IF_FALSE, 4, 0, BC_PUSH_1, BC_JUMP, 1, 0,
                                           BC_PUSH_0, BC_RETURN_TOP));
    assert_int_equal(run(folded, nil, 0), I(1));
    assert_int_equal(seen.sends, 2);
}

static Oop must_be_boolean(int64_t tag, int64_t nargs, Oop *args, Oop rcvr)
{
    (void)args;
    assert_int_equal(tag, JIT_SEND_MUST_BE_BOOLEAN);
    assert_int_equal(nargs, 0);
    return oop_int(rcvr) > 0 ? tru : fals;
}

static void conditional_jumps_and_must_be_boolean(void **state)
{
    (void)state;
    seen.hook = must_be_boolean;
    /* a: c  c ifTrue: [^1]. ^0 */
    JitMethod *jt = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, /* 2 */ BC_JUMP_IF_TRUE, 2, 0, BC_PUSH_0, BC_RETURN_TOP,
                                       BC_PUSH_1, BC_RETURN_TOP));
    JitMethod *jf = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, BC_JUMP_IF_FALSE, 2, 0, BC_PUSH_0, BC_RETURN_TOP,
                                       BC_PUSH_1, BC_RETURN_TOP));
    assert_int_equal(run(jt, nil, 1, tru), I(1));
    assert_int_equal(run(jt, nil, 1, fals), I(0));
    assert_int_equal(run(jf, nil, 1, tru), I(0));
    assert_int_equal(run(jf, nil, 1, fals), I(1));
    assert_int_equal(seen.sends, 0);
    assert_int_equal(run(jt, nil, 1, I(5)), I(1));
    assert_int_equal(seen.sends, 1);
    assert_int_equal(seen.last_rcvr, I(5));
    JitMapKind kind;
    assert_int_equal(bcpc_of_last_send(jt, &kind), 2);
    assert_int_equal(run(jf, nil, 1, I(-5)), I(1));
    assert_int_equal(seen.sends, 2);

    JitMethod *jn = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, BC_JUMP_IF_NIL, 2, 0, BC_PUSH_0, BC_RETURN_TOP,
                                       BC_PUSH_1, BC_RETURN_TOP));
    JitMethod *jnn = compile_ok(METHOD0(1, 0, BC_PUSH_ARG, 2, BC_JUMP_IF_NOT_NIL, 2, 0, BC_PUSH_0, BC_RETURN_TOP,
                                        BC_PUSH_1, BC_RETURN_TOP));
    JitMethod *j = compile_ok(METHOD0(0, 0, BC_JUMP, 2, 0, BC_PUSH_0, BC_RETURN_TOP, BC_PUSH_1, BC_RETURN_TOP));
    assert_int_equal(run(jn, nil, 1, nil), I(1));
    assert_int_equal(run(jn, nil, 1, I(0)), I(0));
    assert_int_equal(run(jnn, nil, 1, nil), I(0));
    assert_int_equal(run(jnn, nil, 1, fals), I(1));
    assert_int_equal(run(j, nil, 0), I(1));
    assert_int_equal(seen.sends, 2);
    JitMapEntry e;
    assert_true(jit_map_mcpc_for(jit_method_map(jn), 2, &e));
    assert_int_equal(e.kind, JIT_MAP_LOCAL);
}

/* A block's frame: the receiver slot holds the closure, self is the
 * closure's receiver. */
static void blocks_take_self_from_their_closure(void **state)
{
    (void)state;
    static const uint8_t code[] = { BC_PUSH_SELF, BC_RETURN_TOP };
    Oop bm = make_method_full(0, 0, no_lits, 0, code, sizeof code, true, 0);
    char why[200] = "";
    JitMethod *jm = jit_compile(&zone, &rt, bm, why, sizeof why);
    if (!jm) fail_msg("declined: %s", why);
    assert_int_equal(jm->kind, JIT_KIND_BLOCK);
    Oop closure = gc_alloc_old(CLASS_INDEX_BLOCK1, FMT_POINTERS, BLOCK_SLOTS);
    obj_slots(closure)[BLOCK_OUTER_CONTEXT] = nil;
    obj_slots(closure)[BLOCK_METHOD] = bm;
    obj_slots(closure)[BLOCK_RECEIVER] = I(9);
    assert_int_equal(run(jm, closure, 0), I(9));
    assert_int_equal(seen.frame_flags, 0); /* no send happened */
}

/* The longest Double chains a method can hold (every special send taking
 * the previous answer, and // and sqrt sends among them) fit the bound the
 * first pass reserves, and compute what one send at a time would. */
static void double_chains_fit_their_bound(void **state)
{
    (void)state;
    static uint64_t double_prims = ~(uint64_t)0;
    static bool yes = true;
    rt.double_prims = &double_prims;
    rt.double_divide_inline = &yes;
    rt.double_sqrt_inline = &yes;
    rt.eden_top = &gc_eden_top;
    rt.eden_limit = &gc_eden_soft_limit;
    rt.bytes_allocated = &gc_stats.bytes_allocated;
    Oop lits[2]; /* the selectors // and sqrt: bytes objects, one slot each */
    const char *names[2] = { "//", "sqrt" };
    for (int i = 0; i < 2; i++) {
        size_t len = strlen(names[i]);
        lits[i] = gc_alloc_old(CLASS_INDEX_SYMBOL, FMT_BYTES + (unsigned)(8 - len), 1);
        memcpy(obj_bytes(lits[i]), names[i], len);
    }
    /* a * a + a * a - a * a + a * a - a * a + a // a - a sqrt + a * a - a // a + a * a + a - a * a < a,
     * which took more than the templates' bounds before chains had theirs */
    static const char ops[] = "*+*-*+*-*+/S+*-/+*+-*<";
    uint8_t code[200];
    size_t n = 0;
    code[n++] = BC_PUSH_ARG, code[n++] = 2;
    for (const char *o = ops; *o; o++) {
        code[n++] = BC_PUSH_ARG, code[n++] = 2;
        switch (*o) {
        case '+': code[n++] = BC_SEND_ADD; break;
        case '-': code[n++] = BC_SEND_SUB; break;
        case '*': code[n++] = BC_SEND_MUL; break;
        case '<': code[n++] = BC_SEND_LT; break;
        case '/': code[n++] = BC_SEND, code[n++] = 0, code[n++] = 1; break;
        default: code[n++] = BC_SEND, code[n++] = 1, code[n++] = 0, code[n++] = BC_SEND_SUB; break; /* - a sqrt */
        }
    }
    code[n++] = BC_RETURN_TOP;
    assert_true(n <= sizeof code);
    compile_ok(make_method_full(1, 0, lits, 2, code, n, false, 0));
}

/* m with a max stack of 4 instead of make_method_full's 16: an inlined
 * body's temps and stack must fit the page's headroom. */
static Oop small_stack(Oop m)
{
    obj_slots(m)[METHOD_HEADER] = oop_from_int(vm_method_make_header(vm_method_pointer_slots(m), vm_method_nargs(m),
                                                                     vm_method_ntemps(m), 4, false));
    return m;
}

/* The map rules of vm/jit/jitmethod.h's inline ranges: each begins with an
 * entry of its scope's method, the code after it with one of the caller's;
 * --jit-verify's checks accept the method. */
static void check_inline_tables(JitMethod *jm, Oop caller)
{
    uint32_t nr = jit_method_inline_range_count(jm);
    const JitInlineRange *r = jit_method_inline_ranges(jm);
    const JitInlineScope *sc = jit_method_inline_scopes(jm);
    for (uint32_t i = 0; i < nr; i++) {
        JitMapEntry e;
        assert_true(jit_map_bcpc_at(jit_method_map(jm), r[i].start, &e));
        assert_int_equal(e.mcpc, r[i].start);
        assert_true(e.bcpc < vm_method_bytecode_length(sc[r[i].scope].method));
        assert_true(jit_map_bcpc_at(jit_method_map(jm), r[i].end, &e));
        assert_int_equal(e.mcpc, r[i].end);
        assert_int_equal(e.bcpc, sc[r[i].scope].call_bcpc);
        assert_int_equal(sc[r[i].scope].parent, -1);
        assert_int_equal(jit_method_inline_scope_at(jm, r[i].start), (int32_t)r[i].scope);
        assert_int_equal(jit_method_inline_scope_at(jm, r[i].end), -1);
        if (i) assert_true(r[i - 1].end <= r[i].start);
    }
    vm_counter_set(caller, vm_counter_of_code(jm));
    jit_verify_method(&zone, rt.send, jm, "in a test");
}

/* A send whose site saw one class run a small method (the feedback) gets
 * that method's body behind a class test: no send for that class, the
 * generic send for another; the scope and range tables describe it. */
static void monomorphic_send_is_inlined(void **state)
{
    (void)state;
    seen.hook = answer_99;
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    /* callee  plus: x  | t |  t := x + 1. ^t + t */
    Oop callee = small_stack(METHOD0(1, 1, BC_PUSH_ARG, 2, BC_PUSH_1, BC_SEND_ADD, BC_POP_TEMP, 0, BC_PUSH_TEMP, 0,
                                     BC_PUSH_TEMP, 0, BC_SEND_ADD, BC_RETURN_TOP));
    /* caller  a: x  ^(self plus: x) + 1 */
    Oop lits[] = { sel };
    Oop caller = METHOD(1, 0, lits, BC_PUSH_SELF, BC_PUSH_ARG, 2, /* 3 */ BC_SEND, 0, 1, BC_PUSH_1, BC_SEND_ADD,
                        BC_RETURN_TOP);
    Oop rcvr = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    inl.site = vm_method_bytecodes(caller) + 3;
    inl.class_index = CLASS_INDEX_ARRAY;
    inl.method = callee;
    JitMethod *jm = compile_ok(caller);
    assert_int_equal(jit_method_inline_scope_count(jm), 1);
    assert_int_equal(jit_method_inline_range_count(jm), 1);
    assert_int_equal(jit_method_inline_scopes(jm)[0].method, callee);
    assert_int_equal(jit_method_inline_scopes(jm)[0].call_bcpc, 3);
    check_inline_tables(jm, caller);
    assert_int_equal(run(jm, rcvr, 1, I(20)), I(43));
    assert_int_equal(seen.sends, 0);
    assert_int_equal(inl.deopts, 0);
    /* another class, an immediate: the send */
    assert_int_equal(run(jm, I(5), 1, I(20)), I(100));
    assert_int_equal(run(jm, nil, 1, I(20)), I(100));
    assert_int_equal(seen.sends, 2);
    assert_int_equal(seen.last_rcvr, nil);

    /* a SmallInteger receiver class: the tag test */
    Oop self_callee = METHOD0(0, 0, BC_PUSH_SELF, BC_PUSH_SELF, BC_SEND_MUL, BC_RETURN_TOP);
    Oop c2 = METHOD(1, 0, lits, BC_PUSH_ARG, 2, /* 2 */ BC_SEND, 0, 0, BC_RETURN_TOP);
    inl.site = vm_method_bytecodes(c2) + 2;
    inl.class_index = CLASS_INDEX_SMALLINT;
    inl.method = self_callee;
    JitMethod *j2 = compile_ok(c2);
    assert_int_equal(jit_method_inline_scope_count(j2), 1);
    check_inline_tables(j2, c2);
    assert_int_equal(run(j2, nil, 1, I(-12)), I(144));
    assert_int_equal(seen.sends, 2);
    assert_int_equal(run(j2, nil, 1, rcvr), I(99));
    assert_int_equal(seen.sends, 3);
}

/* Tier-up's countdown (vm/jit/DESIGN.md, "Tier-up"): a method whose plain
 * send had no feedback counts its invocations down at its entry and takes
 * entry_slow (which here resumes the old code) when the count reaches 0; a
 * method whose send had feedback, or one compiled with tier-up off, has no
 * countdown. */
static void tier_up_countdown_takes_entry_slow(void **state)
{
    (void)state;
    seen.hook = answer_99;
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    Oop lits[] = { sel };
    /* caller  a: x  ^self plus: x */
    Oop caller = METHOD(1, 0, lits, BC_PUSH_SELF, BC_PUSH_ARG, 2, /* 3 */ BC_SEND, 0, 1, BC_RETURN_TOP);
    rt.tier_up_after = 3;
    JitMethod *jm = compile_ok(caller);
    int32_t *left = jit_compile_tier_counter(jm);
    assert_non_null(left);
    assert_int_equal(*left, 3);
    assert_int_equal(run(jm, I(5), 1, I(20)), I(99));
    assert_int_equal(run(jm, I(5), 1, I(20)), I(99));
    assert_int_equal(*left, 1);
    assert_int_equal(seen.entry_slow, 0);
    assert_int_equal(run(jm, I(5), 1, I(20)), I(99));
    assert_int_equal(*left, 0);
    assert_int_equal(seen.entry_slow, 1);
    assert_int_equal(seen.sends, 3);

    /* the site has feedback: inlined, nothing to wait for */
    Oop callee = METHOD0(1, 0, BC_PUSH_ARG, 2, BC_RETURN_TOP);
    inl.site = vm_method_bytecodes(caller) + 3;
    inl.class_index = CLASS_INDEX_ARRAY;
    inl.method = callee;
    JitMethod *fed = compile_ok(caller);
    assert_int_equal(jit_method_inline_scope_count(fed), 1);
    assert_null(jit_compile_tier_counter(fed));
    /* no sends at all, or tier-up off: no countdown */
    assert_null(jit_compile_tier_counter(compile_ok(METHOD0(0, 0, BC_PUSH_1, BC_RETURN_TOP))));
    memset(&inl, 0, sizeof inl);
    rt.tier_up_after = 0;
    assert_null(jit_compile_tier_counter(compile_ok(caller)));
}

/* A body turned off (jit_inline_disable: it deoptimized again and again)
 * sends for the guard's class too; turning it off twice is harmless. */
static void inlined_body_turned_off_sends(void **state)
{
    (void)state;
    seen.hook = answer_99;
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    Oop lits[] = { sel };
    Oop caller = METHOD(0, 0, lits, BC_PUSH_SELF, /* 1 */ BC_SEND, 0, 0, BC_RETURN_TOP);
    Oop rcvr = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    inl.site = vm_method_bytecodes(caller) + 1;
    inl.class_index = CLASS_INDEX_ARRAY;
    inl.method = METHOD0(0, 0, BC_PUSH_1, BC_RETURN_TOP);
    JitMethod *jm = compile_ok(caller);
    assert_int_equal(run(jm, rcvr, 0), I(1));
    assert_int_equal(seen.sends, 0);
    assert_true(jit_inline_disable(jm, 0));
    assert_int_equal(run(jm, rcvr, 0), I(99));
    assert_int_equal(seen.sends, 1);
    assert_true(jit_inline_disable(jm, 0));
    check_inline_tables(jm, caller);
    assert_int_equal(run(jm, rcvr, 0), I(99));
    assert_int_equal(seen.sends, 2);
}

/* No feedback, feedback of a callee that sends, one with a heap literal, or
 * with the wrong argument count: no inlining. */
static void other_sends_are_not_inlined(void **state)
{
    (void)state;
    seen.hook = answer_99;
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    Oop lits[] = { sel };
    Oop caller = METHOD(0, 0, lits, BC_PUSH_SELF, /* 1 */ BC_SEND, 0, 0, BC_RETURN_TOP);
    Oop rcvr = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    assert_int_equal(jit_method_inline_scope_count(compile_ok(caller)), 0); /* no feedback (a polymorphic site) */
    inl.site = vm_method_bytecodes(caller) + 1;
    inl.class_index = CLASS_INDEX_ARRAY;
    inl.method = METHOD(0, 0, lits, BC_PUSH_SELF, BC_SEND, 0, 0, BC_RETURN_TOP);
    assert_int_equal(jit_method_inline_scope_count(compile_ok(caller)), 0); /* a send in the callee */
    inl.method = METHOD(0, 0, lits, BC_PUSH_LITERAL, 0, BC_RETURN_TOP);
    assert_int_equal(jit_method_inline_scope_count(compile_ok(caller)), 0); /* a heap literal */
    inl.method = METHOD0(1, 0, BC_PUSH_ARG, 2, BC_RETURN_TOP);
    assert_int_equal(jit_method_inline_scope_count(compile_ok(caller)), 0); /* another argument count */
    /* a loop, which runs faster in the callee's own code:  [true] whileTrue: [] */
    inl.method = METHOD0(0, 0, BC_PUSH_TRUE, BC_JUMP_IF_FALSE, 3, 0, BC_JUMP_BACK, 7, 0, BC_RETURN_SELF);
    assert_int_equal(jit_method_inline_scope_count(compile_ok(caller)), 0);
    inl.method = METHOD0(0, 0, BC_PUSH_1, BC_RETURN_TOP);
    rt.inline_budget = 0;
    assert_int_equal(jit_method_inline_scope_count(compile_ok(caller)), 0); /* --no-inline */
    rt.inline_budget = 48;
    JitMethod *jm = compile_ok(caller);
    assert_int_equal(jit_method_inline_scope_count(jm), 1);
    assert_int_equal(run(jm, rcvr, 0), I(1));
    assert_int_equal(seen.sends, 0);
}

/* Each kind of deopt point leaves the callee's temps and operand stack as
 * the bytecodes have them there and continues where the generic send's
 * answer arrives. */
static void deopt_points_reach_the_continuation(void **state)
{
    (void)state;
    seen.hook = answer_99;
    Oop sel = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    Oop lits[] = { sel };
    Oop rcvr = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 2);
    /* caller  a: x  ^(self f: x) + 1000 */
    Oop thousand[] = { sel, I(1000) };
    Oop caller = METHOD(1, 0, thousand, BC_PUSH_SELF, BC_PUSH_ARG, 2, /* 3 */ BC_SEND, 0, 1, BC_PUSH_LITERAL, 1,
                        BC_SEND_ADD, BC_RETURN_TOP);
    inl.site = vm_method_bytecodes(caller) + 3;
    inl.class_index = CLASS_INDEX_ARRAY;
    inl.answer = I(5);

    /* overflow:  f: x  | t |  t := 7. ^x * 4  (SEND_MUL at 5) */
    inl.method = small_stack(METHOD0(1, 1, BC_PUSH_1, BC_POP_TEMP, 0, BC_PUSH_ARG, 2, BC_PUSH_1, BC_PUSH_1,
                                     BC_SEND_ADD, /* 8 */ BC_SEND_MUL, BC_RETURN_TOP));
    (void)lits;
    JitMethod *jm = compile_ok(caller);
    assert_int_equal(jit_method_inline_scope_count(jm), 1);
    check_inline_tables(jm, caller);
    assert_int_equal(run(jm, rcvr, 1, I(10)), I(1020));
    assert_int_equal(inl.deopts, 0);
    intptr_t big = ((intptr_t)1 << 61);
    assert_int_equal(run(jm, rcvr, 1, I(big)), I(1005));
    assert_int_equal(inl.deopts, 1);
    assert_int_equal(inl.bcpc, 8); /* the SEND_MUL */
    assert_int_equal(inl.words, 3);  /* the temp, x and 2 */
    assert_int_equal(inl.values[0], I(2));
    assert_int_equal(inl.values[1], I(big));
    assert_int_equal(inl.values[2], I(1));
    /* not a SmallInteger: at the SEND_ADD? no, at the SEND_MUL (x is the receiver) */
    assert_int_equal(run(jm, rcvr, 1, nil), I(1005));
    assert_int_equal(inl.bcpc, 8);
    assert_int_equal(seen.sends, 0);

    /* a non-Boolean condition:  f: x  x ifTrue: [^1]. ^2 */
    inl.method = METHOD0(1, 0, BC_PUSH_ARG, 2, /* 2 */ BC_JUMP_IF_FALSE, 2, 0, BC_PUSH_1, BC_RETURN_TOP, BC_PUSH_1,
                         BC_PUSH_1, BC_SEND_ADD, BC_RETURN_TOP);
    jm = compile_ok(caller);
    check_inline_tables(jm, caller);
    assert_int_equal(run(jm, rcvr, 1, tru), I(1001));
    assert_int_equal(run(jm, rcvr, 1, fals), I(1002));
    assert_int_equal(inl.deopts, 2);
    assert_int_equal(run(jm, rcvr, 1, I(3)), I(1005));
    assert_int_equal(inl.deopts, 3);
    assert_int_equal(inl.bcpc, 2);
    assert_int_equal(inl.words, 1);
    assert_int_equal(inl.values[0], I(3));

    /* a store that needs the barrier:  f: x  field0 := x. ^x */
    inl.method = METHOD0(1, 0, BC_PUSH_ARG, 2, /* 2 */ BC_POP_FIELD, 0, BC_PUSH_ARG, 2, BC_RETURN_TOP);
    jm = compile_ok(caller);
    assert_int_equal(run(jm, rcvr, 1, I(4)), I(1004));
    assert_int_equal(obj_slots(rcvr)[0], I(4));
    Oop young = gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    /* new old objects start remembered: stored inline; young + 1000 is a send */
    assert_int_equal(run(jm, rcvr, 1, young), I(99));
    assert_int_equal(inl.deopts, 3);
    obj_slots(rcvr)[0] = I(4);
    assert_true(gc_collect(false)); /* forgets rcvr (nothing young survives: no roots) */
    assert_false(obj_header(rcvr) & OBJ_GC_REMEMBERED);
    young = gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
    assert_true(gc_is_young(young));
    assert_int_equal(run(jm, rcvr, 1, young), I(1005));
    assert_int_equal(inl.deopts, 4);
    assert_int_equal(inl.bcpc, 2);
    assert_int_equal(obj_slots(rcvr)[0], I(4)); /* the interpreter stores it */

    /* the stress mode: every 2nd bytecode boundary deoptimizes */
    int64_t countdown = 2;
    rt.deopt_countdown = &countdown;
    inl.method = METHOD0(1, 0, BC_PUSH_ARG, 2, BC_PUSH_1, BC_SEND_ADD, BC_RETURN_TOP);
    jm = compile_ok(caller);
    check_inline_tables(jm, caller);
    int before = inl.deopts;
    assert_int_equal(run(jm, rcvr, 1, I(1)), I(1005));
    assert_int_equal(inl.deopts, before + 1);
    assert_int_equal(inl.bcpc, 2); /* the second bytecode */
    assert_int_equal(inl.words, 1);
    assert_int_equal(seen.sends, 1); /* young + 1000 above */
}

static void declines_with_a_reason(void **state)
{
    (void)state;
    static const struct { uint8_t code[4]; size_t len; const char *why; } cases[] = {
        { { BC_HALT }, 1, "HALT" },
        { { BC_PUSH_VAR, 0, BC_RETURN_TOP }, 3, "unquickened" },
        { { BC_JUMP, 9, 0, BC_RETURN_SELF }, 4, "leaves" },
        { { BC_PUSH_LITERAL, 3, BC_RETURN_TOP }, 3, "literal" },
        { { BC_SEND, 0 }, 2, "malformed" },
    };
    Oop lits[] = { nil };
    char why[200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Oop m = make_method_full(0, 0, lits, 1, cases[i].code, cases[i].len, false, 0);
        why[0] = 0;
        size_t before = jit_zone_free_start(&zone) - jit_zone_methods_base(&zone);
        assert_null(jit_compile(&zone, &rt, m, why, sizeof why));
        if (!strstr(why, cases[i].why)) fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why, cases[i].why);
        assert_int_equal(jit_zone_free_start(&zone) - jit_zone_methods_base(&zone), before); /* nothing allocated */
    }
    static const uint8_t ret[] = { BC_RETURN_SELF };
    assert_null(jit_compile(&zone, &rt, make_method_full(0, 0, lits, 1, ret, 1, false, 7), why, sizeof why));
    assert_non_null(strstr(why, "primitive"));
}

/* -- Compaction's relocation (vm/jit/relocate.h) ----------------------------------------- */

/* The test frees the piece it wants gone itself: the rest must stay. */
static bool keep(const JitMethod *m, void *ctx)
{
    (void)m, (void)ctx;
    return false;
}

static void forget(JitMethod *m, void *ctx) { (void)m, (void)ctx; }
static void moved(JitMethod *m, JitMethod *new_m, void *ctx) { (void)m, (void)new_m, (void)ctx; }

static void relocate_every_piece(void *ctx)
{
    uint64_t *unlinked = ctx;
    for (JitMethod *m = jit_zone_first(&zone); m; m = jit_zone_next(&zone, m)) {
        if (m->kind == JIT_KIND_TRAMPOLINE) continue;
        ptrdiff_t delta = (uint8_t *)jit_zone_forward(&zone, m) - (uint8_t *)m;
        *unlinked += jit_relocate_piece(&zone, m, delta, rt.send);
    }
}

/* The return addresses of jm's send sites, in bytecode order. */
static size_t send_sites(JitMethod *jm, uint8_t **ras, size_t cap)
{
    size_t n = 0;
    JitMapIter it;
    JitMapEntry e;
    jit_map_iter_init(&it, jit_method_map(jm));
    while (jit_map_iter_next(&it, &e))
        if (e.kind == JIT_MAP_SEND && n < cap) ras[n++] = jit_method_at(jm, e.mcpc);
    return n;
}

static void compaction_follows_moved_callees_and_unlinks_freed_ones(void **state)
{
    (void)state;
    /* ^ (self foo) bar: the caller stays where it is, the first callee is
     * freed, the second slides down into its place */
    Oop lits[] = { nil, nil };
    JitMethod *caller = compile_ok(METHOD(0, 0, lits, BC_PUSH_SELF, BC_SEND, 0, 0, BC_POP, BC_PUSH_SELF, BC_SEND, 1, 0,
                                          BC_RETURN_TOP));
    JitMethod *freed = compile_ok(METHOD0(0, 0, BC_RETURN_SELF));
    JitMethod *kept = compile_ok(METHOD0(0, 0, BC_RETURN_SELF));
    uint8_t *ras[2];
    assert_int_equal(send_sites(caller, ras, 2), 2);
    assert_true(jit_sendsite_write(ras[0], CLASS_INDEX_FIRST_FREE, jit_method_checked_entry(freed)));
    assert_true(jit_sendsite_write(ras[1], CLASS_INDEX_FIRST_FREE, jit_method_checked_entry(kept)));
    Oop kept_method = kept->method;
    size_t kept_entry = (size_t)(jit_method_checked_entry(kept) - (uint8_t *)kept);

    uint8_t *hole = (uint8_t *)freed;
    jit_zone_free(&zone, freed);
    uint64_t unlinked = 0;
    JitZoneRelocate cb = { .ctx = &unlinked, .can_free = keep, .on_free = forget, .on_move = moved,
                           .before_slide = relocate_every_piece };
    jit_zone_compact(&zone, &cb);

    assert_int_equal(unlinked, 1);
    assert_ptr_equal(jit_zone_find(&zone, ras[0]), caller); /* nothing was freed below it */
    JitSendSite s;
    assert_true(jit_sendsite_read(ras[0], &s));
    assert_ptr_equal(s.target, rt.send);
    assert_int_equal(s.tag, jit_sendsite_unlinked_tag(0, 0));
    assert_true(jit_sendsite_read(ras[1], &s));
    JitMethod *now = jit_zone_find(&zone, s.target);
    assert_non_null(now);
    assert_ptr_equal(now, hole); /* where the freed piece was */
    assert_int_equal(now->method, kept_method);
    assert_ptr_equal(s.target, (uint8_t *)now + kept_entry);
    assert_int_equal(s.tag, CLASS_INDEX_FIRST_FREE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(constants_and_self, reset),
        cmocka_unit_test_setup(entry_checks_room_on_the_page, reset),
        cmocka_unit_test_setup(blocks_take_self_from_their_closure, reset),
        cmocka_unit_test_setup(arithmetic_fast_paths_and_overflow_sends, reset),
        cmocka_unit_test_setup(comparisons_and_identity, reset),
        cmocka_unit_test_setup(other_special_sends_are_sends, reset),
        cmocka_unit_test_setup(integer_special_sends_match_the_c_cases, reset),
        cmocka_unit_test_setup(loop_with_fused_compare_and_safepoints, reset),
        cmocka_unit_test_setup(temps_and_arguments_store, reset),
        cmocka_unit_test_setup(fields_with_write_barrier, reset),
        cmocka_unit_test_setup(plain_send_reaches_the_runtime, reset),
        cmocka_unit_test_setup(conditional_jumps_and_must_be_boolean, reset),
        cmocka_unit_test_setup(simulated_stack_keeps_values_exact, reset),
        cmocka_unit_test_setup(double_chains_fit_their_bound, reset),
        cmocka_unit_test_setup(declines_with_a_reason, reset),
        cmocka_unit_test_setup(monomorphic_send_is_inlined, reset),
        cmocka_unit_test_setup(other_sends_are_not_inlined, reset),
        cmocka_unit_test_setup(inlined_body_turned_off_sends, reset),
        cmocka_unit_test_setup(tier_up_countdown_takes_entry_slow, reset),
        cmocka_unit_test_setup(deopt_points_reach_the_continuation, reset),
        /* last: it slides every piece the tests before it compiled */
        cmocka_unit_test_setup(compaction_follows_moved_callees_and_unlinks_freed_ones, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
