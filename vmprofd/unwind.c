/*
 * vmprofd/unwind.c — the user stack of one sample, from its registers and
 * a copy of the stack, walked by libunwind's DWARF (.eh_frame) unwinder
 * with frame pointers as the fallback.
 *
 * libunwind runs in "remote" mode over accessors of our own: registers come
 * from the sample, memory from the stack copy, then from the file image of
 * read-only module segments (eh_frame tables, code bytes), and last from
 * the live process through process_vm_readv. Nothing here dereferences a
 * target address locally, and every value read is validated before it is
 * followed, so a garbage stack ends the walk instead of the daemon.
 *
 * Frame pointers (stvm is built with -fno-omit-frame-pointer) take over
 * when there is no stack copy, when libunwind cannot start, or from the
 * last good frame when it stops on an error.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "vmprofd/unwind.h"

#include <asm/perf_regs.h>
#include <libunwind.h>
#include <string.h>
#include <sys/uio.h>

/* libunwind exports this (its own _UPT_find_proc_info is built on it) but
 * declares it only in its private headers; perf declares it the same way.
 * It binary-searches an .eh_frame_hdr table read through access_mem. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi, int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

/* 128 frames: perf's kernel.perf_event_max_stack default is 127; deeper
 * stacks are recursion whose bottom adds nothing to a flat profile. */
#define UNWIND_MAX_DEPTH 128

/* Lowest address a frame may live at (the zero page is never mapped) and
 * the top of user space with 5-level paging: anything outside is garbage. */
#define UNWIND_USER_MIN 4096ULL
#define UNWIND_USER_END 0x0100000000000000ULL

#define UNWIND_PAGE 4096u

typedef struct UnwindCtx {
    Symbolizer *s;
    pid_t pid;
    const UnwindRegs *regs;
    const uint8_t *stack;
    size_t stack_len;
    /* one page of live memory, so a frame-pointer walk beyond the stack
     * copy costs one syscall per page rather than per word */
    uint64_t page_addr;
    bool page_valid, page_failed;
    uint8_t page[UNWIND_PAGE];
} UnwindCtx;

static bool is_user_addr(uint64_t a)
{
    return a >= UNWIND_USER_MIN && a < UNWIND_USER_END;
}

/* -- Registers -------------------------------------------------------- */

uint64_t vmprofd_unwind_regs_mask(void)
{
    /* All general registers: libunwind's x86-64 CFI interpreter can name
     * any of them (saved-register rules, DW_OP_breg*), callee-saved RBX,
     * RBP, R12-R15 above all. FLAGS and segments are never needed, and the
     * kernel refuses DS/ES/FS/GS for 64-bit tasks. */
    uint64_t m = 0;
    static const int regs[] = {
        PERF_REG_X86_AX, PERF_REG_X86_BX, PERF_REG_X86_CX,  PERF_REG_X86_DX,  PERF_REG_X86_SI,
        PERF_REG_X86_DI, PERF_REG_X86_BP, PERF_REG_X86_SP,  PERF_REG_X86_IP,  PERF_REG_X86_R8,
        PERF_REG_X86_R9, PERF_REG_X86_R10, PERF_REG_X86_R11, PERF_REG_X86_R12, PERF_REG_X86_R13,
        PERF_REG_X86_R14, PERF_REG_X86_R15,
    };
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        m |= 1ULL << regs[i];
    return m;
}

_Static_assert(PERF_REG_X86_64_MAX <= 24, "UnwindRegs.regs holds every x86-64 perf register");

bool vmprofd_unwind_reg(const UnwindRegs *r, int perf_reg, uint64_t *out)
{
    switch (perf_reg) {
    case PERF_REG_X86_IP: *out = r->ip; return true;
    case PERF_REG_X86_SP: *out = r->sp; return true;
    case PERF_REG_X86_BP: *out = r->bp; return true;
    default: break;
    }
    if (perf_reg < 0 || perf_reg >= 64 || !(r->mask & (1ULL << perf_reg)))
        return false;
    /* packed: one slot per mask bit below this one */
    unsigned idx = (unsigned)__builtin_popcountll(r->mask & ((1ULL << perf_reg) - 1));
    if (idx >= sizeof r->regs / sizeof r->regs[0])
        return false;
    *out = r->regs[idx];
    return true;
}

/* libunwind's x86-64 numbering (DWARF order) -> perf's. */
static int perf_reg_of(unw_regnum_t reg)
{
    static const int map[] = {
        [UNW_X86_64_RAX] = PERF_REG_X86_AX, [UNW_X86_64_RDX] = PERF_REG_X86_DX,
        [UNW_X86_64_RCX] = PERF_REG_X86_CX, [UNW_X86_64_RBX] = PERF_REG_X86_BX,
        [UNW_X86_64_RSI] = PERF_REG_X86_SI, [UNW_X86_64_RDI] = PERF_REG_X86_DI,
        [UNW_X86_64_RBP] = PERF_REG_X86_BP, [UNW_X86_64_RSP] = PERF_REG_X86_SP,
        [UNW_X86_64_R8] = PERF_REG_X86_R8,   [UNW_X86_64_R9] = PERF_REG_X86_R9,
        [UNW_X86_64_R10] = PERF_REG_X86_R10, [UNW_X86_64_R11] = PERF_REG_X86_R11,
        [UNW_X86_64_R12] = PERF_REG_X86_R12, [UNW_X86_64_R13] = PERF_REG_X86_R13,
        [UNW_X86_64_R14] = PERF_REG_X86_R14, [UNW_X86_64_R15] = PERF_REG_X86_R15,
        [UNW_X86_64_RIP] = PERF_REG_X86_IP,
    };
    if (reg < 0 || (size_t)reg >= sizeof map / sizeof map[0])
        return -1;
    return map[reg];
}

/* -- Memory ----------------------------------------------------------- */

static bool remote_read(pid_t pid, uint64_t addr, void *dst, size_t n)
{
    struct iovec local = {.iov_base = dst, .iov_len = n};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = n};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n;
}

static bool read_word(UnwindCtx *c, uint64_t addr, uint64_t *out)
{
    uint64_t sp = c->regs->sp;
    if (c->stack_len >= 8 && addr >= sp && addr - sp <= c->stack_len - 8) {
        memcpy(out, c->stack + (addr - sp), 8);
        return true;
    }
    if (!is_user_addr(addr) || addr > UNWIND_USER_END - 8)
        return false;
    if (report_symbolize_read_image(c->s, addr, out, 8))
        return true;
    uint64_t page = addr & ~(uint64_t)(UNWIND_PAGE - 1);
    if (addr - page > UNWIND_PAGE - 8)
        return remote_read(c->pid, addr, out, 8); /* straddles two pages */
    if (c->page_addr != page || (!c->page_valid && !c->page_failed)) {
        c->page_addr = page;
        c->page_valid = remote_read(c->pid, page, c->page, UNWIND_PAGE);
        c->page_failed = !c->page_valid;
    }
    if (!c->page_valid)
        return false;
    memcpy(out, c->page + (addr - page), 8);
    return true;
}

/* -- libunwind accessors ---------------------------------------------- */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info,
                              void *arg)
{
    UnwindCtx *c = arg;
    SymEhTable eh;
    if (!report_symbolize_eh_table(c->s, ip, &eh))
        return -UNW_ENOINFO; /* libunwind then tries its frame-chain heuristic */
    unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = eh.module_start;
    di.end_ip = eh.module_end;
    di.u.rti.segbase = eh.segbase;
    di.u.rti.table_data = eh.table;
    di.u.rti.table_len = eh.fde_count * REPORT_EH_TABLE_ENTRY_BYTES / sizeof(unw_word_t);
    return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

/* libunwind frees table-format unwind info itself; nothing of ours to free. */
static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
    (void)as;
    (void)pi;
    (void)arg;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
    (void)as;
    (void)addr;
    (void)arg;
    return -UNW_ENOINFO; /* the VM registers no dynamic unwind info */
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    if (write)
        return -UNW_EINVAL;
    uint64_t v;
    if (!read_word(arg, addr, &v))
        return -UNW_EINVAL;
    *val = v;
    return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
    (void)as;
    UnwindCtx *c = arg;
    if (write)
        return -UNW_EREADONLYREG;
    uint64_t v;
    int perf = perf_reg_of(reg);
    if (perf < 0 || !vmprofd_unwind_reg(c->regs, perf, &v))
        return -UNW_EBADREG;
    *val = v;
    return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
    (void)as;
    (void)reg;
    (void)val;
    (void)write;
    (void)arg;
    return -UNW_EBADREG; /* samples carry no FP registers */
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *cursor, void *arg)
{
    (void)as;
    (void)cursor;
    (void)arg;
    return -UNW_EINVAL; /* we only observe */
}

static unw_accessors_t accessors = {
    .find_proc_info = acc_find_proc_info,
    .put_unwind_info = acc_put_unwind_info,
    .get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
    .access_mem = acc_access_mem,
    .access_reg = acc_access_reg,
    .access_fpreg = acc_access_fpreg,
    .resume = acc_resume,
    .get_proc_name = NULL, /* names come from symbolize.c */
};

/* The Symbolizer keeps our libunwind address space (its unwinder state),
 * made on the first walk, and calls these when its modules change and when
 * it is freed. */
static void unwind_flush(void *as) { unw_flush_cache((unw_addr_space_t)as, 0, 0); }

static void unwind_release(void *as) { unw_destroy_addr_space((unw_addr_space_t)as); }

/* -- Walks ------------------------------------------------------------ */

typedef struct Frame {
    uint64_t sp, bp;
    bool have_bp;
} Frame;

/* Appends return addresses found by following saved frame pointers:
 * [bp] = caller's bp, [bp+8] = return address. Frames lie at strictly
 * increasing addresses, which also guarantees the walk ends. */
static size_t walk_frame_pointers(UnwindCtx *c, uint64_t bp, uint64_t sp, uint64_t *pcs, size_t n, size_t limit)
{
    while (n < limit) {
        if ((bp & 7) != 0 || bp < sp || !is_user_addr(bp))
            break;
        uint64_t next = 0, ret = 0;
        if (!read_word(c, bp, &next) || !read_word(c, bp + 8, &ret) || !is_user_addr(ret))
            break;
        pcs[n++] = ret;
        if (next <= bp) /* 0 marks the outermost frame */
            break;
        sp = bp + 16;
        bp = next;
    }
    return n;
}

/* libunwind's walk. *clean: it reached the outermost frame (rather than
 * failing); *last: registers of the last frame it produced. */
static size_t walk_dwarf(UnwindCtx *c, uint64_t *pcs, size_t limit, Frame *last, bool *clean)
{
    *clean = false;
    unw_addr_space_t as = report_symbolizer_unwinder(c->s);
    if (as == NULL) {
        as = unw_create_addr_space(&accessors, 0);
        if (as == NULL)
            return 1;
        /* tables are per module, not per sample: share them across walks */
        unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
        report_symbolizer_set_unwinder(c->s, &(SymUnwinder){.state = as, .flush = unwind_flush,
                                                            .release = unwind_release});
    }
    unw_cursor_t cur;
    if (unw_init_remote(&cur, as, c) < 0)
        return 1;
    size_t n = 1;
    uint64_t prev_sp = c->regs->sp, prev_ip = c->regs->ip;
    while (n < limit) {
        int r = unw_step(&cur);
        if (r == 0) {
            *clean = true;
            break;
        }
        unw_word_t ip = 0, sp = 0, bp = 0;
        if (r < 0 || unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || unw_get_reg(&cur, UNW_REG_SP, &sp) < 0)
            break;
        if (ip == 0) { /* some CFI ends the stack with an undefined return address */
            *clean = true;
            break;
        }
        if (!is_user_addr(ip) || sp < prev_sp || (sp == prev_sp && ip == prev_ip))
            break;
        pcs[n++] = ip;
        last->sp = sp;
        last->have_bp = unw_get_reg(&cur, UNW_X86_64_RBP, &bp) == 0;
        last->bp = bp;
        prev_sp = sp;
        prev_ip = ip;
    }
    return n;
}

size_t vmprofd_unwind(Symbolizer *s, const UnwindRegs *regs, const uint8_t *stack, size_t stack_len,
                      uint64_t *pcs, size_t max_pcs)
{
    if (regs == NULL || pcs == NULL || max_pcs == 0)
        return 0;
    size_t limit = max_pcs < UNWIND_MAX_DEPTH ? max_pcs : UNWIND_MAX_DEPTH;
    pcs[0] = regs->ip;
    if (s == NULL || limit == 1 || !is_user_addr(regs->ip))
        return 1;

    /* ~4.5 KiB with the page buffer: vmprofd's sampling thread has the
     * default 8 MiB stack, so no heap allocation per sample. */
    UnwindCtx c = {
        .s = s,
        .pid = report_symbolizer_pid(s),
        .regs = regs,
        .stack = stack,
        .stack_len = stack != NULL ? stack_len : 0,
    };
    size_t n = 1;
    Frame last = {.sp = regs->sp, .bp = regs->bp, .have_bp = true};
    bool clean = false;
    if (c.stack_len >= 8)
        n = walk_dwarf(&c, pcs, limit, &last, &clean);
    if (n == 1)
        return walk_frame_pointers(&c, regs->bp, regs->sp, pcs, 1, limit);
    if (!clean && n < limit && last.have_bp)
        n = walk_frame_pointers(&c, last.bp, last.sp, pcs, n, limit);
    return n;
}
