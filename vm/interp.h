/*
 * vm/interp.h — the bytecode interpreter.
 *
 * Registers (ip, sp, fp) live in C locals of vm_interpret; they are written
 * back to the vm_saved_* variables before anything that collects, walks the
 * stack or exits (the "Protect" rule of STYLE.md).
 */
#ifndef VM_INTERP_H
#define VM_INTERP_H

#include "gc/heap.h"

#include <stdio.h>

/* Sends `selector` to receiver with args on a fresh stack and runs until
 * that send returns; answers its result. Used once, to start the program. */
Oop vm_interpret(Oop receiver, Oop selector, Oop *args, int nargs);

void vm_interp_visit_roots(GcVisitFn visit, void *ctx);
/* The frame the GC walks from while machine code runs a runtime routine. */
void vm_interp_set_saved_frame(Oop *sp, Oop *fp);

/* Prints "Class>>selector (File.som:line)" lines, oldest first. */
void vm_print_backtrace(FILE *out);

#endif
