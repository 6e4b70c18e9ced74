/*
 * vmprofd/offcpu.h — naming what a thread did off the CPU, for wall-clock
 * sampling (--event wall): the leaf pseudo-frame of an off-CPU sample and
 * the report's line of off-CPU shares.
 *
 * An off-CPU sample (state other than R in /proc/PID/task/TID/stat) gets
 * "[off-CPU: NAME]" above its leaf, NAME being the system call it was
 * blocked in ("[off-CPU: read]", "[off-CPU: clock_nanosleep]"), or, when it
 * was in none, its state as /proc spells it ("[off-CPU: S (sleeping)]").
 * System call names come from a table generated at build time from the
 * kernel headers (vmprofd/CMakeLists.txt says why).
 *
 * Who may call: vmprofd/session.c, tests.
 */
#ifndef VMPROFD_OFFCPU_H
#define VMPROFD_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest "[off-CPU: ...]" name (system call names are under 32 bytes). */
#define VMPROFD_OFFCPU_LABEL_MAX 64

/* The x86-64 system call's name, NULL when the number is not one. */
const char *vmprofd_offcpu_syscall_name(long nr);
/* /proc's description of a state letter: 'S' -> "S (sleeping)". */
const char *vmprofd_offcpu_state_name(char state);
/* Whether a sample in this state is off-CPU ('R', running or runnable, is
 * on-CPU; so is an unknown state 0). */
bool vmprofd_offcpu_is_off(char state);
/* The pseudo-frame of an off-CPU sample; syscall_nr -1: none. */
void vmprofd_offcpu_label(char state, long syscall_nr, char *buf, size_t len);

/* Samples per off-CPU label, for the report's share line. */
typedef struct OffCpuCount {
    char name[VMPROFD_OFFCPU_LABEL_MAX];
    uint64_t n;
} OffCpuCount;

typedef struct OffCpuTally {
    uint64_t samples, off;   /* all wall-clock samples, and the off-CPU ones */
    OffCpuCount *by;         /* by label, in first-seen order */
    size_t nby;
} OffCpuTally;

/* Counts one sample; label NULL: on-CPU. */
void vmprofd_offcpu_count(OffCpuTally *t, const char *label);
/* "off-CPU: 49.6 % of 412 wall-clock samples (clock_nanosleep 48.1 %,
 * read 1.5 %)": the most frequent first, at most 8 named. */
void vmprofd_offcpu_summary(const OffCpuTally *t, char *buf, size_t len);
void vmprofd_offcpu_free(OffCpuTally *t);

#endif
