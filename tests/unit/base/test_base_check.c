/*
 * tests/unit/base/test_base_check.c — base/check.h: a failing check prints
 * file:line, the condition and its message, then aborts (death tests in a
 * forked child); BASE_ASSERT is compiled out under NDEBUG
 * (test_base_check_ndebug.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/check.h"

int ndebug_assert_evaluations(void); /* test_base_check_ndebug.c */

/* Runs fn in a child with stderr into a pipe; answers what it printed and
 * asserts it died of SIGABRT. */
static void dies(void (*fn)(int), int arg, char *out, size_t len)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        fn(arg);
        _exit(0);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(p[0], out + n, len - 1 - n)) > 0) n += (size_t)r;
    out[n] = 0;
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void check_with_message(int x) { BASE_CHECK(x == 2, "x is %d, not %s", x, "two"); }
static void check_without_message(int x) { BASE_CHECK(x > 5); }
static void assert_with_message(int x) { BASE_ASSERT(x != 7, "seven is %s", "out"); }

static void check_prints_message(void **state)
{
    (void)state;
    char out[1024];
    dies(check_with_message, 3, out, sizeof out);
    assert_non_null(strstr(out, "test_base_check.c:"));
    assert_non_null(strstr(out, ": check_with_message: check 'x == 2' failed: x is 3, not two\n"));
}

static void check_without_message_prints_condition(void **state)
{
    (void)state;
    char out[1024];
    dies(check_without_message, 1, out, sizeof out);
    assert_non_null(strstr(out, ": check_without_message: check 'x > 5' failed\n"));
}

static void assert_prints_message(void **state)
{
    (void)state;
    char out[1024];
    dies(assert_with_message, 7, out, sizeof out);
    assert_non_null(strstr(out, ": assert_with_message: assertion 'x != 7' failed: seven is out\n"));
}

static void passing_checks_are_quiet(void **state)
{
    (void)state;
    check_with_message(2);
    check_without_message(6);
    assert_with_message(1);
}

static void describe(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    base_check_describe(buf, len, "check", "f.c", 12, "fn", "a < b", fmt, ap);
    va_end(ap);
}

static void description_truncates(void **state)
{
    (void)state;
    char buf[64];
    describe(buf, sizeof buf, ": %d left", 4);
    assert_string_equal(buf, "f.c:12: fn: check 'a < b' failed: 4 left");
    char small[16];
    describe(small, sizeof small, ": %d left", 4);
    assert_string_equal(small, "f.c:12: fn: che");
    char edge[33]; /* exactly the head and its NUL: no room for the message */
    describe(edge, sizeof edge, ": %d left", 4);
    assert_string_equal(edge, "f.c:12: fn: check 'a < b' failed");
    char cut[36]; /* the message cut short */
    describe(cut, sizeof cut, ": %d left", 4);
    assert_string_equal(cut, "f.c:12: fn: check 'a < b' failed: 4");
}

static void ndebug_compiles_asserts_out(void **state)
{
    (void)state;
    assert_int_equal(ndebug_assert_evaluations(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_prints_message),
        cmocka_unit_test(check_without_message_prints_condition),
        cmocka_unit_test(assert_prints_message),
        cmocka_unit_test(passing_checks_are_quiet),
        cmocka_unit_test(description_truncates),
        cmocka_unit_test(ndebug_compiles_asserts_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
