/*
 * tests/perfsinks/jitdump_check.c — checks a jitdump stvm wrote (end-to-end tests).
 *
 *   jitdump_check FILE [--zone LO-HI] [--name NAME]... [--debug-for NAME]...
 *                 [--moves] [--close] [--no-code] [--disassemble] [--sources DIR:DIR…]
 *
 * Always: the structure and meaning checks of jitdump_read.h. Then:
 *   --zone LO-HI     every load and move lies in [LO, HI) (hex, from
 *                    stvm --code-zone-stats' "address range" line)
 *   --name NAME      some LOAD is named NAME exactly
 *   --debug-for NAME the LOAD named NAME comes right after a DEBUG_INFO
 *   --moves          at least one MOVE
 *   --close          the file ends with CLOSE
 *   --no-code        no LOAD and no MOVE (a --no-jit run)
 *   --disassemble    every LOAD's bytes decode as x86-64 (Capstone) to
 *                    exactly code_size: real instructions, nothing after
 *   --sources DIRS   every DEBUG_INFO row's file is found in DIRS and has
 *                    at least as many lines as the row's line
 *   --perf-script F  F is `perf script -F time,ip,sym,dso --ns` of a recording
 *                    of the same run: every sample perf put in JIT'd code
 *                    (a jitted-PID-N.so of perf inject, or perf-PID.map) is
 *                    where this dump says code N (or code of that name) was
 *                    at the sample's time, and every sample inside code the
 *                    dump says was there is one perf resolved; needs --zone
 *   --moved-samples  (with --perf-script) some of those samples hit code
 *                    that had moved
 *   --count          (with --perf-script) count the samples perf names
 *                    rightly and wrongly instead of failing at the first
 *                    wrong one (to measure the perf map after compaction)
 * Prints a one-line summary; exit 0 when every check holds, 1 otherwise.
 */
#include "tests/perfsinks/jitdump_read.h"

#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
    fprintf(stderr, "jitdump_check: %s\n", what);
    return 1;
}

static const JdRecord *load_named(const JdFile *f, const char *name, size_t *at)
{
    for (size_t i = 0; i < f->nrecs; i++) {
        if (f->recs[i].id == JD_LOAD && !strcmp(f->recs[i].name, name)) {
            if (at) *at = i;
            return &f->recs[i];
        }
    }
    return NULL;
}

/* Capstone decodes each LOAD to its end; false names the first that does not. */
static bool disassembles(const JdFile *f, char *msg, size_t len)
{
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        snprintf(msg, len, "Capstone cannot open x86-64");
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < f->nrecs && ok; i++) {
        const JdRecord *r = &f->recs[i];
        if (r->id != JD_LOAD) continue;
        const uint8_t *code = r->code;
        size_t size = (size_t)r->code_size;
        uint64_t addr = r->code_addr;
        cs_insn *insn = cs_malloc(cs);
        while (size && cs_disasm_iter(cs, &code, &size, &addr, insn)) {}
        cs_free(insn, 1);
        if (size) {
            snprintf(msg, len, "LOAD %s (0x%" PRIx64 "+%" PRIu64 "): no instruction decodes at +%" PRIu64, r->name,
                     r->code_addr, r->code_size, r->code_size - size);
            ok = false;
        }
    }
    cs_close(&cs);
    return ok;
}

static long count_lines(const char *dirs, const char *file)
{
    char *copy = strdup(dirs);
    long n = -1;
    for (char *d = strtok(copy, ":"); d && n < 0; d = strtok(NULL, ":")) {
        char path[4096];
        size_t dl = strlen(d);
        if (file[0] == '/') {
            /* stvm names the file as its class was loaded: a path under d */
            if (strncmp(file, d, dl) != 0 || file[dl] != '/') continue;
            snprintf(path, sizeof path, "%s", file);
        } else {
            snprintf(path, sizeof path, "%s/%s", d, file);
        }
        FILE *in = fopen(path, "r");
        if (!in) continue;
        n = 0;
        for (int ch; (ch = fgetc(in)) != EOF;)
            if (ch == '\n') n++;
        fclose(in);
    }
    free(copy);
    return n;
}

static bool lines_in_sources(const JdFile *f, const char *dirs, char *msg, size_t len)
{
    /* few distinct files: remember the last one counted */
    char last[512] = "";
    long last_n = -1;
    for (size_t i = 0; i < f->nrecs; i++) {
        const JdRecord *r = &f->recs[i];
        for (uint64_t k = 0; r->id == JD_DEBUG_INFO && k < r->nrows; k++) {
            const JdRow *row = &r->rows[k];
            if (strcmp(row->file, last)) {
                snprintf(last, sizeof last, "%s", row->file);
                last_n = count_lines(dirs, row->file);
            }
            if (last_n < 0) {
                snprintf(msg, len, "debug file %s is in none of %s", row->file, dirs);
                return false;
            }
            if (row->line > last_n) {
                snprintf(msg, len, "%s:%u: the file has %ld lines (DEBUG_INFO for %s)", row->file, row->line, last_n,
                         f->recs[i + 1].name);
                return false;
            }
        }
    }
    return true;
}

/* The LOAD whose code covered ip at time t: the latest LOAD or MOVE at or
 * before t whose range holds ip (stvm only runs code where it last put it,
 * and reuses an address only with a new LOAD or MOVE). *moved says whether
 * that placement was a MOVE. */
static const JdRecord *code_at(const JdFile *f, uint64_t t, uint64_t ip, bool *moved)
{
    for (size_t i = f->nrecs; i-- > 0;) {
        const JdRecord *r = &f->recs[i];
        if (r->timestamp > t || (r->id != JD_LOAD && r->id != JD_MOVE)) continue;
        uint64_t at = r->id == JD_LOAD ? r->code_addr : r->new_code_addr;
        if (ip < at || ip >= at + r->code_size) continue;
        *moved = r->id == JD_MOVE;
        return r->id == JD_LOAD ? r : jd_file_load(f, r->code_index);
    }
    return NULL;
}

/* perf's symbol for a sample is the dump's LOAD name, or, from the perf
 * map, which gives an inlined method's code a line of its own, "B>>sel
 * (inlined into NAME)" inside the LOAD named NAME. */
static bool names_agree(const char *sym, const char *name)
{
    if (!strcmp(sym, name)) return true;
    const char *in = strstr(sym, " (inlined into ");
    if (!in) return false;
    in += strlen(" (inlined into ");
    size_t n = strlen(name);
    return !strncmp(in, name, n) && !strcmp(in + n, ")");
}

static bool samples_agree(const JdFile *f, const JdCheck *c, const char *script, bool want_moved, bool count,
                          char *msg, size_t len)
{
    FILE *in = fopen(script, "r");
    if (!in) {
        snprintf(msg, len, "cannot open %s", script);
        return false;
    }
    char line[2048];
    size_t in_code = 0, in_moved = 0, lineno = 0, wrong = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, in)) {
        lineno++;
        unsigned long long sec, nsec, ip;
        int used = 0;
        if (sscanf(line, " %llu.%llu: %llx %n", &sec, &nsec, &ip, &used) != 3 || !used) continue;
        line[strcspn(line, "\n")] = 0;
        /* "SYM (DSO)": the DSO is in the last parentheses, a name may hold some */
        char *sym = line + used, *open = strrchr(sym, '(');
        if (!open || open == sym || open[-1] != ' ' || line[strlen(line) - 1] != ')') continue;
        open[-1] = 0;
        char *dso = open + 1;
        dso[strlen(dso) - 1] = 0;
        const char *base = strrchr(dso, '/') ? strrchr(dso, '/') + 1 : dso;
        uint64_t t = (uint64_t)sec * 1000000000u + nsec;
        bool moved = false;
        const JdRecord *l = code_at(f, t, ip, &moved);
        unsigned pid, index;
        int n = 0;
        bool jitted = sscanf(base, "jitted-%u-%u.so%n", &pid, &index, &n) == 2 && !base[n];
        bool mapped = !strncmp(base, "perf-", 5) && strstr(base, ".map");
        if (!jitted && !mapped) {
            if (l && ip >= c->zone_lo && ip < c->zone_hi) {
                snprintf(msg, len, "%s:%zu: perf put a sample at 0x%llx in %s (%s), where %s was", script, lineno, ip,
                         dso, sym, l->name);
                ok = count;
                wrong += count;
            }
            continue;
        }
        if (!l || !names_agree(sym, l->name) || (jitted && (pid != f->pid || index != l->code_index))) {
            snprintf(msg, len, "%s:%zu: perf says 0x%llx at %llu.%09llu is %s (%s); this dump says %s (code %llu)",
                     script, lineno, ip, sec, nsec, sym, base, l ? l->name : "no code",
                     l ? (unsigned long long)l->code_index : 0ull);
            ok = false;
            if (count) {
                ok = true;
                wrong++;
            }
            continue;
        }
        in_code++;
        in_moved += moved;
    }
    fclose(in);
    if (ok && !in_code) {
        snprintf(msg, len, "%s: no sample in JIT'd code", script);
        ok = false;
    }
    if (ok && want_moved && !in_moved) {
        snprintf(msg, len, "%s: %zu samples in JIT'd code, none in code that had moved", script, in_code);
        ok = false;
    }
    if (ok) printf("perf script %s: %zu samples in JIT'd code agree with the dump (%zu in moved code)%s\n", script,
                   in_code, in_moved, count ? "" : "; none disagrees");
    if (ok && count) printf("perf script %s: %zu samples disagree with the dump\n", script, wrong);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fail("usage: jitdump_check FILE [options] (see the source)");
    JdFile f;
    JdCheck c = { 0 };
    char err[1024];
    bool want_moves = false, want_close = false, want_none = false, want_disasm = false;
    const char *sources = NULL, *script = NULL;
    bool want_moved = false, count = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--zone") && i + 1 < argc) {
            if (sscanf(argv[++i], "%" SCNx64 "-%" SCNx64, &c.zone_lo, &c.zone_hi) != 2 || c.zone_lo >= c.zone_hi)
                return fail("--zone needs LO-HI in hex");
        } else if (!strcmp(argv[i], "--moves")) {
            want_moves = true;
        } else if (!strcmp(argv[i], "--close")) {
            want_close = true;
        } else if (!strcmp(argv[i], "--no-code")) {
            want_none = true;
        } else if (!strcmp(argv[i], "--disassemble")) {
            want_disasm = true;
        } else if (!strcmp(argv[i], "--sources") && i + 1 < argc) {
            sources = argv[++i];
        } else if (!strcmp(argv[i], "--perf-script") && i + 1 < argc) {
            script = argv[++i];
        } else if (!strcmp(argv[i], "--moved-samples")) {
            want_moved = true;
        } else if (!strcmp(argv[i], "--count")) {
            count = true;
        } else if ((!strcmp(argv[i], "--name") || !strcmp(argv[i], "--debug-for")) && i + 1 < argc) {
            i++; /* checked after reading */
        } else {
            snprintf(err, sizeof err, "unknown or incomplete option '%s'", argv[i]);
            return fail(err);
        }
    }
    if (!jd_file_read(argv[1], &f, err, sizeof err)) return fail(err);
    int rc = 0;
    char msg[1200];
    if (!jd_file_check(&f, &c, err, sizeof err)) rc = fail(err);
    for (int i = 2; i < argc && !rc; i++) {
        size_t at;
        if (!strcmp(argv[i], "--name")) {
            if (!load_named(&f, argv[++i], NULL)) {
                snprintf(msg, sizeof msg, "no LOAD named '%s'", argv[i]);
                rc = fail(msg);
            }
        } else if (!strcmp(argv[i], "--debug-for")) {
            if (!load_named(&f, argv[++i], &at) || at == 0 || f.recs[at - 1].id != JD_DEBUG_INFO) {
                snprintf(msg, sizeof msg, "no LOAD named '%s' right after a DEBUG_INFO", argv[i]);
                rc = fail(msg);
            }
        } else if (!strcmp(argv[i], "--zone") || !strcmp(argv[i], "--sources") || !strcmp(argv[i], "--perf-script")) {
            i++;
        }
    }
    if (!rc && want_moves && !f.moves) rc = fail("no MOVE record (expected compaction moves)");
    if (!rc && want_close && (!f.nrecs || f.recs[f.nrecs - 1].id != JD_CLOSE)) rc = fail("the file does not end with CLOSE");
    if (!rc && want_none && (f.loads || f.moves)) rc = fail("LOAD or MOVE records in a dump that should name no code");
    if (!rc && want_disasm && !disassembles(&f, msg, sizeof msg)) rc = fail(msg);
    if (!rc && sources && !lines_in_sources(&f, sources, msg, sizeof msg)) rc = fail(msg);
    if (!rc && script && !c.zone_hi) rc = fail("--perf-script needs --zone");
    if (!rc && script && !samples_agree(&f, &c, script, want_moved, count, msg, sizeof msg)) rc = fail(msg);
    printf("jitdump %s: pid %u, %zu records: %zu loads, %zu moves, %zu debug infos, %zu close; %s\n", argv[1], f.pid,
           f.nrecs, f.loads, f.moves, f.debug_infos, f.closes, rc ? "FAILED" : "ok");
    jd_file_free(&f);
    return rc;
}
