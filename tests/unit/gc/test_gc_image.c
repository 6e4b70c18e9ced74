/*
 * tests/unit/gc/test_gc_image.c — old space as a relocatable image
 * (gc/image.h): copied out, written to a file at a page offset, mapped back
 * into a fresh heap at another address or the same one, checked, and
 * collected afterwards; malformed images refused with old space left empty.
 */
#include "gc_test.h"

#include "gc/image.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define IMAGE_OFFSET 4096
#define CLASS_COUNT 32

/* What the first heap built: indices into its old space, by object. */
typedef struct Built {
    uintptr_t base;
    size_t len;
    size_t array_off, string_off, method_off;
    uint8_t *bytes; /* the copy */
} Built;

static Built built;
static char path[64];

static size_t off_of(Oop o) { return (size_t)(o - gc_image_old_base()); }

/* An old array holding itself, a string, a SmallInteger and a method whose
 * literal is the array; the method's header slot is a SmallInteger. */
static void build_and_copy_out(void)
{
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 0, false);
    Oop a = new_old_array(4);
    Oop s = gc_alloc_old(CLASS_INDEX_STRING, FMT_BYTES + 3, 1);
    assert_true(s != 0);
    memcpy(obj_bytes(s), "image", 5);
    Oop m = gc_alloc_old(CLASS_INDEX_METHOD, FMT_METHOD, 3);
    assert_true(m != 0);
    obj_slots(m)[0] = oop_from_int(2); /* two pointer slots: the header and one literal */
    obj_slots(m)[1] = a;
    obj_slots(m)[2] = 0x0102030405060708ull; /* bytecodes: not traced, not relocated */
    gc_store(a, 0, a);
    gc_store(a, 1, s);
    gc_store(a, 2, oop_from_int(-7));
    gc_store(a, 3, m);
    assert_true(gc_image_young_empty());
    built.base = gc_image_old_base();
    built.len = gc_image_old_bytes();
    built.array_off = off_of(a);
    built.string_off = off_of(s);
    built.method_off = off_of(m);
    built.bytes = malloc(built.len);
    assert_true(gc_image_copy_out(built.bytes, built.len));
    gc_heap_release();

    snprintf(path, sizeof path, "/tmp/stvm-test-image.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const uint8_t zeros[IMAGE_OFFSET];
    assert_int_equal(write(fd, zeros, sizeof zeros), (ssize_t)sizeof zeros);
    assert_int_equal(write(fd, built.bytes, built.len), (ssize_t)built.len);
    close(fd);
}

static int setup(void **state)
{
    (void)state;
    build_and_copy_out();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gc_heap_release();
    unlink(path);
    free(built.bytes);
    return 0;
}

/* A heap with no boot objects: old space must be empty for a restore. */
static void fresh_heap(uintptr_t old_start_hint)
{
    GcConfig cfg = {.heap_bytes = TEST_HEAP_BYTES, .eden_bytes = TEST_EDEN_BYTES, .verify = true,
                    .old_start_hint = old_start_hint};
    char err[256] = "";
    if (!gc_heap_init(&cfg, err, sizeof err)) fail_msg("gc_heap_init: %s", err);
    memset(&tc, 0, sizeof tc);
    GcClient client = {.visit_roots = test_visit_roots, .before_collect = test_before,
                       .after_collect = test_after, .client = &tc};
    gc_set_client(&client);
}

static bool map_file(size_t len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    bool ok = gc_image_map(fd, IMAGE_OFFSET, len, built.base, CLASS_COUNT, err, errlen);
    close(fd);
    return ok;
}

static void assert_world(uintptr_t base)
{
    Oop a = base + built.array_off, s = base + built.string_off, m = base + built.method_off;
    assert_int_equal(obj_class_index(a), CLASS_INDEX_ARRAY);
    assert_true(obj_at(a, 0) == a);
    assert_true(obj_at(a, 1) == s);
    assert_true(string_is(s, "image"));
    assert_true(obj_at(a, 2) == oop_from_int(-7));
    assert_true(obj_at(a, 3) == m);
    assert_true(obj_at(m, 0) == oop_from_int(2));
    assert_true(obj_at(m, 1) == a);
    assert_true(obj_at(m, 2) == 0x0102030405060708ull);
    assert_int_equal(obj_header(a) & (OBJ_GC_REMEMBERED | OBJ_GC_MARKED | OBJ_GC_FORWARDED), 0);
}

static void an_image_mapped_elsewhere_has_every_pointer_moved(void **state)
{
    (void)state;
    /* 4 GiB above the writer's heap: free, and surely not its address */
    fresh_heap(built.base + ((uintptr_t)4 << 30));
    assert_true(gc_image_old_base() != built.base);
    char err[256] = "";
    if (!map_file(built.len, err, sizeof err)) fail_msg("gc_image_map: %s", err);
    assert_int_equal(gc_image_old_bytes(), built.len);
    assert_world(gc_image_old_base());
    Oop root = gc_image_old_base() + built.array_off;
    assert_true(gc_image_relocate(&root) == false); /* already at the new address: not an image pointer */
    Oop image_root = built.base + built.array_off;
    assert_true(gc_image_relocate(&image_root));
    assert_true(image_root == gc_image_old_base() + built.array_off);
    gc_image_finish();
    assert_heap_sound();
}

static void an_image_mapped_at_its_own_address_keeps_its_pointers_and_survives_a_full_gc(void **state)
{
    (void)state;
    fresh_heap(built.base);
    assert_true(gc_image_old_base() == built.base); /* the hint was taken */
    char err[256] = "";
    if (!map_file(built.len, err, sizeof err)) fail_msg("gc_image_map: %s", err);
    assert_world(built.base);
    gc_image_finish();
    /* the string and the method stay reachable through the array; a young
     * object stored into the mapped page makes it remembered */
    tc.roots[0] = built.base + built.array_off;
    gc_store(tc.roots[0], 2, new_string("young"));
    assert_true(gc_collect(true));
    Oop a = tc.roots[0];
    assert_true(string_is(obj_at(a, 1), "image"));
    assert_true(string_is(obj_at(a, 2), "young"));
    assert_true(obj_at(obj_at(a, 3), 1) == a);
    assert_heap_sound();
}

static void a_pointer_into_the_middle_of_an_object_is_refused_and_old_space_stays_empty(void **state)
{
    (void)state;
    /* the array's slot 1 (after its header) points one word into the string */
    uint64_t bad = built.base + built.string_off + 8;
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &bad, 8, IMAGE_OFFSET + (off_t)built.array_off + 16), 8);
    close(fd);
    fresh_heap(0);
    char err[256] = "";
    assert_false(map_file(built.len, err, sizeof err));
    assert_non_null(strstr(err, "slot 1 of the object at +"));
    assert_int_equal(gc_image_old_bytes(), 0);
    Oop o = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 2); /* old space is usable, from its start */
    assert_true(o == gc_image_old_base());
    assert_int_equal(obj_at(o, 0), 0);
}

static void an_image_cut_inside_an_object_is_refused(void **state)
{
    (void)state;
    fresh_heap(0);
    char err[256] = "";
    assert_false(map_file(built.len - 8, err, sizeof err));
    assert_non_null(strstr(err, "runs past the end"));
    assert_int_equal(gc_image_old_bytes(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_image_mapped_elsewhere_has_every_pointer_moved, setup, teardown),
        cmocka_unit_test_setup_teardown(an_image_mapped_at_its_own_address_keeps_its_pointers_and_survives_a_full_gc,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_pointer_into_the_middle_of_an_object_is_refused_and_old_space_stays_empty,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(an_image_cut_inside_an_object_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
