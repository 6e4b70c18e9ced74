/*
 * vmprofd/progress.h — the one-line countdown on stderr while sampling
 * ("vmprofd: sampling pid 4242, 7 s left, 9812 samples"), redrawn in place.
 * Only when stderr is a terminal: in a log file it would be noise.
 *
 * Who may call: vmprofd/session.c.
 */
#ifndef VMPROFD_PROGRESS_H
#define VMPROFD_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Progress {
    bool enabled;
    bool drawn;
} Progress;

void vmprofd_progress_init(Progress *pr, bool quiet);
void vmprofd_progress_update(Progress *pr, pid_t pid, double seconds_left, uint64_t samples);
/* Erases the line, so later messages start on a clean one. */
void vmprofd_progress_clear(Progress *pr);

#endif
