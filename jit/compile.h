/*
 * jit/compile.h — the template compiler: one quickened heap method in, one
 * JitMethod of x86-64 in the code zone out (jit/DESIGN.md, "Integration
 * notes"), or a sentence saying why it declines.
 *
 * The code keeps vm/frame.h's layout with rbp = fp and rsp = sp; the operand
 * stack is the machine stack:
 *
 *   [rbp + 16 + 8*nargs]  receiver (pushed by the caller)
 *   [rbp + 8*k]           argument whose quickened PUSH_ARG operand is k
 *   [rbp + 8]             return address (code zone or ceReturnToInterpreter)
 *   [rbp]                 caller's rbp
 *   [rbp - 8]             heap method, loaded from the JitMethod header
 *   [rbp - 16]            context: nil
 *   [rbp - 24]            flags: FRAME_FLAGS_MAKE(nargs, ntemps, 0) |
 *                         JIT_FRAME_FLAG_MACHINE_CODE, as a SmallInteger
 *   [rbp - 32]            self
 *   [rbp - 40 - 8*t]      temp t, nil on entry
 *   ...                   operand stack, rsp -> top
 *
 * Runtime calls (all through jit/enter.h's trampolines; no Oop lives in a
 * register across one):
 *   send      rdi = selector tag (below), rsi = argument count, rdx = 0.
 *             Receiver and arguments are on the stack just above the return
 *             address (jit_cstate.st_sp[1 + nargs] is the receiver,
 *             st_sp[1] the last argument); the routine answers the result in
 *             rax and machine code drops receiver and arguments itself
 *             (lea rsp, [rsp + 8*(nargs+1)]; push rax).
 *   safepoint no arguments: called at a backward jump when *collect_wanted.
 *   barrier   rdi = the old object a young pointer was just stored into
 *             (its OBJ_GC_REMEMBERED bit was clear): remember it.
 *
 * Selector tags: rdi >= 0 is the index of the selector in the method's
 * literal frame (SEND, SEND_W); JIT_SEND_MUST_BE_BOOLEAN is #mustBeBoolean
 * (nargs 0, the receiver the non-Boolean a conditional jump popped; its
 * answer is tested again by the same jump); jit_send_tag_special(bc) is the
 * generic path of special send bc (BC_SEND_ADD .. BC_SEND_LENGTH), whose
 * selector is vm_special_selector[bc - BC_SEND_ADD].
 *
 * Immediates: nil, true and false are allocated first in old space and never
 * move, so the code embeds them; every other Oop is read through the frame's
 * method slot (literals) or the stack. The literal-site table is empty.
 *
 * Declined (answer NULL, reason in why): block methods, primitives, methods
 * with blocks or outer variables (PUSH_BLOCK*, *_OUTER, RETURN_NONLOCAL),
 * SUPER_SEND*, PUSH_GLOBAL*, unquickened *_VAR, HALT, malformed bytecode, a
 * full zone. No stack-overflow check is emitted: whoever activates a
 * compiled method makes sure the page has room (jit/DESIGN.md: an activation
 * needing a new page runs interpreted in the first increment).
 *
 * Who may call: the VM's JIT glue (when a method's counter trips) and tests.
 */
#ifndef JIT_COMPILE_H
#define JIT_COMPILE_H

#include "gc/object.h"
#include "jit/method.h"
#include "jit/zone.h"
#include "vm/bytecodes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Flags bit of a machine-code frame (jit/DESIGN.md); above ntemps (10..25). */
#define JIT_FRAME_FLAG_MACHINE_CODE ((intptr_t)1 << 26)
_Static_assert(JIT_FRAME_FLAG_MACHINE_CODE > ((intptr_t)0xffff << 10), "above the ntemps field");

#define JIT_SEND_MUST_BE_BOOLEAN ((int64_t)-1)
#define JIT_SEND_SPECIAL_BASE ((int64_t)-2) /* tag of BC_SEND_ADD's generic path; others count down */

static inline int64_t jit_send_tag_special(int bc) { return JIT_SEND_SPECIAL_BASE - (bc - BC_SEND_ADD); }
static inline bool jit_send_tag_is_special(int64_t tag) { return tag <= JIT_SEND_SPECIAL_BASE; }
/* The special-send bytecode a tag stands for (jit_send_tag_is_special). */
static inline int jit_send_tag_bytecode(int64_t tag) { return BC_SEND_ADD + (int)(JIT_SEND_SPECIAL_BASE - tag); }

typedef struct JitCompileRuntime {
    const uint8_t *send;      /* trampoline: fn(tag, nargs, 0) answers the send's result */
    const uint8_t *safepoint; /* trampoline: fn() collects if wanted */
    const uint8_t *barrier;   /* trampoline: fn(object) remembers it */
    const uint8_t *global;    /* trampoline: fn(literal index) answers the global's value */
    const volatile bool *collect_wanted; /* &gc_collect_wanted */
    const uintptr_t *old_start;          /* &gc_old_start: young objects lie below it */
    Oop nil, true_obj, false_obj;        /* never move */
} JitCompileRuntime;

/* Compiles `method` into z: a JIT_KIND_METHOD piece whose entries are its
 * first code byte, with the mcpc -> bcpc map after the code. NULL with the
 * reason in why (a NUL-terminated sentence, truncated to whylen) when the
 * method is declined or the zone is full. */
JitMethod *jit_compile(JitZone *z, const JitCompileRuntime *rt, Oop method, char *why, size_t whylen);

#endif
