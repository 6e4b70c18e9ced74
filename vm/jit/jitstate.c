/*
 * vm/jit/jitstate.c — the VM's one JIT (vm/jit/jitstate.h): its state, which
 * vm_jit_init fills in, and the names of the addresses machine code calls.
 */
#include "vm/jit/jitstate.h"

#include "gc/heap.h"
#include "vm/interp/jitinterface.h"
#include "vm/interp/stack.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/globals.h"

#include <stddef.h>

bool vm_jit_verify;
int vm_jit_deopt_every;
VmJitStats vm_jit_stats;
JitZone vm_jit_code_zone;
JitCompileRuntime vm_jit_compile_runtime;
JitPicRuntime vm_jit_pic_runtime;
uint8_t *vm_jit_prim_return;

JitZone *vm_jit_zone(void) { return &vm_jit_code_zone; }
const JitCompileRuntime *vm_jit_runtime(void) { return &vm_jit_compile_runtime; }

const char *vm_jit_trampoline_name(const void *addr)
{
    const struct {
        const void *addr;
        const char *name;
    } known[] = {
        { vm_jit_compile_runtime.send, "ceSend" },
        { vm_jit_compile_runtime.method_abort, "ceMethodAbort" },
        { vm_jit_compile_runtime.entry_slow, "ceStackOverflow" }, /* Cog's name: also its interrupt check */
        { vm_jit_compile_runtime.primitive, "cePrimitive" },
        { vm_jit_compile_runtime.safepoint, "ceCheckForInterrupts" },
        { vm_jit_compile_runtime.barrier, "ceStoreCheck" },
        { vm_jit_compile_runtime.global, "ceGlobal" },
        { vm_jit_compile_runtime.push_block, "ceClosure" },
        { vm_jit_compile_runtime.outer_get, "ceOuterGet" },
        { vm_jit_compile_runtime.outer_set, "ceOuterSet" },
        { vm_jit_compile_runtime.widow, "ceWidowContext" },
        { vm_jit_compile_runtime.interpret, "ceInterpretHere" },
        { vm_jit_compile_runtime.super_send, "ceSuperSend" },
        { vm_jit_compile_runtime.block_value_miss, "ceBlockValueMiss" },
        { vm_jit_compile_runtime.deopt, "ceDeopt" },
        { vm_jit_pic_runtime.closed_miss, "ceClosedPICMiss" },
        { vm_jit_pic_runtime.open_miss, "ceOpenPICMiss" },
        { vm_jit_prim_return, "cePrimitiveAnswer" },
        { vm_jit_enter.return_to_interpreter, "ceReturnToInterpreter" },
        { (const void *)vm_jit_enter.enter, "enilopmart: enter" },
        { (const void *)vm_jit_enter.return_to, "enilopmart: return to" },
        { (const void *)&gc_collect_wanted, "&gc_collect_wanted" },
        { (const void *)&gc_old_start, "&gc_old_start" },
        { (const void *)&vm_page, "&vm_page" },
        { (const void *)&vm_globals_epoch, "&vm_globals_epoch" },
        { (const void *)&gc_eden_top, "&gc_eden_top" },
        { (const void *)&gc_eden_soft_limit, "&gc_eden_soft_limit" },
        { (const void *)&gc_stats.bytes_allocated, "&gc_stats.bytes_allocated" },
        { (const void *)vm_lookup_cache, "vm_lookup_cache" },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].addr && known[i].addr == addr) return known[i].name;
    return NULL;
}
