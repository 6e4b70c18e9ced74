/*
 * gc/collect.c — when and how to collect: the gc_collect driver.
 *
 * gc_collect(false) scavenges unless a scavenge would be unsound or
 * pointless, in which case it runs the full GC:
 *   - the remembered set overflowed (it is incomplete);
 *   - old space passed its growth threshold (set after each full GC).
 *     The threshold never exceeds the mutator limit, so this also covers
 *     a scavenge having tenured into the reserve: fewer than eden +
 *     survivor bytes left, and the next scavenge might not fit;
 *   - --gc-stress, every GC_STRESS_FULL_EVERY-th collection.
 * Around the collector proper it calls the client's hooks, runs the
 * verifier under --gc-verify, and keeps the statistics.
 */
#include "gc/compact.h"
#include "gc/scavenge.h"
#include "gc/space.h"
#include "gc/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Under --gc-stress every collection is at least a scavenge and every
 * 16th is a full GC. A full GC walks the whole heap (boot image included)
 * where a stress scavenge of a nearly empty eden walks only the roots, so
 * one in 16 keeps stress runs within a small factor of scavenge-only cost
 * while still giving every test program many full GCs. */
#define GC_STRESS_FULL_EVERY 16

static uint64_t now_usecs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static bool full_gc_needed(void)
{
    const GcSpace *s = &gc_space;
    return s->full_wanted || s->remembered_overflowed || s->old_top > s->old_threshold ||
           (s->cfg.stress && s->collections % GC_STRESS_FULL_EVERY == 0);
}

bool gc_collect(bool full)
{
    GcSpace *s = &gc_space;
    if (!s->base)
        return false;
    if (s->in_gc)
        gc_panic("gc_collect called during a collection (from a client hook?)");
    if (!s->client.visit_roots)
        gc_panic("gc_collect called before gc_set_client: the collector has no roots");
    s->collections++;
    full = full || full_gc_needed();
    if (full) s->full_wanted = false;
    s->in_gc = true;
    if (s->client.before_collect)
        s->client.before_collect(full, s->client.client);
    if (s->cfg.verify)
        gc_verify_or_die(full ? "before full GC" : "before scavenge");

    uint64_t t0 = now_usecs();
    if (full)
        gc_compact_run();
    else
        gc_scavenge_run();
    gc_alloc_sampling_relimit(); /* eden's top moved: the sample point's limit with it */
    uint64_t dt = now_usecs() - t0;

    if (full) {
        gc_stats.full_gcs++;
        gc_stats.full_usecs += dt;
        if (dt > gc_stats.full_max_usecs)
            gc_stats.full_max_usecs = dt;
        gc_space_set_threshold(s->old_top - gc_old_start);
        /* Live data that leaves less than half an eden of old space can
         * absorb no more than a scavenge or two: every safe point would then
         * run another full GC that frees nothing (quadratic, and the program
         * never finishes). Stop now with the same message as a failed GC. */
        if (s->old_top + s->eden_bytes / 2 > s->old_limit) {
            fprintf(stderr, "stvm: out of memory: %zu bytes live after a full GC, old space holds %zu (raise --heap-size)\n",
                    (size_t)(s->old_top - gc_old_start), (size_t)(s->old_limit - gc_old_start));
            exit(EXIT_FAILURE);
        }
    } else {
        gc_stats.scavenges++;
        gc_stats.scavenge_usecs += dt;
        if (dt > gc_stats.scavenge_max_usecs)
            gc_stats.scavenge_max_usecs = dt;
    }

    if (s->cfg.verify)
        gc_verify_or_die(full ? "after full GC" : "after scavenge");
    /* A scavenge may have tenured old space past its threshold or limit:
     * the next safe point then runs the full GC. */
    gc_collect_wanted = s->cfg.stress || s->full_wanted || s->remembered_overflowed || s->old_top > s->old_threshold;
    s->in_gc = false;
    if (s->client.after_collect)
        s->client.after_collect(full, s->client.client);
    gc_alloc_poll_watch(); /* a tracer that attached during the collection is seen from here */
    return true;
}

void gc_collect_full_soon(void)
{
    gc_space.full_wanted = true;
    gc_collect_wanted = true;
}
