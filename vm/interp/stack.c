/*
 * vm/interp/stack.c — stack pages and the context-to-stack mapping.
 */
#include "vm/interp/stack.h"

#include "vm/interp/jitinterface.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

StackPage *vm_page;
static StackPage *pages;
static int npages;
static StackPage *oldest;

bool vm_stack_init(int n, char *err, size_t errlen)
{
    if (n < VM_STACK_PAGES_MIN) n = VM_STACK_PAGES_MIN;
    size_t words = VM_STACK_PAGE_BYTES / sizeof(Oop);
    Oop *mem = mmap(NULL, (size_t)n * VM_STACK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pages = calloc((size_t)n, sizeof *pages);
    if (mem == MAP_FAILED || !pages) {
        snprintf(err, errlen, "cannot allocate %d stack pages", n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        pages[i].base = mem + (size_t)i * words;
        pages[i].top = pages[i].base + words;
    }
    npages = n;
    return true;
}

const StackPage *vm_stack_pages(int *n)
{
    *n = npages;
    return pages;
}

static StackPage *free_page(void)
{
    for (int i = 0; i < npages; i++)
        if (!pages[i].in_use) return &pages[i];
    return NULL;
}

static void link_new(StackPage *p)
{
    p->in_use = true;
    p->older = vm_page;
    p->newer = NULL;
    p->caller_fp = p->caller_sp = p->bottom_fp = NULL;
    p->caller_context = 0;
    p->depth_below = 0;
    if (vm_page) vm_page->newer = p;
    if (!oldest) oldest = p;
    vm_page = p;
}

static void unlink_page(StackPage *p)
{
    if (p->older) p->older->newer = p->newer;
    if (p->newer) p->newer->older = p->older;
    if (oldest == p) oldest = p->newer;
    if (vm_page == p) vm_page = p->older;
    p->in_use = false;
    p->older = p->newer = NULL;
}

StackPage *vm_stack_first_page(void)
{
    StackPage *p = free_page();
    VM_ASSERT(p != NULL);
    link_new(p);
    return p;
}

/* -- Contexts -------------------------------------------------------------- */

static size_t context_slots(Oop method)
{
    return CTX_FIRST_VAR + (size_t)vm_method_nargs(method) + (size_t)vm_method_ntemps(method) +
           (size_t)vm_method_max_stack(method) + 1;
}

Oop vm_context_marry(Oop *fp)
{
    if (frame_has_context(fp)) return fp[FRAME_CONTEXT];
    Oop method = fp[FRAME_METHOD];
    Oop ctx = gc_alloc(CLASS_INDEX_CONTEXT, FMT_POINTERS, context_slots(method));
    if (!ctx) vm_out_of_memory("context");
    Oop *s = obj_slots(ctx);
    s[CTX_FRAME] = ctx_tag_frame(fp);
    s[CTX_DEPTH] = oop_from_int(0);
    s[CTX_METHOD] = method;
    s[CTX_CLOSURE] = *frame_receiver_slot(fp);
    s[CTX_RECEIVER] = fp[FRAME_RECEIVER];
    fp[FRAME_CONTEXT] = ctx;
    fp[FRAME_FLAGS] = oop_from_int(frame_flags(fp) | FRAME_FLAG_CONTEXT);
    return ctx;
}

static void copy_vars_to_context(Oop *fp, Oop ctx)
{
    int nargs = frame_nargs(fp), nvars = nargs + frame_ntemps(fp);
    for (int v = 0; v < nvars; v++) gc_store(ctx, CTX_FIRST_VAR + (size_t)v, *frame_var(fp, nargs, v));
}

Oop vm_block_new(Oop *fp, Oop m)
{
    Oop ctx = vm_context_marry(fp);
    int bn = vm_method_nargs(m);
    Oop closure = gc_alloc(CLASS_INDEX_BLOCK1 + (uint32_t)(bn > 2 ? 2 : bn), FMT_POINTERS, BLOCK_SLOTS);
    if (!closure) vm_out_of_memory("block");
    obj_slots(closure)[BLOCK_OUTER_CONTEXT] = ctx;
    obj_slots(closure)[BLOCK_METHOD] = m;
    obj_slots(closure)[BLOCK_RECEIVER] = fp[FRAME_RECEIVER];
    return closure;
}

Oop *vm_outer_var(Oop *fp, int level, int v, Oop *ctx_out)
{
    Oop ctx = obj_slots(fp[2 + frame_nargs(fp)])[BLOCK_OUTER_CONTEXT];
    for (int l = level; l > 1; l--) ctx = obj_slots(obj_slots(ctx)[CTX_CLOSURE])[BLOCK_OUTER_CONTEXT];
    Oop *f = ctx_frame(ctx);
    *ctx_out = ctx;
    return f ? frame_var(f, frame_nargs(f), v) : NULL;
}

void vm_context_widow(Oop *fp)
{
    Oop ctx = fp[FRAME_CONTEXT];
    copy_vars_to_context(fp, ctx);
    obj_slots(ctx)[CTX_FRAME] = vm_nil;
    obj_slots(ctx)[CTX_PC] = vm_nil;
}

/* Turns the frames of page p into contexts. top_fp is its newest frame,
 * top_sp that frame's stack pointer, top_bcpc where it is suspended. */
static Oop divorce_page(StackPage *p, Oop *top_fp, Oop *top_sp, intptr_t top_bcpc)
{
    size_t cap = 64, n = 0;
    Oop **frames = malloc(cap * sizeof *frames);
    if (!frames) vm_out_of_memory("divorce");
    for (Oop *f = top_fp; f; f = (Oop *)f[FRAME_SAVED_FP]) {
        if (n == cap) {
            cap *= 2;
            frames = realloc(frames, cap * sizeof *frames);
            if (!frames) vm_out_of_memory("divorce");
        }
        frames[n++] = f;
    }
    Oop sender = p->caller_context ? p->caller_context : vm_nil;
    for (size_t i = n; i-- > 0;) { /* bottom (oldest) frame first */
        Oop *f = frames[i];
        Oop ctx = vm_context_marry(f);
        Oop *sp = i == 0 ? top_sp : frames[i - 1] + 3 + frame_nargs(frames[i - 1]);
        intptr_t bcpc = i == 0 ? top_bcpc : vm_jit_resume_bcpc(frames[i - 1][FRAME_SAVED_IP], f);
        Oop *stack_base = frame_stack_base(f);
        size_t depth = (size_t)(stack_base - sp);
        size_t nvars = (size_t)frame_nargs(f) + (size_t)frame_ntemps(f);
        VM_ASSERT(CTX_FIRST_VAR + nvars + depth <= obj_num_slots(ctx));
        copy_vars_to_context(f, ctx);
        for (size_t k = 0; k < depth; k++) gc_store(ctx, CTX_FIRST_VAR + nvars + k, stack_base[-1 - (intptr_t)k]);
        Oop *s = obj_slots(ctx);
        s[CTX_FRAME] = vm_nil;
        s[CTX_PC] = oop_from_int(bcpc);
        s[CTX_DEPTH] = oop_from_int((intptr_t)depth);
        gc_store(ctx, CTX_SENDER, sender);
        sender = ctx;
    }
    free(frames);
    vm_counters->page_divorces++;
    return sender; /* the context of the top frame */
}

size_t vm_stack_depth(Oop *top_fp)
{
    size_t n = vm_page->depth_below;
    for (Oop *f = top_fp; f; f = (Oop *)f[FRAME_SAVED_FP]) n++;
    return n;
}

StackPage *vm_stack_overflow(Oop *top_fp, Oop *top_sp, size_t depth)
{
    vm_counters->stack_overflows++;
    StackPage *p = free_page();
    if (!p) {
        /* Divorce the oldest page; the minimum of two pages guarantees it
         * is not the current one. */
        StackPage *o = oldest;
        VM_ASSERT(o != vm_page && o->newer != NULL);
        StackPage *nw = o->newer;
        Oop ctx = divorce_page(o, nw->caller_fp, nw->caller_sp,
                               vm_jit_resume_bcpc(nw->bottom_fp[FRAME_SAVED_IP], nw->caller_fp));
        nw->caller_context = ctx;
        nw->caller_fp = nw->caller_sp = NULL;
        unlink_page(o);
        p = o;
    }
    /* divorcing the oldest page moved frames into contexts: none changed depth */
    link_new(p);
    p->caller_fp = top_fp;
    p->caller_sp = top_sp;
    p->depth_below = depth;
    return p;
}

void vm_stack_pop_page(void)
{
    StackPage *p = vm_page;
    unlink_page(p);
}

void vm_stack_release_newer(StackPage *keep)
{
    while (vm_page != keep) unlink_page(vm_page);
}

Oop *vm_context_resume(Oop ctx, Oop result, Oop **sp_out, size_t *bcpc_out)
{
    StackPage *p = vm_page;
    Oop *s = obj_slots(ctx);
    Oop method = s[CTX_METHOD];
    int nargs = vm_method_nargs(method), ntemps = vm_method_ntemps(method);
    size_t depth = (size_t)oop_int(s[CTX_DEPTH]);
    Oop *sp = p->top;
    *--sp = s[CTX_CLOSURE];
    for (int v = 0; v < nargs; v++) *--sp = s[CTX_FIRST_VAR + v];
    sp -= 2;
    Oop *fp = sp;
    fp[FRAME_SAVED_IP] = oop_from_int(0);
    fp[FRAME_SAVED_FP] = 0;
    fp[FRAME_METHOD] = method;
    fp[FRAME_CONTEXT] = ctx;
    fp[FRAME_FLAGS] = oop_from_int(FRAME_FLAGS_MAKE(nargs, ntemps, vm_method_is_block(method)) | FRAME_FLAG_CONTEXT);
    fp[FRAME_RECEIVER] = s[CTX_RECEIVER];
    sp = fp + FRAME_RECEIVER;
    for (int t = 0; t < ntemps; t++) *--sp = s[CTX_FIRST_VAR + nargs + t];
    for (size_t k = 0; k < depth; k++) *--sp = s[CTX_FIRST_VAR + (size_t)(nargs + ntemps) + k];
    *--sp = result;
    p->bottom_fp = fp;
    p->caller_fp = p->caller_sp = NULL;
    p->caller_context = s[CTX_SENDER] == vm_nil ? 0 : s[CTX_SENDER];
    VM_ASSERT(p->depth_below > 0);
    p->depth_below--; /* ctx left the chain below for the page */
    *bcpc_out = (size_t)oop_int(s[CTX_PC]);
    s[CTX_FRAME] = ctx_tag_frame(fp);
    s[CTX_PC] = vm_nil;
    s[CTX_SENDER] = vm_nil;
    s[CTX_DEPTH] = oop_from_int(0);
    vm_contexts_resumed++;
    *sp_out = sp;
    return fp;
}

/* -- Roots and walking ------------------------------------------------------ */

static void visit_page(StackPage *p, Oop *sp, Oop *fp, GcVisitFn visit, void *ctx)
{
    Oop *slot = sp;
    for (Oop *f = fp; f; f = (Oop *)f[FRAME_SAVED_FP]) {
        for (; slot < f; slot++) visit(slot, ctx);
        slot = f + 2; /* skip the saved fp and the saved ip / return address */
    }
    for (; slot < p->top; slot++) visit(slot, ctx);
    if (p->caller_context) visit(&p->caller_context, ctx);
}

void vm_stack_visit_roots(GcVisitFn visit, void *ctx, Oop *sp, Oop *fp)
{
    StackPage *p = vm_page;
    if (!p || !fp) return;
    visit_page(p, sp, fp, visit, ctx);
    for (; p->older; p = p->older) visit_page(p->older, p->caller_sp, p->caller_fp, visit, ctx);
}

void vm_stack_visit_saved_ips(Oop *fp, void (*fn)(Oop *slot, void *ctx), void *ctx)
{
    StackPage *p = vm_page;
    while (fp) {
        fn(&fp[FRAME_SAVED_IP], ctx);
        Oop *caller = (Oop *)fp[FRAME_SAVED_FP];
        if (!caller && p) {
            caller = p->caller_fp;
            p = p->older;
        }
        fp = caller;
    }
}

void vm_stack_walk(Oop *fp, size_t bcpc, VmFrameFn fn, void *ctx)
{
    StackPage *p = vm_page;
    intptr_t pc = (intptr_t)bcpc;
    while (fp) {
        fn(fp[FRAME_METHOD], (size_t)pc, ctx);
        Oop *caller = (Oop *)fp[FRAME_SAVED_FP];
        Oop *resumer = caller ? caller : (p ? p->caller_fp : NULL);
        pc = resumer ? vm_jit_resume_bcpc(fp[FRAME_SAVED_IP], resumer) : 0;
        if (!caller && p) {
            Oop c = p->caller_context;
            caller = p->caller_fp;
            p = p->older;
            if (!caller) {
                for (; c && c != vm_nil; c = obj_slots(c)[CTX_SENDER])
                    fn(obj_slots(c)[CTX_METHOD], (size_t)oop_int(obj_slots(c)[CTX_PC]), ctx);
                return;
            }
        }
        fp = caller;
    }
}
