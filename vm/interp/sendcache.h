/*
 * vm/interp/sendcache.h — the interpreter's per-send-site inline cache.
 *
 * A direct-mapped side table indexed by the address of a SEND/SEND_W
 * bytecode, or of a special send (SEND_ADD …) whose inline case did not
 * apply. An entry remembers the last receiver class seen at that site,
 * the method the lookup found for it, and what kind of method it is, so a
 * hit skips the global lookup cache and, for trivial methods, the frame:
 *
 *   kind               method body (after the loader's quickening)      a hit
 *   -----------------  -----------------------------------------------  ------------------------------
 *   SENDCACHE_METHOD   anything else (no primitive)                     activates `method`, its frame's
 *                                                                       header words precomputed
 *   SENDCACHE_PRIM_FN  a primitive with a C function (SP_NONE)          calls prim_fn
 *   SENDCACHE_PRIM     another primitive (perform:, restart, …)         runs the primitive
 *   SENDCACHE_BLOCK_VALUE  the block primitives value, value:, …        activates the receiver's block
 *   SENDCACHE_GETTER   PUSH_FIELD i, RETURN_TOP                         answers receiver field i
 *   SENDCACHE_SETTER   PUSH_ARG|PUSH_VAR arg, POP_FIELD i, RETURN_SELF  stores the argument, answers self
 *   SENDCACHE_CONST    RETURN_SELF | PUSH_SELF/NIL/TRUE/FALSE/0/1/      answers `value` (self: 0)
 *                      LITERAL, RETURN_TOP
 *
 * Invariants. Every Oop an entry holds (method, value, and the site, which
 * points into a method) is in old space or immediate: methods are allocated
 * old (vm/loader/loader.c) and move only in a full GC, and a CONST entry takes
 * only old literals (most are; large integer literals are boxed young). The VM flushes
 * the table wherever it flushes the global lookup cache (vm_lookup_cache_flush:
 * after every full GC and every class load), so no entry outlives a move or
 * a change of what a lookup answers. Classes never change once loaded and
 * class indexes are never reused, so (site, class index) -> method stays
 * true between flushes. The table is C memory, never part of a snapshot.
 *
 * Who may call: vm/interp/interp.c (probe and fill), vm/model/lookup.c (flush),
 * vm/jit/runtime.c (read, as a hint for the JIT: which accessor a site ran).
 */
#ifndef VM_SENDCACHE_H
#define VM_SENDCACHE_H

#include "base/hash.h"
#include "gc/object.h"

#include <stdint.h>

enum {
    SENDCACHE_METHOD = 0,
    SENDCACHE_PRIM,
    SENDCACHE_GETTER,
    SENDCACHE_SETTER,
    SENDCACHE_CONST,
    SENDCACHE_BLOCK_VALUE,
    SENDCACHE_PRIM_FN,
};

typedef struct VmSendCacheEntry {
    const uint8_t *site; /* the send bytecode, or NULL when empty */
    uint32_t class_index;
    uint8_t kind;
    uint8_t misses; /* class misses at this site since it was filled: see VM_SENDCACHE_REFILL_EVERY */
    uint16_t field; /* GETTER/SETTER: the receiver's field index; METHOD: its temps */
    Oop method;
    union {
        Oop value;     /* CONST: the answer, 0 for self; METHOD: the new frame's flags word */
        void *prim_fn; /* PRIM_FN: the VmPrimFn */
    };
    /* METHOD, from the method's header, so the frame push need not decode it: */
    uint32_t frame_words; /* header, temps and operand stack (vm/model/frame.h) */
    uint32_t bytecodes;   /* byte offset of the bytecodes from the method's first slot */
} VmSendCacheEntry;

/* A site seeing several classes in turn (Richards' task kinds) would
 * refill its entry at every send: such a site refills at every 16th class
 * miss and otherwise sends through the global lookup cache, as without this
 * cache (refills were 13 % of Richards' instructions, callgrind). */
#define VM_SENDCACHE_REFILL_EVERY 16

/* 4096 sites, as many as the global lookup cache has entries */
#define VM_SENDCACHE_SIZE 4096
extern VmSendCacheEntry vm_sendcache[VM_SENDCACHE_SIZE];

static inline VmSendCacheEntry *vm_sendcache_entry(const uint8_t *site)
{
    /* Fibonacci hashing of the low 32 bits: sites of one method are a few
     * bytes apart, methods far apart; both spread */
    return &vm_sendcache[base_hash_ptr_top(site, 12)];
}
_Static_assert(VM_SENDCACHE_SIZE == 1 << 12, "the hash's shift matches the size");

/* Records that the send at site, for receivers of class_index, finds
 * method m (nargs arguments), classifying it as the table above says. */
void vm_sendcache_fill(VmSendCacheEntry *e, const uint8_t *site, uint32_t class_index, Oop m, int nargs);

/* Empties the table (vm/model/lookup.c, with the global lookup cache). */
void vm_sendcache_flush(void);
/* Whether m, sent with nargs arguments, is a getter (`^ field`) or a setter
 * (`field := arg`, answering self) the interpreter and machine code answer
 * without a frame; *field is the field's index. */
bool vm_sendcache_accessor_of(Oop m, int nargs, bool *setter, int *field);

#endif
