/* report/index.c — open-addressing hash index (see index.h). */
#include "report/index.h"

#include "report/mem.h"

#include <stdlib.h>
#include <string.h>

void report_index_free(ReportIndex *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->cap = ix->count = 0;
}

uint64_t report_index_hash_str(uint64_t h, const char *s)
{
    /* The terminating NUL is hashed too, so ("ab","c") and ("a","bc")
     * differ; NULL gets a byte no string contains at its start. */
    if (!s) {
        unsigned char marker = 0xff;
        return base_fnv1a(h, &marker, 1);
    }
    return base_fnv1a(h, s, strlen(s) + 1);
}

int report_index_find(const ReportIndex *ix, uint64_t hash, ReportIndexEq eq, const void *ctx)
{
    if (ix->cap == 0)
        return -1;
    size_t mask = ix->cap - 1;
    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        const ReportIndexSlot *s = &ix->slots[i];
        if (s->item < 0)
            return -1;
        if (s->hash == hash && eq(ctx, s->item))
            return s->item;
    }
}

static void place(ReportIndexSlot *slots, size_t cap, uint64_t hash, int item)
{
    size_t mask = cap - 1;
    size_t i = (size_t)hash & mask;
    while (slots[i].item >= 0)
        i = (i + 1) & mask;
    slots[i].hash = hash;
    slots[i].item = item;
}

void report_index_insert(ReportIndex *ix, uint64_t hash, int item)
{
    if ((ix->count + 1) * 4 > ix->cap * 3) {
        size_t cap = ix->cap ? ix->cap * 2 : 64;
        ReportIndexSlot *slots = report_mem_array(cap, sizeof *slots);
        for (size_t i = 0; i < cap; i++)
            slots[i].item = -1;
        for (size_t i = 0; i < ix->cap; i++)
            if (ix->slots[i].item >= 0)
                place(slots, cap, ix->slots[i].hash, ix->slots[i].item);
        free(ix->slots);
        ix->slots = slots;
        ix->cap = cap;
    }
    place(ix->slots, ix->cap, hash, item);
    ix->count++;
}
