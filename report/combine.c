/*
 * report/combine.c — report_profile_merge (report.h): several processes'
 * profiles in one, each sample labelled with its process. vmprofd serve
 * answers one profile for every stvm of a host this way, as a scraper
 * (Parca, Pyroscope) wants one answer per target.
 */
#include "report/profile.h"

#include "report/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = report_mem_alloc(n);
    memcpy(d, s, n);
    return d;
}

/* A weight of src in dst's unit: both count samples, or both CPU ns. */
static uint64_t convert(const Profile *dst, const Profile *src, uint64_t w)
{
    if (dst->is_alloc || dst->header.cpu_weighted == src->header.cpu_weighted)
        return w;
    double samples = report_profile_samples(src, w);
    double v = dst->header.cpu_weighted ? samples * (double)report_profile_period_ns(dst) : samples;
    if (!(v >= 1.0))
        return 1; /* a sample stays a sample */
    return v >= 0x1p63 ? (uint64_t)INT64_MAX : (uint64_t)llround(v);
}

bool report_profile_merge(Profile *dst, const Profile *src, int64_t pid, const char *cmd)
{
    bool first = dst->ngroups == 0;
    if (!first && dst->is_alloc != src->is_alloc)
        return false;
    if (first) {
        report_profile_set_header(dst, &src->header);
        dst->header.have_counters = false; /* one VM's counters are not the sum's */
        if (src->is_alloc)
            report_profile_set_alloc(dst, &src->alloc);
    } else {
        ReportHeader *h = &dst->header;
        if (src->header.seconds > h->seconds)
            h->seconds = src->header.seconds;
        h->lost_samples += src->header.lost_samples;
        if (src->header.start_wall && (!h->start_wall || src->header.start_wall < h->start_wall))
            h->start_wall = src->header.start_wall;
        if (dst->is_alloc) {
            dst->alloc.counted_bytes += src->alloc.counted_bytes;
            dst->alloc.lost += src->alloc.lost;
            dst->alloc.bad += src->alloc.bad;
            dst->alloc.untracked += src->alloc.untracked;
            dst->alloc.live_answered = dst->alloc.live_answered && src->alloc.live_answered;
        }
    }
    for (size_t i = 0; i < src->nwarnings; i++)
        report_profile_add_warning(dst, "pid %lld: %s", (long long)pid, src->warnings[i]);
    for (size_t i = 0; i < src->nnotes; i++)
        report_profile_add_note(dst, "pid %lld: %s", (long long)pid, src->notes[i]);

    report_mem_reserve(&dst->groups, &dst->groups_cap, dst->ngroups + 1, sizeof *dst->groups);
    dst->groups[dst->ngroups] = (ReportGroup){pid, copy(cmd ? cmd : "")};
    uint32_t group = (uint32_t)++dst->ngroups;

    int *mappings = report_mem_array(src->nmappings + 1, sizeof *mappings);
    int *functions = report_mem_array(src->nfunctions + 1, sizeof *functions);
    int *locations = report_mem_array(src->nlocations + 1, sizeof *locations);
    for (size_t i = 0; i < src->nmappings; i++)
        mappings[i] = report_profile_add_mapping(dst, &src->mappings[i]);
    for (size_t i = 0; i < src->nfunctions; i++) {
        ReportFunctionInfo f = src->functions[i];
        f.mapping = f.mapping >= 0 && (size_t)f.mapping < src->nmappings ? mappings[f.mapping] : -1;
        functions[i] = report_profile_add_function(dst, &f);
    }
    for (size_t i = 0; i < src->nlocations; i++) {
        const ReportLocation *l = &src->locations[i];
        locations[i] = report_profile_add_location(dst, functions[l->function], l->address, l->line);
    }
    int *frames = NULL;
    size_t frames_cap = 0;
    for (size_t i = 0; i < src->nsamples; i++) {
        const ReportSample *s = &src->samples[i];
        const int *sf = report_profile_frames(src, s);
        report_mem_reserve(&frames, &frames_cap, s->nframes, sizeof *frames);
        for (uint32_t k = 0; k < s->nframes; k++)
            frames[k] = locations[sf[k]];
        size_t before = dst->nsamples;
        if (dst->is_alloc) {
            ReportAllocValues v = report_profile_alloc_values(src, i);
            report_profile_add_alloc_sample(dst, s->time_ns, s->tid, frames, s->nframes, s->weight, &v);
        } else {
            report_profile_add_weighted_sample(dst, s->time_ns, s->tid, frames, s->nframes, convert(dst, src, s->weight));
        }
        if (dst->nsamples > before)
            dst->samples[dst->nsamples - 1].group = group;
    }
    dst->rejected_samples += src->rejected_samples;
    free(frames);
    free(locations);
    free(functions);
    free(mappings);
    return true;
}
