/*
 * vmprofd/bpf/stackwalk.bpf.c — the whole-stack walk of proto/stackabi.h
 * in the kernel, at the sample: an eBPF program on each of vmprofd's
 * cpu-clock perf events. It is report/stackcapture.c's algorithm, step for
 * step (keep the two in step); the loops run under bpf_loop so the verifier
 * checks each step once.
 *
 * It answers 0: the perf event then writes no sample of its own (the
 * record in the BPF ring replaces it, and its 8 KiB stack copy).
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "vmprofd/bpf/config.h"

char LICENSE[] SEC("license") = "GPL"; /* bpf_probe_read_user, bpf_task_pt_regs */

/* Set by vmprofd through the skeleton's .bss (vmprofd/bpf/config.h). */
struct vmprofd_bpf_config walk_config = {};
__u64 dropped = 0; /* records the ring had no room for */

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4 << 20); /* ~1800 records: over a second at 1400 Hz */
} records SEC(".maps");

/* The record being built (2.3 KB: far beyond the BPF stack). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, ProfRawStack);
} scratch SEC(".maps");

static ProfRawStack *rec(void)
{
    __u32 k = 0;
    return bpf_map_lookup_elem(&scratch, &k);
}

static bool rd(__u64 addr, __u64 *out)
{
    if (addr & 7)
        return false;
    return bpf_probe_read_user(out, 8, (const void *)addr) == 0;
}

/* Two words at once (a frame's saved fp and return address): one helper
 * call instead of two, the walker's main cost. */
static bool pair(ProfRawStack *r, __u64 addr, __u64 out[2])
{
    if (!(addr & 7) && bpf_probe_read_user(out, 16, (const void *)addr) == 0)
        return true;
    r->flags |= PROF_RAW_F_FAULT;
    return false;
}

static bool word(ProfRawStack *r, __u64 addr, __u64 *out)
{
    if (rd(addr, out))
        return true;
    r->flags |= PROF_RAW_F_FAULT;
    return false;
}

static bool in_zone(const ProfWalkFacts *f, __u64 a) { return a >= f->zone_start && a < f->zone_end; }
static bool in_interp(const ProfWalkFacts *f, __u64 a) { return a >= f->interp_start && a < f->interp_end; }
static bool in_stack(const ProfWalkFacts *f, __u64 a)
{
    return a >= f->stack_base && a < f->stack_base + f->page_bytes * f->npages;
}

static __u64 before(__u64 base, __u64 bcpc) { return base + (bcpc ? bcpc - 1 : 0); }

static __u64 bytes_of(ProfRawStack *r, __u64 m)
{
    const ProfWalkFacts *f = &walk_config.facts;
    __u64 h[2];
    if (m == 0 || (m & 7) || !pair(r, m, h) || (h[0] & f->class_index_mask) != f->method_class_index) {
        r->flags |= PROF_RAW_F_BAD_FRAME;
        return 0;
    }
    return m + 8 + 8 * ((h[1] >> 1) & f->method_slots_mask);
}

/* -- The native walk --------------------------------------------------------------- */

#define STOP_NONE 0
#define STOP_ZONE 1
#define STOP_INTERP 2

struct native {
    __u64 bp;
    __u64 lo, hi; /* hi != 0: follow only frames at lo <= bp < hi */
    __u64 ret;   /* the return address the walk stopped at (0: none) */
    int stop;    /* STOP_* */
    int root;    /* 1: into root[], else leaf[] */
    int done;
};

static long native_step(__u32 i, void *vctx)
{
    struct native *w = vctx;
    ProfRawStack *r = rec();
    if (!r)
        return 1;
    __u64 fr[2], bp = w->bp;
    /* a native walk just ends at an unreadable word (no FAULT flag: that
     * speaks of the Smalltalk chain) */
    if (bp == 0 || (bp & 7) || (w->hi && (bp < w->lo || bp >= w->hi)) ||
        bpf_probe_read_user(fr, 16, (const void *)bp) != 0 || fr[1] == 0) {
        w->done = 1;
        return 1;
    }
    __u64 nbp = fr[0], ret = fr[1];
    w->bp = nbp != 0 && nbp <= bp ? 0 : nbp;
    const ProfWalkFacts *f = &walk_config.facts;
    if ((w->stop == STOP_ZONE && in_zone(f, ret)) || (w->stop == STOP_INTERP && in_interp(f, ret))) {
        w->ret = ret;
        w->done = 1;
        return 1;
    }
    if (w->root) {
        __u16 n = r->nroot;
        if (n >= PROF_RAW_MAX_ROOT) {
            r->flags |= PROF_RAW_F_ROOT_TRUNCATED;
            return 1;
        }
        r->root[n] = ret;
        r->nroot = n + 1;
    } else {
        __u16 n = r->nleaf;
        if (n >= PROF_RAW_MAX_LEAF) {
            r->flags |= PROF_RAW_F_LEAF_TRUNCATED;
            return 1;
        }
        r->leaf[n] = ret;
        r->nleaf = n + 1;
    }
    return 0;
}

/* leaf[] from (ip, bp) until a return address the stop kind names;
 * answers it (0: none) and leaves *bp at its frame. hi != 0: frames at
 * lo <= bp < hi only (report/stackcapture.c's walk_leaf says why). */
static __u64 walk_leaf(ProfRawStack *r, __u64 ip, __u64 *bp, int stop, __u64 lo, __u64 hi)
{
    __u16 n = r->nleaf;
    if (n < PROF_RAW_MAX_LEAF) {
        r->leaf[n] = ip;
        r->nleaf = n + 1;
    }
    struct native w = {.bp = *bp, .lo = lo, .hi = hi, .stop = stop};
    bpf_loop(PROF_RAW_MAX_LEAF, native_step, &w, 0);
    *bp = w.bp;
    if (w.ret == 0 && stop != STOP_NONE && n < PROF_RAW_MAX_LEAF) {
        /* never met where the Smalltalk side called C: ip alone
         * (report/stackcapture.c's walk_leaf says why) */
        r->nleaf = n + 1;
        r->flags &= ~PROF_RAW_F_LEAF_TRUNCATED;
    }
    return w.ret;
}

static void walk_root(ProfRawStack *r, __u64 pc, __u64 bp)
{
    __u16 n = r->nroot;
    if (n < PROF_RAW_MAX_ROOT) {
        r->root[n] = pc;
        r->nroot = n + 1;
    }
    struct native w = {.bp = bp, .stop = STOP_NONE, .root = 1};
    bpf_loop(PROF_RAW_MAX_ROOT, native_step, &w, 0);
}

/* -- The Smalltalk chain ------------------------------------------------------------ */

struct chain {
    __u64 fp;
    __u64 ctx;   /* non-zero: walking divorced contexts */
};

static bool push_st(ProfRawStack *r, __u64 v)
{
    __u16 n = r->nst;
    if (n >= PROF_RAW_MAX_ST) {
        r->flags |= PROF_RAW_F_ST_TRUNCATED;
        return false;
    }
    r->st[n] = v;
    r->nst = n + 1;
    return true;
}

static long context_step(ProfRawStack *r, struct chain *c)
{
    const ProfWalkFacts *f = &walk_config.facts;
    __u64 ctx = c->ctx, pc, m, sender;
    if (ctx == 0 || ctx == f->nil)
        return 1;
    if (!word(r, ctx + 8 + 8ull * f->ctx_pc_slot, &pc) || !word(r, ctx + 8 + 8ull * f->ctx_method_slot, &m) ||
        !word(r, ctx + 8 + 8ull * f->ctx_sender_slot, &sender))
        return 1;
    __u64 b = bytes_of(r, m);
    if (!b || !(pc & 1) || !push_st(r, PROF_RAW_BYTECODE | before(b, pc >> 1)))
        return 1;
    c->ctx = sender;
    return 0;
}

static long st_step(__u32 i, void *vctx)
{
    struct chain *c = vctx;
    ProfRawStack *r = rec();
    if (!r)
        return 1;
    if (c->ctx)
        return context_step(r, c);
    const ProfWalkFacts *f = &walk_config.facts;
    __u64 fp = c->fp, fr[2];
    if (!in_stack(f, fp)) {
        r->flags |= PROF_RAW_F_BAD_FRAME;
        return 1;
    }
    if (!pair(r, fp, fr))
        return 1;
    __u64 link = fr[0], saved = fr[1];
    if (link == 0) {
        if (f->page_bytes == 0)
            return 1;
        __u64 page = f->pages_addr + f->page_stride * ((fp - f->stack_base) / f->page_bytes);
        if (!word(r, page + f->page_caller_fp, &link))
            return 1;
        if (link == 0) {
            __u64 ctx;
            if (word(r, page + f->page_caller_context, &ctx) && ctx) {
                c->ctx = ctx;
                return 0; /* the next steps walk the contexts */
            }
            return 1; /* the first frame, called from C */
        }
    }
    __u64 where;
    if (saved != 0 && saved == f->return_to_interpreter) {
        __u64 m, b, fl;
        if (!word(r, link - 8, &m) || !(b = bytes_of(r, m)) || !word(r, link - f->frame_flags_offset, &fl))
            return 1;
        where = PROF_RAW_BYTECODE | before(b, ((fl >> 1) >> f->flags_bcpc_shift) & f->flags_bcpc_mask);
    } else if (in_zone(f, saved)) {
        where = saved - 1;
    } else if (saved & 1) {
        __u64 m, b;
        if (!word(r, link - 8, &m) || !(b = bytes_of(r, m)))
            return 1;
        where = PROF_RAW_BYTECODE | before(b, saved >> 1);
    } else {
        r->flags |= PROF_RAW_F_BAD_FRAME;
        return 1;
    }
    if (!push_st(r, where))
        return 1;
    c->fp = link;
    return 0;
}

static void walk_smalltalk(__u64 fp)
{
    struct chain c = {.fp = fp};
    /* a step per entry, one to turn from the stack pages to the contexts
     * (it pushes nothing) and one to find st[] full (ST_TRUNCATED) */
    bpf_loop(PROF_RAW_MAX_ST + 2, st_step, &c, 0);
}

/* -- The modes ------------------------------------------------------------------------ */

static void machine(ProfRawStack *r, __u64 ip, __u64 sp, __u64 bp)
{
    const ProfWalkFacts *f = &walk_config.facts;
    bool anchors = f->flags & PROF_WALK_F_ANCHORS;
    __u64 c_sp = 0;
    if (!word(r, f->cstate_addr + PROF_CSTATE_C_SP, &c_sp))
        c_sp = 0;
    if (in_zone(f, ip) && in_stack(f, sp)) {
        r->mode = PROF_RAW_MACHINE;
        r->top_pc = ip;
        r->top_sp = sp;
        r->top_fp = bp;
    } else {
        __u64 wbp = bp, ret = 0;
        if (in_zone(f, ip)) {
            r->leaf[0] = ip;
            r->nleaf = 1;
            ret = ip;
        } else if (in_interp(f, ip)) {
            r->leaf[0] = ip;
            r->nleaf = 1;
        } else {
            ret = walk_leaf(r, ip, &wbp, STOP_ZONE, sp, c_sp ? c_sp : 1);
        }
        /* the anchor: st_sp is non-zero exactly while C called through a
         * trampoline runs, whatever the native walk reached */
        __u64 st_sp = 0, top_pc = 0, top_fp = 0;
        bool have = word(r, f->cstate_addr + PROF_CSTATE_ST_SP, &st_sp) && (anchors ? st_sp != 0 : ret != 0);
        if (!have || !word(r, st_sp, &top_pc) || !word(r, f->cstate_addr + PROF_CSTATE_ST_FP, &top_fp)) {
            r->mode = PROF_RAW_UNKNOWN;
            r->why = PROF_RAW_WHY_SWITCH;
        } else {
            r->mode = PROF_RAW_CSTATE;
            r->top_pc = top_pc;
            r->top_fp = top_fp;
            r->top_sp = st_sp + 8;
        }
    }
    if (r->mode != PROF_RAW_UNKNOWN) {
        if ((r->top_sp & 7) || bpf_probe_read_user(r->top_words, sizeof r->top_words, (const void *)r->top_sp) != 0)
            for (int i = 0; i < PROF_RAW_TOP_WORDS; i++) /* the top of a page: word by word */
                if (!rd(r->top_sp + 8ull * i, &r->top_words[i]))
                    r->top_words[i] = 0;
        __u64 m, fl, hdr, mh;
        if (in_stack(f, r->top_fp) && rd(r->top_fp - 8, &m) && rd(r->top_fp - f->frame_flags_offset, &fl) && m &&
            !(m & 7) && rd(m, &hdr) && (hdr & f->class_index_mask) == f->method_class_index && rd(m + 8, &mh))
            r->top_bytes = PROF_RAW_BYTECODE | before(m + 8 + 8 * ((mh >> 1) & f->method_slots_mask),
                                                      ((fl >> 1) >> f->flags_bcpc_shift) & f->flags_bcpc_mask);
        walk_smalltalk(r->top_fp);
    }
    __u64 cret, cbp;
    if (c_sp && word(r, c_sp + PROF_CSTATE_C_RET, &cret) && word(r, c_sp + PROF_CSTATE_C_BP, &cbp))
        walk_root(r, cret, cbp);
}

static void interp(ProfRawStack *r, __u64 ip, __u64 sp, __u64 bp, __u64 r14, __u64 r15)
{
    const ProfWalkFacts *f = &walk_config.facts;
    __u64 fp = r14, ipv = r15, anchor;
    /* while a primitive runs, the interpreter's anchor names its frame:
     * code the primitive calls (a library) may use r14/r15 */
    if ((f->flags & PROF_WALK_F_ANCHORS) && word(r, f->state_addr + PROF_STATE_PRIM_FP, &anchor) && anchor != 0 &&
        word(r, f->state_addr + PROF_STATE_PRIM_IP, &ipv))
        fp = anchor;
    if (fp == 0) {
        r->mode = PROF_RAW_UNKNOWN;
        r->why = PROF_RAW_WHY_SWITCH;
    } else {
        r->mode = PROF_RAW_INTERP;
        r->top_pc = ipv;
        r->top_fp = fp;
        __u64 m;
        if (in_stack(f, fp) && word(r, fp - 8, &m))
            r->top_bytes = bytes_of(r, m);
        else
            r->flags |= PROF_RAW_F_BAD_FRAME;
    }
    __u64 wbp = bp, root_pc, ibp;
    if (!word(r, f->state_addr + PROF_STATE_INTERP_BP, &ibp))
        ibp = 0;
    if (in_interp(f, ip)) {
        root_pc = ip;
    } else {
        root_pc = walk_leaf(r, ip, &wbp, STOP_INTERP, sp, ibp ? ibp : 1);
        if (root_pc == 0) {
            /* a leaf without a frame pointer: the interpreter's frame is
             * known, the return address into it is not */
            r->flags |= PROF_RAW_F_LEAF_GUESSLESS;
            root_pc = f->interp_start;
            wbp = ibp;
        }
    }
    if (r->mode == PROF_RAW_INTERP && !(r->flags & PROF_RAW_F_BAD_FRAME))
        walk_smalltalk(r->top_fp);
    walk_root(r, root_pc, wbp);
}

SEC("perf_event")
int vmprofd_stackwalk(struct bpf_perf_event_data *ctx)
{
    /* pids as vmprofd's namespace numbers them (those of its perf samples
     * and of /proc); the kernel's own when the sampled task lives in
     * another namespace (a container profiled from the host: vmprofd then
     * knows it by those) */
    struct bpf_pidns_info ns;
    __u32 tgid, tid;
    if (walk_config.pidns_ino &&
        bpf_get_ns_current_pid_tgid(walk_config.pidns_dev, walk_config.pidns_ino, &ns, sizeof ns) == 0) {
        tgid = ns.tgid;
        tid = ns.pid;
    } else {
        __u64 id = bpf_get_current_pid_tgid();
        tgid = (__u32)(id >> 32);
        tid = (__u32)id;
    }
    if (tgid != walk_config.tgid)
        return 0;
    ProfRawStack *r = rec();
    if (!r)
        return 0;
    r->time_ns = bpf_ktime_get_ns(); /* CLOCK_MONOTONIC, the code events' clock */
    r->pid = tgid;
    r->tid = tid;
    r->mode = PROF_RAW_NATIVE;
    r->flags = 0;
    r->why = 0;
    r->nkernel = r->nleaf = r->nst = r->nroot = 0;
    r->top_pc = r->top_sp = r->top_fp = r->top_bytes = 0;
    for (int i = 0; i < PROF_RAW_TOP_WORDS; i++)
        r->top_words[i] = 0;

    /* the user registers: the sample's own when it interrupted user code,
     * else those saved at the entry to the kernel */
    struct pt_regs *regs = (struct pt_regs *)&ctx->regs;
    __u64 ip = regs->ip, sp = regs->sp, bp = regs->bp, r12 = regs->r12, r13 = regs->r13, r14 = regs->r14,
          r15 = regs->r15;
    if (ip >> 63) { /* a kernel address: the sample hit a system call or an interrupt */
        long n = bpf_get_stack(ctx, r->kernel, sizeof r->kernel, 0);
        if (n > 0) {
            r->nkernel = (__u16)(n / 8);
            r->flags |= PROF_RAW_F_KERNEL;
        }
        struct pt_regs *u = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
        ip = BPF_CORE_READ(u, ip);
        sp = BPF_CORE_READ(u, sp);
        bp = BPF_CORE_READ(u, bp);
        r12 = BPF_CORE_READ(u, r12);
        r13 = BPF_CORE_READ(u, r13);
        r14 = BPF_CORE_READ(u, r14);
        r15 = BPF_CORE_READ(u, r15);
    }

    const ProfWalkFacts *f = &walk_config.facts;
    __u64 mode = PROF_STATE_NONE;
    if (f->size == 0) {
        r->flags |= PROF_RAW_F_NO_FACTS;
        r->top_words[0] = r12;
        r->top_words[1] = r13;
        r->top_words[2] = r14;
        r->top_words[3] = r15;
    }
    if (f->size == 0 || !rd(f->state_addr + PROF_STATE_MODE, &mode))
        mode = PROF_STATE_NONE;
    if (mode == PROF_STATE_MACHINE && f->cstate_addr)
        machine(r, ip, sp, bp);
    else if (mode == PROF_STATE_INTERP)
        interp(r, ip, sp, bp, r14, r15);
    else {
        __u64 wbp = bp;
        walk_leaf(r, ip, &wbp, STOP_NONE, 0, 0);
    }
    /* No wake-up per record: vmprofd drains the ring on its own poll
     * timer (every 50 ms at most), and a wake-up per sample (an irq_work
     * and a context switch on the target's CPU) cost more than the walk.
     * Only a quarter-full ring wakes it. */
    __u64 wake = bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) > (1 << 20) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
    if (bpf_ringbuf_output(&records, r, sizeof *r, wake) != 0)
        __sync_fetch_and_add(&dropped, 1);
    return 0;
}
