/*
 * report/stackcapture.c — proto/stackabi.h's walk, for user-space
 * walkers (report/stackcapture.h).
 */
#include "report/stackcapture.h"

#include <string.h>

void report_stackcapture_reset(StackReader *r, StackReadFn read, void *ctx)
{
    r->read = read;
    r->ctx = ctx;
    memset(r->tag, 0, sizeof r->tag);
    r->next = 0;
}

static bool rd(StackReader *r, uint64_t addr, uint64_t *out)
{
    if (addr & 7)
        return false; /* every word the walk reads is aligned: anything else is garbage */
    uint64_t block = addr & ~(uint64_t)(STACKCAPTURE_BLOCK - 1);
    unsigned i;
    for (i = 0; i < STACKCAPTURE_BLOCKS; i++)
        if (r->tag[i] == block + 1)
            break;
    if (i == STACKCAPTURE_BLOCKS) {
        i = r->next;
        r->next = (r->next + 1) % STACKCAPTURE_BLOCKS;
        r->tag[i] = 0;
        r->reads++;
        if (!r->read(r->ctx, block, r->data[i], STACKCAPTURE_BLOCK))
            return false;
        r->tag[i] = block + 1;
    }
    memcpy(out, r->data[i] + (addr - block), 8);
    return true;
}

typedef struct Walk {
    StackReader *r;
    const ProfWalkFacts *f;
    ProfRawStack *raw;
} Walk;

static bool word(Walk *w, uint64_t addr, uint64_t *out)
{
    if (rd(w->r, addr, out))
        return true;
    w->raw->flags |= PROF_RAW_F_FAULT;
    return false;
}

static bool in_zone(const ProfWalkFacts *f, uint64_t a) { return a >= f->zone_start && a < f->zone_end; }
static bool in_interp(const ProfWalkFacts *f, uint64_t a) { return a >= f->interp_start && a < f->interp_end; }
static bool in_stack(const ProfWalkFacts *f, uint64_t a)
{
    return a >= f->stack_base && a < f->stack_base + f->page_bytes * f->npages;
}

/* One frame-pointer step: the caller's return address and frame pointer.
 * A native walk that meets an unreadable word just ends (as perf's does):
 * no PROF_RAW_F_FAULT, which speaks of the Smalltalk chain. */
static bool fp_step(Walk *w, uint64_t *bp, uint64_t *ret)
{
    uint64_t nbp;
    if (*bp == 0 || (*bp & 7) || !rd(w->r, *bp + 8, ret) || !rd(w->r, *bp, &nbp) || *ret == 0)
        return false;
    if (nbp != 0 && nbp <= *bp)
        nbp = 0; /* frames live at higher addresses than their callees: anything else ends the walk */
    *bp = nbp;
    return true;
}

/* root[] from (pc, bp): pc, then the frame-pointer chain. */
static void walk_root(Walk *w, uint64_t pc, uint64_t bp)
{
    ProfRawStack *raw = w->raw;
    raw->root[raw->nroot++] = pc;
    uint64_t ret;
    while (fp_step(w, &bp, &ret)) {
        if (raw->nroot == PROF_RAW_MAX_ROOT) {
            raw->flags |= PROF_RAW_F_ROOT_TRUNCATED;
            return;
        }
        raw->root[raw->nroot++] = ret;
    }
}

/* The bytecodes of method m, or 0 (flag BAD_FRAME) when m is no method. */
static uint64_t bytes_of(Walk *w, uint64_t m)
{
    const ProfWalkFacts *f = w->f;
    uint64_t hdr, mh;
    if (m == 0 || (m & 7) || !word(w, m, &hdr) || (hdr & f->class_index_mask) != f->method_class_index ||
        !word(w, m + 8, &mh)) {
        w->raw->flags |= PROF_RAW_F_BAD_FRAME;
        return 0;
    }
    return m + 8 + 8 * ((mh >> 1) & f->method_slots_mask);
}

static bool push_st(Walk *w, uint64_t v)
{
    ProfRawStack *raw = w->raw;
    if (raw->nst == PROF_RAW_MAX_ST) {
        raw->flags |= PROF_RAW_F_ST_TRUNCATED;
        return false;
    }
    raw->st[raw->nst++] = v;
    return true;
}

static uint64_t before(uint64_t base, uint64_t bcpc) { return base + (bcpc ? bcpc - 1 : 0); }

static void walk_contexts(Walk *w, uint64_t ctx)
{
    const ProfWalkFacts *f = w->f;
    while (ctx != 0 && ctx != f->nil) {
        uint64_t pc, m, sender;
        if (!word(w, ctx + 8 + 8ull * f->ctx_pc_slot, &pc) || !word(w, ctx + 8 + 8ull * f->ctx_method_slot, &m) ||
            !word(w, ctx + 8 + 8ull * f->ctx_sender_slot, &sender))
            return;
        uint64_t b = bytes_of(w, m);
        if (!b || !(pc & 1) || !push_st(w, PROF_RAW_BYTECODE | before(b, pc >> 1)))
            return;
        ctx = sender;
    }
}

/* The callers of the frame at fp, innermost first, into st[]. */
static void walk_smalltalk(Walk *w, uint64_t fp)
{
    const ProfWalkFacts *f = w->f;
    for (;;) {
        if (!in_stack(f, fp)) {
            w->raw->flags |= PROF_RAW_F_BAD_FRAME;
            return;
        }
        uint64_t saved, link;
        if (!word(w, fp + 8, &saved) || !word(w, fp, &link))
            return;
        if (link == 0) {
            uint64_t page = f->pages_addr + f->page_stride * ((fp - f->stack_base) / f->page_bytes);
            if (!word(w, page + f->page_caller_fp, &link))
                return;
            if (link == 0) {
                uint64_t ctx;
                if (word(w, page + f->page_caller_context, &ctx) && ctx)
                    walk_contexts(w, ctx);
                return; /* no context: the first frame, called from C */
            }
        }
        /* a return address may be odd: the zone decides first, as the VM's
         * own vm_jit_is_code_address does */
        uint64_t where;
        if (saved != 0 && saved == f->return_to_interpreter) {
            uint64_t m, b, fl;
            if (!word(w, link - 8, &m) || !(b = bytes_of(w, m)) || !word(w, link - f->frame_flags_offset, &fl))
                return;
            where = PROF_RAW_BYTECODE | before(b, ((fl >> 1) >> f->flags_bcpc_shift) & f->flags_bcpc_mask);
        } else if (in_zone(f, saved)) {
            where = saved - 1;
        } else if (saved & 1) {
            uint64_t m, b;
            if (!word(w, link - 8, &m) || !(b = bytes_of(w, m)))
                return;
            where = PROF_RAW_BYTECODE | before(b, saved >> 1);
        } else {
            w->raw->flags |= PROF_RAW_F_BAD_FRAME;
            return;
        }
        if (!push_st(w, where))
            return;
        fp = link;
    }
}

/* leaf[] from (ip, bp) until a return address for which stop() holds;
 * answers that return address (and leaves bp at its frame) or 0. With
 * hi != 0 only frames at lo <= bp < hi are followed: the C that the
 * Smalltalk side called lies between the sampled sp and the C frame it was
 * called from. A walk with a stop that never meets it keeps ip alone: a
 * leaf without a frame pointer (GMP's assembly) may hold anything in rbp,
 * and only a chain that ends where the Smalltalk side called C is known to
 * be frames. */
static uint64_t walk_leaf(Walk *w, uint64_t ip, uint64_t *bp, bool (*stop)(const ProfWalkFacts *, uint64_t),
                          uint64_t lo, uint64_t hi)
{
    ProfRawStack *raw = w->raw;
    uint16_t first = raw->nleaf;
    raw->leaf[raw->nleaf++] = ip;
    uint64_t ret;
    while ((hi == 0 || (*bp >= lo && *bp < hi)) && fp_step(w, bp, &ret)) {
        if (stop && stop(w->f, ret))
            return ret;
        if (raw->nleaf == PROF_RAW_MAX_LEAF) {
            raw->flags |= PROF_RAW_F_LEAF_TRUNCATED;
            break;
        }
        raw->leaf[raw->nleaf++] = ret;
    }
    if (stop) {
        raw->nleaf = first + 1;
        raw->flags &= ~PROF_RAW_F_LEAF_TRUNCATED;
    }
    return 0;
}

static void top_words(Walk *w)
{
    for (int i = 0; i < PROF_RAW_TOP_WORDS; i++)
        if (!rd(w->r, w->raw->top_sp + 8ull * (unsigned)i, &w->raw->top_words[i]))
            w->raw->top_words[i] = 0; /* the top of a page: no more words above */
}

static void machine(Walk *w, const StackRegs *regs)
{
    const ProfWalkFacts *f = w->f;
    ProfRawStack *raw = w->raw;
    bool anchors = f->flags & PROF_WALK_F_ANCHORS;
    uint64_t c_sp = 0, ret, bp;
    if (!word(w, f->cstate_addr + PROF_CSTATE_C_SP, &c_sp))
        c_sp = 0;
    if (in_zone(f, regs->ip) && in_stack(f, regs->sp)) {
        raw->mode = PROF_RAW_MACHINE;
        raw->top_pc = regs->ip;
        raw->top_sp = regs->sp;
        raw->top_fp = regs->bp;
    } else {
        /* C called through a trampoline, or the trampoline itself on the C
         * stack (machine code proper always runs on a stack page): the
         * Smalltalk side is where the trampoline saved it */
        bp = regs->bp;
        uint64_t r = 0;
        if (in_zone(f, regs->ip)) {
            raw->leaf[raw->nleaf++] = regs->ip;
            r = regs->ip;
        } else if (in_interp(f, regs->ip)) {
            raw->leaf[raw->nleaf++] = regs->ip; /* the interpreter taking its registers back */
        } else {
            r = walk_leaf(w, regs->ip, &bp, in_zone, regs->sp, c_sp ? c_sp : 1);
        }
        /* the anchor: st_sp is non-zero exactly while C called through a
         * trampoline runs, whatever the native walk reached */
        uint64_t st_sp = 0;
        bool have = word(w, f->cstate_addr + PROF_CSTATE_ST_SP, &st_sp) && (anchors ? st_sp != 0 : r != 0);
        if (!have || !word(w, st_sp, &raw->top_pc) || !word(w, f->cstate_addr + PROF_CSTATE_ST_FP, &raw->top_fp)) {
            /* entering or leaving machine code: the registers belong to neither side */
            raw->mode = PROF_RAW_UNKNOWN;
            raw->why = PROF_RAW_WHY_SWITCH;
        } else {
            raw->mode = PROF_RAW_CSTATE;
            raw->top_sp = st_sp + 8;
        }
    }
    if (raw->mode != PROF_RAW_UNKNOWN) {
        top_words(w);
        uint64_t m, fl, hdr, mh;
        if (in_stack(f, raw->top_fp) && rd(w->r, raw->top_fp - 8, &m) && rd(w->r, raw->top_fp - f->frame_flags_offset, &fl) &&
            m && !(m & 7) && rd(w->r, m, &hdr) && (hdr & f->class_index_mask) == f->method_class_index &&
            rd(w->r, m + 8, &mh))
            raw->top_bytes = PROF_RAW_BYTECODE | before(m + 8 + 8 * ((mh >> 1) & f->method_slots_mask),
                                                        ((fl >> 1) >> f->flags_bcpc_shift) & f->flags_bcpc_mask);
        walk_smalltalk(w, raw->top_fp);
    }
    if (c_sp && word(w, c_sp + PROF_CSTATE_C_RET, &ret) && word(w, c_sp + PROF_CSTATE_C_BP, &bp))
        walk_root(w, ret, bp);
}

static void interp(Walk *w, const StackRegs *regs)
{
    const ProfWalkFacts *f = w->f;
    ProfRawStack *raw = w->raw;
    uint64_t fp = regs->r14, ipv = regs->r15, anchor;
    /* while a primitive runs, the interpreter's anchor names its frame:
     * code the primitive calls (a library) may use r14/r15 */
    if ((f->flags & PROF_WALK_F_ANCHORS) && word(w, f->state_addr + PROF_STATE_PRIM_FP, &anchor) && anchor != 0 &&
        word(w, f->state_addr + PROF_STATE_PRIM_IP, &ipv))
        fp = anchor;
    if (fp == 0) {
        /* frames are being unwound or copied (vm/interp/interp.c's FRAMES_UNSTABLE) */
        raw->mode = PROF_RAW_UNKNOWN;
        raw->why = PROF_RAW_WHY_SWITCH;
    } else {
        raw->mode = PROF_RAW_INTERP;
        raw->top_pc = ipv;
        raw->top_fp = fp;
        uint64_t m;
        if (in_stack(f, fp) && word(w, fp - 8, &m))
            raw->top_bytes = bytes_of(w, m);
        else
            raw->flags |= PROF_RAW_F_BAD_FRAME;
    }
    uint64_t bp = regs->bp, root_pc, ibp;
    if (!word(w, f->state_addr + PROF_STATE_INTERP_BP, &ibp))
        ibp = 0;
    if (in_interp(f, regs->ip)) {
        root_pc = regs->ip;
    } else {
        root_pc = walk_leaf(w, regs->ip, &bp, in_interp, regs->sp, ibp ? ibp : 1);
        if (root_pc == 0) {
            /* a leaf without a frame pointer, called by the interpreter or
             * by C it called: the interpreter's own frame is known, the
             * return address into it is not */
            raw->flags |= PROF_RAW_F_LEAF_GUESSLESS;
            root_pc = f->interp_start;
            bp = ibp;
        }
    }
    if (raw->mode == PROF_RAW_INTERP && !(raw->flags & PROF_RAW_F_BAD_FRAME))
        walk_smalltalk(w, raw->top_fp);
    walk_root(w, root_pc, bp);
}

void report_stackcapture(StackReader *r, const ProfWalkFacts *f, const StackRegs *regs, ProfRawStack *raw)
{
    raw->mode = PROF_RAW_NATIVE;
    raw->flags = raw->why = 0;
    raw->nkernel = raw->nleaf = raw->nst = raw->nroot = 0;
    raw->top_pc = raw->top_sp = raw->top_fp = raw->top_bytes = 0;
    memset(raw->top_words, 0, sizeof raw->top_words);
    Walk w = {r, f, raw};
    uint64_t mode = PROF_STATE_NONE;
    if (!f)
        raw->flags |= PROF_RAW_F_NO_FACTS;
    if (!f || !word(&w, f->state_addr + PROF_STATE_MODE, &mode))
        mode = PROF_STATE_NONE;
    if (mode == PROF_STATE_MACHINE && f->cstate_addr)
        machine(&w, regs);
    else if (mode == PROF_STATE_INTERP)
        interp(&w, regs);
    else {
        uint64_t bp = regs->bp;
        walk_leaf(&w, regs->ip, &bp, NULL, 0, 0);
    }
}
