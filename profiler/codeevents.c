/*
 * profiler/codeevents.c — fanning the VM's code events out to its sinks.
 */
#include "profiler/codeevents.h"

#include <time.h>

static const ProfCodeSink *sinks[PROF_CODE_MAX_SINKS];
static int nsinks;
static ProfCodeReplayFn replay;
static uint64_t event_ns;

uint64_t prof_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t prof_code_event_time(void) { return event_ns; }

bool prof_code_sink_add(const ProfCodeSink *sink)
{
    for (int i = 0; i < nsinks; i++)
        if (sinks[i] == sink) return true;
    if (nsinks == PROF_CODE_MAX_SINKS) return false;
    sinks[nsinks++] = sink;
    return true;
}

bool prof_code_observed(void) { return nsinks > 0; }

void prof_code_load(const ProfCodeLoad *e)
{
    event_ns = prof_clock_ns();
    for (int i = 0; i < nsinks; i++)
        if (sinks[i]->load) sinks[i]->load(e, sinks[i]->ctx);
}

void prof_code_move(uint64_t from, uint64_t to, uint64_t size)
{
    event_ns = prof_clock_ns();
    for (int i = 0; i < nsinks; i++)
        if (sinks[i]->move) sinks[i]->move(from, to, size, sinks[i]->ctx);
}

void prof_code_free(uint64_t start, uint64_t size)
{
    event_ns = prof_clock_ns();
    for (int i = 0; i < nsinks; i++)
        if (sinks[i]->free) sinks[i]->free(start, size, sinks[i]->ctx);
}

void prof_code_set_replay(ProfCodeReplayFn fn) { replay = fn; }

void prof_code_replay(const ProfCodeSink *to)
{
    event_ns = prof_clock_ns();
    if (replay) replay(to);
}
