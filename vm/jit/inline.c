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
#define INLINE_BOUND_BYTECODE 384 /* the largest template below (at:put:), its deopt stub pushing what was pending, a --deopt-every check */
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
    /* && || and: or: of true or false with a true or false argument, as the
     * baseline answers them (jit_compile_bool_send) */
    case BC_SEND: case BC_SEND_W: return jit_compile_bool_send_in(c, m, p) >= 0;
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
        int d = depth[pc] + (op == BC_SEND || op == BC_SEND_W ? -1 : vm_bytecode_effect[op]); /* one argument */
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

/* The top of the callee's operand stack need not be on the machine stack:
 * up to BODY_PENDING_MAX of its words are pending, known to the compiler
 * as where they come from (a constant, a temp, an argument, self) or, for
 * the word a template just computed, as the register holding it. A
 * template reads its operands from there and leaves its answer in a
 * register, so `s := s + i` is two loads, the add and one store instead of
 * every bytecode's push and pop. The pending words are pushed (flushed)
 * before anything that needs the callee's stack in memory: a bytecode
 * that reads below them, a jump or a jump target (every path into a label
 * has none pending), and a deopt stub, which pushes them first, so the
 * interpreter gets the stack exactly as the bytecodes have it. */
#define BODY_PENDING_MAX 4

typedef enum PendKind {
    PEND_CONST, /* v: the Oop */
    PEND_TEMP,  /* v: the temp's index */
    PEND_ARG,   /* v: PUSH_ARG's operand */
    PEND_SELF,
    PEND_FIELD, /* v: the field's index; nothing in a body stores a field with a read of it pending (flushes_first) */
    PEND_REG,   /* v: the register; only ever the top word, taken or flushed by the next bytecode */
    PEND_FLAGS, /* v: the condition that makes it true; a compare's answer to the JUMP_IF after it */
} PendKind;

typedef struct Pend {
    PendKind kind;
    int64_t v;
} Pend;

typedef struct PendState {
    Pend pend[BODY_PENDING_MAX];
    int npend;
    int md; /* operand stack words on the machine stack */
} PendState;

/* What the body's templates know at a bytecode of the callee. */
typedef struct Body {
    Compiler *c;
    Oop m;
    const uint8_t *code;
    size_t len;
    int nargs, ntemps;
    int *depth;          /* [len + 1] */
    bool *target;        /* [len + 1]: a jump's target */
    X64Label *labels;    /* [len + 1] */
    X64Label *stubs;     /* [len + 1]: the deopt stub of each bytecode */
    bool *stub_used;     /* [len + 1] */
    PendState *stub_at;  /* [len + 1]: what is pending where each stub is jumped to */
    X64Label *done, *cont;
    PendState s;
    /* the field whose Array an at:, at:put: or length checked, that Array in
     * r10 and its slot count in r9 (-1: none): no field is stored and no
     * label reached since (array_operand) */
    int array_field;
    bool flags_ok;       /* a compare may leave flags to its JUMP_IF: not in the stress mode, whose test between them sets flags */
} Body;

/* rsp-relative places of the frame's words, md operand words above them */
static int32_t self_off(const Body *y, int md) { return 8 * (md + y->ntemps + y->nargs); }
static int32_t temp_off(const Body *y, int md, int t) { return 8 * (md + y->ntemps - 1 - t); }
/* PUSH_ARG's operand is the fp word offset: 2 is the last argument */
static int32_t arg_off(const Body *y, int md, int o) { return 8 * (md + y->ntemps + o - 2); }

/* r := a pending word, md words on the machine stack (flags untouched) */
static void pend_load(Body *y, const Pend *e, int md, X64Reg r)
{
    X64Buf *b = &y->c->b;
    switch (e->kind) {
    case PEND_CONST: jit_x64_mov_ri(b, r, e->v); break;
    case PEND_TEMP: jit_x64_mov_rm(b, r, jit_x64_mem(RSP, temp_off(y, md, (int)e->v))); break;
    case PEND_ARG: jit_x64_mov_rm(b, r, jit_x64_mem(RSP, arg_off(y, md, (int)e->v))); break;
    case PEND_SELF: jit_x64_mov_rm(b, r, jit_x64_mem(RSP, self_off(y, md))); break;
    case PEND_FIELD:
        jit_x64_mov_rm(b, r, jit_x64_mem(RSP, self_off(y, md)));
        jit_x64_mov_rm(b, r, jit_x64_mem(r, 8 + 8 * (int32_t)e->v));
        break;
    case PEND_REG:
        if ((X64Reg)e->v != r) jit_x64_mov_rr(b, r, (X64Reg)e->v);
        break;
    case PEND_FLAGS: VM_ASSERT(false, "a compare's flags loaded as a word"); break;
    }
}

/* Pushes the pending words of st, bottom first. */
static void flush_state(Body *y, PendState *st)
{
    X64Buf *b = &y->c->b;
    for (int i = 0; i < st->npend; i++) {
        const Pend *e = &st->pend[i];
        if (e->kind == PEND_CONST && jit_compile_fits_i32(e->v)) {
            jit_x64_push_i32(b, (int32_t)e->v);
        } else if (e->kind == PEND_REG) {
            jit_x64_push_r(b, (X64Reg)e->v);
        } else {
            pend_load(y, e, st->md, R11);
            jit_x64_push_r(b, R11);
        }
        st->md++;
    }
    st->npend = 0;
}

static void flush(Body *y) { flush_state(y, &y->s); }

/* Pushes the bottom pending word only: the words above it stay pending (at:put:'s
 * receiver, index and value, and the at: that computes the value, are four). */
static void pend_push(Body *y, PendKind kind, int64_t v)
{
    if (y->s.npend == BODY_PENDING_MAX) {
        PendState bottom = { .pend = { y->s.pend[0] }, .npend = 1, .md = y->s.md };
        flush_state(y, &bottom);
        memmove(y->s.pend, y->s.pend + 1, (size_t)(BODY_PENDING_MAX - 1) * sizeof *y->s.pend);
        y->s.npend--;
        y->s.md = bottom.md;
    }
    y->s.pend[y->s.npend++] = (Pend){ kind, v };
}

/* r := the operand k words below the top (0: the top) */
static void operand(Body *y, int k, X64Reg r)
{
    if (k < y->s.npend) {
        pend_load(y, &y->s.pend[y->s.npend - 1 - k], y->s.md, r);
    } else {
        jit_x64_mov_rm(&y->c->b, r, jit_x64_mem(RSP, 8 * (k - y->s.npend)));
    }
}

/* Drops the top n operands. */
static void drop(Body *y, int n)
{
    int p = n < y->s.npend ? n : y->s.npend;
    y->s.npend -= p;
    if (n > p) {
        jit_x64_lea_rm(&y->c->b, RSP, jit_x64_mem(RSP, 8 * (n - p)));
        y->s.md -= n - p;
    }
}

static bool pend_is(const Body *y, PendKind kind)
{
    return y->s.npend > 0 && y->s.pend[y->s.npend - 1].kind == kind;
}

/* The deopt stub of bytecode pc; every jump to it leaves the same words
 * pending, which the stub pushes (a register among them only from the
 * stress mode's test, which keeps it). */
static X64Label *stub(Body *y, size_t pc)
{
    for (int i = 0; i < y->s.npend; i++) VM_ASSERT(y->s.pend[i].kind != PEND_FLAGS, "flags pending at a deopt point");
    if (!y->stub_used[pc]) {
        y->stub_used[pc] = true;
        y->stub_at[pc] = y->s;
    } else {
        VM_ASSERT(y->stub_at[pc].npend == y->s.npend && y->stub_at[pc].md == y->s.md,
                  "two deopt points of one bytecode disagree on the stack");
    }
    return &y->stubs[pc];
}

/* rax := the receiver, rcx := the argument, both still the operands; to
 * the stub unless both are SmallIntegers. */
static void int_operands(Body *y, size_t pc)
{
    X64Buf *b = &y->c->b;
    operand(y, 0, RCX); /* the top first: it may be a register (computes_over_register) */
    operand(y, 1, RAX);
    if (y->s.npend > 0 && y->s.pend[y->s.npend - 1].kind == PEND_CONST && oop_is_int((Oop)y->s.pend[y->s.npend - 1].v)) {
        jit_x64_test_ri(b, RAX, 1); /* the argument is a SmallInteger constant */
    } else {
        jit_x64_mov_rr(b, RDX, RAX);
        jit_x64_and_rr(b, RDX, RCX);
        jit_x64_test_ri(b, RDX, 1);
    }
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, stub(y, pc));
}

/* Stores the top word into a temp or argument slot (off from md); pending
 * words that read that slot are pushed first. */
static void store_slot(Body *y, PendKind kind, int index, bool pop)
{
    X64Buf *b = &y->c->b;
    for (int i = 0; i + 1 < y->s.npend; i++)
        if (y->s.pend[i].kind == kind && y->s.pend[i].v == index) {
            /* push all but the top, which stays pending */
            PendState below = y->s;
            below.npend = y->s.npend - 1;
            flush_state(y, &below);
            y->s.pend[0] = y->s.pend[y->s.npend - 1];
            y->s.npend = 1;
            y->s.md = below.md;
            break;
        }
    X64Reg r = R11;
    if (pend_is(y, PEND_REG)) r = (X64Reg)y->s.pend[y->s.npend - 1].v;
    else operand(y, 0, R11);
    int md = y->s.md;
    jit_x64_mov_mr(b, jit_x64_mem(RSP, kind == PEND_ARG ? arg_off(y, md, index) : temp_off(y, md, index)), r);
    if (pop) drop(y, 1);
}

/* *arr := the Array that is operand k, *count := its slot count; to the
 * stub of pc when it is not an Array. A field's Array checked before is
 * r10 and r9 (no code); else the operand is loaded into rax and checked,
 * the count in rdx, and a field's kept in r10 and r9 for the next. */
static void array_operand(Body *y, int k, size_t pc, X64Reg *arr, X64Reg *count)
{
    X64Buf *b = &y->c->b;
    const Pend *e = k < y->s.npend ? &y->s.pend[y->s.npend - 1 - k] : NULL;
    bool field = e && e->kind == PEND_FIELD;
    if (field && e->v == y->array_field) {
        *arr = R10, *count = R9;
        return;
    }
    operand(y, k, RAX);
    jit_compile_array_or(y->c, stub(y, pc));
    *arr = RAX, *count = RDX;
    if (field) {
        jit_x64_mov_rr(b, R10, RAX);
        jit_x64_mov_rr(b, R9, RDX);
        y->array_field = (int)e->v;
    }
}

/* Whether op's template computes with its operands in registers, jumping
 * to its deopt stub after it overwrote some: a register operand must be
 * one it keeps (keep_top_register). */
static bool computes_over_register(uint8_t op)
{
    switch (op) {
    case BC_SEND_ADD: case BC_SEND_SUB: case BC_SEND_MUL: case BC_SEND_AT: case BC_SEND_AT_PUT: case BC_SEND_LENGTH:
        return true;
    default: return jit_compile_is_compare(op);
    }
}

/* The top word, a register, into rdi, which no template of the body writes
 * before its last deopt point: the stub pushes it from there. (The only
 * register operand is the top one.) */
static void keep_top_register(Body *y)
{
    Pend *top = &y->s.pend[y->s.npend - 1];
    if ((X64Reg)top->v != RDI) jit_x64_mov_rr(&y->c->b, RDI, (X64Reg)top->v);
    top->v = RDI;
}

/* Whether the bytecode at pc takes a register as its top operand. */
static bool takes_register(const Body *y, size_t pc)
{
    if (computes_over_register(y->code[pc])) return pend_is(y, PEND_REG);
    switch (y->code[pc]) {
    case BC_POP: case BC_STORE_TEMP: case BC_POP_TEMP: case BC_STORE_ARG: case BC_POP_ARG: case BC_RETURN_TOP:
        return pend_is(y, PEND_REG);
    case BC_JUMP_IF_TRUE: case BC_JUMP_IF_FALSE: return pend_is(y, PEND_FLAGS);
    default: return false;
    }
}

/* Whether the template of op needs the whole stack in memory. */
static bool flushes_first(uint8_t op)
{
    return op == BC_STORE_FIELD || op == BC_POP_FIELD || op == BC_JUMP;
}

static void emit_body_bytecode(Body *y, size_t pc)
{
    Compiler *c = y->c;
    X64Buf *b = &c->b;
    const uint8_t *p = y->code + pc;
    uint8_t op = p[0];
    VM_ASSERT(y->s.md + y->s.npend == y->depth[pc], "the body's stack lost count");
    switch (op) {
    case BC_DUP:
        if (y->s.npend > 0) {
            Pend top = y->s.pend[y->s.npend - 1];
            pend_push(y, top.kind, top.v);
        } else {
            jit_x64_mov_rm(b, R11, jit_x64_mem(RSP, 0));
            jit_x64_push_r(b, R11);
            y->s.md++;
        }
        break;
    case BC_POP: drop(y, 1); break;
    case BC_PUSH_SELF: pend_push(y, PEND_SELF, 0); break;
    case BC_PUSH_NIL: pend_push(y, PEND_CONST, (int64_t)c->rt->nil); break;
    case BC_PUSH_TRUE: pend_push(y, PEND_CONST, (int64_t)c->rt->true_obj); break;
    case BC_PUSH_FALSE: pend_push(y, PEND_CONST, (int64_t)c->rt->false_obj); break;
    case BC_PUSH_LITERAL: /* an immediate (inlinable) */
        pend_push(y, PEND_CONST, (int64_t)obj_slots(y->m)[METHOD_FIXED_SLOTS + p[1]]);
        break;
    case BC_PUSH_0: pend_push(y, PEND_CONST, (int64_t)oop_from_int(0)); break;
    case BC_PUSH_1: pend_push(y, PEND_CONST, (int64_t)oop_from_int(1)); break;
    case BC_PUSH_ARG: pend_push(y, PEND_ARG, p[1]); break;
    case BC_PUSH_TEMP: pend_push(y, PEND_TEMP, p[1]); break;
    case BC_PUSH_FIELD: pend_push(y, PEND_FIELD, p[1]); break;
    case BC_STORE_ARG: store_slot(y, PEND_ARG, p[1], false); break;
    case BC_POP_ARG: store_slot(y, PEND_ARG, p[1], true); break;
    case BC_STORE_TEMP: store_slot(y, PEND_TEMP, p[1], false); break;
    case BC_POP_TEMP: store_slot(y, PEND_TEMP, p[1], true); break;
    case BC_STORE_FIELD:
    case BC_POP_FIELD: {
        /* a store that must remember self deoptimizes: the interpreter makes it */
        flush(y);
        y->array_field = -1;
        X64Label store = JIT_X64_LABEL("inlined store");
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, self_off(y, y->s.md)));
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
        jit_compile_barrier_unneeded(c, &store);
        jit_x64_jmp_label32(b, stub(y, pc));
        jit_x64_label_bind(b, &store);
        jit_x64_mov_mr(b, jit_x64_mem(RAX, 8 + 8 * p[1]), RCX);
        if (op == BC_POP_FIELD) drop(y, 1);
        break;
    }
    case BC_RETURN_TOP:
    case BC_RETURN_SELF:
        /* the answer where the generic send's arrives, receiver and arguments dropped */
        if (op == BC_RETURN_TOP) operand(y, 0, RAX);
        else jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, self_off(y, y->s.md)));
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, self_off(y, y->s.md) + 8));
        jit_x64_jmp_label32(b, y->done);
        break;
    case BC_JUMP:
        flush(y);
        jit_x64_jmp_label32(b, &y->labels[jit_compile_jump_target(y->code, pc)]);
        break;
    case BC_JUMP_IF_NIL:
    case BC_JUMP_IF_NOT_NIL:
        operand(y, 0, RAX);
        drop(y, 1);
        flush(y); /* pushes and moves keep no flags to keep yet */
        jit_compile_cmp_rax_oop(c, c->rt->nil);
        jit_x64_jcc_label32(b, op == BC_JUMP_IF_NIL ? JIT_X64_CC_E : JIT_X64_CC_NE,
                            &y->labels[jit_compile_jump_target(y->code, pc)]);
        break;
    case BC_JUMP_IF_TRUE:
    case BC_JUMP_IF_FALSE: {
        bool on_true = op == BC_JUMP_IF_TRUE;
        X64Label *to = &y->labels[jit_compile_jump_target(y->code, pc)];
        if (pend_is(y, PEND_FLAGS)) {
            /* a compare's flags: nothing is pending below them (it took two operands) */
            X64Cond when_true = (X64Cond)y->s.pend[y->s.npend - 1].v;
            drop(y, 1);
            VM_ASSERT(y->s.npend == 0);
            jit_x64_jcc_label32(b, on_true ? when_true : (X64Cond)(when_true ^ 1), to);
            break;
        }
        /* a non-Boolean deoptimizes with the condition still on the stack:
         * the interpreter sends mustBeBoolean */
        X64Label taken = JIT_X64_LABEL("inlined jump taken");
        operand(y, 0, RAX);
        jit_compile_cmp_rax_oop(c, on_true ? c->rt->true_obj : c->rt->false_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_E, &taken);
        jit_compile_cmp_rax_oop(c, on_true ? c->rt->false_obj : c->rt->true_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, stub(y, pc));
        PendState at_test = y->s;
        drop(y, 1);
        flush(y);
        jit_x64_jmp_label32(b, &y->labels[pc + 3]);
        jit_x64_label_bind(b, &taken);
        y->s = at_test;
        drop(y, 1);
        flush(y);
        jit_x64_jmp_label32(b, to);
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
        drop(y, 2);
        pend_push(y, PEND_REG, RDX);
        break;
    case BC_SEND_AT: {
        /* not an Array, or the index out of its bounds: the interpreter's at: */
        X64Reg arr, count;
        operand(y, 0, RCX);
        array_operand(y, 1, pc, &arr, &count);
        jit_compile_index_in_or(c, count, stub(y, pc));
        jit_x64_mov_rm(b, RAX, jit_x64_mem_index(arr, RSI, 8, 8));
        drop(y, 2);
        pend_push(y, PEND_REG, RAX);
        break;
    }
    case BC_SEND_AT_PUT: {
        /* as at:, and a store that must remember the Array deoptimizes
         * before it stores: the interpreter makes it */
        X64Label store = JIT_X64_LABEL("inlined at:put:");
        X64Reg arr, count;
        operand(y, 1, RCX);
        array_operand(y, 2, pc, &arr, &count); /* keeps rcx */
        jit_compile_index_in_or(c, count, stub(y, pc));
        operand(y, 0, RCX);
        if (arr != RAX) jit_x64_mov_rr(b, RAX, arr);
        jit_compile_barrier_unneeded(c, &store); /* keeps rsi */
        jit_x64_jmp_label32(b, stub(y, pc));
        jit_x64_label_bind(b, &store);
        jit_x64_mov_mr(b, jit_x64_mem_index(RAX, RSI, 8, 8), RCX);
        drop(y, 3);
        pend_push(y, PEND_REG, RCX); /* at:put: answers the value */
        break;
    }
    case BC_SEND:
    case BC_SEND_W: {
        /* a Boolean send (inlinable): anything but true or false, or a
         * tracer on the method probes (method__entry must fire), deoptimizes
         * and the interpreter sends */
        int k = jit_compile_bool_send_in(c, y->m, p);
        X64Label on_false = JIT_X64_LABEL("inlined false receiver"), answered = JIT_X64_LABEL("inlined Boolean answer");
        operand(y, 1, RAX);
        operand(y, 0, RCX);
        if (c->rt->method_probe_semaphores) {
            jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
            jit_x64_cmp_mi(b, jit_x64_mem(R11, 0), 0);
            jit_x64_jcc_label32(b, JIT_X64_CC_NE, stub(y, pc));
        }
        jit_compile_cmp_rax_oop(c, c->rt->true_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, &on_false);
        jit_compile_bool_answer(c, c->rt->bool_answers[k][0], stub(y, pc));
        jit_x64_jmp_label32(b, &answered);
        jit_x64_label_bind(b, &on_false);
        jit_compile_cmp_rax_oop(c, c->rt->false_obj);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, stub(y, pc));
        jit_compile_bool_answer(c, c->rt->bool_answers[k][1], stub(y, pc));
        jit_x64_label_bind(b, &answered);
        drop(y, 2);
        pend_push(y, PEND_REG, RAX);
        break;
    }
    case BC_SEND_LENGTH: {
        X64Reg arr, count;
        array_operand(y, 0, pc, &arr, &count);
        jit_x64_lea_rm(b, RAX, jit_x64_mem_index(count, count, 1, 1)); /* tag it */
        drop(y, 1);
        pend_push(y, PEND_REG, RAX);
        break;
    }
    default: {
        VM_ASSERT(jit_compile_is_compare(op), "inlinable let %s through", vm_bytecode_name[op]);
        int_operands(y, pc);
        jit_x64_cmp_rr(b, RAX, RCX);
        X64Cond cc = jit_compile_compare_cond(op);
        size_t next = pc + vm_bytecode_length[op];
        drop(y, 2); /* lea keeps the flags */
        if (y->flags_ok && next < y->len && !y->target[next] &&
            (y->code[next] == BC_JUMP_IF_TRUE || y->code[next] == BC_JUMP_IF_FALSE)) {
            pend_push(y, PEND_FLAGS, cc);
        } else {
            jit_compile_set_boolean(c, cc);
            pend_push(y, PEND_REG, RAX);
        }
        break;
    }
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
    y.target = calloc(y.len + 1, sizeof *y.target);
    y.stub_at = malloc((y.len + 1) * sizeof *y.stub_at);
    y.flags_ok = !c->rt->deopt_countdown;
    y.array_field = -1;
    X64Label miss = JIT_X64_LABEL("inline guard missed"), done = JIT_X64_LABEL("inlined send done"),
             cont = JIT_X64_LABEL("generic send's continuation");
    y.done = &done;
    y.cont = &cont;
    if (!y.depth || !y.labels || !y.stubs || !y.stub_used || !y.target || !y.stub_at ||
        !callee_depths(c, s->method, y.depth)) {
        /* out of C memory: the plain send (the scope stays, its range empty) */
        free(y.depth), free(y.labels), free(y.stubs), free(y.stub_used), free(y.target), free(y.stub_at);
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
    for (size_t pc = 0; pc < y.len; pc += vm_bytecode_length[y.code[pc]]) {
        long t = jit_compile_jump_target(y.code, pc);
        if (t >= 0) y.target[t] = true;
    }
    uint32_t scope = c->nscopes++;
    c->scopes[scope] = (JitInlineScope){ s->method, (uint32_t)s->pc, -1, s->class_index, 0 };

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
    const JitWholeLoop *whole = jit_whole_inline_at(c, s->pc);
    if (whole) { /* the body compiled whole first (vm/jit/whole_loop.c); its failed tests fall into the templates */
        jit_whole_inline_emit(c, whole, &done);
        jit_compile_map_here(c, 0, JIT_MAP_LOCAL); /* (dropped when bytecode 0 leaves its word pending) */
    }
    if (y.ntemps) {
        jit_x64_mov_ri(b, R11, (int64_t)c->rt->nil);
        for (int t = 0; t < y.ntemps; t++) jit_x64_push_r(b, R11);
    }
    bool falls_in = true; /* whether the bytecode before runs on into this one */
    uint32_t last_mark = whole ? (uint32_t)jit_x64_size(b) : UINT32_MAX; /* where the last bytecode's mark went */
    for (size_t pc = 0; pc < y.len; pc += vm_bytecode_length[y.code[pc]]) {
        if (!falls_in) y.s = (PendState){ .md = y.depth[pc] < 0 ? 0 : y.depth[pc] };
        else if (y.target[pc]) flush(&y); /* every path into a label has nothing pending */
        if (!falls_in || y.target[pc]) y.array_field = -1; /* nor an Array known */
        jit_x64_label_bind(b, &y.labels[pc]);
        uint8_t op = y.code[pc];
        falls_in = op != BC_JUMP && op != BC_RETURN_TOP && op != BC_RETURN_SELF;
        if (y.depth[pc] < 0) {
            falls_in = false;
            continue; /* unreachable */
        }
        if (pc) {
            /* a bytecode that left its word pending emitted nothing: the
             * next one's mark takes its place (one bytecode per mcpc) */
            uint32_t n = jit_map_builder_count(&c->map), here = (uint32_t)jit_x64_size(b);
            if (n && c->map.entries[n - 1].mcpc == here && here == last_mark) jit_map_drop_last(&c->map);
            jit_compile_map_here(c, pc, JIT_MAP_LOCAL);
            last_mark = here;
        }
        /* what a template would push before its first deopt point is pushed
         * before the stress mode's test, so both leave the same pending */
        if (((pend_is(&y, PEND_REG) || pend_is(&y, PEND_FLAGS)) && !takes_register(&y, pc)) || flushes_first(op))
            flush(&y);
        if (pend_is(&y, PEND_REG) && computes_over_register(op)) keep_top_register(&y);
        if (c->rt->deopt_countdown) emit_countdown(&y, pc);
        emit_body_bytecode(&y, pc);
    }
    VM_ASSERT(!falls_in, "a callee's last bytecode runs on");
    jit_x64_label_bind(b, &y.labels[y.len]);
    /* the deopt stubs: one per bytecode that has a deopt point, each
     * mapped at its bytecode (the stub starts after an int3, so that no
     * mcpc has two bytecodes) */
    for (size_t pc = 0; pc < y.len; pc++) {
        if (!y.stub_used[pc]) continue;
        jit_x64_int3(b);
        jit_x64_label_bind(b, &y.stubs[pc]);
        jit_compile_map_here(c, pc, JIT_MAP_LOCAL);
        flush_state(&y, &y.stub_at[pc]);
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
    free(y.target);
    free(y.stub_at);
}

/* The 5-byte nop (Intel's recommended one) every range starts with. */
static const uint8_t range_nop[JIT_X64_JMP_REL32_SIZE] = { 0x0F, 0x1F, 0x44, 0x00, 0x00 };

bool jit_inline_disabled(const JitMethod *jm, uint32_t range)
{
    VM_ASSERT(range < jit_method_inline_range_count(jm));
    return *jit_method_at(jm, jit_method_inline_ranges(jm)[range].start) == 0xE9;
}

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
