/*
 * profiler/codetruth.c — the ground-truth file of code events (see
 * codetruth.h).
 */
#include "profiler/codetruth.h"

#include "profiler/codeevents.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *truth;

static void truth_load(const ProfCodeLoad *e, void *ctx)
{
    (void)ctx;
    unsigned space = e->kind == PROF_CODE_BYTECODES ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE;
    fprintf(truth, "L %" PRIu64 " %u %" PRIx64 " %" PRIu64 " %u %s\n", prof_code_event_time(), space, e->start,
            e->size, e->kind, e->name ? e->name : "");
    for (uint32_t i = 0; e->scopes && e->ranges && i < e->range_count; i++)
        if (e->ranges[i].scope < e->scope_count)
            fprintf(truth, "R %" PRIx32 " %" PRIx32 " %s\n", e->ranges[i].start, e->ranges[i].end,
                    e->scopes[e->ranges[i].scope].name ? e->scopes[e->ranges[i].scope].name : "");
}

static void truth_move(uint64_t from, uint64_t to, uint64_t size, void *ctx)
{
    (void)ctx;
    fprintf(truth, "M %" PRIu64 " %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", prof_code_event_time(), from, to, size);
}

static void truth_free(uint64_t start, uint64_t size, void *ctx)
{
    (void)ctx;
    fprintf(truth, "F %" PRIu64 " %" PRIx64 " %" PRIu64 "\n", prof_code_event_time(), start, size);
}

static const ProfCodeSink truth_sink = {"code log truth", truth_load, truth_move, truth_free, NULL};

static void close_truth(void)
{
    if (truth && fclose(truth) != 0)
        fprintf(stderr, "stvm: warning: writing the code log truth file: %s\n", strerror(errno));
    truth = NULL;
}

bool prof_code_truth_open(const char *path, char *err, size_t errlen)
{
    truth = fopen(path, "w");
    if (!truth) {
        snprintf(err, errlen, "cannot create the code log truth file %s: %s", path, strerror(errno));
        return false;
    }
    setvbuf(truth, NULL, _IOFBF, 1 << 20); /* events come by the thousand in a compaction */
    if (!prof_code_sink_add(&truth_sink)) {
        snprintf(err, errlen, "cannot record code events to %s: too many code event sinks", path);
        fclose(truth);
        truth = NULL;
        return false;
    }
    atexit(close_truth);
    prof_code_replay(&truth_sink);
    return true;
}
