/*
 * profiler/perfmap.c — writing /tmp/perf-PID.map as code loads and moves.
 */
#define _GNU_SOURCE
#include "profiler/perfmap.h"

#include "profiler/livecode.h"
#include "report/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fd = -1;
static char path[4096];
static ProfLiveCode live;
static bool at_exit_registered;

const char *prof_perfmap_path(void) { return fd >= 0 ? path : ""; }

/* A write error (disk full) ends the map, not the VM: say so once. */
static void give_up(int saved)
{
    fprintf(stderr, "stvm: warning: cannot write the perf map %s: %s; it ends here\n", path, strerror(saved));
    close(fd);
    fd = -1;
    prof_livecode_clear(&live);
}

static void write_line(uint64_t code, uint64_t size, const char *name)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%" PRIx64 " %" PRIx64 " ", code, size);
    /* the name is the rest of the line: a newline inside would start a bogus one */
    for (const char *p = name; *p && n < (int)sizeof line - 1; p++) line[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
    line[n++] = '\n';
    for (int done = 0; done < n;) {
        ssize_t w = write(fd, line + done, (size_t)(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            give_up(w < 0 ? errno : EIO);
            return;
        }
        done += (int)w;
    }
}

/* A piece with inlined methods is several symbols: perf map lines are
 * flat (start, size, name) with no notion of inlining, and perf resolves
 * an address inside overlapping lines to whichever it happened to keep,
 * so the piece's instructions are cut into consecutive, non-overlapping
 * parts: its own method's ("A>>sel") and each inlined range's ("B>>sel
 * (inlined into A>>sel)", the innermost method there). The parts are kept
 * as the entry's "name", one "OFFSET SIZE NAME" line each (offset from the
 * first instruction, hex), with the entry's index (the sink's own number)
 * PARTS, so a move writes them again at the new address. */
#define PARTS 1
static char *parts_of(const ProfCodeLoad *e, uint64_t code, uint64_t size, const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    uint64_t at = 0; /* from code */
    uint64_t code_off = code - e->start;
    for (uint32_t i = 0; i < e->range_count; i++) {
        const ProfInlineRange *r = &e->ranges[i];
        if (r->scope >= e->scope_count) continue;
        uint64_t from = r->start > code_off ? r->start - code_off : 0;
        uint64_t to = r->end > code_off ? r->end - code_off : 0;
        if (to > size) to = size;
        if (from < at) from = at;
        if (from >= to) continue;
        if (from > at) fprintf(f, "%" PRIx64 " %" PRIx64 " %s\n", at, from - at, name);
        const char *b = e->scopes[r->scope].name;
        fprintf(f, "%" PRIx64 " %" PRIx64 " %s (inlined into %s)\n", from, to - from, b && b[0] ? b : "?", name);
        at = to;
    }
    if (at < size) fprintf(f, "%" PRIx64 " %" PRIx64 " %s\n", at, size - at, name);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Writes the lines of an entry at code. */
static void write_entry(uint64_t code, const ProfLiveEntry *le)
{
    const char *name = le->name ? le->name : "?";
    if (le->index != PARTS) {
        write_line(code, le->code_size, name);
        return;
    }
    for (const char *p = name; *p && fd >= 0;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        uint64_t off = 0, sz = 0;
        int used = 0;
        char part[1024];
        if (sscanf(p, "%" SCNx64 " %" SCNx64 " %n", &off, &sz, &used) == 2 && (size_t)used <= n) {
            snprintf(part, sizeof part, "%.*s", (int)(n - (size_t)used), p + used);
            write_line(code + off, sz, part);
        }
        p += n + (nl ? 1 : 0);
    }
}

static void on_load(const ProfCodeLoad *e, void *ctx)
{
    (void)ctx;
    if (fd < 0 || e->kind == PROF_CODE_BYTECODES) return; /* bytecodes are data, never executed */
    uint64_t code, size;
    prof_code_load_instructions(e, &code, &size);
    const char *name = e->name && e->name[0] ? e->name : "?";
    char *parts = e->scopes && e->ranges && e->range_count ? parts_of(e, code, size, name) : NULL;
    ProfLiveEntry le = { .start = e->start, .code_offset = code - e->start, .code_size = size,
                         .index = parts ? PARTS : 0, .name = parts ? parts : (char *)name };
    write_entry(code, &le);
    /* out of memory: the lines are written, only a later move of them goes unmapped */
    if (fd >= 0) prof_livecode_put(&live, &le);
    free(parts);
}

static void on_move(uint64_t from, uint64_t to, uint64_t size, void *ctx)
{
    (void)ctx;
    (void)size;
    if (fd < 0 || !prof_livecode_move(&live, from, to)) return; /* not code this map named */
    const ProfLiveEntry *le = prof_livecode_get(&live, to);
    write_entry(to + le->code_offset, le);
}

static const ProfCodeSink sink = {
    .name = "perf map",
    .load = on_load,
    .move = on_move,
    .free = prof_livecode_sink_free, /* empty while fd < 0 */
    .ctx = &live,
};

void prof_perfmap_close(void)
{
    if (fd >= 0) close(fd);
    fd = -1;
    prof_livecode_clear(&live);
}

static void close_at_exit(void) { prof_perfmap_close(); }

const ProfCodeSink *prof_perfmap_open(const char *where, char *err, size_t errlen)
{
    prof_perfmap_close();
    if (where) snprintf(path, sizeof path, "%s", where);
    else snprintf(path, sizeof path, PROF_PERFMAP_PATH_FMT, (int)getpid());
    /* A map left at /tmp/perf-PID.map by an earlier process with our pid is
     * stale when it is ours; anyone else's (planted there, or a link to a
     * victim) is never opened (report/safefile.h). O_APPEND keeps lines
     * whole. */
    fd = report_safefile_create(path, O_WRONLY | O_APPEND, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, errlen);
    if (fd == REPORT_SAFEFILE_FOREIGN) {
        /* not ours to remove: the VM runs on, without the map */
        fprintf(stderr, "stvm: warning: no perf map: %s\n", err);
        fd = -1;
        return &sink;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot create the perf map %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!at_exit_registered) at_exit_registered = atexit(close_at_exit) == 0;
    return &sink;
}
