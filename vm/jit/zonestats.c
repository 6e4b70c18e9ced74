/*
 * vm/jit/zonestats.c — --code-zone-stats: the code zone analysis of
 * reference 002 (Tables 1 and 2), the send sites' states as vm/jit/verify.h
 * decodes them.
 */
#include "vm/jit/runtime.h"

#include "vm/jit/compile.h"
#include "vm/jit/map.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/verify.h"
#include "vm/jit/zone.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

/* The state of the site returning to ra, and (for a PIC) the PIC. */
static JitSiteState classify(const uint8_t *ra, JitMethod **pic)
{
    return jit_verify_site_state(vm_jit_zone(), vm_jit_runtime()->send, ra, pic);
}

static double pct(uint64_t n, uint64_t of) { return of ? 100.0 * (double)n / (double)of : 0.0; }

void vm_jit_print_zone_stats(FILE *out)
{
    JitZone *z = vm_jit_zone();
    JitZoneStats zs;
    jit_zone_stats(z, &zs);
    uint64_t methods = 0, blocks = 0, stubs = 0, closed = 0, open = 0, method_bytes = 0, pic_bytes = 0, cases = 0;
    uint64_t sites[JIT_SITE_BAD + 1] = { 0 };
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
    uint64_t total = sites[JIT_SITE_UNLINKED] + sites[JIT_SITE_MONO] + sites[JIT_SITE_POLY] + sites[JIT_SITE_MEGA] + sites[JIT_SITE_BAD];
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
    fprintf(out, "  loops continued in machine code (OSR) %llu; Doubles boxed by the runtime %llu\n",
            (unsigned long long)vm_jit_stats.osr_entries, (unsigned long long)vm_jit_stats.runtime_boxes);
    fprintf(out, "  sends inlined %llu, inlined bodies deoptimized %llu, turned off %llu (methods recompiled without "
                 "them %llu); tier-ups %llu\n",
            (unsigned long long)vm_jit_stats.inlined, (unsigned long long)vm_jit_stats.deopts,
            (unsigned long long)vm_jit_stats.inline_disabled, (unsigned long long)vm_jit_stats.deopt_recompiles,
            (unsigned long long)vm_jit_stats.tier_ups);
    fprintf(out, "  loops and bodies compiled whole %llu, runs they redid in the plain code %llu\n",
            (unsigned long long)vm_jit_stats.whole_loops[0], (unsigned long long)vm_jit_stats.whole_loops[1]);
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
                if (e.kind == JIT_MAP_SEND && classify(jit_method_at(m, e.mcpc), &t) == JIT_SITE_MEGA && t == pic) n++;
            }
        }
        char sel[256];
        fprintf(out, "  open PIC #%s: %llu site%s\n", vm_string_cstr(pic->method, sel, sizeof sel),
                (unsigned long long)n, n == 1 ? "" : "s");
    }
    fprintf(out, "send sites: %llu\n", (unsigned long long)total);
    for (int s = JIT_SITE_UNLINKED; s <= JIT_SITE_BAD; s++) {
        if (s == JIT_SITE_BAD && !sites[s]) continue;
        fprintf(out, "  %-12s %8llu  %5.1f%%\n", jit_verify_state_name((JitSiteState)s), (unsigned long long)sites[s], pct(sites[s], total));
    }
}
