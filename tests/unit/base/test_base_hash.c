/*
 * tests/unit/base/test_base_hash.c — base/hash.h against the published values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/hash.h"

/* FNV-1a 64 test vectors from the FNV reference code (Noll's test suite). */
static void fnv1a_vectors(void **state)
{
    (void)state;
    assert_int_equal(BASE_FNV1A_BASIS, 0xcbf29ce484222325ull);
    assert_int_equal(BASE_FNV1A_PRIME, 0x100000001b3ull);
    assert_int_equal(base_fnv1a_bytes("", 0), 0xcbf29ce484222325ull);
    assert_int_equal(base_fnv1a_bytes("a", 1), 0xaf63dc4c8601ec8cull);
    assert_int_equal(base_fnv1a_bytes("b", 1), 0xaf63df4c8601f1a5ull);
    assert_int_equal(base_fnv1a_bytes("foobar", 6), 0x85944171f73967e8ull);
}

static void fnv1a_continues(void **state)
{
    (void)state;
    uint64_t h = base_fnv1a(BASE_FNV1A_BASIS, "foo", 3);
    assert_int_equal(base_fnv1a(h, "bar", 3), base_fnv1a_bytes("foobar", 6));
}

static void knuth_word(void **state)
{
    (void)state;
    assert_int_equal(BASE_HASH_KNUTH_MULTIPLIER, 2654435761u);
    assert_int_equal(base_hash_word(1), 2654435761u);
    assert_int_equal(base_hash_word(2), (uint32_t)(2ull * 2654435761u)); /* wraps at 32 bits */
    assert_int_equal(base_hash_word_top(1, 12), 2654435761u >> 20);
    assert_int_equal(base_hash_word_top(0xffffffffu, 32), base_hash_word(0xffffffffu));
    for (uint32_t w = 0; w < 1000; w++) assert_true(base_hash_word_top(w * 8, 10) < 1024);
    const void *p = (const void *)(uintptr_t)0x7f0012345678ull;
    assert_int_equal(base_hash_ptr_top(p, 12), base_hash_word_top(0x12345678u, 12));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fnv1a_vectors),
        cmocka_unit_test(fnv1a_continues),
        cmocka_unit_test(knuth_word),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
