/*
 * vm/model/method.h — compiled methods: one heap object per method or block.
 *
 * Format FMT_METHOD: the first `pointer slots` words are Oops, then the
 * bytecodes (vm/bytecode/bytecodes.h).
 *
 *   slot  field        contents
 *   ----  -----------  -----------------------------------------------------
 *    0    header       SmallInteger: vm/model/methodheader.h
 *    1    signature    Symbol (blocks: the home method's selector)
 *    2    holder       the class whose method (or whose method's block) it is
 *    3    line table   VM byte array (CLASS_INDEX_BYTES): LEB128 pairs
 *                      (bcpc delta, line delta as zig-zag) — or nil
 *    4    primitive    SmallInteger index into the primitive table; 0 = none
 *    5    outer        for blocks, the lexically enclosing method; else nil
 *    6    counter      SmallInteger: the JIT's trigger (vm/model/counter.h)
 *    7..  literals
 *    then bytecodes
 */
#ifndef VM_METHOD_H
#define VM_METHOD_H

#include "gc/object.h"
#include "vm/model/methodheader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    METHOD_HEADER = 0,
    METHOD_SIGNATURE = 1,
    METHOD_HOLDER = 2,
    METHOD_LINES = 3,
    METHOD_PRIMITIVE = 4,
    METHOD_OUTER = 5,
    METHOD_COUNTER = 6,
    METHOD_FIXED_SLOTS = 7,
};

static inline intptr_t vm_method_hdr(Oop m) { return oop_int(obj_slots(m)[METHOD_HEADER]); }
static inline size_t vm_method_pointer_slots(Oop m) { return (size_t)VM_MHDR_GET(vm_method_hdr(m), SLOTS); }
static inline int vm_method_nargs(Oop m) { return (int)VM_MHDR_GET(vm_method_hdr(m), NARGS); }
static inline int vm_method_ntemps(Oop m) { return (int)VM_MHDR_GET(vm_method_hdr(m), NTEMPS); }
static inline int vm_method_max_stack(Oop m) { return (int)VM_MHDR_GET(vm_method_hdr(m), MAX_STACK); }
static inline bool vm_method_is_block(Oop m) { return VM_MHDR_GET(vm_method_hdr(m), BLOCK) != 0; }
static inline Oop *vm_method_literals(Oop m) { return obj_slots(m) + METHOD_FIXED_SLOTS; }
static inline uint8_t *vm_method_bytecodes(Oop m) { return (uint8_t *)(obj_slots(m) + vm_method_pointer_slots(m)); }
static inline size_t vm_method_bytecode_length(Oop m)
{
    return (obj_num_slots(m) - vm_method_pointer_slots(m)) * 8 - (obj_format(m) & 7);
}
static inline intptr_t vm_method_make_header(size_t pointer_slots, int nargs, int ntemps, int max_stack, bool is_block)
{
    return VM_MHDR_PUT(SLOTS, pointer_slots) | VM_MHDR_PUT(NARGS, nargs) | VM_MHDR_PUT(NTEMPS, ntemps) |
           VM_MHDR_PUT(MAX_STACK, max_stack) | VM_MHDR_PUT(BLOCK, is_block ? 1 : 0);
}

/* Source line of a bytecode pc (0 if unknown). */
int vm_method_line_at(Oop m, size_t bcpc);
/* The decoded line table as (bcpc, line) pairs, up to cap of them into
 * pairs[2*cap]; answers how many there are. */
size_t vm_method_lines(Oop m, uint32_t *pairs, size_t cap);
/* "Foo>>bar:", or "[] in Foo>>bar:" for a block ("[] in Foo>>bar: #2" when
 * Foo>>bar: has several blocks: numbered in literal order, depth first). */
const char *vm_method_name(Oop m, char *buf, size_t len);
/* Path of a file relative to the classpath, for backtraces. */
const char *vm_method_file(Oop method, char *buf, size_t len);
/* The path its class was loaded from, as given (profilers open it); NULL
 * when unknown. */
const char *vm_method_source_path(Oop method, char *buf, size_t len);

#endif
