/*
 * Unit tests for report/addrtable.h, the code-address table that
 * profiler/codelog_writer.c, profiler/livecode.c and report/codemap.c share:
 * lookups, overwrites, spaces, growth, backward-shift deletion (checked
 * against a plain array as the model), iteration and the promise that a
 * put right after a take never allocates.
 */
#include "report/addrtable.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

static void an_empty_table_answers_nothing_and_has_allocated_nothing(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    uint64_t v = 7;
    assert_false(report_addrtable_get(&t, 0, 0x1000, &v));
    assert_false(report_addrtable_take(&t, 0, 0x1000, &v));
    assert_int_equal(v, 7);
    size_t cursor = 0;
    assert_null(report_addrtable_next(&t, &cursor));
    assert_null(t.slots);
    report_addrtable_clear(&t);
    report_addrtable_free(&t);
    assert_int_equal(t.cap, 0);
}

static void a_put_adds_a_key_once_and_a_second_put_overwrites_its_value(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    uint64_t v = 0;
    assert_true(report_addrtable_put(&t, 0, 0x7f0000001000, 1));
    assert_true(report_addrtable_put(&t, 0, 0x7f0000001000, 2));
    assert_int_equal(t.count, 1);
    assert_int_equal(t.cap, REPORT_ADDRTABLE_FIRST_CAP);
    assert_true(report_addrtable_get(&t, 0, 0x7f0000001000, &v));
    assert_int_equal(v, 2);
    assert_true(report_addrtable_get(&t, 0, 0x7f0000001000, NULL));
    assert_true(report_addrtable_take(&t, 0, 0x7f0000001000, &v));
    assert_int_equal(v, 2);
    assert_int_equal(t.count, 0);
    assert_false(report_addrtable_get(&t, 0, 0x7f0000001000, NULL));
    assert_false(report_addrtable_take(&t, 0, 0x7f0000001000, NULL));
    report_addrtable_free(&t);
}

static void equal_addresses_in_two_spaces_are_two_keys(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    uint64_t v = 0;
    assert_true(report_addrtable_put(&t, 0, 0x5000, 10));
    assert_true(report_addrtable_put(&t, 1, 0x5000, 11));
    assert_int_equal(t.count, 2);
    assert_true(report_addrtable_take(&t, 0, 0x5000, &v));
    assert_int_equal(v, 10);
    assert_true(report_addrtable_get(&t, 1, 0x5000, &v));
    assert_int_equal(v, 11);
    assert_false(report_addrtable_get(&t, 0, 0x5000, NULL));
    report_addrtable_free(&t);
}

static void address_zero_is_a_key_like_any_other(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    uint64_t v = 1;
    assert_true(report_addrtable_put(&t, 0, 0, 0));
    assert_true(report_addrtable_get(&t, 0, 0, &v));
    assert_int_equal(v, 0);
    assert_int_equal(t.count, 1);
    report_addrtable_free(&t);
}

/* Fills the table to its growth threshold: one more key would grow it. */
static void fill_to_threshold(ReportAddrTable *t)
{
    for (uint64_t k = 0; (t->count + 1) * 4 <= REPORT_ADDRTABLE_FIRST_CAP * 3; k++)
        assert_true(report_addrtable_put(t, 0, 0x400000 + 16 * k, k));
    assert_int_equal(t->cap, REPORT_ADDRTABLE_FIRST_CAP);
}

static void a_put_right_after_a_take_does_not_grow_the_table(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    fill_to_threshold(&t);
    const ReportAddrSlot *slots = t.slots;
    uint64_t v;
    assert_true(report_addrtable_take(&t, 0, 0x400000, &v));
    assert_true(report_addrtable_put(&t, 0, 0x9000000, v)); /* a move: re-keyed */
    assert_ptr_equal(t.slots, slots);
    assert_int_equal(t.cap, REPORT_ADDRTABLE_FIRST_CAP);
    assert_true(report_addrtable_put(&t, 0, 0x9000010, 1)); /* a new key past the threshold grows it */
    assert_int_equal(t.cap, 2 * REPORT_ADDRTABLE_FIRST_CAP);
    report_addrtable_free(&t);
}

static void iteration_visits_every_entry_once_and_clear_keeps_the_memory(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    enum { N = 1000 };
    static uint8_t seen[N];
    for (uint64_t k = 0; k < N; k++)
        assert_true(report_addrtable_put(&t, (uint8_t)(k & 1), 0x10000 + 16 * k, k));
    size_t cursor = 0, visits = 0;
    for (const ReportAddrSlot *s; (s = report_addrtable_next(&t, &cursor)); visits++) {
        assert_true(s->value < N);
        assert_int_equal(s->addr, 0x10000 + 16 * s->value);
        assert_int_equal(s->space, s->value & 1);
        assert_int_equal(seen[s->value]++, 0);
    }
    assert_int_equal(visits, N);
    size_t cap = t.cap;
    report_addrtable_clear(&t);
    assert_int_equal(t.count, 0);
    assert_int_equal(t.cap, cap);
    cursor = 0;
    assert_null(report_addrtable_next(&t, &cursor));
    assert_false(report_addrtable_get(&t, 0, 0x10000, NULL));
    report_addrtable_free(&t);
    assert_null(t.slots);
}

/* Random puts, takes and moves over few enough keys that the table is
 * often near full and probe runs wrap past its end; after every step each
 * key answers what the model holds. */
#define MODEL_KEYS 600

static void the_table_agrees_with_a_model_through_puts_takes_and_moves(void **state)
{
    (void)state;
    ReportAddrTable t = {0};
    static uint64_t model[2][MODEL_KEYS]; /* value + 1; 0: absent */
    srand(20261127);
    for (int step = 0; step < 300000; step++) {
        uint8_t sp = (uint8_t)(rand() & 1);
        int a = rand() % MODEL_KEYS, b = rand() % MODEL_KEYS;
        /* addresses 16 apart, like pieces of code, and some far apart */
        uint64_t addr_a = (a % 7 ? 0x7f1200000000ull : 0x55550000ull) + 16ull * (uint64_t)a;
        uint64_t addr_b = (b % 7 ? 0x7f1200000000ull : 0x55550000ull) + 16ull * (uint64_t)b;
        uint64_t v;
        switch (rand() % 4) {
        case 0:
        case 1:
            assert_true(report_addrtable_put(&t, sp, addr_a, (uint64_t)step));
            model[sp][a] = (uint64_t)step + 1;
            break;
        case 2:
            assert_int_equal(report_addrtable_take(&t, sp, addr_a, &v), model[sp][a] != 0);
            if (model[sp][a])
                assert_int_equal(v + 1, model[sp][a]);
            model[sp][a] = 0;
            break;
        default: /* a move: take at a, put at b */
            if (report_addrtable_take(&t, sp, addr_a, &v)) {
                assert_true(report_addrtable_put(&t, sp, addr_b, v));
                model[sp][a] = 0;
                model[sp][b] = v + 1;
            } else {
                assert_int_equal(model[sp][a], 0);
            }
            break;
        }
        if (step % 97 != 0)
            continue;
        size_t live = 0;
        for (int s = 0; s < 2; s++) {
            for (int k = 0; k < MODEL_KEYS; k++) {
                uint64_t addr = (k % 7 ? 0x7f1200000000ull : 0x55550000ull) + 16ull * (uint64_t)k;
                bool found = report_addrtable_get(&t, (uint8_t)s, addr, &v);
                assert_int_equal(found, model[s][k] != 0);
                if (found) {
                    assert_int_equal(v + 1, model[s][k]);
                    live++;
                }
            }
        }
        assert_int_equal(t.count, live);
    }
    report_addrtable_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_table_answers_nothing_and_has_allocated_nothing),
        cmocka_unit_test(a_put_adds_a_key_once_and_a_second_put_overwrites_its_value),
        cmocka_unit_test(equal_addresses_in_two_spaces_are_two_keys),
        cmocka_unit_test(address_zero_is_a_key_like_any_other),
        cmocka_unit_test(a_put_right_after_a_take_does_not_grow_the_table),
        cmocka_unit_test(iteration_visits_every_entry_once_and_clear_keeps_the_memory),
        cmocka_unit_test(the_table_agrees_with_a_model_through_puts_takes_and_moves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
