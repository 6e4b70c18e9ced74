/*
 * vm/interp/sendcache.c — filling and flushing the interpreter's send-site cache
 * (vm/interp/sendcache.h says what an entry means and why it stays valid).
 */
#include "vm/interp/sendcache.h"

#include "gc/heap.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/loader/loader.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <string.h>

VmSendCacheEntry vm_sendcache[VM_SENDCACHE_SIZE];
/* As the lookup cache does (vm/model/lookup.c): a boot flushes at every class
 * load, and the untouched table is zero pages not worth faulting in. */
static bool sendcache_filled;

/* The constant `PUSH_x, RETURN_TOP` answers, or 0 when the first bytecode
 * is no such push. *self is set for PUSH_SELF. */
static Oop pushed_constant(Oop m, const uint8_t *p, bool *self)
{
    *self = false;
    switch (p[0]) {
    case BC_PUSH_SELF: *self = true; return 0;
    case BC_PUSH_NIL: return vm_nil;
    case BC_PUSH_TRUE: return vm_true;
    case BC_PUSH_FALSE: return vm_false;
    case BC_PUSH_0: return oop_from_int(0);
    case BC_PUSH_1: return oop_from_int(1);
    case BC_PUSH_LITERAL: return vm_method_literals(m)[p[1]];
    default: return 0;
    }
}

bool vm_sendcache_accessor_of(Oop m, int nargs, bool *setter, int *field)
{
    const uint8_t *p = vm_method_bytecodes(m);
    size_t len = vm_method_bytecode_length(m);
    if (vm_method_nargs(m) != nargs || obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0)) return false;
    if (len >= 3 && p[0] == BC_PUSH_FIELD && p[2] == BC_RETURN_TOP) {
        *setter = false;
        *field = p[1];
        return true;
    }
    /* `x: a = ( x := a )`: the argument is fp[2] (vm/model/frame.h) */
    if (nargs == 1 && len >= 5 && ((p[0] == BC_PUSH_ARG && p[1] == 2) || (p[0] == BC_PUSH_VAR && p[1] == 0)) &&
        p[2] == BC_POP_FIELD && p[4] == BC_RETURN_SELF) {
        *setter = true;
        *field = p[3];
        return true;
    }
    return false;
}

static void classify(VmSendCacheEntry *e, Oop m, int nargs)
{
    e->kind = SENDCACHE_METHOD;
    e->field = 0;
    e->value = 0;
    if (obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0)) {
        const VmPrimEntry *p = &vm_prim_table[oop_int(obj_slots(m)[METHOD_PRIMITIVE])];
        e->kind = p->special == SP_BLOCK_VALUE ? SENDCACHE_BLOCK_VALUE
                  : p->special == SP_NONE      ? SENDCACHE_PRIM_FN
                                               : SENDCACHE_PRIM;
        if (e->kind == SENDCACHE_PRIM_FN) e->prim_fn = p->fn;
        return;
    }
    /* a wrong argument count is reported by the frame push: leave it to that */
    if (vm_method_nargs(m) != nargs) return;
    intptr_t hdr = vm_method_hdr(m);
    int ntemps = vm_method_ntemps(m);
    e->field = (uint16_t)ntemps;
    e->value = oop_from_int(FRAME_FLAGS_MAKE(nargs, ntemps, false));
    e->frame_words = (uint32_t)(FRAME_HEADER_WORDS + ntemps + vm_method_max_stack(m));
    e->bytecodes = (uint32_t)(VM_MHDR_GET(hdr, SLOTS) * sizeof(Oop));
    const uint8_t *p = vm_method_bytecodes(m);
    size_t len = vm_method_bytecode_length(m);
    if (len >= 1 && p[0] == BC_RETURN_SELF) {
        e->kind = SENDCACHE_CONST;
        e->value = 0;
        return;
    }
    bool setter;
    int field;
    if (vm_sendcache_accessor_of(m, nargs, &setter, &field)) {
        e->kind = setter ? SENDCACHE_SETTER : SENDCACHE_GETTER;
        e->field = (uint16_t)field;
        return;
    }
    if (len >= 2 && vm_bytecode_length[p[0]] <= len - 1 && p[vm_bytecode_length[p[0]]] == BC_RETURN_TOP) {
        bool self;
        Oop k = pushed_constant(m, p, &self);
        /* a young literal (the loader boxes large integer literals in
         * eden) would move in the next scavenge: such a method keeps its frame */
        if ((k && (oop_is_imm(k) || gc_is_old(k))) || self) {
            e->kind = SENDCACHE_CONST;
            e->value = k;
        }
    }
}

void vm_sendcache_fill(VmSendCacheEntry *e, const uint8_t *site, uint32_t class_index, Oop m, int nargs)
{
    VM_ASSERT(gc_is_old(m), "methods are allocated old");
    if (e->site != site) e->misses = 0;
    classify(e, m, nargs);
    e->site = site;
    e->class_index = class_index;
    e->method = m;
    sendcache_filled = true;
}

void vm_sendcache_flush(void)
{
    if (!sendcache_filled) return;
    memset(vm_sendcache, 0, sizeof vm_sendcache);
    sendcache_filled = false;
}
