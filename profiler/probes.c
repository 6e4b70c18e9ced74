/*
 * profiler/probes.c — the storage of the `stvm` provider's semaphores
 * (profiler/probes.h): one 16-bit counter per probe in section .probes,
 * where tracers look for them (the address is in each probe's note).
 * Written only by tracers (the kernel's uprobe reference counter, or a tool
 * poking /proc/PID/mem); the VM only reads them.
 */
#include "profiler/probes.h"

#if STVM_PROBES

#define STVM_PROBE_SEMAPHORE_DEFINE(name, nargs) \
    volatile unsigned short stvm_##name##_semaphore __attribute__((section(".probes"), used));
STVM_PROBE_LIST(STVM_PROBE_SEMAPHORE_DEFINE)
#undef STVM_PROBE_SEMAPHORE_DEFINE

#else

/* ISO C wants a translation unit to declare something. */
typedef int prof_probes_compiled_out;

#endif
