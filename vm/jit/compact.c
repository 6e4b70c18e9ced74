/*
 * vm/jit/compact.c — making room in a full code zone: the pieces with an
 * activation stay, the least recently used quarter of the rest is freed
 * (vm/jit/zone.c), the survivors slide down with their branches rewritten
 * (vm/jit/relocate.c), heap methods and return addresses follow them.
 */
#include "vm/jit/compact.h"

#include "vm/jit/relocate.h"
#include "vm/jit/verify.h"
#include "vm/jit/zone.h"
#include "vm/interp/interp.h"
#include "vm/interp/jitinterface.h"
#include "vm/interp/probes.h"
#include "vm/interp/stack.h"
#include "vm/jit/jitpublish.h"
#include "vm/jit/jitstate.h"
#include "vm/model/counter.h"
#include "vm/model/vm.h"

/* The return address the caller of vm_jit_compact holds outside the stack pages. */
static Oop *live_ra;

static void for_each_return_address(void (*fn)(Oop *slot, void *ctx), void *ctx)
{
    vm_stack_visit_saved_ips(vm_interp_saved_fp(), fn, ctx);
    if (live_ra && vm_jit_is_code_address(*live_ra)) fn(live_ra, ctx);
}

static void mark_on_stack(Oop *slot, void *ctx)
{
    (void)ctx;
    if (!vm_jit_is_code_address(*slot)) return;
    JitMethod *m = jit_zone_find(vm_jit_zone(), (void *)*slot);
    if (m) m->flags |= JIT_METHOD_F_ON_STACK;
}

static bool can_free(const JitMethod *m, void *ctx)
{
    (void)ctx;
    return !(m->flags & JIT_METHOD_F_ON_STACK);
}

static void on_free(JitMethod *m, void *ctx)
{
    (void)ctx;
    vm_jit_publish_free(m);
    /* the heap method forgets it; sites and PIC cases are unlinked in before_slide */
    if (jit_method_is_compiled(m) && vm_jit_method_of(m->method) == m) vm_counter_set(m->method, 0);
}

static void on_move(JitMethod *m, JitMethod *new_m, void *ctx)
{
    (void)ctx;
    vm_jit_publish_move(m, new_m);
    if (jit_method_is_compiled(m) && vm_jit_method_of(m->method) == m)
        vm_counter_set(m->method, vm_counter_of_code(new_m));
}

static void relocate_ra(Oop *slot, void *ctx)
{
    (void)ctx;
    if (!vm_jit_is_code_address(*slot)) return;
    uint8_t *n = jit_zone_forward(vm_jit_zone(), (void *)*slot);
    VM_ASSERT(n, "a return address into freed code (its method was on the stack)");
    *slot = (Oop)(uintptr_t)n;
}

static void before_slide(void *ctx)
{
    (void)ctx;
    for (JitMethod *m = jit_zone_first(vm_jit_zone()); m; m = jit_zone_next(vm_jit_zone(), m)) {
        if (m->kind == JIT_KIND_TRAMPOLINE) continue;
        ptrdiff_t delta = (uint8_t *)jit_zone_forward(vm_jit_zone(), m) - (uint8_t *)m;
        vm_jit_stats.unlinked_by_compaction += jit_relocate_piece(vm_jit_zone(), m, delta, vm_jit_runtime()->send);
    }
    for_each_return_address(relocate_ra, NULL);
}

static void clear_on_stack(void)
{
    for (JitMethod *m = jit_zone_first(vm_jit_zone()); m; m = jit_zone_next(vm_jit_zone(), m)) m->flags &= (uint16_t)~JIT_METHOD_F_ON_STACK;
}

void vm_jit_compact(Oop *held_ra)
{
    live_ra = held_ra;
    JitZoneStats before;
    jit_zone_stats(vm_jit_zone(), &before); /* for the code__compact probe */
    for_each_return_address(mark_on_stack, NULL);
    JitZoneRelocate cb = { .can_free = can_free, .on_free = on_free, .on_move = on_move, .before_slide = before_slide };
    jit_zone_compact(vm_jit_zone(), &cb);
    clear_on_stack();
    if (vm_jit_verify) jit_verify_zone(vm_jit_zone(), vm_jit_runtime()->send, "after a compaction");
    if (VM_PROBE_CODE_COMPACT_ENABLED()) {
        JitZoneStats after;
        jit_zone_stats(vm_jit_zone(), &after);
        vm_probe_code_compact(after.bytes_free > before.bytes_free ? after.bytes_free - before.bytes_free : 0,
                              after.methods_moved - before.methods_moved);
    }
    live_ra = NULL;
}

