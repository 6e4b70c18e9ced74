/* report/counters.c — Memory, GCs, Compactions and Events (see counters.h). */
#include "report/counters.h"

#include "report/format.h"

#include <math.h>

#define NOT_AVAILABLE "\tnot available (the target publishes no counters)\n"

static uint64_t delta(uint64_t start, uint64_t end)
{
    return end >= start ? end - start : 0;
}

/* "<n> totalling <ms>ms (<pct> elapsed time), avg <ms>ms": totals in whole
 * milliseconds and shares with three decimals as VMProfiler printed them;
 * the average gets three decimals because one GC is well under 1 ms. */
static void timed(FILE *out, uint64_t n, uint64_t usecs, double seconds)
{
    double elapsed_pct = seconds > 0 ? (double)usecs / (seconds * 1e6) * 100.0 : 0.0;
    double avg_ms = n ? (double)usecs / 1000.0 / (double)n : 0.0;
    fprintf(out, "%llu totalling %llums (%.3f%% elapsed time), avg %.3fms\n", (unsigned long long)n,
            (unsigned long long)((usecs + 500) / 1000), elapsed_pct, avg_ms);
}

static void event(FILE *out, const char *label, uint64_t n, double seconds)
{
    double rate = seconds > 0 ? (double)n / seconds : 0.0;
    fprintf(out, "%s\t%llu (%lld per second)\n", label, (unsigned long long)n, (long long)llround(rate));
}

void report_counters_write(FILE *out, const ReportHeader *h)
{
    const ProfCounters *s = &h->start, *e = &h->end;
    double secs = h->seconds;
    bool have = h->have_counters;

    fprintf(out, "**Memory**\n");
    if (have) {
        /* Two's-complement difference: old space may shrink (a full GC). */
        int64_t old_change = (int64_t)(e->old_bytes - s->old_bytes);
        fprintf(out, "\told\t%s bytes\n", report_format_signed(old_change).s);
        fprintf(out, "\tfree\t%s bytes\n", report_format_thousands(e->old_free_bytes).s);
    } else {
        fprintf(out, NOT_AVAILABLE);
    }

    fprintf(out, "\n**GCs**\n");
    if (have) {
        uint64_t scavenges = delta(s->scavenges, e->scavenges);
        uint64_t tenures = delta(s->tenures, e->tenures);
        fprintf(out, "\tfull\t");
        timed(out, delta(s->full_gcs, e->full_gcs), delta(s->full_usecs, e->full_usecs), secs);
        fprintf(out, "\tscavenges\t");
        timed(out, scavenges, delta(s->scavenge_usecs, e->scavenge_usecs), secs);
        if (tenures)
            fprintf(out, "\ttenures\t%llu (avg %.1f GCs/tenure)\n", (unsigned long long)tenures,
                    (double)scavenges / (double)tenures);
        else
            fprintf(out, "\ttenures\t0 (no tenures)\n");
        fprintf(out, "\troot table\t%llu overflows\n",
                (unsigned long long)delta(s->root_table_overflows, e->root_table_overflows));
    } else {
        fprintf(out, NOT_AVAILABLE);
    }

    fprintf(out, "\n**Compiled Code Compactions**\n");
    if (have) {
        fprintf(out, "\t");
        timed(out, delta(s->code_compactions, e->code_compactions),
              delta(s->code_compaction_usecs, e->code_compaction_usecs), secs);
    } else {
        fprintf(out, NOT_AVAILABLE);
    }

    fprintf(out, "\n**Events**\n");
    if (have) {
        event(out, "Process switches", delta(s->process_switches, e->process_switches), secs);
        event(out, "Interrupt checks", delta(s->interrupt_checks, e->interrupt_checks), secs);
        event(out, "Event checks", delta(s->event_checks, e->event_checks), secs);
        event(out, "Stack overflows", delta(s->stack_overflows, e->stack_overflows), secs);
        event(out, "Stack page divorces", delta(s->page_divorces, e->page_divorces), secs);
    } else {
        fprintf(out, NOT_AVAILABLE);
    }
}
