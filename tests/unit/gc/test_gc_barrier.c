/* Unit tests for the write barrier and the remembered set (gc/remember.c). */
#include "gc_test.h"

#include <stdio.h>

/* An old object that is not in the remembered set: objects allocated in
 * old space start remembered, and the first scavenge drops those that
 * hold no young pointer. */
static Oop clean_old_array(size_t n, size_t root)
{
    tc.roots[root] = new_old_array(n);
    scavenge();
    assert_false(obj_header(tc.roots[root]) & OBJ_GC_REMEMBERED);
    return tc.roots[root];
}

static void store_young_into_old_remembers_old(void **state)
{
    (void)state;
    Oop old = clean_old_array(2, 0);
    size_t before = gc_remembered_count();
    Oop young = new_array(1);
    gc_store(old, 1, young);
    assert_true(obj_at(old, 1) == young);
    assert_true(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), before + 1);
    assert_heap_sound();
}

static void store_old_into_old_does_not_remember(void **state)
{
    (void)state;
    Oop old = clean_old_array(2, 0);
    gc_store(old, 0, true_obj);
    assert_false(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 0);
}

static void store_young_into_young_does_not_remember(void **state)
{
    (void)state;
    Oop a = new_array(1), b = new_array(1);
    gc_store(a, 0, b);
    assert_false(obj_header(a) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 0);
}

static void store_old_into_young_does_not_remember(void **state)
{
    (void)state;
    Oop old = clean_old_array(1, 0);
    Oop young = new_array(1);
    gc_store(young, 0, old);
    assert_false(obj_header(young) & OBJ_GC_REMEMBERED);
    assert_false(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 0);
}

static void store_immediate_or_zero_into_old_does_not_remember(void **state)
{
    (void)state;
    Oop old = clean_old_array(2, 0);
    gc_store(old, 0, oop_from_int(42));
    gc_store(old, 1, 0);
    assert_false(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 0);
}

static void storing_twice_remembers_once(void **state)
{
    (void)state;
    Oop old = clean_old_array(2, 0);
    gc_store(old, 0, new_array(1));
    gc_store(old, 1, new_array(1));
    gc_remember(old);
    assert_int_equal(gc_remembered_count(), 1);
}

static void remembered_old_object_keeps_young_value_alive_across_scavenges(void **state)
{
    (void)state;
    Oop old = clean_old_array(1, 0);
    gc_store(old, 0, new_string("kept"));
    for (int i = 0; i < 2; i++) {
        new_array(10); /* garbage */
        scavenge();
        Oop s = obj_at(tc.roots[0], 0);
        assert_true(gc_is_young(s));
        assert_true(string_is(s, "kept"));
        assert_true(obj_header(tc.roots[0]) & OBJ_GC_REMEMBERED);
    }
    /* Third scavenge tenures the string: the holder no longer points young. */
    scavenge();
    assert_true(gc_is_old(obj_at(tc.roots[0], 0)));
    assert_true(string_is(obj_at(tc.roots[0], 0), "kept"));
    assert_false(obj_header(tc.roots[0]) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 0);
}

static void old_object_leaves_remembered_set_when_its_young_value_is_gone(void **state)
{
    (void)state;
    Oop old = clean_old_array(1, 0);
    gc_store(old, 0, new_array(1));
    gc_store(old, 0, oop_from_int(7));
    scavenge();
    assert_false(obj_header(old) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 0);
}

static void new_old_object_filled_without_barrier_is_still_scanned(void **state)
{
    (void)state;
    /* The contract lets the VM fill a brand-new object with raw stores. */
    Oop old = new_old_array(2);
    tc.roots[0] = old;
    obj_slots(old)[0] = new_string("raw");
    obj_slots(old)[1] = new_array(2);
    scavenge();
    assert_true(string_is(obj_at(tc.roots[0], 0), "raw"));
    assert_int_equal(obj_num_slots(obj_at(tc.roots[0], 1)), 2);
    assert_true(obj_header(tc.roots[0]) & OBJ_GC_REMEMBERED);
}

static void tenured_object_with_young_child_is_remembered(void **state)
{
    (void)state;
    tc.roots[0] = new_array(1);
    scavenge();
    scavenge();
    /* Its child is younger: it stays young when the parent tenures. */
    gc_store(tc.roots[0], 0, new_string("child"));
    scavenge();
    Oop parent = tc.roots[0];
    assert_true(gc_is_old(parent));
    assert_true(gc_is_young(obj_at(parent, 0)));
    assert_true(obj_header(parent) & OBJ_GC_REMEMBERED);
    assert_int_equal(gc_remembered_count(), 1);
    assert_heap_sound();
}

static void remembered_set_overflow_raises_full_gc_and_counter(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 4, false);
    for (size_t i = 0; i < 6; i++)
        tc.roots[i] = new_old_array(1);
    /* Six new old objects do not fit a set of four: that alone overflows. */
    assert_int_equal(gc_stats.remembered_overflows, 1);
    assert_true(gc_collect(true));
    assert_int_equal(gc_remembered_count(), 0);
    assert_false(gc_wants_collect());

    for (size_t i = 0; i < 6; i++) {
        char text[8];
        snprintf(text, sizeof text, "s%zu", i);
        gc_store(tc.roots[i], 0, new_string(text));
    }
    assert_int_equal(gc_stats.remembered_overflows, 2);
    assert_int_equal(gc_remembered_count(), 4);
    assert_true(gc_wants_collect());

    uint64_t full = gc_stats.full_gcs, scav = gc_stats.scavenges;
    assert_true(gc_collect(false));
    assert_int_equal(gc_stats.full_gcs, full + 1);
    assert_int_equal(gc_stats.scavenges, scav);
    assert_false(gc_wants_collect());
    assert_int_equal(gc_remembered_count(), 0);
    for (size_t i = 0; i < 6; i++) {
        char text[8];
        snprintf(text, sizeof text, "s%zu", i);
        assert_true(string_is(obj_at(tc.roots[i], 0), text));
        assert_true(gc_is_old(obj_at(tc.roots[i], 0)));
    }
    /* The set works again afterwards. */
    gc_store(tc.roots[0], 0, new_array(1));
    assert_int_equal(gc_remembered_count(), 1);
    scavenge();
    assert_int_equal(gc_stats.remembered_overflows, 2);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small_heap, teardown_heap)
    const struct CMUnitTest tests[] = {
        T(store_young_into_old_remembers_old),
        T(store_old_into_old_does_not_remember),
        T(store_young_into_young_does_not_remember),
        T(store_old_into_young_does_not_remember),
        T(store_immediate_or_zero_into_old_does_not_remember),
        T(storing_twice_remembers_once),
        T(remembered_old_object_keeps_young_value_alive_across_scavenges),
        T(old_object_leaves_remembered_set_when_its_young_value_is_gone),
        T(new_old_object_filled_without_barrier_is_still_scanned),
        T(tenured_object_with_young_child_is_remembered),
        T(remembered_set_overflow_raises_full_gc_and_counter),
    };
    return cmocka_run_group_tests_name("gc_barrier", tests, NULL, NULL);
}
