/*
 * vm/interp/interp.c — the bytecode interpreter: threaded dispatch (computed goto)
 * over vm/bytecode/bytecodes.h, sends through the global lookup cache, frames on
 * stack pages (vm/interp/stack.c), closures with non-local return.
 *
 * Safe points are sends and backward jumps: there, if the heap asked for a
 * collection, the registers are written back and gc_collect runs; the send
 * or jump is then re-dispatched from its first byte, so no Oop is held in a
 * C local across a collection.
 */

/* The interpreter's instruction pointer lives in r15 and its frame pointer
 * in r14 throughout this file (GCC global register variables, declared
 * before any function definition as GCC requires), and every other file of
 * the VM is compiled with -ffixed-r14 -ffixed-r15 (CMakeLists.txt), so at
 * any instruction of the VM's own code — the interpreter or the C it calls
 * — a profiler that samples the thread's registers reads the innermost
 * interpreted frame and the bytecode it runs, and walks every frame from
 * there (proto/stackabi.h). Frame switches keep that exact: r15 is 0
 * while r14 changes (the frame at r14 is then right and only its bytecode
 * unknown), r14 is set only once the new frame's header is written, and
 * both are 0 while frames are being unwound or copied (IP_CLEAR, FP_SET,
 * IP_SET, FRAMES_UNSTABLE). vm_interpret restores the caller's r14/r15. */
register unsigned char *ip asm("r15"); /* VM_INTERP_IP_PERF_REG in vm/interp/interp.h */
register unsigned long *vm_ifp asm("r14"); /* an Oop *; VM_INTERP_FP_PERF_REG in vm/interp/interp.h */

/* Ordered register writes: an asm statement each (volatile asm statements
 * keep their order), so no sample sees r14 before the frame it points at is
 * complete. Frames FP_SET points at are complete already (written before
 * a call, which orders them anyway); FP_SET_NEW is for the one just built. */
#define IP_CLEAR() __asm__ volatile("xorl %k0, %k0" : "=r"(ip))
#define IP_SET(v) __asm__ volatile("movq %1, %0" : "=r"(ip) : "r"(v))
#define FP_SET(v) __asm__ volatile("movq %1, %0" : "=r"(vm_ifp) : "r"(v))
/* A frame just built: the words a walker reads (saved fp and ip, method,
 * flags) are inputs, so their stores come first — without a "memory"
 * clobber, which would make the interpreter reload every global after
 * each send (+4.5% instructions on Richards --no-jit, callgrind). */
#define FP_SET_NEW(v)                                                                                  \
    __asm__ volatile("movq %1, %0"                                                                     \
                     : "=r"(vm_ifp)                                                                    \
                     : "r"(v), "m"((v)[FRAME_SAVED_FP]), "m"((v)[FRAME_SAVED_IP]), "m"((v)[FRAME_METHOD]), \
                       "m"((v)[FRAME_FLAGS]))
/* The interpreter's anchor (vm/jit/enter.h's prim_fp/prim_ip, proto/stackabi.h):
 * around a primitive's call, where r14/r15 stop being the walker's — the
 * primitive may call a library that uses them. Volatile stores keep their
 * order: ip first, so a walker that sees prim_fp sees its ip. */
#define PRIM_ANCHOR_SET()                                                     \
    do {                                                                      \
        *(volatile uint64_t *)&jit_cstate.prim_ip = (uint64_t)(uintptr_t)ip;  \
        *(volatile uint64_t *)&jit_cstate.prim_fp = (uint64_t)(uintptr_t)vm_ifp; \
    } while (0)
#define PRIM_ANCHOR_CLEAR() (*(volatile uint64_t *)&jit_cstate.prim_fp = 0)
#define FRAMES_UNSTABLE() \
    do {                  \
        IP_CLEAR();       \
        FP_SET((Oop *)0); \
    } while (0)

#include "vm/interp/interp.h"

#include "base/compiler.h"
#include "proto/stackabi.h"

#include "vm/interp/jitinterface.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/interp/probes.h"
#include "vm/interp/doublesites.h"
#include "vm/interp/sendcache.h"
#include "vm/interp/traceback.h"
#include "vm/interp/smallint.h"
#include "vm/interp/special.h"
#include "vm/interp/stack.h"
#include "vm/loader/loader.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/counter.h"
#include "vm/model/frame.h"
#include "vm/model/globals.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"
#include "vm/number/bigint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SPECIAL (BC_N_SPECIAL)

static Oop special_sel[N_SPECIAL];
static const int special_nargs[BC_COUNT] = {BC_SPECIAL_NARGS}; /* a constant for each SPECIAL_SEND */
static Oop sym_dnu, sym_unknown_global, sym_escaped_block, sym_must_be_boolean;
bool vm_array_at_is_prim, vm_array_at_put_is_prim, vm_array_length_is_prim;
bool vm_double_arith_is_prim;
static bool string_length_is_prim;
#define array_at_is_prim vm_array_at_is_prim
#define array_at_put_is_prim vm_array_at_put_is_prim
#define array_length_is_prim vm_array_length_is_prim

/* Registers as of the last write-back (GC roots, backtraces). */
static Oop *saved_sp, *saved_fp;
static size_t saved_bcpc;

_Static_assert(VM_JIT_CALLER_PUSHED_NOTHING == VM_FRAME_MAX(CALLER_NARGS), "jitinterface.h: the caller-nargs field's own value");

void vm_interp_set_saved_frame(Oop *sp, Oop *fp)
{
    saved_sp = sp;
    saved_fp = fp;
}

Oop *vm_interp_saved_fp(void) { return saved_fp; }

void vm_interp_visit_roots(GcVisitFn visit, void *ctx)
{
    for (int i = 0; i < N_SPECIAL; i++) visit(&special_sel[i], ctx);
    visit(&sym_dnu, ctx);
    visit(&sym_unknown_global, ctx);
    visit(&sym_escaped_block, ctx);
    visit(&sym_must_be_boolean, ctx);
    vm_stack_visit_roots(visit, ctx, saved_sp, saved_fp);
}

/* -- Backtraces and fatal errors ------------------------------------------ */

void vm_print_backtrace(FILE *out)
{
    if (saved_fp) vm_traceback_print_frames(out, saved_fp, saved_bcpc + 1, false);
}

/* Every runtime error ends here (vm/interp/traceback.h: one layout, on
 * stderr): the registers are written back. */
static _Noreturn void runtime_error(const char *msg)
{
    vm_traceback_report(stderr, saved_fp, saved_bcpc + 1, msg);
    vm_exit(1);
}

static int selector_arity(Oop sel)
{
    const uint8_t *s = obj_bytes(sel);
    size_t len = obj_byte_length(sel);
    if (len == 0) return 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return 1;
    int n = 0;
    for (size_t i = 0; i < len; i++) n += s[i] == ':';
    return n;
}

Oop vm_interp_special_selector(int bc)
{
    VM_ASSERT(bc >= BC_SEND_ADD && bc <= BC_SEND_LAST_SPECIAL && special_sel[bc - BC_SEND_ADD]);
    return special_sel[bc - BC_SEND_ADD];
}

Oop vm_interp_symbol_must_be_boolean(void)
{
    VM_ASSERT(sym_must_be_boolean);
    return sym_must_be_boolean;
}

static void init_symbols(void)
{
    for (int i = 0; i < N_SPECIAL; i++) special_sel[i] = vm_symbol_from_cstr(vm_special_selector[i]);
    sym_dnu = vm_symbol_from_cstr("doesNotUnderstand:arguments:");
    sym_unknown_global = vm_symbol_from_cstr("unknownGlobal:");
    sym_escaped_block = vm_symbol_from_cstr("escapedBlock:");
    sym_must_be_boolean = vm_symbol_from_cstr("mustBeBoolean");
}

/* Object>>=='s primitive index, 0 when Object has no primitive == */
static intptr_t object_identical_prim;
static Oop sym_identical;

static bool identical_is_primitive(uint32_t class_index)
{
    Oop m = vm_lookup_cached(class_index, sym_identical);
    return m && oop_int(obj_slots(m)[METHOD_PRIMITIVE]) == object_identical_prim;
}

/* Compiling a method that became hot in interpret(): a compaction walks the
 * frames from the one written back here (its WRITE_BACK) and relocates
 * *live_ra (a return address into machine code, or NULL). Inlined, so the
 * site costs no stores until it compiles. */
typedef struct CompileSite {
    Oop *sp, *frame;
    size_t bcpc;
    Oop *live_ra;
} CompileSite;

static inline __attribute__((always_inline)) intptr_t compile_here(Oop m, void *cx)
{
    const CompileSite *site = cx;
    saved_sp = site->sp;
    saved_fp = site->frame;
    saved_bcpc = site->bcpc;
    return vm_jit_hooks->compile(m, site->live_ra);
}

/* -- The interpreter ------------------------------------------------------- */

static Oop prim_args[260];

#define U16(p) ((unsigned)(p)[0] | ((unsigned)(p)[1] << 8))
#define HEADROOM (VM_STACK_HEADROOM_WORDS)

/* The interpreter alone in its section, with its cold paths after it
 * (INTERP_HELPER), so profilers know its bounds (__start_/__stop_ symbols the
 * linker makes for a section named like a C identifier). Without GCSE and
 * tree PRE, GCC 12 keeps fewer values live across the dispatch's indirect
 * jumps, so fewer spill and reload around every bytecode: callgrind,
 * --no-jit, 4 % fewer instructions on Richards and Fibonacci, 10 % on
 * Sieve. hot: GCC's guessed profile of a loop of computed gotos is
 * fragile; once the cold paths became calls (INTERP_HELPER), GCC 12 guessed
 * the loop ran almost never and stopped inlining in it (oop_double,
 * gc_store, vm_lookup_cached: +2 to +12 % instructions, callgrind,
 * --no-jit, NBody worst); hot makes every block of it worth inlining into,
 * whatever the guess. no_reorder: functions go into the section in the
 * order first declared, so interpret() comes first (vm/boot/boot.c
 * publishes the section's start as its address). */
#define INTERP_SECTION __attribute__((section("stvm_interp_text"), noinline, no_reorder, hot, optimize("no-gcse", "no-tree-pre")))
extern const char __start_stvm_interp_text[], __stop_stvm_interp_text[];

static Oop interpret(Oop receiver, Oop selector, Oop *args, int nargs0) INTERP_SECTION;

Oop vm_interpret(Oop receiver, Oop selector, Oop *args, int nargs0)
{
    /* r14/r15 are callee-saved for our caller: the interpreter owns them only inside */
    unsigned char *callers = ip;
    Oop *callers_fp = vm_ifp;
    Oop r = interpret(receiver, selector, args, nargs0);
    jit_cstate.mode = PROF_STATE_NONE;
    ip = callers;
    vm_ifp = callers_fp;
    return r;
}


uintptr_t vm_interp_code_start(void) { return (uintptr_t)__start_stvm_interp_text; }
uintptr_t vm_interp_code_end(void) { return (uintptr_t)__stop_stvm_interp_text; }

/* JitRegs.fp, which the macro below would rename */
static inline Oop *jregs_fp(const JitRegs *r) { return r->fp; }

#define fp vm_ifp /* interpret()'s frame pointer is r14 (above) */

/* -- Cold paths ------------------------------------------------------------ */

/* interpret()'s locals, as its cold paths (the helpers after it) read and
 * write them. A call copies in the frame's state and the machine-code send
 * (live throughout the loop anyway) and only those send fields that path
 * reads, and copies back what that path defines (GO below). Passing the
 * locals' addresses instead would keep them in memory throughout the loop,
 * and copying in a field that is dead at the call would keep it alive for
 * it: either costs the registers --no-jit's speed rests on. */
typedef struct InterpRegs {
    Oop *sp, *limit; /* the frame's state */
    Oop method;
    uint8_t *bytes;
    int nargs;
    Oop mc_retaddr; /* the send machine code asked for (see interpret()) */
    int mc_nargs;
    int n;          /* a send's argument count */
    Oop sel, m;     /* its selector; the method it runs */
    Oop result;     /* a return's or a primitive's answer */
    void *mc_target; /* NEXT_MACHINE_CODE's return address into machine code */
} InterpRegs;

/* Where interpret() continues after a cold path, and the fields (besides
 * the frame's state and the machine-code send) that path then defines. */
typedef enum InterpNext {
    NEXT_DISPATCH,       /* the bytecode at ip */
    NEXT_SEND,           /* n, sel: send sel to sp[n] */
    NEXT_DNU,            /* n, sel: sp[n] does not understand sel */
    NEXT_ACTIVATE,       /* n, m: run m for sp[n] */
    NEXT_ACTIVATE_BLOCK, /* n, m: run block method m, the closure at sp[n] */
    NEXT_PRIM_ANSWER,    /* n, result: the primitive send answers result */
    NEXT_RETURN,         /* result: the frame at fp returns it */
    NEXT_MACHINE_CODE,   /* mc_target, the caller's JitRegs: return into machine code */
    NEXT_EXIT,           /* result: interpret() answers it */
} InterpNext;

/* In the interpreter's section, so profilers count them as the interpreter,
 * and after interpret() in it (no_reorder: see INTERP_SECTION). Not cold:
 * GCC then lays out interpret() differently, and it measured 0.5-1.5 %
 * more instructions (callgrind, --no-jit, Fibonacci, Richards, DeltaBlue). */
#define INTERP_HELPER __attribute__((section("stvm_interp_text"), noinline, no_reorder))

static InterpNext from_machine_code(InterpRegs *r, JitStatus jst, const JitRegs *jregs) INTERP_HELPER;
static InterpNext return_across(InterpRegs *r, JitRegs *jregs, Oop *caller, Oop saved_ip) INTERP_HELPER;
static InterpNext deopt_activate(InterpRegs *r) INTERP_HELPER;
static InterpNext return_nonlocal(InterpRegs *r) INTERP_HELPER;
static InterpNext primitive_special(InterpRegs *r, const VmPrimEntry *e) INTERP_HELPER;
static InterpNext not_understood(InterpRegs *r) INTERP_HELPER;
static InterpNext global_missing(InterpRegs *r) INTERP_HELPER;
static InterpNext collect_garbage(InterpRegs *r) INTERP_HELPER;
static _Noreturn void primitive_failed(Oop *sp, const uint8_t *bytes) INTERP_HELPER;
static _Noreturn void wrong_arg_count(Oop *sp, const uint8_t *bytes, int n, int frame_kind, int expected) INTERP_HELPER;
static _Noreturn void too_deep(size_t depth) INTERP_HELPER;

/* The frame being activated does not fit: continue on a new page, taking
 * the receiver and n arguments along. Answers the new sp. */
static __attribute__((noinline)) Oop *overflow_page(Oop *fp, Oop *sp, int n, Oop **limit)
{
    /* The depth limit is checked here only, where a page fills (machine
     * code's prologue, too, hands a frame that does not fit to the
     * interpreter): a runaway recursion stops within a page of it, and
     * sends pay nothing. Here, not in interpret(): the check there cost
     * 2-3 % more instructions in its loop (callgrind, --no-jit, Fibonacci,
     * Richards, Towers), as GCC allocated its registers differently. */
    size_t depth = vm_stack_depth(fp);
    if (BASE_UNLIKELY(depth >= vm_options.max_stack_depth)) {
        /* WRITE_BACK's, from the frame: ip (r15) is its resume point */
        Oop m = fp[FRAME_METHOD];
        saved_sp = sp;
        saved_fp = fp;
        saved_bcpc = (size_t)(ip - (uint8_t *)(obj_slots(m) + vm_method_pointer_slots(m)));
        too_deep(depth);
    }
    Oop save[260];
    for (int i = 0; i <= n; i++) save[i] = sp[i];
    StackPage *np = vm_stack_overflow(fp, sp + n + 1, depth);
    *limit = np->base + VM_STACK_HEADROOM_WORDS;
    sp = np->top - (n + 1);
    for (int i = 0; i <= n; i++) sp[i] = save[i];
    return sp;
}

static Oop interpret(Oop receiver, Oop selector, Oop *args, int nargs0)
{
    static const void *const dispatch[BC_COUNT] = {
#define BC_LABEL(name, len, eff, mapped, ops, sel, sargs) [BC_##name] = &&op_##name,
        BYTECODE_LIST(BC_LABEL)
#undef BC_LABEL
    };
    /* no_reorder keeps this true (INTERP_SECTION; vm/boot/boot.c relies on it) */
    VM_ASSERT((uintptr_t)interpret == (uintptr_t)__start_stvm_interp_text);
    init_symbols();
    sym_identical = vm_symbol_from_cstr("==");
    object_identical_prim = 0;
    if (vm_special_is_own_prim(CLASS_INDEX_OBJECT, "Object", "==")) {
        Oop m = vm_lookup(vm_class_table[CLASS_INDEX_OBJECT], sym_identical);
        object_identical_prim = oop_int(obj_slots(m)[METHOD_PRIMITIVE]);
    }
    array_at_is_prim = vm_special_is_own_prim(CLASS_INDEX_ARRAY, "Array", "at:");
    array_at_put_is_prim = vm_special_is_own_prim(CLASS_INDEX_ARRAY, "Array", "at:put:");
    array_length_is_prim = vm_special_is_own_prim(CLASS_INDEX_ARRAY, "Array", "length");
    string_length_is_prim = vm_special_is_own_prim(CLASS_INDEX_STRING, "String", "length");
    vm_special_init();
    vm_double_arith_is_prim = true;
    for (const char *const *sel = (const char *const[]){ "+", "-", "*", "<", "=", NULL }; *sel; sel++)
        vm_double_arith_is_prim = vm_double_arith_is_prim && vm_special_is_own_prim(CLASS_INDEX_DOUBLE, "Double", *sel);

    StackPage *first = vm_stack_first_page();
    Oop *limit = first->base + HEADROOM;
    Oop *sp = first->top;
    uint8_t *bytes = NULL;
    FRAMES_UNSTABLE();
    jit_cstate.interp_bp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    jit_cstate.mode = PROF_STATE_INTERP;
    Oop method = 0;
    int nargs = 0;

    Oop sel, m, result, rcvr, self_value;
    int n, frame_kind;
    /* Non-zero while the interpreter performs a send for machine code: the
     * return address into it, which becomes the callee's fp[1]. */
    Oop mc_retaddr = 0;
    int mc_nargs = 0; /* the argument count machine code pushed for that send */
    JitRegs jregs;
    JitStatus jst;
    JitMethod *jm = NULL;
    VmSendCacheEntry *sce = NULL;
    /* what a send-site cache hit does, by the entry's kind */
    static const void *const site_kind[] = {
        [SENDCACHE_METHOD] = &&site_method,
        [SENDCACHE_PRIM] = &&primitive,
        [SENDCACHE_GETTER] = &&site_getter,
        [SENDCACHE_SETTER] = &&site_setter,
        [SENDCACHE_CONST] = &&site_const,
        [SENDCACHE_BLOCK_VALUE] = &&site_block_value,
        [SENDCACHE_PRIM_FN] = &&site_prim_fn,
    };
    bool passed_safepoint = false;

    *--sp = receiver;
    for (int i = 0; i < nargs0; i++) *--sp = args[i];
    sel = selector;
    n = nargs0;
    goto send;

#define DISPATCH() goto *dispatch[*ip]
/* A collection re-dispatches the bytecode that asked for it; that one may
 * then pass (under --gc-stress the flag never clears). */
#define SAFEPOINT_CHECK()                                 \
    do {                                                  \
        if (BASE_UNLIKELY(gc_collect_wanted)) {                \
            if (!passed_safepoint) goto safepoint;        \
            passed_safepoint = false;                     \
        }                                                 \
    } while (0)
#define WRITE_BACK() (saved_sp = sp, saved_fp = fp, saved_bcpc = (size_t)(ip - bytes))
#define LOAD_METHOD()                                                  \
    do {                                                               \
        method = fp[FRAME_METHOD];                                     \
        bytes = (uint8_t *)(obj_slots(method) + vm_method_pointer_slots(method)); \
        nargs = frame_nargs(fp);                                       \
    } while (0)
#define VAR(v) (*((v) < nargs ? fp + 1 + nargs - (v) : fp + FRAME_FIRST_TEMP - ((v) - nargs)))
#define SELF (fp[FRAME_RECEIVER])
/* temp t, fp[FRAME_FIRST_TEMP - t]: a negated index, which saves the
 * sign extension of an int subtraction (callgrind: -1 instruction) */
#define TEMP(t) ((fp + FRAME_FIRST_TEMP)[-(intptr_t)(t)])
/* the method's literals: derived, not a variable, so it needs no register */
#define LITS (obj_slots(method) + METHOD_FIXED_SLOTS)
/* A cold path's call: InterpRegs r = {COLD_IN, what else it reads};
 * GO(r, helper(&r)) copies back what it defined and continues there. */
#define COLD_IN                                                                                         \
    .sp = sp, .limit = limit, .method = method, .bytes = bytes, .nargs = nargs, .mc_retaddr = mc_retaddr, \
    .mc_nargs = mc_nargs
#define GO(r, next)                                                                                   \
    do {                                                                                              \
        InterpNext go_next = (next);                                                                  \
        sp = (r).sp;                                                                                  \
        limit = (r).limit;                                                                            \
        method = (r).method;                                                                          \
        bytes = (r).bytes;                                                                            \
        nargs = (r).nargs;                                                                            \
        mc_retaddr = (r).mc_retaddr;                                                                  \
        mc_nargs = (r).mc_nargs;                                                                      \
        switch (go_next) {                                                                            \
        case NEXT_DISPATCH: DISPATCH();                                                               \
        case NEXT_SEND: n = (r).n; sel = (r).sel; goto send;                                          \
        case NEXT_DNU: n = (r).n; sel = (r).sel; goto dnu;                                            \
        case NEXT_ACTIVATE: n = (r).n; m = (r).m; goto activate;                                      \
        case NEXT_ACTIVATE_BLOCK: n = (r).n; m = (r).m; goto activate_block;                          \
        case NEXT_PRIM_ANSWER: n = (r).n; result = (r).result; goto prim_answer;                      \
        case NEXT_RETURN: result = (r).result; goto do_return;                                        \
        case NEXT_MACHINE_CODE: jst = vm_jit_enter.return_to(&jregs, (r).mc_target); goto machine_code_status; \
        case NEXT_EXIT: return (r).result;                                                            \
        }                                                                                             \
        __builtin_unreachable();                                                                      \
    } while (0)

op_HALT:
    WRITE_BACK();
    runtime_error("HALT bytecode reached");

op_DUP:
    sp--;
    sp[0] = sp[1];
    ip += 1;
    DISPATCH();

op_POP:
    sp++;
    ip += 1;
    DISPATCH();

op_PUSH_VAR:
    *--sp = VAR(ip[1]);
    ip += 2;
    DISPATCH();

op_PUSH_ARG:
    *--sp = fp[ip[1]];
    ip += 2;
    DISPATCH();

op_STORE_ARG:
    fp[ip[1]] = *sp;
    ip += 2;
    DISPATCH();

op_POP_ARG:
    fp[ip[1]] = *sp++;
    ip += 2;
    DISPATCH();

op_PUSH_TEMP:
    *--sp = TEMP(ip[1]);
    ip += 2;
    DISPATCH();

op_STORE_TEMP:
    TEMP(ip[1]) = *sp;
    ip += 2;
    DISPATCH();

op_POP_TEMP:
    TEMP(ip[1]) = *sp++;
    ip += 2;
    DISPATCH();

op_PUSH_OUTER : {
    Oop ctx;
    Oop *var = vm_outer_var(fp, ip[2], ip[1], &ctx);
    *--sp = var ? *var : obj_slots(ctx)[CTX_FIRST_VAR + ip[1]];
    ip += 3;
    DISPATCH();
}

op_PUSH_FIELD:
    *--sp = obj_slots(SELF)[ip[1]];
    ip += 2;
    DISPATCH();

op_PUSH_SELF:
    *--sp = SELF;
    ip += 1;
    DISPATCH();

op_PUSH_NIL:
    *--sp = vm_nil;
    ip += 1;
    DISPATCH();

op_PUSH_TRUE:
    *--sp = vm_true;
    ip += 1;
    DISPATCH();

op_PUSH_FALSE:
    *--sp = vm_false;
    ip += 1;
    DISPATCH();

op_PUSH_0:
    *--sp = oop_from_int(0);
    ip += 1;
    DISPATCH();

op_PUSH_1:
    *--sp = oop_from_int(1);
    ip += 1;
    DISPATCH();

op_PUSH_LITERAL:
    *--sp = LITS[ip[1]];
    ip += 2;
    DISPATCH();

op_PUSH_LITERAL_W:
    *--sp = LITS[U16(ip + 1)];
    ip += 3;
    DISPATCH();

op_PUSH_GLOBAL:
    sel = LITS[ip[1]];
    ip += 2;
    goto push_global;
op_PUSH_GLOBAL_W:
    sel = LITS[U16(ip + 1)];
    ip += 3;
push_global : {
    Oop v = vm_global_get(sel);
    if (BASE_LIKELY(v != 0)) {
        *--sp = v;
        DISPATCH();
    }
    InterpRegs r = {COLD_IN, .sel = sel};
    GO(r, global_missing(&r));
}

op_PUSH_BLOCK:
    m = LITS[ip[1]];
    ip += 2;
    goto push_block;
op_PUSH_BLOCK_W:
    m = LITS[U16(ip + 1)];
    ip += 3;
push_block : {
    Oop closure = vm_block_new(fp, m);
    *--sp = closure;
    DISPATCH();
}

op_STORE_VAR:
    VAR(ip[1]) = *sp;
    ip += 2;
    DISPATCH();

op_POP_VAR:
    VAR(ip[1]) = *sp++;
    ip += 2;
    DISPATCH();

op_STORE_OUTER:
op_POP_OUTER : {
    Oop ctx;
    Oop *var = vm_outer_var(fp, ip[2], ip[1], &ctx);
    if (var)
        *var = *sp;
    else
        gc_store(ctx, CTX_FIRST_VAR + (size_t)ip[1], *sp);
    if (*ip == BC_POP_OUTER) sp++;
    ip += 3;
    DISPATCH();
}

op_STORE_FIELD:
    gc_store(SELF, ip[1], *sp);
    ip += 2;
    DISPATCH();

op_POP_FIELD:
    gc_store(SELF, ip[1], *sp++);
    ip += 2;
    DISPATCH();

    /* -- Sends ----------------------------------------------------------- */

/* A send the interpreter's own bytecode makes (never one machine code asks
 * for: those come in at send:) probes the site's cache entry
 * (vm/interp/sendcache.h); a trivial method found there runs without a frame,
 * as machine code's inlined ones do: a profiler sample then shows the
 * sender. Traced activations take the frame, whose probes fire. */
#define SITE_SEND(LEN, SEL, NARGS)                                               \
    do {                                                                         \
        SAFEPOINT_CHECK();                                                       \
        n = (NARGS);                                                             \
        rcvr = sp[n];                                                            \
        uint32_t ci = vm_class_index_of(rcvr);                                   \
        sce = vm_sendcache_entry(ip);                                            \
        if (BASE_UNLIKELY(sce->site != ip || sce->class_index != ci)) {               \
            sel = (SEL);                                                         \
            m = vm_lookup_cached(ci, sel);                                       \
            if (BASE_UNLIKELY(!m)) {                                                  \
                ip += (LEN);                                                     \
                goto dnu;                                                        \
            }                                                                    \
            if (sce->site == ip && ++sce->misses % VM_SENDCACHE_REFILL_EVERY) {  \
                ip += (LEN);                                                     \
                goto activate;                                                   \
            }                                                                    \
            vm_sendcache_fill(sce, ip, ci, m, n);                                \
        }                                                                        \
        ip += (LEN);                                                             \
        m = sce->method;                                                         \
        goto *site_kind[sce->kind];                                              \
    } while (0)

op_SEND:
    SITE_SEND(3, LITS[ip[1]], ip[2]);

op_SEND_W:
    SITE_SEND(4, LITS[U16(ip + 1)], ip[3]);

/* push_frame's common case with the header decoded at fill time: no
 * machine code to consider, the frame fits on this page, the argument
 * count checked, and no machine-code caller to record */
site_method : {
    if (BASE_UNLIKELY(vm_jit_enabled || sp - sce->frame_words < limit)) goto activate_method;
    sp[-1] = oop_from_int(ip - bytes);
    sp[-2] = (Oop)fp;
    Oop *nfp = sp - 2;
    nfp[FRAME_METHOD] = m;
    nfp[FRAME_CONTEXT] = vm_nil;
    nfp[FRAME_FLAGS] = sce->value;
    nfp[FRAME_RECEIVER] = rcvr;
    IP_CLEAR(); /* the header is complete: only now may r14 point at it */
    FP_SET_NEW(nfp);
    sp = fp + FRAME_RECEIVER;
    for (int t = sce->field; t > 0; t--) *--sp = vm_nil;
    method = m;
    nargs = n;
    bytes = (uint8_t *)obj_slots(m) + sce->bytecodes;
    IP_SET(bytes);
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) {
        fp[FRAME_FLAGS] = oop_from_int(frame_flags(fp) | FRAME_FLAG_TRACED);
        VM_PROBE_METHOD_ENTRY(method, 0);
    }
    DISPATCH();
}

/* primitive:'s SP_NONE case without the table lookup. A failing primitive
 * has no side effects: the general path runs it again and reports it.
 * Traced, the general path also fires the probes. */
site_prim_fn : {
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) goto primitive;
    Oop *a = prim_args;
    a[0] = sp[n];
    for (int i = 1; i <= n; i++) a[i] = sp[n - i];
    PRIM_ANCHOR_SET();
    bool ok = ((VmPrimFn)sce->prim_fn)(a, &result);
    PRIM_ANCHOR_CLEAR();
    if (BASE_LIKELY(ok)) {
        sp += n;
        *sp = result;
        DISPATCH();
    }
    goto primitive;
}

site_block_value:
    m = obj_slots(sp[n])[BLOCK_METHOD];
    goto activate_block;

site_getter:
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) goto activate_method;
    result = obj_slots(sp[n])[sce->field];
    sp += n;
    *sp = result;
    DISPATCH();

site_setter:
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) goto activate_method;
    gc_store(sp[1], sce->field, sp[0]);
    sp += 1; /* self, the receiver, is the answer */
    DISPATCH();

site_const:
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) goto activate_method;
    result = sce->value ? sce->value : sp[n];
    sp += n;
    *sp = result;
    DISPATCH();

op_SUPER_SEND:
    SAFEPOINT_CHECK();
    sel = LITS[ip[1]];
    n = ip[2];
    ip += 3;
    goto super_send;

op_SUPER_SEND_W:
    SAFEPOINT_CHECK();
    sel = LITS[U16(ip + 1)];
    n = ip[3];
    ip += 4;
super_send : {
    Oop super = vm_class_superclass(obj_slots(method)[METHOD_HOLDER]);
    if (super == vm_nil) goto dnu;
    m = vm_lookup_cached(vm_class_instance_index(super), sel);
    if (BASE_UNLIKELY(!m)) goto dnu;
    goto activate;
}

#define INT_PRIM(op) vm_int_special_is_prim(op)
#define SPECIAL_SEND(op) SITE_SEND(1, special_sel[(op) - BC_SEND_ADD], special_nargs[(op) - BC_SEND_ADD])

/* Double receiver and argument (for + - *, a SmallInteger argument too, as
 * the primitive coerces it), while Double's methods are the primitives:
 * the IEEE result, an immediate or (out of its range) boxed in eden by the
 * inline allocator. Comparisons with
 * Integers are exact in the primitive (vm_num_compare): those take the send. */
#define DOUBLE_OPERANDS(INT_ARG_OK)                                                                   \
    (vm_double_arith_is_prim && vm_is_double(a) &&                                        \
     ((vm_is_double(b) && (y = oop_double(b), true)) ||                                   \
      ((INT_ARG_OK) && oop_is_int(b) && (y = (double)oop_int(b), true))))
#define DOUBLE_ARITH(OP)                                                 \
    do {                                                                 \
        double y;                                                        \
        if (DOUBLE_OPERANDS(true)) {                                     \
            double r = oop_double(a) OP y;                               \
            Oop d = oop_float_encode(r);                                 \
            if (BASE_UNLIKELY(!d)) {                                          \
                d = gc_alloc_fast(CLASS_INDEX_DOUBLE, FMT_WORDS, 1);     \
                if (d) memcpy(obj_slots(d), &r, sizeof r);               \
            }                                                            \
            if (BASE_LIKELY(d != 0)) {                                        \
                vm_double_site_note(ip); /* the JIT's hint */            \
                *++sp = d;                                               \
                ip += 1;                                                 \
                DISPATCH();                                              \
            }                                                            \
        }                                                                \
    } while (0)
#define DOUBLE_COMPARE(OP)                                               \
    do {                                                                 \
        double y;                                                        \
        if (DOUBLE_OPERANDS(false)) {                                    \
            *++sp = oop_double(a) OP y ? vm_true : vm_false;             \
            ip += 1;                                                     \
            DISPATCH();                                                  \
        }                                                                \
    } while (0)

op_SEND_ADD : {
    Oop a = sp[1], b = sp[0];
    intptr_t r;
    if (BASE_LIKELY(oop_is_int(a & b)) && INT_PRIM(BC_SEND_ADD) &&
        !__builtin_add_overflow((intptr_t)a, (intptr_t)(b - 1), &r)) {
        *++sp = (Oop)r;
        ip += 1;
        DISPATCH();
    }
    DOUBLE_ARITH(+);
    SPECIAL_SEND(BC_SEND_ADD);
}

op_SEND_SUB : {
    Oop a = sp[1], b = sp[0];
    intptr_t r;
    if (BASE_LIKELY(oop_is_int(a & b)) && INT_PRIM(BC_SEND_SUB) &&
        !__builtin_sub_overflow((intptr_t)a, (intptr_t)(b - 1), &r)) {
        *++sp = (Oop)r;
        ip += 1;
        DISPATCH();
    }
    DOUBLE_ARITH(-);
    SPECIAL_SEND(BC_SEND_SUB);
}

op_SEND_MUL : {
    Oop a = sp[1], b = sp[0];
    intptr_t r;
    if (BASE_LIKELY(oop_is_int(a & b)) && INT_PRIM(BC_SEND_MUL) &&
        !__builtin_mul_overflow(oop_int(a), (intptr_t)(b - 1), &r)) {
        *++sp = (Oop)r | 1;
        ip += 1;
        DISPATCH();
    }
    DOUBLE_ARITH(*);
    SPECIAL_SEND(BC_SEND_MUL);
}

/* SmallInteger comparisons; when a conditional jump follows (loop tests,
 * inlined ifTrue:), branch at once instead of pushing a Boolean. */
#define COMPARE_OP(NAME, OP)                                           \
    op_##NAME : {                                                      \
        Oop a = sp[1], b = sp[0];                                      \
        if (BASE_LIKELY(oop_is_int(a & b)) && INT_PRIM(BC_##NAME)) {        \
            bool c = (intptr_t)a OP(intptr_t) b;                       \
            if (ip[1] == BC_JUMP_IF_FALSE) {                           \
                sp += 2;                                               \
                ip += c ? 4 : 4 + U16(ip + 2);                         \
                DISPATCH();                                            \
            }                                                          \
            if (ip[1] == BC_JUMP_IF_TRUE) {                            \
                sp += 2;                                               \
                ip += c ? 4 + U16(ip + 2) : 4;                         \
                DISPATCH();                                            \
            }                                                          \
            *++sp = c ? vm_true : vm_false;                            \
            ip += 1;                                                   \
            DISPATCH();                                                \
        }                                                              \
        if (BC_##NAME == BC_SEND_LT) DOUBLE_COMPARE(<);                \
        if (BC_##NAME == BC_SEND_EQ) DOUBLE_COMPARE(==);               \
        SPECIAL_SEND(BC_##NAME);                                       \
    }
    COMPARE_OP(SEND_LT, <)
    COMPARE_OP(SEND_GT, >)
    COMPARE_OP(SEND_LE, <=)
    COMPARE_OP(SEND_GE, >=)
    COMPARE_OP(SEND_EQ, ==)
    COMPARE_OP(SEND_NE, !=)
    COMPARE_OP(SEND_NOT_EQUAL, !=)

op_SEND_IDENTICAL : {
    Oop a = sp[1], b = sp[0];
    if (a == b && (!oop_is_int(a) || INT_PRIM(BC_SEND_IDENTICAL))) {
        *++sp = vm_true;
        ip += 1;
        DISPATCH();
    }
    /* Two different SmallIntegers are unequal without a send, and so is a
     * receiver whose == is still Object's primitive; Integer == is value
     * equality (boxed numbers need the real send), and any other class may
     * define its own == (tests/lang/classes/IdentityOverride.som): that takes the
     * send, as in machine code. `x == nil` stays a cache probe. */
    if ((oop_is_int(a & b) && INT_PRIM(BC_SEND_IDENTICAL)) ||
        (oop_is_ptr(a) && !vm_is_large_int(a) && !vm_is_double(a) && object_identical_prim &&
         identical_is_primitive(obj_class_index(a)))) {
        *++sp = vm_false;
        ip += 1;
        DISPATCH();
    }
    SPECIAL_SEND(BC_SEND_IDENTICAL);
}

op_SEND_AT : {
    Oop a = sp[1], i = sp[0];
    if (BASE_LIKELY(oop_is_ptr(a) && obj_class_index(a) == CLASS_INDEX_ARRAY && oop_is_int(i) && array_at_is_prim)) {
        intptr_t k = oop_int(i);
        if (k >= 1 && (size_t)k <= obj_num_slots(a)) {
            *++sp = obj_slots(a)[k - 1];
            ip += 1;
            DISPATCH();
        }
    }
    SPECIAL_SEND(BC_SEND_AT);
}

op_SEND_AT_PUT : {
    Oop a = sp[2], i = sp[1];
    if (BASE_LIKELY(oop_is_ptr(a) && obj_class_index(a) == CLASS_INDEX_ARRAY && oop_is_int(i) && array_at_put_is_prim)) {
        intptr_t k = oop_int(i);
        if (k >= 1 && (size_t)k <= obj_num_slots(a)) {
            Oop v = sp[0];
            gc_store(a, (size_t)k - 1, v);
            sp += 2;
            *sp = v;
            ip += 1;
            DISPATCH();
        }
    }
    SPECIAL_SEND(BC_SEND_AT_PUT);
}

op_SEND_VALUE:
    SPECIAL_SEND(BC_SEND_VALUE);
op_SEND_VALUE1:
    SPECIAL_SEND(BC_SEND_VALUE1);

op_SEND_LENGTH : {
    Oop a = sp[0];
    if (oop_is_ptr(a)) {
        uint32_t ci = obj_class_index(a);
        if (ci == CLASS_INDEX_ARRAY && array_length_is_prim) {
            *sp = oop_from_int((intptr_t)obj_num_slots(a));
            ip += 1;
            DISPATCH();
        }
        if (ci == CLASS_INDEX_STRING && string_length_is_prim) {
            *sp = oop_from_int((intptr_t)obj_byte_length(a));
            ip += 1;
            DISPATCH();
        }
    }
    SPECIAL_SEND(BC_SEND_LENGTH);
}

/* SmallInteger receiver and argument, Integer's method the primitive:
 * EXPR sets intptr_t r from x and y and is true, or the send does it. */
#define INT_BINARY(NAME, EXPR)                                       \
    op_##NAME : {                                                    \
        Oop a = sp[1], b = sp[0];                                    \
        if (BASE_LIKELY(oop_is_int(a & b)) && INT_PRIM(BC_##NAME)) {      \
            intptr_t x = oop_int(a), y = oop_int(b), r;              \
            if (BASE_LIKELY(EXPR)) {                                      \
                *++sp = oop_from_int(r);                             \
                ip += 1;                                             \
                DISPATCH();                                          \
            }                                                        \
        }                                                            \
        SPECIAL_SEND(BC_##NAME);                                     \
    }
    INT_BINARY(SEND_BIT_AND, (r = x & y, true))
    INT_BINARY(SEND_BIT_XOR, (r = x ^ y, true))
    INT_BINARY(SEND_SHIFT_LEFT, vm_int_shift_left_small(x, y, &r))
    INT_BINARY(SEND_SHIFT_RIGHT, vm_int_shift_right_small(x, y, &r))
    INT_BINARY(SEND_DIV, vm_int_div_small(x, y, &r))
    INT_BINARY(SEND_MOD, vm_int_mod_small(x, y, &r))
    INT_BINARY(SEND_REM, vm_int_rem_small(x, y, &r))
    INT_BINARY(SEND_MAX, (r = x < y ? y : x, true))
    INT_BINARY(SEND_MIN, (r = x > y ? y : x, true))

op_SEND_ABS : {
    Oop a = sp[0];
    intptr_t r;
    if (BASE_LIKELY(oop_is_int(a)) && INT_PRIM(BC_SEND_ABS) &&
        (oop_int(a) >= 0 ? (r = oop_int(a), true) : vm_int_negated_small(oop_int(a), &r))) {
        *sp = oop_from_int(r);
        ip += 1;
        DISPATCH();
    }
    SPECIAL_SEND(BC_SEND_ABS);
}

op_SEND_NEGATED : {
    Oop a = sp[0];
    intptr_t r;
    if (BASE_LIKELY(oop_is_int(a)) && INT_PRIM(BC_SEND_NEGATED) && vm_int_negated_small(oop_int(a), &r)) {
        *sp = oop_from_int(r);
        ip += 1;
        DISPATCH();
    }
    SPECIAL_SEND(BC_SEND_NEGATED);
}

/* Any receiver: the constant its class's isNil / notNil answers (Object's
 * `^false`, Nil's `^true`), else the send (a class may compute it). */
op_SEND_IS_NIL:
op_SEND_NOT_NIL : {
    /* first the per-class answer the lookups filled in (vm/interp/special.h) */
    uint32_t ci = vm_class_index_of(sp[0]);
    unsigned which = (unsigned)(*ip - BC_SEND_IS_NIL);
    if (BASE_LIKELY(ci < VM_SPECIAL_NIL_TABLE_CLASSES) && (vm_special_nil_table[ci] & VM_SPECIAL_NIL_KNOWN(which))) {
        *sp = (vm_special_nil_table[ci] & VM_SPECIAL_NIL_TRUE(which)) ? vm_true : vm_false;
        ip += 1;
        DISPATCH();
    }
    Oop k = vm_lookup_cached(ci, special_sel[*ip - BC_SEND_ADD]);
    k = k ? vm_special_constant(k) : 0;
    if (BASE_LIKELY(k != 0)) {
        *sp = k;
        ip += 1;
        DISPATCH();
    }
    SPECIAL_SEND(*ip);
}

send:
    rcvr = sp[n];
    m = vm_lookup_cached(vm_class_index_of(rcvr), sel);
    if (BASE_UNLIKELY(!m)) goto dnu;

activate:
    if (obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0)) goto primitive;
activate_method : {
    if (vm_jit_enabled) {
        intptr_t cv = vm_counter_count_run(m, vm_jit_threshold, compile_here,
                                           &(CompileSite){sp, fp, (size_t)(ip - bytes), &mc_retaddr});
        if (vm_counter_is_code(cv) && fp && !VM_PROBE_METHODS_TRACED()) { /* traced: see profiler/usdt.h */
            intptr_t hdr = vm_method_hdr(m);
            int need = FRAME_HEADER_WORDS + (int)VM_MHDR_GET(hdr, NTEMPS) + (int)VM_MHDR_GET(hdr, MAX_STACK) + 1;
            /* machine code never changes pages: run it only where its frame fits */
            /* a send rewritten on the way (DNU, perform:) runs interpreted: only
             * the interpreter can return to machine code with the caller's
             * original argument count */
            if (VM_MHDR_GET(hdr, NARGS) == n && sp - need >= limit && (!mc_retaddr || n == mc_nargs) &&
                VM_FRAME_FITS(BCPC, ip - bytes) /* the resume bcpc must fit its flags field */) {
                jm = vm_counter_code(cv);
                goto enter_machine_code;
            }
        }
    }
    self_value = sp[n];
    frame_kind = 0;
    goto push_frame;
}

enter_machine_code:
    if (mc_retaddr) {
        /* machine code sent this: its return address goes back on the stack */
        *--sp = mc_retaddr;
        mc_retaddr = 0;
        jregs = (JitRegs){sp, fp, 0};
        jst = vm_jit_enter.return_to(&jregs, vm_jit_unchecked_entry(jm));
    } else {
        fp[FRAME_FLAGS] = oop_from_int(frame_flags(fp) | VM_FRAME_PUT(PENDING_NARGS, n) | VM_FRAME_PUT(BCPC, ip - bytes));
        jregs = (JitRegs){sp, fp, 0};
        jst = vm_jit_enter.enter(&jregs, vm_jit_unchecked_entry(jm));
    }

machine_code_status : {
    InterpRegs r = {COLD_IN};
    GO(r, from_machine_code(&r, jst, &jregs));
}

prim_answer:
    /* a primitive's answer: to machine code, or onto the stack */
    if (mc_retaddr) {
        Oop ra = mc_retaddr;
        mc_retaddr = 0;
        /* as machine code's own `ret` would leave it: its n args above the receiver */
        jregs = (JitRegs){sp + n - mc_nargs, fp, result};
        jst = vm_jit_enter.return_to(&jregs, (void *)ra);
        goto machine_code_status;
    }
    sp += n;
    *sp = result;
    DISPATCH();

activate_block:
    /* m = block method, the closure is the receiver slot sp[n] */
    self_value = obj_slots(sp[n])[BLOCK_RECEIVER];
    frame_kind = 1;

push_frame : {
    intptr_t hdr = vm_method_hdr(m);
    int mnargs = (int)VM_MHDR_GET(hdr, NARGS), ntemps = (int)VM_MHDR_GET(hdr, NTEMPS), maxs = (int)VM_MHDR_GET(hdr, MAX_STACK);
    Oop *link = fp;
    if (BASE_UNLIKELY(mnargs != n)) wrong_arg_count(sp, bytes, n, frame_kind, mnargs);
    if (BASE_UNLIKELY(sp - (FRAME_HEADER_WORDS + ntemps + maxs) < limit)) {
        Oop *nlimit;
        sp = overflow_page(fp, sp, n, &nlimit);
        limit = nlimit;
        link = NULL;
    }
    intptr_t caller_nargs = mc_retaddr ? VM_FRAME_PUT(CALLER_NARGS, mc_nargs & VM_FRAME_MAX(CALLER_NARGS)) : 0;
    sp[-1] = mc_retaddr ? mc_retaddr : oop_from_int(ip - bytes);
    mc_retaddr = 0;
    sp[-2] = (Oop)link;
    Oop *nfp = sp - 2;
    if (!link) vm_page->bottom_fp = nfp;
    nfp[FRAME_METHOD] = m;
    nfp[FRAME_CONTEXT] = vm_nil;
    nfp[FRAME_FLAGS] = oop_from_int(FRAME_FLAGS_MAKE(mnargs, ntemps, frame_kind) | caller_nargs);
    nfp[FRAME_RECEIVER] = self_value;
    IP_CLEAR(); /* the header is complete: only now may r14 point at it */
    FP_SET_NEW(nfp);
    sp = fp + FRAME_RECEIVER;
    for (int t = 0; t < ntemps; t++) *--sp = vm_nil;
    method = m;
    nargs = mnargs;
    bytes = (uint8_t *)(obj_slots(m) + VM_MHDR_GET(hdr, SLOTS));
    IP_SET(bytes);
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) {
        fp[FRAME_FLAGS] = oop_from_int(frame_flags(fp) | FRAME_FLAG_TRACED);
        VM_PROBE_METHOD_ENTRY(method, 0);
    }
    DISPATCH();
}

primitive : {
    VmPrimEntry *e = &vm_prim_table[oop_int(obj_slots(m)[METHOD_PRIMITIVE])];
    switch (e->special) {
    case SP_NONE: {
        Oop *a = prim_args;
        for (int i = 0; i <= n; i++) a[i] = sp[n - i];
        Oop r;
        VmPrimFn fn = (VmPrimFn)e->fn;
        VM_PROBE_PRIMITIVE(fn, m, e - vm_prim_table);
        PRIM_ANCHOR_SET();
        bool ok = fn(a, &r);
        PRIM_ANCHOR_CLEAR();
        if (BASE_LIKELY(ok)) {
            if (BASE_UNLIKELY(mc_retaddr)) {
                result = r;
                goto prim_answer;
            }
            sp += n;
            *sp = r;
            DISPATCH();
        }
        primitive_failed(sp, bytes);
    }
    case SP_BLOCK_VALUE:
        m = obj_slots(sp[n])[BLOCK_METHOD];
        goto activate_block;
    case SP_BLOCK_RESTART:
        /* restart the method that sent #restart (SOM's whileTrue: idiom).
         * Sent from machine code, the interpreter takes that frame over, as
         * for VM_JIT_PENDING_BYTECODE: both keep the same frame layout. */
        mc_retaddr = 0;
        mc_nargs = 0;
        sp = frame_stack_base(fp);
        ip = bytes;
        SAFEPOINT_CHECK();
        DISPATCH();
    default: {
        /* perform: and the other primitives that change the send */
        InterpRegs r = {COLD_IN, .n = n, .m = m};
        GO(r, primitive_special(&r, e));
    }
    }
}

dnu : {
    InterpRegs r = {COLD_IN, .n = n, .sel = sel};
    GO(r, not_understood(&r));
}

    /* -- Returns --------------------------------------------------------- */

op_RETURN_SELF:
    result = SELF;
    goto do_return;

op_RETURN_TOP:
    result = *sp;
do_return : {
    intptr_t rfl = frame_flags(fp);
    if (BASE_UNLIKELY(rfl & (FRAME_FLAG_CONTEXT | FRAME_FLAG_TRACED))) {
        if (rfl & FRAME_FLAG_TRACED) VM_PROBE_METHOD_RETURN(fp[FRAME_METHOD], 0);
        if (rfl & FRAME_FLAG_CONTEXT) vm_context_widow(fp);
    }
    Oop *caller = (Oop *)fp[FRAME_SAVED_FP];
    Oop saved_ip = fp[FRAME_SAVED_IP];
    intptr_t rbcpc = oop_int(saved_ip);
    int fn = (int)VM_FRAME_GET(rfl, NARGS);
    sp = fp + 2 + fn;
    /* the common case first: an interpreted caller on this page (machine
     * code exists only with the JIT on) */
    if (BASE_LIKELY(caller != NULL && (!vm_jit_enabled || !vm_jit_is_code_address(saved_ip)))) {
        *sp = result;
        IP_CLEAR();
        FP_SET(caller);
        LOAD_METHOD();
        IP_SET(bytes + rbcpc);
        DISPATCH();
    }
    if (!caller && !vm_page->caller_fp && !vm_page->caller_context) {
        /* the first frame returns: interpret() answers */
        FRAMES_UNSTABLE(); /* the page is released */
        vm_stack_pop_page();
        saved_fp = NULL;
        return result;
    }
    /* a caller on an older page or in machine code */
    InterpRegs r = {COLD_IN, .result = result};
    GO(r, return_across(&r, &jregs, caller, saved_ip));
}

op_RETURN_NONLOCAL : {
    InterpRegs r = {COLD_IN};
    GO(r, return_nonlocal(&r));
}

    /* -- Jumps ----------------------------------------------------------- */

op_JUMP:
    ip += 3 + U16(ip + 1);
    DISPATCH();

op_JUMP_BACK : {
    unsigned back = U16(ip + 1);
    ip -= back - 3;
    SAFEPOINT_CHECK();
    if (vm_jit_enabled) {
        size_t jump_bcpc = (size_t)(ip - bytes) + back - 3; /* computed here: --no-jit never needs it */
        /* backward jumps count as executions: a loop in a method run once
         * gets compiled and continues in machine code (OSR) */
        intptr_t cv = vm_counter_count_run(method, vm_jit_threshold, compile_here,
                                           &(CompileSite){sp, fp, (size_t)(ip - bytes), NULL});
        if (vm_counter_is_code(cv) && !VM_PROBE_METHODS_TRACED()) { /* a traced frame's return must be seen */
            uint8_t *entry = vm_jit_hooks->osr_entry(fp, jump_bcpc);
            if (entry) {
                jregs = (JitRegs){sp, fp, 0};
                jst = vm_jit_enter.return_to(&jregs, entry);
                goto machine_code_status;
            }
        }
    }
    DISPATCH();
}

#define COND_JUMP(NAME, TAKEN, NOT_TAKEN)                  \
    op_##NAME : {                                          \
        Oop v = *sp;                                       \
        if (v == (TAKEN)) {                                \
            sp++;                                          \
            ip += 3 + U16(ip + 1);                         \
            DISPATCH();                                    \
        }                                                  \
        if (v == (NOT_TAKEN)) {                            \
            sp++;                                          \
            ip += 3;                                       \
            DISPATCH();                                    \
        }                                                  \
        goto non_boolean;                                  \
    }
    COND_JUMP(JUMP_IF_TRUE, vm_true, vm_false)
    COND_JUMP(JUMP_IF_FALSE, vm_false, vm_true)

op_JUMP_IF_NIL:
    if (*sp++ == vm_nil)
        ip += 3 + U16(ip + 1);
    else
        ip += 3;
    DISPATCH();

op_JUMP_IF_NOT_NIL:
    if (*sp++ != vm_nil)
        ip += 3 + U16(ip + 1);
    else
        ip += 3;
    DISPATCH();

non_boolean:
    /* Send #mustBeBoolean to the value; its answer is tested again by the
     * same jump (the saved pc points at it). */
    sel = sym_must_be_boolean;
    n = 0;
    goto send;

safepoint : {
    passed_safepoint = true;
    InterpRegs r = {COLD_IN};
    GO(r, collect_garbage(&r));
}
}

/* -- Cold paths (declared above interpret()) ------------------------------- */

#define REGS_WRITE_BACK(r) (saved_sp = (r)->sp, saved_fp = fp, saved_bcpc = (size_t)(ip - (r)->bytes))

/* LOAD_METHOD's: the method of the frame at fp */
static inline __attribute__((always_inline)) void regs_load_method(InterpRegs *r)
{
    r->method = fp[FRAME_METHOD];
    r->bytes = (uint8_t *)(obj_slots(r->method) + vm_method_pointer_slots(r->method));
    r->nargs = frame_nargs(fp);
}

/* A safe point's collection: the registers written back, the frame's method
 * reloaded (it may have moved) and ip with it. */
static InterpNext collect_garbage(InterpRegs *r)
{
    vm_counters->interrupt_checks++;
    REGS_WRITE_BACK(r);
    gc_collect(false);
    regs_load_method(r);
    ip = r->bytes + saved_bcpc;
    return NEXT_DISPATCH;
}

static _Noreturn void primitive_failed(Oop *sp, const uint8_t *bytes)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", vm_prim_last_error());
    WRITE_BACK();
    runtime_error(msg);
}

static _Noreturn void wrong_arg_count(Oop *sp, const uint8_t *bytes, int n, int frame_kind, int expected)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "wrong number of arguments: %d given, %s expects %d", n,
             frame_kind ? "the block" : "the method", expected);
    WRITE_BACK();
    runtime_error(msg);
}

/* A send would go deeper than --max-stack-depth (registers written back). */
static void count_frame(Oop method, size_t bcpc, void *ctx)
{
    (void)method, (void)bcpc;
    ++*(size_t *)ctx;
}

static _Noreturn void too_deep(size_t depth)
{
    size_t walked = 0;
    vm_stack_walk(saved_fp, saved_bcpc + 1, count_frame, &walked);
    VM_ASSERT(walked == depth); /* the pages' depth_below kept count */
    char msg[256];
    snprintf(msg, sizeof msg, "stack overflow: %zu frames deep (more than --max-stack-depth %zu)", depth,
             vm_options.max_stack_depth);
    runtime_error(msg);
}

/* PUSH_GLOBAL of a name with no global: a class loaded by that name, else
 * unknownGlobal: sent to self. */
static InterpNext global_missing(InterpRegs *r)
{
    char name[512];
    REGS_WRITE_BACK(r);
    Oop v = vm_load_class(vm_string_cstr(r->sel, name, sizeof name));
    if (v) {
        *--r->sp = v;
        return NEXT_DISPATCH;
    }
    *--r->sp = SELF;
    *--r->sp = r->sel;
    r->sel = sym_unknown_global;
    r->n = 1;
    return NEXT_SEND;
}

/* sel not understood by sp[n]: doesNotUnderstand:arguments: takes its place */
static InterpNext not_understood(InterpRegs *r)
{
    int n = r->n;
    Oop *sp = r->sp;
    Oop rcvr = sp[n];
    Oop arr = vm_array_new((size_t)n);
    if (!arr) vm_out_of_memory("doesNotUnderstand: arguments");
    for (int i = 0; i < n; i++) obj_slots(arr)[i] = sp[n - 1 - i];
    sp += n;
    *--sp = r->sel;
    *--sp = arr;
    r->sp = sp;
    r->m = vm_lookup_cached(vm_class_index_of(rcvr), sym_dnu);
    if (!r->m) {
        /* the words of Object>>doesNotUnderstand:arguments: (smalltalk/core/Object.som) */
        char buf[512], cls[256], msg[1024];
        snprintf(msg, sizeof msg, "%s does not understand #%s",
                 rcvr == vm_nil ? "nil" : vm_class_name_cstr(vm_class_of(rcvr), cls, sizeof cls),
                 vm_string_cstr(r->sel, buf, sizeof buf));
        REGS_WRITE_BACK(r);
        runtime_error(msg);
    }
    r->n = 2;
    return NEXT_ACTIVATE;
}

/* The primitives that are no function of their arguments: perform: and its
 * kin and invokeOn:with: turn into another send, printStackTrace and
 * fullGC need the interpreter's registers. m the method, n its argument
 * count, the receiver at sp[n]. */
static InterpNext primitive_special(InterpRegs *r, const VmPrimEntry *e)
{
    int n = r->n;
    Oop *sp = r->sp;
    switch (e->special) {
    case SP_PERFORM:
    case SP_PERFORM_WITH_ARGS:
    case SP_PERFORM_IN_SUPER:
    case SP_PERFORM_WITH_ARGS_IN_SUPER: {
        bool with_args = e->special == SP_PERFORM_WITH_ARGS || e->special == SP_PERFORM_WITH_ARGS_IN_SUPER;
        bool in_super = e->special == SP_PERFORM_IN_SUPER || e->special == SP_PERFORM_WITH_ARGS_IN_SUPER;
        Oop cls = in_super ? sp[0] : 0;
        Oop arr = with_args ? sp[in_super ? 1 : 0] : 0;
        Oop sel = sp[n - 1];
        r->sp = sp += n; /* receiver on top */
        if (vm_is_string(sel)) {
            char buf[512];
            sel = vm_symbol_from_cstr(vm_string_cstr(sel, buf, sizeof buf));
        }
        if (!vm_is_symbol(sel) || (with_args && !vm_is_array(arr)) || (in_super && !vm_is_class(cls))) {
            REGS_WRITE_BACK(r);
            runtime_error("perform: expects a selector Symbol (and an Array of arguments, and a class)");
        }
        n = with_args ? (int)obj_num_slots(arr) : 0;
        if (n > 255) {
            REGS_WRITE_BACK(r);
            runtime_error("perform:withArguments: with more than 255 arguments");
        }
        for (int i = 0; i < n; i++) *--sp = obj_slots(arr)[i];
        r->sp = sp;
        if (selector_arity(sel) != n) {
            char buf[512], msg[1024];
            snprintf(msg, sizeof msg, "perform: selector #%s expects %d arguments, %d given",
                     vm_string_cstr(sel, buf, sizeof buf), selector_arity(sel), n);
            REGS_WRITE_BACK(r);
            runtime_error(msg);
        }
        r->sel = sel;
        r->n = n;
        if (!in_super) return NEXT_SEND;
        r->m = vm_lookup(cls, sel);
        if (!r->m) return NEXT_DNU;
        return NEXT_ACTIVATE;
    }
    case SP_INVOKE_ON_WITH: {
        Oop arr = sp[0], obj = sp[1];
        r->m = sp[2];
        if (!vm_is_array(arr)) {
            REGS_WRITE_BACK(r);
            runtime_error("invokeOn:with: expects an Array of arguments");
        }
        sp += 2;
        *sp = obj;
        n = (int)obj_num_slots(arr);
        for (int i = 0; i < n; i++) *--sp = obj_slots(arr)[i];
        r->sp = sp;
        r->n = n;
        return NEXT_ACTIVATE;
    }
    case SP_PRINT_STACK_TRACE:
        REGS_WRITE_BACK(r);
        fflush(stdout);
        vm_print_backtrace(stderr);
        r->result = sp[n];
        return NEXT_PRIM_ANSWER;
    case SP_ERROR: {
        /* Object>>error: message: the sender's frame is the innermost */
        char text[4096];
        Oop msg = sp[0];
        if (vm_is_string(msg) || vm_is_symbol(msg)) {
            vm_string_cstr(msg, text, sizeof text);
        } else {
            char cls[256];
            snprintf(text, sizeof text, "Object>>error: expects a String or a Symbol, not an instance of %s",
                     vm_class_name_cstr(vm_class_of(msg), cls, sizeof cls));
        }
        REGS_WRITE_BACK(r);
        runtime_error(text);
    }
    case SP_FULL_GC:
        REGS_WRITE_BACK(r);
        gc_collect(true);
        regs_load_method(r);
        ip = r->bytes + saved_bcpc;
        r->result = vm_true;
        return NEXT_PRIM_ANSWER;
    case SP_MISSING: {
        char cls[256], s[256], msg[1024];
        snprintf(msg, sizeof msg, "%s>>%s is declared primitive, but this VM has no such primitive",
                 vm_class_name_cstr(obj_slots(r->m)[METHOD_HOLDER], cls, sizeof cls),
                 vm_string_cstr(obj_slots(r->m)[METHOD_SIGNATURE], s, sizeof s));
        REGS_WRITE_BACK(r);
        runtime_error(msg);
    }
    default:
        break;
    }
    vm_panic("bad primitive entry");
}

/* The status machine code left the interpreter with (jregs: its registers):
 * it returned into the interpreted frame that entered it, or it asks the
 * interpreter for a send, an activation or to take its frame over. */
static InterpNext from_machine_code(InterpRegs *r, JitStatus jst, const JitRegs *jregs)
{
    r->limit = vm_page->base + HEADROOM;
    /* r14/r15 are the interpreter's again only from the IP_SET on: until
     * then the mode stays machine code's (proto/stackabi.h) */
    if (jst == JIT_STATUS_RETURNED) {
        /* back in the interpreter frame that entered machine code */
        IP_CLEAR();
        FP_SET(jregs_fp(jregs));
        intptr_t fl = frame_flags(fp);
        int pn = (int)VM_FRAME_GET(fl, PENDING_NARGS);
        size_t bc = (size_t)VM_FRAME_GET(fl, BCPC);
        fp[FRAME_FLAGS] = oop_from_int(fl & ~(VM_FRAME_MASK(PENDING_NARGS) | VM_FRAME_MASK(BCPC)));
        r->sp = jregs->sp + pn;
        *r->sp = jregs->result;
        regs_load_method(r);
        IP_SET(r->bytes + bc);
        jit_cstate.mode = PROF_STATE_INTERP;
        return NEXT_DISPATCH;
    }
    VM_ASSERT(jst == JIT_STATUS_INTERPRET);
    /* machine code asks for a send: receiver and args under its return address */
    IP_CLEAR();
    FP_SET(jregs_fp(jregs));
    r->mc_retaddr = jregs->sp[0];
    r->sp = jregs->sp + 1;
    regs_load_method(r);
    IP_SET(r->bytes + vm_jit_resume_bcpc(r->mc_retaddr, fp));
    jit_cstate.mode = PROF_STATE_INTERP;
    if (BASE_UNLIKELY(gc_collect_wanted)) collect_garbage(r);
    r->n = r->mc_nargs = vm_jit_pending_nargs;
    if (vm_jit_pending_kind == VM_JIT_PENDING_UNKNOWN_GLOBAL) {
        /* machine code pushed nothing: send unknownGlobal: on its behalf */
        Oop gsym = (obj_slots(r->method) + METHOD_FIXED_SLOTS)[vm_jit_pending_nargs];
        *--r->sp = SELF;
        *--r->sp = gsym;
        r->n = 1;
        r->mc_nargs = -1;
        r->sel = sym_unknown_global;
        return NEXT_SEND;
    }
    if (vm_jit_pending_kind == VM_JIT_PENDING_BYTECODE) {
        /* the interpreter takes over this machine-code frame from here */
        r->mc_retaddr = 0;
        r->mc_nargs = 0;
        ip = r->bytes + vm_jit_pending_nargs;
        return NEXT_DISPATCH;
    }
    if (vm_jit_pending_kind == VM_JIT_PENDING_DEOPT) return deopt_activate(r);
    if (vm_jit_pending_kind == VM_JIT_PENDING_METHOD) {
        r->m = vm_jit_pending_oop;
        vm_jit_pending_oop = 0;
        /* a compiled block whose frame needs a new page */
        return vm_method_is_block(r->m) ? NEXT_ACTIVATE_BLOCK : NEXT_ACTIVATE;
    }
    r->sel = vm_jit_pending_oop;
    vm_jit_pending_oop = 0;
    return NEXT_SEND;
}

/* An inlined body deoptimized (vm/jit/inline.c): its method is activated on
 * the receiver and args machine code pushed, as push_frame does for a send
 * machine code hands over (fp[1] its continuation, the generic send's
 * return address), then gets the temps and operand stack the body had and
 * continues at the bytecode where the body stopped. Nothing allocates
 * before the values are placed (vm_jit_deopt_values is a GC root anyway). */
static InterpNext deopt_activate(InterpRegs *r)
{
    Oop m = vm_jit_pending_oop;
    vm_jit_pending_oop = 0;
    int n = r->n;
    Oop *sp = r->sp;
    intptr_t hdr = vm_method_hdr(m);
    int mnargs = (int)VM_MHDR_GET(hdr, NARGS), ntemps = (int)VM_MHDR_GET(hdr, NTEMPS), maxs = (int)VM_MHDR_GET(hdr, MAX_STACK);
    VM_ASSERT(mnargs == n && r->mc_retaddr && vm_jit_deopt_count >= ntemps && vm_jit_deopt_count <= ntemps + maxs);
    Oop *link = fp;
    if (sp - (FRAME_HEADER_WORDS + ntemps + maxs) < r->limit) {
        Oop *nlimit;
        sp = overflow_page(fp, sp, n, &nlimit);
        r->limit = nlimit;
        link = NULL;
    }
    intptr_t caller_nargs = VM_FRAME_PUT(CALLER_NARGS, r->mc_nargs & VM_FRAME_MAX(CALLER_NARGS));
    sp[-1] = r->mc_retaddr;
    r->mc_retaddr = 0;
    sp[-2] = (Oop)link;
    Oop *nfp = sp - 2;
    if (!link) vm_page->bottom_fp = nfp;
    nfp[FRAME_METHOD] = m;
    nfp[FRAME_CONTEXT] = vm_nil;
    nfp[FRAME_FLAGS] = oop_from_int(FRAME_FLAGS_MAKE(mnargs, ntemps, 0) | caller_nargs);
    nfp[FRAME_RECEIVER] = sp[n];
    IP_CLEAR(); /* the header is complete: only now may r14 point at it */
    FP_SET_NEW(nfp);
    sp = fp + FRAME_RECEIVER;
    for (int i = 0; i < vm_jit_deopt_count; i++) *--sp = vm_jit_deopt_values[i];
    vm_jit_deopt_count = 0;
    r->sp = sp;
    r->method = m;
    r->nargs = mnargs;
    r->bytes = (uint8_t *)(obj_slots(m) + VM_MHDR_GET(hdr, SLOTS));
    IP_SET(r->bytes + vm_jit_deopt_bcpc);
    if (BASE_UNLIKELY(VM_PROBE_METHODS_TRACED())) {
        fp[FRAME_FLAGS] = oop_from_int(frame_flags(fp) | FRAME_FLAG_TRACED);
        VM_PROBE_METHOD_ENTRY(m, 0);
    }
    return NEXT_DISPATCH;
}

/* A return whose caller is not an interpreted frame on this page: machine
 * code, or (caller NULL) the frame below this page's first or a context.
 * (interpret()'s own caller it returns to itself: with that exit, too,
 * behind a call, its loop measured 0.5-1 % more instructions.) r->sp is
 * where the answer goes, fp the returning frame still. */
static InterpNext return_across(InterpRegs *r, JitRegs *jregs, Oop *caller, Oop saved_ip)
{
    Oop *sp = r->sp;
    int caller_n = (int)VM_FRAME_GET(frame_flags(fp), CALLER_NARGS);
    if (caller_n == VM_JIT_CALLER_PUSHED_NOTHING) caller_n = -1;
    r->mc_target = (void *)saved_ip;
    if (BASE_UNLIKELY(vm_jit_is_code_address(saved_ip)) && caller) {
        /* the caller is machine code: return as its `ret` would, its own
         * argument count above the receiver */
        *jregs = (JitRegs){sp - caller_n, caller, r->result};
        return NEXT_MACHINE_CODE;
    }
    if (BASE_UNLIKELY(!caller)) {
        FRAMES_UNSTABLE(); /* pages are released and reused below */
        StackPage *pg = vm_page;
        if (pg->caller_fp) {
            caller = pg->caller_fp;
            r->sp = sp = pg->caller_sp - 1;
            vm_stack_pop_page();
            r->limit = vm_page->base + HEADROOM;
            if (vm_jit_is_code_address(saved_ip)) {
                *jregs = (JitRegs){sp - caller_n, caller, r->result};
                return NEXT_MACHINE_CODE;
            }
        } else if (pg->caller_context) {
            size_t bc;
            Oop *nsp;
            Oop *nfp = vm_context_resume(pg->caller_context, r->result, &nsp, &bc);
            FP_SET(nfp);
            r->sp = nsp;
            regs_load_method(r);
            IP_SET(r->bytes + bc);
            return NEXT_DISPATCH;
        } else {
            vm_panic("return_across: interpret()'s first frame returns in interpret()");
        }
    }
    *sp = r->result;
    IP_CLEAR();
    FP_SET(caller);
    regs_load_method(r);
    IP_SET(r->bytes + oop_int(saved_ip));
    return NEXT_DISPATCH;
}

/* ^ in a block: unwinds to the home method's frame, which then returns
 * (NEXT_RETURN); or, the home divorced into a context, to its sender; or,
 * the home returned already, sends escapedBlock:. */
static InterpNext return_nonlocal(InterpRegs *r)
{
    Oop result = r->result = *r->sp;
    Oop *nlr_fp = fp;
    Oop closure = fp[2 + r->nargs];
    Oop home = obj_slots(closure)[BLOCK_OUTER_CONTEXT];
    while (vm_method_is_block(obj_slots(home)[CTX_METHOD]))
        home = obj_slots(obj_slots(home)[CTX_CLOSURE])[BLOCK_OUTER_CONTEXT];
    Oop *hf = ctx_frame(home);
    FRAMES_UNSTABLE(); /* frames are widowed and pages released below */
    if (hf) {
        for (Oop *f = nlr_fp; f != hf;) {
            VM_PROBE_FRAME_UNWOUND(f);
            if (frame_flags(f) & FRAME_FLAG_CONTEXT) vm_context_widow(f);
            Oop *caller = (Oop *)f[FRAME_SAVED_FP];
            if (!caller) {
                caller = vm_page->caller_fp;
                VM_ASSERT(caller != NULL);
                vm_stack_pop_page();
            }
            f = caller;
        }
        r->limit = vm_page->base + HEADROOM;
        FP_SET(hf);
        return NEXT_RETURN;
    }
    if (obj_slots(home)[CTX_PC] != vm_nil) {
        /* home was divorced: every frame on every page is newer than it */
        StackPage *pg = vm_page;
        for (Oop *f = nlr_fp; f;) {
            VM_PROBE_FRAME_UNWOUND(f);
            if (frame_flags(f) & FRAME_FLAG_CONTEXT) vm_context_widow(f);
            Oop *caller = (Oop *)f[FRAME_SAVED_FP];
            if (!caller && pg->caller_fp) {
                caller = pg->caller_fp;
                pg = pg->older;
            }
            f = caller;
        }
        Oop c = pg->caller_context;
        size_t unwound = 1; /* home, and below the contexts on top of it */
        while (c && c != vm_nil && c != home) {
            unwound++;
            VM_PROBE_CONTEXT_UNWOUND(c);
            Oop next = obj_slots(c)[CTX_SENDER];
            obj_slots(c)[CTX_PC] = vm_nil;
            obj_slots(c)[CTX_SENDER] = vm_nil;
            c = next;
        }
        VM_ASSERT(c == home);
        VM_PROBE_CONTEXT_UNWOUND(home);
        Oop target = obj_slots(home)[CTX_SENDER];
        obj_slots(home)[CTX_PC] = vm_nil;
        obj_slots(home)[CTX_SENDER] = vm_nil;
        vm_stack_release_newer(pg);
        VM_ASSERT(pg->depth_below >= unwound);
        pg->depth_below -= unwound; /* target heads the chain below pg now */
        pg->caller_context = target == vm_nil ? 0 : target;
        r->limit = vm_page->base + HEADROOM;
        if (target == vm_nil) {
            vm_stack_pop_page();
            saved_fp = NULL;
            return NEXT_EXIT;
        }
        size_t bc;
        Oop *nsp;
        Oop *nfp = vm_context_resume(target, result, &nsp, &bc);
        FP_SET(nfp);
        r->sp = nsp;
        regs_load_method(r);
        IP_SET(r->bytes + bc);
        return NEXT_DISPATCH;
    }
    /* the home method has returned: escapedBlock:, whose answer the block returns */
    FP_SET(nlr_fp);
    r->sp[0] = SELF;
    *--r->sp = closure;
    IP_SET(r->bytes + vm_method_bytecode_length(r->method) - 1); /* the block's final RETURN_TOP */
    r->sel = sym_escaped_block;
    r->n = 1;
    return NEXT_SEND;
}
