/*
 * profiler/usdt.c — the storage of the `stvm` provider's semaphores
 * (profiler/usdt.h): 16-bit counters in section .probes, where tracers
 * look for them (the address is in each probe's note). Written only by
 * tracers (the kernel's uprobe reference counter, or a tool poking
 * /proc/PID/mem); the VM only reads them.
 */
#include "profiler/usdt.h"

#if STVM_PROBES

#define STVM_PROBE_SEMAPHORE_OWN(name) \
    volatile unsigned short stvm_##name##_semaphore __attribute__((section(".probes"), used));
#define STVM_PROBE_SEMAPHORE_PAIRED(name)
#define STVM_PROBE_SEMAPHORE_DEFINE(name, nargs, storage) STVM_PROBE_SEMAPHORE_##storage(name)
STVM_PROBE_LIST(STVM_PROBE_SEMAPHORE_DEFINE)

/* The method probes' semaphores are the first two 16-bit words of one
 * aligned 64-bit word whose other half stays 0, so compiled code tests both
 * with the one OR of a quadword (profiler/usdt.h, vm/jit/compile.h). C
 * cannot name elements of an array as variables of their own: the
 * assembler does, as symbols at offsets 0 and 2 of it. */
volatile unsigned short stvm_method_probe_semaphores[4] __attribute__((section(".probes"), aligned(8), used));
__asm__(".globl stvm_method__entry_semaphore\n"
        ".set stvm_method__entry_semaphore, stvm_method_probe_semaphores\n"
        ".globl stvm_method__return_semaphore\n"
        ".set stvm_method__return_semaphore, stvm_method_probe_semaphores + 2\n");
_Static_assert(sizeof stvm_method_probe_semaphores == 8, "one 64-bit word");

#else

/* ISO C wants a translation unit to declare something. */
typedef int prof_probes_compiled_out;

#endif
