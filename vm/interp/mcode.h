/*
 * vm/interp/mcode.h — machine code as the interpreter sees it: the state it
 * shares with JIT'd code and the three things it asks of the JIT runtime.
 *
 * The interpreter sits below the JIT runtime (vm/jitrt/): the runtime's
 * routines walk and build the interpreter's frames, so the interpreter
 * cannot link the runtime back. It calls it through vm_jit_hooks, which
 * vm_jit_init (vm/jitrt/runtime.h) sets; with the JIT off (vm_jit_enabled
 * false, an empty zone range) no hook is ever called.
 *
 * A heap method's counter slot (vm/model/counter.h) holds its invocation
 * count (>= 0), -1 when the JIT declined it, or -(JitMethod address) once
 * compiled.
 *
 * Who may call: vm/interp/, vm/jitrt/, vm/boot/.
 */
#ifndef VM_INTERP_MCODE_H
#define VM_INTERP_MCODE_H

#include "gc/object.h"
#include "jit/enter.h"
#include "jit/jitmethod.h"
#include "vm/model/counter.h"
#include "vm/model/method.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_JIT_THRESHOLD_DEFAULT 2 /* Cog compiles a method the second time it runs */

extern bool vm_jit_enabled;
extern int vm_jit_threshold;
extern JitEnter vm_jit_enter;
/* What machine code handed the interpreter with JIT_STATUS_INTERPRET. */
typedef enum VmJitPending {
    VM_JIT_PENDING_SEND,           /* send vm_jit_pending_oop (a selector), nargs arguments */
    VM_JIT_PENDING_METHOD,         /* activate vm_jit_pending_oop (a method) on the receiver and args */
    VM_JIT_PENDING_UNKNOWN_GLOBAL, /* send #unknownGlobal:; vm_jit_pending_nargs is the name's literal index */
    VM_JIT_PENDING_BYTECODE,       /* interpret the frame from bcpc vm_jit_pending_nargs on */
} VmJitPending;
extern VmJitPending vm_jit_pending_kind;
extern Oop vm_jit_pending_oop; /* a GC root (vm_jit_visit_roots) */
extern int vm_jit_pending_nargs;
/* caller-nargs field value: machine code pushed nothing (a global fetch) */
#define VM_JIT_CALLER_PUSHED_NOTHING 0xff

extern uintptr_t vm_jit_zone_start, vm_jit_zone_end;

/* A frame's saved ip is a return address into machine code (any byte
 * address, odd ones too) or a tagged bcpc: tell them apart by range. */
static inline bool vm_jit_is_code_address(Oop saved)
{
    return saved >= vm_jit_zone_start && saved < vm_jit_zone_end;
}

/* The compiled code of a heap method, or NULL. */
static inline JitMethod *vm_jit_method_of(Oop method)
{
    return vm_counter_code(vm_counter(method));
}

typedef struct VmJitHooks {
    /* The counter reached the threshold: the new counter value. Compiling
     * may compact the code zone: machine-code addresses the caller holds
     * are stale afterwards, except *live_ra (a return address into machine
     * code, or 0), which is relocated. */
    intptr_t (*compile)(Oop method, Oop *live_ra);
    /* On-stack replacement at the backward jump at jump_bcpc of the
     * interpreter frame fp: where to continue in machine code, or NULL
     * with nothing changed (vm/jitrt/runtime.h says when). */
    uint8_t *(*osr_entry)(Oop *fp, size_t jump_bcpc);
    /* A return address into machine code (fp[1] of the callee of `frame`)
     * -> the bcpc where `frame` resumes. */
    intptr_t (*resume_bcpc)(Oop saved, Oop *frame);
} VmJitHooks;
extern const VmJitHooks *vm_jit_hooks;

/* A frame's saved return -> the bcpc where `frame` resumes. */
static inline intptr_t vm_jit_resume_bcpc(Oop saved, Oop *frame)
{
    return vm_jit_is_code_address(saved) ? vm_jit_hooks->resume_bcpc(saved, frame) : oop_int(saved);
}

#endif
