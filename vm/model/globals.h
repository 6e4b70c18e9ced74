/*
 * vm/model/globals.h — the global dictionary and the class table's growth.
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
/* Calls fn on every global, in table order (vm/boot/snapshot.c saves them). */
void vm_global_each(void (*fn)(Oop key, Oop value, void *ctx), void *ctx);
/* The symbol table, for vm/boot/snapshot.c: every symbol in table order, and
 * entering an existing Symbol object (false if it is not a Symbol or its
 * name is taken). */
void vm_symbol_each(void (*fn)(Oop sym, void *ctx), void *ctx);
bool vm_symbol_adopt(Oop sym);

/* Appends a class-table entry and answers its index. */
uint32_t vm_class_table_add(Oop cls);
/* Grows the table with nil entries up to n (the fixed indices of object.h). */
void vm_class_table_reserve(size_t n);

void vm_universe_visit_roots(GcVisitFn visit, void *ctx);
void vm_universe_fill_nil_slots(void);
/* Empties the symbols, the globals and the class table and forgets the
 * well-known objects: a refused snapshot leaves no trace (vm/boot/snapshot.c). */
void vm_universe_reset(void);

#endif
