/*
 * vm/model/methodheader.h — a compiled method's header word (slot
 * METHOD_HEADER, a SmallInteger: vm/model/method.h), every field of it,
 * named once as vm/model/bitfield.h says.
 *
 *   bits    field       contents
 *   ------  ----------  ------------------------------------------------------
 *    0..15  SLOTS       pointer slots (METHOD_FIXED_SLOTS + literals): the
 *                       collector's, so its width is gc/object.h's
 *                       METHOD_POINTER_SLOTS_BITS; walkers outside the VM
 *                       read it through the mask vm/interp/walkfacts.c
 *                       publishes (proto/stackabi.h)
 *   16..23  NARGS       argument count
 *   24..39  NTEMPS      temps beyond the arguments
 *   40..55  MAX_STACK   deepest operand stack
 *   56      BLOCK       a block's method
 *
 * Who may include: everyone (through vm/model/method.h); header-only.
 */
#ifndef VM_MODEL_METHODHEADER_H
#define VM_MODEL_METHODHEADER_H

#include "gc/object.h"
#include "vm/model/bitfield.h"

#define VM_MHDR_SLOTS_SIZE METHOD_POINTER_SLOTS_BITS
#define VM_MHDR_NARGS_SIZE 8
#define VM_MHDR_NTEMPS_SIZE 16
#define VM_MHDR_MAX_STACK_SIZE 16
#define VM_MHDR_BLOCK_SIZE 1

#define VM_MHDR_SLOTS_POS 0
#define VM_MHDR_NARGS_POS (VM_MHDR_SLOTS_POS + VM_MHDR_SLOTS_SIZE)
#define VM_MHDR_NTEMPS_POS (VM_MHDR_NARGS_POS + VM_MHDR_NARGS_SIZE)
#define VM_MHDR_MAX_STACK_POS (VM_MHDR_NTEMPS_POS + VM_MHDR_NTEMPS_SIZE)
#define VM_MHDR_BLOCK_POS (VM_MHDR_MAX_STACK_POS + VM_MHDR_MAX_STACK_SIZE)
#define VM_MHDR_END_POS (VM_MHDR_BLOCK_POS + VM_MHDR_BLOCK_SIZE)

/* The table above, pinned. */
_Static_assert(VM_MHDR_NARGS_POS == 16 && VM_MHDR_NTEMPS_POS == 24 && VM_MHDR_MAX_STACK_POS == 40 &&
                   VM_MHDR_BLOCK_POS == 56,
               "methodheader.h: the drawing's bit numbers");
_Static_assert(VM_MHDR_END_POS <= 62, "the header fits a non-negative SmallInteger");

/* Field F (SLOTS … BLOCK) of the untagged header h: vm/model/bitfield.h. */
#define VM_MHDR_MAX(F) VM_BITS_MAX(VM_MHDR_##F)
#define VM_MHDR_FITS(F, v) VM_BITS_FITS(VM_MHDR_##F, v)
#define VM_MHDR_GET(h, F) VM_BITS_GET(h, VM_MHDR_##F)
#define VM_MHDR_PUT(F, v) VM_BITS_PUT(VM_MHDR_##F, v)

#endif
