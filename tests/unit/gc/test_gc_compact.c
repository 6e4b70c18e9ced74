/* Unit tests for the full collector (gc/mark.c, gc/compact.c). */
#include "gc_test.h"

#include "vm/model/method.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void full_gc(void)
{
    uint64_t full = gc_stats.full_gcs;
    assert_true(gc_collect(true));
    assert_int_equal(gc_stats.full_gcs, full + 1);
}

static void full_gc_slides_live_objects_down_in_order(void **state)
{
    (void)state;
    Oop garbage1 = new_old_array(5);
    Oop b = new_old_array(2);
    Oop garbage2 = new_old_array(300);
    Oop d = new_old_array(1);
    Oop garbage3 = gc_alloc_old(CLASS_INDEX_STRING, FMT_BYTES, 4);
    Oop e = new_old_array(1);
    (void)garbage2;
    (void)garbage3;
    obj_slots(b)[0] = d;
    obj_slots(b)[1] = oop_from_int(2);
    obj_slots(d)[0] = e;
    obj_slots(e)[0] = b;
    tc.roots[0] = b;
    tc.roots[1] = d;
    full_gc();
    Oop nb = tc.roots[0], nd = tc.roots[1];
    /* b takes the place of the first garbage object; the rest follow. */
    assert_true(nb == garbage1);
    assert_true(nd == nb + obj_total_bytes(nb));
    Oop ne = obj_at(nd, 0);
    assert_true(ne == nd + obj_total_bytes(nd));
    assert_true(obj_at(nb, 0) == nd);
    assert_int_equal(oop_int(obj_at(nb, 1)), 2);
    assert_true(obj_at(ne, 0) == nb);
    assert_int_equal(gc_old_used_bytes(), 3 * 16 + 24 + 16 + 16);
    assert_int_equal(gc_stats.compactions, 1);
}

static void first_old_objects_never_move(void **state)
{
    (void)state;
    Oop n = nil_obj, t = true_obj, f = false_obj;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 50; i++)
            new_old_array((size_t)i);
        tc.roots[round] = new_old_array(3);
        full_gc();
        assert_true(tc.roots[TEST_ROOTS - 3] == n);
        assert_true(tc.roots[TEST_ROOTS - 2] == t);
        assert_true(tc.roots[TEST_ROOTS - 1] == f);
        assert_int_equal(obj_class_index(n), CLASS_INDEX_NIL);
    }
    assert_true(tc.roots[0] == f + 16);
}

static void full_gc_fixes_references_from_roots_old_and_young_objects(void **state)
{
    (void)state;
    new_old_array(40); /* garbage below everything: all live old objects move */
    Oop target = new_old_array(1);
    obj_slots(target)[0] = oop_from_int(99);
    Oop old_holder = new_old_array(1);
    obj_slots(old_holder)[0] = target;
    Oop young_holder = new_array(2);
    obj_slots(young_holder)[0] = target;
    obj_slots(young_holder)[1] = old_holder;
    Oop young_only = new_array(1);
    gc_store(old_holder, 0, young_only); /* old -> young, remembered */
    obj_slots(young_only)[0] = target;
    tc.roots[0] = young_holder;
    tc.roots[1] = target;
    full_gc();
    Oop nt = tc.roots[1];
    assert_true(nt != target);
    assert_int_equal(oop_int(obj_at(nt, 0)), 99);
    Oop yh = tc.roots[0];
    assert_true(gc_is_old(yh));
    assert_true(obj_at(yh, 0) == nt);
    Oop oh = obj_at(yh, 1);
    Oop yo = obj_at(oh, 0);
    assert_true(gc_is_old(yo));
    assert_true(obj_at(yo, 0) == nt);
    assert_int_equal(gc_remembered_count(), 0);
    assert_false(obj_header(oh) & OBJ_GC_REMEMBERED);
}

static void full_gc_tenures_every_live_young_object_and_empties_young_space(void **state)
{
    (void)state;
    tc.roots[0] = new_string("first");
    scavenge();
    tc.roots[1] = new_string("second");
    new_array(20); /* garbage */
    uint64_t tenured = gc_stats.objects_tenured;
    full_gc();
    assert_true(gc_is_old(tc.roots[0]) && gc_is_old(tc.roots[1]));
    assert_true(string_is(tc.roots[0], "first"));
    assert_true(string_is(tc.roots[1], "second"));
    assert_int_equal(obj_age(tc.roots[0]), 0);
    assert_int_equal(gc_stats.objects_tenured - tenured, 2);
    /* Only nil, true, false and the two strings are left. */
    assert_int_equal(count_objects(), 5);
    assert_int_equal(gc_old_used_bytes(), 3 * 16 + 2 * 16);
}

static void forwarding_keeps_shared_references_shared_and_hashes(void **state)
{
    (void)state;
    new_old_array(3); /* garbage */
    Oop shared_old = new_old_array(1);
    Oop shared_young = new_array(1);
    uint32_t ho = gc_identity_hash(shared_old), hy = gc_identity_hash(shared_young);
    Oop holder = new_array(4);
    obj_slots(holder)[0] = shared_old;
    obj_slots(holder)[1] = shared_young;
    obj_slots(holder)[2] = shared_old;
    obj_slots(holder)[3] = shared_young;
    tc.roots[0] = holder;
    tc.roots[1] = shared_old;
    tc.roots[2] = shared_young;
    tc.roots[3] = shared_young;
    full_gc();
    holder = tc.roots[0];
    assert_true(obj_at(holder, 0) == tc.roots[1] && obj_at(holder, 2) == tc.roots[1]);
    assert_true(obj_at(holder, 1) == tc.roots[2] && obj_at(holder, 3) == tc.roots[2]);
    assert_true(tc.roots[3] == tc.roots[2]);
    assert_int_equal(gc_identity_hash(tc.roots[1]), ho);
    assert_int_equal(gc_identity_hash(tc.roots[2]), hy);
}

static void big_and_raw_formats_survive_full_gcs(void **state)
{
    (void)state;
    new_old_array(10); /* garbage, so everything old moves */
    Oop big_old = new_old_array(5000);
    Oop big_young = new_array(400);
    for (size_t i = 0; i < 5000; i++)
        obj_slots(big_old)[i] = i % 1000 == 0 ? big_young : oop_from_int((intptr_t)i);
    for (size_t i = 0; i < 400; i++)
        obj_slots(big_young)[i] = i == 7 ? big_old : oop_from_int(-(intptr_t)i);
    Oop blob = gc_alloc_bytes(CLASS_INDEX_BYTES, 3001);
    for (size_t i = 0; i < 3001; i++)
        obj_bytes(blob)[i] = (uint8_t)(i * 7);
    Oop m = gc_alloc_method(CLASS_INDEX_METHOD, METHOD_FIXED_SLOTS + 300, 2000);
    obj_slots(m)[METHOD_HEADER] = oop_from_int(vm_method_make_header(METHOD_FIXED_SLOTS + 300, 1, 0, 3, true));
    obj_slots(m)[METHOD_FIXED_SLOTS + 299] = blob;
    memset(vm_method_bytecodes(m), 0x5a, 2000);
    tc.roots[0] = big_old;
    tc.roots[1] = m;
    for (int round = 0; round < 3; round++) {
        full_gc();
        big_old = tc.roots[0];
        assert_int_equal(obj_num_slots(big_old), 5000);
        big_young = obj_at(big_old, 0);
        for (size_t i = 0; i < 5000; i++)
            if (i % 1000 == 0)
                assert_true(obj_at(big_old, i) == big_young);
            else
                assert_int_equal(oop_int(obj_at(big_old, i)), i);
        assert_int_equal(obj_num_slots(big_young), 400);
        for (size_t i = 0; i < 400; i++)
            if (i == 7)
                assert_true(obj_at(big_young, i) == big_old);
            else
                assert_int_equal(oop_int(obj_at(big_young, i)), -(intptr_t)i);
        m = tc.roots[1];
        assert_true(vm_method_is_block(m));
        assert_int_equal(vm_method_pointer_slots(m), METHOD_FIXED_SLOTS + 300);
        blob = obj_at(m, METHOD_FIXED_SLOTS + 299);
        assert_int_equal(obj_byte_length(blob), 3001);
        for (size_t i = 0; i < 3001; i++)
            assert_int_equal(obj_bytes(blob)[i], (uint8_t)(i * 7));
        assert_int_equal(vm_method_bytecode_length(m), 2000);
        for (size_t i = 0; i < 2000; i++)
            assert_int_equal(vm_method_bytecodes(m)[i], 0x5a);
        new_old_array(1); /* garbage again, between the live objects */
        tc.roots[2] = new_array(255);
    }
}

static void deep_linked_list_of_a_million_nodes_survives_a_full_gc(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap((size_t)256 << 20, GC_EDEN_DEFAULT_BYTES, 0, false);
    enum { NODES = 1000000 };
    tc.roots[0] = oop_from_int(0);
    for (intptr_t i = 0; i < NODES; i++) {
        Oop node = new_array(2);
        obj_slots(node)[0] = oop_from_int(i);
        obj_slots(node)[1] = tc.roots[0];
        tc.roots[0] = node;
        if (i % 3 == 0)
            new_array(1); /* garbage between the nodes */
        if (gc_wants_collect())
            gc_collect(false);
    }
    full_gc();
    intptr_t expect = NODES - 1;
    for (Oop n = tc.roots[0]; !oop_is_int(n); n = obj_at(n, 1))
        assert_int_equal(oop_int(obj_at(n, 0)), expect--);
    assert_int_equal(expect, -1);
    assert_int_equal(gc_old_used_bytes(), 3 * 16 + (size_t)NODES * 24);
    /* Reverse it in place so the list runs from low to high addresses,
     * then collect again: marking must follow it a million deep. */
    Oop prev = oop_from_int(0), n = tc.roots[0];
    while (!oop_is_int(n)) {
        Oop next = obj_at(n, 1);
        gc_store(n, 1, prev);
        prev = n;
        n = next;
    }
    tc.roots[0] = prev;
    full_gc();
    expect = 0;
    for (Oop m = tc.roots[0]; !oop_is_int(m); m = obj_at(m, 1))
        assert_int_equal(oop_int(obj_at(m, 0)), expect++);
    assert_int_equal(expect, NODES);
}

static void wide_array_of_distinct_objects_survives_full_gcs(void **state)
{
    (void)state;
    /* 300,000 children pushed at once: 2.4 MB of mark stack, which the
     * mark phase then gives back; the second GC reuses the released pages. */
    enum { WIDTH = 300000 };
    tc.roots[0] = new_old_array(WIDTH);
    for (size_t i = 0; i < WIDTH; i++) {
        Oop child = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1);
        obj_slots(child)[0] = oop_from_int((intptr_t)i);
        obj_slots(tc.roots[0])[i] = child;
        if (i % 2)
            new_old_array(1); /* garbage */
    }
    for (int round = 0; round < 2; round++) {
        full_gc();
        for (size_t i = 0; i < WIDTH; i++)
            assert_int_equal(oop_int(obj_at(obj_at(tc.roots[0], i), 0)), i);
    }
}

static void full_gc_without_garbage_moves_nothing(void **state)
{
    (void)state;
    tc.roots[0] = new_old_array(2);
    tc.roots[1] = new_old_array(2);
    Oop a = tc.roots[0], b = tc.roots[1];
    full_gc();
    assert_true(tc.roots[0] == a && tc.roots[1] == b);
    assert_int_equal(gc_stats.compactions, 0);
}

static void full_gc_reclaims_garbage_and_counts_it(void **state)
{
    (void)state;
    for (int i = 0; i < 100; i++)
        new_old_array(9); /* 80 bytes each */
    tc.roots[0] = new_old_array(1);
    for (int i = 0; i < 10; i++)
        new_array(1); /* 16 bytes each */
    uint64_t freed = gc_stats.bytes_freed;
    full_gc();
    assert_int_equal(gc_stats.bytes_freed - freed, 100 * 80 + 10 * 16);
    assert_int_equal(gc_old_used_bytes(), 3 * 16 + 16);
    assert_int_equal(gc_stats.compactions, 1);
}

static void old_space_growth_past_threshold_turns_scavenge_into_full_gc(void **state)
{
    (void)state;
    tc.roots[0] = new_string("survivor");
    /* 17 MiB of large garbage goes straight to old space: past 16 MiB. */
    for (int i = 0; i < 17 * 64; i++)
        new_array(2046); /* 16 KiB */
    assert_true(gc_wants_collect());
    uint64_t full = gc_stats.full_gcs, scav = gc_stats.scavenges;
    assert_true(gc_collect(false));
    assert_int_equal(gc_stats.full_gcs, full + 1);
    assert_int_equal(gc_stats.scavenges, scav);
    assert_true(gc_old_used_bytes() < 1024);
    assert_true(string_is(tc.roots[0], "survivor"));
    assert_false(gc_wants_collect());
}

static void scavenge_that_fills_the_old_space_reserve_makes_the_next_collection_full(void **state)
{
    (void)state;
    gc_heap_release();
    /* Old space 416 KiB, of which the mutator may use 336 KiB. */
    start_heap((size_t)512 << 10, TEST_EDEN_BYTES, 0, false);
    size_t i = 0;
    while (gc_old_free_bytes() > 90 * 1024)
        tc.roots[i++ % 8] = new_old_array(1000);
    /* 50 KiB of live young data: a survivor space is 16 KiB, so most of it
     * tenures on overflow, into the reserve. */
    Oop holder = new_array(50);
    for (size_t j = 0; j < 50; j++)
        obj_slots(holder)[j] = new_array(120);
    tc.roots[8] = holder;
    scavenge();
    assert_true(gc_old_free_bytes() < 80 * 1024);
    assert_true(gc_wants_collect());
    /* The reserve is the scavenger's: the program gets nothing from it. */
    assert_true(gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, 1) == 0);
    assert_true(gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 2000) == 0);
    uint64_t full = gc_stats.full_gcs;
    assert_true(gc_collect(false));
    assert_int_equal(gc_stats.full_gcs, full + 1);
    assert_true(gc_old_free_bytes() > 80 * 1024);
    holder = tc.roots[8];
    for (size_t j = 0; j < 50; j++)
        assert_int_equal(obj_num_slots(obj_at(holder, j)), 120);
}

static void full_gc_exits_out_of_memory_when_live_data_exceeds_the_heap(void **state)
{
    (void)state;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], 2);
        gc_heap_release();
        start_heap((size_t)512 << 10, TEST_EDEN_BYTES, 0, false);
        /* Old space full of live data: each array holds the previous one. */
        tc.roots[0] = oop_from_int(0);
        while (gc_old_free_bytes() > 90 * 1024) {
            Oop a = new_old_array(1000);
            obj_slots(a)[0] = tc.roots[0];
            tc.roots[0] = a;
        }
        for (int round = 0; round < 4; round++) {
            Oop holder = new_array(50);
            for (size_t j = 0; j < 50; j++)
                obj_slots(holder)[j] = new_array(120);
            tc.roots[8 + round] = holder;
            gc_collect(false);
        }
        _exit(0);
    }
    close(pipefd[1]);
    char out[512] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(pipefd[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    assert_non_null(strstr(out, "stvm: out of memory"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small_heap, teardown_heap)
    const struct CMUnitTest tests[] = {
        T(full_gc_slides_live_objects_down_in_order),
        T(first_old_objects_never_move),
        T(full_gc_fixes_references_from_roots_old_and_young_objects),
        T(full_gc_tenures_every_live_young_object_and_empties_young_space),
        T(forwarding_keeps_shared_references_shared_and_hashes),
        T(big_and_raw_formats_survive_full_gcs),
        T(deep_linked_list_of_a_million_nodes_survives_a_full_gc),
        T(wide_array_of_distinct_objects_survives_full_gcs),
        T(full_gc_without_garbage_moves_nothing),
        T(full_gc_reclaims_garbage_and_counts_it),
        T(old_space_growth_past_threshold_turns_scavenge_into_full_gc),
        T(scavenge_that_fills_the_old_space_reserve_makes_the_next_collection_full),
        T(full_gc_exits_out_of_memory_when_live_data_exceeds_the_heap),
    };
    return cmocka_run_group_tests_name("gc_compact", tests, NULL, NULL);
}
