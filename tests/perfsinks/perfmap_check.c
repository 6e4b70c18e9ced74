/*
 * tests/perfsinks/perfmap_check.c — checks a perf map stvm wrote (end-to-end tests).
 *
 *   perfmap_check MAP [--zone LO-HI] [--name NAME]... [--jitdump FILE] [--moves] [--empty]
 *
 * Always: every line is `START SIZE name` (hex without 0x, a size above 0,
 * a name). Then:
 *   --zone LO-HI    every range lies in [LO, HI)
 *   --name NAME     some line names NAME exactly
 *   --jitdump FILE  the map and the jitdump of the same run say the same:
 *                   the lines are the dump's LOADs and MOVEs in order, with
 *                   their addresses, sizes and (for a MOVE, its LOAD's)
 *                   names; a piece with inlined methods is several
 *                   consecutive lines that tile it, its own name's and
 *                   "B>>sel (inlined into NAME)" parts
 *   --moves         (with --jitdump) at least one line comes from a move
 *   --empty         no line at all (a --no-jit run)
 * Prints a one-line summary; exit 0 when every check holds, 1 otherwise.
 */
#include "tests/perfsinks/jitdump_read.h"

#include <ctype.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Line {
    uint64_t start, size;
    char *name;
} Line;

/* Whether a perf map line's name is "B>>sel (inlined into NAME)": a part
 * of NAME's piece holding a method inlined into it (profiler/perfmap.h). */
static bool part_inlined_into(const char *line, const char *name)
{
    static const char mark[] = " (inlined into ";
    const char *p = strstr(line, mark);
    if (!p || p == line) return false;
    p += sizeof mark - 1;
    size_t nl = strlen(name);
    return !strncmp(p, name, nl) && !strcmp(p + nl, ")");
}

static int fail(const char *what)
{
    fprintf(stderr, "perfmap_check: %s\n", what);
    return 1;
}

static bool hex_field(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return false; /* the format has no 0x */
    char *end;
    if (!isxdigit((unsigned char)*s)) return false;
    *out = strtoull(s, &end, 16);
    if (*end != ' ') return false;
    *p = end + 1;
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fail("usage: perfmap_check MAP [options] (see the source)");
    uint64_t lo = 0, hi = 0;
    const char *dump = NULL;
    bool want_moves = false, want_empty = false;
    char msg[1400];
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--zone") && i + 1 < argc) {
            if (sscanf(argv[++i], "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2 || lo >= hi) return fail("--zone needs LO-HI in hex");
        } else if (!strcmp(argv[i], "--jitdump") && i + 1 < argc) {
            dump = argv[++i];
        } else if (!strcmp(argv[i], "--moves")) {
            want_moves = true;
        } else if (!strcmp(argv[i], "--empty")) {
            want_empty = true;
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
            i++;
        } else {
            snprintf(msg, sizeof msg, "unknown or incomplete option '%s'", argv[i]);
            return fail(msg);
        }
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        snprintf(msg, sizeof msg, "cannot open %s", argv[1]);
        return fail(msg);
    }
    Line *lines = NULL;
    size_t n = 0, cap = 0;
    char buf[2048];
    for (size_t lineno = 1; fgets(buf, sizeof buf, in); lineno++) {
        size_t len = strlen(buf);
        if (!len || buf[len - 1] != '\n') {
            snprintf(msg, sizeof msg, "%s:%zu: unterminated or overlong line", argv[1], lineno);
            return fail(msg);
        }
        buf[--len] = 0;
        const char *p = buf;
        Line l;
        if (!hex_field(&p, &l.start) || !hex_field(&p, &l.size) || !*p || !l.size) {
            snprintf(msg, sizeof msg, "%s:%zu: not 'START SIZE name' in hex without 0x: '%s'", argv[1], lineno, buf);
            return fail(msg);
        }
        if ((lo || hi) && (l.start < lo || l.start + l.size > hi)) {
            snprintf(msg, sizeof msg, "%s:%zu: %s lies outside the code zone %" PRIx64 "-%" PRIx64, argv[1], lineno,
                     buf, lo, hi);
            return fail(msg);
        }
        l.name = strdup(p);
        if (n == cap) lines = realloc(lines, (cap = cap ? cap * 2 : 256) * sizeof *lines);
        lines[n++] = l;
    }
    fclose(in);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--name")) continue;
        const char *want = argv[++i];
        size_t k = 0;
        while (k < n && strcmp(lines[k].name, want)) k++;
        if (k == n) {
            snprintf(msg, sizeof msg, "no line names '%s'", want);
            return fail(msg);
        }
    }
    if (want_empty && n) return fail("lines in a map that should name no code");
    size_t moved = 0, parted = 0;
    if (dump) {
        JdFile f;
        char err[1024];
        if (!jd_file_read(dump, &f, err, sizeof err) || !jd_file_check(&f, NULL, err, sizeof err)) return fail(err);
        size_t k = 0;
        for (size_t i = 0; i < f.nrecs; i++) {
            const JdRecord *r = &f.recs[i];
            if (r->id != JD_LOAD && r->id != JD_MOVE) continue;
            uint64_t at = r->id == JD_LOAD ? r->code_addr : r->new_code_addr;
            const char *name = r->id == JD_LOAD ? r->name : jd_file_load(&f, r->code_index)->name;
            /* the piece's lines: consecutive parts from its start to its end,
             * each its own or a method inlined into it */
            size_t first = k;
            uint64_t next = at;
            while (k < n && lines[k].start == next && next < at + r->code_size &&
                   (!strcmp(lines[k].name, name) || part_inlined_into(lines[k].name, name))) {
                next += lines[k].size;
                k++;
            }
            if (k == first || next != at + r->code_size) {
                size_t bad = k < n ? k : first;
                snprintf(msg, sizeof msg,
                         "line %zu is '%" PRIx64 " %" PRIx64 " %s' but the jitdump's %s at %zu says '%" PRIx64
                         " %" PRIx64 " %s'",
                         bad + 1, bad < n ? lines[bad].start : 0, bad < n ? lines[bad].size : 0,
                         bad < n ? lines[bad].name : "(none)", r->id == JD_LOAD ? "LOAD" : "MOVE", r->offset, at,
                         r->code_size, name);
                return fail(msg);
            }
            if (r->id == JD_MOVE) moved++;
            if (k - first > 1) parted++;
        }
        if (k != n) {
            snprintf(msg, sizeof msg, "%zu lines, but the jitdump's loads and moves account for %zu", n, k);
            return fail(msg);
        }
        jd_file_free(&f);
    }
    if (want_moves && !moved) return fail("no line comes from a move (expected compaction)");
    printf("perf map %s: %zu lines (%zu from moves, %zu pieces in parts for inlined methods); ok\n", argv[1], n,
           moved, parted);
    for (size_t i = 0; i < n; i++) free(lines[i].name);
    free(lines);
    return 0;
}
