/*
 * vm/model/frame.h — stack frames, stack pages and contexts (context-to-stack
 * mapping, as in Cog; reference 002 §3).
 *
 * Frames live on a small number of fixed-size stack pages and grow down,
 * laid out as machine code will want them (Oop *fp, word offsets):
 *
 *   fp[2+nargs]      receiver slot pushed by the caller (a closure for blocks)
 *   fp[1+nargs-i]    argument i (0-based)
 *   fp[1]            caller's bytecode pc (SmallInteger) to resume at
 *   fp[0]            caller's fp (raw), or NULL for the first frame on a page
 *   fp[-1]           method
 *   fp[-2]           context (nil, or the Context this frame is married to)
 *   fp[-3]           flags (SmallInteger: vm/model/frameflags.h)
 *   fp[-4]           self (the home receiver, also in block frames)
 *   fp[-5-j]         temp j
 *   …                operand stack, sp -> top element (lowest address)
 *
 * Every slot except fp[0] holds an Oop or a SmallInteger, so the GC scans a
 * page from sp to its top skipping only the saved-fp words.
 *
 * Contexts are heap objects reified only when needed: when a frame creates
 * a block (the frame is "married" to its context, which reads through to the
 * frame while it lives), and when all pages are in use and the oldest page
 * is "divorced": each of its frames becomes a Context so the page can be
 * reused. Returning into a divorced context copies it back onto a page.
 *
 *   Context slots
 *    0 frame     married frame's fp (tagged: fp|1), or nil
 *    1 sender    Context (divorced contexts only) or nil
 *    2 pc        SmallInteger bcpc of a suspended divorced context; nil when
 *                married or dead (returned) — a context is alive iff it is
 *                married or has a pc
 *    3 depth     SmallInteger operand stack depth (divorced)
 *    4 method
 *    5 closure   the frame's receiver slot (closure for block frames)
 *    6 receiver  self
 *    7..         args, temps, operand stack
 */
#ifndef VM_FRAME_H
#define VM_FRAME_H

#include "gc/object.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/model/frameflags.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    FRAME_SAVED_IP = 1,
    FRAME_SAVED_FP = 0,
    FRAME_METHOD = -1,
    FRAME_CONTEXT = -2,
    FRAME_FLAGS = -3,
    FRAME_RECEIVER = -4,
    FRAME_FIRST_TEMP = -5,
    FRAME_HEADER_WORDS = 6, /* fp[1] … fp[-4] */
};

_Static_assert(VM_COMPILE_MAX_VARS <= VM_FRAME_MAX(NTEMPS), "ntemps fits its flags field");

static inline intptr_t frame_flags(Oop *fp) { return oop_int(fp[FRAME_FLAGS]); }
static inline int frame_nargs(Oop *fp) { return (int)VM_FRAME_GET(frame_flags(fp), NARGS); }
static inline int frame_ntemps(Oop *fp) { return (int)VM_FRAME_GET(frame_flags(fp), NTEMPS); }
static inline bool frame_has_context(Oop *fp) { return (frame_flags(fp) & FRAME_FLAG_CONTEXT) != 0; }
static inline Oop *frame_receiver_slot(Oop *fp) { return fp + 2 + frame_nargs(fp); }
/* Variable v: args first, then temps. */
static inline Oop *frame_var(Oop *fp, int nargs, int v)
{
    return v < nargs ? fp + 1 + nargs - v : fp + FRAME_FIRST_TEMP - (v - nargs);
}
/* Lowest address of this frame's own slots (its last temp). */
static inline Oop *frame_stack_base(Oop *fp) { return fp + FRAME_FIRST_TEMP + 1 - frame_ntemps(fp); }

enum {
    CTX_FRAME = 0,
    CTX_SENDER = 1,
    CTX_PC = 2,
    CTX_DEPTH = 3,
    CTX_METHOD = 4,
    CTX_CLOSURE = 5,
    CTX_RECEIVER = 6,
    CTX_FIRST_VAR = 7,
};

/* Block closures: Block1/2/3 by argument count + 1. */
enum {
    BLOCK_OUTER_CONTEXT = 0,
    BLOCK_METHOD = 1,
    BLOCK_RECEIVER = 2,
    BLOCK_SLOTS = 3,
};

static inline Oop ctx_tag_frame(Oop *fp) { return (Oop)fp | 1; }
static inline Oop *ctx_frame(Oop ctx) { Oop f = obj_slots(ctx)[CTX_FRAME]; return oop_is_int(f) ? (Oop *)(f & ~(Oop)1) : NULL; }

/* -- Stack pages ---------------------------------------------------------- */

#define VM_STACK_PAGE_BYTES (64 << 10) /* 8192 words: Cog's pages are smaller (~4 KiB) but
                                          our frames are interpreted and wider; 64 KiB keeps
                                          page overflows rare in recursive benchmarks */
#define VM_STACK_PAGES_DEFAULT 64
#define VM_STACK_PAGES_SMALL 3 /* --small: constant overflows and divorces */
#define VM_STACK_PAGES_MIN 2
#define VM_STACK_HEADROOM_WORDS 16
/* --max-stack-depth's default, in frames. The deepest benchmark of
 * smalltalk/bench (Havlak, Towers, DeltaBlue, Json… all of them) never fills
 * one 64 KiB page, i.e. stays under ~1,000 frames; tests/lang/gc/DeepRecursion
 * recurses 100,000 deep. At 200,000 frames a runaway recursion has made at
 * most ~30 MB of contexts (~100 bytes each for a one-argument method, up to
 * ~330 for a wide one) and stops in a fraction of a second. */
#define VM_MAX_STACK_DEPTH_DEFAULT 200000

typedef struct StackPage {
    Oop *base;          /* lowest address of the page */
    Oop *top;           /* one past the highest word */
    Oop *bottom_fp;     /* first frame pushed on this page (its fp[0] is NULL) */
    Oop *caller_fp;     /* frame on the previous page that bottom_fp returns to, or NULL */
    Oop *caller_sp;     /* that frame's sp once the callee's receiver and args are popped */
    Oop caller_context; /* when the previous page was divorced: Context to resume; else 0 */
    struct StackPage *older, *newer;
    bool in_use;
    size_t depth_below; /* frames older than bottom_fp, on older pages and in contexts
                           (the depth limit, --max-stack-depth: vm/interp/stack.h) */
} StackPage;

#endif
