/*
 * vm/jit/inline.c — speculative inlining of small monomorphic callees at
 * plain send sites, every slow path of the inlined body a deoptimization
 * to the interpreter (vm/jit/DESIGN.md, "Inlining and deoptimization").
 *
 * The body runs over the real machine stack only: at the site the caller's
 * simulated stack is flushed, the receiver and arguments are where a send
 * finds them, the callee's temps (nil) go above them and its operand stack
 * above those — the callee's frame without its header. Every callee
 * bytecode's stack depth is known at compile time, so each deopt point
 * knows how many words lie above the arguments; rt_deopt (vm/jit/runtime.c)
 * copies them aside, leaves the receiver and arguments under the generic
 * send's return address (its continuation, which takes an answer in rax and
 * drops them) and the interpreter activates the callee there, refills its
 * temps and stack and continues at the deopt point's bytecode.
 */
#include "vm/jit/compile_int.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/jit/compile.h"
#include "vm/jit/sendsite.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdlib.h>
#include <string.h>

#define INLINE_BOUND_GUARD 96     /* the class and probe tests, the frame's temps */
#define INLINE_BOUND_BYTECODE 256 /* the largest template below (at:put:), its deopt stub, a --deopt-every check */
#define INLINE_BOUND_SEND 64      /* the generic send after the body */
#define INLINE_MAP_PER_BYTECODE 3 /* its start, its stub's start and call */

/* Whether bytecode op of a callee can be inlined: the body calls nothing. */
static bool inlinable_bytecode(const Compiler *c, Oop m, const uint8_t *p)
{
    uint8_t op = p[0];
    switch (op) {
    case BC_DUP: case BC_POP: case BC_PUSH_SELF: case BC_PUSH_NIL: case BC_PUSH_TRUE: case BC_PUSH_FALSE:
    case BC_PUSH_0: case BC_PUSH_1: case BC_PUSH_FIELD: case BC_STORE_FIELD: case BC_POP_FIELD:
    case BC_PUSH_ARG: case BC_STORE_ARG: case BC_POP_ARG: case BC_PUSH_TEMP: case BC_STORE_TEMP: case BC_POP_TEMP:
    case BC_RETURN_TOP: case BC_RETURN_SELF: case BC_JUMP: case BC_JUMP_IF_TRUE:
    case BC_JUMP_IF_FALSE: case BC_JUMP_IF_NIL: case BC_JUMP_IF_NOT_NIL: return true;
    /* No loops: the body keeps its operands on the machine stack, a load
     * and a store a bytecode, where the callee's own code keeps them in
     * registers and constants; DiffHot's alpha: loop ran 5x slower in line
     * (3.0 s against 0.6 s for 800 rounds) than the call it saved. */
    case BC_JUMP_BACK: return false;
    case BC_PUSH_LITERAL: {
        /* heap literals would have to be read through the callee's method,
         * which no frame slot holds here */
        size_t nlits = vm_method_pointer_slots(m) - METHOD_FIXED_SLOTS;
        return p[1] < nlits && oop_is_int(obj_slots(m)[METHOD_FIXED_SLOTS + p[1]]);
    }
    case BC_SEND_ADD: case BC_SEND_SUB: case BC_SEND_MUL: return jit_int_inline(c, op);
    /* Arrays' own primitives, as the baseline's templates take them */
    case BC_SEND_AT: return c->rt->array_at_inline && *c->rt->array_at_inline;
    case BC_SEND_AT_PUT: return c->rt->array_at_put_inline && *c->rt->array_at_put_inline;
    case BC_SEND_LENGTH: return c->rt->array_length_inline && *c->rt->array_length_inline;
    default: return jit_compile_is_compare(op) && jit_int_inline(c, op);
    }
}

/* The operand stack depth before each bytecode of m (-1: unreachable), into
 * depth[len + 1]; false when m's code is not one the body can run. */
static bool callee_depths(const Compiler *c, Oop m, int *depth)
{
    const uint8_t *code = vm_method_bytecodes(m);
    size_t len = vm_method_bytecode_length(m);
    for (size_t i = 0; i <= len; i++) depth[i] = -1;
    depth[0] = 0;
    for (size_t pc = 0; pc < len; pc += vm_bytecode_length[code[pc]]) {
        uint8_t op = code[pc];
        if (op >= BC_COUNT || pc + vm_bytecode_length[op] > len || !inlinable_bytecode(c, m, code + pc)) return false;
        if (depth[pc] < 0) continue; /* dead code after a return or jump */
        int d = depth[pc] + vm_bytecode_effect[op];
        if (d < 0 || d > vm_method_max_stack(m)) return false;
        long t = jit_compile_jump_target(code, pc);
        if (t >= 0) {
            if ((size_t)t >= len || t <= (long)pc) return false;
            if (depth[t] >= 0 && depth[t] != d) return false;
            depth[t] = d;
        }
        bool falls = op != BC_JUMP && op != BC_RETURN_TOP && op != BC_RETURN_SELF;
        size_t next = pc + vm_bytecode_length[op];
        if (falls) {
            if (next >= len || (depth[next] >= 0 && depth[next] != d)) return false;
            depth[next] = d;
        }
    }
    return true;
}

/* Whether callee m (nargs arguments) can be inlined. */
static bool inlinable(const Compiler *c, Oop m, int nargs)
{
    if (obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0) || vm_method_is_block(m) || vm_method_nargs(m) != nargs)
        return false;
    size_t len = vm_method_bytecode_length(m);
    /* the body grows the caller's stack into the page's headroom, which
     * nothing else uses while it runs (it calls nothing) */
    if (len == 0 || len > (size_t)c->rt->inline_budget ||
        vm_method_ntemps(m) + vm_method_max_stack(m) > c->rt->headroom_words)
        return false;
    int *depth = malloc((len + 1) * sizeof *depth);
    if (!depth) return false;
    bool ok = callee_depths(c, m, depth);
    free(depth);
    return ok;
}

bool jit_inline_plan(Compiler *c, size_t *code_bound, size_t *map_bound)
{
    *code_bound = *map_bound = 0;
    if (c->rt->inline_budget <= 0 || !c->rt->site_method || !c->rt->deopt) return true;
    for (size_t pc = 0; pc < c->len && c->ninline_sites < JIT_INLINE_SITES_MAX; pc += vm_bytecode_length[c->code[pc]]) {
        uint8_t op = c->code[pc];
        if (op != BC_SEND && op != BC_SEND_W) continue;
        if (jit_double_send_kind(c, pc) != JIT_DOUBLE_SEND_NONE) continue;
        if (jit_compile_bool_send(c, pc) >= 0) continue;
        uint32_t cls;
        bool setter;
        int field;
        if (jit_compile_accessor(c, pc, &cls, &setter, &field)) continue;
        Oop m;
        int nargs = op == BC_SEND ? c->code[pc + 2] : c->code[pc + 3];
        if (!c->rt->site_method(c->code + pc, &cls, &m)) {
            c->unfed_sends++;
            continue;
        }
        if (cls == CLASS_INDEX_DOUBLE || !inlinable(c, m, nargs)) continue;
        if (!c->inline_sites) {
            c->inline_sites = malloc(JIT_INLINE_SITES_MAX * sizeof *c->inline_sites);
            c->scopes = malloc(JIT_INLINE_SITES_MAX * sizeof *c->scopes);
            c->ranges = malloc(JIT_INLINE_SITES_MAX * sizeof *c->ranges);
            if (!c->inline_sites || !c->scopes || !c->ranges) return false;
        }
        c->inline_sites[c->ninline_sites++] = (JitInlineSite){ pc, cls, m };
        size_t len = vm_method_bytecode_length(m);
        *code_bound += INLINE_BOUND_GUARD + INLINE_BOUND_SEND + INLINE_BOUND_BYTECODE * len + 8 * (size_t)vm_method_ntemps(m);
        *map_bound += (INLINE_MAP_PER_BYTECODE * len + 4) * JIT_MAP_ENTRY_MAX_BYTES;
    }
    return true;
}

const JitInlineSite *jit_inline_site_at(const Compiler *c, size_t pc)
{
    for (uint32_t i = 0; i < c->ninline_sites; i++)
        if (c->inline_sites[i].pc == pc) return &c->inline_sites[i];
    return NULL;
}

/* -- The body ------------------------------------------------------------------------- */

/* What the body's templates know at a bytecode of the callee. */
typedef struct Body {
    Compiler *c;
    Oop m;
    const uint8_t *code;
    size_t len;
    int nargs, ntemps;
    int *depth;          /* [len + 1] */
    X64Label *labels;    /* [len + 1] */
    X64Label *stubs;     /* [len + 1]: the deopt stub of each bytecode */
    bool *stub_used;     /* [len + 1] */
    X64Label *done, *cont;
} Body;

/* The words between rsp and the receiver when the operand stack holds d. */
static int32_t self_off(const Body *y, int d) { return 8 * (d + y->ntemps + y->nargs); }
static int32_t temp_off(const Body *y, int d, int t) { return 8 * (d + y->ntemps - 1 - t); }
/* PUSH_ARG's operand is the fp word offset: 2 is the last argument */
static int32_t arg_off(const Body *y, int d, int o) { return 8 * (d + y->ntemps + o - 2); }

static X64Label *stub(Body *y, size_t pc)
{
    y->stub_used[pc] = true;
    return &y->stubs[pc];
}

static void push_r11_from(Body *y, int32_t off)
{
    jit_x64_mov_rm(&y->c->b, R11, jit_x64_mem(RSP, off));
    jit_x64_push_r(&y->c->b, R11);
}

/* rax := the receiver, rcx := the argument, both left on the stack; to the
 * stub unless both are SmallIntegers. */
static void int_operands(Body *y, size_t pc)
{
    X64Buf *b = &y->c->b;
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8));
    jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
    jit_x64_mov_rr(b, RDX, RAX);
    jit_x64_and_rr(b, RDX, RCX);
    jit_x64_test_ri(b, RDX, 1);
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, stub(y, pc));
}

static void emit_body_bytecode(Body *y, size_t pc)
{
    Compiler *c = y->c;
    X64Buf *b = &c->b;
    const uint8_t *p = y->code + pc;
    uint8_t op = p[0];
    int d = y->depth[pc];
    switch (op) {
    case BC_DUP: push_r11_from(y, 0); break;
    case BC_POP: jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8)); break;
    case BC_PUSH_SELF: push_r11_from(y, self_off(y, d)); break;
    case BC_PUSH_NIL:
    case BC_PUSH_TRUE:
    case BC_PUSH_FALSE:
    case BC_PUSH_LITERAL: {
        Oop v = op == BC_PUSH_NIL    ? c->rt->nil
                : op == BC_PUSH_TRUE  ? c->rt->true_obj
                : op == BC_PUSH_FALSE ? c->rt->false_obj
                                      : obj_slots(y->m)[METHOD_FIXED_SLOTS + p[1]]; /* an immediate (inlinable) */
        jit_x64_mov_ri(b, R11, (int64_t)v);
        jit_x64_push_r(b, R11);
        break;
    }
    case BC_PUSH_0: jit_x64_push_i32(b, (int32_t)oop_from_int(0)); break;
    case BC_PUSH_1: jit_x64_push_i32(b, (int32_t)oop_from_int(1)); break;
    case BC_PUSH_FIELD:
        jit_x64_mov_rm(b, R11, jit_x64_mem(RSP, self_off(y, d)));
        jit_x64_mov_rm(b, R11, jit_x64_mem(R11, 8 + 8 * p[1]));
        jit_x64_push_r(b, R11);
        break;
    case BC_PUSH_ARG: push_r11_from(y, arg_off(y, d, p[1])); break;
    case BC_PUSH_TEMP: push_r11_from(y, temp_off(y, d, p[1])); break;
    case BC_STORE_ARG:
    case BC_POP_ARG:
    case BC_STORE_TEMP:
    case BC_POP_TEMP: {
        bool arg = op == BC_STORE_ARG || op == BC_POP_ARG;
        jit_x64_mov_rm(b, R11, jit_x64_mem(RSP, 0));
        jit_x64_mov_mr(b, jit_x64_mem(RSP, arg ? arg_off(y, d, p[1]) : temp_off(y, d, p[1])), R11);
        if (op == BC_POP_ARG || op == BC_POP_TEMP) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        break;
    }
    case BC_STORE_FIELD:
    case BC_POP_FIELD: {
        /* a store that must remember self deoptimizes: the interpreter makes it */
        X64Label store = JIT_X64_LABEL("inlined store");
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, self_off(y, d)));
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
        jit_compile_barrier_unneeded(c, &store);
        jit_x64_jmp_label32(b, stub(y, pc));
        jit_x64_label_bind(b, &store);
        jit_x64_mov_mr(b, jit_x64_mem(RAX, 8 + 8 * p[1]), RCX);
        if (op == BC_POP_FIELD) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        break;
    }
    case BC_RETURN_TOP:
    case BC_RETURN_SELF:
        /* the answer where the generic send's arrives, receiver and arguments dropped */
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, op == BC_RETURN_TOP ? 0 : self_off(y, d)));
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, self_off(y, d) + 8));
        jit_x64_jmp_label32(b, y->done);
        break;
    case BC_JUMP: jit_x64_jmp_label32(b, &y->labels[jit_compile_jump_target(y->code, pc)]); break;
    case BC_JUMP_IF_NIL:
    case BC_JUMP_IF_NOT_NIL:
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 0));
        jit_compile_cmp_rax_oop(c, c->rt->nil);
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8)); /* lea keeps the flags */
        jit_x64_jcc_label32(b, op == BC_JUMP_IF_NIL ? JIT_X64_CC_E : JIT_X64_CC_NE,
                            &y->labels[jit_compile_jump_target(y->code, pc)]);
        break;
    case BC_JUMP_IF_TRUE:
    case BC_JUMP_IF_FALSE: {
        /* a non-Boolean deoptimizes with the condition still on the stack:
         * the interpreter sends mustBeBoolean */
        bool on_true = op == BC_JUMP_IF_TRUE;
        X64Label taken = JIT_X64_LABEL("inlined jump taken");
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 0));
        jit_compile_cmp_rax_oop(c, on_true ? c->rt->true_obj : c->rt->false_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_E, &taken);
        jit_compile_cmp_rax_oop(c, on_true ? c->rt->false_obj : c->rt->true_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, stub(y, pc));
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        jit_x64_jmp_label32(b, &y->labels[pc + 3]);
        jit_x64_label_bind(b, &taken);
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        jit_x64_jmp_label32(b, &y->labels[jit_compile_jump_target(y->code, pc)]);
        break;
    }
    case BC_SEND_ADD:
    case BC_SEND_SUB:
    case BC_SEND_MUL:
        /* tagged 2i+1; an overflow (a LargeInteger answer) deoptimizes */
        int_operands(y, pc);
        if (op == BC_SEND_ADD) {
            jit_x64_mov_rr(b, RDX, RAX);
            jit_x64_sub_ri(b, RDX, 1);
            jit_x64_add_rr(b, RDX, RCX);
            jit_x64_jcc_label32(b, JIT_X64_CC_O, stub(y, pc));
        } else if (op == BC_SEND_SUB) {
            jit_x64_mov_rr(b, RDX, RAX);
            jit_x64_sub_rr(b, RDX, RCX);
            jit_x64_jcc_label32(b, JIT_X64_CC_O, stub(y, pc));
            jit_x64_add_ri(b, RDX, 1);
        } else {
            jit_x64_mov_rr(b, RDX, RAX);
            jit_x64_sar_ri(b, RDX, 1);
            jit_x64_mov_rr(b, R11, RCX);
            jit_x64_sub_ri(b, R11, 1);
            jit_x64_imul_rr(b, RDX, R11);
            jit_x64_jcc_label32(b, JIT_X64_CC_O, stub(y, pc));
            jit_x64_or_ri(b, RDX, 1);
        }
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        jit_x64_mov_mr(b, jit_x64_mem(RSP, 0), RDX);
        break;
    case BC_SEND_AT:
        /* not an Array, or the index out of its bounds: the interpreter's at: */
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8));
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
        jit_compile_array_or(c, stub(y, pc));
        jit_compile_index_or(c, stub(y, pc));
        jit_x64_mov_rm(b, RAX, jit_x64_mem_index(RAX, RSI, 8, 8));
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        jit_x64_mov_mr(b, jit_x64_mem(RSP, 0), RAX);
        break;
    case BC_SEND_AT_PUT: {
        /* as at:, and a store that must remember the Array deoptimizes
         * before it stores: the interpreter makes it */
        X64Label store = JIT_X64_LABEL("inlined at:put:");
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 16));
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 8));
        jit_compile_array_or(c, stub(y, pc));
        jit_compile_index_or(c, stub(y, pc));
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
        jit_compile_barrier_unneeded(c, &store); /* keeps rsi */
        jit_x64_jmp_label32(b, stub(y, pc));
        jit_x64_label_bind(b, &store);
        jit_x64_mov_mr(b, jit_x64_mem_index(RAX, RSI, 8, 8), RCX);
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 16));
        jit_x64_mov_mr(b, jit_x64_mem(RSP, 0), RCX); /* at:put: answers the value */
        break;
    }
    case BC_SEND_LENGTH:
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 0));
        jit_compile_array_or(c, stub(y, pc));
        jit_x64_lea_rm(b, RAX, jit_x64_mem_index(RDX, RDX, 1, 1)); /* tag it */
        jit_x64_mov_mr(b, jit_x64_mem(RSP, 0), RAX);
        break;
    default:
        VM_ASSERT(jit_compile_is_compare(op), "inlinable let %s through", vm_bytecode_name[op]);
        int_operands(y, pc);
        jit_x64_cmp_rr(b, RAX, RCX);
        jit_compile_set_boolean(c, jit_compile_compare_cond(op));
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        jit_x64_mov_mr(b, jit_x64_mem(RSP, 0), RAX);
        break;
    }
}

/* The stress mode's test before a bytecode: every Nth deoptimizes here. */
static void emit_countdown(Body *y, size_t pc)
{
    X64Buf *b = &y->c->b;
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)y->c->rt->deopt_countdown);
    jit_x64_dec_m(b, jit_x64_mem(R11, 0));
    jit_x64_jcc_label32(b, JIT_X64_CC_LE, stub(y, pc));
}

static void add_range(Compiler *c, uint32_t start, uint32_t end, uint32_t scope)
{
    VM_ASSERT(c->nranges < JIT_INLINE_SITES_MAX && (!c->nranges || c->ranges[c->nranges - 1].end <= start));
    c->ranges[c->nranges++] = (JitInlineRange){ start, end, scope };
}

void jit_inline_emit(Compiler *c, const JitInlineSite *s)
{
    X64Buf *b = &c->b;
    const uint8_t *p = c->code + s->pc;
    int64_t tag = p[0] == BC_SEND ? p[1] : jit_compile_operand_w(p + 1);
    int nargs = p[0] == BC_SEND ? p[2] : p[3];
    VM_ASSERT(c->nsim == 0 && !jit_x64_in_cold(b));
    Body y = { .c = c, .m = s->method, .code = vm_method_bytecodes(s->method),
               .len = vm_method_bytecode_length(s->method), .nargs = nargs, .ntemps = vm_method_ntemps(s->method) };
    y.depth = malloc((y.len + 1) * sizeof *y.depth);
    y.labels = malloc((y.len + 1) * sizeof *y.labels);
    y.stubs = malloc((y.len + 1) * sizeof *y.stubs);
    y.stub_used = calloc(y.len + 1, sizeof *y.stub_used);
    X64Label miss = JIT_X64_LABEL("inline guard missed"), done = JIT_X64_LABEL("inlined send done"),
             cont = JIT_X64_LABEL("generic send's continuation");
    y.done = &done;
    y.cont = &cont;
    if (!y.depth || !y.labels || !y.stubs || !y.stub_used || !callee_depths(c, s->method, y.depth)) {
        /* out of C memory: the plain send (the scope stays, its range empty) */
        free(y.depth), free(y.labels), free(y.stubs), free(y.stub_used);
        jit_sendsite_emit(b, jit_sendsite_unlinked_tag(tag, nargs), c->rt->send);
        jit_compile_map_here(c, (uint32_t)s->pc, JIT_MAP_SEND);
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * (nargs + 1)));
        jit_sim_push(c, SIM_RAX, 0);
        c->lits_failed = true; /* the compile fails */
        return;
    }
    for (size_t i = 0; i <= y.len; i++) {
        jit_x64_label_init(&y.labels[i], "inlined bytecode");
        jit_x64_label_init(&y.stubs[i], "deopt stub");
    }
    uint32_t scope = c->nscopes++;
    c->scopes[scope] = (JitInlineScope){ s->method, (uint32_t)s->pc, -1 };

    /* the guard: the receiver's class, and no tracer on the method probes
     * (the send fires method__entry for them) */
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8 * nargs));
    if (s->class_index == CLASS_INDEX_SMALLINT) {
        jit_x64_test_ri(b, RAX, 1);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, &miss);
    } else {
        jit_x64_test_ri(b, RAX, 7);
        jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &miss);
        jit_x64_mov_rm32(b, RDX, jit_x64_mem(RAX, 0));
        jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
        jit_x64_cmp_ri(b, RDX, (int32_t)s->class_index);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, &miss);
    }
    if (c->rt->method_probe_semaphores) {
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
        jit_x64_cmp_mi(b, jit_x64_mem(R11, 0), 0);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, &miss);
    }

    uint32_t start = (uint32_t)jit_x64_size(b);
    jit_compile_map_here(c, 0, JIT_MAP_LOCAL); /* the range begins with its scope's bcpc */
    jit_x64_nop(b, JIT_X64_JMP_REL32_SIZE); /* jit_inline_disable's jmp to the send */
    if (y.ntemps) {
        jit_x64_mov_ri(b, R11, (int64_t)c->rt->nil);
        for (int t = 0; t < y.ntemps; t++) jit_x64_push_r(b, R11);
    }
    for (size_t pc = 0; pc < y.len; pc += vm_bytecode_length[y.code[pc]]) {
        jit_x64_label_bind(b, &y.labels[pc]);
        if (y.depth[pc] < 0) continue; /* unreachable */
        if (pc) jit_compile_map_here(c, pc, JIT_MAP_LOCAL);
        if (c->rt->deopt_countdown) emit_countdown(&y, pc);
        emit_body_bytecode(&y, pc);
    }
    jit_x64_label_bind(b, &y.labels[y.len]);
    /* the deopt stubs: one per bytecode that has a deopt point, each
     * mapped at its bytecode (the stub starts after an int3, so that no
     * mcpc has two bytecodes) */
    for (size_t pc = 0; pc < y.len; pc++) {
        if (!y.stub_used[pc]) continue;
        jit_x64_int3(b);
        jit_x64_label_bind(b, &y.stubs[pc]);
        jit_compile_map_here(c, pc, JIT_MAP_LOCAL);
        jit_x64_mov_r32i(b, RDI, (uint32_t)pc);
        jit_x64_mov_r32i(b, RSI, (uint32_t)(y.ntemps + y.depth[pc]));
        jit_x64_lea_rl(b, RDX, &cont);
        jit_x64_call_rel32(b, c->rt->deopt);
        jit_compile_map_here(c, pc, JIT_MAP_OTHER); /* compaction relocates the call */
    }
    jit_x64_int3(b);
    uint32_t end = (uint32_t)jit_x64_size(b);
    add_range(c, start, end, scope);

    /* the generic send; its return address is every deopt's continuation */
    jit_x64_label_bind(b, &miss);
    jit_compile_map_here(c, s->pc, JIT_MAP_LOCAL); /* the caller's code again */
    jit_sendsite_emit(b, jit_sendsite_unlinked_tag(tag, nargs), c->rt->send);
    jit_compile_map_here(c, (uint32_t)s->pc, JIT_MAP_SEND);
    jit_x64_label_bind(b, &cont);
    jit_double_cache_load(c);
    jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * (nargs + 1)));
    jit_x64_label_bind(b, &done);
    jit_sim_push(c, SIM_RAX, 0);
    free(y.depth);
    free(y.labels);
    free(y.stubs);
    free(y.stub_used);
}

/* The 5-byte nop (Intel's recommended one) every range starts with. */
static const uint8_t range_nop[JIT_X64_JMP_REL32_SIZE] = { 0x0F, 0x1F, 0x44, 0x00, 0x00 };

bool jit_inline_disable(JitMethod *jm, uint32_t range)
{
    VM_ASSERT(range < jit_method_inline_range_count(jm));
    const JitInlineRange *r = &jit_method_inline_ranges(jm)[range];
    uint8_t *at = jit_method_at(jm, r->start);
    uint8_t *after = at + JIT_X64_JMP_REL32_SIZE;
    if (at[0] == 0xE9) {
        uint8_t *t;
        return jit_x64_read_rel32(after, &t) && t == jit_method_at(jm, r->end);
    }
    if (memcmp(at, range_nop, sizeof range_nop)) return false;
    at[0] = 0xE9; /* the rel32 next, then read back: no frame runs in a body (it calls nothing) */
    return jit_x64_patch_rel32(after, jit_method_at(jm, r->end));
}
