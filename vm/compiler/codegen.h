/*
 * vm/compiler/codegen.h — what the bytecode vm/compiler/codegen.c emits looks like.
 *
 * vm/compiler/codegen.c implements vm_compile_class() (declared in vm/compiler/classdesc.h): it
 * parses with vm/compiler/parser.c, resolves names and emits bytecodes per method and
 * block. This header holds no declarations beyond compile.h's; it records the
 * conventions the interpreter and the JIT may rely on.
 *
 * Frames
 *   - Every method and every real (non-inlined) block is a MethodDesc with its
 *     own literals. A block is a LIT_BLOCK literal of the enclosing method or
 *     block and is pushed with PUSH_BLOCK[_W].
 *   - Variables: args 0..nargs-1, then temps. The temps of inlined blocks and
 *     the hidden loop temps ("$limit", "$step", "$counter") live in the
 *     enclosing frame.
 *     Slots of inlined blocks are reused by later sibling inlined blocks unless
 *     a real block captured one of them; a reused slot, or any inlined temp
 *     inside an inlined loop, is reset with PUSH_NIL POP_VAR on entry, so
 *     every temp reads nil before its first assignment, as SOM requires.
 *   - PUSH_OUTER/STORE_OUTER/POP_OUTER level counts real blocks only
 *     (1 = the frame of the lexically enclosing real block or method).
 *   - Arguments are assignable, as in SOM (its TestSuite's CompilerReturnTest
 *     assigns one); self, super, nil, true, false and globals are not.
 *   - Fields (PUSH_FIELD …) are addressed from any block: every frame holds
 *     the home method's receiver as self. `super` used as a value is PUSH_SELF.
 *
 * Returns
 *   - A method ends with RETURN_SELF unless its last statement is `^ expr`.
 *     `^ self` in a method (also inside blocks inlined into it) is RETURN_SELF;
 *     any other `^` there is RETURN_TOP.
 *   - `^` inside a real block (also inside blocks inlined into it) is
 *     RETURN_NONLOCAL (return from the home method's frame, or escapedBlock:).
 *   - A real block ends with RETURN_TOP of its last expression's value
 *     (PUSH_NIL first when the block is empty). Its last bytecode is always
 *     RETURN_TOP, also when a `^` precedes it (then it is unreachable; the
 *     interpreter resumes there after escapedBlock:). Code after a return
 *     inside an inlined branch may follow and is unreachable too.
 *
 * Sends
 *   - The special selectors (BC_SPECIAL_SELECTORS) use their 1-byte bytecodes,
 *     never for super.
 *   - SEND/SUPER_SEND operand: selector Symbol literal index, then nargs; the
 *     _W forms are used when the literal index exceeds 255 (also for
 *     PUSH_LITERAL, PUSH_GLOBAL and PUSH_BLOCK).
 *
 * Inlining (only when the relevant arguments are literal blocks with the
 * number of parameters shown; anything else is an ordinary send). The
 * receiver of JUMP_IF_TRUE/FALSE may be a non-Boolean at run time — the
 * interpreter decides how to report that; JUMP_IF_NIL/NOT_NIL test for nil
 * only.
 *   ifTrue: ifFalse: ifTrue:ifFalse: ifFalse:ifTrue:  [0]   missing branch: nil
 *   and: or:                                           [0]   short circuit
 *   ifNil: ifNotNil: ifNil:ifNotNil: ifNotNil:ifNil:   [0], ifNotNil: [0|1]
 *       ifNil: answers the receiver when it is not nil; ifNotNil: answers nil
 *       when it is nil; a one-parameter ifNotNil: block gets the receiver.
 *   whileTrue: whileFalse:                             [0] receiver and arg; nil
 *   to:do: to:by:do: downTo:do: downTo:by:do:          [1] last arg; answers
 *       the receiver. Receiver, limit, step are evaluated once, in that order
 *       (a literal, or an argument of the current frame that the method never
 *       assigns, is used directly). The loop variable is the block
 *       parameter's slot (if the method assigns that name, a hidden
 *       "$counter" is copied into it each iteration), compared with SEND_LE
 *       (SEND_GE for downTo:, or for a literal negative by: step; the reverse
 *       for downTo:by: with a negative literal step) and advanced with
 *       SEND_ADD (SEND_SUB for downTo:), so Doubles and large integers work.
 *   Loop back edges are JUMP_BACK; everything else jumps forward.
 *
 * Line table: one LineEntry per run of bytecodes from the same source line;
 * a send's line is that of its (first) selector token, a jump's that of the
 * inlined selector, RETURN_SELF at a method's end that of its closing ')'.
 *
 * Who may call: nobody; include vm/compiler/classdesc.h.
 */
#ifndef VM_CODEGEN_H
#define VM_CODEGEN_H

#include "vm/compiler/classdesc.h"

#endif
