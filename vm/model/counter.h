/*
 * vm/model/counter.h — a heap method's counter slot (METHOD_COUNTER,
 * vm/model/method.h), the JIT's trigger:
 *
 *   value        meaning
 *   -----------  -------------------------------------------------------------
 *   >= 0         invocations so far (backward jumps count too: a loop in a
 *                method run once gets compiled and continues in machine code)
 *   -1           the JIT declined the method (VM_COUNTER_DECLINED)
 *   <= -2        -(address of its JitMethod): compiled (or its primitive
 *                stub; VM_COUNTER_CODE_MAX); JitMethods are 8-aligned, so
 *                never -1
 *
 * Readers and writers of the slot go through these, and counting sites
 * through vm_counter_count_run. The JitMethod is a void * here: the model
 * sits below the JIT (vm/interp/jitinterface.h gives it its type).
 *
 * Who may include: vm/ and jit/; header-only.
 */
#ifndef VM_MODEL_COUNTER_H
#define VM_MODEL_COUNTER_H

#include "gc/object.h"
#include "vm/model/method.h"

#include <stdbool.h>
#include <stdint.h>

#define VM_COUNTER_DECLINED (-1)
#define VM_COUNTER_CODE_MAX (-2) /* the counter values <= this one are code */

static inline intptr_t vm_counter(Oop m) { return oop_int(obj_slots(m)[METHOD_COUNTER]); }
static inline void vm_counter_set(Oop m, intptr_t cv) { obj_slots(m)[METHOD_COUNTER] = oop_from_int(cv); }
/* The counter value of a method compiled to code. */
static inline intptr_t vm_counter_of_code(const void *code) { return -(intptr_t)code; }
static inline bool vm_counter_is_code(intptr_t cv) { return cv <= VM_COUNTER_CODE_MAX; }
/* The code a counter value says the method has, or NULL. */
static inline void *vm_counter_code(intptr_t cv) { return vm_counter_is_code(cv) ? (void *)(-cv) : NULL; }

/* Compiles m: answers its new counter value (vm_counter_of_code(code) or
 * VM_COUNTER_DECLINED). cx is the counting site's. */
typedef intptr_t (*VmCounterCompile)(Oop m, void *cx);

/* One more run of heap method m (a call, or a backward jump in it): while m
 * is counting, count it, and when that reaches threshold compile it and
 * store what compile answers. Answers the counter value. */
static inline intptr_t vm_counter_count_run(Oop m, int threshold, VmCounterCompile compile, void *cx)
{
    intptr_t cv = vm_counter(m);
    if (cv >= 0) {
        if (++cv >= threshold) cv = compile(m, cx);
        vm_counter_set(m, cv);
    }
    return cv;
}

#endif
