/*
 * profiler/livecode.c — the live pieces of code a sink knows, by address.
 */
#include "profiler/livecode.h"

#include <stdlib.h>
#include <string.h>

#define LIVECODE_MIN_CAP 64 /* a VM at start has a handful of trampolines; grows by doubling */

static size_t home(const ProfLiveCode *t, uint64_t start)
{
    /* pieces start 16-aligned: drop the always-zero bits, then Fibonacci hashing */
    return (size_t)(((start >> 4) * 0x9E3779B97F4A7C15ull) >> 32) & (t->cap - 1);
}

/* The slot holding start, or the empty slot where it would go. */
static size_t find(const ProfLiveCode *t, uint64_t start)
{
    size_t i = home(t, start);
    while (t->slots[i].start && t->slots[i].start != start) i = (i + 1) & (t->cap - 1);
    return i;
}

static bool grow(ProfLiveCode *t)
{
    size_t cap = t->cap ? t->cap * 2 : LIVECODE_MIN_CAP;
    ProfLiveEntry *slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    ProfLiveCode bigger = { slots, cap, t->count };
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].start) bigger.slots[find(&bigger, t->slots[i].start)] = t->slots[i];
    free(t->slots);
    *t = bigger;
    return true;
}

/* Empties slot i and shifts back the entries of its probe run that would no
 * longer be found past the hole. */
static void remove_at(ProfLiveCode *t, size_t i)
{
    size_t mask = t->cap - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!t->slots[j].start) break;
        size_t k = home(t, t->slots[j].start);
        /* slot j may fill the hole at i when its home k is not cyclically in (i, j] */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays) continue;
        t->slots[i] = t->slots[j];
        i = j;
    }
    memset(&t->slots[i], 0, sizeof t->slots[i]);
    t->count--;
}

/* Inserts entry (whose name the table now owns), replacing and freeing any
 * entry at the same start. Room must exist. */
static void insert(ProfLiveCode *t, const ProfLiveEntry *e)
{
    size_t i = find(t, e->start);
    if (t->slots[i].start) free(t->slots[i].name);
    else t->count++;
    t->slots[i] = *e;
}

bool prof_livecode_put(ProfLiveCode *t, const ProfLiveEntry *e)
{
    if (!e->start) return false;
    if ((t->count + 1) * 2 > t->cap && !grow(t)) return false;
    ProfLiveEntry copy = *e;
    copy.name = NULL;
    if (e->name && !(copy.name = strdup(e->name))) return false;
    insert(t, &copy);
    return true;
}

const ProfLiveEntry *prof_livecode_get(const ProfLiveCode *t, uint64_t start)
{
    if (!t->cap || !start) return NULL;
    size_t i = find(t, start);
    return t->slots[i].start ? &t->slots[i] : NULL;
}

bool prof_livecode_move(ProfLiveCode *t, uint64_t from, uint64_t to)
{
    if (!t->cap || !from || !to) return false;
    size_t i = find(t, from);
    if (!t->slots[i].start) return false;
    if (from == to) return true;
    ProfLiveEntry e = t->slots[i];
    remove_at(t, i); /* the count drops, so the insert below has room */
    e.start = to;
    insert(t, &e);
    return true;
}

bool prof_livecode_take(ProfLiveCode *t, uint64_t start)
{
    if (!t->cap || !start) return false;
    size_t i = find(t, start);
    if (!t->slots[i].start) return false;
    free(t->slots[i].name);
    remove_at(t, i);
    return true;
}

void prof_livecode_clear(ProfLiveCode *t)
{
    for (size_t i = 0; i < t->cap; i++) free(t->slots[i].name);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
