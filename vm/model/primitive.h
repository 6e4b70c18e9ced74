/*
 * vm/model/primitive.h — how C primitives are written and found.
 *
 * A SOM method whose body is `primitive` is bound at class-load time to the
 * VmPrimDef with the same class name, side and selector. A primitive gets
 * args[0] = receiver and args[1..nargs] = arguments; it either stores its
 * answer in *result and returns true, or returns vm_prim_error("…"), which
 * records a message the interpreter prints (with a Smalltalk backtrace)
 * before exiting 1 — SOM has no primitive fallback code.
 *
 * Primitives may allocate (allocation never collects; a 0 from a
 * constructor means the heap is exhausted: report it) but must not send
 * messages or touch frames; the few that do (block evaluation, perform:,
 * exit:, load:, fullGC, …) are interpreter primitives, see vm/interp/interp.c.
 * Stores into existing objects go through gc_store().
 */
#ifndef VM_PRIMITIVE_H
#define VM_PRIMITIVE_H

#include "gc/object.h"

#include <stdbool.h>

typedef bool (*VmPrimFn)(Oop *args, Oop *result);

typedef struct VmPrimDef {
    const char *class_name; /* "Integer", "Double", … */
    bool class_side;        /* true for class-side methods ("Integer class>>fromString:") */
    const char *selector;
    VmPrimFn fn;
} VmPrimDef;

/* Records the failure message and returns false. */
bool vm_prim_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *vm_prim_last_error(void);

#endif
