/*
 * vm/interp/stack.h — the stack zone: pages, context marriage, divorce, resumption.
 *
 * Pages in use form a chain from the oldest to the current page. A frame
 * that does not fit the current page continues on a fresh page; when none
 * is free the oldest page is divorced (its frames become Contexts in the
 * heap), which is how 1,000,000-deep recursion runs in a few pages (with
 * --max-stack-depth raised past its default of VM_MAX_STACK_DEPTH_DEFAULT).
 * See vm/model/frame.h for the frame and context layouts.
 *
 * Nothing here collects; it allocates (contexts) and reports exhaustion
 * through vm_out_of_memory.
 *
 * Who may call: vm/interp/interp.c (and the backtrace printer).
 */
#ifndef VM_STACK_H
#define VM_STACK_H

#include "gc/heap.h"
#include "vm/model/frame.h"

extern StackPage *vm_page; /* current page */

bool vm_stack_init(int npages, char *err, size_t errlen);

/* How many frames deep top_fp, the newest frame of the current page, is
 * (1 for the first frame). It walks that page's frames only: every page
 * keeps how many frames are older than its first (depth_below). The
 * interpreter asks when a frame does not fit the current page, so the
 * depth limit (--max-stack-depth) costs nothing on ordinary sends, and
 * holds for machine code frames too, whose overflows the interpreter
 * handles. */
size_t vm_stack_depth(Oop *top_fp);
/* A fresh page for a frame that did not fit. top_fp/top_sp describe the
 * current page's top frame (the caller), in case the current page's
 * predecessor chain must be divorced; depth is vm_stack_depth(top_fp). The
 * new page becomes current and records top_fp/top_sp as its caller. */
StackPage *vm_stack_overflow(Oop *top_fp, Oop *top_sp, size_t depth);
/* The current page's bottom frame returned to a frame on an older page:
 * release the current page and make the older one current. */
void vm_stack_pop_page(void);
/* Release every page newer than `keep` (non-local return unwinding). */
void vm_stack_release_newer(StackPage *keep);
/* The page descriptors (n of them) whose pages are one mapping from
 * pages[0].base, page i at base + i * VM_STACK_PAGE_BYTES: what a profiler
 * walks frames across pages with (vm/interp/walkfacts.c). */
const StackPage *vm_stack_pages(int *n);
/* First page for the first frame. */
StackPage *vm_stack_first_page(void);

Oop vm_context_marry(Oop *fp);  /* fp's context, creating it if needed */
void vm_context_widow(Oop *fp); /* fp returns: copy its variables into its context */
/* A closure of block method m made in frame fp (married to its context). */
Oop vm_block_new(Oop *fp, Oop m);
/* Outer variable v, `level` contexts out from the block running in fp
 * (PUSH_OUTER's operands): its slot in a live frame, or NULL with *ctx set
 * to the widowed context that holds it at CTX_FIRST_VAR + v. */
Oop *vm_outer_var(Oop *fp, int level, int v, Oop *ctx);
/* Copies a divorced context back onto the (empty) current page and pushes
 * result on its operand stack. Answers the new fp; *sp_out and *bcpc_out
 * say where to continue. ctx must head the chain the page's depth_below
 * counts (a non-local return drops the contexts it unwinds from it first). */
Oop *vm_context_resume(Oop ctx, Oop result, Oop **sp_out, size_t *bcpc_out);

/* GC roots of every page in use; sp/fp are the interpreter's registers. */
void vm_stack_visit_roots(GcVisitFn visit, void *ctx, Oop *sp, Oop *fp);

/* Calls fn on the saved-ip slot (fp[1]: a tagged bcpc or a return address
 * into machine code) of every frame on the stack pages, from fp down. */
void vm_stack_visit_saved_ips(Oop *fp, void (*fn)(Oop *slot, void *ctx), void *ctx);

/* Walks frames and then divorced contexts from the newest: fn(method, bcpc, ctx). */
typedef void (*VmFrameFn)(Oop method, size_t bcpc, void *ctx);
void vm_stack_walk(Oop *fp, size_t bcpc, VmFrameFn fn, void *ctx);

#endif
