/*
 * vm/jitverify.c — looking at the code zone from outside: --jit-verify's
 * checks of send sites, PICs and maps, and --code-zone-stats, the zone
 * analysis of reference 002 (Tables 1 and 2).
 */
#include "vm/jitglue.h"

#include "jit/compile.h"
#include "jit/map.h"
#include "jit/sendsite.h"
#include "jit/zone.h"
#include "vm/method.h"
#include "vm/universe.h"
#include "vm/vm.h"

typedef enum SiteState { SITE_UNLINKED, SITE_MONO, SITE_POLY, SITE_MEGA, SITE_BAD } SiteState;

static const char *const state_names[] = { "unlinked", "monomorphic", "polymorphic", "megamorphic", "bad" };

/* The state of the site returning to ra, and (for a PIC) the PIC. */
static SiteState classify(const uint8_t *ra, JitMethod **pic)
{
    JitSendSite s;
    if (!jit_sendsite_read(ra, &s)) return SITE_BAD;
    if (s.target == vm_jit_runtime()->send) return SITE_UNLINKED;
    JitMethod *t = jit_zone_find(vm_jit_zone(), s.target);
    if (!t) return SITE_BAD;
    *pic = t;
    switch (t->kind) {
    case JIT_KIND_METHOD:
        return s.target == jit_method_checked_entry(t) && s.tag <= OBJ_CLASS_MASK ? SITE_MONO : SITE_BAD;
    case JIT_KIND_CLOSED_PIC: return s.target == jit_method_code(t) ? SITE_POLY : SITE_BAD;
    case JIT_KIND_OPEN_PIC: return s.target == jit_method_code(t) ? SITE_MEGA : SITE_BAD;
    default: return SITE_BAD;
    }
}

static void verify_pic_cases(const JitMethod *pic, const char *when)
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
        JitMethod *m = jit_zone_find(vm_jit_zone(), t);
        if (cls > OBJ_CLASS_MASK || !m || m->kind != JIT_KIND_METHOD || t != jit_method_unchecked_entry(m))
            vm_panic("--jit-verify %s: case %d of PIC %p (class %u) does not reach a method's unchecked entry", when,
                     i, (void *)pic, cls);
    }
}

void vm_jit_verify_site(const uint8_t *ra, const char *when)
{
    JitMethod *pic = NULL;
    SiteState st = classify(ra, &pic);
    if (st == SITE_BAD) vm_panic("--jit-verify %s: the send site returning to %p is not a valid site", when, (void *)ra);
    if (st == SITE_POLY) verify_pic_cases(pic, when);
}

void vm_jit_verify_method(const JitMethod *m, const char *when)
{
    if (!jit_method_is_compiled(m)) vm_panic("--jit-verify %s: %p is not a method or block", when, (void *)m);
    if (vm_jit_method_of(m->method) != m)
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
        if (e.kind == JIT_MAP_SEND) vm_jit_verify_site(jit_method_at(m, e.mcpc), when);
    }
}

void vm_jit_verify_zone(const char *when)
{
    JitZone *z = vm_jit_zone();
    for (JitMethod *m = jit_zone_first(z); m; m = jit_zone_next(z, m)) {
        if (jit_method_is_compiled(m)) vm_jit_verify_method(m, when);
        else if (m->kind == JIT_KIND_CLOSED_PIC) verify_pic_cases(m, when);
    }
}

/* -- --code-zone-stats ------------------------------------------------------------- */

static double pct(uint64_t n, uint64_t of) { return of ? 100.0 * (double)n / (double)of : 0.0; }

void vm_jit_print_zone_stats(FILE *out)
{
    JitZone *z = vm_jit_zone();
    JitZoneStats zs;
    jit_zone_stats(z, &zs);
    uint64_t methods = 0, blocks = 0, stubs = 0, closed = 0, open = 0, method_bytes = 0, pic_bytes = 0, cases = 0;
    uint64_t sites[SITE_BAD + 1] = { 0 };
    for (JitMethod *m = jit_zone_first(z); m; m = jit_zone_next(z, m)) {
        switch ((JitMethodKind)m->kind) {
        case JIT_KIND_BLOCK:
        case JIT_KIND_METHOD:
            if (m->kind == JIT_KIND_BLOCK) blocks++;
            else if (obj_slots(m->method)[METHOD_PRIMITIVE] != oop_from_int(0)) stubs++;
            else methods++;
            method_bytes += m->size;
            JitMapIter it;
            JitMapEntry e;
            jit_map_iter_init(&it, jit_method_map(m));
            while (jit_map_iter_next(&it, &e)) {
                if (e.kind != JIT_MAP_SEND) continue;
                JitMethod *pic = NULL;
                sites[classify(jit_method_at(m, e.mcpc), &pic)]++;
            }
            break;
        case JIT_KIND_CLOSED_PIC:
            closed++;
            pic_bytes += m->size;
            cases += (uint64_t)jit_sendsite_pic_case_count(m);
            break;
        case JIT_KIND_OPEN_PIC:
            open++;
            pic_bytes += m->size;
            break;
        default: break;
        }
    }
    uint64_t total = sites[SITE_UNLINKED] + sites[SITE_MONO] + sites[SITE_POLY] + sites[SITE_MEGA] + sites[SITE_BAD];
    size_t zone_bytes = (size_t)(jit_zone_end(z) - jit_zone_base(z));
    fprintf(out, "code zone: %zu bytes; %zu in use, %zu in holes, %zu free; trampolines %zu bytes\n", zone_bytes,
            zs.bytes_in_use, zs.bytes_in_holes, zs.bytes_free, zs.bytes_trampolines);
    uint64_t lit_sites = 0;
    for (JitMethod *m = jit_zone_first(z); m; m = jit_zone_next(z, m)) lit_sites += m->lit_count;
    fprintf(out, "  address range %p-%p\n", (void *)jit_zone_base(z), (void *)jit_zone_end(z));
    fprintf(out, "  methods %llu, blocks %llu, primitive stubs %llu (%llu bytes, %.0f bytes each)\n",
            (unsigned long long)methods, (unsigned long long)blocks, (unsigned long long)stubs,
            (unsigned long long)method_bytes,
            methods + blocks + stubs ? (double)method_bytes / (double)(methods + blocks + stubs) : 0.0);
    fprintf(out, "  closed PICs %llu (%.1f cases each), open PICs %llu; PIC bytes %llu\n", (unsigned long long)closed,
            closed ? (double)cases / (double)closed : 0.0, (unsigned long long)open, (unsigned long long)pic_bytes);
    fprintf(out, "  compiled %llu, declined %llu; links %llu, closed PICs made %llu, sites sent to open PICs %llu\n",
            (unsigned long long)vm_jit_stats.compiled, (unsigned long long)vm_jit_stats.declined,
            (unsigned long long)vm_jit_stats.links, (unsigned long long)vm_jit_stats.pics_closed,
            (unsigned long long)vm_jit_stats.megamorphic_links);
    fprintf(out, "  compactions %llu (%.3f ms total, %.3f ms max); freed %llu (evicted %llu), moved %llu, "
                 "sites unlinked %llu\n",
            (unsigned long long)zs.compactions, (double)zs.compaction_usecs_total / 1000.0,
            (double)zs.compaction_usecs_max / 1000.0, (unsigned long long)zs.methods_freed,
            (unsigned long long)zs.methods_evicted, (unsigned long long)zs.methods_moved,
            (unsigned long long)vm_jit_stats.unlinked_by_compaction);
    fprintf(out, "  loops continued in machine code (OSR) %llu\n", (unsigned long long)vm_jit_stats.osr_entries);
    fprintf(out, "  global sites cached %llu; young referrers now %u (ever %llu)\n", (unsigned long long)lit_sites,
            jit_zone_young_count(z), (unsigned long long)vm_jit_stats.young_referrers_added);
    /* the megamorphic selectors and how many sites share each open PIC */
    for (JitMethod *pic = jit_zone_first(z); pic; pic = jit_zone_next(z, pic)) {
        if (pic->kind != JIT_KIND_OPEN_PIC) continue;
        uint64_t n = 0;
        for (JitMethod *m = jit_zone_first(z); m; m = jit_zone_next(z, m)) {
            if (!jit_method_is_compiled(m)) continue;
            JitMapIter it;
            JitMapEntry e;
            jit_map_iter_init(&it, jit_method_map(m));
            while (jit_map_iter_next(&it, &e)) {
                JitMethod *t = NULL;
                if (e.kind == JIT_MAP_SEND && classify(jit_method_at(m, e.mcpc), &t) == SITE_MEGA && t == pic) n++;
            }
        }
        char sel[256];
        fprintf(out, "  open PIC #%s: %llu site%s\n", vm_string_cstr(pic->method, sel, sizeof sel),
                (unsigned long long)n, n == 1 ? "" : "s");
    }
    fprintf(out, "send sites: %llu\n", (unsigned long long)total);
    for (int s = SITE_UNLINKED; s <= SITE_BAD; s++) {
        if (s == SITE_BAD && !sites[s]) continue;
        fprintf(out, "  %-12s %8llu  %5.1f%%\n", state_names[s], (unsigned long long)sites[s], pct(sites[s], total));
    }
}
