/*
 * Unit tests for report/safefile.h: creating files where others can write.
 * Each test works in its own scratch folder. The cases with another user's
 * file need root (to make one: chown to nobody) and are skipped otherwise;
 * tests/untrusted/ checks the same on real stvm runs.
 */
#define _GNU_SOURCE
#include "report/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct Scratch {
    char dir[64];
    char path[128];
    char victim[128];
} Scratch;

static int setup(void **state)
{
    Scratch *s = calloc(1, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/test-safefile.XXXXXX");
    if (!mkdtemp(s->dir)) return -1;
    snprintf(s->path, sizeof s->path, "%s/out", s->dir);
    snprintf(s->victim, sizeof s->victim, "%s/victim", s->dir);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    Scratch *s = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    int rc = system(cmd);
    free(s);
    return rc == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void a_free_name_is_created_as_a_regular_file_of_ours(void **state)
{
    Scratch *s = *state;
    char err[256] = "";
    int fd = report_safefile_create(s->path, O_WRONLY, 0644, 0, err, sizeof err);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(st.st_mode & 07777 & ~0644, 0);
    assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(fd);
}

static void a_name_of_ours_is_refused_unless_the_caller_says_it_is_stale(void **state)
{
    Scratch *s = *state;
    char err[256] = "";
    write_file(s->path, "old");
    assert_int_equal(report_safefile_create(s->path, O_WRONLY, 0644, 0, err, sizeof err), -1);
    assert_int_equal(errno, EEXIST);
    assert_non_null(strstr(err, "it exists"));
    int fd = report_safefile_create(s->path, O_WRONLY, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, sizeof err);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 0); /* a new file, not the old one truncated */
    close(fd);
}

static void a_stale_link_of_ours_is_removed_and_its_target_left_alone(void **state)
{
    Scratch *s = *state;
    char err[256] = "", buf[64];
    write_file(s->victim, "precious");
    assert_int_equal(symlink(s->victim, s->path), 0);
    int fd = report_safefile_create(s->path, O_WRONLY, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "new", 3), 3);
    close(fd);
    read_file(s->victim, buf, sizeof buf);
    assert_string_equal(buf, "precious");
    struct stat st;
    assert_int_equal(lstat(s->path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

static void a_directory_in_the_way_is_an_error_with_errno(void **state)
{
    Scratch *s = *state;
    char err[256] = "";
    assert_int_equal(mkdir(s->path, 0755), 0);
    assert_int_equal(report_safefile_create(s->path, O_WRONLY, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, sizeof err),
                     -1);
    assert_int_equal(errno, EISDIR);
}

static void a_missing_folder_is_an_error_naming_the_path(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(report_safefile_create("/nonexistent-dir/x", O_WRONLY, 0644, 0, err, sizeof err), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(err, "cannot create /nonexistent-dir/x: No such file or directory");
}

static bool nobody(uid_t *uid, gid_t *gid)
{
    struct passwd *pw = getpwnam("nobody");
    if (geteuid() != 0 || !pw) return false;
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return true;
}

static void another_users_file_is_foreign_named_and_never_written(void **state)
{
    Scratch *s = *state;
    uid_t uid = 0;
    gid_t gid = 0;
    if (!nobody(&uid, &gid)) skip();
    char err[256] = "", buf[64];
    write_file(s->path, "theirs");
    assert_int_equal(chown(s->path, uid, gid), 0);
    assert_int_equal(report_safefile_create(s->path, O_WRONLY, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, sizeof err),
                     REPORT_SAFEFILE_FOREIGN);
    assert_non_null(strstr(err, s->path));
    assert_non_null(strstr(err, "(nobody)"));
    read_file(s->path, buf, sizeof buf);
    assert_string_equal(buf, "theirs");
}

static void another_users_link_is_foreign_and_its_target_untouched(void **state)
{
    Scratch *s = *state;
    uid_t uid = 0;
    gid_t gid = 0;
    if (!nobody(&uid, &gid)) skip();
    char err[256] = "", buf[64];
    write_file(s->victim, "precious");
    assert_int_equal(symlink(s->victim, s->path), 0);
    assert_int_equal(lchown(s->path, uid, gid), 0);
    assert_int_equal(report_safefile_create(s->path, O_WRONLY, 0644, REPORT_SAFEFILE_REPLACE_OWN, err, sizeof err),
                     REPORT_SAFEFILE_FOREIGN);
    read_file(s->victim, buf, sizeof buf);
    assert_string_equal(buf, "precious");
    struct stat st;
    assert_int_equal(lstat(s->path, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* left in place */
}

static void temporaries_get_fresh_random_names_beside_the_final_path(void **state)
{
    Scratch *s = *state;
    char err[256] = "", a[256], b[256];
    int fa = report_safefile_temp(s->path, O_WRONLY, 0644, a, sizeof a, err, sizeof err);
    int fb = report_safefile_temp(s->path, O_WRONLY, 0644, b, sizeof b, err, sizeof err);
    assert_true(fa >= 0 && fb >= 0);
    assert_string_not_equal(a, b);
    assert_int_equal(strncmp(a, s->path, strlen(s->path)), 0);
    assert_int_equal(strlen(a), strlen(s->path) + strlen(".tmp.") + 12);
    close(fa);
    close(fb);
    char tiny[8];
    assert_int_equal(report_safefile_temp(s->path, O_WRONLY, 0644, tiny, sizeof tiny, err, sizeof err), -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_free_name_is_created_as_a_regular_file_of_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(a_name_of_ours_is_refused_unless_the_caller_says_it_is_stale, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_stale_link_of_ours_is_removed_and_its_target_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_directory_in_the_way_is_an_error_with_errno, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_folder_is_an_error_naming_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(another_users_file_is_foreign_named_and_never_written, setup, teardown),
        cmocka_unit_test_setup_teardown(another_users_link_is_foreign_and_its_target_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(temporaries_get_fresh_random_names_beside_the_final_path, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
