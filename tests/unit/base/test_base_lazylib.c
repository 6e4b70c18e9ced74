/*
 * tests/unit/base/test_base_lazylib.c — base/lazylib.h: binding, the errors
 * naming the library, the symbol and the package, and a first call from
 * several threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "base/lazylib.h"

static double (*m_cos)(double);
static double (*m_sqrt)(double);
static const BaseLazySymbol libm_symbols[] = {{"cos", &m_cos}, {"sqrt", &m_sqrt}};
static BaseLazyLib libm = BASE_LAZYLIB_INIT("libm.so.6", "libc6", libm_symbols);

static void binds(void **state)
{
    (void)state;
    char err[256] = "";
    assert_true(base_lazylib_open(&libm, err, sizeof err));
    assert_string_equal(err, "");
    assert_true(m_cos(0.0) == 1.0 && m_sqrt(16.0) == 4.0);
    assert_true(base_lazylib_open(&libm, NULL, 0)); /* the second call: the same answer */
}

static void (*missing_fn)(void);
static const BaseLazySymbol missing_lib_symbols[] = {{"cos", &missing_fn}};
static BaseLazyLib missing_lib = BASE_LAZYLIB_INIT("libstvm-no-such-library.so.0", "stvm-no-such-package",
                                                   missing_lib_symbols);

static void missing_soname(void **state)
{
    (void)state;
    char err[512];
    assert_false(base_lazylib_open(&missing_lib, err, sizeof err));
    assert_non_null(strstr(err, "cannot load libstvm-no-such-library.so.0 (apt-get install stvm-no-such-package): "));
    assert_null(missing_fn);
    char again[512];
    assert_false(base_lazylib_open(&missing_lib, again, sizeof again)); /* failure is final */
    assert_string_equal(err, again);
}

static double (*c_cos)(double);
static void (*c_missing)(void);
static const BaseLazySymbol missing_symbol_symbols[] = {{"cos", &c_cos}, {"stvm_no_such_symbol", &c_missing}};
static BaseLazyLib missing_symbol = BASE_LAZYLIB_INIT("libm.so.6", "libc6", missing_symbol_symbols);

static void missing_symbol_named(void **state)
{
    (void)state;
    char err[512];
    assert_false(base_lazylib_open(&missing_symbol, err, sizeof err));
    assert_non_null(strstr(err, "libm.so.6 has no stvm_no_such_symbol (apt-get install libc6): "));
    assert_null(c_cos); /* nothing half-bound */
    assert_null(c_missing);
    char small[10];
    assert_false(base_lazylib_open(&missing_symbol, small, sizeof small));
    assert_string_equal(small, "libm.so.6"); /* truncated, terminated */
}

static double (*t_floor)(double);
static const BaseLazySymbol threads_symbols[] = {{"floor", &t_floor}};
static BaseLazyLib threads_lib = BASE_LAZYLIB_INIT("libm.so.6", "libc6", threads_symbols);

static void *open_in_thread(void *arg)
{
    (void)arg;
    return base_lazylib_open(&threads_lib, NULL, 0) && t_floor(2.5) == 2.0 ? arg : NULL;
}

static void first_call_from_threads(void **state)
{
    (void)state;
    pthread_t t[8];
    int tag[8];
    for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&t[i], NULL, open_in_thread, &tag[i]), 0);
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_ptr_equal(r, &tag[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binds),
        cmocka_unit_test(missing_soname),
        cmocka_unit_test(missing_symbol_named),
        cmocka_unit_test(first_call_from_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
