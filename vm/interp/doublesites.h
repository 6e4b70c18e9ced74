/*
 * vm/interp/doublesites.h — the special sends (+ - *) the interpreter ran on Double
 * operands: a hint for the JIT, which then tries their Double path before
 * the SmallIntegers' (vm/jit/double_types.c says why the order matters).
 *
 * A direct-mapped table of site addresses, written on the interpreter's
 * inline Double path (one store) and read when a method is compiled. A
 * collision or a method moved by a full GC only loses a hint, and a hint
 * only orders two tests, never decides what they find, so the table is
 * never flushed. It is C memory, not part of a snapshot.
 *
 * Who may call: vm/interp/interp.c (note), vm/jit/runtime.c (read, for
 * the JIT).
 */
#ifndef VM_INTERP_DOUBLESITES_H
#define VM_INTERP_DOUBLESITES_H

#include "base/hash.h"

#include <stdbool.h>
#include <stdint.h>

#define VM_DOUBLE_SITES 1024
extern const uint8_t *vm_double_sites[VM_DOUBLE_SITES];

static inline const uint8_t **vm_double_site_slot(const uint8_t *site)
{
    /* as vm/interp/sendcache.h spreads sites: Fibonacci hashing of the low 32 bits */
    return &vm_double_sites[base_hash_ptr_top(site, 10)];
}
_Static_assert(VM_DOUBLE_SITES == 1 << 10, "the hash's shift matches the size");

static inline void vm_double_site_note(const uint8_t *site) { *vm_double_site_slot(site) = site; }
static inline bool vm_double_site_seen(const uint8_t *site) { return *vm_double_site_slot(site) == site; }

#endif
