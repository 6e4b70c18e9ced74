/*
 * profiler/jitdump.c — writing jit-PID.dump as code loads and moves.
 */
#define _GNU_SOURCE
#include "profiler/jitdump.h"

#include "profiler/ehframe.h"

#include "profiler/codeevents.h"
#include "profiler/livecode.h"
#include "report/safefile.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static void *marker = MAP_FAILED; /* the executable mapping perf record sees */
static size_t marker_len;
static char path[4096];
static ProfLiveCode live;
static uint64_t next_index = 1;
static uint32_t pid, tid;
static bool at_exit_registered;

/* The record being built; grown as needed, kept between records. */
static uint8_t *rec;
static size_t rec_len, rec_cap;
static bool rec_failed;

const char *prof_jitdump_path(void) { return fd >= 0 ? path : ""; }

/* -- Records ---------------------------------------------------------------------- */

static void rec_put(const void *p, size_t n)
{
    if (rec_failed) return;
    if (rec_len + n > rec_cap) {
        size_t cap = rec_cap ? rec_cap : 4096;
        while (cap < rec_len + n) cap *= 2;
        uint8_t *b = realloc(rec, cap);
        if (!b) {
            rec_failed = true;
            return;
        }
        rec = b;
        rec_cap = cap;
    }
    memcpy(rec + rec_len, p, n);
    rec_len += n;
}

static void rec_begin(void)
{
    rec_len = 0;
    rec_failed = false;
}

static bool write_all(int to, const void *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(to, (const uint8_t *)p + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        done += (size_t)w;
    }
    return true;
}

static void give_up(const char *why)
{
    fprintf(stderr, "stvm: warning: cannot write the jitdump %s: %s; it ends here\n", path, why);
    if (marker != MAP_FAILED) munmap(marker, marker_len);
    marker = MAP_FAILED;
    close(fd);
    fd = -1;
    prof_livecode_clear(&live);
}

/* Patches the record's id and size in, and writes it whole. A record that
 * could not be built (out of memory) is dropped: a partial one would
 * corrupt every record after it. */
static void rec_end(uint32_t id, uint64_t timestamp)
{
    if (rec_failed || rec_len > UINT32_MAX) {
        fprintf(stderr, "stvm: warning: jitdump: a record of type %u was dropped (out of memory)\n", id);
        return;
    }
    ProfJitdumpRecord h = { .id = id, .total_size = (uint32_t)rec_len, .timestamp = timestamp };
    memcpy(rec, &h, sizeof h);
    if (!write_all(fd, rec, rec_len)) give_up(strerror(errno));
}

/* -- Source lines ----------------------------------------------------------------- */

/* The line of the last (bcpc, line) pair at or before bcpc in a table of
 * count pairs; the first pair's when bcpc precedes them all; 0 when there
 * is no table. */
static uint32_t line_in(const uint32_t *lines, uint32_t count, uint32_t bcpc)
{
    if (!lines || !count) return 0;
    uint32_t lo = 0, hi = count; /* first pair with pair.bcpc > bcpc */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (lines[2 * mid] <= bcpc) lo = mid + 1;
        else hi = mid;
    }
    return lines[2 * (lo ? lo - 1 : 0) + 1];
}

/* The scope owning offset off of the piece (an inlined range's), or -1:
 * its own method's. */
static int64_t scope_at(const ProfCodeLoad *e, uint64_t off)
{
    for (uint32_t i = 0; e->ranges && i < e->range_count; i++)
        if (e->ranges[i].start <= off && off < e->ranges[i].end && e->ranges[i].scope < e->scope_count)
            return e->ranges[i].scope;
    return -1;
}

/* Whether scopes a and b (-1: the piece's own) are the same method. */
static bool same_method(const ProfCodeLoad *e, int64_t a, int64_t b)
{
    if (a < 0 || b < 0) return a == b;
    const ProfInlineScope *x = &e->scopes[a], *y = &e->scopes[b];
    return x->bytecode_size == y->bytecode_size && x->name && y->name && !strcmp(x->name, y->name);
}

typedef struct Rows {
    ProfJitdumpDebugEntry *v;
    const char **file; /* per row */
    uint32_t n;
} Rows;

/* Appends a row; a row at the address of the last one replaces its line
 * (the range before it was empty), a row repeating the last line (of the
 * same file) adds nothing. */
static void add_row(Rows *r, uint64_t addr, uint32_t line, const char *file)
{
    if (!line || !file || !file[0]) return;
    if (r->n && r->v[r->n - 1].addr == addr) {
        r->v[r->n - 1].line = line;
        r->file[r->n - 1] = file;
        if (r->n > 1 && r->v[r->n - 2].line == line && !strcmp(r->file[r->n - 2], file)) r->n--;
        return;
    }
    if (r->n && r->v[r->n - 1].line == line && !strcmp(r->file[r->n - 1], file)) return;
    r->file[r->n] = file;
    r->v[r->n++] = (ProfJitdumpDebugEntry){ .addr = addr, .line = line };
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The (file, line) of the code from offset off on: the line of the next
 * map entry of the same method (a map entry ends its bytecode's code), or
 * the last one's past them; in an inlined range, the inlined method's
 * file and line table (jitdump.h). */
static uint32_t row_line(const ProfCodeLoad *e, const int64_t *pair_scope, uint64_t off, const char **file)
{
    int64_t s = scope_at(e, off);
    const uint32_t *lines = s < 0 ? e->lines : e->scopes[s].lines;
    uint32_t count = s < 0 ? e->line_count : e->scopes[s].line_count;
    *file = s < 0 ? e->source : e->scopes[s].source;
    int64_t last = -1;
    for (uint32_t i = 0; i < e->map_count; i++) {
        if (!same_method(e, pair_scope[i], s)) continue;
        if (e->map[2 * i] > off) return line_in(lines, count, e->map[2 * i + 1]);
        last = i;
    }
    return last >= 0 ? line_in(lines, count, e->map[2 * last + 1]) : line_in(lines, count, 0);
}

/* The DEBUG_INFO of a method or block, written before its LOAD. The
 * placement of rows is explained in jitdump.h. */
static void write_debug_info(const ProfCodeLoad *e, uint64_t code, uint64_t code_size)
{
    bool inl = e->scopes && e->ranges && e->range_count;
    if (!inl && (!e->source || !e->source[0] || !strcmp(e->source, "?") || !e->line_count)) return;
    uint64_t end = code + code_size;
    /* rows at the code's start, at every map entry, and where an inlined
     * range begins or ends (the method changes there) */
    size_t cap = (size_t)e->map_count + 2 * (inl ? (size_t)e->range_count : 0) + 3;
    uint64_t *at = malloc(cap * sizeof *at);
    Rows r = { malloc(cap * sizeof *r.v), malloc(cap * sizeof *r.file), 0 };
    if (!at || !r.v || !r.file) {
        free(at);
        free(r.v);
        free(r.file);
        return;
    }
    /* each map pair's scope, once: rows ask for them all */
    int64_t *pair_scope = malloc(((size_t)e->map_count + 1) * sizeof *pair_scope);
    if (!pair_scope) {
        free(at);
        free(r.v);
        free(r.file);
        return;
    }
    for (uint32_t i = 0; i < e->map_count; i++) pair_scope[i] = inl ? scope_at(e, e->map[2 * i]) : -1;
    size_t n = 0;
    at[n++] = code - e->start;
    for (uint32_t i = 0; i < e->map_count; i++) at[n++] = e->map[2 * i];
    for (uint32_t i = 0; inl && i < e->range_count; i++) {
        at[n++] = e->ranges[i].start;
        at[n++] = e->ranges[i].end;
    }
    qsort(at, n, sizeof *at, cmp_u64);
    for (size_t i = 0; i < n; i++) {
        uint64_t a = e->start + at[i];
        if (a < code || a >= end || (i > 0 && at[i] == at[i - 1])) continue;
        const char *file;
        uint32_t line = row_line(e, pair_scope, at[i], &file);
        if (!file || !strcmp(file, "?")) line = 0;
        add_row(&r, a, line, file);
    }
    /* perf inject ends the DWARF line sequence at the last row: a row at the
     * code's end makes the last line cover the code up to it */
    if (r.n && r.v[r.n - 1].addr < end) {
        r.file[r.n] = r.file[r.n - 1];
        r.v[r.n] = (ProfJitdumpDebugEntry){ .addr = end, .line = r.v[r.n - 1].line };
        r.n++;
    }
    if (r.n) {
        rec_begin();
        ProfJitdumpDebugInfo d = { .code_addr = code, .nr_entry = r.n };
        rec_put(&d, sizeof d);
        for (uint32_t i = 0; i < r.n; i++) {
            rec_put(&r.v[i], sizeof r.v[i]);
            rec_put(r.file[i], strlen(r.file[i]) + 1);
        }
        rec_end(PROF_JITDUMP_CODE_DEBUG_INFO, prof_clock_ns());
    }
    free(pair_scope);
    free(at);
    free(r.v);
    free(r.file);
}

/* -- Unwinding ------------------------------------------------------------------- */

/* JIT_CODE_UNWINDING_INFO, right before the load it describes (perf inject
 * attaches it to the next load). */
static void write_unwinding_info(const ProfCodeLoad *e, uint64_t code, uint64_t code_size)
{
    uint8_t buf[4096];
    size_t hdr = 0;
    size_t n = prof_ehframe_build(buf, sizeof buf, code_size, code - e->start, e->unwind, e->unwind ? e->unwind_count : 0,
                                  &hdr);
    if (n == 0)
        return; /* a piece with more rules than 4 KiB of them: perf then unwinds it by frame pointers */
    rec_begin();
    ProfJitdumpUnwinding u = {.unwinding_size = n, .eh_frame_hdr_size = hdr, .mapped_size = n};
    rec_put(&u, sizeof u);
    rec_put(buf, n);
    static const uint8_t zeros[8];
    rec_put(zeros, (8 - n % 8) % 8);
    rec_end(PROF_JITDUMP_CODE_UNWINDING_INFO, prof_clock_ns());
}

/* -- The sink --------------------------------------------------------------------- */

static void on_load(const ProfCodeLoad *e, void *ctx)
{
    (void)ctx;
    if (fd < 0 || e->kind == PROF_CODE_BYTECODES) return; /* bytecodes are data, never executed */
    uint64_t code, size;
    prof_code_load_instructions(e, &code, &size);
    const char *name = e->name && e->name[0] ? e->name : "?";
    /* both describe the next load: unwinding first, debug info right before it */
    write_unwinding_info(e, code, size);
    if (fd >= 0 && (e->kind == PROF_CODE_METHOD || e->kind == PROF_CODE_BLOCK)) write_debug_info(e, code, size);
    if (fd < 0) return;
    uint64_t index = next_index++;
    rec_begin();
    ProfJitdumpLoad l = {
        .pid = pid, .tid = tid, .vma = code, .code_addr = code, .code_size = size, .code_index = index,
    };
    rec_put(&l, sizeof l);
    rec_put(name, strlen(name) + 1);
    rec_put((const void *)(uintptr_t)code, (size_t)size);
    rec_end(PROF_JITDUMP_CODE_LOAD, prof_clock_ns());
    ProfLiveEntry le = { .start = e->start, .code_offset = code - e->start, .code_size = size, .index = index };
    /* out of memory: the load is written, only a later move of it goes unrecorded */
    if (fd >= 0) prof_livecode_put(&live, &le);
}

static void on_move(uint64_t from, uint64_t to, uint64_t size, void *ctx)
{
    (void)ctx;
    (void)size;
    if (fd < 0 || !prof_livecode_move(&live, from, to)) return; /* not code this dump loaded */
    const ProfLiveEntry *le = prof_livecode_get(&live, to);
    rec_begin();
    ProfJitdumpMove m = {
        .pid = pid,
        .tid = tid,
        .vma = to + le->code_offset,
        .old_code_addr = from + le->code_offset,
        .new_code_addr = to + le->code_offset,
        .code_size = le->code_size,
        .code_index = le->index,
    };
    rec_put(&m, sizeof m);
    rec_end(PROF_JITDUMP_CODE_MOVE, prof_clock_ns());
}

static const ProfCodeSink sink = {
    .name = "jitdump",
    .load = on_load,
    .move = on_move,
    .free = prof_livecode_sink_free, /* no record type says it (jitdump.h); empty while fd < 0 */
    .ctx = &live,
};

void prof_jitdump_close(void)
{
    if (fd >= 0) {
        rec_begin();
        ProfJitdumpRecord c = { 0 };
        rec_put(&c, sizeof c);
        rec_end(PROF_JITDUMP_CODE_CLOSE, prof_clock_ns());
    }
    if (marker != MAP_FAILED) munmap(marker, marker_len);
    marker = MAP_FAILED;
    if (fd >= 0) close(fd);
    fd = -1;
    prof_livecode_clear(&live);
    free(rec);
    rec = NULL;
    rec_len = rec_cap = 0;
}

static void close_at_exit(void) { prof_jitdump_close(); }

const ProfCodeSink *prof_jitdump_open(const char *dir, char *err, size_t errlen)
{
    prof_jitdump_close();
    pid = (uint32_t)getpid();
    tid = (uint32_t)gettid();
    next_index = 1;
    snprintf(path, sizeof path, "%s/" PROF_JITDUMP_NAME_FMT, dir && dir[0] ? dir : ".", (int)pid);
    /* As the perf map (perfmap.c): an old dump of ours with our pid is
     * stale, another user's file or link is left alone (report/safefile.h). */
    fd = report_safefile_create(path, O_RDWR, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, errlen);
    if (fd == REPORT_SAFEFILE_FOREIGN) {
        /* not ours to remove: the VM runs on, without the dump */
        fprintf(stderr, "stvm: warning: no jitdump: %s\n", err);
        fd = -1;
        if (!at_exit_registered) at_exit_registered = atexit(close_at_exit) == 0;
        return &sink;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot create the jitdump %s: %s", path, strerror(errno));
        return NULL;
    }
    ProfJitdumpHeader h = {
        .magic = PROF_JITDUMP_MAGIC,
        .version = PROF_JITDUMP_VERSION,
        .total_size = sizeof h,
        .elf_mach = EM_X86_64,
        .pid = pid,
        .timestamp = prof_clock_ns(),
    };
    int saved = 0;
    if (!write_all(fd, &h, sizeof h)) {
        saved = errno;
        snprintf(err, errlen, "cannot write the jitdump %s: %s", path, strerror(saved));
    } else {
        marker_len = (size_t)sysconf(_SC_PAGESIZE);
        marker = mmap(NULL, marker_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (marker == MAP_FAILED) {
            saved = errno;
            snprintf(err, errlen,
                     "cannot map the jitdump %s executable (perf record learns of the dump from that mapping): %s%s",
                     path, strerror(saved),
                     saved == EPERM || saved == EACCES ? "; is its directory on a noexec mount? choose another "
                                                         "with --jitdump-dir"
                                                       : "");
        }
    }
    if (saved) {
        close(fd);
        fd = -1;
        unlink(path);
        return NULL;
    }
    if (!at_exit_registered) at_exit_registered = atexit(close_at_exit) == 0;
    return &sink;
}
