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

/* The line of the last (bcpc, line) pair at or before bcpc; the first pair's
 * when bcpc precedes them all; 0 when there is no table. */
static uint32_t line_of(const ProfCodeLoad *e, uint32_t bcpc)
{
    if (!e->line_count) return 0;
    uint32_t lo = 0, hi = e->line_count; /* first pair with pair.bcpc > bcpc */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e->lines[2 * mid] <= bcpc) lo = mid + 1;
        else hi = mid;
    }
    return e->lines[2 * (lo ? lo - 1 : 0) + 1];
}

typedef struct Rows {
    ProfJitdumpDebugEntry *v;
    uint32_t n;
} Rows;

/* Appends a row; a row at the address of the last one replaces its line
 * (the range before it was empty), a row repeating the last line adds
 * nothing. */
static void add_row(Rows *r, uint64_t addr, uint32_t line)
{
    if (!line) return;
    if (r->n && r->v[r->n - 1].addr == addr) {
        r->v[r->n - 1].line = line;
        if (r->n > 1 && r->v[r->n - 2].line == line) r->n--;
        return;
    }
    if (r->n && r->v[r->n - 1].line == line) return;
    r->v[r->n++] = (ProfJitdumpDebugEntry){ .addr = addr, .line = line };
}

/* The DEBUG_INFO of a method or block, written before its LOAD. The
 * placement of rows is explained in jitdump.h. */
static void write_debug_info(const ProfCodeLoad *e, uint64_t code, uint64_t code_size)
{
    if (!e->source || !e->source[0] || !strcmp(e->source, "?") || !e->line_count) return;
    uint64_t end = code + code_size;
    Rows r = { malloc(((size_t)e->map_count + 3) * sizeof *r.v), 0 };
    if (!r.v) return;
    add_row(&r, code, line_of(e, e->map_count ? e->map[1] : 0));
    for (uint32_t i = 0; i < e->map_count; i++) {
        uint64_t at = e->start + e->map[2 * i];
        if (at < code || at >= end) continue;
        /* past the last entry: out-of-line or epilogue code of the last bytecode */
        uint32_t next = i + 1 < e->map_count ? e->map[2 * (i + 1) + 1] : e->map[2 * i + 1];
        add_row(&r, at, line_of(e, next));
    }
    /* perf inject ends the DWARF line sequence at the last row: a row at the
     * code's end makes the last line cover the code up to it */
    if (r.n && r.v[r.n - 1].addr < end) {
        uint32_t last = r.v[r.n - 1].line;
        r.v[r.n++] = (ProfJitdumpDebugEntry){ .addr = end, .line = last };
    }
    rec_begin();
    ProfJitdumpDebugInfo d = { .code_addr = code, .nr_entry = r.n };
    rec_put(&d, sizeof d);
    size_t flen = strlen(e->source) + 1;
    for (uint32_t i = 0; i < r.n; i++) {
        rec_put(&r.v[i], sizeof r.v[i]);
        rec_put(e->source, flen);
    }
    free(r.v);
    rec_end(PROF_JITDUMP_CODE_DEBUG_INFO, prof_clock_ns());
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
