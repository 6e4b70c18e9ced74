/*
 * vm/jit/piece.h — making one piece of machine code in the zone: allocate it
 * at a bound, emit into it, then finish it (labels resolved, the map and
 * unwind table written after the code) and give the rest of the bound back.
 * Every maker of code that is no compiled method's body uses it: the stubs
 * of primitives and block evaluation (vm/jit/prim_entry.c), the PICs
 * (vm/jit/sendsite.c), the enilopmarts and trampolines (vm/jit/enter.c).
 *
 * The buffer starts at the JitMethod header, copied in as data, so buffer
 * offsets are header offsets (the ones vm/jit/map.h's mcpcs and the unwind
 * table count in) and `lea reg, [header]` is a reference to p->header.
 *
 * Who may include: the files of vm/jit that make pieces.
 */
#ifndef JIT_PIECE_H
#define JIT_PIECE_H

#include "gc/object.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/map.h"
#include "vm/jit/x64.h"
#include "vm/jit/zone.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JitPiece {
    JitMethod *m;
    X64Buf b;
    X64Label header; /* bound at offset 0 */
} JitPiece;

/* Allocates a piece of `kind` with room for `bound` bytes after the header
 * (the code and what jit_piece_end writes after it), for `method` (a
 * selector for PICs, 0 for trampolines) taking nargs arguments; false when
 * the zone has no room. */
bool jit_piece_begin(JitPiece *p, JitZone *z, JitMethodKind kind, size_t bound, Oop method, int nargs);
/* Finishes the code, lays out the map (NULL: none) and the nunwind
 * (offset, rule) pairs of unwind after it, and shrinks the piece to fit.
 * Pieces are small and fixed: code that does not assemble or fit is a bug
 * in the file named `who`, and panics. */
JitMethod *jit_piece_end(JitPiece *p, JitZone *z, const JitMapBuilder *map, const uint32_t *unwind, uint32_t nunwind,
                         const char *who);

#endif
