/*
 * vm/interp/mcode.c — the state the interpreter and machine code share
 * (vm/interp/mcode.h); the JIT runtime fills it in at vm_jit_init.
 */
#include "vm/interp/mcode.h"

bool vm_jit_enabled;
int vm_jit_threshold = VM_JIT_THRESHOLD_DEFAULT;
JitEnter vm_jit_enter;
VmJitPending vm_jit_pending_kind;
Oop vm_jit_pending_oop;
int vm_jit_pending_nargs;
uintptr_t vm_jit_zone_start, vm_jit_zone_end;
const VmJitHooks *vm_jit_hooks;
