/*
 * vmprofd/progress.c — the countdown line. See progress.h.
 */
#include "vmprofd/progress.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

void vmprofd_progress_init(Progress *pr, bool quiet)
{
    pr->enabled = !quiet && isatty(STDERR_FILENO);
    pr->drawn = false;
}

void vmprofd_progress_update(Progress *pr, pid_t pid, double seconds_left, uint64_t samples)
{
    if (!pr->enabled)
        return;
    /* \r back to the start, \033[K erase what a longer line left behind. */
    fprintf(stderr, "\rvmprofd: sampling pid %d, %.0f s left, %llu samples\033[K", (int)pid,
            ceil(seconds_left > 0 ? seconds_left : 0), (unsigned long long)samples);
    fflush(stderr);
    pr->drawn = true;
}

void vmprofd_progress_clear(Progress *pr)
{
    if (pr->enabled && pr->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    pr->drawn = false;
}
