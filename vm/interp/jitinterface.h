/*
 * vm/interp/jitinterface.h — the interpreter's one interface to the JIT
 * (vm/jit/): the state it shares with machine code, the enilopmarts it runs
 * machine code through (their C side: JitRegs, JitStatus, jit_cstate; the
 * code is vm/jit/enter.c's), and the three things it asks of the JIT.
 *
 * The interpreter sits below the JIT: the JIT's runtime routines walk and
 * build the interpreter's frames, so the interpreter cannot link the JIT
 * back. It calls it through vm_jit_hooks, which vm_jit_init
 * (vm/jit/runtime.h) sets, and jumps into machine code through vm_jit_enter,
 * which it fills in; with the JIT off (vm_jit_enabled false, an empty zone
 * range) no hook is ever called. No header of vm/jit/ is included here.
 *
 * A heap method's counter slot (vm/model/counter.h) holds its invocation
 * count (>= 0), -1 when the JIT declined it, or -(JitMethod address) once
 * compiled.
 *
 * Who may call: vm/interp/, vm/jit/, vm/boot/.
 */
#ifndef VM_INTERP_JITINTERFACE_H
#define VM_INTERP_JITINTERFACE_H

#include "gc/object.h"
#include "proto/stackabi.h"
#include "vm/model/counter.h"
#include "vm/model/method.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* -- Entering and leaving machine code (drawn in vm/jit/enter.h) ---------------- */

typedef enum JitStatus {
    JIT_STATUS_NONE = 0, /* jit_cstate.exit_status: no exit requested */
    JIT_STATUS_RETURNED, /* machine code returned into the interpreter */
    JIT_STATUS_INTERPRET, /* the interpreter activates a method for machine code */
    JIT_STATUS_RESUME,    /* a runtime routine left the stack for the interpreter */
} JitStatus;

/* The interpreter's registers, in and out of machine code. */
typedef struct JitRegs {
    Oop *sp;    /* Smalltalk sp: the top element (lowest address) */
    Oop *fp;    /* Smalltalk fp */
    Oop result; /* RETURNED: the answer; jit_return_to: what rax gets */
} JitRegs;

_Static_assert(offsetof(JitRegs, sp) == 0, "generated code: JitRegs.sp at 0");
_Static_assert(offsetof(JitRegs, fp) == 8, "generated code: JitRegs.fp at 8");
_Static_assert(offsetof(JitRegs, result) == 16, "generated code: JitRegs.result at 16");

/* The C side while machine code runs; one per VM thread (the VM has one). */
typedef struct JitCState {
    void *c_sp;          /* C rsp below the saved callee-saved registers */
    JitRegs *regs;       /* the enilopmart's argument, written on the way out */
    /* Smalltalk rsp/rbp at the latest runtime call. st_sp is also the
     * profilers' anchor (proto/stackabi.h): the trampoline clears it once
     * the routine has returned, so it is non-zero exactly while C called
     * from machine code runs. */
    Oop *st_sp, *st_fp;
    uint64_t exit_status; /* a JitStatus; NONE except between a request and the exit */
    /* Who owns the thread, for profilers (proto/stackabi.h's state block,
     * PROF_STATE_*): the enilopmarts set MACHINE, the interpreter INTERP
     * once its frame and ip registers are right again. */
    uint64_t mode;
    uint64_t interp_bp; /* the interpreter's C frame pointer */
    /* The interpreter's anchor for profilers: its frame (r14) and bytecode
     * ip (r15) while a primitive it called runs, prim_fp 0 otherwise — the
     * primitive may call code (GMP, libc) that uses r14/r15 and keeps no
     * frame pointer. */
    uint64_t prim_fp, prim_ip;
} JitCState;

_Static_assert(offsetof(JitCState, c_sp) == 0, "generated code: c_sp at 0");
_Static_assert(offsetof(JitCState, regs) == 8, "generated code: regs at 8");
_Static_assert(offsetof(JitCState, st_sp) == 16, "generated code: st_sp at 16");
_Static_assert(offsetof(JitCState, st_fp) == 24, "generated code: st_fp at 24");
_Static_assert(offsetof(JitCState, exit_status) == 32, "generated code: exit_status at 32");
_Static_assert(offsetof(JitCState, mode) == 40, "generated code: mode at 40");
_Static_assert(offsetof(JitCState, c_sp) == PROF_CSTATE_C_SP, "proto/stackabi.h reads c_sp");
_Static_assert(offsetof(JitCState, st_sp) == PROF_CSTATE_ST_SP, "proto/stackabi.h reads st_sp");
_Static_assert(offsetof(JitCState, st_fp) == PROF_CSTATE_ST_FP, "proto/stackabi.h reads st_fp");
_Static_assert(offsetof(JitCState, interp_bp) - offsetof(JitCState, mode) == PROF_STATE_INTERP_BP,
               "proto/stackabi.h's state block is jit_cstate.mode onward");
_Static_assert(offsetof(JitCState, prim_fp) - offsetof(JitCState, mode) == PROF_STATE_PRIM_FP,
               "proto/stackabi.h reads the interpreter's anchor");
_Static_assert(offsetof(JitCState, prim_ip) - offsetof(JitCState, mode) == PROF_STATE_PRIM_IP,
               "proto/stackabi.h reads the interpreter's anchor");

extern JitCState jit_cstate;

/* An enilopmart: regs->sp/fp in, jumps to `target` on the page. */
typedef JitStatus (*JitEnilopmart)(JitRegs *regs, void *target);

typedef struct JitEnter {
    /* Pushes ceReturnToInterpreter as the return address and jumps to
     * `target` (a method entry): the interpreter's send into machine code. */
    JitEnilopmart enter;
    /* Jumps to `target` (a return address into machine code the interpreter
     * popped) with rax = regs->result: an interpreted frame returning into a
     * machine-code one. */
    JitEnilopmart return_to;
    /* The address that marks "return into the interpreter" in fp[1]. */
    uint8_t *return_to_interpreter;
} JitEnter;

/* The header of a piece of machine code (vm/jit/jitmethod.h); the
 * interpreter only reads a compiled method's unchecked entry from it. */
typedef struct JitMethod JitMethod;
#define VM_JIT_METHOD_UNCHECKED_ENTRY 28 /* the u32 offset of the entry from the header; jitmethod.h asserts it */

/* -- Shared state ---------------------------------------------------------------- */

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
    VM_JIT_PENDING_DEOPT,          /* an inlined body deoptimized: activate vm_jit_pending_oop on the receiver
                                    * and args, its temps and operand stack vm_jit_deopt_values, at vm_jit_deopt_bcpc */
} VmJitPending;
extern VmJitPending vm_jit_pending_kind;
extern Oop vm_jit_pending_oop; /* a GC root (vm_jit_visit_roots) */
extern int vm_jit_pending_nargs;
/* VM_JIT_PENDING_DEOPT's frame contents, bottom first: the callee's temps,
 * then its operand stack; GC roots (vm_jit_visit_roots) until placed. An
 * inlined body's temps and stack fit the page's headroom (vm/jit/inline.c). */
#define VM_JIT_DEOPT_MAX_WORDS 32
extern Oop vm_jit_deopt_values[VM_JIT_DEOPT_MAX_WORDS];
extern int vm_jit_deopt_count;
extern size_t vm_jit_deopt_bcpc;
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

/* Where the interpreter enters a compiled method (its arguments pushed). */
static inline uint8_t *vm_jit_unchecked_entry(const JitMethod *m)
{
    uint32_t offset;
    memcpy(&offset, (const uint8_t *)m + VM_JIT_METHOD_UNCHECKED_ENTRY, sizeof offset);
    return (uint8_t *)m + offset;
}

/* -- What the interpreter asks of the JIT ---------------------------------------- */

typedef struct VmJitHooks {
    /* The counter reached the threshold: the new counter value. Compiling
     * may compact the code zone: machine-code addresses the caller holds
     * are stale afterwards, except *live_ra (a return address into machine
     * code, or 0), which is relocated. */
    intptr_t (*compile)(Oop method, Oop *live_ra);
    /* On-stack replacement at the backward jump at jump_bcpc of the
     * interpreter frame fp: where to continue in machine code, or NULL
     * with nothing changed (vm/jit/runtime.h says when). */
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
