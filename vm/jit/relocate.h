/*
 * vm/jit/relocate.h — keeping the code zone's branches right while compaction
 * slides its pieces (vm/jit/zone.h, JitZoneRelocate's before_slide).
 *
 * Every piece that moves by `delta` has its rel32 calls and jumps to other
 * pieces rewritten so that, after the slide, they reach where their targets
 * will be. A send site whose callee is being freed goes back to unlinked
 * (its tag from the method's bytecode, its target the ceSend trampoline); a
 * closed PIC case whose callee is freed becomes empty.
 *
 * Who may call: the VM's JIT runtime, during jit_zone_compact.
 */
#ifndef JIT_RELOCATE_H
#define JIT_RELOCATE_H

#include "vm/jit/jitmethod.h"
#include "vm/jit/zone.h"

#include <stddef.h>
#include <stdint.h>

/* Rewrites piece m (a method, block or PIC; not a trampoline), which moves
 * by delta. `send` is the ceSend trampoline (trampolines never move).
 * Answers how many send sites went back to unlinked. */
uint64_t jit_relocate_piece(JitZone *zone, JitMethod *m, ptrdiff_t delta, const void *send);

#endif
