/*
 * tests/unit/gc/gc_test.h — a real GcClient for the gc unit tests.
 *
 * The roots are an array of Oops owned by the test: every collection sees
 * exactly those slots, as the VM's frames and globals would be seen. Each
 * test gets a fresh heap with --gc-verify on, so every collection in every
 * test is also checked by the verifier before and after.
 */
#ifndef TESTS_UNIT_GC_GC_TEST_H
#define TESTS_UNIT_GC_GC_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gc/heap.h"

#define TEST_ROOTS 32
#define TEST_HEAP_BYTES ((size_t)64 << 20)
#define TEST_EDEN_BYTES ((size_t)64 << 10)

typedef struct TestClient {
    Oop roots[TEST_ROOTS];
    unsigned before_calls, after_calls;
    bool last_full;
} TestClient;

static TestClient tc;
static Oop nil_obj, true_obj, false_obj;

static inline void test_visit_roots(GcVisitFn visit, void *ctx, void *client)
{
    TestClient *c = client;
    for (size_t i = 0; i < TEST_ROOTS; i++)
        visit(&c->roots[i], ctx);
}

static inline void test_before(bool full, void *client)
{
    TestClient *c = client;
    c->before_calls++;
    c->last_full = full;
}

static inline void test_after(bool full, void *client)
{
    TestClient *c = client;
    c->after_calls++;
    assert_int_equal(full, c->last_full);
}

/* Fresh heap with nil, true and false first in old space, nil as fill. */
static inline void start_heap(size_t heap, size_t eden, size_t remembered, bool stress)
{
    GcConfig cfg = {.heap_bytes = heap, .eden_bytes = eden, .verify = true, .stress = stress,
                    .remembered_capacity = remembered};
    char err[256] = "";
    if (!gc_heap_init(&cfg, err, sizeof err))
        fail_msg("gc_heap_init: %s", err);
    memset(&tc, 0, sizeof tc);
    GcClient client = {.visit_roots = test_visit_roots, .before_collect = test_before,
                       .after_collect = test_after, .client = &tc};
    gc_set_client(&client);
    nil_obj = gc_alloc_old(CLASS_INDEX_NIL, FMT_POINTERS, 0);
    true_obj = gc_alloc_old(CLASS_INDEX_TRUE, FMT_POINTERS, 0);
    false_obj = gc_alloc_old(CLASS_INDEX_FALSE, FMT_POINTERS, 0);
    gc_set_fill(nil_obj);
    tc.roots[TEST_ROOTS - 3] = nil_obj;
    tc.roots[TEST_ROOTS - 2] = true_obj;
    tc.roots[TEST_ROOTS - 1] = false_obj;
}

static inline int setup_small_heap(void **state)
{
    (void)state;
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 0, false);
    return 0;
}

static inline int teardown_heap(void **state)
{
    (void)state;
    gc_heap_release();
    return 0;
}

static inline Oop new_array(size_t n)
{
    Oop o = gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, n);
    assert_true(o != 0);
    return o;
}

static inline Oop new_old_array(size_t n)
{
    Oop o = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, n);
    assert_true(o != 0);
    return o;
}

static inline Oop new_string(const char *s)
{
    size_t n = strlen(s);
    Oop o = gc_alloc_bytes(CLASS_INDEX_STRING, n);
    assert_true(o != 0);
    memcpy(obj_bytes(o), s, n);
    return o;
}

static inline bool string_is(Oop o, const char *s)
{
    return obj_is_bytes(o) && obj_byte_length(o) == strlen(s) && memcmp(obj_bytes(o), s, strlen(s)) == 0;
}

static inline bool count_one(Oop o, void *ctx)
{
    (void)o;
    ++*(size_t *)ctx;
    return true;
}

static inline size_t count_objects(void)
{
    size_t n = 0;
    gc_heap_walk(count_one, &n);
    return n;
}

/* Fails the test with the verifier's message if the heap is broken. */
static inline void assert_heap_sound(void)
{
    char msg[512] = "";
    if (!gc_verify(msg, sizeof msg))
        fail_msg("gc_verify: %s", msg);
}

/* Runs a scavenge and checks that it did not turn into a full GC. */
static inline void scavenge(void)
{
    uint64_t full = gc_stats.full_gcs;
    assert_true(gc_collect(false));
    assert_int_equal(gc_stats.full_gcs, full);
}

#endif
