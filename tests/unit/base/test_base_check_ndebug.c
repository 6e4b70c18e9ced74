/*
 * tests/unit/base/test_base_check_ndebug.c — BASE_ASSERT under NDEBUG
 * (this file is compiled with it, tests/unit/base/CMakeLists.txt): the
 * condition is not even evaluated.
 */
#include "base/check.h"

#ifndef NDEBUG
#error "this file tests the NDEBUG build of BASE_ASSERT"
#endif

int ndebug_assert_evaluations(void);

static int evaluations;

static int counted_false(void)
{
    evaluations++;
    return 0;
}

int ndebug_assert_evaluations(void)
{
    BASE_ASSERT(counted_false(), "never printed");
    BASE_ASSERT(counted_false());
    return evaluations;
}
