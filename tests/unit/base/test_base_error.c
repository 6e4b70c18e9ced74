/*
 * tests/unit/base/test_base_error.c — base/error.h: formatting, truncation, no buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/error.h"

static void formats(void **state)
{
    (void)state;
    char err[64];
    assert_false(base_error(err, sizeof err, "cannot open %s: %d", "x.som", 2));
    assert_string_equal(err, "cannot open x.som: 2");
}

static void truncates(void **state)
{
    (void)state;
    char err[8];
    memset(err, 'z', sizeof err);
    base_error(err, sizeof err, "%s", "0123456789");
    assert_string_equal(err, "0123456"); /* errlen - 1 characters and the NUL */
    char one[1] = {'z'};
    base_error(one, sizeof one, "abc");
    assert_int_equal(one[0], 0);
}

static void no_buffer(void **state)
{
    (void)state;
    assert_false(base_error(NULL, 0, "ignored %d", 1));
    char err[4] = "abc";
    base_error(err, 0, "x"); /* an empty buffer is left alone */
    assert_string_equal(err, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formats),
        cmocka_unit_test(truncates),
        cmocka_unit_test(no_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
