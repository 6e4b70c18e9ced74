/*
 * vm/model/options_counters.c — the VM-wide state of vm/model/vm.h: options, counters,
 * the clock.
 */
#include "vm/model/vm.h"

#include <time.h>

VmOptions vm_options;
ProfCounters *vm_counters;
uint64_t vm_contexts_resumed;
static uint64_t start_usec;

static uint64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void vm_ticks_start(void) { start_usec = now_usec(); }
uint64_t vm_ticks_usec(void) { return now_usec() - start_usec; }
