/*
 * vm/model/frameflags.h — the frame's flags word (fp[FRAME_FLAGS], a
 * SmallInteger: vm/model/frame.h), every field of it, as Lua's lopcodes.h
 * does for instructions: each field's position and width are named once
 * here, and every mask, shift and accessor is derived from them.
 *
 *   bits    field          who writes it, what it says
 *   ------  -------------  ---------------------------------------------------
 *    0..7   NARGS          the frame's argument count
 *    8      BLOCK          a block activation
 *    9      CONTEXT        married to a context (vm/interp/stack.c)
 *   10..24  NTEMPS         temps beyond the arguments (the compiler allows
 *                          VM_COMPILE_MAX_VARS variables)
 *   25      TRACED         the interpreter fired method__entry for this
 *                          activation and owes it method__return (checked on
 *                          return together with CONTEXT, so an untraced
 *                          return pays nothing)
 *   26      MACHINE_CODE   the frame runs machine code (jit/DESIGN.md)
 *   27..34  PENDING_NARGS  an interpreter frame that entered machine code
 *                          keeps the argument count of that send …
 *   35..42  CALLER_NARGS   a frame activated by the interpreter for machine
 *                          code, and every machine-code frame, keeps how many
 *                          arguments its caller pushed (different when the
 *                          send was rewritten: DNU, perform:); the
 *                          interpreter reads it when it returns from a frame
 *                          it took over from machine code
 *   43..61  BCPC           … and the bcpc it resumes at (PENDING_NARGS'
 *                          frame; vm/jit/runtime.c); out-of-process stack
 *                          walkers read it too, through the position and
 *                          mask vm/interp/walkfacts.c publishes
 *                          (proto/stackabi.h)
 *
 * The word is untagged here: read it with frame_flags() and store it with
 * oop_from_int(). Machine code tests bits of the tagged word:
 * VM_FRAME_TAGGED_POS.
 *
 * Who may include: everyone that reads or builds a frame (through
 * vm/model/frame.h); header-only.
 */
#ifndef VM_MODEL_FRAMEFLAGS_H
#define VM_MODEL_FRAMEFLAGS_H

#include "vm/model/bitfield.h"

#define VM_FRAME_NARGS_SIZE 8
#define VM_FRAME_BLOCK_SIZE 1
#define VM_FRAME_CONTEXT_SIZE 1
#define VM_FRAME_NTEMPS_SIZE 15
#define VM_FRAME_TRACED_SIZE 1
#define VM_FRAME_MACHINE_CODE_SIZE 1
#define VM_FRAME_PENDING_NARGS_SIZE 8
#define VM_FRAME_CALLER_NARGS_SIZE 8
#define VM_FRAME_BCPC_SIZE 19

#define VM_FRAME_NARGS_POS 0
#define VM_FRAME_BLOCK_POS (VM_FRAME_NARGS_POS + VM_FRAME_NARGS_SIZE)
#define VM_FRAME_CONTEXT_POS (VM_FRAME_BLOCK_POS + VM_FRAME_BLOCK_SIZE)
#define VM_FRAME_NTEMPS_POS (VM_FRAME_CONTEXT_POS + VM_FRAME_CONTEXT_SIZE)
#define VM_FRAME_TRACED_POS (VM_FRAME_NTEMPS_POS + VM_FRAME_NTEMPS_SIZE)
#define VM_FRAME_MACHINE_CODE_POS (VM_FRAME_TRACED_POS + VM_FRAME_TRACED_SIZE)
#define VM_FRAME_PENDING_NARGS_POS (VM_FRAME_MACHINE_CODE_POS + VM_FRAME_MACHINE_CODE_SIZE)
#define VM_FRAME_CALLER_NARGS_POS (VM_FRAME_PENDING_NARGS_POS + VM_FRAME_PENDING_NARGS_SIZE)
#define VM_FRAME_BCPC_POS (VM_FRAME_CALLER_NARGS_POS + VM_FRAME_CALLER_NARGS_SIZE)
#define VM_FRAME_END_POS (VM_FRAME_BCPC_POS + VM_FRAME_BCPC_SIZE)

/* The table above, pinned. */
_Static_assert(VM_FRAME_NTEMPS_POS == 10 && VM_FRAME_TRACED_POS == 25 && VM_FRAME_MACHINE_CODE_POS == 26,
               "frameflags.h: the drawing's bit numbers");
_Static_assert(VM_FRAME_PENDING_NARGS_POS == 27 && VM_FRAME_CALLER_NARGS_POS == 35 && VM_FRAME_BCPC_POS == 43,
               "frameflags.h: the drawing's bit numbers");
/* A SmallInteger holds 63 bits; the top one is the sign. */
_Static_assert(VM_FRAME_END_POS <= 62, "the flags fit a non-negative SmallInteger");

/* Field F (NARGS … BCPC) of the untagged flags word: vm/model/bitfield.h. */
#define VM_FRAME_MASK(F) VM_BITS_MASK(VM_FRAME_##F)
#define VM_FRAME_MAX(F) VM_BITS_MAX(VM_FRAME_##F)
#define VM_FRAME_FITS(F, v) VM_BITS_FITS(VM_FRAME_##F, v)
#define VM_FRAME_GET(fl, F) VM_BITS_GET(fl, VM_FRAME_##F)
#define VM_FRAME_PUT(F, v) VM_BITS_PUT(VM_FRAME_##F, v)
#define VM_FRAME_SET(fl, F, v) VM_BITS_SET(fl, VM_FRAME_##F, v)
/* Field F's lowest bit in the tagged word fp[FRAME_FLAGS] (oop_from_int
 * shifts the value left by one). */
#define VM_FRAME_TAGGED_POS(F) (1 + VM_FRAME_##F##_POS)

/* The one-bit fields as masks. */
#define FRAME_FLAG_BLOCK VM_FRAME_MASK(BLOCK)
#define FRAME_FLAG_CONTEXT VM_FRAME_MASK(CONTEXT)
#define FRAME_FLAG_TRACED VM_FRAME_MASK(TRACED)
#define FRAME_FLAG_MACHINE_CODE VM_FRAME_MASK(MACHINE_CODE)

/* The flags of a new frame: every field but these is 0. */
#define FRAME_FLAGS_MAKE(nargs, ntemps, is_block) \
    (VM_FRAME_PUT(NARGS, nargs) | ((is_block) ? FRAME_FLAG_BLOCK : 0) | VM_FRAME_PUT(NTEMPS, ntemps))

#endif
