/*
 * report/pprof.c's output read by the real consumer: `go tool pprof -top`.
 * Go is not a build dependency, so without `go` on PATH this test says
 * "skipped: go not installed" and passes; with it, the top function by
 * flat CPU must be the fixture's hottest method, Integer>>benchFib (5000
 * of 10,000 samples: 50%).
 */
#include "report_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static bool go_on_path(void)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *dirs = strdup(path);
    bool found = false;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char exe[4096];
        snprintf(exe, sizeof exe, "%s/go", *d ? d : ".");
        found = access(exe, X_OK) == 0;
    }
    free(dirs);
    return found;
}

static void go_tool_pprof_top_names_the_hottest_method(void **state)
{
    (void)state;
    Fixture fx = fixture_new();
    char path[] = "/tmp/test_report_go_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_true(report_write_pprof(path, fx.p, err, sizeof err));
    report_profile_free(fx.p);

    char cmd[512];
    snprintf(cmd, sizeof cmd, "go tool pprof -top '%s' 2>&1", path);
    FILE *out = popen(cmd, "r");
    assert_non_null(out);
    char line[1024];
    bool in_table = false, checked = false;
    while (fgets(line, sizeof line, out)) {
        fputs(line, stdout); /* the whole answer, for ctest --output-on-failure */
        if (!in_table) {
            in_table = strstr(line, "flat%") && strstr(line, "cum%");
        } else if (!checked) {
            assert_non_null(strstr(line, "Integer>>benchFib"));
            assert_non_null(strstr(line, "50.00%"));
            checked = true;
        }
    }
    int rc = pclose(out);
    unlink(path);
    assert_int_equal(rc, 0);
    assert_true(checked);
}

int main(void)
{
    if (!go_on_path()) {
        printf("skipped: go not installed\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(go_tool_pprof_top_names_the_hottest_method),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
