/*
 * tests/probes/usdt_trace.c — a small USDT tracer on ptrace, so the probe
 * tests run where BPF is refused (containers without CAP_BPF or uprobes).
 * It does to the traced program what bpftrace and perf do: raises probe
 * semaphores in the process (the 16-bit counters of section .probes, written
 * through /proc/PID/mem as a tracer's kernel reference counter would) and
 * turns probe sites (one-byte nops) into breakpoints, then counts the hits.
 *
 *   usdt_trace [--raise all|PROBE,...] [--raise-on PROBE] [--count SPEC]... [--report FILE]
 *              -- PROGRAM [ARGS...]
 *
 *   --raise    probes whose semaphores are raised before the program's first
 *              instruction: "all" (every probe in PROGRAM), or a comma list.
 *              Default: the counted probes. A raised probe's guarded code
 *              runs (its arguments are computed and the nop is reached);
 *              only counted probes trap.
 *   --raise-on not before the program's first instruction but when PROBE
 *              first fires, as a tracer attaching to a running process
 *   --count    PROBE counts every hit of PROBE (any provider); PROBE/N=TEXT
 *              only hits whose argument N (0-based) points at the C string
 *              TEXT. Repeatable.
 *   --report   where the counts go, one "SPEC COUNT" line each, after the
 *              program ended (default: stderr)
 *
 * PROGRAM's stdin, stdout and stderr are its own. Exit status: PROGRAM's
 * (128 + signal when a signal ended it); 125 when the tracer itself failed
 * (bad usage, unreadable notes, ptrace refused), with the reason on stderr.
 *
 * Argument locations are read from the notes ("8@%rax", "-4@$0",
 * "8@-24(%rbp)", "8@sym+8(%rip)"); any other form makes a filter on that
 * argument fail loudly.
 */
#define _GNU_SOURCE
#include "stapsdt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACER_FAILED 125
#define MAX_SPECS 64
#define INT3 0xCC
#define NOP 0x90

typedef struct Spec {
    char text[320]; /* as given */
    char probe[64];
    int arg;        /* -1: no filter */
    char value[256];
    unsigned long long hits;
} Spec;

typedef struct Site {
    uint64_t addr; /* in the process */
    const SdtProbe *probe;
} Site;

static const char *prog;
static SdtFile elf;
static uint64_t bias; /* process address = link-time address + bias */
static pid_t child;
static int mem = -1;
static Spec specs[MAX_SPECS];
static int nspecs;
static Site *sites;
static size_t nsites;
static const char *raise_set;      /* --raise, or NULL: the counted probes */
static const char *raise_on;       /* --raise-on, or NULL */
static bool raised;

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("usdt_trace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (child > 0) kill(child, SIGKILL);
    exit(TRACER_FAILED);
}

/* -- The traced process's memory ----------------------------------------------- */

static void peek(uint64_t addr, void *buf, size_t n)
{
    if (pread(mem, buf, n, (off_t)addr) != (ssize_t)n)
        die("cannot read %zu bytes at %#llx of process %d: %s", n, (unsigned long long)addr, (int)child, strerror(errno));
}

static void poke(uint64_t addr, const void *buf, size_t n)
{
    if (pwrite(mem, buf, n, (off_t)addr) != (ssize_t)n)
        die("cannot write %zu bytes at %#llx of process %d: %s", n, (unsigned long long)addr, (int)child, strerror(errno));
}

/* The C string at addr (cut at cap - 1 bytes); false if unreadable. */
static bool peek_string(uint64_t addr, char *out, size_t cap)
{
    ssize_t n = pread(mem, out, cap - 1, (off_t)addr);
    if (n <= 0) return false;
    out[n] = 0;
    return true;
}

/* The load bias: where the kernel mapped PROGRAM's first page. */
static uint64_t find_bias(void)
{
    if (!elf.pie) return 0;
    char real[PATH_MAX], maps[64], line[PATH_MAX + 256];
    if (!realpath(prog, real)) die("cannot resolve %s: %s", prog, strerror(errno));
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)child);
    FILE *f = fopen(maps, "r");
    if (!f) die("cannot open %s: %s", maps, strerror(errno));
    uint64_t found = 0;
    bool ok = false;
    while (!ok && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        int path_at = 0;
        if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &path_at) < 3 || !path_at) continue;
        char *path = line + path_at;
        path[strcspn(path, "\n")] = 0;
        if (off == 0 && !strcmp(path, real)) {
            found = lo;
            ok = true;
        }
    }
    fclose(f);
    if (!ok) die("%s is not mapped in process %d (%s)", real, (int)child, maps);
    return found - (elf.min_load_vaddr & ~(uint64_t)0xfff);
}

/* -- Arguments ------------------------------------------------------------------------- */

typedef struct RegName {
    const char *name;
    size_t offset; /* in struct user_regs_struct */
    int bytes;
} RegName;

#define R(n64, n32, n16, n8, field)                                                                   \
    {n64, offsetof(struct user_regs_struct, field), 8}, {n32, offsetof(struct user_regs_struct, field), 4}, \
        {n16, offsetof(struct user_regs_struct, field), 2}, {n8, offsetof(struct user_regs_struct, field), 1}
static const RegName regnames[] = {
    R("rax", "eax", "ax", "al", rax),     R("rbx", "ebx", "bx", "bl", rbx),     R("rcx", "ecx", "cx", "cl", rcx),
    R("rdx", "edx", "dx", "dl", rdx),     R("rsi", "esi", "si", "sil", rsi),    R("rdi", "edi", "di", "dil", rdi),
    R("rbp", "ebp", "bp", "bpl", rbp),    R("rsp", "esp", "sp", "spl", rsp),    R("r8", "r8d", "r8w", "r8b", r8),
    R("r9", "r9d", "r9w", "r9b", r9),     R("r10", "r10d", "r10w", "r10b", r10), R("r11", "r11d", "r11w", "r11b", r11),
    R("r12", "r12d", "r12w", "r12b", r12), R("r13", "r13d", "r13w", "r13b", r13), R("r14", "r14d", "r14w", "r14b", r14),
    R("r15", "r15d", "r15w", "r15b", r15),
};
#undef R

static bool reg_value(const struct user_regs_struct *regs, const char *name, size_t len, uint64_t *out)
{
    for (size_t i = 0; i < sizeof regnames / sizeof regnames[0]; i++) {
        if (strlen(regnames[i].name) != len || strncmp(regnames[i].name, name, len)) continue;
        uint64_t v;
        memcpy(&v, (const char *)regs + regnames[i].offset, 8);
        if (regnames[i].bytes < 8) v &= (UINT64_C(1) << (8 * regnames[i].bytes)) - 1;
        *out = v;
        return true;
    }
    return false;
}

/* Sign- or zero-extends the low |size| bytes of v as the note's size says. */
static uint64_t extend(uint64_t v, int size)
{
    int bytes = size < 0 ? -size : size;
    if (bytes >= 8 || bytes == 0) return v;
    uint64_t mask = (UINT64_C(1) << (8 * bytes)) - 1;
    v &= mask;
    if (size < 0 && (v >> (8 * bytes - 1)) & 1) v |= ~mask;
    return v;
}

/* A displacement: a number, or symbol[+-number] (rip-relative operands). */
static bool displacement(const char *s, size_t len, bool *is_symbol, int64_t *out)
{
    char buf[256];
    if (len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    *is_symbol = false;
    if (!len) {
        *out = 0;
        return true;
    }
    char *end;
    if ((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '-') {
        *out = strtoll(buf, &end, 0);
        return *end == 0;
    }
    int64_t add = 0;
    char *op = strpbrk(buf, "+-");
    if (op) {
        add = strtoll(op, &end, 0);
        if (*end) return false;
        *op = 0;
    }
    uint64_t v;
    if (!sdt_symbol(prog, buf, &v)) return false;
    *is_symbol = true;
    *out = (int64_t)(v + bias) + add;
    return true;
}

/* Argument n of probe p at a hit (registers regs), or false with why. */
static bool arg_value(const SdtProbe *p, int n, const struct user_regs_struct *regs, uint64_t *out, char *why, size_t whylen)
{
    const char *s = p->args;
    for (int i = 0; i < n; i++) {
        s = strchr(s, ' ');
        if (!s) break;
        s++;
    }
    if (!s || !*s) {
        snprintf(why, whylen, "%s has no argument %d (\"%s\")", p->name, n, p->args);
        return false;
    }
    size_t len = strcspn(s, " ");
    char tok[128];
    snprintf(tok, sizeof tok, "%.*s", (int)len, s);
    int size = 8;
    const char *op = tok, *at = strchr(tok, '@');
    if (at) {
        size = atoi(tok);
        op = at + 1;
    }
    uint64_t v;
    if (op[0] == '$') {
        char *end;
        v = (uint64_t)strtoll(op + 1, &end, 0);
        if (*end) goto unsupported;
    } else if (op[0] == '%') {
        if (!reg_value(regs, op + 1, strlen(op + 1), &v)) goto unsupported;
    } else {
        const char *paren = strchr(op, '(');
        const char *close = paren ? strchr(paren, ')') : NULL;
        if (!paren || !close || close[1]) goto unsupported;
        bool sym;
        int64_t disp;
        if (!displacement(op, (size_t)(paren - op), &sym, &disp)) goto unsupported;
        const char *inner = paren + 1;
        size_t ilen = (size_t)(close - inner);
        uint64_t addr;
        if (ilen == 4 && !strncmp(inner, "%rip", 4)) {
            if (!sym) goto unsupported; /* rip itself is not known at the nop */
            addr = (uint64_t)disp;
        } else {
            /* %base[,%index[,scale]] */
            char parts[3][16] = {{0}};
            int np = 0;
            for (const char *q = inner; q < close && np < 3; np++) {
                size_t pl = strcspn(q, ",)");
                snprintf(parts[np], sizeof parts[np], "%.*s", (int)pl, q);
                q += pl + 1;
            }
            uint64_t base = 0, index = 0;
            if (parts[0][0] && (parts[0][0] != '%' || !reg_value(regs, parts[0] + 1, strlen(parts[0]) - 1, &base)))
                goto unsupported;
            if (np > 1 && (parts[1][0] != '%' || !reg_value(regs, parts[1] + 1, strlen(parts[1]) - 1, &index)))
                goto unsupported;
            uint64_t scale = np > 2 ? (uint64_t)atoi(parts[2]) : 1;
            addr = base + index * scale + (uint64_t)disp;
        }
        v = 0;
        int bytes = size < 0 ? -size : size;
        if (bytes < 1 || bytes > 8) goto unsupported;
        peek(addr, &v, (size_t)bytes);
    }
    *out = extend(v, size);
    return true;
unsupported:
    snprintf(why, whylen, "%s's argument %d is at \"%s\", a location usdt_trace does not read", p->name, n, tok);
    return false;
}

/* -- Options ------------------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out, "usage: usdt_trace [--raise all|PROBE,...] [--raise-on PROBE] [--count PROBE[/N=TEXT]]... [--report FILE]\n"
                 "                  -- PROGRAM [ARGS...]\n");
}

static void add_spec(const char *text)
{
    if (nspecs == MAX_SPECS) die("more than %d --count options", MAX_SPECS);
    Spec *s = &specs[nspecs++];
    snprintf(s->text, sizeof s->text, "%s", text);
    s->arg = -1;
    const char *slash = strchr(text, '/');
    size_t plen = slash ? (size_t)(slash - text) : strlen(text);
    if (!plen || plen >= sizeof s->probe) die("--count '%s': no probe name", text);
    memcpy(s->probe, text, plen);
    if (slash) {
        char *end;
        long n = strtol(slash + 1, &end, 10);
        if (end == slash + 1 || *end != '=' || n < 0 || n > 11) die("--count '%s': expected PROBE/N=TEXT with N from 0 to 11", text);
        s->arg = (int)n;
        snprintf(s->value, sizeof s->value, "%s", end + 1);
    }
}

static bool listed(const char *list, const char *name)
{
    if (!strcmp(list, "all")) return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == n && !strncmp(p, name, n)) return true;
        p += l + (p[l] == ',');
    }
    return false;
}

static bool counted(const char *name)
{
    for (int i = 0; i < nspecs; i++)
        if (!strcmp(specs[i].probe, name)) return true;
    return false;
}

/* -- Tracing ---------------------------------------------------------------------------- */

static void raise_semaphores(void)
{
    const char *raise = raise_set;
    raised = true;
    for (size_t i = 0; i < elf.nprobes; i++) {
        const SdtProbe *p = &elf.probes[i];
        if (!p->semaphore || !(raise ? listed(raise, p->name) : counted(p->name))) continue;
        bool seen = false; /* every site of a probe shares its semaphore: raise it once */
        for (size_t j = 0; j < i; j++)
            seen |= elf.probes[j].semaphore == p->semaphore && (raise ? listed(raise, elf.probes[j].name) : counted(elf.probes[j].name));
        if (seen) continue;
        uint16_t v;
        peek(p->semaphore + bias, &v, sizeof v);
        v++;
        poke(p->semaphore + bias, &v, sizeof v);
    }
}

static void plant_breakpoints(void)
{
    sites = calloc(elf.nprobes ? elf.nprobes : 1, sizeof *sites);
    if (!sites) die("out of memory");
    for (int s = 0; s < nspecs; s++) {
        bool any = false;
        for (size_t i = 0; i < elf.nprobes; i++) any |= !strcmp(elf.probes[i].name, specs[s].probe);
        if (!any) die("%s has no probe named %s", prog, specs[s].probe);
    }
    if (raise_on) {
        bool any = false;
        for (size_t i = 0; i < elf.nprobes; i++) any |= !strcmp(elf.probes[i].name, raise_on);
        if (!any) die("%s has no probe named %s (--raise-on)", prog, raise_on);
    }
    for (size_t i = 0; i < elf.nprobes; i++) {
        const SdtProbe *p = &elf.probes[i];
        if (!counted(p->name) && !(raise_on && !strcmp(p->name, raise_on))) continue;
        uint64_t a = p->pc + bias;
        uint8_t b;
        peek(a, &b, 1);
        if (b != NOP) die("%s's site %#llx holds %#x, not a nop: not a <sys/sdt.h> probe site", p->name, (unsigned long long)a, b);
        b = INT3;
        poke(a, &b, 1);
        sites[nsites++] = (Site){a, p};
    }
}

static void on_hit(const Site *site, const struct user_regs_struct *regs)
{
    if (raise_on && !raised && !strcmp(site->probe->name, raise_on)) raise_semaphores();
    for (int s = 0; s < nspecs; s++) {
        Spec *sp = &specs[s];
        if (strcmp(sp->probe, site->probe->name)) continue;
        if (sp->arg < 0) {
            sp->hits++;
            continue;
        }
        uint64_t v;
        char why[1024], str[sizeof sp->value + 1];
        if (!arg_value(site->probe, sp->arg, regs, &v, why, sizeof why)) die("%s", why);
        if (peek_string(v, str, sizeof str) && !strcmp(str, sp->value)) sp->hits++;
    }
}

static int trace(void)
{
    for (;;) {
        int st;
        if (waitpid(child, &st, __WALL) < 0) {
            if (errno == EINTR) continue;
            die("waitpid: %s", strerror(errno));
        }
        if (WIFEXITED(st)) return WEXITSTATUS(st);
        if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
        if (!WIFSTOPPED(st)) continue;
        int sig = WSTOPSIG(st);
        if (sig == SIGTRAP) {
            struct user_regs_struct regs;
            if (ptrace(PTRACE_GETREGS, child, NULL, &regs) < 0) die("PTRACE_GETREGS: %s", strerror(errno));
            uint64_t at = regs.rip - 1;
            const Site *site = NULL;
            for (size_t i = 0; i < nsites && !site; i++)
                if (sites[i].addr == at) site = &sites[i];
            if (site) {
                /* the int3 replaced a one-byte nop: going on from rip is
                 * exactly what the nop would have done */
                on_hit(site, &regs);
                sig = 0;
            }
        }
        if (ptrace(PTRACE_CONT, child, NULL, (void *)(intptr_t)sig) < 0 && errno != ESRCH)
            die("PTRACE_CONT: %s", strerror(errno));
    }
}

int main(int argc, char **argv)
{
    const char *report = NULL;
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--raise") && i + 1 < argc) {
            raise_set = argv[++i];
        } else if (!strcmp(argv[i], "--raise-on") && i + 1 < argc) {
            raise_on = argv[++i];
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            add_spec(argv[++i]);
        } else if (!strcmp(argv[i], "--report") && i + 1 < argc) {
            report = argv[++i];
        } else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            fprintf(stderr, "usdt_trace: unexpected '%s'\n", argv[i]);
            return TRACER_FAILED;
        }
    }
    if (i >= argc) {
        usage(stderr);
        fprintf(stderr, "usdt_trace: no program to trace\n");
        return TRACER_FAILED;
    }
    prog = argv[i];
    if (!strchr(prog, '/')) die("give PROGRAM as a path ('%s' has no '/')", prog);
    char err[512];
    if (!sdt_read(prog, &elf, err, sizeof err)) die("%s", err);

    child = fork();
    if (child < 0) die("fork: %s", strerror(errno));
    if (child == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
            fprintf(stderr, "usdt_trace: PTRACE_TRACEME: %s\n", strerror(errno));
            _exit(TRACER_FAILED);
        }
        execv(prog, argv + i);
        fprintf(stderr, "usdt_trace: cannot run %s: %s\n", prog, strerror(errno));
        _exit(TRACER_FAILED);
    }
    int st;
    if (waitpid(child, &st, 0) < 0) die("waitpid: %s", strerror(errno));
    if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) {
        if (WIFEXITED(st)) exit(WEXITSTATUS(st)); /* the exec failed and said why */
        die("%s did not stop at its exec (status %#x)", prog, st);
    }
    if (ptrace(PTRACE_SETOPTIONS, child, NULL, (void *)(intptr_t)PTRACE_O_EXITKILL) < 0)
        die("PTRACE_SETOPTIONS: %s", strerror(errno));
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)child);
    mem = open(path, O_RDWR | O_CLOEXEC);
    if (mem < 0) die("cannot open %s: %s", path, strerror(errno));
    bias = find_bias();
    if (!raise_on) raise_semaphores();
    plant_breakpoints();
    if (ptrace(PTRACE_CONT, child, NULL, NULL) < 0) die("PTRACE_CONT: %s", strerror(errno));
    int rc = trace();

    FILE *out = report ? fopen(report, "w") : stderr;
    if (!out) die("cannot write %s: %s", report, strerror(errno));
    for (int s = 0; s < nspecs; s++) fprintf(out, "%s %llu\n", specs[s].text, specs[s].hits);
    if (out != stderr) fclose(out);
    sdt_free(&elf);
    free(sites);
    return rc;
}
