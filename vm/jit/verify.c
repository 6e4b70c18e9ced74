/*
 * vm/jit/verify.c — reading send sites and closed PICs back from the code
 * zone and checking that they are in one of their valid states
 * (vm/jit/sendsite.h draws them).
 */
#include "vm/jit/verify.h"

#include "vm/jit/map.h"
#include "vm/jit/sendsite.h"
#include "vm/model/counter.h"
#include "vm/model/method.h"
#include "vm/model/vm.h"

static const char *const state_names[] = { "unlinked", "monomorphic", "polymorphic", "megamorphic", "bad" };

const char *jit_verify_state_name(JitSiteState s) { return state_names[s]; }

JitSiteState jit_verify_site_state(JitZone *zone, const void *send, const uint8_t *ra, JitMethod **pic)
{
    JitSendSite s;
    if (!jit_sendsite_read(ra, &s)) return JIT_SITE_BAD;
    if (s.target == send) return JIT_SITE_UNLINKED;
    JitMethod *t = jit_zone_find(zone, s.target);
    if (!t) return JIT_SITE_BAD;
    *pic = t;
    switch (t->kind) {
    case JIT_KIND_METHOD:
        return s.target == jit_method_checked_entry(t) && s.tag <= OBJ_CLASS_MASK ? JIT_SITE_MONO : JIT_SITE_BAD;
    case JIT_KIND_CLOSED_PIC: return s.target == jit_method_code(t) ? JIT_SITE_POLY : JIT_SITE_BAD;
    case JIT_KIND_OPEN_PIC: return s.target == jit_method_code(t) ? JIT_SITE_MEGA : JIT_SITE_BAD;
    default: return JIT_SITE_BAD;
    }
}

static void verify_pic_cases(JitZone *zone, const JitMethod *pic, const char *when)
{
    for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
        uint32_t cls;
        uint8_t *t;
        if (!jit_sendsite_pic_case_read(pic, i, &cls, &t))
            vm_panic("--jit-verify %s: closed PIC %p case %d does not decode", when, (void *)pic, i);
        if (cls == JIT_SENDSITE_NO_CLASS) {
            if (!jit_method_contains(pic, t))
                vm_panic("--jit-verify %s: empty case %d of PIC %p leaves the PIC", when, i, (void *)pic);
            continue;
        }
        JitMethod *m = jit_zone_find(zone, t);
        if (cls > OBJ_CLASS_MASK || !m || m->kind != JIT_KIND_METHOD || t != jit_method_unchecked_entry(m))
            vm_panic("--jit-verify %s: case %d of PIC %p (class %u) does not reach a method's unchecked entry", when,
                     i, (void *)pic, cls);
    }
}

void jit_verify_site(JitZone *zone, const void *send, const uint8_t *ra, const char *when)
{
    JitMethod *pic = NULL;
    JitSiteState st = jit_verify_site_state(zone, send, ra, &pic);
    if (st == JIT_SITE_BAD)
        vm_panic("--jit-verify %s: the send site returning to %p is not a valid site", when, (void *)ra);
    if (st == JIT_SITE_POLY) verify_pic_cases(zone, pic, when);
}

void jit_verify_method(JitZone *zone, const void *send, const JitMethod *m, const char *when)
{
    if (!jit_method_is_compiled(m)) vm_panic("--jit-verify %s: %p is not a method or block", when, (void *)m);
    /* the heap method's counter slot holds -(JitMethod address) once compiled */
    if (vm_counter(m->method) != vm_counter_of_code(m))
        vm_panic("--jit-verify %s: method %p's heap method does not point back to it", when, (void *)m);
    size_t len = vm_method_bytecode_length(m->method);
    JitMapIter it;
    JitMapEntry e;
    uint32_t last = 0;
    jit_map_iter_init(&it, jit_method_map(m));
    while (jit_map_iter_next(&it, &e)) {
        if (e.mcpc < last || e.mcpc <= JIT_METHOD_CODE || e.mcpc > m->map_offset || (e.bcpc >= len && e.bcpc != 0))
            vm_panic("--jit-verify %s: map entry (mcpc %u, bcpc %u) of %p out of order or range", when, e.mcpc,
                     e.bcpc, (void *)m);
        last = e.mcpc;
        JitMapEntry back;
        if (!jit_map_bcpc_at(jit_method_map(m), e.mcpc, &back) || back.bcpc != e.bcpc)
            vm_panic("--jit-verify %s: map of %p does not answer mcpc %u", when, (void *)m, e.mcpc);
        if (e.kind == JIT_MAP_SEND) jit_verify_site(zone, send, jit_method_at(m, e.mcpc), when);
    }
}

void jit_verify_zone(JitZone *zone, const void *send, const char *when)
{
    for (JitMethod *m = jit_zone_first(zone); m; m = jit_zone_next(zone, m)) {
        if (jit_method_is_compiled(m)) jit_verify_method(zone, send, m, when);
        else if (m->kind == JIT_KIND_CLOSED_PIC) verify_pic_cases(zone, m, when);
    }
}
