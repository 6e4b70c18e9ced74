/*
 * report/addrtable.c — the code-address hash table (see addrtable.h).
 */
#include "report/addrtable.h"

#include <stdlib.h>
#include <string.h>

/* Fibonacci hashing (Knuth 6.4): the multiply spreads the address's middle
 * bits, where pieces of code differ, into the high bits kept here; space
 * flips the top bit so equal addresses in two spaces part ways. */
static size_t home(const ReportAddrTable *t, uint8_t space, uint64_t addr)
{
    uint64_t h = (addr ^ ((uint64_t)space << 63)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (t->cap - 1);
}

/* The slot holding the key, or the empty slot that ends its probe run. */
static size_t find(const ReportAddrTable *t, uint8_t space, uint64_t addr)
{
    size_t i = home(t, space, addr);
    while (t->slots[i].used && (t->slots[i].addr != addr || t->slots[i].space != space))
        i = (i + 1) & (t->cap - 1);
    return i;
}

static bool grow(ReportAddrTable *t)
{
    size_t ncap = t->cap ? t->cap * 2 : REPORT_ADDRTABLE_FIRST_CAP;
    ReportAddrSlot *slots = calloc(ncap, sizeof *slots);
    if (!slots)
        return false;
    ReportAddrTable bigger = {slots, ncap, t->count};
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].used)
            bigger.slots[find(&bigger, t->slots[i].space, t->slots[i].addr)] = t->slots[i];
    free(t->slots);
    *t = bigger;
    return true;
}

bool report_addrtable_get(const ReportAddrTable *t, uint8_t space, uint64_t addr, uint64_t *value)
{
    if (t->count == 0)
        return false;
    const ReportAddrSlot *s = &t->slots[find(t, space, addr)];
    if (!s->used)
        return false;
    if (value)
        *value = s->value;
    return true;
}

bool report_addrtable_put(ReportAddrTable *t, uint8_t space, uint64_t addr, uint64_t value)
{
    if (t->cap) {
        ReportAddrSlot *s = &t->slots[find(t, space, addr)];
        if (s->used) {
            s->value = value;
            return true;
        }
    }
    if ((t->count + 1) * 4 > t->cap * 3 && !grow(t))
        return false;
    t->slots[find(t, space, addr)] = (ReportAddrSlot){.addr = addr, .value = value, .space = space, .used = true};
    t->count++;
    return true;
}

bool report_addrtable_take(ReportAddrTable *t, uint8_t space, uint64_t addr, uint64_t *value)
{
    if (t->count == 0)
        return false;
    size_t hole = find(t, space, addr);
    if (!t->slots[hole].used)
        return false;
    if (value)
        *value = t->slots[hole].value;
    /* Backward shift: an entry after the hole in the same probe run moves
     * into it unless its home lies cyclically in (hole, i], where a lookup
     * would stop at the hole before reaching it. */
    size_t mask = t->cap - 1;
    for (size_t i = (hole + 1) & mask; t->slots[i].used; i = (i + 1) & mask) {
        size_t h = home(t, t->slots[i].space, t->slots[i].addr);
        bool stays = hole <= i ? (h > hole && h <= i) : (h > hole || h <= i);
        if (!stays) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    memset(&t->slots[hole], 0, sizeof t->slots[hole]);
    t->count--;
    return true;
}

const ReportAddrSlot *report_addrtable_next(const ReportAddrTable *t, size_t *cursor)
{
    while (*cursor < t->cap) {
        const ReportAddrSlot *s = &t->slots[(*cursor)++];
        if (s->used)
            return s;
    }
    return NULL;
}

void report_addrtable_clear(ReportAddrTable *t)
{
    if (t->slots)
        memset(t->slots, 0, t->cap * sizeof *t->slots);
    t->count = 0;
}

void report_addrtable_free(ReportAddrTable *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}
