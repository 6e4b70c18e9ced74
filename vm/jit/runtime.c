/*
 * vm/jit/runtime.c — compiling hot methods and the runtime routines machine
 * code calls through enter.c's trampolines.
 */
#include "vm/jit/runtime.h"

#include "vm/jit/enter.h"
#include "vm/jit/compile.h"
#include "vm/jit/map.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/verify.h"
#include "vm/jit/zone.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/interp/interp.h"
#include "vm/interp/jitinterface.h"
#include "vm/interp/probes.h"
#include "vm/interp/doublesites.h"
#include "vm/interp/sendcache.h"
#include "vm/interp/special.h"
#include "vm/interp/stack.h"
#include "vm/jit/compact.h"
#include "vm/jit/jitpublish.h"
#include "vm/loader/loader.h"
#include "vm/model/class.h"
#include "vm/model/counter.h"
#include "vm/model/lookup.h"
#include "vm/model/frame.h"
#include "vm/model/globals.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_MAX_PRIM_ARGS 8 /* sends to primitives with more arguments take the interpreter's path */

/* While tier-up compiles: the old code's inlined and linked sites by bcpc
 * (one walk of its tables, not one per site asked), NULL otherwise. */
typedef struct TierFeedback {
    uint32_t class_index; /* JIT_SENDSITE_NO_CLASS: none */
    bool declined;        /* the old code turned its body for this send off */
    Oop method;
} TierFeedback;
static TierFeedback *tier_feedback;
static const uint8_t *tier_code;
static size_t tier_len;

typedef enum TierSite { TIER_SITE_UNKNOWN, TIER_SITE_NAMED, TIER_SITE_DECLINED } TierSite;

static TierSite tier_site_method(const uint8_t *site, uint32_t *class_index, Oop *method)
{
    if (!tier_feedback || site < tier_code || site >= tier_code + tier_len) return TIER_SITE_UNKNOWN;
    const TierFeedback *f = &tier_feedback[site - tier_code];
    if (f->declined) return TIER_SITE_DECLINED;
    if (f->class_index == JIT_SENDSITE_NO_CLASS) return TIER_SITE_UNKNOWN;
    *class_index = f->class_index;
    *method = f->method;
    return TIER_SITE_NAMED;
}

/* Fills tier_feedback from old's inlined bodies and linked sites. A body
 * still on names its guard's class and callee: its send was never linked
 * (the guard took every call), and the interpreter's cache entry for the
 * site may since have gone to another site, so without this a recompile
 * would lose what the old code inlined. A callee whose body was turned off
 * for deoptimizing too often is declined at every site of the method: the
 * new code sends (the old code's linked fallback would name it again, and
 * its other sites in this method most likely pass it the same kinds of
 * operands; CD's Vector2D>>compareTo: hands Doubles to compare:and: at
 * two sites, whose SmallInteger compares deoptimize). Else a monomorphic
 * site, or one linked to a closed PIC of one case, names the class and the
 * callee. */
#define TIER_TURNED_OFF_MAX 16

static bool turned_off(Oop method, const Oop *off, uint32_t noff)
{
    for (uint32_t i = 0; i < noff; i++)
        if (off[i] == method) return true;
    return false;
}

static void read_linked_sites(const JitMethod *old)
{
    for (size_t i = 0; i < tier_len; i++) tier_feedback[i] = (TierFeedback){ JIT_SENDSITE_NO_CLASS, false, 0 };
    uint32_t n = jit_method_inline_range_count(old), noff = 0;
    const JitInlineScope *scopes = n ? jit_method_inline_scopes(old) : NULL;
    const JitInlineRange *ranges = n ? jit_method_inline_ranges(old) : NULL;
    Oop off[TIER_TURNED_OFF_MAX]; /* more than that: the rest are inlined again (and may turn off again) */
    for (uint32_t i = 0; i < n && noff < TIER_TURNED_OFF_MAX; i++)
        if (jit_inline_disabled(old, i)) off[noff++] = scopes[ranges[i].scope].method;
    for (uint32_t i = 0; i < n; i++) {
        const JitInlineScope *sc = &scopes[ranges[i].scope];
        if (sc->parent != -1 || sc->call_bcpc >= tier_len) continue;
        TierFeedback *f = &tier_feedback[sc->call_bcpc];
        if (turned_off(sc->method, off, noff)) f->declined = true;
        else *f = (TierFeedback){ sc->class_index, false, sc->method };
    }
    JitMapIter it;
    JitMapEntry e;
    jit_map_iter_init(&it, jit_method_map(old));
    while (jit_map_iter_next(&it, &e)) {
        /* an inlined body has no sends, so a SEND entry is the method's own
         * send (or an inlined site's fallback send) */
        if (e.kind != JIT_MAP_SEND || e.bcpc >= tier_len || tier_feedback[e.bcpc].class_index != JIT_SENDSITE_NO_CLASS ||
            tier_feedback[e.bcpc].declined)
            continue;
        const JitMethod *tier_old = old;
        JitSendSite s;
        if (!jit_sendsite_read(jit_method_at(tier_old, e.mcpc), &s)) continue;
        JitMethod *t = jit_zone_find(&vm_jit_code_zone, s.target);
        if (!t) continue;
        uint32_t cls = s.tag;
        if (t->kind == JIT_KIND_CLOSED_PIC) {
            uint8_t *target;
            if (jit_sendsite_pic_case_count(t) != 1 || !jit_sendsite_pic_case_read(t, 0, &cls, &target)) continue;
            t = jit_zone_find(&vm_jit_code_zone, target);
            if (!t || t->kind != JIT_KIND_METHOD || target != jit_method_unchecked_entry(t)) continue;
        } else if (t->kind != JIT_KIND_METHOD || s.target != jit_method_checked_entry(t)) {
            continue;
        }
        if (cls > OBJ_CLASS_MASK) continue;
        if (turned_off(t->method, off, noff)) tier_feedback[e.bcpc].declined = true;
        else tier_feedback[e.bcpc] = (TierFeedback){ cls, false, t->method };
    }
}

/* Machine code's hint for an accessor send (vm/jit/compile.h,
 * site_accessor): while tier-up recompiles, the old code's site linked to
 * a getter or setter (compiled, it takes a call and a frame; named here, the
 * new code reads or writes the field in line); else the interpreter's
 * send-site cache, only entries that are still this site's. */
static bool site_accessor(const uint8_t *site, uint32_t *class_index, bool *setter, int *field)
{
    Oop m;
    int nargs = site[0] == BC_SEND ? site[2] : site[3];
    if (tier_site_method(site, class_index, &m) == TIER_SITE_NAMED &&
        vm_sendcache_accessor_of(m, nargs, setter, field))
        return true;
    const VmSendCacheEntry *e = vm_sendcache_entry(site);
    if (e->site != site || (e->kind != SENDCACHE_GETTER && e->kind != SENDCACHE_SETTER)) return false;
    *class_index = e->class_index;
    *setter = e->kind == SENDCACHE_SETTER;
    *field = e->field;
    return true;
}

/* Inlining's feedback (vm/jit/compile.h, site_method): when tier-up
 * recompiles, the old code's inlined or linked site; else the interpreter's
 * send-site cache, a method the site ran for one class, with no miss since. */
static bool site_method(const uint8_t *site, uint32_t *class_index, Oop *method)
{
    switch (tier_site_method(site, class_index, method)) {
    case TIER_SITE_NAMED: return true;
    case TIER_SITE_DECLINED: return false;
    case TIER_SITE_UNKNOWN: break;
    }
    const VmSendCacheEntry *e = vm_sendcache_entry(site);
    if (e->site != site || e->kind != SENDCACHE_METHOD || e->misses != 0) return false;
    *class_index = e->class_index;
    *method = e->method;
    return true;
}

/* A primitive's answer on its way back to machine code: the dispatch
 * trampoline jumps to vm_jit_prim_return (vm/jit/jitstate.h), which loads it
 * and returns to the caller (whose return address is on top of the stack). */
static Oop prim_answer;

_Static_assert(offsetof(StackPage, base) == 0, "the prologue's stack check reads the page base at 0");

/* -- Handing sends to the interpreter ----------------------------------------- */

static uint64_t exit_to_interpreter(VmJitPending kind, Oop oop, int nargs)
{
    vm_jit_pending_kind = kind;
    vm_jit_pending_oop = oop;
    vm_jit_pending_nargs = nargs;
    jit_enter_request_exit(JIT_STATUS_INTERPRET);
    return 0;
}

static Oop selector_of_tag(int64_t tag, Oop *fp)
{
    if (tag >= 0) return vm_method_literals(fp[FRAME_METHOD])[tag];
    if (tag == JIT_SEND_MUST_BE_BOOLEAN) return vm_interp_symbol_must_be_boolean();
    return vm_interp_special_selector(jit_send_tag_bytecode(tag));
}

static uint32_t receiver_class(int nargs) { return vm_class_index_of(jit_cstate.st_sp[1 + nargs]); }

/* -- Compiled code for a method --------------------------------------------------- */

static JitMethod *compile_primitive_stub(Oop m, int index);

/* Compiling from a runtime routine: a compaction walks the frames from the
 * machine-code caller and relocates its return address. */
static intptr_t compile_here(Oop m, void *cx)
{
    (void)cx;
    vm_interp_set_saved_frame(jit_cstate.st_sp + 1, jit_cstate.st_fp);
    return vm_jit_compile(m, jit_cstate.st_sp);
}

/* The code to run method m with nargs arguments: its compiled method or
 * primitive stub, compiling it when it has become hot. NULL: interpret it.
 * May compact the zone (jit_cstate.st_sp[0] is relocated). */
static JitMethod *callable(Oop m, int nargs)
{
    if (vm_method_nargs(m) != nargs) return NULL;
    intptr_t p = oop_int(obj_slots(m)[METHOD_PRIMITIVE]);
    if (p != 0) {
        bool value = p > 1 && vm_prim_table[p].special == SP_BLOCK_VALUE;
        if (!value && (p <= 1 || vm_prim_table[p].special != SP_NONE || nargs > JIT_MAX_PRIM_ARGS)) return NULL;
        if (vm_counter(m) == 0) return compile_primitive_stub(m, (int)p);
        return vm_jit_method_of(m);
    }
    vm_counter_count_run(m, vm_jit_threshold, compile_here, NULL);
    return vm_jit_method_of(m);
}

static uint64_t unchecked(JitMethod *jm)
{
    jit_zone_touch(&vm_jit_code_zone, jm);
    return (uint64_t)(uintptr_t)jit_method_unchecked_entry(jm);
}

/* A send without linking: into compiled code, a primitive run here, or the
 * interpreter. */
static uint64_t dispatch(Oop sel, int nargs)
{
    Oop *sp = jit_cstate.st_sp; /* [0] return address, [1] last arg, [nargs+1] receiver */
    Oop m = vm_lookup_cached(receiver_class(nargs), sel);
    if (m) {
        intptr_t p = oop_int(obj_slots(m)[METHOD_PRIMITIVE]);
        if (p > 1 && vm_prim_table[p].special == SP_NONE && nargs <= JIT_MAX_PRIM_ARGS) {
            /* a plain primitive: run it here; a failure (which has no side
             * effects) is left to the interpreter, which reports it */
            Oop args[JIT_MAX_PRIM_ARGS + 1];
            for (int i = 0; i <= nargs; i++) args[i] = sp[1 + nargs - i];
            VmPrimFn fn = (VmPrimFn)vm_prim_table[p].fn;
            VM_PROBE_PRIMITIVE(fn, m, p);
            if (fn(args, &prim_answer)) return (uint64_t)(uintptr_t)vm_jit_prim_return;
        } else if (p == 0) {
            JitMethod *jm = callable(m, nargs);
            if (jm) return unchecked(jm);
        }
    }
    return exit_to_interpreter(VM_JIT_PENDING_SEND, sel, nargs);
}

/* -- Linking ------------------------------------------------------------------------- */

static void verify_site(const uint8_t *ra)
{
    if (vm_jit_verify) jit_verify_site(&vm_jit_code_zone, vm_jit_compile_runtime.send, ra, "after linking");
}

static void link_site(uint32_t tag, const void *target)
{
    uint8_t *ra = (uint8_t *)jit_cstate.st_sp[0];
    if (!jit_sendsite_write(ra, tag, target)) vm_panic("send site at %p did not take its new target", (void *)ra);
    verify_site(ra);
}

/* ceSend: an unlinked site. Links it to the callee when there is compiled
 * code for it (monomorphic), else just performs the send. */
static uint64_t rt_send_unlinked(uint64_t tag64)
{
    uint32_t tag = (uint32_t)tag64;
    int64_t stag = jit_sendsite_tag_selector(tag);
    int nargs = jit_sendsite_tag_nargs(tag);
    Oop sel = selector_of_tag(stag, jit_cstate.st_fp);
    if (stag == JIT_SEND_MUST_BE_BOOLEAN) return dispatch(sel, nargs); /* never linked: rare by nature */
    uint32_t cls = receiver_class(nargs);
    Oop m = vm_lookup_cached(cls, sel);
    if (!m) return exit_to_interpreter(VM_JIT_PENDING_SEND, sel, nargs);
    JitMethod *jm = callable(m, nargs);
    if (!jm) return dispatch(sel, nargs);
    link_site(cls, jit_method_checked_entry(jm));
    vm_jit_stats.links++;
    return unchecked(jm);
}

static void *alloc_or_compact(JitMethod *(*make)(JitZone *, const JitPicRuntime *, Oop, int), Oop sel, int nargs);

static void free_piece(JitMethod *m)
{
    vm_jit_publish_free(m);
    jit_zone_free(&vm_jit_code_zone, m);
}

/* ceMethodAbort: a monomorphic site met another class. It becomes a closed
 * PIC with the old and the new class. */
static uint64_t rt_method_abort(uint64_t unused, JitMethod *callee)
{
    (void)unused;
    int nargs = callee->nargs;
    Oop sel = obj_slots(callee->method)[METHOD_SIGNATURE];
    uint32_t cls = receiver_class(nargs);
    Oop m = vm_lookup_cached(cls, sel);
    if (!m) return exit_to_interpreter(VM_JIT_PENDING_SEND, sel, nargs);
    if (!callable(m, nargs)) return dispatch(sel, nargs);
    JitMethod *pic = alloc_or_compact(jit_sendsite_closed_pic_new, sel, nargs);
    /* allocating may have compacted: everything from here is read afresh */
    JitMethod *jm = vm_jit_method_of(m);
    JitSendSite s;
    JitMethod *old = jit_sendsite_read((uint8_t *)jit_cstate.st_sp[0], &s) ? jit_zone_find(&vm_jit_code_zone, s.target) : NULL;
    if (pic && jm && old && old->kind == JIT_KIND_METHOD && s.target == jit_method_checked_entry(old)) {
        bool ok = jit_sendsite_pic_case_write(pic, 0, s.tag, jit_method_unchecked_entry(old)) &&
                  jit_sendsite_pic_case_write(pic, 1, cls, jit_method_unchecked_entry(jm));
        if (!ok) vm_panic("closed PIC at %p did not take its cases", (void *)pic);
        link_site(s.tag, jit_method_code(pic));
        vm_jit_stats.pics_closed++;
    } else if (pic) {
        free_piece(pic);
    }
    return jm ? unchecked(jm) : dispatch(sel, nargs);
}

static JitMethod *open_pic_for(Oop sel, int nargs)
{
    for (JitMethod *p = jit_zone_first(&vm_jit_code_zone); p; p = jit_zone_next(&vm_jit_code_zone, p))
        if (p->kind == JIT_KIND_OPEN_PIC && p->method == sel && p->nargs == nargs) return p;
    JitMethod *p = alloc_or_compact(jit_sendsite_open_pic_new, sel, nargs);
    if (p) vm_jit_stats.pics_open++;
    return p;
}

/* ceClosedPICMiss: one more case, or after the sixth class the selector's
 * shared open PIC. */
static uint64_t rt_closed_pic_miss(uint64_t unused, JitMethod *pic)
{
    (void)unused;
    int nargs = pic->nargs;
    Oop sel = pic->method;
    uint32_t cls = receiver_class(nargs);
    Oop m = vm_lookup_cached(cls, sel);
    if (!m) return exit_to_interpreter(VM_JIT_PENDING_SEND, sel, nargs);
    if (!callable(m, nargs)) return dispatch(sel, nargs);
    JitSendSite s;
    if (!jit_sendsite_read((uint8_t *)jit_cstate.st_sp[0], &s)) vm_panic("a PIC miss from no send site");
    pic = jit_zone_find(&vm_jit_code_zone, s.target);
    int n = pic && pic->kind == JIT_KIND_CLOSED_PIC ? jit_sendsite_pic_case_count(pic) : -1;
    if (n >= 0 && n < JIT_MAX_PIC_CASES) {
        if (!jit_sendsite_pic_case_write(pic, n, cls, jit_method_unchecked_entry(vm_jit_method_of(m))))
            vm_panic("closed PIC at %p did not take case %d", (void *)pic, n);
        verify_site((uint8_t *)jit_cstate.st_sp[0]);
    } else if (n == JIT_MAX_PIC_CASES) {
        JitMethod *open = open_pic_for(sel, nargs);
        if (open && jit_sendsite_read((uint8_t *)jit_cstate.st_sp[0], &s)) {
            JitMethod *closed = jit_zone_find(&vm_jit_code_zone, s.target); /* re-read: making the open PIC may compact */
            link_site(s.tag, jit_method_code(open));
            /* a closed PIC serves one site: nothing else jumps into it, and
             * the trampoline we return through goes elsewhere */
            if (closed && closed->kind == JIT_KIND_CLOSED_PIC) free_piece(closed);
            vm_jit_stats.megamorphic_links++;
        }
    }
    JitMethod *jm = vm_jit_method_of(m);
    return jm ? unchecked(jm) : dispatch(sel, nargs);
}

/* ceOpenPICMiss: the lookup cache had no compiled method; the full send
 * refills the cache. */
static uint64_t rt_open_pic_miss(uint64_t unused, JitMethod *pic)
{
    (void)unused;
    return dispatch(pic->method, pic->nargs);
}

/* Every monomorphic site and closed-PIC case linked to old's entries links
 * to new_m's instead (the same method, so the same class tests hold): old
 * then has no incoming links and the zone frees it once no frame runs it. */
static void relink(const JitMethod *old, JitMethod *new_m)
{
    uint8_t *oc = jit_method_checked_entry(old), *ou = jit_method_unchecked_entry(old);
    for (JitMethod *p = jit_zone_first(&vm_jit_code_zone); p; p = jit_zone_next(&vm_jit_code_zone, p)) {
        if (p->kind == JIT_KIND_CLOSED_PIC) {
            for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
                uint32_t cls;
                uint8_t *t;
                if (jit_sendsite_pic_case_read(p, i, &cls, &t) && t == ou) {
                    bool ok = jit_sendsite_pic_case_write(p, i, cls, jit_method_unchecked_entry(new_m));
                    VM_ASSERT(ok);
                }
            }
            continue;
        }
        if (!jit_method_is_compiled(p)) continue;
        JitMapIter it;
        JitMapEntry e;
        jit_map_iter_init(&it, jit_method_map(p));
        while (jit_map_iter_next(&it, &e)) {
            JitSendSite s;
            uint8_t *ra = jit_method_at(p, e.mcpc);
            if (e.kind == JIT_MAP_SEND && jit_sendsite_read(ra, &s) && s.target == oc) {
                bool ok = jit_sendsite_write(ra, s.tag, jit_method_checked_entry(new_m));
                VM_ASSERT(ok);
            }
        }
    }
}

/* Tier-up (vm/jit/DESIGN.md): old's countdown reached 0 at its entry, before
 * its frame exists. Recompiles its method with old's linked sites as
 * inlining's feedback and without a countdown; the new code replaces old
 * everywhere but in frames already running old. NULL (old stays) when the
 * zone is full: tier-up never compacts, so old cannot move or go under it. */
static JitMethod *tier_up(JitMethod *old, bool for_deopts)
{
    Oop m = old->method;
    char why[256];
    tier_code = vm_method_bytecodes(m);
    tier_len = vm_method_bytecode_length(m);
    tier_feedback = malloc((tier_len + 1) * sizeof *tier_feedback);
    if (!tier_feedback) return NULL;
    read_linked_sites(old);
    int32_t after = vm_jit_compile_runtime.tier_up_after;
    vm_jit_compile_runtime.tier_up_after = 0;
    JitMethod *n = jit_compile(&vm_jit_code_zone, &vm_jit_compile_runtime, m, why, sizeof why);
    free(tier_feedback);
    tier_feedback = NULL;
    vm_jit_compile_runtime.tier_up_after = after;
    if (!n) return NULL;
    vm_jit_stats.compiled++;
    if (for_deopts) {
        n->flags |= JIT_METHOD_F_DEOPT_RECOMPILED;
        vm_jit_stats.deopt_recompiles++;
    } else {
        vm_jit_stats.tier_ups++;
    }
    vm_jit_stats.inlined += jit_method_inline_scope_count(n);
    vm_jit_publish_load(n);
    vm_counter_set(m, vm_counter_of_code(n));
    old->flags |= JIT_METHOD_F_SUPERSEDED;
    relink(old, n);
    if (vm_jit_verify) {
        jit_verify_method(&vm_jit_code_zone, vm_jit_compile_runtime.send, n, "after tier-up");
        jit_verify_zone(&vm_jit_code_zone, vm_jit_compile_runtime.send, "after tier-up");
    }
    return n;
}

/* The unchecked entry's checks failed: a GC is wanted, a tracer holds the
 * method probes (profiler/usdt.h: the interpreter runs the activation and
 * fires them), or the frame does not fit the page (the interpreter then
 * activates the method on a new page). */
static uint64_t rt_entry_slow(uint64_t unused, uint8_t *resume)
{
    (void)unused;
    JitMethod *jm = jit_zone_find(&vm_jit_code_zone, resume);
    VM_ASSERT(jm && jit_method_is_compiled(jm));
    if (gc_collect_wanted) {
        vm_counters->interrupt_checks++;
        /* st_sp points at the return address into the caller: not an Oop */
        vm_interp_set_saved_frame(jit_cstate.st_sp + 1, jit_cstate.st_fp);
        gc_collect(false);
    }
    int32_t *left = jit_compile_tier_counter(jm);
    if (left && *left <= 0) {
        *left = INT32_MAX; /* one try: a full zone leaves the old code for good */
        JitMethod *n = vm_jit_method_of(jm->method) == jm ? tier_up(jm, false) : NULL;
        if (n) return unchecked(n); /* the activation starts over in the new code, its checks included */
    }
    Oop m = jm->method;
    int words = FRAME_HEADER_WORDS + vm_method_ntemps(m) + vm_method_max_stack(m) + 1 + VM_STACK_HEADROOM_WORDS;
    if (jit_cstate.st_sp + 1 - words >= vm_page->base && !VM_PROBE_METHODS_TRACED())
        return (uint64_t)(uintptr_t)resume; /* as the prologue */
    return exit_to_interpreter(VM_JIT_PENDING_METHOD, m, jm->nargs);
}

/* A primitive stub's call: the primitive's answer, or on failure the
 * interpreter activates the method (and reports the failure). */
static uint64_t rt_primitive(uint64_t index, uint64_t nargs, JitMethod *stub)
{
    Oop *sp = jit_cstate.st_sp; /* [0] into the stub, [1] the send site's return address, [2] last arg */
    Oop args[JIT_MAX_PRIM_ARGS + 1];
    for (int i = 0; i <= (int)nargs; i++) args[i] = sp[2 + nargs - i];
    Oop r;
    VmPrimFn fn = (VmPrimFn)vm_prim_table[index].fn;
    VM_PROBE_PRIMITIVE(fn, stub->method, (intptr_t)index);
    if (fn(args, &r)) return r;
    jit_cstate.st_sp = sp + 1; /* leave as if the site had called the interpreter */
    return exit_to_interpreter(VM_JIT_PENDING_METHOD, stub->method, (int)nargs);
}

static uint64_t rt_global(int64_t literal, uint8_t *site)
{
    Oop sym = vm_method_literals(jit_cstate.st_fp[FRAME_METHOD])[literal];
    Oop v = vm_global_get(sym);
    if (!v) {
        char name[512];
        v = vm_load_class(vm_string_cstr(sym, name, sizeof name));
        site = NULL; /* loading may have compacted the zone: the site moved */
    }
    if (v && site) {
        if (!jit_compile_global_site_fill(site, v, (uint32_t)vm_globals_epoch))
            vm_panic("global site at %p did not take its value", (void *)site);
        if (gc_is_young(v)) {
            jit_zone_young_add(&vm_jit_code_zone, jit_zone_find(&vm_jit_code_zone, site));
            vm_jit_stats.young_referrers_added++;
        }
    }
    if (v) return v;
    return exit_to_interpreter(VM_JIT_PENDING_UNKNOWN_GLOBAL, 0, (int)literal);
}

/* -- Blocks, outer variables, super sends, the interpreter's bytecodes -------- */

static uint64_t rt_push_block(uint64_t literal)
{
    Oop *fp = jit_cstate.st_fp;
    return vm_block_new(fp, vm_method_literals(fp[FRAME_METHOD])[literal]);
}

static uint64_t rt_outer_get(uint64_t operands)
{
    Oop ctx;
    int v = (int)(operands & 0xff);
    Oop *var = vm_outer_var(jit_cstate.st_fp, (int)(operands >> 8), v, &ctx);
    return var ? *var : obj_slots(ctx)[CTX_FIRST_VAR + v];
}

static uint64_t rt_outer_set(uint64_t operands, Oop value)
{
    Oop ctx;
    int v = (int)(operands & 0xff);
    Oop *var = vm_outer_var(jit_cstate.st_fp, (int)(operands >> 8), v, &ctx);
    if (var) *var = value;
    else gc_store(ctx, CTX_FIRST_VAR + (size_t)v, value);
    return 0;
}

/* A Double chain's answer out of the immediate window, with eden full
 * (vm/jit/double_inline.c): the allocation may collect. */
static uint64_t rt_box_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    vm_jit_stats.runtime_boxes++;
    return (uint64_t)vm_double_new(d);
}

/* A region's lazy temps whose values lie out of the immediate window
 * (vm/jit/double_cache.c): their bits and temps in the buffer, boxed into
 * the frame's slots one by one (each allocation may collect: the buffer is
 * C memory, and the slots written so far hold their boxes). */
static uint64_t vm_jit_lazy_buffer[2 * JIT_LAZY_BUFFER_TEMPS + 1]; /* + a chain's answer while they are written back */

static uint64_t rt_lazy_box(uint64_t mask)
{
    for (int i = 0; i < JIT_LAZY_BUFFER_TEMPS; i++) {
        if (!((mask >> i) & 1)) continue;
        double d;
        memcpy(&d, &vm_jit_lazy_buffer[i], sizeof d);
        int t = (int)vm_jit_lazy_buffer[JIT_LAZY_BUFFER_TEMPS + i];
        Oop box = vm_double_new(d);
        jit_cstate.st_fp[FRAME_FIRST_TEMP - t] = box;
        vm_jit_stats.runtime_boxes++;
    }
    return 0;
}

static uint64_t rt_widow(void)
{
    vm_context_widow(jit_cstate.st_fp);
    return 0;
}

/* The interpreter takes this frame over at bcpc (a non-local return, a
 * super send it must report as not understood). */
static uint64_t rt_interpret(uint64_t bcpc)
{
    return exit_to_interpreter(VM_JIT_PENDING_BYTECODE, 0, (int)bcpc);
}

/* An inlined body's deopt point (vm/jit/inline.c): the return address on
 * top of the stack is in its stub, `words` words (the callee's temps, then
 * its operand stack, top first) lie above the receiver and arguments. They
 * go aside, the word under the arguments gets the continuation (the
 * generic send's return address), and the interpreter activates the callee
 * there and continues it at bcpc. */
/* Deopts per inlined body, by the address of its range (stale after a
 * compaction moves it: then another body may be counted with it, which
 * only turns that one off sooner). A body that keeps deoptimizing costs an
 * exit to the interpreter each time, far more than the send: past
 * JIT_INLINE_DEOPT_LIMIT it is turned off (jit_inline_disable), and the
 * method is recompiled without it (tier_up: the old code's other bodies
 * and linked sites are the feedback, the one turned off is declined), since
 * a body turned off still runs its guard and then the send it jumps to.
 * Frames already in the old code finish there, this one included (it
 * continues in the interpreter and returns into the old code). */
#define JIT_INLINE_DEOPT_LIMIT 16
#define DEOPT_COUNTS 256
static struct {
    const uint8_t *range;
    uint32_t count;
} deopt_counts[DEOPT_COUNTS];

static void count_deopt(JitMethod *jm, uint32_t mcpc)
{
    uint32_t n = jit_method_inline_range_count(jm);
    const JitInlineRange *r = jit_method_inline_ranges(jm);
    uint32_t i = 0;
    while (i < n && !(r[i].start <= mcpc && mcpc < r[i].end)) i++;
    VM_ASSERT(i < n);
    const uint8_t *key = jit_method_at(jm, r[i].start);
    size_t h = ((uintptr_t)key >> 4) % DEOPT_COUNTS;
    if (deopt_counts[h].range != key) deopt_counts[h].range = key, deopt_counts[h].count = 0;
    if (++deopt_counts[h].count < JIT_INLINE_DEOPT_LIMIT) return;
    if (!jit_inline_disable(jm, i)) vm_panic("inlined body at %p did not take its jump", (void *)key);
    deopt_counts[h].count = 0;
    vm_jit_stats.inline_disabled++;
    if (vm_jit_compile_runtime.tier_up_after > 0 && /* --no-tier-up: no recompiles at all */
        !(jm->flags & (JIT_METHOD_F_DEOPT_RECOMPILED | JIT_METHOD_F_SUPERSEDED)) && vm_jit_method_of(jm->method) == jm)
        tier_up(jm, true);
}

static uint64_t rt_deopt(uint64_t bcpc, uint64_t words, uint8_t *cont)
{
    Oop *sp = jit_cstate.st_sp; /* [0] into the stub, [1] the top of the operand stack, [words] temp 0 */
    JitMethod *jm = jit_zone_find(&vm_jit_code_zone, (void *)sp[0]);
    int32_t scope = jm ? jit_method_inline_scope_at(jm, jit_method_offset(jm, (void *)sp[0])) : -1;
    if (scope < 0) vm_panic("a deopt from outside an inlined body (%p)", (void *)sp[0]);
    Oop m = jit_method_inline_scopes(jm)[scope].method;
    VM_ASSERT(words <= VM_JIT_DEOPT_MAX_WORDS && jit_method_contains(jm, cont));
    if (vm_jit_verify) jit_verify_deopt(m, (size_t)bcpc, (int)words);
    for (uint64_t i = 0; i < words; i++) vm_jit_deopt_values[i] = sp[words - i];
    vm_jit_deopt_count = (int)words;
    vm_jit_deopt_bcpc = (size_t)bcpc;
    sp[words] = (Oop)cont;
    jit_cstate.st_sp = sp + words;
    if (vm_jit_compile_runtime.deopt_countdown && *vm_jit_compile_runtime.deopt_countdown <= 0)
        *vm_jit_compile_runtime.deopt_countdown = vm_jit_deopt_every; /* the stress mode's: not counted */
    else
        count_deopt(jm, jit_method_offset(jm, (void *)sp[0]));
    vm_jit_stats.deopts++;
    return exit_to_interpreter(VM_JIT_PENDING_DEOPT, m, vm_method_nargs(m));
}

static uint64_t rt_super_send(uint64_t tag64)
{
    uint32_t tag = (uint32_t)tag64;
    int nargs = jit_sendsite_tag_nargs(tag);
    Oop method = jit_cstate.st_fp[FRAME_METHOD];
    Oop sel = vm_method_literals(method)[jit_sendsite_tag_selector(tag)];
    Oop super = vm_class_superclass(obj_slots(method)[METHOD_HOLDER]);
    Oop m = super == vm_nil ? 0 : vm_lookup_cached(vm_class_instance_index(super), sel);
    if (!m) {
        /* not understood: the interpreter re-runs the send and reports it */
        JitMapEntry e;
        JitMethod *jm = jit_zone_find(&vm_jit_code_zone, (void *)jit_cstate.st_sp[0]);
        if (!jm || !jit_map_bcpc_at(jit_method_map(jm), jit_method_offset(jm, (void *)jit_cstate.st_sp[0]), &e))
            vm_panic("a super send from unmapped machine code");
        return exit_to_interpreter(VM_JIT_PENDING_BYTECODE, 0, (int)e.bcpc);
    }
    JitMethod *jm = callable(m, nargs);
    if (jm) return unchecked(jm);
    return exit_to_interpreter(VM_JIT_PENDING_METHOD, m, nargs);
}

/* A block-evaluation stub found the closure's block not compiled (or not
 * taking that many arguments): count it toward compiling, else the
 * interpreter runs the primitive. */
static uint64_t rt_block_value_miss(uint64_t unused, JitMethod *stub)
{
    (void)unused;
    int nargs = stub->nargs;
    Oop value_method = stub->method;
    Oop bm = obj_slots(jit_cstate.st_sp[1 + nargs])[BLOCK_METHOD];
    if (vm_method_nargs(bm) == nargs) vm_counter_count_run(bm, vm_jit_threshold, compile_here, NULL);
    JitMethod *jm = vm_jit_method_of(bm);
    if (jm && jm->nargs == nargs) return unchecked(jm);
    return exit_to_interpreter(VM_JIT_PENDING_METHOD, value_method, nargs);
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

static void *alloc_or_compact(JitMethod *(*make)(JitZone *, const JitPicRuntime *, Oop, int), Oop sel, int nargs)
{
    JitMethod *p = make(&vm_jit_code_zone, &vm_jit_pic_runtime, sel, nargs);
    if (!p) {
        vm_interp_set_saved_frame(jit_cstate.st_sp + 1, jit_cstate.st_fp);
        vm_jit_compact(jit_cstate.st_sp);
        p = make(&vm_jit_code_zone, &vm_jit_pic_runtime, sel, nargs);
    }
    if (p) vm_jit_publish_load(p);
    return p;
}

/* -- Compiling ------------------------------------------------------------------------ */

intptr_t vm_jit_compile(Oop method, Oop *ra)
{
    char why[256];
    JitMethod *jm = jit_compile(&vm_jit_code_zone, &vm_jit_compile_runtime, method, why, sizeof why);
    if (!jm && !strcmp(why, JIT_COMPILE_ZONE_FULL)) {
        vm_jit_compact(ra);
        jm = jit_compile(&vm_jit_code_zone, &vm_jit_compile_runtime, method, why, sizeof why);
    }
    if (!jm) {
        vm_jit_stats.declined++;
        return -1;
    }
    vm_jit_stats.compiled++;
    vm_jit_stats.inlined += jit_method_inline_scope_count(jm);
    vm_jit_publish_load(jm);
    vm_counter_set(method, vm_counter_of_code(jm)); /* the caller stores it too */
    if (vm_jit_verify) jit_verify_method(&vm_jit_code_zone, vm_jit_compile_runtime.send, jm, "after compiling");
    return vm_counter_of_code(jm);
}

static JitPrimFast prim_fast(int index)
{
    const VmPrimEntry *e = &vm_prim_table[index];
    return jit_prim_fast_kind(e->class_name, e->class_side, e->selector);
}

static JitMethod *make_stub(Oop m, int index)
{
    if (vm_prim_table[index].special == SP_BLOCK_VALUE) return jit_compile_block_value(&vm_jit_code_zone, &vm_jit_compile_runtime, m);
    return jit_compile_primitive(&vm_jit_code_zone, &vm_jit_compile_runtime, m, index, prim_fast(index));
}

static JitMethod *compile_primitive_stub(Oop m, int index)
{
    JitMethod *jm = make_stub(m, index);
    if (!jm) {
        vm_interp_set_saved_frame(jit_cstate.st_sp + 1, jit_cstate.st_fp);
        vm_jit_compact(jit_cstate.st_sp);
        jm = make_stub(m, index);
    }
    if (!jm) return NULL;
    vm_jit_stats.stubs++;
    vm_jit_publish_load(jm);
    vm_counter_set(m, vm_counter_of_code(jm));
    return jm;
}

/* -- Start-up -------------------------------------------------------------------------- */

static intptr_t resume_bcpc(Oop saved, Oop *frame);

bool vm_jit_init(size_t code_bytes, char *err, size_t errlen)
{
    static const VmJitHooks hooks = { .compile = vm_jit_compile, .osr_entry = vm_jit_osr_entry, .resume_bcpc = resume_bcpc };
    JitZoneConfig cfg = {
        .zone_bytes = code_bytes,
        .trampoline_bytes = 8192, /* enilopmarts and the trampolines: each piece takes its bound until it is shrunk */
        .near = (const void *)vm_jit_init,
    };
    if (!jit_zone_init(&vm_jit_code_zone, &cfg, err, errlen)) return false;
    if (!jit_enter_init(&vm_jit_enter, &vm_jit_code_zone, err, errlen)) return false;
    vm_jit_zone_start = (uintptr_t)jit_zone_base(&vm_jit_code_zone);
    vm_jit_zone_end = (uintptr_t)jit_zone_end(&vm_jit_code_zone);
    vm_jit_prim_return = jit_enter_answer_trampoline(&vm_jit_code_zone, &prim_answer);
    vm_jit_compile_runtime.send = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_send_unlinked, 1);
    vm_jit_compile_runtime.method_abort = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_method_abort, 2);
    vm_jit_compile_runtime.entry_slow = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_entry_slow, 2);
    vm_jit_compile_runtime.primitive = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_primitive, 3);
    vm_jit_compile_runtime.safepoint = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_safepoint, 0);
    vm_jit_compile_runtime.barrier = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_barrier, 1);
    vm_jit_compile_runtime.global = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_global, 2);
    vm_jit_compile_runtime.push_block = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_push_block, 1);
    vm_jit_compile_runtime.outer_get = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_outer_get, 1);
    vm_jit_compile_runtime.outer_set = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_outer_set, 2);
    vm_jit_compile_runtime.widow = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_widow, 0);
    vm_jit_compile_runtime.box_double = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_box_double, 1);
    vm_jit_compile_runtime.lazy_box = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_lazy_box, 1);
    vm_jit_compile_runtime.lazy_buffer = vm_jit_lazy_buffer;
    vm_jit_compile_runtime.interpret = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_interpret, 1);
    vm_jit_compile_runtime.super_send = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_super_send, 1);
    vm_jit_compile_runtime.block_value_miss = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_block_value_miss, 2);
    vm_jit_compile_runtime.deopt = jit_enter_runtime_trampoline(&vm_jit_code_zone, (const void *)rt_deopt, 3);
    vm_jit_pic_runtime.closed_miss = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_closed_pic_miss, 2);
    vm_jit_pic_runtime.open_miss = jit_enter_dispatch_trampoline(&vm_jit_code_zone, (const void *)rt_open_pic_miss, 2);
    vm_jit_pic_runtime.lookup_cache = vm_lookup_cache;
    if (!vm_jit_prim_return || !vm_jit_compile_runtime.send || !vm_jit_compile_runtime.method_abort || !vm_jit_compile_runtime.entry_slow || !vm_jit_compile_runtime.primitive ||
        !vm_jit_compile_runtime.safepoint || !vm_jit_compile_runtime.barrier || !vm_jit_compile_runtime.global || !vm_jit_pic_runtime.closed_miss ||
        !vm_jit_compile_runtime.push_block || !vm_jit_compile_runtime.outer_get || !vm_jit_compile_runtime.outer_set || !vm_jit_compile_runtime.widow || !vm_jit_compile_runtime.interpret || !vm_jit_compile_runtime.box_double || !vm_jit_compile_runtime.lazy_box ||
        !vm_jit_compile_runtime.super_send || !vm_jit_compile_runtime.block_value_miss || !vm_jit_compile_runtime.deopt ||
        !vm_jit_pic_runtime.open_miss) {
        snprintf(err, errlen, "the code zone's trampoline area is too small");
        return false;
    }
    vm_jit_compile_runtime.site_accessor = site_accessor;
    vm_jit_compile_runtime.site_saw_double = vm_double_site_seen;
    vm_jit_compile_runtime.site_method = site_method;
    vm_jit_compile_runtime.globals_epoch = &vm_globals_epoch;
    vm_jit_compile_runtime.double_prims = &vm_double_special_prims;
    vm_jit_compile_runtime.double_divide_inline = &vm_double_divide_is_prim;
    vm_jit_compile_runtime.double_sqrt_inline = &vm_double_sqrt_is_prim;
    _Static_assert((int)JIT_BOOL_SEND == (int)VM_BOOL_UNKNOWN && (int)JIT_BOOL_TRUE == (int)VM_BOOL_TRUE &&
                       (int)JIT_BOOL_FALSE == (int)VM_BOOL_FALSE && (int)JIT_BOOL_ARG == (int)VM_BOOL_ARG,
                   "one encoding of the Boolean sends' answers");
    vm_jit_compile_runtime.bool_answers = (const uint8_t (*)[2])vm_special_bool_answers;
    vm_jit_compile_runtime.bool_selectors = vm_special_bool_selectors;
    vm_jit_compile_runtime.bool_nselectors = VM_SPECIAL_BOOL_SELS;
    vm_jit_compile_runtime.eden_top = &gc_eden_top;
    vm_jit_compile_runtime.eden_limit = &gc_eden_soft_limit;
    vm_jit_compile_runtime.bytes_allocated = &gc_stats.bytes_allocated;
    vm_jit_compile_runtime.collect_wanted = &gc_collect_wanted;
    if (!vm_probe_method_semaphores(vm_jit_compile_runtime.collect_wanted, &vm_jit_compile_runtime.method_probe_semaphores,
                                    err, errlen))
        return false;
    vm_jit_compile_runtime.old_start = &gc_old_start;
    vm_jit_compile_runtime.page = (void *const *)&vm_page;
    vm_jit_compile_runtime.array_at_inline = &vm_array_at_is_prim;
    vm_jit_compile_runtime.array_at_put_inline = &vm_array_at_put_is_prim;
    vm_jit_compile_runtime.array_length_inline = &vm_array_length_is_prim;
    vm_jit_compile_runtime.int_prims = &vm_int_special_prims;
    vm_jit_compile_runtime.nil_answers = vm_special_nil_answers;
    vm_jit_compile_runtime.int_answers = vm_special_int_answers;
    /* machine code tests these bits as 1 << 2k and 2 << 2k (vm/jit/int_inline.c) */
    _Static_assert(VM_SPECIAL_NIL_KNOWN(1) == 1u << 2 && VM_SPECIAL_NIL_TRUE(1) == 2u << 2, "nil table bits");
    _Static_assert(VM_SPECIAL_IDENTITY == 0x10, "identity bit");
    vm_jit_compile_runtime.nil_table = vm_special_nil_table;
    vm_jit_compile_runtime.nil_table_classes = VM_SPECIAL_NIL_TABLE_CLASSES;
    vm_jit_compile_runtime.headroom_words = VM_STACK_HEADROOM_WORDS;
    vm_jit_compile_runtime.nil = vm_nil;
    vm_jit_compile_runtime.true_obj = vm_true;
    vm_jit_compile_runtime.false_obj = vm_false;
    vm_jit_hooks = &hooks;
    vm_jit_enabled = true;
    return true;
}

void vm_jit_set_tier_up(int32_t after) { vm_jit_compile_runtime.tier_up_after = after; }

void vm_jit_set_inlining(int budget, int deopt_every)
{
    /* tier-up feeds inlining: on with it, as the options say */
    int32_t after = vm_options.no_tier_up || budget <= 0                          ? 0
                    : vm_options.tier_up_after > 0                                ? vm_options.tier_up_after
                    : vm_options.tier_up_after < 0 || VM_JIT_TIER_UP_BY_DEFAULT ? VM_JIT_TIER_UP_AFTER_DEFAULT
                                                                                  : 0;
    vm_jit_set_tier_up(after);
    static int64_t countdown;
    vm_jit_compile_runtime.inline_budget = budget;
    vm_jit_compile_runtime.whole_loops =
        vm_options.whole_loops > 0 || (vm_options.whole_loops == 0 && VM_JIT_WHOLE_LOOPS_BY_DEFAULT);
    vm_jit_compile_runtime.deopt_every = deopt_every;
    vm_jit_compile_runtime.whole_loop_counts = vm_jit_stats.whole_loops;
    vm_jit_deopt_every = deopt_every;
    countdown = deopt_every;
    vm_jit_compile_runtime.deopt_countdown = deopt_every > 0 ? &countdown : NULL;
}

uint8_t *vm_jit_osr_entry(Oop *fp, size_t jump_bcpc)
{
    JitMethod *jm = vm_jit_method_of(fp[FRAME_METHOD]);
    Oop *caller = (Oop *)fp[FRAME_SAVED_FP];
    if (!jm || !jit_method_is_compiled(jm) || !caller) return NULL;
    /* the back jump's safepoint: an inlined body's entries carry its callee's bcpcs */
    JitMapEntry e;
    JitMapIter it;
    bool found = false;
    jit_map_iter_init(&it, jit_method_map(jm));
    while (!found && jit_map_iter_next(&it, &e))
        found = e.bcpc == jump_bcpc && e.kind == JIT_MAP_BACKJUMP && jit_method_inline_scope_at(jm, e.mcpc) < 0;
    if (!found) return NULL;
    intptr_t fl = frame_flags(fp);
    int n = frame_nargs(fp);
    Oop saved = fp[FRAME_SAVED_IP];
    if (vm_jit_is_code_address(saved)) {
        /* a machine-code caller: its `ret` must find the arguments it pushed */
        if ((int)VM_FRAME_GET(fl, CALLER_NARGS) != n) return NULL;
    } else {
        /* an interpreted caller: resumed as when it sends to machine code */
        intptr_t rbcpc = oop_int(saved);
        if (!VM_FRAME_FITS(BCPC, rbcpc)) return NULL;
        caller[FRAME_FLAGS] =
            oop_from_int(frame_flags(caller) | VM_FRAME_PUT(PENDING_NARGS, n) | VM_FRAME_PUT(BCPC, rbcpc));
        fp[FRAME_SAVED_IP] = (Oop)vm_jit_enter.return_to_interpreter;
        fl |= VM_FRAME_PUT(CALLER_NARGS, n);
    }
    fp[FRAME_FLAGS] = oop_from_int(fl | FRAME_FLAG_MACHINE_CODE);
    jit_zone_touch(&vm_jit_code_zone, jm);
    vm_jit_stats.osr_entries++;
    return jit_method_at(jm, e.mcpc);
}

/* vm/interp/jitinterface.h's resume_bcpc hook: saved is an address in the zone. */
static intptr_t resume_bcpc(Oop saved, Oop *frame)
{
    if ((uint8_t *)saved == vm_jit_enter.return_to_interpreter)
        return VM_FRAME_GET(frame_flags(frame), BCPC);
    JitMethod *jm = jit_zone_find(&vm_jit_code_zone, (void *)saved);
    VM_ASSERT(jm != NULL);
    JitMapEntry e;
    bool found = jit_map_bcpc_at(jit_method_map(jm), (uint32_t)((uint8_t *)saved - (uint8_t *)jm), &e);
    VM_ASSERT(found);
    /* the map names the send; the frame resumes after it */
    const uint8_t *code = vm_method_bytecodes(jm->method);
    return (intptr_t)e.bcpc + vm_bytecode_length[code[e.bcpc]];
}

static bool collecting_full;

void vm_jit_visit_roots(GcVisitFn visit, void *ctx)
{
    if (!vm_jit_enabled) return;
    if (vm_jit_pending_oop) visit(&vm_jit_pending_oop, ctx);
    for (int i = 0; i < vm_jit_deopt_count; i++) visit(&vm_jit_deopt_values[i], ctx);
    /* methods' heap methods and PICs' selectors; in a full GC every
     * literal in machine code, in a scavenge those of the young referrers
     * (no other code holds a young object) */
    for (JitMethod *m = jit_zone_first(&vm_jit_code_zone); m; m = jit_zone_next(&vm_jit_code_zone, m)) {
        if (m->kind == JIT_KIND_TRAMPOLINE) continue;
        if (collecting_full) jit_method_visit_oops(m, visit, ctx);
        else visit(&m->method, ctx);
    }
    if (!collecting_full)
        for (uint32_t i = 0; i < jit_zone_young_count(&vm_jit_code_zone); i++) {
            JitMethod *m = jit_zone_young_at(&vm_jit_code_zone, i);
            for (uint32_t k = 0; k < m->lit_count; k++) {
                Oop old = jit_method_lit_get(m, k), v = old;
                visit(&v, ctx);
                if (v != old) jit_method_lit_set(m, k, v);
            }
        }
}

static bool holds_young(JitMethod *m, void *ctx)
{
    (void)ctx;
    for (uint32_t k = 0; k < m->lit_count; k++)
        if (gc_is_young(jit_method_lit_get(m, k))) return true;
    return false;
}

void vm_jit_before_collect(bool full) { collecting_full = full; }

void vm_jit_after_collect(bool full)
{
    (void)full;
    if (vm_jit_enabled) jit_zone_young_prune(&vm_jit_code_zone, holds_young, NULL);
    collecting_full = false;
}

JitMethod *vm_jit_compile_now(Oop m, char *why, size_t whylen)
{
    JitMethod *jm = vm_jit_method_of(m);
    if (jm) return jm;
    intptr_t p = oop_int(obj_slots(m)[METHOD_PRIMITIVE]);
    if (p != 0) {
        if (p <= 1 || vm_prim_table[p].special != SP_NONE) {
            snprintf(why, whylen, "%s>>%s is a primitive the interpreter runs itself", vm_prim_table[p].class_name,
                     vm_prim_table[p].selector);
            return NULL;
        }
        jm = jit_compile_primitive(&vm_jit_code_zone, &vm_jit_compile_runtime, m, (int)p, prim_fast((int)p));
        if (jm) vm_counter_set(m, vm_counter_of_code(jm));
    } else {
        jm = jit_compile(&vm_jit_code_zone, &vm_jit_compile_runtime, m, why, whylen);
        if (jm) vm_counter_set(m, vm_counter_of_code(jm));
    }
    if (!jm && p) snprintf(why, whylen, "%s", JIT_COMPILE_ZONE_FULL);
    if (jm) vm_jit_publish_load(jm);
    return jm;
}
