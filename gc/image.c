/*
 * gc/image.c — old space as a relocatable byte image. See gc/image.h.
 */
#include "gc/image.h"

#include "base/error.h"
#include "gc/space.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define GC_BITS (OBJ_GC_REMEMBERED | OBJ_GC_MARKED | OBJ_GC_FORWARDED)

/* The last restore's source range and the distance it moved, for
 * gc_image_relocate. */
static uintptr_t image_base;
static size_t image_len;
static intptr_t image_delta;
static uint64_t *image_starts; /* one bit per image word: an Oop starts there */
static size_t mapped_len;      /* bytes of old space mapped from a file, until a discard */

bool gc_image_young_empty(void)
{
    const GcSpace *s = &gc_space;
    return s->base && gc_eden_top == s->eden_start && s->surv_top == gc_space_surv_start();
}

size_t gc_image_old_bytes(void) { return gc_space.base ? gc_space.old_top - gc_old_start : 0; }

uintptr_t gc_image_old_base(void) { return gc_old_start; }

static bool clear_gc_bits(Oop o, void *ctx)
{
    intptr_t to_copy = *(intptr_t *)ctx;
    *(uint64_t *)((uintptr_t)o + (uintptr_t)to_copy) &= ~GC_BITS;
    return true;
}

bool gc_image_copy_out(uint8_t *dst, size_t len)
{
    if (!gc_image_young_empty() || len != gc_image_old_bytes()) return false;
    memcpy(dst, (const void *)gc_old_start, len);
    /* walk the original (its headers give the extents), clear in the copy */
    intptr_t to_copy = (intptr_t)dst - (intptr_t)gc_old_start;
    gc_space_walk(gc_old_start, gc_space.old_top, clear_gc_bits, &to_copy);
    return true;
}

static bool is_start(uintptr_t p)
{
    if (p < image_base || p - image_base >= image_len || (p & 7)) return false;
    size_t w = (p - image_base) / 8;
    return (image_starts[w / 64] >> (w % 64)) & 1;
}

/* Pass 1: every object lies inside the image, with a sane header; marks
 * where each Oop starts (pointers must land on one). At the image's
 * addresses in `mem`, the copy already in old space. */
static bool check_objects(uintptr_t mem, size_t len, size_t class_count, char *err, size_t errlen)
{
    size_t off = 0;
    while (off < len) {
        if (len - off < 16) {
            base_error(err, errlen, "heap image: an object at +%zu runs past the end (%zu bytes)", off, len);
            return false;
        }
        const uint64_t *w = (const uint64_t *)(mem + off);
        size_t hdr = off;
        if ((w[0] >> 56) == OBJ_SLOTS_OVERFLOW) {
            if ((w[1] >> 56) != OBJ_SLOTS_OVERFLOW || (w[0] & (((uint64_t)1 << 56) - 1)) < OBJ_SLOTS_OVERFLOW) {
                base_error(err, errlen, "heap image: a bad overflow word at +%zu (image of %zu bytes)", off, len);
                return false;
            }
            hdr += 8;
        }
        Oop o = (Oop)(mem + hdr);
        size_t total = obj_total_bytes(o);
        if (total > len - off) {
            base_error(err, errlen, "heap image: an object at +%zu runs past the end (%zu bytes)", off, len);
            return false;
        }
        uint32_t f = obj_format(o);
        bool known_format = f == FMT_POINTERS || f == FMT_WORDS || f >= FMT_BYTES;
        if (!known_format || obj_class_index(o) == 0 || obj_class_index(o) >= class_count) {
            base_error(err, errlen, "heap image: the object at +%zu has a bad header (class index %zu)", hdr,
                 (size_t)obj_class_index(o));
            return false;
        }
        if (f >= FMT_METHOD && (obj_num_slots(o) == 0 || !oop_is_int(obj_slots(o)[0]) ||
                                obj_pointer_slots(o) > obj_num_slots(o) || obj_pointer_slots(o) == 0)) {
            base_error(err, errlen, "heap image: the method at +%zu has a bad header word (%zu slots)", hdr,
                 obj_num_slots(o));
            return false;
        }
        size_t word = hdr / 8;
        image_starts[word / 64] |= (uint64_t)1 << (word % 64);
        off += total;
    }
    return true;
}

/* Pass 2: every pointer slot lands on an object start; relocate it. */
static bool relocate_objects(uintptr_t mem, size_t len, char *err, size_t errlen)
{
    for (uintptr_t a = mem; a < mem + len;) {
        Oop o = gc_space_oop_at(a);
        a += obj_total_bytes(o);
        if (obj_header(o) & GC_BITS) *obj_header_ptr(o) &= ~GC_BITS;
        size_t n = obj_pointer_slots(o);
        for (size_t i = 0; i < n; i++)
            if (!gc_image_relocate(&obj_slots(o)[i])) {
                base_error(err, errlen, "heap image: slot %zu of the object at +%zu points outside the image", i,
                     (size_t)(o - mem));
                return false;
            }
    }
    return true;
}

/* Puts the reservation's plain anonymous memory back over [at, at+len). */
static void unmap_image(uintptr_t at, size_t len)
{
    mmap((void *)at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

const uint8_t *gc_image_map_raw(int fd, uint64_t offset, size_t len, char *err, size_t errlen)
{
    GcSpace *s = &gc_space;
    if (!s->base || s->old_top != gc_old_start) {
        base_error(err, errlen, "heap image: old space is not empty (%zu bytes used)", gc_image_old_bytes());
        return NULL;
    }
    size_t mapped = (len + GC_PAGE_BYTES - 1) & ~(GC_PAGE_BYTES - 1);
    if (len % 8 || offset % GC_PAGE_BYTES || mapped > s->old_limit - gc_old_start) {
        base_error(err, errlen, "heap image: %zu bytes at file offset %zu do not fit old space", len, (size_t)offset);
        return NULL;
    }
    /* Private, so writes (the GC, relocation) copy the page; pages never
     * written stay the page cache's: no copy, no fresh memory. */
    if (len && mmap((void *)gc_old_start, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                    (off_t)offset) == MAP_FAILED) {
        base_error(err, errlen, "heap image: cannot map %zu bytes of the file: errno %zu", len, (size_t)errno);
        return NULL;
    }
    mapped_len = mapped;
    return (const uint8_t *)gc_old_start;
}

bool gc_image_adopt(size_t len, uintptr_t src_base, size_t class_count, char *err, size_t errlen)
{
    GcSpace *s = &gc_space;
    if (len > mapped_len || len % 8 || src_base % 8) {
        base_error(err, errlen, "heap image: %zu bytes, %zu of them mapped", len, mapped_len);
        gc_image_discard();
        return false;
    }
    free(image_starts);
    image_starts = calloc(len / 8 / 64 + 1, sizeof *image_starts);
    if (!image_starts) {
        base_error(err, errlen, "heap image: no memory for %zu bytes of object starts", len / 64);
        gc_image_discard();
        return false;
    }
    /* starts are recorded at the image's addresses, which pointers hold */
    image_base = src_base;
    image_len = len;
    image_delta = (intptr_t)gc_old_start - (intptr_t)src_base;
    if (!check_objects(gc_old_start, len, class_count, err, errlen) ||
        !relocate_objects(gc_old_start, len, err, errlen)) {
        gc_image_discard();
        return false;
    }
    s->old_top = gc_old_start + len;
    gc_stats.bytes_allocated += len;
    if (s->old_top > s->old_threshold) gc_collect_wanted = true;
    return true;
}

bool gc_image_map(int fd, uint64_t offset, size_t len, uintptr_t src_base, size_t class_count, char *err,
                  size_t errlen)
{
    return gc_image_map_raw(fd, offset, len, err, errlen) && gc_image_adopt(len, src_base, class_count, err, errlen);
}

bool gc_image_relocate(Oop *slot)
{
    Oop v = *slot;
    if (!oop_is_ptr(v) || v == 0) return true;
    if (!image_starts || !is_start(v)) return false;
    /* at the writer's address (the usual case): no write, so no copy of
     * the page */
    if (image_delta) *slot = (Oop)((intptr_t)v + image_delta);
    return true;
}

void gc_image_finish(void)
{
    free(image_starts);
    image_starts = NULL;
    image_len = 0;
}

void gc_image_discard(void)
{
    size_t used = gc_space.old_top - gc_old_start;
    if (mapped_len) unmap_image(gc_old_start, mapped_len);
    gc_stats.bytes_allocated -= used;
    gc_space.old_top = gc_old_start;
    mapped_len = 0;
    gc_image_finish();
}

uint32_t gc_image_hash_state(void) { return gc_space.hash_state; }

void gc_image_set_hash_state(uint32_t state)
{
    if (state) gc_space.hash_state = state; /* xorshift32 never leaves 0: keep the seed */
}
