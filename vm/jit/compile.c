/*
 * vm/jit/compile.c — the template compiler (the frame and calling conventions
 * are drawn in vm/jit/compile.h).
 *
 * Two passes over the bytecodes: the first checks that every bytecode can be
 * compiled, finds the jump targets and bounds the code size; the second emits
 * one template per bytecode into a piece allocated at that bound, which is
 * then shrunk to the code plus its mcpc -> bcpc map.
 *
 * The X64Buf starts at the JitMethod header, not at the code, so buffer
 * offsets are the header offsets vm/jit/map.h's mcpcs are counted in, and the
 * prologue reaches the header's method field through a label bound at 0.
 */
#include "vm/jit/compile.h"

#include "base/error.h"

#include "vm/jit/compile_int.h"

#include "vm/jit/map.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/x64.h"
#include "proto/stackabi.h"
#include "vm/model/frame.h"
#include "vm/model/universe.h"
#include "vm/model/method.h"
#include "vm/model/vm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Code-size bounds, in bytes, of each template (measured from the encodings
 * below with margin; an underestimate only makes jit_compile decline). */
#define BOUND_PROLOGUE 168 /* checked entry, checks (the method probes' too), frame, slow paths */
#define BOUND_PER_TEMP 2
#define BOUND_SIMPLE 24        /* pushes, stores, returns, plain jumps */
#define BOUND_SEND 40          /* argument registers, call, drop, push */
#define BOUND_ACCESSOR 112     /* an inline accessor's tests, load or store + barrier test, jumps */
#define BOUND_FIELD_STORE 80   /* store + inline barrier check + call */
#define BOUND_SPECIAL 560      /* inline SmallInteger, Double or Array path + generic send */
#define BOUND_COND_JUMP 96     /* two compares + mustBeBoolean send */
#define BOUND_BACK_JUMP 48     /* safepoint check + call + jmp */
#define BOUND_TAIL 80 /* ud2, the Double constants aligned, the countdown word */
#define JIT_LOOP_ALIGN 16 /* Intel's optimization manual: 16-byte aligned branch targets of hot loops */
#define BOUND_OUTER 160      /* inline chain walk + runtime fallback */
#define BOUND_RETURN 48     /* widow check + call + epilogue */
#define MAP_ENTRIES_PER_BYTECODE 4 /* + where its cold code starts */

static size_t template_bound(uint8_t op)
{
    switch (op) {
    case BC_SEND:
    case BC_SEND_W:
    case BC_SUPER_SEND:
    case BC_SUPER_SEND_W:
    case BC_PUSH_GLOBAL:
    case BC_PUSH_GLOBAL_W:
    case BC_PUSH_BLOCK:
    case BC_PUSH_BLOCK_W:
    case BC_PUSH_OUTER:
    case BC_STORE_OUTER:
    case BC_POP_OUTER: return BOUND_OUTER;
    case BC_RETURN_NONLOCAL: return BOUND_SEND;
    case BC_RETURN_TOP:
    case BC_RETURN_SELF: return BOUND_RETURN;
    case BC_STORE_FIELD:
    case BC_POP_FIELD: return BOUND_FIELD_STORE;
    case BC_JUMP_IF_TRUE:
    case BC_JUMP_IF_FALSE:
    case BC_JUMP_IF_NIL:
    case BC_JUMP_IF_NOT_NIL: return BOUND_COND_JUMP;
    case BC_JUMP_BACK: return BOUND_BACK_JUMP;
    default: return op >= BC_SEND_ADD && op <= BC_SEND_LAST_SPECIAL ? BOUND_SPECIAL : BOUND_SIMPLE;
    }
}

/* -- First pass: can it be compiled? ---------------------------------------------- */

static const char *declined_bytecode(uint8_t op)
{
    switch (op) {
    case BC_HALT: return "HALT";
    case BC_PUSH_VAR:
    case BC_STORE_VAR:
    case BC_POP_VAR: return "an unquickened variable access";
    default: return NULL;
    }
}

/* Checks every bytecode, marks jump targets and answers the code bound, or
 * 0 with the reason in why. */
static size_t scan(Compiler *c, char *why, size_t whylen)
{
    size_t bound = JIT_METHOD_CODE + BOUND_PROLOGUE + BOUND_PER_TEMP * (size_t)c->ntemps + BOUND_TAIL;
    size_t nlits = vm_method_pointer_slots(c->method) - METHOD_FIXED_SLOTS;
    for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]]) {
        uint8_t op = c->code[pc];
        if (op >= BC_COUNT || pc + vm_bytecode_length[op] > c->len) {
            base_error(why, whylen, "bytecode %zu is malformed", pc);
            return 0;
        }
        if (op == BC_PUSH_BLOCK || op == BC_PUSH_BLOCK_W) c->makes_blocks = true;
        const char *no = declined_bytecode(op);
        if (no) {
            base_error(why, whylen, "it has %s (%s at bytecode %zu)", no, vm_bytecode_name[op], pc);
            return 0;
        }
        long t = jit_compile_jump_target(c->code, pc);
        if (op == BC_JUMP || (op >= BC_JUMP_BACK && op <= BC_JUMP_IF_NOT_NIL)) {
            if (t < 0 || (size_t)t > c->len) {
                base_error(why, whylen, "the jump at bytecode %zu leaves the method", pc);
                return 0;
            }
            c->target[t] = true;
            if (op == BC_JUMP_BACK) {
                c->loop_head[t] = true;
                bound += JIT_LOOP_ALIGN;
            }
        }
        bool narrow = op == BC_PUSH_LITERAL || op == BC_SEND || op == BC_SUPER_SEND || op == BC_PUSH_BLOCK;
        bool wide = op == BC_PUSH_LITERAL_W || op == BC_SEND_W || op == BC_SUPER_SEND_W || op == BC_PUSH_BLOCK_W;
        size_t lit = narrow ? c->code[pc + 1] : wide ? jit_compile_operand_w(c->code + pc + 1) : 0;
        if (lit >= nlits && (narrow || wide)) {
            base_error(why, whylen, "bytecode %zu names literal %zu of %zu", pc, lit, nlits);
            return 0;
        }
        bound += template_bound(op) + BOUND_COND_JUMP; /* + a fused jump's slow path */
    }
    /* the Double fast paths beyond the templates': the plain sends // and
     * sqrt get a special send's bound more, and chains theirs (the targets
     * are all known now) */
    for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]]) {
        uint8_t op = c->code[pc];
        if ((op == BC_SEND || op == BC_SEND_W) && jit_double_send_kind(c, pc) != JIT_DOUBLE_SEND_NONE)
            bound += BOUND_SPECIAL;
        if (op == BC_SEND || op == BC_SEND_W) bound += BOUND_ACCESSOR; /* (if the site has one) */
        if (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) {
            JitDoubleLink links[JIT_DOUBLE_CHAIN_MAX];
            bound += jit_double_chain_bound(jit_double_chain_scan(c, pc, links, JIT_DOUBLE_CHAIN_MAX));
        }
    }
    return bound;
}

/* -- Emit helpers --------------------------------------------------------------------- */

/* The cold section after the main code (after its last bytecode, under the
 * frame's unwind rule): its map entries and literal sites move with it. */
static void cold_join(Compiler *c)
{
    size_t moved = jit_x64_cold_join(&c->b);
    if (!c->cold_at) return;
    for (uint32_t i = 0; i < jit_map_builder_count(&c->cold_map); i++) {
        const JitMapEntry *e = &c->cold_map.entries[i];
        jit_map_add(&c->map, (uint32_t)(e->mcpc - moved), e->bcpc, e->kind);
    }
    if (!jit_map_builder_ok(&c->cold_map)) c->map.failed = true;
    for (uint32_t i = 0; i < c->nlits; i++)
        if (c->lits[i] >= c->cold_at) c->lits[i] -= (uint32_t)moved;
    c->cold_at = 0;
}

/* From the next instruction on, a profiler finds this piece's caller by
 * `rule` (proto/stackabi.h). Called right after the instruction that
 * changes where the return address is (push rbp, mov rbp, rsp, pop rbp,
 * ret), so every pc has the rule of the state it runs in. */
static void unwind_from_here(Compiler *c, uint32_t rule)
{
    VM_ASSERT(!jit_x64_in_cold(&c->b), "the cold section runs in the frame");
    uint32_t off = (uint32_t)jit_x64_size(&c->b);
    if (c->nunwind && c->unwind[2 * (c->nunwind - 1)] == off) {
        c->unwind[2 * (c->nunwind - 1) + 1] = rule;
        return;
    }
    if (c->nunwind && c->unwind[2 * (c->nunwind - 1) + 1] == rule) return;
    if (c->nunwind == c->unwind_cap) {
        uint32_t ncap = c->unwind_cap ? c->unwind_cap * 2 : 16;
        uint32_t *n = realloc(c->unwind, ncap * 2 * sizeof *n);
        if (!n) {
            c->lits_failed = true;
            return;
        }
        c->unwind = n;
        c->unwind_cap = ncap;
    }
    c->unwind[2 * c->nunwind] = off;
    c->unwind[2 * c->nunwind + 1] = rule;
    c->nunwind++;
}

static X64Mem field_of_rax(int i) { return jit_x64_mem(RAX, (int32_t)(8 + 8 * i)); }

/* -- Stores and sends over the simulated stack (vm/jit/simstack.c) ------------------ */

/* Whether a block of the method (at any depth) writes an outer variable:
 * only then can a send change one of the method's temps. */
static bool blocks_write_outer(Oop method, int depth)
{
    const uint8_t *code = vm_method_bytecodes(method);
    size_t len = vm_method_bytecode_length(method);
    for (size_t pc = 0; pc < len; pc += vm_bytecode_length[code[pc]]) {
        uint8_t op = code[pc];
        if (depth > 0 && (op == BC_STORE_OUTER || op == BC_POP_OUTER)) return true;
        if (op == BC_PUSH_BLOCK || op == BC_PUSH_BLOCK_W) {
            if (depth > 8) return true; /* deep enough: assume it does */
            size_t lit = op == BC_PUSH_BLOCK ? code[pc + 1] : (size_t)jit_compile_operand_w(code + pc + 1);
            Oop block = obj_slots(method)[METHOD_FIXED_SLOTS + lit];
            if (blocks_write_outer(block, depth + 1)) return true;
        }
    }
    return false;
}

/* STORE_TEMP/POP_TEMP/STORE_ARG/POP_ARG: the top into a frame slot. */
static void store_var(Compiler *c, SimKind kind, int v, bool pop)
{
    X64Buf *b = &c->b;
    X64Mem dst = kind == SIM_TEMP ? jit_compile_temp_slot(v) : jit_compile_arg_slot(v);
    if (jit_sim_reads_below_top(c, kind, v)) jit_sim_flush_below(c, 1); /* they must see the old value */
    if (!c->nsim) {
        if (pop) jit_x64_pop_r(b, R11);
        else jit_x64_mov_rm(b, R11, jit_x64_mem(RSP, 0));
        jit_x64_mov_mr(b, dst, R11);
        if (kind == SIM_TEMP) jit_double_cache_stored(c, v, NULL, R11);
        return;
    }
    SimEntry top = c->sim[c->nsim - 1];
    X64Reg r = top.kind == SIM_RAX ? RAX : R11;
    if (top.kind == SIM_CONST && jit_compile_fits_i32(top.v)) {
        jit_x64_mov_mi32(b, dst, (int32_t)top.v);
    } else {
        jit_sim_load(c, top, r);
        jit_x64_mov_mr(b, dst, r);
    }
    if (kind == SIM_TEMP) jit_double_cache_stored(c, v, &top, r);
    if (pop) c->nsim--;
}

/* A send through the send trampoline; the receiver and nargs arguments are
 * on the stack, the result replaces them. The map entry is the call's
 * return address. */
static void send_call(Compiler *c, int64_t tag, int nargs, size_t bcpc)
{
    jit_double_cache_flush(c, bcpc); /* the callee may look at the frame; the refill after reads the slots */
    jit_sendsite_emit(&c->b, jit_sendsite_unlinked_tag(tag, nargs), c->rt->send);
    jit_compile_map_here(c, (uint32_t)bcpc, JIT_MAP_SEND);
    jit_double_cache_load(c); /* the callee used the xmm registers */
}

/* The same, the result left in rax (not pushed). */
static void emit_send_rax(Compiler *c, int64_t tag, int nargs, size_t bcpc)
{
    send_call(c, tag, nargs, bcpc);
    jit_x64_lea_rm(&c->b, RSP, jit_x64_mem(RSP, 8 * (nargs + 1)));
}

/* A global's value from the runtime (which may hand an unknown one to the
 * interpreter for #unknownGlobal:); mapped like a send. */
static void add_lit_site(Compiler *c, size_t imm_offset)
{
    if (c->nlits == c->lits_cap) {
        uint32_t ncap = c->lits_cap ? c->lits_cap * 2 : 8;
        uint32_t *n = realloc(c->lits, ncap * sizeof *n);
        if (!n) {
            c->lits_failed = true;
            return;
        }
        c->lits = n;
        c->lits_cap = ncap;
    }
    c->lits[c->nlits++] = (uint32_t)imm_offset;
}

/* A global's value, cached in the code (vm/jit/compile.h, "Global sites"):
 * valid while the VM's globals epoch is the one the site recorded. */
static void emit_global(Compiler *c, int64_t literal, size_t bcpc)
{
    X64Buf *b = &c->b;
    X64Label site = JIT_X64_LABEL("global site"), cmp = JIT_X64_LABEL("epoch cmp"), hit = JIT_X64_LABEL("global hit");
    jit_x64_label_bind(b, &site);
    size_t start = jit_x64_size(b);
    add_lit_site(c, start + JIT_X64_MOVABS_IMM_OFFSET);
    jit_x64_mov_ri64(b, RAX, 0);
    jit_x64_mov_ri64(b, R11, (uint64_t)(uintptr_t)c->rt->globals_epoch);
    jit_x64_mov_rm(b, RDX, jit_x64_mem(R11, 0));
    jit_x64_label_bind(b, &cmp);
    VM_ASSERT(jit_x64_size(b) - start == JIT_GLOBAL_SITE_EPOCH_CMP, "global site layout");
    jit_x64_cmp_r32i(b, RDX, 0); /* no epoch is 0 (vm/model/globals.h) */
    jit_x64_jcc_label(b, JIT_X64_CC_E, &hit);
    jit_x64_mov_ri(b, RDI, literal);
    jit_x64_lea_rl(b, RSI, &site);
    jit_x64_call_rel32(b, c->rt->global);
    jit_compile_map_here(c, (uint32_t)bcpc, JIT_MAP_OTHER);
    jit_x64_label_bind(b, &hit); /* the value in rax */
}

bool jit_compile_global_site_fill(uint8_t *site, Oop value, uint32_t epoch)
{
    uint8_t *imm = site + JIT_X64_MOVABS_IMM_OFFSET;
    memcpy(imm, &value, sizeof value);
    Oop back;
    memcpy(&back, imm, sizeof back);
    uint32_t e;
    return back == value && jit_x64_patch_cmp_imm32(site + JIT_GLOBAL_SITE_EPOCH_CMP, epoch) &&
           jit_x64_read_cmp_imm32(site + JIT_GLOBAL_SITE_EPOCH_CMP, &e) && e == epoch;
}

/* A call of a runtime trampoline for the bytecode at bcpc: mapped so the
 * return address finds its bytecode (and compaction the call). */
static void runtime_call(Compiler *c, const uint8_t *trampoline, size_t bcpc)
{
    jit_x64_call_rel32(&c->b, trampoline);
    jit_compile_map_here(c, (uint32_t)bcpc, JIT_MAP_OTHER);
}

/* rax = the answer. A frame that made blocks may have a context, which
 * must take its variables before the frame goes (vm/interp/stack.c's widow). */
static void epilogue(Compiler *c)
{
    if (c->makes_blocks) {
        X64Label no_context = JIT_X64_LABEL("no context");
        jit_x64_mov_rm(&c->b, RCX, jit_x64_mem(RBP, 8 * FRAME_FLAGS));
        jit_x64_bt_ri(&c->b, RCX, VM_FRAME_TAGGED_POS(CONTEXT));
        jit_x64_jcc_label32(&c->b, JIT_X64_CC_NC, &no_context);
        jit_x64_push_r(&c->b, RAX);
        jit_x64_call_rel32(&c->b, c->rt->widow);
        jit_compile_map_here(c, 0, JIT_MAP_OTHER);
        jit_x64_pop_r(&c->b, RAX);
        jit_x64_label_bind(&c->b, &no_context);
    }
    jit_x64_mov_rr(&c->b, RSP, RBP);
    jit_x64_pop_r(&c->b, RBP);
    unwind_from_here(c, PROF_UNWIND_FRAMELESS);
    jit_x64_ret(&c->b);
    unwind_from_here(c, PROF_UNWIND_FRAME); /* the code after a return still runs in the frame */
}

/* -- Templates -------------------------------------------------------------------------- */

/* To slow on an interrupt: a GC wanted, a tracer on the method probes.
 * Clobbers rax, r11. */
static void emit_interrupt_check(Compiler *c, X64Label *slow)
{
    X64Buf *b = &c->b;
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->collect_wanted);
    jit_x64_movzx_rm8(b, RAX, jit_x64_mem(R11, 0));
    if (c->rt->method_probe_semaphores) {
        /* both are the VM's globals: vm_probe_method_semaphores checked they lie within 2 GiB */
        intptr_t d = (intptr_t)c->rt->method_probe_semaphores - (intptr_t)c->rt->collect_wanted;
        VM_ASSERT(d == (int32_t)d);
        jit_x64_or_rm(b, RAX, jit_x64_mem(R11, (int32_t)d)); /* both semaphores, and 32 bits of 0 */
    } else {
        jit_x64_test_rr(b, RAX, RAX);
    }
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, slow);
}

static void emit_prologue(Compiler *c, X64Label *header, X64Label *slow, X64Label *checked)
{
    X64Buf *b = &c->b;
    emit_interrupt_check(c, slow); /* then room for the frame on this page */
    int words = FRAME_HEADER_WORDS + c->ntemps + vm_method_max_stack(c->method) + 1 + c->rt->headroom_words;
    jit_x64_lea_rm(b, RAX, jit_x64_mem(RSP, 8 - 8 * words)); /* rsp + 8: the interpreter's sp (vm/interp/interp.c, activate) */
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->page);
    jit_x64_mov_rm(b, R11, jit_x64_mem(R11, 0));
    jit_x64_cmp_rm(b, RAX, jit_x64_mem(R11, 0));
    jit_x64_jcc_label32(b, JIT_X64_CC_B, slow);
    jit_x64_label_bind(b, checked);

    jit_x64_push_r(b, RBP);
    unwind_from_here(c, PROF_UNWIND_PUSHED_BP);
    jit_x64_mov_rr(b, RBP, RSP);
    unwind_from_here(c, PROF_UNWIND_FRAME);
    jit_x64_lea_rl(b, RAX, header);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RAX, offsetof(JitMethod, method)));
    jit_x64_push_r(b, RAX); /* fp[-1] method */
    jit_x64_mov_ri(b, R11, (int64_t)c->rt->nil);
    jit_x64_push_r(b, R11); /* fp[-2] context */
    int64_t flags = (int64_t)oop_from_int(FRAME_FLAGS_MAKE(c->nargs, c->ntemps, c->is_block) |
                                          FRAME_FLAG_MACHINE_CODE |
                                          VM_FRAME_PUT(CALLER_NARGS, c->nargs));
    if (jit_compile_fits_i32(flags)) {
        jit_x64_push_i32(b, (int32_t)flags); /* fp[-3] flags */
    } else {
        jit_x64_mov_ri(b, RAX, flags);
        jit_x64_push_r(b, RAX);
    }
    if (c->is_block) {
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RBP, 8 * (2 + c->nargs)));
        jit_x64_mov_rm(b, RAX, field_of_rax(BLOCK_RECEIVER)); /* the receiver slot holds the closure */
        jit_x64_push_r(b, RAX); /* fp[-4] self */
    } else {
        jit_x64_push_m(b, jit_x64_mem(RBP, 8 * (2 + c->nargs))); /* fp[-4] self */
    }
    for (int t = 0; t < c->ntemps; t++) jit_x64_push_r(b, R11);
}

/* JUMP_IF_TRUE/FALSE/NIL/NOT_NIL at pc on the condition in rax (already
 * popped; nothing is on the simulated stack). */
static void emit_cond_jump_rax(Compiler *c, size_t pc)
{
    X64Buf *b = &c->b;
    uint8_t op = c->code[pc];
    X64Label *taken = &c->labels[jit_compile_jump_target(c->code, pc)];
    VM_ASSERT(c->nsim == 0, "a jump with values on the simulated stack");
    if (op == BC_JUMP_IF_NIL || op == BC_JUMP_IF_NOT_NIL) {
        jit_compile_cmp_rax_oop(c, c->rt->nil);
        jit_compile_jcc_to(c, op == BC_JUMP_IF_NIL ? JIT_X64_CC_E : JIT_X64_CC_NE, taken, pc);
        return;
    }
    X64Label retry = JIT_X64_LABEL("retest"), not_taken = JIT_X64_LABEL("not taken");
    bool on_true = op == BC_JUMP_IF_TRUE;
    jit_x64_label_bind(b, &retry);
    jit_compile_cmp_rax_oop(c, on_true ? c->rt->true_obj : c->rt->false_obj);
    jit_compile_jcc_to(c, JIT_X64_CC_E, taken, pc);
    X64Label non_boolean = JIT_X64_LABEL("not a Boolean");
    jit_compile_cmp_rax_oop(c, on_true ? c->rt->false_obj : c->rt->true_obj);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &non_boolean);
    jit_x64_jmp_forward(b, &not_taken); /* dropped when the next lines go to the cold section */
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &non_boolean);
    jit_x64_push_r(b, RAX); /* a non-Boolean: ask it, test the answer again */
    emit_send_rax(c, JIT_SEND_MUST_BE_BOOLEAN, 0, pc);
    jit_x64_jmp_label32(b, &retry);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &not_taken);
}

/* JUMP_IF_* at pc: pops the condition. A constant true/false decides at
 * compile time. */
static void emit_cond_jump(Compiler *c, size_t pc)
{
    jit_sim_flush_below(c, 1);
    uint8_t op = c->code[pc];
    if (c->nsim && c->sim[0].kind == SIM_CONST && (op == BC_JUMP_IF_TRUE || op == BC_JUMP_IF_FALSE) &&
        (c->sim[0].v == (int64_t)c->rt->true_obj || c->sim[0].v == (int64_t)c->rt->false_obj)) {
        bool taken = (c->sim[0].v == (int64_t)c->rt->true_obj) == (op == BC_JUMP_IF_TRUE);
        c->nsim = 0;
        if (taken) jit_x64_jmp_label32(&c->b, &c->labels[jit_compile_jump_target(c->code, pc)]);
        return;
    }
    jit_sim_pop_into(c, RAX);
    emit_cond_jump_rax(c, pc);
}

static bool emit_array_fast_path(Compiler *c, uint8_t op, size_t pc, bool value_const, X64Label *slow, X64Label *done);

/* The end of a send with fast paths (emit_special, emit_double_send): at slow,
 * in the cold section, the operands loaded from descriptors go back on the real
 * stack under the k - d already there and the send is made; the fast paths jump
 * to done with the answer in rax (the last one's jump is dropped: it falls through). Both drop the operands from the real stack; the answer is SIM_RAX. */
/* rcx := the constant argument emit_special left out of it (c->lazy_rcx). */
static void load_lazy_rcx(Compiler *c)
{
    if (c->lazy_rcx) jit_x64_mov_ri(&c->b, RCX, c->lazy_rcx_value);
}

static void send_and_merge(Compiler *c, X64Label *slow, X64Label *done, const X64Reg regs[2], int s, int k,
                           int64_t tag, int nargs, size_t pc)
{
    X64Buf *b = &c->b;
    X64Label merged = JIT_X64_LABEL("send merged");
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, slow);
    load_lazy_rcx(c);
    c->lazy_rcx = false;
    VM_ASSERT(!c->nheld || !s, "held descriptors above the real stack's operands");
    for (int i = 0; i < c->nheld; i++) jit_sim_materialise(c, c->held[i]); /* a whole frame for the send */
    for (int j = s; j < k; j++) jit_x64_push_r(b, regs[j]);
    send_call(c, tag, nargs, pc);
    jit_double_cache_answer(c);
    jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * (k + c->nheld)));
    jit_x64_jmp_forward(b, s ? &merged : done);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, done);
    if (s) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * s));
    jit_x64_label_bind(b, &merged);
    jit_sim_push(c, SIM_RAX, 0);
}

/* A special send at pc. Answers the bytes it consumed: its own, or with the
 * conditional jump it fused. */
/* Special sends whose fast paths keep the operands in rax and rcx until
 * their last jump to the generic send (which then pushes them): their
 * operands may come straight from descriptors. The others (divisions and
 * shifts clobber them; at:put: has three operands and calls the barrier;
 * value and value: have no fast path) find their operands on the real
 * stack. */
static bool special_keeps_operands(uint8_t op)
{
    switch (op) {
    case BC_SEND_ADD: case BC_SEND_SUB: case BC_SEND_MUL:
    case BC_SEND_LT: case BC_SEND_GT: case BC_SEND_LE: case BC_SEND_GE: case BC_SEND_EQ: case BC_SEND_NE:
    case BC_SEND_NOT_EQUAL: case BC_SEND_IDENTICAL: case BC_SEND_AT: case BC_SEND_LENGTH:
    case BC_SEND_BIT_AND: case BC_SEND_BIT_XOR: case BC_SEND_MAX: case BC_SEND_MIN:
    case BC_SEND_ABS: case BC_SEND_NEGATED: case BC_SEND_IS_NIL: case BC_SEND_NOT_NIL: return true;
    default: return false;
    }
}

/* The k <= 2 operands of a special send into regs (receiver first): operand j
 * (0 = the receiver) is descriptor sim[j - s] when j >= s, s = k - nsim, else on
 * the real stack at [rsp + 8 * (s - 1 - j)]. An argument already in rax goes to
 * rcx before rax is overwritten. */
static void load_operands(Compiler *c, int k, const X64Reg regs[2])
{
    int d = c->nsim, s = k - d;
    int order[2] = { 0, 1 };
    if (k == 2 && d >= 1 && c->sim[d - 1].kind == SIM_RAX) order[0] = 1, order[1] = 0; /* rcx := rax first */
    for (int i = 0; i < k; i++) {
        int j = order[i];
        /* a special send that read a lazy temp reads its operands again
         * wherever it leaves its Double path: that path reads a lazy temp's
         * register or slot itself (jit_double_load), and a literal Double's
         * value from the code */
        if (j >= s && c->lazy_skip_loads &&
            (jit_double_lazy_bit(c, jit_double_cached(c, &c->sim[j - s])) ||
             (c->sim[j - s].kind == SIM_LIT &&
              vm_is_double(obj_slots(c->method)[METHOD_FIXED_SLOTS + c->sim[j - s].v]))))
            continue;
        if (j >= s) jit_sim_load(c, c->sim[j - s], regs[j]);
        else jit_x64_mov_rm(&c->b, regs[j], jit_x64_mem(RSP, 8 * (s - 1 - j)));
    }
}

/* A special send at pc. Answers the bytes it consumed: its own, or with the
 * conditional jump it fused. Its k = nargs + 1 operands: the top d on the
 * simulated stack, the s = k - d below them on the real stack; the receiver
 * is loaded into rax, the argument into rcx. Fast paths leave the answer in
 * rax and jump to fast_done; the generic send pushes the d loaded operands
 * (they are still in rax/rcx: special_keeps_operands), and both drop the
 * operands from the real stack: the answer is a SIM_RAX descriptor. */
static size_t emit_special(Compiler *c, size_t pc)
{
    X64Buf *b = &c->b;
    uint8_t op = c->code[pc];
    size_t next = pc + 1;
    int nargs = vm_special_nargs[op - BC_SEND_ADD];
    int k = nargs + 1;
    bool keeps = special_keeps_operands(op);
    /* at:put: of a SIM_CONST (a SmallInteger, nil, true, false: never young) needs no
     * store barrier; the flush below forgets what the value was */
    bool value_const = k == 3 && c->nsim >= 1 && c->sim[c->nsim - 1].kind == SIM_CONST;
    VM_ASSERT(!value_const || oop_is_int((Oop)c->sim[c->nsim - 1].v) ||
              (uintptr_t)c->sim[c->nsim - 1].v >= *c->rt->old_start);
    /* a conditional jump fused with the compare flushes what lies below, as
     * every jump does; a chain whose later link takes the answer so far as
     * its argument finds that link's receiver on the real stack */
    bool hold = keeps && !(jit_compile_is_compare(op) && jit_compile_fused_branch(c, next) >= 0);
    if (hold && (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL)) {
        JitDoubleLink links[JIT_DOUBLE_CHAIN_MAX];
        int n = jit_double_chain_scan(c, pc, links, JIT_DOUBLE_CHAIN_MAX);
        for (int i = 1; i < n; i++)
            if (!links[i].prev_is_receiver && links[i].op != JIT_DOUBLE_OP_SQRT) hold = false;
    }
    if (hold) jit_sim_hold_below(c, k);
    else if (keeps) jit_sim_flush_below(c, k);
    else jit_sim_flush(c);
    int d = c->nsim, s = k - d;
    VM_ASSERT(d <= k && k <= 3);
    /* operand j (0 = receiver) is descriptor sim[j - s] when j >= s, else at [rsp + 8 * (s - 1 - j)] */
    X64Reg regs[2] = { RAX, RCX };
    bool arg_int = false; /* the argument is a SmallInteger constant, arg_const */
    int64_t arg_const = 0;
    JitOperandFacts facts = { .receiver_xmm = -1, .arg_xmm = -1 };
    if (k <= 2) {
        arg_int = k == 2 && d == 2 && c->sim[1].kind == SIM_CONST && oop_is_int((Oop)c->sim[1].v);
        arg_const = arg_int ? c->sim[1].v : 0;
        if (k == 2) facts = jit_double_facts(c, s == 0 ? &c->sim[0] : NULL, d >= 1 ? &c->sim[d - 1] : NULL);
    }
    X64Label slow = JIT_X64_LABEL("generic send"), done = JIT_X64_LABEL("special done");
    X64Label not_ints = JIT_X64_LABEL("not SmallIntegers");
    bool dbl_arith = (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) && jit_double_inline(c, op);
    bool dbl_cmp = (op == BC_SEND_LT || op == BC_SEND_GT || op == BC_SEND_LE || op == BC_SEND_GE || op == BC_SEND_EQ) &&
                   jit_double_inline(c, op);
    /* a literal Double operand: no SmallInteger answer, straight to the Double path */
    bool ints = jit_int_inline(c, op) && !((facts.receiver_double || facts.arg_double) && (dbl_arith || dbl_cmp));
    /* an operand from a temp that likely holds a Double (vm/jit/double_types.c),
     * or a site the interpreter ran on Doubles (vm/interp/doublesites.h): the Double
     * path first, the SmallIntegers' when it is not taken */
    bool double_first = (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) && ints && dbl_arith && k == 2 &&
                        ((s == 0 && jit_double_likely(c, &c->sim[0])) || (d >= 1 && jit_double_likely(c, &c->sim[d - 1])) ||
                         (c->rt->site_saw_double && c->rt->site_saw_double(c->code + pc)));
    /* a SmallInteger constant argument that the SmallIntegers' path, tried
     * first, takes as an immediate: rcx is loaded only where the other paths
     * start (load_lazy_rcx), so a counter's `i + 1` or `n < 2` costs no mov */
    c->lazy_rcx = arg_int && ints && !double_first &&
                  (((op == BC_SEND_ADD || op == BC_SEND_SUB) && jit_compile_fits_i32(arg_const - 1)) ||
                   (jit_compile_is_compare(op) && op != BC_SEND_NOT_EQUAL && op != BC_SEND_NE && jit_compile_fits_i32(arg_const)));
    c->lazy_rcx_value = arg_const;
    /* a lazy temp's operand (vm/jit/double_cache.c): read from its register
     * on the Double path; where that path is left, the lazy temps are
     * written back and the operands read again from their slots */
    bool lazy_operand = k == 2 && (jit_double_lazy_bit(c, facts.receiver_xmm) || jit_double_lazy_bit(c, facts.arg_xmm));
    if (lazy_operand && !(dbl_arith && (double_first || !ints))) c->lazy_broken = true; /* (the plan rules it out) */
    SimEntry operands[2];
    int noperands = c->nsim;
    if (lazy_operand) memcpy(operands, c->sim, (size_t)noperands * sizeof *operands);
    int lazy_store = dbl_arith ? jit_double_lazy_store(c, next) : -1;
    X64Label lazy_fail = JIT_X64_LABEL("lazy operands written back");
    if (c->lazy_rcx) {
        jit_sim_load(c, c->sim[0], RAX);
    } else if (k <= 2) {
        c->lazy_read_ok = lazy_operand;
        c->lazy_skip_loads = lazy_operand;
        load_operands(c, k, regs);
        c->lazy_read_ok = c->lazy_skip_loads = false;
    } else {
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 16)); /* at:put: receiver and index (all on the real stack) */
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 8));
    }
    c->nsim = 0;
    if (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) {
        if (ints && !double_first) jit_int_arith(c, op, arg_int, arg_const, dbl_arith ? &not_ints : &slow, &slow, &done);
        if (dbl_arith) {
            /* the path tried second goes to the cold section */
            X64Label try_ints = JIT_X64_LABEL("SmallIntegers after all");
            bool second = ints && !double_first;
            if (second) jit_compile_cold_begin(c);
            if (!double_first) jit_x64_label_bind(b, &not_ints);
            load_lazy_rcx(c);
            JitDoubleLink links[JIT_DOUBLE_CHAIN_MAX];
            int n = jit_double_chain_scan(c, pc, links, JIT_DOUBLE_CHAIN_MAX);
            if (n >= 2) {
                X64Label single = JIT_X64_LABEL("one Double send");
                jit_double_chain(c, links, n, s, facts, &single);
                jit_x64_label_bind(b, &single);
            }
            X64Label *left = lazy_operand ? &lazy_fail : double_first ? &try_ints : &slow;
            if (lazy_store >= 0) jit_double_arith_lazy(c, op, facts, left, lazy_store, s, next);
            else jit_double_arith(c, op, facts, left, &done);
            if (lazy_operand) {
                jit_compile_cold_begin(c);
                jit_x64_label_bind(b, &lazy_fail);
                bool rax_operand = false; /* the answer before, kept across the write-back */
                for (int i = 0; i < noperands; i++) rax_operand |= operands[i].kind == SIM_RAX;
                if (rax_operand) jit_x64_push_r(b, RAX);
                jit_double_cache_flush(c, pc);
                if (rax_operand) jit_x64_pop_r(b, RAX);
                memcpy(c->sim, operands, (size_t)noperands * sizeof *operands);
                c->nsim = noperands;
                c->lazy_read_ok = true; /* the slots hold the values now */
                load_operands(c, k, regs);
                c->lazy_read_ok = false;
                c->nsim = 0;
                jit_x64_jmp_label32(b, double_first ? &try_ints : &slow);
                jit_compile_cold_end(c);
            }
            if (double_first) {
                jit_compile_cold_begin(c);
                jit_x64_label_bind(b, &try_ints);
                jit_int_arith(c, op, arg_int, arg_const, &slow, &slow, &done);
                jit_compile_cold_end(c);
            }
            if (second) jit_compile_cold_end(c);
        }
    } else if (jit_compile_is_compare(op) && (ints || dbl_cmp)) {
        uint8_t after = next < c->len ? c->code[next] : BC_HALT;
        long br = jit_compile_fused_branch(c, next);
        bool fuse = br >= 0;
        uint8_t br_op = fuse ? c->code[br] : BC_HALT;
        bool dbl = dbl_cmp;
        /* the SmallIntegers' compare in line, the Doubles' in the cold
         * section after it; the Doubles' in line when it is the only one */
        if (ints) {
            jit_int_both_or(c, arg_int, dbl ? &not_ints : &slow);
            if (arg_int && jit_compile_fits_i32(arg_const)) jit_x64_cmp_ri(b, RAX, (int32_t)arg_const);
            else jit_x64_cmp_rr(b, RAX, RCX);
        }
        if (fuse) {
            X64Cond cc = jit_compile_compare_cond(op);
            if (br_op == BC_JUMP_IF_FALSE) cc = jit_x64_cc_negate(cc);
            X64Label fallthrough = JIT_X64_LABEL("fused fallthrough");
            X64Label *taken = &c->labels[jit_compile_jump_target(c->code, (size_t)br)];
            if (ints) {
                if (s) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * s)); /* lea keeps the flags */
                jit_compile_jcc_to(c, cc, taken, (size_t)br);
                jit_x64_jmp_forward(b, &fallthrough);
            }
            if (dbl) {
                if (ints) jit_compile_cold_begin(c);
                jit_x64_label_bind(b, &not_ints);
                load_lazy_rcx(c);
                X64Cond dc = jit_double_compare(c, op, facts, &slow);
                if (br_op == BC_JUMP_IF_FALSE) dc = jit_x64_cc_negate(dc);
                if (s) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * s));
                jit_compile_jcc_to(c, dc, taken, (size_t)br);
                jit_x64_jmp_forward(b, &fallthrough);
                if (ints) jit_compile_cold_end(c);
            }
            jit_compile_cold_begin(c);
            jit_x64_label_bind(b, &slow);
            load_lazy_rcx(c);
            c->lazy_rcx = false;
            for (int j = s; j < k; j++) jit_x64_push_r(b, regs[j]);
            emit_send_rax(c, jit_send_tag_special(op), nargs, pc);
            emit_cond_jump_rax(c, (size_t)br);
            jit_x64_jmp_forward(b, &fallthrough);
            jit_compile_cold_end(c);
            jit_x64_label_bind(b, &fallthrough);
            /* through a JUMP to the conditional jump: on where that one falls through */
            if ((size_t)br != next) jit_x64_jmp_label32(b, &c->labels[(size_t)br + vm_bytecode_length[br_op]]);
            return 1 + vm_bytecode_length[after];
        }
        if (ints) {
            jit_compile_set_boolean(c, jit_compile_compare_cond(op));
            jit_x64_jmp_forward(b, &done);
        }
        if (dbl) {
            if (ints) jit_compile_cold_begin(c);
            jit_x64_label_bind(b, &not_ints);
            load_lazy_rcx(c);
            jit_compile_set_boolean(c, jit_double_compare(c, op, facts, &slow));
            jit_x64_jmp_forward(b, &done);
            if (ints) jit_compile_cold_end(c);
        }
    } else if (op == BC_SEND_IDENTICAL) {
        X64Label identical = JIT_X64_LABEL("identical");
        if (!ints) { /* Integer's == is not the primitive: only non-SmallIntegers are decided here */
            jit_x64_test_ri(b, RAX, 1);
            jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &slow);
        }
        jit_x64_cmp_rr(b, RAX, RCX);
        jit_x64_jcc_label32(b, JIT_X64_CC_E, &identical);
        jit_x64_mov_rr(b, RDX, RAX);
        jit_x64_and_rr(b, RDX, RCX);
        jit_x64_test_ri(b, RDX, 1);
        X64Label not_both = JIT_X64_LABEL("not both SmallIntegers");
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, c->rt->nil_table ? &not_both : &slow);
        if (!ints) jit_x64_jmp_label32(b, &slow); /* (unreachable: rax is not a SmallInteger) */
        X64Label decided = JIT_X64_LABEL("== decided");
        jit_x64_jmp_label32(b, &decided);
        if (c->rt->nil_table) {
            /* different objects: false when the receiver's class has
             * Object's == (vm/interp/special.h, VM_SPECIAL_IDENTITY) */
            jit_x64_label_bind(b, &not_both);
            jit_x64_test_ri(b, RAX, 7);
            jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &slow); /* an immediate receiver */
            jit_x64_mov_rm(b, RDX, jit_x64_mem(RAX, 0));
            jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
            jit_x64_cmp_ri(b, RDX, (int32_t)c->rt->nil_table_classes);
            jit_x64_jcc_label32(b, JIT_X64_CC_AE, &slow);
            jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->nil_table);
            jit_x64_movzx_rm8(b, RDX, jit_x64_mem_index(R11, RDX, 1, 0));
            jit_x64_test_ri(b, RDX, 0x10); /* VM_SPECIAL_IDENTITY */
            jit_x64_jcc_label32(b, JIT_X64_CC_Z, &slow);
            jit_x64_cmp_rr(b, RAX, RCX); /* unequal: ZF clear, the answer false */
            jit_x64_jmp_label32(b, &identical);
        }
        jit_x64_label_bind(b, &decided);
        jit_x64_label_bind(b, &identical); /* ZF: set when identical, clear for two different SmallIntegers */
        jit_compile_set_boolean(c, JIT_X64_CC_E);
        jit_x64_jmp_forward(b, &done);
    } else if (!jit_int_fast_path(c, op, &slow, &done)) {
        emit_array_fast_path(c, op, pc, value_const, &slow, &done);
    }
    send_and_merge(c, &slow, &done, regs, s, k, jit_send_tag_special(op), nargs, pc);
    jit_sim_hold_end(c);
    /* every path to here leaves xmm0 with rax's value when it is a Double: the Double
     * fast paths (a chain's too) compute it there, the send's jit_double_cache_answer */
    if (op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) c->xmm0_pc = next;
    return 1;
}

/* A plain send of Double // or sqrt (jit_double_send_kind) at pc: a fast
 * path for Double receivers, laid out as emit_special's (its operands from
 * the descriptors into rax and rcx, kept for the send). */
static void emit_double_send(Compiler *c, size_t pc, JitDoubleSend kind)
{
    const uint8_t *p = c->code + pc;
    int64_t tag = p[0] == BC_SEND ? p[1] : jit_compile_operand_w(p + 1);
    int nargs = p[0] == BC_SEND ? p[2] : p[3];
    int k = nargs + 1;
    VM_ASSERT(k <= 2);
    jit_sim_hold_below(c, k);
    int d = c->nsim, s = k - d;
    X64Reg regs[2] = { RAX, RCX };
    load_operands(c, k, regs);
    JitOperandFacts facts = jit_double_facts(c, s == 0 ? &c->sim[0] : NULL, k == 2 && d >= 1 ? &c->sim[d - 1] : NULL);
    c->nsim = 0;
    X64Label slow = JIT_X64_LABEL("Double send"), done = JIT_X64_LABEL("Double send done");
    jit_double_send(c, kind, facts, &slow, &done);
    send_and_merge(c, &slow, &done, regs, s, k, tag, nargs, pc);
    jit_sim_hold_end(c);
    c->xmm0_pc = pc + vm_bytecode_length[p[0]];
}


int jit_compile_bool_send(const Compiler *c, size_t pc) { return jit_compile_bool_send_in(c, c->method, c->code + pc); }

int jit_compile_bool_send_in(const Compiler *c, Oop method, const uint8_t *p)
{
    if (!c->rt->bool_answers || (p[0] == BC_SEND ? p[2] : p[3]) != 1) return -1;
    unsigned lit = p[0] == BC_SEND ? p[1] : (unsigned)jit_compile_operand_w(p + 1);
    Oop sel = obj_slots(method)[METHOD_FIXED_SLOTS + lit];
    size_t len = obj_byte_length(sel);
    for (int k = 0; k < c->rt->bool_nselectors; k++)
        if (strlen(c->rt->bool_selectors[k]) == len && memcmp(obj_bytes(sel), c->rt->bool_selectors[k], len) == 0)
            return c->rt->bool_answers[k][0] != JIT_BOOL_SEND || c->rt->bool_answers[k][1] != JIT_BOOL_SEND ? k : -1;
    return -1;
}

void jit_compile_bool_answer(Compiler *c, uint8_t a, X64Label *slow)
{
    X64Buf *b = &c->b;
    switch (a) {
    case JIT_BOOL_TRUE: jit_x64_mov_ri(b, RAX, (int64_t)c->rt->true_obj); break;
    case JIT_BOOL_FALSE: jit_x64_mov_ri(b, RAX, (int64_t)c->rt->false_obj); break;
    case JIT_BOOL_ARG: {
        /* a block, or anything but true and false, is sent value: the send */
        X64Label boolean = JIT_X64_LABEL("Boolean argument");
        jit_x64_mov_ri(b, R11, (int64_t)c->rt->true_obj);
        jit_x64_cmp_rr(b, RCX, R11);
        jit_x64_jcc_label32(b, JIT_X64_CC_E, &boolean);
        jit_x64_mov_ri(b, R11, (int64_t)c->rt->false_obj);
        jit_x64_cmp_rr(b, RCX, R11);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, slow);
        jit_x64_label_bind(b, &boolean);
        jit_x64_mov_rr(b, RAX, RCX);
        break;
    }
    default: jit_x64_jmp_label32(b, slow); break;
    }
}

/* A plain send of && || and: or: (jit_compile_bool_send) at pc: true and
 * false answer as the core's methods would without the send, when the
 * argument is true or false (vm/interp/special.h); anything else, and a
 * tracer on the method probes (method__entry must fire), sends. Laid out
 * as emit_special's. */
static void emit_bool_send(Compiler *c, size_t pc, int k_sel)
{
    X64Buf *b = &c->b;
    const uint8_t *p = c->code + pc;
    int64_t tag = p[0] == BC_SEND ? p[1] : jit_compile_operand_w(p + 1);
    int nargs = 1, k = 2;
    jit_sim_hold_below(c, k);
    int d = c->nsim, s = k - d;
    X64Reg regs[2] = { RAX, RCX };
    load_operands(c, k, regs);
    c->nsim = 0;
    X64Label slow = JIT_X64_LABEL("Boolean send"), done = JIT_X64_LABEL("Boolean send done"),
             on_false = JIT_X64_LABEL("false receiver");
    if (c->rt->method_probe_semaphores) {
        jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
        jit_x64_cmp_mi(b, jit_x64_mem(R11, 0), 0);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, &slow);
    }
    jit_compile_cmp_rax_oop(c, c->rt->true_obj);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &on_false);
    jit_compile_bool_answer(c, c->rt->bool_answers[k_sel][0], &slow);
    jit_x64_jmp_forward(b, &done);
    jit_x64_label_bind(b, &on_false);
    jit_compile_cmp_rax_oop(c, c->rt->false_obj);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &slow);
    jit_compile_bool_answer(c, c->rt->bool_answers[k_sel][1], &slow);
    jit_x64_jmp_forward(b, &done);
    send_and_merge(c, &slow, &done, regs, s, k, tag, nargs, pc);
    jit_sim_hold_end(c);
}

/* A getter or setter send whose site the interpreter saw run an accessor of
 * one class (rt->site_accessor): inline behind a test of the receiver's
 * class, the send otherwise — and also while a tracer holds the method
 * probes (their semaphores, as the interrupt check tests them), so that
 * every activation still fires method__entry. A setter whose store would
 * need the barrier sends too (the method's own code remembers). Answers
 * false (nothing emitted) when the site has no such hint. */
static bool emit_inline_accessor(Compiler *c, size_t pc)
{
    X64Buf *b = &c->b;
    const uint8_t *p = c->code + pc;
    int64_t tag = p[0] == BC_SEND ? p[1] : jit_compile_operand_w(p + 1);
    int nargs = p[0] == BC_SEND ? p[2] : p[3];
    uint32_t class_index;
    bool setter;
    int field;
    if (!jit_compile_accessor(c, pc, &class_index, &setter, &field)) return false;
    int k = nargs + 1;
    jit_sim_hold_below(c, k);
    int d = c->nsim, s = k - d;
    /* a getter of a temp whose class the region's r8 vouches for, or a setter
     * of a receiver pushed from one */
    int guarded_temp = -1;
    int32_t guard = setter  ? jit_double_cache_setter_guard(c, class_index, &guarded_temp)
                    : d     ? jit_double_cache_guard(c, &c->sim[c->nsim - 1], class_index)
                            : 0;
    /* a receiver read from the temp itself just now is its value */
    bool receiver_is_temp = s == 0 && c->sim[0].kind == SIM_TEMP && c->sim[0].v == guarded_temp;
    X64Reg regs[2] = { RAX, RCX };
    load_operands(c, k, regs);
    c->nsim = 0;
    X64Label slow = JIT_X64_LABEL("accessor send"), done = JIT_X64_LABEL("accessor done");
    if (guard) { /* the setter's receiver must still be the temp's value */
        if (setter && !receiver_is_temp) {
            jit_x64_cmp_rm(b, RAX, jit_compile_temp_slot(guarded_temp));
            jit_x64_jcc_label32(b, JIT_X64_CC_NE, &slow);
        }
        jit_x64_test_ri(b, JIT_GUARD_REG, guard);
        jit_x64_jcc_label32(b, JIT_X64_CC_Z, &slow);
    } else {
        jit_x64_test_ri(b, RAX, 7);
        jit_x64_jcc_label32(b, JIT_X64_CC_NZ, &slow);
        jit_x64_mov_rm32(b, RDX, jit_x64_mem(RAX, 0));
        jit_x64_and_ri(b, RDX, (int32_t)OBJ_CLASS_MASK);
        jit_x64_cmp_ri(b, RDX, (int32_t)class_index);
        jit_x64_jcc_label32(b, JIT_X64_CC_NE, &slow);
        if (c->rt->method_probe_semaphores) {
            jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->method_probe_semaphores);
            jit_x64_cmp_mi(b, jit_x64_mem(R11, 0), 0); /* both semaphores, and 32 bits of 0 */
            jit_x64_jcc_label32(b, JIT_X64_CC_NE, &slow);
        }
    }
    if (setter) {
        X64Label store = JIT_X64_LABEL("accessor store");
        jit_compile_barrier_unneeded(c, &store);
        jit_x64_jmp_label32(b, &slow);
        jit_x64_label_bind(b, &store);
        jit_x64_mov_mr(b, field_of_rax(field), RCX); /* and self, in rax, is the answer */
    } else {
        jit_x64_mov_rm(b, RAX, field_of_rax(field));
    }
    jit_x64_jmp_forward(b, &done);
    send_and_merge(c, &slow, &done, regs, s, k, tag, nargs, pc);
    jit_sim_hold_end(c);
    return true;
}

/* The generational write barrier after rcx was stored into object rax:
 * old object, young pointer, not yet remembered -> the barrier runtime.
 * Clobbers rdx and r11 (and everything when it calls). */
static void barrier(Compiler *c, size_t bcpc)
{
    X64Label done = JIT_X64_LABEL("barrier done");
    jit_compile_barrier_unneeded(c, &done);
    jit_x64_mov_rr(&c->b, RDI, RAX);
    jit_x64_call_rel32(&c->b, c->rt->barrier);
    jit_compile_map_here(c, (uint32_t)bcpc, JIT_MAP_OTHER);
    jit_x64_label_bind(&c->b, &done);
}

/* To done unless storing rcx into object rax must remember rax (old object,
 * young pointer, not yet remembered). Clobbers rdx and r11. */
void jit_compile_barrier_unneeded(Compiler *c, X64Label *done) { jit_compile_barrier_unneeded_in(c, RAX, RCX, done); }

void jit_compile_barrier_unneeded_in(Compiler *c, X64Reg obj, X64Reg value, X64Label *done)
{
    X64Buf *b = &c->b;
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->old_start);
    jit_x64_cmp_rm(b, obj, jit_x64_mem(R11, 0));
    jit_x64_jcc_label32(b, JIT_X64_CC_B, done); /* young object */
    jit_x64_test_ri(b, value, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, done); /* an immediate */
    jit_x64_test_rr(b, value, value);
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, done);
    jit_x64_cmp_rm(b, value, jit_x64_mem(R11, 0));
    jit_x64_jcc_label32(b, JIT_X64_CC_AE, done); /* an old value */
    jit_x64_mov_rm(b, RDX, jit_x64_mem(obj, 0));
    jit_x64_bt_ri(b, RDX, OBJ_GC_SHIFT); /* OBJ_GC_REMEMBERED */
    jit_x64_jcc_label32(b, JIT_X64_CC_C, done);
}

/* Stores rcx into field i of self, with the barrier. */
static void store_field(Compiler *c, int i, size_t bcpc)
{
    jit_x64_mov_rm(&c->b, RAX, jit_compile_self_slot());
    jit_x64_mov_mr(&c->b, field_of_rax(i), RCX);
    barrier(c, bcpc);
}

/* -- Outer variables and Arrays, inline ----------------------------------------------- */

/* rax := the address of outer variable v `level` contexts out, when that
 * context's frame is alive; to `slow` when it was widowed. The enclosing
 * methods are known statically (METHOD_OUTER), so is the frame's nargs. */
static void outer_var_address(Compiler *c, int level, int v, X64Label *slow)
{
    X64Buf *b = &c->b;
    Oop outer = obj_slots(c->method)[METHOD_OUTER];
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RBP, 8 * (2 + c->nargs))); /* the closure */
    jit_x64_mov_rm(b, RAX, field_of_rax(BLOCK_OUTER_CONTEXT));
    for (int l = level; l > 1; l--) {
        jit_x64_mov_rm(b, RAX, field_of_rax(CTX_CLOSURE));
        jit_x64_mov_rm(b, RAX, field_of_rax(BLOCK_OUTER_CONTEXT));
        outer = obj_slots(outer)[METHOD_OUTER];
    }
    jit_x64_mov_rm(b, RCX, field_of_rax(CTX_FRAME));
    jit_x64_test_ri(b, RCX, 1); /* a live frame is a tagged pointer (vm/model/frame.h, ctx_frame) */
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, slow);
    int on = vm_method_nargs(outer);
    int32_t disp = v < on ? 8 * (1 + on - v) : 8 * (FRAME_FIRST_TEMP - (v - on)); /* frame_var */
    jit_x64_lea_rm(b, RAX, jit_x64_mem(RCX, disp - 1));
}

/* Whether outer variables can be inlined: every enclosing method known. */
static bool outer_known(const Compiler *c, int level)
{
    Oop outer = obj_slots(c->method)[METHOD_OUTER];
    for (int l = level; l > 1 && oop_is_ptr(outer) && outer != c->rt->nil; l--) outer = obj_slots(outer)[METHOD_OUTER];
    return oop_is_ptr(outer) && outer != c->rt->nil;
}

static void emit_outer(Compiler *c, const uint8_t *p, size_t pc)
{
    X64Buf *b = &c->b;
    uint8_t op = p[0];
    X64Label slow = JIT_X64_LABEL("widowed context"), done = JIT_X64_LABEL("outer done");
    bool inline_ok = outer_known(c, p[2]);
    if (inline_ok) {
        outer_var_address(c, p[2], p[1], &slow);
        if (op == BC_PUSH_OUTER) {
            jit_x64_mov_rm(b, RAX, jit_x64_mem(RAX, 0));
            jit_x64_push_r(b, RAX);
        } else {
            jit_x64_mov_rm(b, RDX, jit_x64_mem(RSP, 0));
            jit_x64_mov_mr(b, jit_x64_mem(RAX, 0), RDX); /* a stack slot: no barrier */
            if (op == BC_POP_OUTER) jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        }
        jit_x64_jmp_forward(b, &done);
        jit_compile_cold_begin(c);
        jit_x64_label_bind(b, &slow);
    }
    if (op == BC_PUSH_OUTER) {
        jit_x64_mov_r32i(b, RDI, (uint32_t)(p[2] << 8 | p[1]));
        runtime_call(c, c->rt->outer_get, pc);
        jit_x64_push_r(b, RAX);
    } else {
        if (op == BC_STORE_OUTER) jit_x64_mov_rm(b, RSI, jit_x64_mem(RSP, 0));
        else jit_x64_pop_r(b, RSI);
        jit_x64_mov_r32i(b, RDI, (uint32_t)(p[2] << 8 | p[1]));
        runtime_call(c, c->rt->outer_set, pc);
    }
    if (inline_ok) {
        jit_x64_jmp_forward(b, &done);
        jit_compile_cold_end(c);
        jit_x64_label_bind(b, &done);
    }
}

/* rdx := the slot count of the Array receiver in rax, or to slow (not an
 * Array). Arrays of 255 slots or more keep their count in the word before
 * the header (gc/object.h, obj_num_slots). Keeps rax and rcx. */
void jit_compile_array_or(Compiler *c, X64Label *slow) { jit_compile_array_in_or(c, RAX, RDX, slow); }

void jit_compile_array_in_or(Compiler *c, X64Reg array, X64Reg count, X64Label *slow)
{
    X64Buf *b = &c->b;
    jit_x64_test_ri(b, array, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NZ, slow);
    jit_x64_mov_rm(b, count, jit_x64_mem(array, 0));
    jit_x64_mov_rr(b, R11, count);
    jit_x64_and_ri(b, R11, (int32_t)OBJ_CLASS_MASK);
    jit_x64_cmp_ri(b, R11, CLASS_INDEX_ARRAY);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, slow);
    jit_x64_shr_ri(b, count, OBJ_SLOTS_SHIFT);
    X64Label counted = JIT_X64_LABEL("slot count");
    jit_x64_cmp_ri(b, count, OBJ_SLOTS_OVERFLOW);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &counted);
    jit_x64_mov_rm(b, count, jit_x64_mem(array, -8));
    jit_x64_shl_ri(b, count, 8); /* the count is the low 56 bits */
    jit_x64_shr_ri(b, count, 8);
    jit_x64_label_bind(b, &counted);
}

/* rsi := the 0-based index from the SmallInteger in rcx, to slow unless
 * 1 <= it <= rdx. Keeps rax and rcx. */
void jit_compile_index_or(Compiler *c, X64Label *slow) { jit_compile_index_in_or(c, RDX, slow); }

void jit_compile_index_in_or(Compiler *c, X64Reg count, X64Label *slow)
{
    X64Buf *b = &c->b;
    jit_x64_test_ri(b, RCX, 1);
    jit_x64_jcc_label32(b, JIT_X64_CC_Z, slow);
    jit_x64_mov_rr(b, RSI, RCX);
    jit_x64_sar_ri(b, RSI, 1);
    jit_x64_sub_ri(b, RSI, 1);
    jit_x64_cmp_rr(b, RSI, count);
    jit_x64_jcc_label32(b, JIT_X64_CC_AE, slow); /* unsigned: also catches index < 1 */
}

/* Array at:, at:put:, length inline when Array's own primitives answer
 * them (the interpreter's rule); anything else is the generic send. */
static bool emit_array_fast_path(Compiler *c, uint8_t op, size_t pc, bool value_const, X64Label *slow, X64Label *done)
{
    X64Buf *b = &c->b;
    if (op == BC_SEND_AT && c->rt->array_at_inline && *c->rt->array_at_inline) {
        jit_compile_array_or(c, slow);
        jit_compile_index_or(c, slow);
        jit_x64_mov_rm(b, RAX, jit_x64_mem_index(RAX, RSI, 8, 8));
    } else if (op == BC_SEND_AT_PUT && c->rt->array_at_put_inline && *c->rt->array_at_put_inline) {
        /* receiver and index in rax and rcx, all three still on the real stack */
        jit_compile_array_or(c, slow);
        jit_compile_index_or(c, slow);
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
        jit_x64_mov_mr(b, jit_x64_mem_index(RAX, RSI, 8, 8), RCX);
        if (!value_const) barrier(c, pc); /* rax the object, rcx the value */
        jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 0));
    } else if (op == BC_SEND_LENGTH && c->rt->array_length_inline && *c->rt->array_length_inline) {
        jit_compile_array_or(c, slow);
        jit_x64_lea_rm(b, RAX, jit_x64_mem_index(RDX, RDX, 1, 1)); /* tag it */
    } else {
        return false;
    }
    jit_x64_jmp_forward(b, done);
    return true;
}

_Static_assert(OBJ_GC_REMEMBERED == (uint64_t)1 << OBJ_GC_SHIFT, "the barrier tests bit OBJ_GC_SHIFT");

/* -- Back jumps and the bytecodes' templates -------------------------------------------- */

/* The safepoint's call is in the cold section: a loop's iteration takes one
 * jump (back), not a jump over the call and then back. */
static void emit_back_jump(Compiler *c, size_t pc)
{
    X64Buf *b = &c->b;
    X64Label go = JIT_X64_LABEL("no safepoint"), stop = JIT_X64_LABEL("safepoint");
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)c->rt->collect_wanted);
    jit_x64_cmp_m8i(b, jit_x64_mem(R11, 0), 0);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &stop);
    jit_x64_jmp_forward(b, &go); /* pending: the cold code goes aside, and this jump with it */
    jit_compile_cold_begin(c);
    jit_x64_label_bind(b, &stop);
    jit_double_cache_flush(c, pc);
    jit_x64_call_rel32(b, c->rt->safepoint);
    jit_compile_map_here(c, (uint32_t)pc, JIT_MAP_BACKJUMP);
    jit_double_cache_load(c); /* after the call; and OSR enters here */
    jit_x64_jmp_label32(b, &go);
    jit_compile_cold_end(c);
    jit_x64_label_bind(b, &go);
    jit_double_cache_guard_probes(c);
    jit_x64_jmp_label32(b, &c->labels[jit_compile_jump_target(c->code, pc)]);
    jit_double_cache_refill(c);
}

/* Emits the template of the bytecode at pc; answers the bytes consumed.
 * Pushes only describe their value (the simulated stack); what is not
 * handled here over descriptors is flushed first and compiled over the real
 * stack. */
static size_t emit_bytecode(Compiler *c, size_t pc)
{
    X64Buf *b = &c->b;
    const uint8_t *p = c->code + pc;
    uint8_t op = p[0];
    switch (op) {
    case BC_DUP:
        if (!c->nsim) { /* a copy of the real top, in rax (free: nothing is simulated) */
            jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 0));
            jit_sim_push(c, SIM_RAX, 0);
        } else if (c->sim[c->nsim - 1].kind == SIM_RAX) { /* the deeper copy goes to the real stack */
            jit_sim_flush_below(c, 1);
            jit_x64_push_r(b, RAX);
        } else {
            jit_sim_push(c, c->sim[c->nsim - 1].kind, c->sim[c->nsim - 1].v);
        }
        break;
    case BC_POP:
        if (c->nsim) c->nsim--;
        else jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8));
        break;
    case BC_PUSH_SELF: jit_sim_push(c, SIM_SELF, 0); break;
    case BC_PUSH_NIL: jit_sim_push(c, SIM_CONST, (int64_t)c->rt->nil); break;
    case BC_PUSH_TRUE: jit_sim_push(c, SIM_CONST, (int64_t)c->rt->true_obj); break;
    case BC_PUSH_FALSE: jit_sim_push(c, SIM_CONST, (int64_t)c->rt->false_obj); break;
    case BC_PUSH_0: jit_sim_push(c, SIM_CONST, (int64_t)oop_from_int(0)); break;
    case BC_PUSH_1: jit_sim_push(c, SIM_CONST, (int64_t)oop_from_int(1)); break;
    case BC_PUSH_LITERAL:
    case BC_PUSH_LITERAL_W: {
        unsigned lit = op == BC_PUSH_LITERAL ? p[1] : jit_compile_operand_w(p + 1);
        Oop v = obj_slots(c->method)[METHOD_FIXED_SLOTS + lit];
        if (oop_is_int(v)) jit_sim_push(c, SIM_CONST, (int64_t)v); /* immediates never change, nor move */
        else jit_sim_push(c, SIM_LIT, lit);
        break;
    }
    case BC_PUSH_FIELD: jit_sim_push(c, SIM_FIELD, p[1]); break;
    case BC_STORE_FIELD:
        jit_sim_flush(c);
        jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 0));
        store_field(c, p[1], pc);
        break;
    case BC_POP_FIELD:
        jit_sim_flush_below(c, 1); /* deeper descriptors (this field's too) and the barrier's call see a whole frame */
        jit_sim_pop_into(c, RCX);
        store_field(c, p[1], pc);
        break;
    case BC_PUSH_ARG: jit_sim_push(c, SIM_ARG, p[1]); break;
    case BC_STORE_ARG: store_var(c, SIM_ARG, p[1], false); break;
    case BC_POP_ARG: store_var(c, SIM_ARG, p[1], true); break;
    case BC_PUSH_TEMP: jit_sim_push(c, SIM_TEMP, p[1]); break;
    case BC_STORE_TEMP: store_var(c, SIM_TEMP, p[1], false); break;
    case BC_POP_TEMP: {
        /* a cached Double temp reads better as itself (vm/jit/double_cache.c) */
        bool in_rax = c->nsim && c->sim[c->nsim - 1].kind == SIM_RAX &&
                      jit_double_cached(c, &(SimEntry){ SIM_TEMP, p[1] }) < 0;
        store_var(c, SIM_TEMP, p[1], true);
        size_t next = pc + 2;
        if (in_rax && next + 1 < c->len && c->code[next] == BC_PUSH_TEMP && c->code[next + 1] == p[1] &&
            !c->target[next]) {
            jit_sim_push(c, SIM_RAX, 0); /* `t := x. t ...`: rax still holds what was just stored */
            return 4;
        }
        break;
    }
    case BC_PUSH_GLOBAL:
    case BC_PUSH_GLOBAL_W:
        jit_sim_flush(c);
        emit_global(c, op == BC_PUSH_GLOBAL ? p[1] : jit_compile_operand_w(p + 1), pc);
        jit_sim_push(c, SIM_RAX, 0);
        break;
    case BC_SEND:
    case BC_SEND_W: {
        JitDoubleSend kind = jit_double_send_kind(c, pc);
        if (kind != JIT_DOUBLE_SEND_NONE) {
            emit_double_send(c, pc, kind);
            break;
        }
        int bool_sel = jit_compile_bool_send(c, pc);
        if (bool_sel >= 0) {
            emit_bool_send(c, pc, bool_sel);
            break;
        }
        if (emit_inline_accessor(c, pc)) break;
        jit_sim_flush(c);
        const JitInlineSite *site = jit_inline_site_at(c, pc);
        if (site) {
            jit_inline_emit(c, site);
            break;
        }
        emit_send_rax(c, op == BC_SEND ? p[1] : jit_compile_operand_w(p + 1), op == BC_SEND ? p[2] : p[3], pc);
        jit_sim_push(c, SIM_RAX, 0);
        break;
    }
    case BC_SUPER_SEND:
    case BC_SUPER_SEND_W: {
        unsigned lit = op == BC_SUPER_SEND ? p[1] : jit_compile_operand_w(p + 1);
        int n = op == BC_SUPER_SEND ? p[2] : p[3];
        jit_sim_flush(c);
        jit_x64_mov_r32i(b, RDI, jit_sendsite_unlinked_tag(lit, n));
        runtime_call(c, c->rt->super_send, pc);
        jit_x64_lea_rm(b, RSP, jit_x64_mem(RSP, 8 * (n + 1)));
        jit_sim_push(c, SIM_RAX, 0);
        break;
    }
    case BC_PUSH_BLOCK:
    case BC_PUSH_BLOCK_W:
        jit_sim_flush(c);
        jit_x64_mov_r32i(b, RDI, op == BC_PUSH_BLOCK ? p[1] : jit_compile_operand_w(p + 1));
        runtime_call(c, c->rt->push_block, pc);
        jit_sim_push(c, SIM_RAX, 0);
        break;
    case BC_PUSH_OUTER:
    case BC_STORE_OUTER:
    case BC_POP_OUTER:
        jit_sim_flush(c);
        emit_outer(c, p, pc);
        break;
    case BC_RETURN_NONLOCAL: /* the interpreter unwinds (and knows every case of it) */
        jit_sim_flush(c);
        jit_x64_mov_r32i(b, RDI, (uint32_t)pc);
        runtime_call(c, c->rt->interpret, pc);
        jit_x64_ud2(b);
        break;
    case BC_RETURN_TOP:
        jit_sim_pop_into(c, RAX);
        c->nsim = 0; /* the frame goes: what is below the answer is dropped with it */
        epilogue(c);
        break;
    case BC_RETURN_SELF:
        c->nsim = 0;
        jit_x64_mov_rm(b, RAX, jit_compile_self_slot());
        epilogue(c);
        break;
    case BC_JUMP:
        jit_sim_flush(c);
        jit_x64_jmp_label32(b, &c->labels[jit_compile_jump_target(c->code, pc)]);
        break;
    case BC_JUMP_BACK:
        jit_sim_flush(c); /* OSR enters at the safepoint's return address with the interpreter's stack */
        emit_back_jump(c, pc);
        break;
    case BC_JUMP_IF_TRUE:
    case BC_JUMP_IF_FALSE:
    case BC_JUMP_IF_NIL:
    case BC_JUMP_IF_NOT_NIL: emit_cond_jump(c, pc); break;
    default:
        VM_ASSERT(op >= BC_SEND_ADD && op <= BC_SEND_LAST_SPECIAL, "scan let bytecode %s through",
                  vm_bytecode_name[op]);
        return emit_special(c, pc);
    }
    return vm_bytecode_length[op];
}

/* -- The compiler ------------------------------------------------------------------------ */

/* `x = ( ^x )`: a method that only answers one of self's fields. */
static bool is_getter(const Compiler *c)
{
    return !c->is_block && c->nargs == 0 && c->ntemps == 0 && c->len >= 3 && c->code[0] == BC_PUSH_FIELD &&
           c->code[2] == BC_RETURN_TOP;
}

/* A getter builds no frame (NBody's accessors were a third of its time,
 * most of it in the frame's prologue and epilogue): after the entry's
 * interrupt check, which stays so a GC or a tracer on the method probes
 * takes entry_slow as for any method (it resumes at `checked` or hands the
 * activation to the interpreter), it reads the field and returns. It calls
 * nothing, so its pcs are never return addresses on the stack, and a
 * profiler unwinds it as the entry checks (frameless). */
static void emit_getter_body(Compiler *c, X64Label *slow, X64Label *checked)
{
    X64Buf *b = &c->b;
    emit_interrupt_check(c, slow);
    jit_x64_label_bind(b, checked);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8)); /* the receiver, above the return address */
    jit_x64_mov_rm(b, RAX, field_of_rax(c->code[1]));
    jit_x64_ret(b);
}

/* `x: v = ( x := v )`: a method that only stores its argument into one of
 * self's fields and answers self. */
static bool is_setter(const Compiler *c)
{
    return !c->is_block && c->nargs == 1 && c->ntemps == 0 && c->len >= 5 && c->code[0] == BC_PUSH_ARG &&
           c->code[2] == BC_POP_FIELD && c->code[4] == BC_RETURN_SELF;
}

/* A setter stores without a frame, as a getter reads, unless the store
 * must remember self (then the method's plain code, which follows, does it
 * with its frame: the barrier's call is mapped and may run with a frame
 * only). */
static void emit_setter_fast_path(Compiler *c, X64Label *slow)
{
    X64Buf *b = &c->b;
    X64Label store = JIT_X64_LABEL("setter store"), full = JIT_X64_LABEL("setter with a frame");
    emit_interrupt_check(c, slow);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 16)); /* self, then the argument, above the return address */
    jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 8));
    jit_compile_barrier_unneeded(c, &store);
    jit_x64_jmp_label32(b, &full);
    jit_x64_label_bind(b, &store);
    jit_x64_mov_mr(b, field_of_rax(c->code[3]), RCX);
    jit_x64_ret(b);
    jit_x64_label_bind(b, &full);
}

/* Emits the whole method into c->b (which starts at the header copy);
 * binds the two entry labels. */
static void emit_method(Compiler *c, const JitMethod *header_copy, X64Label *checked_entry, X64Label *unchecked_entry)
{
    X64Label header = JIT_X64_LABEL("header"), abort = JIT_X64_LABEL("class miss"),
             slow = JIT_X64_LABEL("entry slow path"), checked = JIT_X64_LABEL("entry checks passed");
    jit_x64_label_bind(&c->b, &header);
    jit_x64_data(&c->b, header_copy, JIT_METHOD_CODE);
    jit_x64_label_bind(&c->b, checked_entry);
    unwind_from_here(c, PROF_UNWIND_FRAMELESS); /* entry checks run before the frame exists */
    jit_compile_checked_entry(&c->b, c->nargs, &abort);
    jit_x64_label_bind(&c->b, unchecked_entry);
    /* Tier-up's countdown, first at the unchecked entry: every activation
     * passes there (linked sites, PICs and the interpreter enter there or at
     * the checked entry just above), it costs one read-modify-write of a
     * word in this piece, and at 0 it takes entry_slow before the frame
     * exists, so the runtime can hand the activation to the new code with
     * nothing to rebuild. A getter has no sends, so no countdown. */
    X64Label tier = JIT_X64_LABEL("tier-up countdown");
    bool countdown = c->rt->tier_up_after > 0 && c->unfed_sends > 0 && !c->is_block && !is_getter(c);
    if (countdown) {
        jit_x64_dec32_l(&c->b, &tier);
        jit_x64_jcc_label32(&c->b, JIT_X64_CC_Z, &slow);
    }
    if (is_getter(c)) {
        emit_getter_body(c, &slow, &checked);
        jit_compile_entry_exits(&c->b, &c->map, c->rt, &header, &abort, &slow, &checked);
        return;
    }
    if (is_setter(c)) emit_setter_fast_path(c, &slow);
    emit_prologue(c, &header, &slow, &checked);
    for (size_t pc = 0; pc < c->len;) {
        c->pc = pc;
        if (c->target[pc]) jit_sim_flush(c); /* a merge point: every path arrives with the real stack */
        if (c->loop_head[pc] || pc == 0) { /* a loop's head, a body's start */
            const JitWholeLoop *whole = jit_whole_loop_at(c, pc);
            if (whole) jit_whole_loop_emit(c, whole);
        }
        if (c->region_of[pc] && c->regions[c->region_of[pc] - 1].lo == pc) jit_double_cache_enter(c);
        if (c->loop_head[pc]) {
            /* loop heads 16-aligned (pieces start and move 16-aligned): the
             * same loop body then runs at the same speed wherever it sits;
             * unaligned, two identical loops of RatioLoops.som differed by
             * up to 30% per iteration */
            size_t mis = jit_x64_size(&c->b) % JIT_LOOP_ALIGN;
            if (mis) jit_x64_nop(&c->b, JIT_LOOP_ALIGN - mis);
        }
        jit_x64_label_bind(&c->b, &c->labels[pc]);
        if (c->target[pc] && !c->region_of[pc]) jit_double_cache_exit(c, pc);
        uint8_t op = c->code[pc];
        size_t used = emit_bytecode(c, pc);
        for (size_t k = 1; k < used; k++) /* a fused jump's pc: never a target (emit_special) */
            jit_x64_label_bind(&c->b, &c->labels[pc + k]);
        pc += used;
        if (op == BC_JUMP || op == BC_JUMP_BACK || op == BC_RETURN_TOP || op == BC_RETURN_SELF)
            VM_ASSERT(c->nsim == 0, "values simulated after %s", vm_bytecode_name[op]);
    }
    jit_sim_flush(c);
    jit_x64_label_bind(&c->b, &c->labels[c->len]);
    jit_x64_ud2(&c->b); /* the compiler ends every method with a return */
    if (c->float_bias.chain >= 0) {
        uint64_t bias = OOP_FLOAT_BIAS;
        jit_x64_datum(&c->b, &c->float_bias, &bias, sizeof bias);
    }
    if (c->float_window_lo.chain >= 0) {
        uint64_t lo = OOP_FLOAT_WINDOW_LO, span = OOP_FLOAT_WINDOW_SPAN;
        jit_x64_datum(&c->b, &c->float_window_lo, &lo, sizeof lo);
        jit_x64_datum(&c->b, &c->float_window_span, &span, sizeof span);
    }
    if (countdown) {
        int32_t n = c->rt->tier_up_after;
        jit_x64_datum(&c->b, &tier, &n, sizeof n);
    }
    cold_join(c);
    unwind_from_here(c, PROF_UNWIND_FRAMELESS); /* the entry checks' exits */
    jit_compile_entry_exits(&c->b, &c->map, c->rt, &header, &abort, &slow, &checked);
}

int32_t *jit_compile_tier_counter(const JitMethod *m)
{
    uint8_t *p = jit_method_unchecked_entry(m);
    if (p[0] != 0xFF || p[1] != 0x0D) return NULL; /* dec dword [rip + rel32] */
    int32_t rel;
    memcpy(&rel, p + 2, sizeof rel);
    return (int32_t *)(void *)(p + 6 + rel);
}

static JitMethod *fail(JitZone *z, JitMethod *m, char *why, size_t whylen, const char *reason)
{
    base_error(why, whylen, "%s", reason);
    if (m) {
        jit_zone_shrink(z, m, sizeof(JitMethod));
        jit_zone_free(z, m);
    }
    return NULL;
}

static JitMethod *compile(JitZone *z, const JitCompileRuntime *rt, Oop method, char *why, size_t whylen, bool lazy_off,
                          bool *lazy_broken);

JitMethod *jit_compile(JitZone *z, const JitCompileRuntime *rt, Oop method, char *why, size_t whylen)
{
    bool broken = false;
    JitMethod *m = compile(z, rt, method, why, whylen, false, &broken);
    if (broken) m = compile(z, rt, method, why, whylen, true, &broken); /* without lazy temps */
    return m;
}

static JitMethod *compile(JitZone *z, const JitCompileRuntime *rt, Oop method, char *why, size_t whylen, bool lazy_off,
                          bool *lazy_broken)
{
    if (obj_slots(method)[METHOD_PRIMITIVE] != oop_from_int(0))
        return fail(z, NULL, why, whylen, "it is a primitive (jit_compile_primitive makes its stub)");
    Compiler c = { .rt = rt, .method = method, .code = vm_method_bytecodes(method),
                   .len = vm_method_bytecode_length(method), .nargs = vm_method_nargs(method),
                   .ntemps = vm_method_ntemps(method), .is_block = vm_method_is_block(method) };
    c.target = calloc(c.len + 1, sizeof *c.target);
    c.loop_head = calloc(c.len + 1, sizeof *c.loop_head);
    c.labels = malloc((c.len + 1) * sizeof *c.labels);
    c.sim = malloc((c.len + 2) * sizeof *c.sim);
    c.held = malloc((c.len + 2) * sizeof *c.held);
    c.region_of = calloc(c.len + 1, sizeof *c.region_of);
    c.xmm0_pc = SIZE_MAX;
    if (!c.target || !c.labels || !c.loop_head || !c.sim || !c.held || !c.region_of) {
        free(c.held);
        free(c.region_of);
        free(c.sim);
        free(c.loop_head);
        free(c.target);
        free(c.labels);
        return fail(z, NULL, why, whylen, "out of C memory");
    }
    for (size_t i = 0; i <= c.len; i++) jit_x64_label_init(&c.labels[i], "bytecode");
    jit_x64_label_init(&c.float_bias, "the Double bias");
    jit_x64_label_init(&c.float_window_lo, "the Double window's low end");
    jit_x64_label_init(&c.float_window_span, "the Double window's span");
    c.temps_stable = !blocks_write_outer(method, 0);
    c.lazy_off = lazy_off;
    JitMethod *m = NULL;
    size_t bound = scan(&c, why, whylen);
    if (!bound) goto out;
    jit_double_cache_plan(&c);
    jit_double_types_plan(&c);
    jit_double_lazy_plan(&c);
    bound += jit_double_cache_bound(&c);
    size_t map_bound = MAP_ENTRIES_PER_BYTECODE * JIT_MAP_ENTRY_MAX_BYTES * (c.len + 1);
    size_t inline_code, inline_map;
    if (!jit_inline_plan(&c, &inline_code, &inline_map)) {
        fail(z, NULL, why, whylen, "out of C memory");
        goto out;
    }
    bound += inline_code;
    bound += 32; /* tier-up's countdown: dec, jz, the word and its alignment */
    map_bound += inline_map;
    jit_whole_loop_plan(&c);
    bound += jit_whole_loop_bound(&c);
    map_bound += JIT_MAP_ENTRY_MAX_BYTES * jit_whole_loop_map_entries(&c);
    /* the inline tables (vm/jit/jitmethod.h), 8-aligned */
    size_t inline_bound = c.ninline_sites ? 16 + c.ninline_sites * (sizeof(JitInlineScope) + sizeof(JitInlineRange)) : 0;
    /* unwind pairs: the entry, prologue, end, and two per return (at most one per bytecode) */
    size_t unwind_bound = 4 + 8 * (4 + 2 * (c.len + 1));
    /* the cold section gets the main code's bound too until the join; when
     * the zone has no room for that, the cold code stays in line */
    JitMethodKind kind = c.is_block ? JIT_KIND_BLOCK : JIT_KIND_METHOD;
    m = jit_zone_alloc(z, kind, 2 * bound + map_bound + unwind_bound + inline_bound + JIT_METHOD_ALIGN);
    if (m) c.cold_at = (uint32_t)bound;
    else m = jit_zone_alloc(z, kind, bound + map_bound + unwind_bound + inline_bound + JIT_METHOD_ALIGN);
    if (!m) {
        fail(z, NULL, why, whylen, JIT_COMPILE_ZONE_FULL);
        goto out;
    }
    m->nargs = (uint8_t)c.nargs;
    m->method = method;
    JitMethod copy = *m;
    jit_x64_buf_init(&c.b, m, m->size);
    if (c.cold_at) jit_x64_cold_init(&c.b, c.cold_at);
    jit_map_builder_init(&c.map);
    jit_map_builder_init(&c.cold_map);
    X64Label checked = JIT_X64_LABEL("checked entry"), unchecked = JIT_X64_LABEL("unchecked entry");
    emit_method(&c, &copy, &checked, &unchecked);
    const char *err = NULL;
    JitMethodLayout l;
    if (!jit_x64_finish(&c.b, &err)) {
        char msg[200];
        snprintf(msg, sizeof msg, "the code did not assemble: %s", err ? err : "?");
        m = fail(z, m, why, whylen, msg);
    } else if (c.lazy_broken) {
        *lazy_broken = true; /* a lazy temp's slot was read where it may be stale */
        m = fail(z, m, why, whylen, "a lazy temp read from its slot");
    } else if (!jit_map_builder_ok(&c.map) || c.lits_failed) {
        m = fail(z, m, why, whylen, "out of C memory for the map");
    } else if (!jit_method_layout_inline(&l, jit_x64_size(&c.b) - JIT_METHOD_CODE, jit_map_builder_bytes(&c.map),
                                         jit_map_builder_count(&c.map), c.nlits, c.nunwind, c.nscopes, c.nranges) ||
               l.size > m->size) {
        m = fail(z, m, why, whylen, "the map does not fit after the code");
    } else {
        jit_method_apply_layout(m, &l);
        jit_method_set_entries(m, jit_x64_label_address(&c.b, &checked), jit_x64_label_address(&c.b, &unchecked));
        jit_map_encode(&c.map, jit_method_map_bytes(m), m->size - l.map_offset);
        for (uint32_t i = 0; i < c.nlits; i++) jit_method_set_lit_site(m, i, jit_method_at(m, c.lits[i]));
        if (c.nunwind) memcpy(jit_method_unwind(m), c.unwind, c.nunwind * 2 * sizeof *c.unwind);
        if (c.nscopes) {
            memcpy(jit_method_inline_scopes(m), c.scopes, c.nscopes * sizeof *c.scopes);
            memcpy(jit_method_inline_ranges(m), c.ranges, c.nranges * sizeof *c.ranges);
        }
        jit_zone_shrink(z, m, l.size);
    }
    jit_map_builder_release(&c.map);
    jit_map_builder_release(&c.cold_map);
    jit_x64_buf_release(&c.b);
out:
    free(c.whole_loops);
    free(c.inline_sites);
    free(c.scopes);
    free(c.ranges);
    free(c.region_of);
    free(c.sim);
    free(c.held);
    free(c.unwind);
    free(c.lits);
    free(c.loop_head);
    free(c.target);
    free(c.labels);
    return m;
}
