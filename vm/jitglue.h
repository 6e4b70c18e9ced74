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
#include "jit/compile.h"
#include "jit/enter.h"
#include "jit/jitmethod.h"
#include "vm/method.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VM_JIT_THRESHOLD_DEFAULT 2 /* Cog compiles a method the second time it runs */

/* The frame flags fields the JIT glue uses (pending, caller nargs, bcpc)
 * are vm/frame.h's. */

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
extern Oop vm_jit_pending_oop; /* a GC root */
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

/* What the runtime did, for --code-zone-stats (the zone counts the rest). */
typedef struct VmJitStats {
    uint64_t compiled, declined, stubs;   /* methods compiled, declined; primitive stubs */
    uint64_t links;                       /* unlinked -> monomorphic */
    uint64_t pics_closed, pics_open;      /* PICs made */
    uint64_t megamorphic_links;           /* sites sent to an open PIC */
    uint64_t unlinked_by_compaction;      /* sites whose callee was freed */
    uint64_t young_referrers_added;       /* methods that cached a young global */
    uint64_t osr_entries;                 /* interpreter frames continued in machine code */
} VmJitStats;
extern VmJitStats vm_jit_stats;
extern bool vm_jit_verify; /* --jit-verify */

bool vm_jit_init(size_t code_bytes, char *err, size_t errlen);
struct JitCompileRuntime;
JitZone *vm_jit_zone(void);
const struct JitCompileRuntime *vm_jit_runtime(void);

/* The name of a trampoline or of a VM variable machine code embeds; NULL
 * for anything else. */
const char *vm_jit_trampoline_name(const void *addr);
/* m's compiled code (a primitive method's stub), compiling it now. NULL
 * with the reason in why when the JIT declines it. */
JitMethod *vm_jit_compile_now(Oop m, char *why, size_t whylen);
/* --disassemble (vm/jitdisasm.c): spec is 'Class>>selector' or
 * 'Class class>>selector'. */
bool vm_jit_disassemble(const char *spec, FILE *out, char *err, size_t errlen);

/* --jit-verify (vm/jitverify.c): decode and check, vm_panic on a bad one. */
void vm_jit_verify_site(const uint8_t *ra, const char *when);
void vm_jit_verify_method(const JitMethod *m, const char *when);
void vm_jit_verify_zone(const char *when);
/* --code-zone-stats (vm/jitverify.c): reference 002's Tables 1 and 2. */
void vm_jit_print_zone_stats(FILE *out);

/* Called when the counter reaches the threshold: the new counter value.
 * Compiling may compact the code zone: machine-code addresses the caller
 * holds are stale afterwards, except *live_ra (a return address into
 * machine code, or 0), which is relocated. */
intptr_t vm_jit_compile(Oop method, Oop *live_ra);

/* On-stack replacement: the interpreter frame fp of a compiled method is
 * at the backward jump at jump_bcpc. When machine code can take the frame
 * over, makes it a machine-code frame (its return goes to the caller as
 * machine code's would) and answers where to continue: the compiled
 * backward jump. NULL, with nothing changed, when it cannot: the frame is
 * the first on its page, or its machine-code caller pushed a different
 * argument count (a rewritten send). */
uint8_t *vm_jit_osr_entry(Oop *fp, size_t jump_bcpc);

/* The compiled code of a heap method, or NULL. */
static inline JitMethod *vm_jit_method_of(Oop method)
{
    intptr_t cv = oop_int(obj_slots(method)[METHOD_COUNTER]);
    return cv <= -2 ? (JitMethod *)(-cv) : NULL;
}

/* A frame's saved return (fp[1] of its callee) -> the bcpc where the frame
 * resumes. `frame` is that caller frame (its flags hold the bcpc when it
 * entered machine code). */
intptr_t vm_jit_resume_bcpc(Oop saved, Oop *frame);

void vm_jit_visit_roots(GcVisitFn visit, void *ctx);
/* The GC's client hooks: a scavenge visits only the young referrers'
 * literals, and the list forgets methods whose literals all grew old. */
void vm_jit_before_collect(bool full);
void vm_jit_after_collect(bool full);

#endif
