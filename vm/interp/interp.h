/*
 * vm/interp/interp.h — the bytecode interpreter.
 *
 * Registers: sp lives in a C local of the interpreter, fp in the machine
 * register r14 and ip in r15 (vm/interp/interp.c says why); they are written back to the
 * vm_saved_* variables before anything that collects, walks the stack or
 * exits (the "Protect" rule of STYLE.md).
 */
#ifndef VM_INTERP_H
#define VM_INTERP_H

#include "gc/heap.h"

#include <stdio.h>

/* Sends `selector` to receiver with args on a fresh stack and runs until
 * that send returns; answers its result. Used once, to start the program. */
Oop vm_interpret(Oop receiver, Oop selector, Oop *args, int nargs);

/* Where the interpreter keeps its ip while it runs: r15, as numbered by
 * perf_event's x86 user registers (PERF_REG_X86_R15) and by ptrace's
 * user_regs_struct field r15. Valid while the sampled pc lies in the
 * function that starts at vm_interp_code_start(). */
#define VM_INTERP_IP_PERF_REG 23
/* Its frame pointer: r14 (PERF_REG_X86_R14), valid in the same places. */
#define VM_INTERP_FP_PERF_REG 22
/* The interpreter's machine code: [start, end). */
uintptr_t vm_interp_code_start(void);
uintptr_t vm_interp_code_end(void);

void vm_interp_visit_roots(GcVisitFn visit, void *ctx);
/* The selectors the VM sends by itself, interned once by the interpreter
 * (its GC roots), for machine code's generic sends too: special send bc's,
 * and #mustBeBoolean. Valid once the interpreter has run. */
Oop vm_interp_special_selector(int bc);
Oop vm_interp_symbol_must_be_boolean(void);
/* The frame the GC walks from while machine code runs a runtime routine. */
void vm_interp_set_saved_frame(Oop *sp, Oop *fp);
/* The frame the last write-back or vm_interp_set_saved_frame recorded. */
Oop *vm_interp_saved_fp(void);
/* Array's at:, at:put:, length are its primitives (not redefined): the
 * interpreter and machine code then do them inline. */
extern bool vm_array_at_is_prim, vm_array_at_put_is_prim, vm_array_length_is_prim;
extern bool vm_double_arith_is_prim; /* Double + - * < = are the primitives: machine code inlines them */

/* Prints "Class>>selector (File.som:line)" lines, oldest first. */
void vm_print_backtrace(FILE *out);

#endif
