/*
 * vm/interp/jitinterface.c — the state the interpreter and machine code share
 * (vm/interp/jitinterface.h); the JIT fills it in at vm_jit_init.
 */
#include "vm/interp/jitinterface.h"

JitCState jit_cstate;
bool vm_jit_enabled;
int vm_jit_threshold = VM_JIT_THRESHOLD_DEFAULT;
JitEnter vm_jit_enter;
VmJitPending vm_jit_pending_kind;
Oop vm_jit_pending_oop;
int vm_jit_pending_nargs;
uintptr_t vm_jit_zone_start, vm_jit_zone_end;
const VmJitHooks *vm_jit_hooks;
Oop vm_jit_deopt_values[VM_JIT_DEOPT_MAX_WORDS];
int vm_jit_deopt_count;
size_t vm_jit_deopt_bcpc;
