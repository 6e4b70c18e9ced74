/*
 * report/profile.h — the inside of a Profile, for the renderers
 * (text.c, pprof.c, folded.c). Producers use report.h only.
 *
 *   Profile
 *   ├─ header        ReportHeader, strings owned
 *   ├─ warnings[]    owned strings: what it cannot show, printed first
 *   ├─ notes[]       owned strings, printed in order
 *   ├─ mappings[]    ReportMappingInfo, strings owned     ┐ each interned
 *   ├─ functions[]   ReportFunctionInfo, strings and       │ through its own
 *   │                map/lines arrays owned                │ ReportIndex
 *   ├─ locations[]   (function, address, line)             ┘
 *   ├─ samples[]     (time, tid, frames[first .. first+nframes), weight)
 *   └─ frames[]      location indices of all samples, each stack leaf first
 *
 * Invariants: every function's mapping is -1 or a valid mapping index;
 * every location's function and every stored frame is a valid index (a
 * sample naming an unknown location is refused and counted in
 * rejected_samples, never stored).
 */
#ifndef REPORT_PROFILE_H
#define REPORT_PROFILE_H

#include "report/index.h"
#include "report/report.h"

typedef struct ReportLocation {
    int function;
    uint64_t address;
    int line;
} ReportLocation;

typedef struct ReportSample {
    uint64_t time_ns;
    uint32_t tid;
    uint32_t nframes;
    size_t first;    /* into Profile.frames */
    uint64_t weight; /* 1; CPU ns in a CPU-weighted profile (ReportHeader.cpu_weighted) */
    uint32_t group;  /* 0: none; else Profile.groups[group - 1] (report_profile_merge) */
} ReportSample;

/* The process a merged profile's sample came from: pprof's sample labels
 * "pid" and "cmd". */
typedef struct ReportGroup {
    int64_t pid;
    char *cmd;
} ReportGroup;

struct Profile {
    ReportHeader header;
    char **notes;
    size_t nnotes, notes_cap;
    char **warnings;
    size_t nwarnings, warnings_cap;

    ReportMappingInfo *mappings;
    size_t nmappings, mappings_cap;
    ReportIndex mapping_index;

    ReportFunctionInfo *functions;
    size_t nfunctions, functions_cap;
    ReportIndex function_index;

    ReportLocation *locations;
    size_t nlocations, locations_cap;
    ReportIndex location_index;

    ReportSample *samples;
    size_t nsamples, samples_cap;
    int *frames;
    size_t nframes, frames_cap;
    uint64_t rejected_samples;
    ReportGroup *groups;
    size_t ngroups, groups_cap;

    /* An allocation profile (report.h): alloc set, and alloc_values[i]
     * belongs to samples[i]. */
    bool is_alloc;
    ReportAllocHeader alloc;
    ReportAllocValues *alloc_values;
    size_t nalloc_values, alloc_values_cap;
};

/* Sample i's allocation values; zeros for a sample that has none. */
ReportAllocValues report_profile_alloc_values(const Profile *p, size_t sample);

/* The first lines of every text report (report/text.c): the VM, the date,
 * the warnings, the VM's sizes. */
void report_text_head(FILE *out, const Profile *p);
/* The text report of an allocation profile (report/alloctext.c). */
bool report_write_alloc_text(FILE *out, const Profile *p, const ReportTextOptions *opt, char *err, size_t errlen);
/* The frame of an allocation sample that allocated (alloctext.c says which:
 * its methods table's rule; pprof.c labels samples with it). */
uint32_t report_alloc_site_frame(const Profile *p, const ReportSample *s);

static inline const int *report_profile_frames(const Profile *p, const ReportSample *s)
{
    return p->frames + s->first;
}

static inline const ReportFunctionInfo *report_profile_leaf_function(const Profile *p, const ReportSample *s)
{
    return &p->functions[p->locations[p->frames[s->first]].function];
}

/* Renderers sum sample weights and show the sums as samples through these
 * (report/profile.c): in a CPU-weighted profile a sum of CPU nanoseconds
 * over the sampling period ("weighted samples"), else the count itself. */
double report_profile_samples(const Profile *p, uint64_t weight);
uint64_t report_profile_rounded(const Profile *p, uint64_t weight);
uint64_t report_profile_total_weight(const Profile *p);
/* The CPU time one sample stands for (ns): the requested period, else the
 * achieved one; 0 when neither is known. */
int64_t report_profile_period_ns(const Profile *p);

/* The row name of an inlined function (ReportFunctionInfo.inlined_into):
 * "B>>sel (inlined)" inlined into A>>sel is "B>>sel (inlined into A>>sel)",
 * malloc'd; NULL for any other function. The text reports' rows (text.c,
 * alloctext.c) and vmprofd diff's agree on it. */
char *report_inlined_label(const ReportFunctionInfo *f);

/* The text report's callers section (report/callers.c). */
void report_write_callers(FILE *out, const Profile *p);

#endif
