/*
 * vm/model/bitfield.h — fields of a packed word, named as Lua's lopcodes.h
 * names an instruction's: a field F has F_POS (its lowest bit) and F_SIZE
 * (its width in bits), stated once in the word's own header
 * (vm/model/frameflags.h, vm/model/methodheader.h), and every mask, shift
 * and accessor derives from those two. F is the field's whole prefix
 * (VM_FRAME_BCPC); each word's header wraps these for its own fields
 * (VM_FRAME_GET(fl, BCPC)).
 *
 * Words are intptr_t values (SmallIntegers untagged), non-negative.
 *
 * Who may include: the headers of packed words; header-only.
 */
#ifndef VM_MODEL_BITFIELD_H
#define VM_MODEL_BITFIELD_H

#include <stdint.h>

/* n one-bits at position p (lopcodes.h's MASK1). */
#define VM_MASK1(n, p) ((intptr_t)(~(~(uintptr_t)0 << (n)) << (p)))
/* Field F's bits in place. */
#define VM_BITS_MASK(F) VM_MASK1(F##_SIZE, F##_POS)
/* The largest value field F holds. */
#define VM_BITS_MAX(F) VM_MASK1(F##_SIZE, 0)
/* Whether v fits field F (a negative v never does). */
#define VM_BITS_FITS(F, v) ((uintptr_t)(v) <= (uintptr_t)VM_BITS_MAX(F))
/* Field F of word w. */
#define VM_BITS_GET(w, F) (((w) >> F##_POS) & VM_BITS_MAX(F))
/* v in field F's place, to or into a word whose F is 0 (v must fit:
 * unmasked, as lopcodes.h's CREATE_ABC, so building a word costs shifts
 * and ors only). */
#define VM_BITS_PUT(F, v) ((intptr_t)(v) << F##_POS)
/* w with field F replaced by v. */
#define VM_BITS_SET(w, F, v) (((w) & ~VM_BITS_MASK(F)) | (VM_BITS_PUT(F, v) & VM_BITS_MASK(F)))

#endif
