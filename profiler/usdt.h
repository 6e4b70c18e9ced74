/*
 * profiler/usdt.h — the `stvm` USDT provider: statically defined tracing
 * probes that bpftrace, perf and SystemTap attach to in a running stvm
 * (<sys/sdt.h> markers from Debian's systemtap-sdt-dev). The set follows the
 * reference documents: Squeak's DTrace provider (000: method entry/return,
 * object allocation, process switches), Clozure CL's (001: full and
 * ephemeral GC, thread creation) and Pony's runtime probes (003: runtime
 * init/start/end).
 *
 * A probe site is one `nop` in the code plus an ELF note in .note.stapsdt
 * that names provider and probe, says where each argument is at the nop
 * (register, stack slot, constant) and gives the address of the probe's
 * semaphore: a 16-bit counter in section .probes that a tracer raises while
 * it is attached (the kernel does it for uprobes with a reference counter;
 * bpftrace and perf use that). A traced nop becomes a breakpoint. The notes
 * are what `readelf -n build/stvm` lists.
 *
 * Cost contract. A probe whose arguments are at hand (integers the caller
 * already has) fires unconditionally: untraced, it is the nop. A probe
 * whose arguments cost something (strings copied out of the heap,
 * statistics) is fired only under STVM_<NAME>_ENABLED(), a compare of its
 * semaphore with 0: untraced, that compare is all the VM pays. The guarded
 * ones are marked `guarded` below. Build with -DSTVM_PROBES=OFF to compile
 * every probe and every guard out (scripts/bench-probes compares the two).
 *
 *   probe              arguments                                    fires
 *   -----------------  -------------------------------------------  --------------------------------------
 *   rt__init           -                                            vm_boot starts (before the heap exists)
 *   rt__start          -                                            the program's first send (system initialize:)
 *   rt__end            int exit status                              the program ended, or vm_exit (system exit:, errors)
 *   thread__create     uint64 OS thread id                          boot, for the VM thread (stvm runs one thread)
 *   process__transfer  uint64 old id, int old priority,             control passes to another Smalltalk process:
 *                      uint64 new id, int new priority              SOM has none but the main one, so this fires
 *                                                                   twice: 0 -> 1 at rt__start (the VM hands
 *                                                                   over to the main process, id 1) and 1 -> 0
 *                                                                   before rt__end; priorities are 0 (SOM has none)
 *   gc__start          uint64 bytes in use                          a full GC (mark-compact) begins
 *   gc__finish         uint64 bytes freed                           ... ends
 *   egc__start         uint64 bytes in use, int generation          a scavenge begins; generation 0 is the nursery
 *                                                                   (eden + survivors), the only one scavenged
 *   egc__finish        uint64 bytes freed, int generation           ... ends
 *   method__entry      char *class, char *selector, int primitive   guarded: a method or block is activated, or a
 *                                                                   primitive method runs (primitive index, else 0)
 *   method__return     char *class, char *selector, int primitive   guarded: that activation returns (or is unwound
 *                                                                   by a non-local return), the primitive answered
 *   object__alloc      char *class, uint64 bytes                    guarded: any object is allocated (header
 *                                                                   included), VM-internal objects too; the
 *                                                                   semaphore is polled (gc/heap.h), so a
 *                                                                   tracer is seen from the next collection
 *                                                                   or slow-path allocation on
 *   jit__compile       char *name, uint64 start, uint64 size        guarded: a piece of machine code was made
 *                                                                   (method, block, primitive stub, PIC);
 *                                                                   start/size cover the piece, header included
 *   code__compact      uint64 bytes freed, uint64 methods moved     guarded: a code-zone compaction ended
 *
 * "bytes in use" is the heap's allocated-minus-freed count: live objects
 * and garbage not yet found, in every space. Strings are NUL-terminated
 * copies valid only while the probe fires (bpftrace: str(arg0)). Method
 * probes name the class that defines the method (a block: the class of its
 * home method) and the selector ("[] in bar:" for a block of #bar:);
 * class-side methods are "Foo class". What is not a send fires nothing:
 * SmallInteger arithmetic and comparisons, Array at:/at:put:/length and ==
 * are done inline by the interpreter and the JIT alike; a special primitive
 * (block value, perform:, invokeOn:with:) fires for the activation it leads
 * to, not for itself.
 *
 * Method probes and machine code: while a tracer holds method__entry or
 * method__return, compiled code is not entered and the interpreter runs
 * (and fires the probes for) every new activation. The two method
 * semaphores lie in one aligned 64-bit word (the rest of it 0). Every
 * compiled method's and block's prologue already loads gc_collect_wanted
 * for its interrupt check; it now ORs that word (at a fixed displacement
 * from the flag) into the test instead of testing the flag alone, so either
 * semaphore raised takes the entry's slow path, which hands the activation
 * to the interpreter (vm/jit/runtime.c, rt_entry_slow), and the interpreter does
 * not enter machine code while the word is nonzero (vm/interp/interp.c).
 * Activations running in machine code when the tracer attached finish there
 * unseen, their entries unseen too, so entries and returns stay paired; in
 * the interpreter, an activation whose entry fired is marked in its frame
 * flags (FRAME_FLAG_TRACED, vm/model/frame.h) and only those fire method__return.
 * Untraced, a compiled activation pays the OR's load, no extra instruction,
 * and nothing is recompiled when a tracer comes or goes. The price is paid
 * while tracing: methods run at the interpreter's speed, so latencies taken
 * with the method probes are the interpreter's (and carry the probes' own
 * cost, microseconds a hit). The alternative, testing the semaphores in
 * every compiled prologue and return and calling the probes from machine
 * code, cost +6.4% instructions untraced on Fibonacci under the JIT, where
 * this design costs +0.0% (valgrind's count; scripts/bench-probes).
 *
 * Who may call: vm/ (through vm/interp/probes.h, which turns heap objects into the
 * probes' arguments) and the tests that read the notes (STVM_PROBE_LIST).
 */
#ifndef PROFILER_USDT_H
#define PROFILER_USDT_H

#ifndef STVM_PROBES
#error "STVM_PROBES must be defined to 0 or 1 (the top-level CMakeLists.txt does)"
#endif

/* Every probe: X(name, argument count, semaphore storage: OWN, or PAIRED
 * for the two method probes, whose semaphores share one quadword). One
 * table: the semaphores (profiler/usdt.c) and the notes test
 * (tests/probes) come from it. */
#define STVM_PROBE_LIST(X)         \
    X(rt__init, 0, OWN)            \
    X(rt__start, 0, OWN)           \
    X(rt__end, 1, OWN)             \
    X(thread__create, 1, OWN)      \
    X(process__transfer, 4, OWN)   \
    X(gc__start, 1, OWN)           \
    X(gc__finish, 1, OWN)          \
    X(egc__start, 2, OWN)          \
    X(egc__finish, 2, OWN)         \
    X(method__entry, 3, PAIRED)    \
    X(method__return, 3, PAIRED)   \
    X(object__alloc, 2, OWN)       \
    X(jit__compile, 3, OWN)        \
    X(code__compact, 2, OWN)

#define STVM_PROBE_PROVIDER "stvm"
/* Generation of the nursery in egc__start/egc__finish. */
#define STVM_PROBE_NURSERY_GENERATION 0
/* process__transfer: the VM itself and the program's main process. */
#define STVM_PROBE_PROCESS_VM 0
#define STVM_PROBE_PROCESS_MAIN 1

#if STVM_PROBES

/* The notes carry each probe's semaphore address (sdt.h reads this macro). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#define STVM_PROBE_SEMAPHORE_DECLARE(name, nargs, storage) extern volatile unsigned short stvm_##name##_semaphore;
STVM_PROBE_LIST(STVM_PROBE_SEMAPHORE_DECLARE)
#undef STVM_PROBE_SEMAPHORE_DECLARE

/* The method probes' quadword: method__entry's semaphore, method__return's,
 * then 32 bits that stay 0 (profiler/usdt.c lays them out). */
extern volatile unsigned short stvm_method_probe_semaphores[4];

/* A semaphore's test: one compare of the word in memory and the branch
 * that uses its flags. Written in asm so the compiler neither hoists the
 * read out of the interpreter's loop (a tracer may raise it at any time)
 * nor loads it into a register first, as it must for a volatile read. */
#if defined(__x86_64__)
static inline __attribute__((always_inline)) int stvm_probe_raised16(const volatile unsigned short *semaphore)
{
    int raised;
    __asm__ volatile("cmpw $0, %1" : "=@ccne"(raised) : "m"(*semaphore));
    return raised;
}
static inline __attribute__((always_inline)) int stvm_probe_raised32(const volatile unsigned short *pair)
{
    int raised;
    __asm__ volatile("cmpl $0, %1" : "=@ccne"(raised) : "m"(*(const volatile unsigned int *)pair));
    return raised;
}
#else
static inline int stvm_probe_raised16(const volatile unsigned short *semaphore) { return *semaphore != 0; }
static inline int stvm_probe_raised32(const volatile unsigned short *pair) { return (pair[0] | pair[1]) != 0; }
#endif

#define STVM_PROBE_ON(name) __builtin_expect(stvm_probe_raised16(&stvm_##name##_semaphore), 0)

#define STVM_RT_INIT() STAP_PROBE(stvm, rt__init)
#define STVM_RT_START() STAP_PROBE(stvm, rt__start)
#define STVM_RT_END(status) STAP_PROBE1(stvm, rt__end, status)
#define STVM_THREAD_CREATE(tid) STAP_PROBE1(stvm, thread__create, tid)
#define STVM_PROCESS_TRANSFER(old_id, old_priority, new_id, new_priority) \
    STAP_PROBE4(stvm, process__transfer, old_id, old_priority, new_id, new_priority)
#define STVM_GC_START(bytes_in_use) STAP_PROBE1(stvm, gc__start, bytes_in_use)
#define STVM_GC_FINISH(bytes_freed) STAP_PROBE1(stvm, gc__finish, bytes_freed)
#define STVM_EGC_START(bytes_in_use, generation) STAP_PROBE2(stvm, egc__start, bytes_in_use, generation)
#define STVM_EGC_FINISH(bytes_freed, generation) STAP_PROBE2(stvm, egc__finish, bytes_freed, generation)
#define STVM_METHOD_ENTRY(cls, selector, primitive) STAP_PROBE3(stvm, method__entry, cls, selector, primitive)
#define STVM_METHOD_RETURN(cls, selector, primitive) STAP_PROBE3(stvm, method__return, cls, selector, primitive)
#define STVM_OBJECT_ALLOC(cls, bytes) STAP_PROBE2(stvm, object__alloc, cls, bytes)
#define STVM_JIT_COMPILE(name, start, size) STAP_PROBE3(stvm, jit__compile, name, start, size)
#define STVM_CODE_COMPACT(bytes_freed, methods_moved) STAP_PROBE2(stvm, code__compact, bytes_freed, methods_moved)

#define STVM_METHOD_ENTRY_ENABLED() STVM_PROBE_ON(method__entry)
#define STVM_METHOD_RETURN_ENABLED() STVM_PROBE_ON(method__return)
#define STVM_METHOD_PROBES_ENABLED() __builtin_expect(stvm_probe_raised32(stvm_method_probe_semaphores), 0)
#define STVM_OBJECT_ALLOC_ENABLED() STVM_PROBE_ON(object__alloc)
#define STVM_JIT_COMPILE_ENABLED() STVM_PROBE_ON(jit__compile)
#define STVM_CODE_COMPACT_ENABLED() STVM_PROBE_ON(code__compact)

#else /* probes compiled out: nothing fires, every guard is false */

#define STVM_PROBE_NOTHING() ((void)0)
#define STVM_RT_INIT() STVM_PROBE_NOTHING()
#define STVM_RT_START() STVM_PROBE_NOTHING()
#define STVM_RT_END(status) ((void)(status))
#define STVM_THREAD_CREATE(tid) ((void)(tid))
#define STVM_PROCESS_TRANSFER(old_id, old_priority, new_id, new_priority) \
    ((void)(old_id), (void)(old_priority), (void)(new_id), (void)(new_priority))
#define STVM_GC_START(bytes_in_use) ((void)(bytes_in_use))
#define STVM_GC_FINISH(bytes_freed) ((void)(bytes_freed))
#define STVM_EGC_START(bytes_in_use, generation) ((void)(bytes_in_use), (void)(generation))
#define STVM_EGC_FINISH(bytes_freed, generation) ((void)(bytes_freed), (void)(generation))
#define STVM_METHOD_ENTRY(cls, selector, primitive) ((void)(cls), (void)(selector), (void)(primitive))
#define STVM_METHOD_RETURN(cls, selector, primitive) ((void)(cls), (void)(selector), (void)(primitive))
#define STVM_OBJECT_ALLOC(cls, bytes) ((void)(cls), (void)(bytes))
#define STVM_JIT_COMPILE(name, start, size) ((void)(name), (void)(start), (void)(size))
#define STVM_CODE_COMPACT(bytes_freed, methods_moved) ((void)(bytes_freed), (void)(methods_moved))

#define STVM_METHOD_ENTRY_ENABLED() 0
#define STVM_METHOD_RETURN_ENABLED() 0
#define STVM_METHOD_PROBES_ENABLED() 0
#define STVM_OBJECT_ALLOC_ENABLED() 0
#define STVM_JIT_COMPILE_ENABLED() 0
#define STVM_CODE_COMPACT_ENABLED() 0

#endif /* STVM_PROBES */

#endif
