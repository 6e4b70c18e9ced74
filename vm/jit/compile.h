/*
 * vm/jit/compile.h — the template compiler: one quickened heap method in, one
 * JitMethod of x86-64 in the code zone out (vm/jit/DESIGN.md, "Integration
 * notes"), or a sentence saying why it declines.
 *
 * The code keeps vm/model/frame.h's layout with rbp = fp and rsp = sp; the operand
 * stack is the machine stack wherever a call, a jump or a map entry can meet
 * it; between those, its top may live in rax, immediates and frame slots
 * only the compiler knows of (vm/jit/DESIGN.md, "Stack-to-register mapping"):
 *
 *   [rbp + 16 + 8*nargs]  receiver (pushed by the caller)
 *   [rbp + 8*k]           argument whose quickened PUSH_ARG operand is k
 *   [rbp + 8]             return address (code zone or ceReturnToInterpreter)
 *   [rbp]                 caller's rbp
 *   [rbp - 8]             heap method, loaded from the JitMethod header
 *   [rbp - 16]            context: nil
 *   [rbp - 24]            flags: FRAME_FLAGS_MAKE(nargs, ntemps, 0) |
 *                         FRAME_FLAG_MACHINE_CODE, as a SmallInteger
 *   [rbp - 32]            self
 *   [rbp - 40 - 8*t]      temp t, nil on entry
 *   ...                   operand stack, rsp -> top
 *
 * Entries (vm/jit/sendsite.h draws the send site that calls them):
 *   checked     ecx := receiver class index, compared with edi (the site's
 *               tag); a mismatch jumps to rt->method_abort with rsi = the
 *               header (the site's return address still on top).
 *   unchecked   where the interpreter, PICs and a freshly linked send enter:
 *               the interrupt check (*collect_wanted, or a tracer on the
 *               method probes: JitCompileRuntime) and the stack check
 *               (the frame plus the interpreter's headroom must fit above the
 *               current page's base); either failing jumps to rt->entry_slow
 *               with rsi = the address just past the checks.
 *
 * Runtime calls (through vm/jit/enter.h's trampolines; no Oop lives in a
 * register across one):
 *   send      (dispatch) the unlinked send: edi = jit_sendsite_unlinked_tag
 *             (selector tag, nargs). Receiver and arguments are on the stack
 *             just above the return address (jit_cstate.st_sp[1 + nargs] is
 *             the receiver, st_sp[1] the last argument); the callee answers
 *             the result in rax and machine code drops receiver and arguments
 *             itself (lea rsp, [rsp + 8*(nargs+1)]; push rax).
 *   method_abort, entry_slow (dispatch) as above.
 *   primitive a primitive method's stub calls it with edi = primitive index,
 *             esi = nargs, rdx = the stub's header: the answer in rax (the
 *             stub returns it), or the routine exits to the interpreter.
 *   safepoint no arguments: called at a backward jump when *collect_wanted.
 *   barrier   rdi = the old object a young pointer was just stored into
 *             (its OBJ_GC_REMEMBERED bit was clear): remember it.
 *   global    rdi = the literal index of a global's name: its value.
 *
 * Selector tags: >= 0 is the index of the selector in the method's
 * literal frame (SEND, SEND_W); JIT_SEND_MUST_BE_BOOLEAN is #mustBeBoolean
 * (nargs 0, the receiver the non-Boolean a conditional jump popped; its
 * answer is tested again by the same jump); jit_send_tag_special(bc) is the
 * generic path of special send bc (BC_SEND_ADD .. BC_SEND_LAST_SPECIAL), whose
 * selector is vm_special_selector[bc - BC_SEND_ADD].
 *
 * Immediates: nil, true and false are allocated first in old space and never
 * move, so the code embeds them; every other Oop is read through the frame's
 * method slot (literals) or the stack. The literal-site table is empty.
 *
 * Declined (answer NULL, reason in why): unquickened *_VAR, HALT, malformed
 * bytecode (a truncated operand, a jump out of the method, a literal index
 * past the literals), a full zone. Methods and blocks with blocks, outer
 * variables, non-local returns and super sends are compiled (the last two
 * through runtime routines); primitive methods get a stub
 * (jit_compile_primitive).
 *
 * Who may call: the VM's JIT glue (when a method's counter trips) and tests.
 */
#ifndef JIT_COMPILE_H
#define JIT_COMPILE_H

#include "gc/object.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/zone.h"
#include "vm/bytecode/bytecodes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#define JIT_SEND_MUST_BE_BOOLEAN ((int64_t)-1)
#define JIT_SEND_SPECIAL_BASE ((int64_t)-2) /* tag of BC_SEND_ADD's generic path; others count down */

static inline int64_t jit_send_tag_special(int bc) { return JIT_SEND_SPECIAL_BASE - (bc - BC_SEND_ADD); }
static inline bool jit_send_tag_is_special(int64_t tag) { return tag <= JIT_SEND_SPECIAL_BASE; }
/* The special-send bytecode a tag stands for (jit_send_tag_is_special). */
static inline int jit_send_tag_bytecode(int64_t tag) { return BC_SEND_ADD + (int)(JIT_SEND_SPECIAL_BASE - tag); }

/* vm/interp/special.h's VmBoolAnswer, for machine code's Boolean sends */
typedef enum JitBoolAnswer { JIT_BOOL_SEND, JIT_BOOL_TRUE, JIT_BOOL_FALSE, JIT_BOOL_ARG } JitBoolAnswer;

#define JIT_LAZY_BUFFER_TEMPS 16 /* lazy_buffer: 16 values' bits, their 16 temps, one more word */

typedef struct JitCompileRuntime {
    const uint8_t *send;         /* dispatch trampoline: fn(unlinked tag) */
    const uint8_t *method_abort; /* dispatch trampoline: fn(_, callee header) */
    const uint8_t *entry_slow;   /* dispatch trampoline: fn(_, address past the checks) */
    const uint8_t *primitive;    /* trampoline: fn(index, nargs, stub header) */
    const uint8_t *safepoint; /* trampoline: fn() collects if wanted */
    const uint8_t *barrier;   /* trampoline: fn(object) remembers it */
    const uint8_t *global;    /* trampoline: fn(literal index, global site) answers the global's value */
    const uint64_t *globals_epoch;       /* changes whenever a global is (re)bound; never 0 */
    const uint8_t *push_block;   /* trampoline: fn(literal index of the block method): a new closure */
    const uint8_t *outer_get;    /* trampoline: fn(level << 8 | var): an outer variable's value */
    const uint8_t *outer_set;    /* trampoline: fn(level << 8 | var, value) */
    const uint8_t *widow;        /* trampoline: fn(): the returning frame's context outlives it */
    const uint8_t *super_send;   /* dispatch trampoline: fn(unlinked tag) */
    const uint8_t *interpret;    /* trampoline: fn(bcpc): the interpreter continues this frame there */
    const uint8_t *block_value_miss; /* dispatch trampoline: fn(_, value stub header) */
    /* trampoline: fn(bits): a Double of those bits (allocates: may collect);
     * NULL: a Double chain reserves its box's room in eden before it starts */
    const uint8_t *box_double;
    /* trampoline: fn(mask): for each bit i, a Double of lazy_buffer[i]'s bits
     * into the frame's temp lazy_buffer[JIT_LAZY_BUFFER_TEMPS + i] (allocates:
     * may collect); NULL: no lazy temps (vm/jit/double_cache.c) */
    const uint8_t *lazy_box;
    uint64_t *lazy_buffer;
    /* Inline Array at:, at:put:, length while these say Array's own
     * primitives answer them (NULL: never inline). */
    const bool *array_at_inline, *array_at_put_inline, *array_length_inline;
    /* Bit (bc - BC_SEND_ADD) set: special send bc's SmallInteger fast path
     * answers what Integer's method would (vm/interp/special.h; NULL: never). */
    const uint64_t *int_prims;
    /* The constant isNil [0] and notNil [1] answer for nil, and for
     * SmallIntegers, or 0 when their classes' methods compute it. */
    const Oop *nil_answers, *int_answers;
    /* Other receivers: vm/interp/special.h's table by class index (NULL: send). */
    const uint8_t *nil_table;
    uint32_t nil_table_classes;
    /* The same for Double receivers: Double + - * < > <= >= = are inlined
     * while Double's own primitives answer them (NULL: never); results are
     * bumped into eden as gc_alloc_fast does. */
    const uint64_t *double_prims;
    /* Inline the plain sends Double // and sqrt while these say Double's
     * own primitives answer them (NULL: never). */
    const bool *double_divide_inline, *double_sqrt_inline;
    /* What a plain send of bool_selectors[k] (one argument) answers for a
     * receiver true [0] or false [1] and a Boolean argument: a
     * JitBoolAnswer (vm/interp/special.h's table; NULL: always send). */
    const uint8_t (*bool_answers)[2];
    const char *const *bool_selectors;
    int bool_nselectors;
    uintptr_t *eden_top;
    const uintptr_t *eden_limit;
    uint64_t *bytes_allocated;
    const volatile bool *collect_wanted; /* &gc_collect_wanted */
    const uintptr_t *old_start;          /* &gc_old_start: young objects lie below it */
    void *const *page;                   /* &vm_page: its first word is the page's base */
    int headroom_words;                  /* the interpreter's stack headroom */
    Oop nil, true_obj, false_obj;        /* never move */
    /* The USDT method probes' two 16-bit semaphores, the first half of an
     * aligned 64-bit word whose second half is 0 (profiler/usdt.h), within
     * 2 GiB of *collect_wanted: the interrupt check ORs that word into its
     * test, so that while a tracer holds either probe every entry takes
     * entry_slow, which hands the activation to the interpreter (it fires
     * the probes). NULL: no such test (probes compiled out, tests). */
    const volatile unsigned short *method_probe_semaphores;
    /* What the interpreter saw at the send at site (a hint, NULL: none):
     * true when its sends went to receivers of class_index running an
     * accessor of their field `field` (a getter `^field`, or when *setter a
     * setter `field := arg`). Machine code inlines that accessor behind a
     * class test (classes never change once loaded, so the test makes the
     * hint always right); other receivers take the send. */
    bool (*site_accessor)(const uint8_t *site, uint32_t *class_index, bool *setter, int *field);
    /* Whether the interpreter ran the + - * at site on Doubles (a hint,
     * NULL: none): machine code then tries their Double path first. */
    bool (*site_saw_double)(const uint8_t *site);
    /* Inlining (vm/jit/inline.c). What the interpreter saw at the plain send
     * at site (a hint, NULL: none): true when every send there since the
     * entry was filled went to receivers of class_index and ran `method`
     * (no primitive). */
    bool (*site_method)(const uint8_t *site, uint32_t *class_index, Oop *method);
    const uint8_t *deopt;    /* trampoline: fn(bcpc, words above the args, continuation): never returns */
    int inline_budget;       /* bytecode bytes of the largest method inlined at a send; 0: no inlining */
    int64_t *deopt_countdown; /* --deopt-every: an inlined body deoptimizes when it counts this to 0; NULL: off */
    /* Tier-up (vm/jit/DESIGN.md, "Tier-up"): a method with plain sends that
     * had no feedback counts its invocations down from this in its code
     * (jit_compile_tier_counter) and takes entry_slow at 0; 0: no countdown. */
    int32_t tier_up_after;
    /* Compile innermost counted loops whole as well (vm/jit/whole_loop.c). */
    bool whole_loops;
    int32_t deopt_every; /* what *deopt_countdown starts from */
    uint64_t *whole_loop_counts; /* [0] loops compiled whole, [1] iterations they left to the plain code */
} JitCompileRuntime;

/* -- Global sites ----------------------------------------------------------------
 * PUSH_GLOBAL caches the global's value in the code; the cache holds while
 * *globals_epoch equals the epoch the site recorded (0 = never filled):
 *
 *   byte 0   movabs rax, value      literal site (the GC visits and updates it)
 *        10  movabs r11, &epoch
 *        20  mov rdx, [r11]
 *        23  cmp edx, epoch32       patchable (jit_x64_patch_cmp_imm32)
 *            je hit
 *            mov edi, literal ; lea rsi, [site] ; call ceGlobal   (the miss)
 *   hit:     push rax
 */
#define JIT_GLOBAL_SITE_EPOCH_CMP 23
/* The miss fills the site: value and epoch, read back. */
bool jit_compile_global_site_fill(uint8_t *site, Oop value, uint32_t epoch);

/* Compiles `method` into z: a JIT_KIND_METHOD piece whose entries are its
 * first code byte, with the mcpc -> bcpc map after the code. NULL with the
 * reason in why (a NUL-terminated sentence, truncated to whylen) when the
 * method is declined or the zone is full. */
/* The `why` of a compile that failed only for want of room. */
#define JIT_COMPILE_ZONE_FULL "the code zone is full"

JitMethod *jit_compile(JitZone *z, const JitCompileRuntime *rt, Oop method, char *why, size_t whylen);
/* The invocations left before tier-up of compiled method m (the word its
 * unchecked entry's countdown decrements), or NULL: no countdown. */
int32_t *jit_compile_tier_counter(const JitMethod *m);

/* Turns inlined body `range` of jm off in place (vm/jit/inline.c): its
 * first instruction, a 5-byte nop, becomes a jump to the code after the
 * range, the generic send, so the guard's hits send as its misses do.
 * false when the code is not what the compiler left there. */
bool jit_inline_disable(JitMethod *jm, uint32_t range);
/* Whether jit_inline_disable turned that body off. */
bool jit_inline_disabled(const JitMethod *jm, uint32_t range);

/* The stub of a block-evaluation primitive (value, value:, ...): jumps to
 * the receiver closure's compiled block when there is one taking nargs
 * arguments, else to rt->block_value_miss. NULL when the zone is full. */
JitMethod *jit_compile_block_value(JitZone *z, const JitCompileRuntime *rt, Oop method);

/* Primitives whose stubs answer in machine code before calling C
 * (vm/jit/prim_fast.c). */
typedef enum JitPrimFast {
    JIT_PRIM_FAST_NONE,
    JIT_PRIM_FAST_STRING_LENGTH, /* String>>length */
    JIT_PRIM_FAST_STRING_EQUAL,  /* String>>= */
    JIT_PRIM_FAST_STRING_SUBSTRING, /* String>>primSubstringFrom:to: */
} JitPrimFast;

/* Which fast path the VM's primitive class_name>>selector (the primitive
 * table's names) has. */
JitPrimFast jit_prim_fast_kind(const char *class_name, bool class_side, const char *selector);

/* A stub for primitive method `method` (primitive `index`): the checked
 * entry, the fast path of kind fast, then a call of rt->primitive and a
 * return. NULL when the zone is full. */
JitMethod *jit_compile_primitive(JitZone *z, const JitCompileRuntime *rt, Oop method, int index, JitPrimFast fast);

#endif
