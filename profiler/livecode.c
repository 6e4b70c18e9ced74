/*
 * profiler/livecode.c — the live pieces of code a sink knows, by address.
 */
#include "profiler/livecode.h"

#include <stdlib.h>
#include <string.h>

/* One address space: the sinks that keep a ProfLiveCode name machine code. */
#define LIVECODE_SPACE 0

static ProfLiveEntry *entry_of(uint64_t value) { return (ProfLiveEntry *)(uintptr_t)value; }

static void drop(ProfLiveEntry *e)
{
    free(e->name);
    free(e);
}

bool prof_livecode_put(ProfLiveCode *t, const ProfLiveEntry *e)
{
    if (!e->start) return false;
    ProfLiveEntry *copy = malloc(sizeof *copy);
    if (!copy) return false;
    *copy = *e;
    copy->name = NULL;
    if (e->name && !(copy->name = strdup(e->name))) {
        free(copy);
        return false;
    }
    uint64_t old;
    bool had = report_addrtable_get(&t->by_start, LIVECODE_SPACE, e->start, &old);
    if (!report_addrtable_put(&t->by_start, LIVECODE_SPACE, e->start, (uintptr_t)copy)) {
        drop(copy);
        return false;
    }
    if (had) drop(entry_of(old)); /* freed without a word, or moved over */
    return true;
}

const ProfLiveEntry *prof_livecode_get(const ProfLiveCode *t, uint64_t start)
{
    uint64_t v;
    return start && report_addrtable_get(&t->by_start, LIVECODE_SPACE, start, &v) ? entry_of(v) : NULL;
}

bool prof_livecode_move(ProfLiveCode *t, uint64_t from, uint64_t to)
{
    uint64_t v, old;
    if (!from || !to || !report_addrtable_get(&t->by_start, LIVECODE_SPACE, from, &v)) return false;
    if (from == to) return true;
    report_addrtable_take(&t->by_start, LIVECODE_SPACE, from, NULL);
    if (report_addrtable_take(&t->by_start, LIVECODE_SPACE, to, &old)) drop(entry_of(old));
    entry_of(v)->start = to;
    /* after a take a put never allocates (addrtable.h), so this holds */
    report_addrtable_put(&t->by_start, LIVECODE_SPACE, to, v);
    return true;
}

bool prof_livecode_take(ProfLiveCode *t, uint64_t start)
{
    uint64_t v;
    if (!start || !report_addrtable_take(&t->by_start, LIVECODE_SPACE, start, &v)) return false;
    drop(entry_of(v));
    return true;
}

void prof_livecode_clear(ProfLiveCode *t)
{
    size_t cursor = 0;
    for (const ReportAddrSlot *s; (s = report_addrtable_next(&t->by_start, &cursor));) drop(entry_of(s->value));
    report_addrtable_free(&t->by_start);
}

void prof_livecode_sink_free(uint64_t start, uint64_t size, void *live)
{
    (void)size;
    prof_livecode_take(live, start);
}
