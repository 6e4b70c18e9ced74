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

static void on_load(const ProfCodeLoad *e, void *ctx)
{
    (void)ctx;
    if (fd < 0 || e->kind == PROF_CODE_BYTECODES) return; /* bytecodes are data, never executed */
    uint64_t code, size;
    prof_code_load_instructions(e, &code, &size);
    const char *name = e->name && e->name[0] ? e->name : "?";
    ProfLiveEntry le = { .start = e->start, .code_offset = code - e->start, .code_size = size, .name = (char *)name };
    write_line(code, size, name);
    /* out of memory: the line is written, only a later move of it goes unmapped */
    if (fd >= 0) prof_livecode_put(&live, &le);
}

static void on_move(uint64_t from, uint64_t to, uint64_t size, void *ctx)
{
    (void)ctx;
    (void)size;
    if (fd < 0 || !prof_livecode_move(&live, from, to)) return; /* not code this map named */
    const ProfLiveEntry *le = prof_livecode_get(&live, to);
    write_line(to + le->code_offset, le->code_size, le->name ? le->name : "?");
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
