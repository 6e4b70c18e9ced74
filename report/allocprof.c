/*
 * report/allocprof.c — sampled allocations to a Profile. See allocprof.h.
 */
#include "report/allocprof.h"

#include "report/mem.h"

#include <stdio.h>
#include <stdlib.h>

uint64_t report_alloc_estimated_bytes(const ReportAllocLog *log)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < log->n; i++)
        sum += log->v[i].weight;
    return sum;
}

void report_alloc_build(Profile *p, const ReportAllocLog *log, bool live, uint64_t interval_asked, Symbolizer *sym,
                        ResolveCode *code)
{
    uint64_t untracked = 0;
    for (size_t i = 0; i < log->n; i++)
        untracked += (log->v[i].flags & PROF_ALLOC_F_UNTRACKED) != 0;
    ReportAllocHeader a = {
        .interval = log->interval ? log->interval : interval_asked,
        .counted_bytes = report_alloclog_counted_bytes(log),
        .lost = log->stats.lost + log->stats.dropped,
        .bad = log->stats.bad_records,
        .live = live,
        /* an answer about none of the samples (the VM followed none) says nothing */
        .live_answered = live && log->have_live && untracked < log->n,
        .untracked = untracked,
    };
    report_profile_set_alloc(p, &a);
    /* one class function per name, made on first use */
    int *class_fn = report_mem_array(log->nnames ? log->nnames : 1, sizeof *class_fn);
    for (size_t i = 0; i < log->nnames; i++)
        class_fn[i] = -1;
    static _Thread_local int frames[REPORT_RESOLVE_ROOM + 1]; /* vmprofd serve resolves in several threads */
    ReportResolver *r = report_resolver_new(p, sym, code);
    for (size_t i = 0; i < log->n; i++) {
        const ReportAllocRecord *s = &log->v[i];
        if (s->stack >= log->stacks.n || s->name < 0 || (size_t)s->name >= log->nnames)
            continue; /* cannot be: the reader made both */
        if (class_fn[s->name] < 0) {
            char name[PROF_ALLOC_CLASS_NAME_MAX + 3];
            snprintf(name, sizeof name, "[%s]", log->names[s->name]);
            ReportFunctionInfo f = {.name = name, .region = REPORT_REGION_REST, .mapping = -1,
                                    .kind = REPORT_FUNCTION_CLASS};
            class_fn[s->name] = report_profile_add_function(p, &f);
        }
        frames[0] = report_profile_add_location(p, class_fn[s->name], 0, 0);
        size_t n = report_resolver_stack(r, &log->stacks, s->stack, frames + 1);
        double objects = (double)s->weight / (double)s->size;
        bool alive = a.live_answered && s->live;
        ReportAllocValues v = {
            .objects = objects,
            .live_bytes = alive ? s->weight : 0,
            .live_objects = alive ? objects : 0.0,
        };
        const StoredSample *st = &log->stacks.v[s->stack];
        report_profile_add_alloc_sample(p, st->time_ns, st->tid, frames, n + 1, s->weight, &v);
    }
    report_resolver_free(r);
    free(class_fn);
}
