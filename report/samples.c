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
    s->weight = 1;
    s->whole = false;
    s->label = 0;
    s->first = st->npcs;
    if (npcs)
        memcpy(st->pcs + st->npcs, pcs, npcs * sizeof *pcs);
    st->npcs += npcs;
    return true;
}

bool report_samples_add_raw(SampleStore *st, const ProfRawStack *raw)
{
    size_t nk = raw->nkernel < PROF_RAW_MAX_KERNEL ? raw->nkernel : PROF_RAW_MAX_KERNEL;
    size_t nl = raw->nleaf < PROF_RAW_MAX_LEAF ? raw->nleaf : PROF_RAW_MAX_LEAF;
    size_t ns = raw->nst < PROF_RAW_MAX_ST ? raw->nst : PROF_RAW_MAX_ST;
    size_t nr = raw->nroot < PROF_RAW_MAX_ROOT ? raw->nroot : PROF_RAW_MAX_ROOT;
    size_t n = nk + nl + ns + nr;
    if (!grow((void **)&st->v, &st->cap, st->n + 1, sizeof *st->v) ||
        !grow((void **)&st->pcs, &st->cappcs, st->npcs + n, sizeof *st->pcs))
        return false;
    StoredSample *s = &st->v[st->n++];
    memset(s, 0, sizeof *s);
    s->weight = 1;
    s->time_ns = raw->time_ns;
    s->tid = raw->tid;
    s->npcs = (uint32_t)n;
    s->kernel_ip = nk ? raw->kernel[0] : 0;
    s->first = st->npcs;
    s->whole = true;
    s->raw_mode = (uint8_t)raw->mode;
    s->nkernel = (uint16_t)nk;
    s->nleaf = (uint16_t)nl;
    s->nst = (uint16_t)ns;
    s->nroot = (uint16_t)nr;
    s->raw_flags = raw->flags;
    s->raw_why = raw->why;
    s->top[0] = raw->top_pc;
    s->top[1] = raw->top_sp;
    s->top[2] = raw->top_fp;
    s->top[3] = raw->top_bytes;
    memcpy(s->top + 4, raw->top_words, sizeof raw->top_words);
    if (n == 0) /* no frames at all (a walk that faulted at once): pcs may still be NULL */
        return true;
    uint64_t *d = st->pcs + st->npcs;
    memcpy(d, raw->kernel, nk * 8);
    memcpy(d + nk, raw->leaf, nl * 8);
    memcpy(d + nk + nl, raw->st, ns * 8);
    memcpy(d + nk + nl + ns, raw->root, nr * 8);
    st->npcs += n;
    return true;
}

uint32_t report_samples_label(SampleStore *st, const char *name)
{
    for (size_t i = 0; i < st->nlabels; i++)
        if (strcmp(st->labels[i], name) == 0)
            return (uint32_t)i + 1;
    char **bigger = realloc(st->labels, (st->nlabels + 1) * sizeof *bigger);
    if (!bigger)
        return 0;
    st->labels = bigger;
    if (!(st->labels[st->nlabels] = strdup(name)))
        return 0;
    return (uint32_t)++st->nlabels;
}

void report_samples_free(SampleStore *st)
{
    for (size_t i = 0; i < st->nlabels; i++)
        free(st->labels[i]);
    free(st->labels);
    free(st->v);
    free(st->pcs);
    memset(st, 0, sizeof *st);
}
