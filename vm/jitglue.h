/*
 * vm/jitglue.h — the interpreter's side of the JIT: compiling hot methods,
 * the runtime routines machine code calls, mapping return addresses back
 * to bytecode pcs (jit/DESIGN.md, "Integration notes").
 *
 * A heap method's counter slot holds its invocation count (>= 0), -1 when
 * the JIT declined it, or -(JitMethod address) once compiled.
 *
 * Who may call: vm/interp.c, vm/stack.c, vm/boot.c.
 */
#ifndef VM_JITGLUE_H
#define VM_JITGLUE_H

#include "gc/heap.h"
#include "jit/enter.h"
#include "jit/method.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_JIT_THRESHOLD_DEFAULT 2 /* Cog compiles a method the second time it runs */

/* Flags word bits beyond vm/frame.h's 0..25 (the JIT marks its frames with
 * bit 26):
 *   27..34  pending: an interpreter frame that entered machine code keeps
 *           the argument count of that send …
 *   43..61  … and its resume bcpc
 *   35..42  caller nargs: a frame activated by the interpreter for machine
 *           code keeps how many arguments its machine-code caller pushed
 *           (different when the send was rewritten: DNU, perform:) */
#define VM_JIT_FLAG_PENDING_SHIFT 27
#define VM_JIT_FLAG_CALLER_SHIFT 35
#define VM_JIT_FLAG_BCPC_SHIFT 43
#define VM_JIT_FLAG_PENDING_MASK (((intptr_t)0xff << VM_JIT_FLAG_PENDING_SHIFT) | ((intptr_t)0x7ffff << VM_JIT_FLAG_BCPC_SHIFT))

extern bool vm_jit_enabled;
extern int vm_jit_threshold;
extern JitEnter vm_jit_enter;
extern int64_t vm_jit_pending_tag; /* the send machine code handed over */
/* pending tag of an unknown global: vm_jit_pending_nargs is its literal index */
#define VM_JIT_PENDING_UNKNOWN_GLOBAL ((int64_t)-1000)
/* caller-nargs field value: machine code pushed nothing (a global fetch) */
#define VM_JIT_CALLER_PUSHED_NOTHING 0xff
extern int vm_jit_pending_nargs;

extern uintptr_t vm_jit_zone_start, vm_jit_zone_end;

/* A frame's saved ip is a return address into machine code (any byte
 * address, odd ones too) or a tagged bcpc: tell them apart by range. */
static inline bool vm_jit_is_code_address(Oop saved)
{
    return saved >= vm_jit_zone_start && saved < vm_jit_zone_end;
}

bool vm_jit_init(size_t code_bytes, char *err, size_t errlen);

/* Called when the counter reaches the threshold: the new counter value. */
intptr_t vm_jit_compile(Oop method);

/* A frame's saved return (fp[1] of its callee) -> the bcpc where the frame
 * resumes. `frame` is that caller frame (its flags hold the bcpc when it
 * entered machine code). */
intptr_t vm_jit_resume_bcpc(Oop saved, Oop *frame);

void vm_jit_visit_roots(GcVisitFn visit, void *ctx);

#endif
