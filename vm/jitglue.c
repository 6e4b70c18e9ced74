/*
 * vm/jitglue.c — compiling hot methods and the runtime routines machine
 * code calls through jit/enter's trampolines.
 */
#include "vm/jitglue.h"

#include "jit/compile.h"
#include "jit/map.h"
#include "jit/zone.h"
#include "vm/bytecodes.h"
#include "vm/class.h"
#include "vm/globals.h"
#include "vm/loader.h"
#include "vm/primitive.h"
#include "vm/stack.h"
#include "vm/frame.h"
#include "vm/interp.h"
#include "vm/method.h"
#include "vm/universe.h"
#include "vm/vm.h"

#include <stdio.h>

bool vm_jit_enabled;
int vm_jit_threshold = VM_JIT_THRESHOLD_DEFAULT;
JitEnter vm_jit_enter;
int64_t vm_jit_pending_tag;
int vm_jit_pending_nargs;

uintptr_t vm_jit_zone_start, vm_jit_zone_end;
#define JIT_MAX_PRIM_ARGS 8 /* sends to primitives with more arguments take the interpreter's path */
static JitZone zone;
static JitCompileRuntime runtime;

/* A primitive's answer on its way back to machine code: the dispatch
 * trampoline jumps to prim_return, which loads it and returns to the
 * caller (whose return address is on top of the stack). */
static Oop prim_answer;
static uint8_t *prim_return;
/* The special sends' selectors (GC roots: symbols move in a full GC). */
#define N_SPECIAL (BC_SEND_LENGTH - BC_SEND_ADD + 1)
static Oop special_selectors[N_SPECIAL];
static const int special_nargs[N_SPECIAL] = {BC_SPECIAL_NARGS};

/* -- Runtime routines (run on the C stack) ---------------------------------- */

static uint64_t rt_send(int64_t tag, int64_t nargs, int64_t unused)
{
    (void)unused;
    vm_jit_pending_tag = tag;
    vm_jit_pending_nargs = (int)nargs;
    jit_enter_request_exit(JIT_STATUS_INTERPRET);
    return 0;
}

/* A send from machine code: straight into a compiled callee when there is
 * one and its frame fits this page, else the interpreter performs it. */
static uint64_t rt_send_dispatch(int64_t tag, int64_t nargs, int64_t unused)
{
    Oop *sp = jit_cstate.st_sp; /* [0] return address, [1] last arg, [nargs+1] receiver */
    Oop *fp = jit_cstate.st_fp;
    Oop sel = 0;
    if (tag >= 0)
        sel = vm_method_literals(fp[FRAME_METHOD])[tag];
    else if (jit_send_tag_is_special(tag) && special_nargs[jit_send_tag_bytecode(tag) - BC_SEND_ADD] == nargs)
        sel = special_selectors[jit_send_tag_bytecode(tag) - BC_SEND_ADD];
    if (sel && !gc_collect_wanted) {
        Oop rcvr = sp[1 + nargs];
        Oop m = vm_lookup_cached(vm_class_index_of(rcvr), sel);
        intptr_t p = m ? oop_int(obj_slots(m)[METHOD_PRIMITIVE]) : 0;
        if (p > 1 && vm_prim_table[p].special == SP_NONE) {
            /* a plain primitive: run it here; a failure (which has no side
             * effects) is left to the interpreter, which reports it */
            Oop args[JIT_MAX_PRIM_ARGS + 1];
            if (nargs <= JIT_MAX_PRIM_ARGS) {
                for (int i = 0; i <= nargs; i++) args[i] = sp[1 + nargs - i];
                if (((VmPrimFn)vm_prim_table[p].fn)(args, &prim_answer)) return (uint64_t)(uintptr_t)prim_return;
            }
        } else if (m && p == 0 && vm_method_nargs(m) == nargs) {
            intptr_t cv = oop_int(obj_slots(m)[METHOD_COUNTER]);
            if (cv >= 0) {
                if (++cv >= vm_jit_threshold) cv = vm_jit_compile(m);
                obj_slots(m)[METHOD_COUNTER] = oop_from_int(cv);
            }
            int need = FRAME_HEADER_WORDS + vm_method_ntemps(m) + vm_method_max_stack(m) + 1;
            if (cv <= -2 && sp - need >= vm_page->base + VM_STACK_HEADROOM_WORDS)
                return (uint64_t)(uintptr_t)jit_method_checked_entry((JitMethod *)(-cv));
        }
    }
    return rt_send(tag, nargs, unused);
}

static uint64_t rt_global(int64_t literal)
{
    Oop sym = vm_method_literals(jit_cstate.st_fp[FRAME_METHOD])[literal];
    Oop v = vm_global_get(sym);
    if (!v) {
        char name[512];
        v = vm_load_class(vm_string_cstr(sym, name, sizeof name));
    }
    if (v) return v;
    vm_jit_pending_tag = VM_JIT_PENDING_UNKNOWN_GLOBAL;
    vm_jit_pending_nargs = (int)literal;
    jit_enter_request_exit(JIT_STATUS_INTERPRET);
    return 0;
}

static uint64_t rt_safepoint(void)
{
    vm_counters->interrupt_checks++;
    /* st_sp points at the return address into the method: not an Oop */
    vm_interp_set_saved_frame(jit_cstate.st_sp + 1, jit_cstate.st_fp);
    gc_collect(false);
    return 0;
}

static uint64_t rt_barrier(Oop obj)
{
    if (!(obj_header(obj) & OBJ_GC_REMEMBERED)) gc_remember(obj);
    return 0;
}

bool vm_jit_init(size_t code_bytes, char *err, size_t errlen)
{
    JitZoneConfig cfg = {
        .zone_bytes = code_bytes,
        .trampoline_bytes = 4096, /* enilopmarts + three trampolines need < 1 KiB */
        .near = (const void *)vm_jit_init,
    };
    if (!jit_zone_init(&zone, &cfg, err, errlen)) return false;
    if (!jit_enter_init(&vm_jit_enter, &zone, err, errlen)) return false;
    vm_jit_zone_start = (uintptr_t)jit_zone_base(&zone);
    vm_jit_zone_end = (uintptr_t)jit_zone_end(&zone);
    runtime.send = jit_enter_dispatch_trampoline(&zone, (const void *)rt_send_dispatch, 3);
    prim_return = jit_enter_answer_trampoline(&zone, &prim_answer);
    if (!prim_return) {
        snprintf(err, errlen, "the code zone's trampoline area is too small");
        return false;
    }
    static const char *const names[N_SPECIAL] = {BC_SPECIAL_SELECTORS};
    for (int i = 0; i < N_SPECIAL; i++) special_selectors[i] = vm_symbol_from_cstr(names[i]);
    runtime.safepoint = jit_enter_runtime_trampoline(&zone, (const void *)rt_safepoint, 0);
    runtime.barrier = jit_enter_runtime_trampoline(&zone, (const void *)rt_barrier, 1);
    runtime.global = jit_enter_runtime_trampoline(&zone, (const void *)rt_global, 1);
    if (!runtime.send || !runtime.safepoint || !runtime.barrier || !runtime.global) {
        snprintf(err, errlen, "the code zone's trampoline area is too small");
        return false;
    }
    runtime.collect_wanted = &gc_collect_wanted;
    runtime.old_start = &gc_old_start;
    runtime.nil = vm_nil;
    runtime.true_obj = vm_true;
    runtime.false_obj = vm_false;
    vm_jit_enabled = true;
    return true;
}

intptr_t vm_jit_compile(Oop method)
{
    char why[256];
    JitMethod *jm = jit_compile(&zone, &runtime, method, why, sizeof why);
    if (!jm) return -1;
    return -(intptr_t)jm;
}

intptr_t vm_jit_resume_bcpc(Oop saved, Oop *frame)
{
    if (!vm_jit_is_code_address(saved)) return oop_int(saved);
    if ((uint8_t *)saved == vm_jit_enter.return_to_interpreter)
        return (oop_int(frame[FRAME_FLAGS]) >> VM_JIT_FLAG_BCPC_SHIFT) & 0x7ffff;
    JitMethod *jm = jit_zone_find(&zone, (void *)saved);
    VM_ASSERT(jm != NULL);
    JitMapEntry e;
    bool found = jit_map_bcpc_at(jit_method_map(jm), (uint32_t)((uint8_t *)saved - (uint8_t *)jm), &e);
    VM_ASSERT(found);
    /* the map names the send; the frame resumes after it */
    const uint8_t *code = vm_method_bytecodes(jm->method);
    return (intptr_t)e.bcpc + vm_bytecode_length[code[e.bcpc]];
}

void vm_jit_visit_roots(GcVisitFn visit, void *ctx)
{
    if (!vm_jit_enabled) return;
    for (int i = 0; i < N_SPECIAL; i++) visit(&special_selectors[i], ctx);
    for (JitMethod *m = jit_zone_first(&zone); m; m = jit_zone_next(&zone, m))
        if (m->kind == JIT_KIND_METHOD) visit(&m->method, ctx);
}
