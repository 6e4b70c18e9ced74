/*
 * vmprofd/resolve.c — stored samples to a report Profile. See resolve.h.
 */
#include "vmprofd/resolve.h"

#include <string.h>

static int intern_plain(Profile *p, const char *name, int *fn_cache, uint64_t addr)
{
    if (*fn_cache < 0) {
        ReportFunctionInfo f;
        memset(&f, 0, sizeof f);
        f.name = name;
        f.region = REPORT_REGION_REST;
        f.mapping = -1;
        *fn_cache = report_profile_add_function(p, &f);
    }
    return report_profile_add_location(p, *fn_cache, addr, 0);
}

void vmprofd_resolve_samples(Profile *p, Symbolizer *sym, const SampleStore *st)
{
    int kernel_fn = -1, unknown_fn = -1;
    int frames[VMPROFD_MAX_FRAMES + 1];
    for (size_t i = 0; i < st->n; i++) {
        const StoredSample *s = &st->v[i];
        size_t n = 0;
        if (s->kernel_ip)
            frames[n++] = intern_plain(p, "[kernel]", &kernel_fn, s->kernel_ip);
        for (uint32_t k = 0; k < s->npcs; k++) {
            uint64_t pc = st->pcs[s->first + k];
            /* Frames above the leaf are return addresses: the call is the
             * instruction before them. */
            frames[n++] = sym ? vmprofd_symbolize(sym, p, pc, k > 0) : intern_plain(p, "[unknown]", &unknown_fn, pc);
        }
        if (n == 0)
            frames[n++] = intern_plain(p, "[unknown]", &unknown_fn, 0);
        report_profile_add_sample(p, s->time_ns, s->tid, frames, n);
    }
}
