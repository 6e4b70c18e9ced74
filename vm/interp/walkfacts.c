/*
 * vm/interp/walkfacts.c — the walk facts (vm/interp/walkfacts.h), each pinned to the
 * layout it describes so a change of frame.h or method.h cannot leave the
 * profilers reading the wrong words.
 */
#include "vm/interp/walkfacts.h"

#include "vm/interp/interp.h"
#include "vm/interp/jitinterface.h"
#include "vm/interp/stack.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"

#include <string.h>

_Static_assert(FRAME_SAVED_FP == 0 && FRAME_SAVED_IP == 1, "stackabi.h: caller fp at [fp], saved ip at [fp+8]");
_Static_assert(FRAME_METHOD == -1, "stackabi.h: the frame's method at [fp-8]");
_Static_assert(FRAME_FLAGS == -3, "walkfacts: frame_flags_offset is 24");
_Static_assert(METHOD_HEADER == 0, "stackabi.h: a method's header value in its first slot, at +8");

void vm_walk_facts(ProfWalkFacts *f)
{
    memset(f, 0, sizeof *f);
    f->size = sizeof *f;
    /* vm/jit/enter.c clears st_sp after each runtime call, interp.c keeps prim_fp/prim_ip */
    f->flags = PROF_WALK_F_ANCHORS;
    f->state_addr = (uint64_t)(uintptr_t)&jit_cstate.mode;
    f->interp_start = vm_interp_code_start();
    f->interp_end = vm_interp_code_end();
    if (vm_jit_enabled) {
        f->cstate_addr = (uint64_t)(uintptr_t)&jit_cstate;
        f->zone_start = (uint64_t)(uintptr_t)vm_jit_zone_start;
        f->zone_end = (uint64_t)(uintptr_t)vm_jit_zone_end;
        f->return_to_interpreter = (uint64_t)(uintptr_t)vm_jit_enter.return_to_interpreter;
    }
    int n;
    const StackPage *pages = vm_stack_pages(&n);
    f->stack_base = (uint64_t)(uintptr_t)pages[0].base;
    f->page_bytes = VM_STACK_PAGE_BYTES;
    f->npages = (uint64_t)n;
    f->pages_addr = (uint64_t)(uintptr_t)pages;
    f->page_stride = sizeof(StackPage);
    f->page_caller_fp = offsetof(StackPage, caller_fp);
    f->page_caller_context = offsetof(StackPage, caller_context);
    f->frame_flags_offset = 8 * (uint32_t)-FRAME_FLAGS;
    f->flags_bcpc_shift = VM_FRAME_BCPC_POS;
    f->flags_bcpc_mask = (uint32_t)VM_FRAME_MAX(BCPC);
    f->nil = (uint64_t)vm_nil;
    f->ctx_sender_slot = CTX_SENDER;
    f->ctx_pc_slot = CTX_PC;
    f->ctx_method_slot = CTX_METHOD;
    f->method_class_index = CLASS_INDEX_METHOD;
    f->class_index_mask = (uint32_t)OBJ_CLASS_MASK;
    f->method_slots_mask = (uint32_t)VM_MHDR_MAX(SLOTS);
    f->fp_reg = VM_INTERP_FP_PERF_REG;
    f->ip_reg = VM_INTERP_IP_PERF_REG;
}
