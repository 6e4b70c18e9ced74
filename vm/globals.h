/*
 * vm/globals.h — the global dictionary and the class table's growth.
 *
 * Globals map Symbols to values (classes, and whatever `global:put:` sets).
 * A missing global answers 0 (not nil: nil is a legal value).
 */
#ifndef VM_GLOBALS_H
#define VM_GLOBALS_H

#include "gc/heap.h"

Oop vm_global_get(Oop sym);
/* Changes at every vm_global_put; its low 32 bits are never 0. Machine
 * code keeps a global's value while the epoch stays what it was. */
extern uint64_t vm_globals_epoch;
void vm_global_put(Oop sym, Oop value);

/* Appends a class-table entry and answers its index. */
uint32_t vm_class_table_add(Oop cls);
/* Grows the table with nil entries up to n (the fixed indices of object.h). */
void vm_class_table_reserve(size_t n);

void vm_universe_visit_roots(GcVisitFn visit, void *ctx);
void vm_universe_fill_nil_slots(void);

#endif
