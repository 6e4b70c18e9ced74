/*
 * vm/boot/boot.h — bringing the VM up and running the program: the top of
 * vm/, where the layers below are put together (the GC client, the JIT's
 * hooks, the primitive tables, the exit reports).
 *
 * Who may call: vm/main.c, tests.
 */
#ifndef VM_BOOT_BOOT_H
#define VM_BOOT_BOOT_H

#include "vm/model/primitive.h"
#include "vm/model/vm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Boot: heap, well-known objects, core classes. false + message on failure. */
bool vm_boot(const VmOptions *opts, char *err, size_t errlen);

/* Runs `system initialize: args`; answers the process exit status. */
int vm_run(int argc, char **argv);

/* --print-stats */
void vm_print_stats(FILE *out);

/* VMProfiler's class side (vm/boot/prim_profiler.c): here because it reads
 * the interpreter and the JIT runtime both. */
extern const VmPrimDef vm_prims_profiler[];

#endif
