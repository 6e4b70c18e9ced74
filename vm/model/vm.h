/*
 * vm/model/vm.h — VM-wide options, counters, the clock, and the ways out:
 * VM_ASSERT, vm_panic, vm_out_of_memory, vm_exit (vm/model/panic.c).
 *
 * Single-threaded: one interpreter runs on the VM thread. The counters are
 * read by the profiler (export segment, in-image primitives) and printed in
 * the report's Events section. Bringing the VM up is vm/boot/boot.h's.
 *
 * Who may call: all of vm/ and jit/.
 */
#ifndef VM_VM_H
#define VM_VM_H

#include "base/compiler.h"
#include "gc/object.h"
#include "proto/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

typedef struct VmOptions {
    char **classpath;  /* directories, searched in order */
    size_t nclasspath;
    size_t heap_bytes;
    size_t eden_bytes;
    int stack_pages;
    size_t max_stack_depth; /* --max-stack-depth: frames a send may not exceed (0: the default) */
    bool gc_verify, gc_stress, small;
    bool no_jit;
    int jit_threshold;     /* invocations before a method is compiled */
    size_t code_bytes;     /* machine-code zone */
    bool jit_verify;       /* --jit-verify: check send sites and maps after every change */
    int inline_budget;     /* --inline-budget N; -1: --inline; 0: the default (vm/jit/runtime.h) */
    bool no_inline;        /* --no-inline */
    int deopt_every;       /* --deopt-every N: the stress mode; 0: off */
    int tier_up_after;     /* --tier-up-after N; -1: --tier-up; 0: the default; --no-tier-up: no_tier_up */
    bool no_tier_up;       /* --no-tier-up */
    int whole_loops;       /* 1: --whole-loops, -1: --no-whole-loops, 0: the default (vm/jit/runtime.h) */
    bool code_zone_stats;  /* --code-zone-stats: the zone analysis on stderr at exit */
    const char *disassemble; /* --disassemble 'Class>>selector': print and exit */
    const char *disassemble_after; /* --disassemble-after 'Class>>selector': print its code as the run left it */
    bool print_stats; /* --print-stats: counters on stderr at exit */
    bool no_export;   /* --no-export: no /dev/shm/stvm-<pid> segment */
    size_t export_log_bytes;    /* --export-log-size: the export's code event ring; 0 = default */
    size_t alloc_log_bytes;     /* --alloc-log-size: the export's allocation sample ring; 0 = default */
    bool no_alloc_log;          /* --no-alloc-log: none */
    const char *code_log_truth; /* --code-log-truth FILE: every code event as text (tests) */
    /* The booted core library as a file (vm/boot/snapshot.h). NONE compiles it
     * from source (the zero value: unit tests). DEFAULT uses the snapshot at
     * snapshot_path when it is right for this run, else compiles and
     * rewrites it there, quietly unless it was corrupt, and only when every
     * core class came from core_dir. READ boots from snapshot_path, or says
     * why not in one line and compiles. WRITE compiles and writes
     * snapshot_path, failing the boot if it cannot. */
    enum { VM_SNAPSHOT_NONE, VM_SNAPSHOT_DEFAULT, VM_SNAPSHOT_READ, VM_SNAPSHOT_WRITE } snapshot_mode;
    const char *snapshot_path;
    const char *core_dir;
} VmOptions;



extern VmOptions vm_options;
/* The VM's event counters live in the profiler export segment
 * (proto/export.h), so profilers read them as they change. */
extern ProfCounters *vm_counters;
extern uint64_t vm_contexts_resumed; /* divorced contexts copied back onto a page */

/* What the layers above the model add to the ways out (vm/boot/boot.c sets
 * them at boot; unset, a panic prints no Smalltalk stack and an exit runs
 * nothing): the Smalltalk backtrace, and what runs before exit(3) — the
 * rt__end probe and the --print-stats and --code-zone-stats reports. */
typedef struct VmExitHooks {
    void (*print_backtrace)(FILE *out);
    void (*before_exit)(int status);
} VmExitHooks;
void vm_set_exit_hooks(const VmExitHooks *hooks);

/* Out of memory, broken invariants: print and exit. */
noreturn void vm_out_of_memory(const char *what);
noreturn void vm_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
noreturn void vm_exit(int status);

/* VM_ASSERT(cond, fmt, ...): a broken invariant of the VM. On in every
 * build, as base/check.h's BASE_CHECK, but failing through vm_panic so the
 * Smalltalk stack is printed too:
 *   stvm: panic: FILE:LINE: FUNC: assertion 'COND' failed: MESSAGE
 * The message is optional and, when given, a string literal. */
noreturn void vm_assert_fail(const char *file, int line, const char *func, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 5, 6), cold));
#define VM_ASSERT(cond, ...)                                                                                          \
    do {                                                                                                              \
        if (BASE_UNLIKELY(!(cond))) vm_assert_fail(__FILE__, __LINE__, __func__, #cond, ": " __VA_ARGS__);             \
    } while (0)

/* Monotonic microseconds since boot (vm_ticks_start, which boot calls first). */
void vm_ticks_start(void);
uint64_t vm_ticks_usec(void);

#endif
