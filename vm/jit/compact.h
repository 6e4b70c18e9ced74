/*
 * vm/jit/compact.h — compacting the code zone when a compile or a PIC
 * finds it full (vm/jit/DESIGN.md, "Code zone").
 *
 * Machine-code addresses held anywhere but on the stack pages are stale
 * afterwards, except held_ra. The interpreter's frame must have been
 * written back (vm_interp_set_saved_frame) so the walk finds every return
 * address.
 *
 * Who may call: vm/jit/runtime.c.
 */
#ifndef VM_JIT_COMPACT_H
#define VM_JIT_COMPACT_H

#include "gc/object.h"

/* held_ra: a return address into machine code the caller holds outside
 * the stack pages (it is relocated), or NULL. */
void vm_jit_compact(Oop *held_ra);

#endif
