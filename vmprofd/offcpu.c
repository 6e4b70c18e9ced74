/*
 * vmprofd/offcpu.c — off-CPU pseudo-frames and shares. See offcpu.h.
 */
#include "vmprofd/offcpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VMPROFD_SYSCALL_NAMES: "[0] = \"read\", [1] = \"write\", ..." from
 * <asm/unistd.h>, made by vmprofd/CMakeLists.txt. */
#include "syscall_names.inc"

static const char *const syscall_names[] = {VMPROFD_SYSCALL_NAMES};

const char *vmprofd_offcpu_syscall_name(long nr)
{
    if (nr < 0 || (size_t)nr >= sizeof syscall_names / sizeof syscall_names[0])
        return NULL;
    return syscall_names[nr]; /* NULL in the gaps of the numbering */
}

const char *vmprofd_offcpu_state_name(char state)
{
    /* fs/proc/array.c's task_state_array */
    switch (state) {
    case 'R': return "R (running)";
    case 'S': return "S (sleeping)";
    case 'D': return "D (disk sleep)";
    case 'T': return "T (stopped)";
    case 't': return "t (tracing stop)";
    case 'X': return "X (dead)";
    case 'Z': return "Z (zombie)";
    case 'P': return "P (parked)";
    case 'I': return "I (idle)";
    }
    return "? (unknown state)";
}

bool vmprofd_offcpu_is_off(char state)
{
    return state != 0 && state != 'R';
}

void vmprofd_offcpu_label(char state, long syscall_nr, char *buf, size_t len)
{
    const char *name = vmprofd_offcpu_syscall_name(syscall_nr);
    if (name)
        snprintf(buf, len, "[off-CPU: %s]", name);
    else if (syscall_nr >= 0)
        snprintf(buf, len, "[off-CPU: syscall %ld]", syscall_nr); /* newer than the build's headers */
    else
        snprintf(buf, len, "[off-CPU: %s]", vmprofd_offcpu_state_name(state));
}

void vmprofd_offcpu_count(OffCpuTally *t, const char *label)
{
    t->samples++;
    if (!label)
        return;
    t->off++;
    for (size_t i = 0; i < t->nby; i++) {
        if (strcmp(t->by[i].name, label) == 0) {
            t->by[i].n++;
            return;
        }
    }
    void *bigger = realloc(t->by, (t->nby + 1) * sizeof *t->by);
    if (!bigger)
        return; /* the total stays right; the breakdown lacks this label */
    t->by = bigger;
    snprintf(t->by[t->nby].name, sizeof t->by[t->nby].name, "%s", label);
    t->by[t->nby++].n = 1;
}

static int by_count(const void *a, const void *b)
{
    uint64_t x = ((const OffCpuCount *)a)->n, y = ((const OffCpuCount *)b)->n;
    return x < y ? 1 : x > y ? -1 : 0;
}

void vmprofd_offcpu_summary(const OffCpuTally *t, char *buf, size_t len)
{
    double total = t->samples ? (double)t->samples : 1.0;
    int w = snprintf(buf, len, "off-CPU: %.1f %% of %llu wall-clock samples", 100.0 * (double)t->off / total,
                     (unsigned long long)t->samples);
    if (t->nby == 0 || w < 0 || (size_t)w >= len)
        return;
    /* sorted on a copy: the tally keeps its first-seen order */
    size_t n = t->nby;
    OffCpuCount *s = malloc(n * sizeof *s);
    if (!s)
        return;
    memcpy(s, t->by, n * sizeof *s);
    qsort(s, n, sizeof *s, by_count);
    size_t at = (size_t)w;
    for (size_t i = 0; i < n && i < 8 && at < len; i++) {
        /* "[off-CPU: read]" -> "read" */
        const char *name = s[i].name + strlen("[off-CPU: ");
        int nl = (int)strlen(name) - 1;
        w = snprintf(buf + at, len - at, "%s%.*s %.1f %%", i == 0 ? " (" : ", ", nl, name,
                     100.0 * (double)s[i].n / total);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    if (at < len)
        snprintf(buf + at, len - at, "%s)", n > 8 ? ", ..." : "");
    free(s);
}

void vmprofd_offcpu_free(OffCpuTally *t)
{
    free(t->by);
    memset(t, 0, sizeof *t);
}
