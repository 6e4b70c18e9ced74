/*
 * vm/interp/special.h — what a special send answers without being sent, shared by
 * the interpreter (vm/interp/interp.c) and the JIT glue (vm/jit/runtime.c).
 *
 * A fast path may answer only what the send would: the method the send
 * finds must be the VM's own primitive (a program may bring its own core
 * library, where Integer>>max: is Smalltalk code), or a method whose answer
 * is known without running it (`isNil = ( ^false )`).
 *
 *   vm_int_special_prims  bit (bc - BC_SEND_ADD) set when Integer's method
 *                         for special send bc is the VM's Integer primitive
 *                         of that selector: SmallInteger fast paths of bc
 *                         apply. Classes never change once loaded, so this
 *                         is computed once, after the core is loaded.
 *   vm_double_special_prims  the same for Double's methods and the VM's
 *                         Double primitives.
 *   vm_special_constant   the answer of a method that only returns true or
 *                         false (PUSH_TRUE|PUSH_FALSE, RETURN_TOP), else 0.
 *   vm_special_bool_answers  what `a && b`, `a || b`, `a and: b`, `a or: b`
 *                         answer for a Boolean a and b, when the methods
 *                         true's and false's classes find are the core's
 *                         (recognised by their bytecodes, as
 *                         vm_special_constant does).
 *
 * Who may call: vm/interp/interp.c, vm/jit/runtime.c, tests.
 */
#ifndef VM_SPECIAL_H
#define VM_SPECIAL_H

#include "gc/object.h"
#include "vm/bytecode/bytecodes.h"

#include <stdbool.h>
#include <stdint.h>

_Static_assert(BC_N_SPECIAL <= 64, "one bit per special send in vm_int_special_prims");

extern uint64_t vm_int_special_prims;
/* The same for Double's methods and the VM's Double primitives (a Double
 * receiver's fast paths in machine code, vm/jit/double_inline.c). */
extern uint64_t vm_double_special_prims;
/* Double's // and sqrt are the VM's Double primitives (plain sends that
 * machine code inlines for Doubles). */
extern bool vm_double_divide_is_prim, vm_double_sqrt_is_prim;
/* The constant isNil [0] and notNil [1] answer for nil and for
 * SmallIntegers (vm_special_constant of their classes' methods), or 0. */
extern Oop vm_special_nil_answers[2], vm_special_int_answers[2];

static inline bool vm_int_special_is_prim(int bc)
{
    return (vm_int_special_prims >> (bc - BC_SEND_ADD)) & 1;
}

/* isNil/notNil per class index, for machine code: bit 2k set when the
 * class's method for selector k (0 isNil, 1 notNil) answers a constant,
 * bit 2k+1 when that constant is true. Filled as lookups of those
 * selectors miss the lookup cache (vm_special_note_lookup); 0 until then,
 * and for classes whose methods compute the answer. Classes never change
 * once loaded, so an entry never goes stale. */
#define VM_SPECIAL_NIL_TABLE_CLASSES 4096
extern uint8_t vm_special_nil_table[VM_SPECIAL_NIL_TABLE_CLASSES];
#define VM_SPECIAL_NIL_KNOWN(k) (1u << (2 * (k)))
#define VM_SPECIAL_NIL_TRUE(k) (2u << (2 * (k)))
/* and this bit when the class's == is Object's primitive, which answers
 * identity for a receiver that is not a number (never set for Integer's
 * and Double's classes) */
#define VM_SPECIAL_IDENTITY 0x10u

/* The lookup cache found method m for selector in class class_index. */
void vm_special_note_lookup(uint32_t class_index, Oop selector, Oop m);

/* Recomputes vm_int_special_prims (the core library must be loaded). */
void vm_special_init(void);
/* The method of class_index for sel is the VM's primitive cls>>sel (not
 * one the image put in its place). */
bool vm_special_is_own_prim(uint32_t class_index, const char *cls, const char *sel);

/* true/false when method m only answers that constant, else 0. */
Oop vm_special_constant(Oop m);

/* The Boolean sends with a Boolean argument whose answer machine code may
 * give without sending: vm_special_bool_answers[sel][r] for selector sel
 * (VM_SPECIAL_BOOL_AND ...) and receiver r (0 true, 1 false). A send of
 * them to true or false with a block argument made by the program is still
 * a send (the block may do anything); with true or false as the argument,
 * the core's methods (`&& b = ( ^self and: b )`, `and: b = ( ^b value )`,
 * `and: b = ( ^false )`, `value = ( ^self )`) answer a constant or the
 * argument. Any other method (a program's own core) leaves it unknown:
 * the send is made. */
enum { VM_SPECIAL_BOOL_AND_AND, VM_SPECIAL_BOOL_OR_OR, VM_SPECIAL_BOOL_AND, VM_SPECIAL_BOOL_OR, VM_SPECIAL_BOOL_SELS };
typedef enum VmBoolAnswer {
    VM_BOOL_UNKNOWN, /* the send is made */
    VM_BOOL_TRUE,
    VM_BOOL_FALSE,
    VM_BOOL_ARG,     /* the argument, when it is true or false (else the send is made) */
} VmBoolAnswer;
extern uint8_t vm_special_bool_answers[VM_SPECIAL_BOOL_SELS][2];
/* The selector of VM_SPECIAL_BOOL_* sel ("&&", "||", "and:", "or:"). */
extern const char *const vm_special_bool_selectors[VM_SPECIAL_BOOL_SELS];

#endif
