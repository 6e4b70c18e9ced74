/*
 * vm/jit/compile_int.h — what vm/jit/compile.c shares with the files that emit
 * parts of its templates (int_inline.c, double_inline.c, double_cache.c,
 * double_types.c, prim_entry.c): the compiler's state, the simulated
 * stack's descriptors and operations (vm/jit/simstack.c), the emit helpers
 * they share (vm/jit/emit.c), and those files' entry points. It includes
 * no compile.h, so it sits below compile.c and those files alike; they all
 * call down into emit.c and simstack.c, which call none of them.
 *
 * Who may include: vm/jit/compile.c and the files it is split into (emit.c,
 * simstack.c, int_inline.c, double_*.c, prim_entry.c).
 */
#ifndef JIT_COMPILE_INT_H
#define JIT_COMPILE_INT_H

#include "gc/object.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/jit/compile.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/map.h"
#include "vm/jit/x64.h"
#include "vm/jit/x64_regs.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Below compile.h: the compiler only points at the runtime it compiles against. */
typedef struct JitCompileRuntime JitCompileRuntime;

/* An innermost loop whose temps temp[i] live in xmm2 + i too
 * (vm/jit/double_cache.c): bytecodes lo (its head) .. hi (its JUMP_BACK). */
#define JIT_DOUBLE_CACHED_MAX 14 /* xmm2 .. xmm15 */
#define JIT_DOUBLE_REGIONS_MAX 8
/* Temps a region's inlined getters read, whose class r8 vouches for
 * (vm/jit/double_cache.c, "Receiver guards"): bit i for guard_temp[i]. */
#define JIT_DOUBLE_GUARDS_MAX 8
#define JIT_DOUBLE_SETTERS_MAX 16
#define JIT_GUARD_REG JIT_X64_R8
/* Lazy temps (vm/jit/double_cache.c, "Lazy temps"): bit JIT_DOUBLE_LAZY_SHIFT + i
 * of r8 set: temp[i]'s value is in its register only, its slot is stale. */
#define JIT_DOUBLE_LAZY_SHIFT 16
#define JIT_DOUBLE_EXITS_MAX 8
typedef struct JitDoubleRegion {
    size_t lo, hi;
    int n;
    uint8_t temp[JIT_DOUBLE_CACHED_MAX];
    int nguards;
    uint8_t guard_temp[JIT_DOUBLE_GUARDS_MAX];
    uint32_t guard_class[JIT_DOUBLE_GUARDS_MAX];
    int nsetters; /* inlined setters whose receiver was pushed from a guarded temp */
    uint32_t setter_pc[JIT_DOUBLE_SETTERS_MAX];
    uint8_t setter_guard[JIT_DOUBLE_SETTERS_MAX]; /* index into guard_temp */
    X64Label refill; /* its one copy of the loads, emitted after its JUMP_BACK */
    uint32_t lazy;   /* bit i: temp[i] is lazy */
    int nexits;      /* the targets outside it of its jumps, where the lazy temps are written back */
    size_t exit_pc[JIT_DOUBLE_EXITS_MAX];
    X64Label flush;  /* its one copy of the write-back, after the refill */
} JitDoubleRegion;

typedef struct Compiler {
    const JitCompileRuntime *rt;
    Oop method;
    const uint8_t *code;
    size_t len;
    int nargs, ntemps;
    bool is_block;
    bool makes_blocks; /* PUSH_BLOCK: its frame may get a context, widowed on return */
    bool *target;     /* [len + 1]: some jump lands here */
    bool *loop_head;  /* [len + 1]: a backward jump lands here */
    X64Label *labels; /* [len + 1]: bytecode pc -> its code */
    X64Buf b;
    JitMapBuilder map;
    JitMapBuilder cold_map; /* the cold section's entries until the join */
    uint32_t cold_at;       /* where the cold section is until the join, 0: in line */
    /* OOP_FLOAT_BIAS, 8 bytes after the method's last bytecode when used: a
     * memory operand of the Double decodes and encodes, one instruction
     * fewer than a movabs into a register each time */
    X64Label float_bias;
    /* the window of exponents an immediate Double has, as one unsigned range
     * of the biased bits shifted left once (immediate_or_cold) */
    X64Label float_window_lo, float_window_span;
    bool lazy_rcx;           /* a special send's rcx is loaded where a path other than the first needs it */
    int64_t lazy_rcx_value;
    uint32_t *lits;   /* buffer offsets of the literal sites' imm64s (global caches) */
    uint32_t nlits, lits_cap;
    bool lits_failed;
    uint32_t *unwind; /* pairs (offset, PROF_UNWIND_* rule): vm/jit/jitmethod.h's unwind table */
    uint32_t nunwind, unwind_cap;
    struct SimEntry *sim; /* [len + 2]: the simulated stack (vm/jit/simstack.c) */
    int nsim;
    struct SimEntry *held; /* [len + 2]: descriptors below a send's operands (hold_below) */
    int nheld;
    bool temps_stable;     /* no block writes an outer variable: a send cannot change a temp */
    bool lazy_off;         /* no lazy temps: a compile that read one's stale slot is redone without */
    bool lazy_broken;      /* this compile did (jit_double_lazy_touch) */
    bool lazy_read_ok;     /* the descriptor loads now are a lazy read's or come after a write-back */
    bool lazy_skip_loads;  /* a special send's operand loads leave lazy temps to jit_double_load */
    size_t pc;                  /* the bytecode being emitted */
    size_t xmm0_pc;             /* at this pc xmm0 holds rax's value when rax is a Double */
    bool likely_double[256]; /* temp index (PUSH_TEMP's byte) -> likely a Double (vm/jit/double_types.c) */
    uint8_t *region_of;         /* [len + 1]: 1 + index into regions, or 0 */
    JitDoubleRegion regions[JIT_DOUBLE_REGIONS_MAX];
    int nregions;
    /* Inlining (vm/jit/inline.c): the sites scan() chose, and the tables
     * the method gets (vm/jit/jitmethod.h) */
    struct JitInlineSite *inline_sites;
    uint32_t ninline_sites;
    JitInlineScope *scopes;
    JitInlineRange *ranges;
    uint32_t nscopes, nranges;
    uint32_t unfed_sends; /* plain sends jit_inline_plan skipped for want of feedback: tier-up's reason */
    struct JitWholeLoop *whole_loops; /* vm/jit/whole_loop.c's plans */
    int nwhole_loops;
} Compiler;

typedef enum SimKind { SIM_CONST, SIM_SELF, SIM_ARG, SIM_TEMP, SIM_FIELD, SIM_LIT, SIM_RAX } SimKind;

typedef struct SimEntry {
    SimKind kind;
    int64_t v; /* the Oop (SIM_CONST) or the index */
} SimEntry;

/* -- vm/jit/emit.c --------------------------------------------------------------------- */

/* A bytecode's 16-bit operand at p (little-endian). */
static inline unsigned jit_compile_operand_w(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
/* The frame slots machine code reads (vm/model/frame.h's drawing), and
 * literal i of the method in register `method`. */
static inline X64Mem jit_compile_self_slot(void) { return jit_x64_mem(JIT_X64_RBP, 8 * FRAME_RECEIVER); }
static inline X64Mem jit_compile_temp_slot(int t) { return jit_x64_mem(JIT_X64_RBP, 8 * (FRAME_FIRST_TEMP - t)); }
static inline X64Mem jit_compile_arg_slot(int k) { return jit_x64_mem(JIT_X64_RBP, 8 * k); }
/* Whether v fits a sign-extended imm32. */
static inline bool jit_compile_fits_i32(int64_t v) { return v == (int64_t)(int32_t)v; }
static inline X64Mem jit_compile_lit_of(X64Reg method, int i)
{
    return jit_x64_mem(method, (int32_t)(8 + 8 * (METHOD_FIXED_SLOTS + i)));
}

/* A map entry here for the bytecode at bcpc; the cold section's go to
 * their own builder until the join appends them. */
void jit_compile_map_here(Compiler *c, size_t bcpc, JitMapKind kind);
/* Code that rarely runs goes between these (jit/x64.h, "The cold section"):
 * after the method's last bytecode, mapped to the bytecode at c->pc. */
void jit_compile_cold_begin(Compiler *c);
void jit_compile_cold_end(Compiler *c);
/* A conditional jump for the bytecode at bcpc, mapped as its branch. */
void jit_compile_jcc_to(Compiler *c, X64Cond cc, X64Label *l, size_t bcpc);
/* Where a jump at pc lands, or -1 when it is not a jump. */
long jit_compile_jump_target(const uint8_t *code, size_t pc);
/* The conditional jump (JUMP_IF_TRUE/FALSE) that a comparison whose next
 * bytecode is at next fuses with, or -1: the next bytecode itself, or the
 * one an unconditional forward jump there lands on (`(a < b) and: [ c <= d ]`
 * as a loop's condition ends in a JUMP to the loop's JUMP_IF_FALSE, whose
 * other entry pushes false): branching there on the flags skips the
 * Boolean, its push at the merge, and its two tests. The next bytecode
 * must be no jump target. */
long jit_compile_fused_branch(const Compiler *c, size_t next);
/* Whether the SEND or SEND_W at pc is an accessor send machine code
 * inlines (vm/jit/compile.h, site_accessor): its receiver class, kind and field. */
bool jit_compile_accessor(const Compiler *c, size_t pc, uint32_t *class_index, bool *setter, int *field);
/* Whether special send op is one of the comparisons (< > <= >= = ~= <>), and
 * the condition under which it answers true after `cmp receiver, argument`
 * of two SmallIntegers: one table for the templates and the inlined bodies. */
static inline bool jit_compile_is_compare(uint8_t op)
{
    return (op >= BC_SEND_LT && op <= BC_SEND_NE) || op == BC_SEND_NOT_EQUAL;
}
static inline X64Cond jit_compile_compare_cond(uint8_t op)
{
    switch (op) {
    case BC_SEND_LT: return JIT_X64_CC_L;
    case BC_SEND_GT: return JIT_X64_CC_G;
    case BC_SEND_LE: return JIT_X64_CC_LE;
    case BC_SEND_GE: return JIT_X64_CC_GE;
    case BC_SEND_EQ: return JIT_X64_CC_E;
    default: return JIT_X64_CC_NE;
    }
}
/* rax := true when cc holds after the compare, else false. */
void jit_compile_set_boolean(Compiler *c, X64Cond cc);

/* The checked entry: the receiver's class against the site's tag (edi),
 * to abort on a miss. */
void jit_compile_checked_entry(X64Buf *b, int nargs, X64Label *abort);
/* Out of line: a class miss (abort) and, when slow is not NULL, the entry
 * checks' slow path, each mapped (bcpc 0) as their jumps leave the piece. */
void jit_compile_entry_exits(X64Buf *b, JitMapBuilder *map, const JitCompileRuntime *rt, X64Label *header,
                             X64Label *abort, X64Label *slow, X64Label *checked);

/* Compares rax with the Oop v (clobbers r11). */
void jit_compile_cmp_rax_oop(Compiler *c, Oop v);

/* To done unless storing rcx into object rax must remember rax (old object,
 * young pointer, not yet remembered). Clobbers rdx and r11. */
void jit_compile_barrier_unneeded(Compiler *c, X64Label *done);
/* The same for storing value into object obj (whole loops: any registers). */
void jit_compile_barrier_unneeded_in(Compiler *c, X64Reg obj, X64Reg value, X64Label *done);
/* The index into rt->bool_selectors of the plain send at pc when it is one
 * of the Boolean sends machine code answers for true and false
 * (emit_bool_send), else -1. */
int jit_compile_bool_send(const Compiler *c, size_t pc);
/* The same for the send at p in the bytecodes of method (an inlined callee's). */
int jit_compile_bool_send_in(const Compiler *c, Oop method, const uint8_t *p);
/* rax := what a Boolean receiver answers by rt->bool_answers' answer a, the
 * argument in rcx; to slow when that is not known (clobbers r11). */
void jit_compile_bool_answer(Compiler *c, uint8_t a, X64Label *slow);
/* rdx := the slot count of the Array in rax, else to slow; keeps rax, rcx
 * (clobbers r11). */
void jit_compile_array_or(Compiler *c, X64Label *slow);
/* The same for the Array in register array, its count into count (clobbers r11). */
void jit_compile_array_in_or(Compiler *c, X64Reg array, X64Reg count, X64Label *slow);
/* rsi := the 0-based index from the SmallInteger in rcx, to slow unless
 * 1 <= it <= rdx; keeps rax, rcx. */
void jit_compile_index_or(Compiler *c, X64Label *slow);
/* The same with the slot count in register count. */
void jit_compile_index_in_or(Compiler *c, X64Reg count, X64Label *slow);

/* -- vm/jit/inline.c ------------------------------------------------------------------- */

/* At most this many sites of one method are inlined. */
#define JIT_INLINE_SITES_MAX 16
/* A plain send whose callee is inlined (chosen by jit_inline_plan). */
typedef struct JitInlineSite {
    size_t pc;            /* the SEND in the compiled method */
    uint32_t class_index; /* the receiver class the body is guarded by */
    Oop method;           /* the callee */
} JitInlineSite;
/* Chooses the sends to inline (after the scan marked the jump targets):
 * answers the code bytes and the map bytes they add, at most. false: out
 * of C memory. */
bool jit_inline_plan(Compiler *c, size_t *code_bound, size_t *map_bound);
/* The site at pc, or NULL. */
const JitInlineSite *jit_inline_site_at(const Compiler *c, size_t pc);
/* Emits the send at pc with its callee inlined (everything flushed); the
 * answer is SIM_RAX after it. */
void jit_inline_emit(Compiler *c, const JitInlineSite *s);

/* -- vm/jit/whole_loop.c --------------------------------------------------------------- */

/* An innermost counted loop compiled whole, before its plain code. */
typedef struct JitWholeLoop JitWholeLoop;
/* Plans the loops compiled whole (after jit_inline_plan). */
void jit_whole_loop_plan(Compiler *c);
/* The code and the map entries they add, at most. */
size_t jit_whole_loop_bound(const Compiler *c);
size_t jit_whole_loop_map_entries(const Compiler *c);
/* The loop whose head is at head, or NULL. */
const JitWholeLoop *jit_whole_loop_at(const Compiler *c, size_t head);
/* Emits it where control falls into its head (the simulated stack
 * flushed); a failed guard falls out of it into the plain code emitted
 * next, at the head. */
void jit_whole_loop_emit(Compiler *c, const JitWholeLoop *L);
/* The inlined callee's body at the send at site compiled whole, or NULL. */
const JitWholeLoop *jit_whole_inline_at(const Compiler *c, size_t site);
/* Emits it after the inline guard (the receiver and arguments on the
 * machine stack): the answer in rax and them dropped at done; a failed test
 * falls out of it into what is emitted next, the body's templates. */
void jit_whole_inline_emit(Compiler *c, const JitWholeLoop *L, X64Label *done);

/* -- vm/jit/simstack.c ---------------------------------------------------------------- */

/* Pushes a descriptor. */
void jit_sim_push(Compiler *c, SimKind kind, int64_t v);
/* Pushes e onto the real stack; only r11 is scratch (rax may be another
 * entry's). */
void jit_sim_materialise(Compiler *c, SimEntry e);
/* r := the value e describes (r is its own scratch). */
void jit_sim_load(Compiler *c, SimEntry e, X64Reg r);
/* Materialises all but the top `keep` descriptors (the deepest first). */
void jit_sim_flush_below(Compiler *c, int keep);
/* Materialises them all. */
void jit_sim_flush(Compiler *c);
/* Below the k operands of a special or accessor send whose fast path makes
 * no call: pushes the descriptors a send could change, holds the stable
 * ones above them aside (c->held); jit_sim_hold_end puts them back. */
void jit_sim_hold_below(Compiler *c, int k);
void jit_sim_hold_end(Compiler *c);
/* Whether a descriptor below the top reads variable (kind, v). */
bool jit_sim_reads_below_top(const Compiler *c, SimKind kind, int64_t v);
/* r := the top of the operand stack, popped. */
void jit_sim_pop_into(Compiler *c, X64Reg r);

/* -- vm/jit/int_inline.c --------------------------------------------------------------- */

/* Whether special send op may take its SmallInteger fast path: Integer's
 * method for it is the VM's primitive (vm/interp/special.h). */
bool jit_int_inline(const Compiler *c, uint8_t op);
/* To slow unless receiver (rax) and argument (rcx) are both SmallIntegers;
 * arg_int: the argument is one (a constant), only the receiver is tested. */
void jit_int_both_or(Compiler *c, bool arg_int, X64Label *slow);
/* rax := rax op rcx (+ - *) as SmallIntegers, then to done; to not_ints
 * unless both are SmallIntegers, to overflow when the answer is none (rax,
 * rcx intact either way). arg_const: the tagged argument when arg_int. */
void jit_int_arith(Compiler *c, uint8_t op, bool arg_int, int64_t arg_const, X64Label *not_ints,
                   X64Label *overflow, X64Label *done);
/* The SmallInteger fast path of special send op (bit operations, shifts,
 * // \\ rem: abs negated) and isNil/notNil, to slow otherwise and to done
 * with the answer in rax; false (nothing emitted) for other sends. */
bool jit_int_fast_path(Compiler *c, uint8_t op, X64Label *slow, X64Label *done);

/* -- vm/jit/double_cache.c ------------------------------------------------------------- */

/* Finds the regions (after the scan marked the jump targets). */
void jit_double_cache_plan(Compiler *c);
/* The code the regions add, at most. */
size_t jit_double_cache_bound(const Compiler *c);
/* The region c->pc lies in, or NULL; where its temp i lives. Inline here,
 * not in double_cache.c, because double_inline.c asks them and
 * double_cache.c emits through double_inline.c: the two files would call
 * each other. */
static inline const JitDoubleRegion *jit_double_region_at_pc(const Compiler *c)
{
    uint8_t id = c->region_of[c->pc];
    return id ? &c->regions[id - 1] : NULL;
}
static inline X64Xmm jit_double_region_xmm(int i) { return (X64Xmm)(JIT_X64_XMM2 + i); }
/* The xmm register that holds descriptor e's value when it is a Double
 * (a cached temp of the region at c->pc), or -1. */
static inline int jit_double_cached(const Compiler *c, const SimEntry *e)
{
    const JitDoubleRegion *r = jit_double_region_at_pc(c);
    if (!r || !e || e->kind != SIM_TEMP) return -1;
    for (int i = 0; i < r->n; i++)
        if (r->temp[i] == e->v) return (int)jit_double_region_xmm(i);
    return -1;
}
/* Picks each region's lazy temps (after jit_double_types_plan). */
void jit_double_lazy_plan(Compiler *c);
/* The r8 bit that says the cached temp in xmm register `cached` is lazy
 * and its value only in that register now, or 0. */
static inline int32_t jit_double_lazy_bit(const Compiler *c, int cached)
{
    const JitDoubleRegion *r = jit_double_region_at_pc(c);
    if (!r || cached < (int)jit_double_region_xmm(0)) return 0;
    int i = cached - (int)jit_double_region_xmm(0);
    return (r->lazy >> i) & 1 ? (int32_t)((uint32_t)1 << (JIT_DOUBLE_LAZY_SHIFT + i)) : 0;
}
/* A descriptor load of temp t's slot outside a lazy read (the load of a
 * special send's operands, which jit_double_load reads lazily): when t is
 * lazy the slot may be stale, so the compile is redone without lazy temps. */
void jit_double_lazy_touch(Compiler *c, int t);
/* For the `+ - *` at c->pc whose answer the next bytecode (at next) pops
 * into a temp: that temp's index in the region when it is lazy (the fast
 * path then leaves the answer in its register, jit_double_lazy_store_fast),
 * else -1. */
int jit_double_lazy_store(const Compiler *c, size_t next);
/* xmm(i) := xmm0, marked lazy; drops s words of the real stack and jumps
 * past the POP_TEMP at next. */
void jit_double_lazy_store_fast(Compiler *c, int i, int s, size_t next);
/* Writes the lazy temps of the region at c->pc back into their slots
 * (before a call, or before a special send's operands are read again from
 * their slots): a jump to the region's write-back and, when a value must be
 * boxed, a call of the runtime mapped at bcpc (it may collect; the region's
 * registers are refilled after it). Keeps nothing but the real stack: rax,
 * rcx, rdx, rsi, rdi, r11 and the xmm registers may change. */
void jit_double_cache_flush(Compiler *c, size_t bcpc);
/* At pc outside the regions: the write-back when some region's jumps leave
 * it for pc. */
void jit_double_cache_exit(Compiler *c, size_t pc);
/* Makes the invariant at a region's head (the fall-through into it): the
 * loads in line. Clobbers rdx, r11. */
void jit_double_cache_enter(Compiler *c);
/* Makes it again after a call in the region, through the region's one
 * out-of-line copy of the loads (rsi holds the way back). Keeps rax and
 * rcx; clobbers rdx, rsi, r11. */
void jit_double_cache_load(Compiler *c);
/* That copy, after the region's JUMP_BACK (nothing falls into it). */
void jit_double_cache_refill(Compiler *c);
/* Keeps it after temp t was stored from register r, the value descriptor
 * `value` described (NULL: popped from the real stack): nothing for a
 * constant that is no Double (a block's temps made nil at each iteration),
 * a copy of the register for a cached temp's value or, when it came from
 * rax and c->xmm0_pc == c->pc, of xmm0; else r's value when it is a Double.
 * Keeps r unless it is r11; clobbers rdx, r11. */
void jit_double_cache_stored(Compiler *c, int t, const SimEntry *value, X64Reg r);
/* xmm0 := rax's value when it is a Double, after a generic send in a
 * region, so that xmm0 follows rax at the send's merge. */
void jit_double_cache_answer(Compiler *c);
/* The bit of r8 that vouches that the temp descriptor e reads holds an
 * object of class class_index while no tracer holds the method probes
 * (an inlined getter then tests it alone), or 0. */
int32_t jit_double_cache_guard(const Compiler *c, const SimEntry *e, uint32_t class_index);
/* For the inlined setter at c->pc, whose receiver (in rax) was pushed from
 * a guarded temp of class class_index: that temp, and its bit (else 0).
 * The receiver is that temp's value unless a call between its push and the
 * send stored into the temp, so the setter compares the two first. */
int32_t jit_double_cache_setter_guard(const Compiler *c, uint32_t class_index, int *temp);
/* At a region's back jump: r8 vouches for nothing once a tracer holds the
 * method probes (clobbers r11). */
void jit_double_cache_guard_probes(Compiler *c);

/* -- vm/jit/double_types.c ------------------------------------------------------------- */

/* Guesses which temps likely hold Doubles (after the scan marked the jump
 * targets). */
void jit_double_types_plan(Compiler *c);
/* Whether descriptor e reads such a temp. */
bool jit_double_likely(const Compiler *c, const SimEntry *e);

/* -- vm/jit/double_inline.c ------------------------------------------------------------ */

/* x := the value of the Oop in r when it is a Double, immediate or boxed
 * (taken from xmm `cached` instead when cached >= 0: a cached temp,
 * vm/jit/double_cache.c), or a SmallInteger converted when ints_too (as C's
 * (double) in vm_int_to_double); anything else goes to other. Keeps r
 * unless it is r11; clobbers rdx, r11. */
void jit_double_load(Compiler *c, X64Reg r, X64Xmm x, int cached, bool ints_too, X64Label *other);

/* r := the bits of the Double in x plus the exponent's bias (what a
 * rotate left by 4 makes the immediate), or to out when its exponent lies
 * outside the immediate window (a zero, or a Double that needs a box).
 * Clobbers scratch. */
void jit_double_biased_or(Compiler *c, X64Xmm x, X64Reg r, X64Reg scratch, X64Label *out);

/* Whether a Double receiver of special send op may take its fast path:
 * Double's method for it is the VM's primitive (vm/interp/special.h). */
bool jit_double_inline(const Compiler *c, uint8_t op);
/* What the compiler knows of a special send's receiver (rax) and argument
 * (rcx) from their descriptors: both read from one (`x * x`: one test
 * covers both), or literal Doubles (no test; no SmallInteger path). */
typedef struct JitOperandFacts {
    bool same, receiver_double, arg_double;
    double receiver_value, arg_value; /* of a literal Double */
    int receiver_xmm, arg_xmm;        /* where a cached temp's value is (jit_double_cached), or -1 */
} JitOperandFacts;
/* jit_double_arith for an answer popped into lazy temp `lazy` (its index in
 * the region) by the POP_TEMP at next: left in its register, no encoding. */
void jit_double_arith_lazy(Compiler *c, uint8_t op, JitOperandFacts f, X64Label *slow, int lazy, int s, size_t next);
/* The facts of receiver descriptor r and argument descriptor a (either may
 * be NULL: on the real stack). */
JitOperandFacts jit_double_facts(const Compiler *c, const SimEntry *r, const SimEntry *a);

/* Double + - * with a Double or SmallInteger argument (rcx), receiver in
 * rax: the primitives' arithmetic (plain IEEE), the answer boxed inline
 * into rax, then to done; to slow (rax, rcx intact) otherwise. */
void jit_double_arith(Compiler *c, uint8_t op, JitOperandFacts f, X64Label *slow, X64Label *done);
/* Double < > <= >= = between two Doubles (Integer arguments compare
 * exactly in the primitives: left to them): flags set for the returned
 * condition, or to slow. */
X64Cond jit_double_compare(Compiler *c, uint8_t op, JitOperandFacts f, X64Label *slow);
/* The condition that answers receiver op argument (< > <= >=) after
 * ucomisd of the argument with the receiver, NaNs as the primitives answer. */
X64Cond jit_double_ordered_cond(uint8_t op);

/* The plain sends machine code inlines for Double receivers. */
typedef enum JitDoubleSend { JIT_DOUBLE_SEND_NONE, JIT_DOUBLE_SEND_DIVIDE, JIT_DOUBLE_SEND_SQRT } JitDoubleSend;
/* Which one the SEND or SEND_W at pc is: `//` with one argument or `sqrt`
 * with none while Double's method is the VM's primitive. */
JitDoubleSend jit_double_send_kind(const Compiler *c, size_t pc);
/* Its fast path, the receiver in rax and the argument in rcx: the answer
 * boxed into rax, then to done; to slow (rax, rcx intact) otherwise. */
void jit_double_send(Compiler *c, JitDoubleSend kind, JitOperandFacts f, X64Label *slow, X64Label *done);

/* A chain of Double sends computed unboxed (vm/jit/double_inline.c,
 * "Chains"). Link 0 is the first send (+ - *); each later one (+ - * < >
 * <= >=, and // and sqrt as op JIT_DOUBLE_OP_DIVIDE, JIT_DOUBLE_OP_SQRT)
 * takes the previous answer as its receiver (its argument `other`, a
 * descriptor pushed in between; sqrt has none) or as its argument (its
 * receiver on the real stack). */
#define JIT_DOUBLE_OP_DIVIDE 0xfe /* beyond the bytecodes */
#define JIT_DOUBLE_OP_SQRT 0xff
/* The longest chains in Mandelbrot and NBody have 3 links. Every send of
 * a long expression starts a chain of the rest (its plain code's), so the
 * code grows with the square of this bound; a longer chain continues as
 * another after a box. */
#define JIT_DOUBLE_CHAIN_MAX 4
typedef struct JitDoubleLink {
    uint8_t op;
    size_t pc;
    bool prev_is_receiver;
    SimEntry other;
} JitDoubleLink;
/* The chain starting at the special send at pc (at most max links): its
 * length, 0 or 1 when there is none to fuse. */
int jit_double_chain_scan(const Compiler *c, size_t pc, JitDoubleLink *links, int max);
/* A bound of the bytes jit_double_chain emits for a chain of n links (0
 * for none). */
size_t jit_double_chain_bound(int n);
/* The chain's fast path, with the first send's receiver in rax and argument
 * in rcx, s of its operands on the real stack: to fallback (all intact)
 * unless both are numbers as jit_double_arith takes them and eden has room
 * for one Double; then jumps to the plain code after the chain. */
void jit_double_chain(Compiler *c, const JitDoubleLink *links, int n, int s, JitOperandFacts f, X64Label *fallback);

/* -- Primitives' fast paths (vm/jit/prim_fast.c) -- */

/* At a primitive stub's unchecked entry: kind's fast path, which returns
 * with the answer in rax or goes to slow (the call into C); nothing for
 * JIT_PRIM_FAST_NONE. */
void jit_prim_fast_emit(X64Buf *b, const JitCompileRuntime *rt, JitPrimFast kind, X64Label *slow);

#endif
