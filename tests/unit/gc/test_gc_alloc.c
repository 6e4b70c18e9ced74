/* Unit tests for gc/heap.c: allocation, formats, sizes, hashes, walks. */
#include "gc_test.h"

#include "vm/model/method.h"

static void new_pointer_object_is_filled_with_nil(void **state)
{
    (void)state;
    Oop a = new_array(5);
    assert_true(gc_is_young(a));
    assert_int_equal(obj_class_index(a), CLASS_INDEX_ARRAY);
    assert_int_equal(obj_format(a), FMT_POINTERS);
    assert_int_equal(obj_num_slots(a), 5);
    for (size_t i = 0; i < 5; i++)
        assert_true(obj_at(a, i) == nil_obj);
    assert_int_equal(obj_hash_bits(a), 0);
    assert_int_equal(obj_age(a), 0);
}

static void pointer_objects_made_before_nil_exists_are_zero_filled(void **state)
{
    (void)state;
    gc_set_fill(0);
    Oop a = new_array(3);
    for (size_t i = 0; i < 3; i++)
        assert_true(obj_at(a, i) == 0);
}

static void new_bytes_object_is_zeroed_and_records_unused_bytes(void **state)
{
    (void)state;
    Oop s = gc_alloc_bytes(CLASS_INDEX_STRING, 13);
    assert_int_equal(obj_num_slots(s), 2);
    assert_true(obj_is_bytes(s));
    assert_int_equal(obj_format(s), FMT_BYTES + 3);
    assert_int_equal(obj_byte_length(s), 13);
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(obj_bytes(s)[i], 0);
    Oop e = gc_alloc_bytes(CLASS_INDEX_STRING, 0);
    assert_int_equal(obj_byte_length(e), 0);
    assert_int_equal(obj_total_bytes(e), 16);
    Oop w = gc_alloc_bytes(CLASS_INDEX_STRING, 16);
    assert_int_equal(obj_format(w), FMT_BYTES);
    assert_int_equal(obj_byte_length(w), 16);
}

static void new_word_object_is_zeroed(void **state)
{
    (void)state;
    Oop d = gc_alloc(CLASS_INDEX_DOUBLE, FMT_WORDS, 1);
    assert_int_equal(obj_format(d), FMT_WORDS);
    assert_true(obj_at(d, 0) == 0);
    assert_int_equal(obj_pointer_slots(d), 0);
}

static void new_method_has_header_nil_literals_and_zero_bytecodes(void **state)
{
    (void)state;
    Oop m = gc_alloc_method(CLASS_INDEX_METHOD, METHOD_FIXED_SLOTS + 2, 5);
    assert_true(obj_is_method(m));
    assert_int_equal(obj_format(m), FMT_METHOD + 3);
    assert_int_equal(obj_num_slots(m), METHOD_FIXED_SLOTS + 2 + 1);
    assert_int_equal(obj_pointer_slots(m), METHOD_FIXED_SLOTS + 2);
    assert_int_equal(vm_method_pointer_slots(m), METHOD_FIXED_SLOTS + 2);
    for (size_t i = 1; i < METHOD_FIXED_SLOTS + 2; i++)
        assert_true(obj_at(m, i) == nil_obj);
    assert_int_equal(vm_method_bytecode_length(m), 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(vm_method_bytecodes(m)[i], 0);
    assert_heap_sound();
}

static void object_with_255_slots_has_overflow_word_before_header(void **state)
{
    (void)state;
    Oop a = new_array(255);
    assert_true(gc_is_young(a));
    assert_int_equal(obj_header(a) >> OBJ_SLOTS_SHIFT, OBJ_SLOTS_OVERFLOW);
    assert_int_equal(((uint64_t *)a)[-1] >> 56, 0xff);
    assert_int_equal(obj_num_slots(a), 255);
    assert_int_equal(obj_total_bytes(a), (255 + 2) * 8);
    assert_true(obj_at(a, 254) == nil_obj);
    Oop b = new_array(1000);
    assert_int_equal(obj_num_slots(b), 1000);
    /* The next object starts right after the last slot. */
    Oop c = new_array(1);
    assert_true(c == b + 1001 * 8);
    assert_int_equal(count_objects(), 3 + 3);
    assert_heap_sound();
}

static void zero_slot_object_still_owns_one_word(void **state)
{
    (void)state;
    Oop a = new_array(0);
    Oop b = new_array(0);
    assert_int_equal(obj_num_slots(a), 0);
    assert_int_equal(obj_total_bytes(a), 16);
    assert_true(b == a + 16);
}

static void large_objects_go_straight_to_old_space_and_are_remembered(void **state)
{
    (void)state;
    /* Past eden / 8 = 8 KiB. */
    Oop big = new_array(2000);
    assert_true(gc_is_old(big));
    assert_true(obj_header(big) & OBJ_GC_REMEMBERED);
    Oop small = new_array(100);
    assert_true(gc_is_young(small));
    Oop blob = gc_alloc_bytes(CLASS_INDEX_STRING, 20000);
    assert_true(gc_is_old(blob));
    assert_false(obj_header(blob) & OBJ_GC_REMEMBERED);
    assert_heap_sound();
}

static void passing_eden_soft_limit_requests_a_collection(void **state)
{
    (void)state;
    assert_false(gc_wants_collect());
    size_t made = 0;
    while (!gc_wants_collect()) {
        Oop o = new_array(6);
        assert_true(gc_is_young(o));
        made++;
    }
    /* 90% of 64 KiB in 56-byte objects. */
    assert_true(made * 56 >= TEST_EDEN_BYTES * 9 / 10 - 56);
    assert_true(made * 56 <= TEST_EDEN_BYTES * 9 / 10 + 56);
}

static void allocation_that_does_not_fit_eden_goes_to_old_space(void **state)
{
    (void)state;
    Oop o;
    do
        o = new_array(6);
    while (gc_is_young(o));
    assert_true(gc_wants_collect());
    assert_true(gc_eden_top + 56 > gc_old_start - TEST_EDEN_BYTES / 2);
    assert_true(obj_header(o) & OBJ_GC_REMEMBERED);
    assert_heap_sound();
}

static void allocation_fails_when_heap_limit_is_reached(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap((size_t)4 << 20, TEST_EDEN_BYTES, 0, false);
    size_t n = 0;
    while (gc_alloc_old(CLASS_INDEX_STRING, FMT_BYTES, 1000))
        n++;
    assert_true(n > 400);
    assert_true(gc_wants_collect());
    assert_true(gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 2000) == 0);
    assert_true(gc_alloc_bytes(CLASS_INDEX_STRING, 100000) == 0);
    /* Absurd sizes fail rather than wrap. */
    assert_true(gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, (size_t)1 << 55) == 0);
    assert_true(gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, SIZE_MAX / 4) == 0);
    /* What is left is the scavenger's reserve, not given to the program. */
    assert_true(gc_old_free_bytes() >= TEST_EDEN_BYTES + TEST_EDEN_BYTES / 4);
    /* Small objects still fit eden. */
    assert_true(gc_is_young(new_array(3)));
    assert_heap_sound();
}

static void init_rejects_a_heap_too_small_for_its_eden(void **state)
{
    (void)state;
    gc_heap_release();
    GcConfig cfg = {.heap_bytes = (size_t)256 << 10, .eden_bytes = (size_t)4 << 20};
    char err[256] = "";
    assert_false(gc_heap_init(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "heap size"));
    assert_true(gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 1) == 0);
    assert_false(gc_collect(false));
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 0, false);
}

static void init_twice_is_refused(void **state)
{
    (void)state;
    GcConfig cfg = {0};
    char err[256] = "";
    assert_false(gc_heap_init(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "already"));
}

static void identity_hash_is_nonzero_stable_and_varied(void **state)
{
    (void)state;
    uint32_t seen[64];
    size_t distinct = 0;
    for (size_t i = 0; i < 64; i++) {
        Oop o = new_array(1);
        uint32_t h = gc_identity_hash(o);
        assert_true(h != 0 && h <= OBJ_HASH_MASK);
        assert_int_equal(gc_identity_hash(o), h);
        assert_int_equal(obj_hash_bits(o), h);
        assert_int_equal(obj_class_index(o), CLASS_INDEX_ARRAY);
        assert_int_equal(obj_num_slots(o), 1);
        size_t j = 0;
        while (j < distinct && seen[j] != h)
            j++;
        if (j == distinct)
            seen[distinct++] = h;
    }
    assert_true(distinct >= 60);
}

typedef struct Walk {
    Oop want[4];
    bool found[4];
    size_t n;
} Walk;

static bool find_objects(Oop o, void *ctx)
{
    Walk *w = ctx;
    for (size_t i = 0; i < 4; i++)
        if (w->want[i] == o)
            w->found[i] = true;
    w->n++;
    return true;
}

static bool stop_at_second(Oop o, void *ctx)
{
    (void)o;
    return ++*(size_t *)ctx < 2;
}

static void heap_walk_visits_young_and_old_objects(void **state)
{
    (void)state;
    Walk w = {.want = {nil_obj, new_array(3), new_array(300), new_old_array(4)}};
    tc.roots[0] = w.want[1];
    tc.roots[1] = w.want[2];
    new_array(7); /* garbage */
    scavenge();
    tc.roots[2] = new_array(2);
    w.want[1] = tc.roots[0];
    w.want[2] = tc.roots[1];
    gc_heap_walk(find_objects, &w);
    for (size_t i = 0; i < 4; i++)
        assert_true(w.found[i]);
    /* nil, true, false, the old array, two survivors and one eden object. */
    assert_int_equal(w.n, 3 + 1 + 2 + 1);
    size_t n = 0;
    gc_heap_walk(stop_at_second, &n);
    assert_int_equal(n, 2);
}

static void bytes_allocated_counts_every_allocation(void **state)
{
    (void)state;
    uint64_t before = gc_stats.bytes_allocated;
    new_array(1);           /* 16 */
    new_array(0);           /* 16 */
    new_array(300);         /* 302 * 8 */
    new_old_array(2);       /* 24 */
    gc_alloc_bytes(CLASS_INDEX_STRING, 9); /* 24 */
    assert_int_equal(gc_stats.bytes_allocated - before, 16 + 16 + 302 * 8 + 24 + 24);
}

static void sizes_for_the_profiler(void **state)
{
    (void)state;
    assert_int_equal(gc_eden_bytes(), TEST_EDEN_BYTES);
    size_t used = gc_old_used_bytes();
    assert_int_equal(used, 3 * 16);
    new_old_array(9);
    assert_int_equal(gc_old_used_bytes(), used + 80);
    assert_int_equal(gc_old_used_bytes() + gc_old_free_bytes() + TEST_EDEN_BYTES * 3 / 2, TEST_HEAP_BYTES);
}

static void stress_mode_always_wants_a_collection(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 0, true);
    assert_true(gc_wants_collect());
    assert_true(gc_collect(false));
    assert_true(gc_wants_collect());
    assert_true(gc_collect(true));
    assert_true(gc_wants_collect());
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small_heap, teardown_heap)
    const struct CMUnitTest tests[] = {
        T(new_pointer_object_is_filled_with_nil),
        T(pointer_objects_made_before_nil_exists_are_zero_filled),
        T(new_bytes_object_is_zeroed_and_records_unused_bytes),
        T(new_word_object_is_zeroed),
        T(new_method_has_header_nil_literals_and_zero_bytecodes),
        T(object_with_255_slots_has_overflow_word_before_header),
        T(zero_slot_object_still_owns_one_word),
        T(large_objects_go_straight_to_old_space_and_are_remembered),
        T(passing_eden_soft_limit_requests_a_collection),
        T(allocation_that_does_not_fit_eden_goes_to_old_space),
        T(allocation_fails_when_heap_limit_is_reached),
        T(init_rejects_a_heap_too_small_for_its_eden),
        T(init_twice_is_refused),
        T(identity_hash_is_nonzero_stable_and_varied),
        T(heap_walk_visits_young_and_old_objects),
        T(bytes_allocated_counts_every_allocation),
        T(sizes_for_the_profiler),
        T(stress_mode_always_wants_a_collection),
    };
    return cmocka_run_group_tests_name("gc_alloc", tests, NULL, NULL);
}
