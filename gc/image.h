/*
 * gc/image.h — old space as a relocatable byte image: what a snapshot of
 * the booted heap (vm/boot/snapshot.h) saves and restores of object memory.
 *
 * An image is the bytes of [old_start, old_top) taken while young space is
 * empty, so no old object points outside old space and the remembered set
 * is not needed: the copy's headers have their GC bits cleared, and a
 * restored heap starts with an empty set. Every pointer in an image points
 * into the image, at the writer's addresses; a restore maps the file's
 * bytes at its own old_start and adds the difference (usually none: see
 * GcConfig.old_start_hint) to every pointer slot, after checking that each
 * object lies inside the image and each pointer lands on an object's start.
 * So a corrupt image is refused, never followed.
 *
 * Who may call: vm/boot/snapshot.c.
 */
#ifndef GC_IMAGE_H
#define GC_IMAGE_H

#include "gc/heap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when young space holds no object (eden and survivors empty). */
bool gc_image_young_empty(void);

/* Bytes of old space in use, and its first address (the image's base). */
size_t gc_image_old_bytes(void);
uintptr_t gc_image_old_base(void);

/* Copies old space to dst (gc_image_old_bytes() bytes) with every header's
 * GC bits cleared. Young space must be empty (false otherwise). */
bool gc_image_copy_out(uint8_t *dst, size_t len);

/* Maps len bytes of file fd at offset (a multiple of the page size) as this
 * heap's old space, which must be empty (nothing allocated old since
 * gc_heap_init), copy-on-write: pages the VM never writes stay shared with
 * the page cache. The image was taken at src_base; when that is where old
 * space is (GcConfig.old_start_hint), nothing is written. Checks every
 * object's extent, every class index against class_count and every pointer
 * slot against the image, and relocates the pointers. false with a reason
 * in err (and old space empty again) when the image is malformed or does
 * not fit. Counts the bytes as allocated, as a boot that made them would. */
bool gc_image_map(int fd, uint64_t offset, size_t len, uintptr_t src_base, size_t class_count, char *err,
                  size_t errlen);

/* The two halves of gc_image_map, for a caller that reads the bytes once
 * mapped (vm/boot/snapshot.c checksums them there: each page is then touched
 * once, and a first touch is what a start pays for). map_raw maps and
 * answers old_start, checking nothing; adopt checks, relocates and takes
 * the bytes as old space. After map_raw, call adopt or gc_image_discard. */
const uint8_t *gc_image_map_raw(int fd, uint64_t offset, size_t len, char *err, size_t errlen);
bool gc_image_adopt(size_t len, uintptr_t src_base, size_t class_count, char *err, size_t errlen);

/* Relocates one Oop taken from the last restored image's tables (the VM's
 * roots): SmallIntegers and 0 stay; a pointer must have pointed at the
 * start of an object of the image, else false and *slot is untouched. */
bool gc_image_relocate(Oop *slot);

/* Forgets the last restore's source range (its tables are relocated). */
void gc_image_finish(void);

/* Empties old space again (anonymous memory, as gc_heap_init left it)
 * after a restore whose VM tables proved bad. */
void gc_image_discard(void);

/* The identity-hash generator's state: saved with an image so hashes made
 * after a restored boot are the ones a boot from source would make. */
uint32_t gc_image_hash_state(void);
void gc_image_set_hash_state(uint32_t state);

#endif
