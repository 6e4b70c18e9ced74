/*
 * Unit tests for report/symbolize.c and vmprofd/unwind.c, against a live
 * child (victim.c) whose function addresses it tells us through a pipe.
 * Unwinding stops the child with ptrace (SEIZE + INTERRUPT), hands its
 * registers over in perf's packed order and 16 KiB of its stack, as a
 * perf_event sample would carry them.
 */
#define _GNU_SOURCE
#include "vmprofd/unwind.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define STACK_COPY_BYTES 16384

typedef struct Victim {
    pid_t pid;
    FILE *out; /* its stdout */
    int in;    /* its stdin */
    uint64_t a, b, c, cnofp, nanosleep_addr, main_addr;
} Victim;

/* The victim of the running test, killed by the teardown when a failed
 * assertion leaves the test early. */
static Victim *live_victim;

static void victim_start(Victim *v, const char *mode)
{
    *v = (Victim){.in = -1};
    int out[2], in[2];
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(in), 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* a spinning victim must not outlive a crashed test */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(out[1], 1);
        dup2(in[0], 0);
        close(out[0]);
        close(out[1]);
        close(in[0]);
        close(in[1]);
        execl(VICTIM_PATH, VICTIM_PATH, mode, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(in[0]);
    v->pid = pid;
    live_victim = v;
    v->in = in[1];
    v->out = fdopen(out[0], "r");
    assert_non_null(v->out);
    char line[512];
    assert_non_null(fgets(line, sizeof line, v->out));
    void *a, *b, *c, *cnofp, *ns, *m;
    assert_int_equal(sscanf(line, "a=%p b=%p c=%p cnofp=%p nanosleep=%p main=%p", &a, &b, &c, &cnofp, &ns, &m), 6);
    v->a = (uintptr_t)a;
    v->b = (uintptr_t)b;
    v->c = (uintptr_t)c;
    v->cnofp = (uintptr_t)cnofp;
    v->nanosleep_addr = (uintptr_t)ns;
    v->main_addr = (uintptr_t)m;
}

static void victim_stop(Victim *v)
{
    live_victim = NULL;
    kill(v->pid, SIGKILL);
    waitpid(v->pid, NULL, 0);
    if (v->out != NULL)
        fclose(v->out);
    close(v->in);
}

static int stop_leftover_victim(void **state)
{
    (void)state;
    if (live_victim != NULL)
        victim_stop(live_victim);
    return 0;
}

static Symbolizer *symbolizer_for(const Victim *v, const char *vm_exe, uint64_t zs, uint64_t ze)
{
    char err[256] = "";
    Symbolizer *s = report_symbolizer_new(v->pid, vm_exe, zs, ze, err, sizeof err);
    if (s == NULL)
        fail_msg("report_symbolizer_new: %s", err);
    return s;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* -- Symbols ---------------------------------------------------------- */

static void check_victim_function(Symbolizer *s, uint64_t addr, const char *name, ReportRegion region)
{
    SymbolizedAddr r;
    report_symbolize_lookup(s, addr, false, &r);
    assert_string_equal(r.function, name);
    assert_int_equal(r.region, region);
    assert_non_null(r.file);
    assert_true(ends_with(r.file, "victim.c"));
    assert_true(r.line > 0);
    assert_true(r.function_line > 0);
    assert_true(r.line >= r.function_line);
    assert_int_equal(r.function_start, addr);
    assert_true(r.function_size > 0);
    assert_non_null(r.module);
    assert_true(ends_with(r.module, "symbolize_victim"));
    assert_true(r.module_start <= addr && addr < r.module_end);
    assert_non_null(r.build_id); /* Debian's gcc links with --build-id */
    assert_int_equal(strlen(r.build_id), 40);
}

static void victim_functions_resolve_to_name_file_line_in_the_vanilla_region(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    check_victim_function(s, v.a, "victim_a", REPORT_REGION_VANILLA);
    check_victim_function(s, v.b, "victim_b", REPORT_REGION_VANILLA);
    check_victim_function(s, v.c, "victim_c", REPORT_REGION_VANILLA);
    check_victim_function(s, v.main_addr, "main", REPORT_REGION_VANILLA);
    report_symbolizer_free(s);

    s = symbolizer_for(&v, VICTIM_PATH, 0, 0);
    check_victim_function(s, v.b, "victim_b", REPORT_REGION_VANILLA);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void victim_functions_are_rest_when_another_executable_is_the_vm(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, "/bin/sh", 0, 0);
    check_victim_function(s, v.a, "victim_a", REPORT_REGION_REST);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void return_address_resolves_to_the_calling_function(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    SymbolizedAddr r;
    /* the byte after victim_a's first byte is still victim_a; as a return
     * address, victim_b's first byte belongs to whatever precedes it */
    report_symbolize_lookup(s, v.a + 1, true, &r);
    assert_string_equal(r.function, "victim_a");
    report_symbolize_lookup(s, v.b, true, &r);
    assert_string_not_equal(r.function, "victim_b");
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void libc_function_is_rest_with_its_library_as_mapping(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    SymbolizedAddr r;
    report_symbolize_lookup(s, v.nanosleep_addr, false, &r);
    assert_non_null(strstr(r.function, "nanosleep"));
    assert_int_equal(r.region, REPORT_REGION_REST);
    assert_non_null(r.module);
    assert_non_null(strstr(r.module, "libc"));
    assert_int_equal(r.function_start, v.nanosleep_addr);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void address_in_the_code_zone_is_generated(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    /* any range will do: the zone is what the VM says it is */
    Symbolizer *s = symbolizer_for(&v, NULL, 0x10000, 0x20000);
    SymbolizedAddr r;
    report_symbolize_lookup(s, 0x10010, false, &r);
    assert_string_equal(r.function, "[code zone]");
    assert_int_equal(r.region, REPORT_REGION_GENERATED);
    assert_string_equal(r.module, "[code zone]");
    report_symbolize_lookup(s, 0x20000, false, &r);
    assert_int_not_equal(r.region, REPORT_REGION_GENERATED);
    report_symbolize_lookup(s, v.a, false, &r);
    assert_int_equal(r.region, REPORT_REGION_VANILLA);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void unmapped_address_is_unknown_and_kernel_address_is_kernel(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    SymbolizedAddr r;
    report_symbolize_lookup(s, 0x8, false, &r);
    assert_string_equal(r.function, "[unknown]");
    assert_int_equal(r.region, REPORT_REGION_REST);
    assert_null(r.module);
    report_symbolize_lookup(s, 0xffffffff81000000ULL, false, &r);
    assert_string_equal(r.function, "[kernel]");
    assert_int_equal(r.region, REPORT_REGION_REST);
    report_symbolize_lookup(s, 0xffffffffffffffffULL, true, &r);
    assert_string_equal(r.function, "[kernel]");
    report_symbolize_lookup(s, 0, true, &r);
    assert_string_equal(r.function, "[unknown]");
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void address_without_symbol_is_named_after_its_module(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    SymbolizedAddr r;
    report_symbolize_lookup(s, v.a, false, &r);
    uint64_t start = r.module_start; /* the ELF header: no symbol covers it */
    report_symbolize_lookup(s, start, false, &r);
    assert_string_equal(r.function, "[symbolize_victim]");
    assert_int_equal(r.region, REPORT_REGION_VANILLA);
    assert_int_equal(r.line, 0);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void missing_process_is_an_error_not_a_crash(void **state)
{
    (void)state;
    char err[256] = "";
    /* pid_max is at most 2^22, so this pid never exists */
    Symbolizer *s = report_symbolizer_new(1 << 23, NULL, 0, 0, err, sizeof err);
    assert_null(s);
    assert_non_null(strstr(err, "/proc/"));
    report_symbolizer_free(NULL);
}

static char *folded_text(Profile *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    char err[128];
    assert_true(report_write_folded(f, p, err, sizeof err));
    fclose(f);
    return buf;
}

static void symbolize_interns_locations_into_the_profile(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    Profile *p = report_profile_new();
    int la = report_symbolize(s, p, v.a, false);
    int lb = report_symbolize(s, p, v.b + 4, true);
    int lc = report_symbolize(s, p, v.c, false);
    assert_true(la >= 0 && lb >= 0 && lc >= 0);
    assert_int_not_equal(la, lc);
    assert_int_equal(report_symbolize(s, p, v.a, false), la); /* cached */
    assert_int_not_equal(report_symbolize(s, p, v.a + 1, false), la);
    int lk = report_symbolize(s, p, 0xffffffff81000000ULL, false);
    int frames[] = {lk, lc, lb, la};
    report_profile_add_sample(p, 1, (uint32_t)v.pid, frames, 4);
    char *text = folded_text(p);
    assert_non_null(strstr(text, "victim_a;victim_b;victim_c;[kernel] 1"));
    free(text);

    /* a second profile gets its own indices, not the first one's */
    Profile *q = report_profile_new();
    int qc = report_symbolize(s, q, v.c, false);
    report_profile_add_sample(q, 1, 1, &qc, 1);
    text = folded_text(q);
    assert_non_null(strstr(text, "victim_c 1"));
    free(text);
    report_profile_free(q);
    report_profile_free(p);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void refresh_sees_a_library_loaded_later(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    Profile *p = report_profile_new();
    report_symbolizer_refresh(s); /* nothing changed: still fine */
    assert_int_equal(write(v.in, "load\n", 5), 5);
    char line[128];
    assert_non_null(fgets(line, sizeof line, v.out));
    void *cos_addr = NULL;
    assert_int_equal(sscanf(line, "cos=%p", &cos_addr), 1);
    assert_non_null(cos_addr);
    uint64_t addr = (uintptr_t)cos_addr;

    SymbolizedAddr r;
    report_symbolize_lookup(s, addr, false, &r);
    assert_string_equal(r.function, "[unknown]");
    int before = report_symbolize(s, p, addr, false);

    report_symbolizer_refresh(s);
    report_symbolize_lookup(s, addr, false, &r);
    assert_non_null(r.module);
    assert_non_null(strstr(r.module, "libm"));
    assert_int_equal(r.region, REPORT_REGION_REST);
    assert_string_not_equal(r.function, "[unknown]");
    int after = report_symbolize(s, p, addr, false);
    assert_int_not_equal(before, after); /* the stale answer was dropped */
    report_profile_free(p);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static char *read_file_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    assert_non_null(buf);
    *len = fread(buf, 1, cap, f);
    fclose(f);
    assert_true(*len > 0 && *len < cap);
    return buf;
}

/* The housekeeping refresh read a maps text that changed, and the target
 * exited around that read and libdwfl's. The kernel answers an exiting
 * process's maps empty once torn down, and a prefix of them during the
 * teardown, without an error: the samples the target took while alive
 * must still resolve (a CI run once showed every frame [unknown]). */
static void refresh_racing_the_exit_keeps_the_modules(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    assert_int_equal(write(v.in, "load\n", 5), 5);
    char line[128];
    assert_non_null(fgets(line, sizeof line, v.out));
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)v.pid);
    size_t len;
    char *maps = read_file_text(path, &len);
    char *nl = strchr(maps, '\n'); /* read during the teardown: its first line */
    assert_non_null(nl);
    len = (size_t)(nl + 1 - maps);

    /* a zombie: its maps read empty until it is reaped */
    kill(v.pid, SIGKILL);
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)v.pid, &si, WEXITED | WNOWAIT), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);

    report_symbolizer_update(s, maps, len);
    check_victim_function(s, v.a, "victim_a", REPORT_REGION_VANILLA);
    SymbolizedAddr r;
    report_symbolize_lookup(s, v.nanosleep_addr, false, &r);
    assert_non_null(strstr(r.function, "nanosleep"));
    assert_non_null(strstr(r.module, "libc"));
    free(maps);
    report_symbolizer_free(s);
    victim_stop(&v);
}

/* -- Unwinding -------------------------------------------------------- */

static uint64_t perf_reg_from_ptrace(const struct user_regs_struct *u, int r)
{
    switch (r) {
    case PERF_REG_X86_AX: return u->rax;
    case PERF_REG_X86_BX: return u->rbx;
    case PERF_REG_X86_CX: return u->rcx;
    case PERF_REG_X86_DX: return u->rdx;
    case PERF_REG_X86_SI: return u->rsi;
    case PERF_REG_X86_DI: return u->rdi;
    case PERF_REG_X86_BP: return u->rbp;
    case PERF_REG_X86_SP: return u->rsp;
    case PERF_REG_X86_IP: return u->rip;
    case PERF_REG_X86_FLAGS: return u->eflags;
    case PERF_REG_X86_CS: return u->cs;
    case PERF_REG_X86_SS: return u->ss;
    case PERF_REG_X86_R8: return u->r8;
    case PERF_REG_X86_R9: return u->r9;
    case PERF_REG_X86_R10: return u->r10;
    case PERF_REG_X86_R11: return u->r11;
    case PERF_REG_X86_R12: return u->r12;
    case PERF_REG_X86_R13: return u->r13;
    case PERF_REG_X86_R14: return u->r14;
    case PERF_REG_X86_R15: return u->r15;
    default: return 0;
    }
}

typedef struct Stopped {
    UnwindRegs regs;
    uint8_t stack[STACK_COPY_BYTES];
    size_t stack_len;
} Stopped;

/* Copies what a perf sample would: from sp upward until 16 KiB or the end
 * of the mapping, one page-bounded chunk at a time. */
static size_t copy_stack(pid_t pid, uint64_t sp, uint8_t *dst, size_t max)
{
    size_t len = 0;
    while (len < max) {
        uint64_t at = sp + len;
        size_t chunk = 4096 - (size_t)(at & 4095);
        if (chunk > max - len)
            chunk = max - len;
        struct iovec l = {dst + len, chunk}, r = {(void *)(uintptr_t)at, chunk};
        if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)chunk)
            break;
        len += chunk;
    }
    return len;
}

/* Stops the spinning victim inside its leaf (leaf_name) and records its
 * registers and stack, then detaches. */
static void stop_in_leaf(const Victim *v, Symbolizer *s, const char *leaf_name, Stopped *out)
{
    assert_int_equal(ptrace(PTRACE_SEIZE, v->pid, 0, 0), 0);
    bool in_leaf = false;
    struct user_regs_struct u;
    for (int tries = 0; tries < 200 && !in_leaf; tries++) {
        assert_int_equal(ptrace(PTRACE_INTERRUPT, v->pid, 0, 0), 0);
        int st = 0;
        assert_int_equal(waitpid(v->pid, &st, 0), v->pid);
        assert_true(WIFSTOPPED(st));
        assert_int_equal(ptrace(PTRACE_GETREGS, v->pid, 0, &u), 0);
        SymbolizedAddr r;
        report_symbolize_lookup(s, u.rip, false, &r);
        /* past "push %rbp; mov %rsp,%rbp": in the loop, frame complete */
        in_leaf = strcmp(r.function, leaf_name) == 0 && u.rip - r.function_start >= 4;
        if (!in_leaf) { /* still starting up: let it run into the spin */
            assert_int_equal(ptrace(PTRACE_CONT, v->pid, 0, 0), 0);
            nanosleep(&(struct timespec){0, 5000000}, NULL);
        }
    }
    assert_true(in_leaf);
    memset(&out->regs, 0, sizeof out->regs);
    out->regs.mask = vmprofd_unwind_regs_mask();
    out->regs.ip = u.rip;
    out->regs.sp = u.rsp;
    out->regs.bp = u.rbp;
    size_t n = 0;
    for (int r = 0; r < 64; r++)
        if (out->regs.mask & (1ULL << r))
            out->regs.regs[n++] = perf_reg_from_ptrace(&u, r);
    out->stack_len = copy_stack(v->pid, u.rsp, out->stack, sizeof out->stack);
    assert_true(out->stack_len >= 256); /* main's frame may sit near the top of the stack */
    assert_int_equal(ptrace(PTRACE_DETACH, v->pid, 0, 0), 0);
}

/* The chain's names must contain want[] in that order (others may sit
 * between them). Prints the chain when they do not. */
static void assert_chain(Symbolizer *s, const uint64_t *pcs, size_t n, const char *const *want, size_t nwant)
{
    size_t w = 0;
    char chain[2048] = "";
    for (size_t i = 0; i < n; i++) {
        SymbolizedAddr r;
        report_symbolize_lookup(s, pcs[i], i > 0, &r);
        if (w < nwant && strcmp(r.function, want[w]) == 0)
            w++;
        size_t used = strlen(chain);
        snprintf(chain + used, sizeof chain - used, "%s%s", i ? " <- " : "", r.function);
    }
    if (w != nwant)
        fail_msg("chain %s lacks %s", chain, want[w]);
}

static void unwind_with_stack_copy_finds_c_b_a_main(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "spin");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    static Stopped st;
    stop_in_leaf(&v, s, "victim_c", &st);
    uint64_t pcs[64];
    size_t n = vmprofd_unwind(s, &st.regs, st.stack, st.stack_len, pcs, 64);
    static const char *const want[] = {"victim_c", "victim_b", "victim_a", "main"};
    assert_chain(s, pcs, n, want, 4);
    assert_int_equal(pcs[0], st.regs.ip);
    /* the same sample again: libunwind's cached tables give the same walk */
    uint64_t again[64];
    assert_int_equal(vmprofd_unwind(s, &st.regs, st.stack, st.stack_len, again, 64), n);
    assert_memory_equal(again, pcs, n * sizeof pcs[0]);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void frame_pointers_find_c_b_a_main_without_stack_copy(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "spin");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    static Stopped st;
    stop_in_leaf(&v, s, "victim_c", &st);
    uint64_t pcs[64];
    size_t n = vmprofd_unwind(s, &st.regs, NULL, 0, pcs, 64);
    static const char *const want[] = {"victim_c", "victim_b", "victim_a", "main"};
    assert_chain(s, pcs, n, want, 4);
    report_symbolizer_free(s);
    victim_stop(&v);
}

/* victim_c_nofp never touches rbp: only the DWARF rules can tell that its
 * return address sits at rsp, so only they find victim_b. */
static void dwarf_unwinding_finds_the_caller_of_a_leaf_without_frame_pointer(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "spin-nofp");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    static Stopped st;
    stop_in_leaf(&v, s, "victim_c_nofp", &st);
    uint64_t pcs[64];
    size_t n = vmprofd_unwind(s, &st.regs, st.stack, st.stack_len, pcs, 64);
    static const char *const want[] = {"victim_c_nofp", "victim_b", "victim_a", "main"};
    assert_chain(s, pcs, n, want, 4);

    n = vmprofd_unwind(s, &st.regs, NULL, 0, pcs, 64);
    static const char *const fp_want[] = {"victim_c_nofp", "victim_a", "main"};
    assert_chain(s, pcs, n, fp_want, 3);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void depth_is_bounded_by_the_caller(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "spin");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    static Stopped st;
    stop_in_leaf(&v, s, "victim_c", &st);
    uint64_t pcs[3];
    assert_int_equal(vmprofd_unwind(s, &st.regs, st.stack, st.stack_len, pcs, 2), 2);
    assert_int_equal(vmprofd_unwind(s, &st.regs, NULL, 0, pcs, 2), 2);
    assert_int_equal(vmprofd_unwind(s, &st.regs, st.stack, st.stack_len, pcs, 1), 1);
    assert_int_equal(pcs[0], st.regs.ip);
    assert_int_equal(vmprofd_unwind(s, &st.regs, st.stack, st.stack_len, pcs, 0), 0);
    report_symbolizer_free(s);
    victim_stop(&v);
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Registers and stacks of noise, and noise that looks like a stack (words
 * pointing into the copy, into the victim's code, into the kernel): every
 * walk ends with 1..max frames and nothing crashes. */
static void garbage_stacks_end_the_walk_without_crashing(void **state)
{
    (void)state;
    Victim v;
    victim_start(&v, "idle");
    Symbolizer *s = symbolizer_for(&v, NULL, 0, 0);
    static uint8_t stack[8192];
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    const uint64_t sp = 0x7ffd00000000ULL;
    const uint64_t pool[] = {0, 8, sp, sp + 64, sp + 4096, v.a, v.b + 7, v.c, v.nanosleep_addr,
                             0xffffffff81000000ULL, 0x00007fffffffffffULL, UINT64_MAX};
    const size_t npool = sizeof pool / sizeof pool[0];
    for (int round = 0; round < 400; round++) {
        for (size_t i = 0; i < sizeof stack; i += 8) {
            uint64_t w = next_random(&x);
            if (round & 1)
                w = pool[w % npool] + (next_random(&x) & 0x18);
            memcpy(stack + i, &w, 8);
        }
        UnwindRegs r = {.mask = vmprofd_unwind_regs_mask()};
        r.ip = pool[next_random(&x) % npool];
        r.sp = (round & 2) ? sp : next_random(&x);
        r.bp = (round & 4) ? sp + (next_random(&x) & 0xff8) : next_random(&x);
        for (size_t i = 0; i < 24; i++)
            r.regs[i] = (round & 8) ? pool[next_random(&x) % npool] : next_random(&x);
        uint64_t pcs[200];
        size_t len = (round & 16) ? sizeof stack : (size_t)(next_random(&x) % sizeof stack);
        size_t n = vmprofd_unwind(s, &r, stack, len, pcs, 200);
        assert_true(n >= 1 && n <= 128);
        assert_int_equal(pcs[0], r.ip);
        n = vmprofd_unwind(s, &r, NULL, 0, pcs, 200);
        assert_true(n >= 1 && n <= 128);
    }
    report_symbolizer_free(s);
    victim_stop(&v);
}

static void regs_mask_asks_for_what_unwinding_reads(void **state)
{
    (void)state;
    uint64_t m = vmprofd_unwind_regs_mask();
    static const int needed[] = {PERF_REG_X86_IP,  PERF_REG_X86_SP,  PERF_REG_X86_BP,  PERF_REG_X86_BX,
                                 PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        assert_true(m & (1ULL << needed[i]));
    /* the kernel refuses segment registers for 64-bit tasks */
    static const int refused[] = {PERF_REG_X86_DS, PERF_REG_X86_ES, PERF_REG_X86_FS, PERF_REG_X86_GS};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_false(m & (1ULL << refused[i]));
    assert_true(__builtin_popcountll(m) <= 24);
}

int main(void)
{
#define T(f) cmocka_unit_test_teardown(f, stop_leftover_victim)
    const struct CMUnitTest tests[] = {
        T(victim_functions_resolve_to_name_file_line_in_the_vanilla_region),
        T(victim_functions_are_rest_when_another_executable_is_the_vm),
        T(return_address_resolves_to_the_calling_function),
        T(libc_function_is_rest_with_its_library_as_mapping),
        T(address_in_the_code_zone_is_generated),
        T(unmapped_address_is_unknown_and_kernel_address_is_kernel),
        T(address_without_symbol_is_named_after_its_module),
        T(missing_process_is_an_error_not_a_crash),
        T(symbolize_interns_locations_into_the_profile),
        T(refresh_sees_a_library_loaded_later),
        T(refresh_racing_the_exit_keeps_the_modules),
        T(unwind_with_stack_copy_finds_c_b_a_main),
        T(frame_pointers_find_c_b_a_main_without_stack_copy),
        T(dwarf_unwinding_finds_the_caller_of_a_leaf_without_frame_pointer),
        T(depth_is_bounded_by_the_caller),
        T(garbage_stacks_end_the_walk_without_crashing),
        T(regs_mask_asks_for_what_unwinding_reads),
    };
#undef T
    return cmocka_run_group_tests_name("symbolize", tests, NULL, NULL);
}
