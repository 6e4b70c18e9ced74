/*
 * report/samples.c — the store of unwound samples. See samples.h.
 */
#include "report/samples.h"

#include <stdlib.h>
#include <string.h>

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

bool report_samples_add(SampleStore *st, uint64_t time_ns, uint32_t tid, uint64_t kernel_ip, const uint64_t *pcs,
                         size_t npcs)
{
    if (npcs > REPORT_MAX_FRAMES)
        npcs = REPORT_MAX_FRAMES;
    if (!grow((void **)&st->v, &st->cap, st->n + 1, sizeof *st->v) ||
        !grow((void **)&st->pcs, &st->cappcs, st->npcs + npcs, sizeof *st->pcs))
        return false;
    StoredSample *s = &st->v[st->n++];
    s->time_ns = time_ns;
    s->tid = tid;
    s->npcs = (uint32_t)npcs;
    s->kernel_ip = kernel_ip;
    s->interp_ip = 0;
    s->first = st->npcs;
    if (npcs)
        memcpy(st->pcs + st->npcs, pcs, npcs * sizeof *pcs);
    st->npcs += npcs;
    return true;
}

void report_samples_free(SampleStore *st)
{
    free(st->v);
    free(st->pcs);
    memset(st, 0, sizeof *st);
}
