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
#include "vm/bytecode/bytecodes.h"
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
        if (cls > OBJ_CLASS_MASK || !m || m->kind != JIT_KIND_METHOD || t != jit_method_unchecked_entry(m) ||
            (m->flags & JIT_METHOD_F_SUPERSEDED)) /* tier-up relinks every case to the new code */
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
    if (st == JIT_SITE_MONO && (pic->flags & JIT_METHOD_F_SUPERSEDED))
        vm_panic("--jit-verify %s: the send site returning to %p is linked to code tier-up replaced", when, (void *)ra);
}

void jit_verify_method(JitZone *zone, const void *send, const JitMethod *m, const char *when)
{
    if (!jit_method_is_compiled(m)) vm_panic("--jit-verify %s: %p is not a method or block", when, (void *)m);
    /* the heap method's counter slot holds -(JitMethod address) once compiled */
    if (!(m->flags & JIT_METHOD_F_SUPERSEDED) && vm_counter(m->method) != vm_counter_of_code(m))
        vm_panic("--jit-verify %s: method %p's heap method does not point back to it", when, (void *)m);
    size_t own_len = vm_method_bytecode_length(m->method);
    /* the inline ranges: sorted, disjoint, inside the code, each beginning
     * with a map entry */
    const JitInlineRange *r = jit_method_inline_ranges(m);
    uint32_t nr = jit_method_inline_range_count(m), ns = jit_method_inline_scope_count(m);
    for (uint32_t i = 0; i < nr; i++) {
        JitMapEntry first;
        if (r[i].start >= r[i].end || r[i].end > m->map_offset || r[i].scope >= ns ||
            (i && r[i].start < r[i - 1].end) || !jit_map_bcpc_at(jit_method_map(m), r[i].start, &first) ||
            first.mcpc != r[i].start)
            vm_panic("--jit-verify %s: inline range %u of %p is malformed", when, i, (void *)m);
    }
    JitMapIter it;
    JitMapEntry e;
    uint32_t last = 0;
    jit_map_iter_init(&it, jit_method_map(m));
    while (jit_map_iter_next(&it, &e)) {
        int32_t scope = jit_method_inline_scope_at(m, e.mcpc);
        size_t len = scope < 0 ? own_len : vm_method_bytecode_length(jit_method_inline_scopes(m)[scope].method);
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

/* The operand stack depth before bytecode `at` of m, from the bytecodes'
 * stack effects along every path (the compiler's jumps agree on depths). */
static int stack_depth_at(Oop m, size_t at)
{
    const uint8_t *code = vm_method_bytecodes(m);
    size_t len = vm_method_bytecode_length(m);
    int depth[256];
    if (len >= sizeof depth / sizeof depth[0]) return -1;
    for (size_t i = 0; i <= len; i++) depth[i] = -1;
    depth[0] = 0;
    for (size_t pc = 0; pc < len; pc += vm_bytecode_length[code[pc]]) {
        uint8_t op = code[pc];
        if (depth[pc] < 0) continue;
        int eff = vm_bytecode_effect[op];
        if (eff == BC_VARIABLE) eff = -(int)(op == BC_SEND || op == BC_SUPER_SEND ? code[pc + 2] : code[pc + 3]);
        int d = depth[pc] + eff;
        long t = -1;
        if (op == BC_JUMP || (op >= BC_JUMP_IF_TRUE && op <= BC_JUMP_IF_NOT_NIL))
            t = (long)(pc + 3 + (code[pc + 1] | code[pc + 2] << 8));
        if (t >= 0 && (size_t)t <= len && depth[t] < 0) depth[t] = d;
        size_t next = pc + vm_bytecode_length[op];
        if (op != BC_JUMP && op != BC_JUMP_BACK && op != BC_RETURN_TOP && op != BC_RETURN_SELF && next <= len &&
            depth[next] < 0)
            depth[next] = d;
    }
    return at <= len ? depth[at] : -1;
}

void jit_verify_deopt(Oop m, size_t bcpc, int words)
{
    int d = stack_depth_at(m, bcpc);
    if (d < 0 || words != vm_method_ntemps(m) + d)
        vm_panic("--jit-verify at a deopt: %d words at bcpc %zu, the bytecodes give %d temps and a stack of %d", words,
                 bcpc, vm_method_ntemps(m), d);
}
