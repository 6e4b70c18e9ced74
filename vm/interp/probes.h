/*
 * vm/interp/probes.h — the VM's side of the `stvm` USDT provider
 * (profiler/usdt.h, which documents every probe and its arguments): the
 * hooks that turn heap objects and VM state into probe arguments.
 *
 * The VM_PROBE_* macros are what hot paths write: each tests the probe's
 * semaphore inline and calls the out-of-line, cold vm_probe_* function only
 * while a tracer holds it raised, so the strings are built only then. The
 * vm_probe_* functions never allocate, collect or touch frames beyond
 * reading them, so they may run anywhere, inside an allocation or a
 * collection included. With STVM_PROBES=0 every macro is empty.
 *
 * Who may call: vm/ (interpreter, boot, JIT glue).
 */
#ifndef VM_PROBES_H
#define VM_PROBES_H

#include "gc/object.h"
#include "profiler/usdt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Boot and shutdown: rt__init, thread__create; rt__start and the transfer
 * to the main process; the transfer back and rt__end. vm_probe_rt_end fires
 * once, however many exits the VM takes. */
void vm_probe_rt_init(void);
void vm_probe_rt_start(void);
void vm_probe_rt_end(int status);

/* gc__start/egc__start and gc__finish/egc__finish, from the GC client's
 * before_collect and after_collect hooks. Also installs the allocation
 * observer (object__alloc) on the heap: call once the heap exists. */
void vm_probe_gc_init(void);
/* The name of the class whose instances have class_index (into buf, or a
 * constant), as object__alloc names it; never allocates. */
const char *vm_probe_class_name(uint32_t class_index, char *buf, size_t len);
void vm_probe_gc_start(bool full);
void vm_probe_gc_finish(bool full);

/* Out of line and cold: the hot paths only test and branch. */
#define VM_PROBE_COLD __attribute__((cold, noinline))

/* method__entry / method__return for method (a method or block; primitive
 * its primitive index when it runs as a primitive, else 0). */
VM_PROBE_COLD void vm_probe_method_entry(Oop method, intptr_t primitive);
VM_PROBE_COLD void vm_probe_method_return(Oop method, intptr_t primitive);
/* A stand-in for primitive fn of primitive method `method` (its index
 * `primitive`): called like fn, it fires method__entry, runs fn and fires
 * method__return (also when the primitive fails: the interpreter then
 * reports the failure, or retries a send machine code made, which fires
 * again). Primitives never nest, so the stand-in serves one call at a time. */
typedef bool (*VmProbePrimFn)(Oop *args, Oop *result);
VM_PROBE_COLD VmProbePrimFn vm_probe_primitive_fn(Oop method, intptr_t primitive, VmProbePrimFn fn);
/* method__return for the activation of frame fp (a frame a non-local return
 * unwinds, on a stack page), or of a divorced context. */
VM_PROBE_COLD void vm_probe_frame_unwound(const Oop *fp);
VM_PROBE_COLD void vm_probe_context_unwound(Oop context);

/* The JIT: the method probes' semaphore word its prologues test, which
 * they reach at a 32-bit displacement from `near` (false with the reason in
 * err when the two lie too far apart; NULL without probes); and
 * code__compact, fired when VM_PROBE_CODE_COMPACT_ENABLED(). (jit__compile
 * fires in vm/jit/jitpublish.c, which names the pieces.) */
bool vm_probe_method_semaphores(const volatile void *near, const volatile unsigned short **semaphores, char *err,
                                size_t errlen);
#define VM_PROBE_CODE_COMPACT_ENABLED() STVM_CODE_COMPACT_ENABLED()
void vm_probe_code_compact(size_t bytes_freed, uint64_t methods_moved);

/* True while a tracer holds method__entry or method__return: machine code
 * must not run new activations then (profiler/usdt.h). */
#define VM_PROBE_METHODS_TRACED() STVM_METHOD_PROBES_ENABLED()

#if STVM_PROBES
/* fn (a VmPrimFn variable) about to run primitive method `method`: while a
 * tracer holds the method probes, it becomes a stand-in that fires them
 * around the primitive (one call site either way: the hot path keeps its
 * registers). */
#define VM_PROBE_PRIMITIVE(fn, method, primitive)                                       \
    do {                                                                                \
        if (STVM_METHOD_PROBES_ENABLED()) fn = vm_probe_primitive_fn(method, primitive, fn); \
    } while (0)
#define VM_PROBE_METHOD_ENTRY(method, primitive)                                  \
    do {                                                                          \
        if (STVM_METHOD_ENTRY_ENABLED()) vm_probe_method_entry(method, primitive); \
    } while (0)
#define VM_PROBE_METHOD_RETURN(method, primitive)                                   \
    do {                                                                            \
        if (STVM_METHOD_RETURN_ENABLED()) vm_probe_method_return(method, primitive); \
    } while (0)
#define VM_PROBE_FRAME_UNWOUND(fp)                                      \
    do {                                                                \
        if (STVM_METHOD_RETURN_ENABLED()) vm_probe_frame_unwound(fp);   \
    } while (0)
#define VM_PROBE_CONTEXT_UNWOUND(context)                                    \
    do {                                                                     \
        if (STVM_METHOD_RETURN_ENABLED()) vm_probe_context_unwound(context); \
    } while (0)
#else
#define VM_PROBE_PRIMITIVE(fn, method, primitive) ((void)(fn), (void)(method), (void)(primitive))
#define VM_PROBE_METHOD_ENTRY(method, primitive) ((void)(method), (void)(primitive))
#define VM_PROBE_METHOD_RETURN(method, primitive) ((void)(method), (void)(primitive))
#define VM_PROBE_FRAME_UNWOUND(fp) ((void)(fp))
#define VM_PROBE_CONTEXT_UNWOUND(context) ((void)(context))
#endif

#endif
