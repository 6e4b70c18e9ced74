/*
 * tests/vmprofd/test_recstore.c — vmprofd/recstore.c (the folder of
 * `vmprofd record`) and record.c's duration and size parsers, in a scratch
 * folder: names, never overwriting, the sweep of temporaries, the limits.
 */
#include "vmprofd/record.h"
#include "vmprofd/recstore.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char root[256];

static int make_root(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/test-recstore.XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static size_t count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void test_stamp(void **state)
{
    (void)state;
    char s[24];
    vmprofd_recstore_stamp(&(struct timespec){0, 0}, s);
    assert_string_equal(s, "19700101T000000.000Z");
    vmprofd_recstore_stamp(&(struct timespec){365 * 86400 + 3661, 999999999}, s);
    assert_string_equal(s, "19710101T010101.999Z");
}

static void test_durations_and_sizes(void **state)
{
    (void)state;
    double d;
    assert_true(vmprofd_record_parse_duration("500ms", &d));
    assert_true(d == 0.5);
    assert_true(vmprofd_record_parse_duration("60s", &d) && d == 60);
    assert_true(vmprofd_record_parse_duration("90", &d) && d == 90);
    assert_true(vmprofd_record_parse_duration("5m", &d) && d == 300);
    assert_true(vmprofd_record_parse_duration("2h", &d) && d == 7200);
    assert_true(vmprofd_record_parse_duration("7d", &d) && d == 7 * 86400);
    assert_true(vmprofd_record_parse_duration("0", &d) && d == 0);
    const char *bad[] = {"", "s", "5x", "-1s", "1e99", "nan", "inf", "5 s", "5sec"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(vmprofd_record_parse_duration(bad[i], &d));
    uint64_t b; /* record's --keep-size takes vmprofd's one size parser (options.h) */
    assert_true(vmprofd_options_parse_bytes("1G", &b) && b == 1ull << 30);
    assert_true(vmprofd_options_parse_bytes("64K", &b) && b == 65536);
    assert_true(vmprofd_options_parse_bytes("1.5M", &b) && b == 1572864);
    assert_true(vmprofd_options_parse_bytes("123", &b) && b == 123);
    assert_true(vmprofd_options_parse_bytes("0", &b) && b == 0);
    const char *bad_sizes[] = {"", "1Q", "-1", "G", "1e30", "nan", "1 G"};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof *bad_sizes; i++)
        assert_false(vmprofd_options_parse_bytes(bad_sizes[i], &b));
}

/* Two intervals with one start: the second gets "-1", the first stays. */
static void test_never_overwrites(void **state)
{
    (void)state;
    RecStore s;
    size_t swept;
    char err[512], pdir[4300], p1[4400], p2[4400];
    assert_true(vmprofd_recstore_open(&s, root, 0, 0, &swept, err, sizeof err));
    assert_true(vmprofd_recstore_process_dir(&s, 42, 1234, pdir, sizeof pdir, err, sizeof err));
    char want[4400];
    snprintf(want, sizeof want, "%s/%s/42-1234", root, s.host);
    assert_string_equal(pdir, want);
    struct timespec t = {1795890162, 5000000};
    assert_true(vmprofd_recstore_write(&s, pdir, &t, "first", 5, p1, sizeof p1, err, sizeof err));
    assert_true(vmprofd_recstore_write(&s, pdir, &t, "second", 6, p2, sizeof p2, err, sizeof err));
    char stamp[24];
    vmprofd_recstore_stamp(&t, stamp);
    snprintf(want, sizeof want, "%s/%s.pb.gz", pdir, stamp);
    assert_string_equal(p1, want);
    snprintf(want, sizeof want, "%s/%s-1.pb.gz", pdir, stamp);
    assert_string_equal(p2, want);
    char buf[64];
    read_file(p1, buf, sizeof buf);
    assert_string_equal(buf, "first");
    read_file(p2, buf, sizeof buf);
    assert_string_equal(buf, "second");
    assert_int_equal(count_files(pdir), 2); /* no temporary left */
    vmprofd_recstore_close(&s);
}

/* Our temporaries go at the next open; other names stay. */
static void test_sweep(void **state)
{
    (void)state;
    RecStore s;
    size_t swept;
    char err[512], pdir[4300], path[4400];
    assert_true(vmprofd_recstore_open(&s, root, 0, 0, &swept, err, sizeof err));
    assert_int_equal(swept, 0);
    assert_true(vmprofd_recstore_process_dir(&s, 7, 99, pdir, sizeof pdir, err, sizeof err));
    vmprofd_recstore_close(&s);
    const char *names[] = {"20261128T000000.000Z.pb.gz.tmp.0123456789ab", /* ours: swept */
                           "20261128T000001.000Z.pb.gz.tmp.0123456789AB", /* not hex as we make it */
                           "20261128T000002.000Z.pb.gz.tmp.0123",          /* too short */
                           "notes.txt"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", pdir, names[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    assert_true(vmprofd_recstore_open(&s, root, 0, 0, &swept, err, sizeof err));
    assert_int_equal(swept, 1);
    snprintf(path, sizeof path, "%s/%s", pdir, names[0]);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(count_files(pdir), 3);
    vmprofd_recstore_close(&s);
}

static void set_mtime(const char *path, time_t t)
{
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* Oldest first, by modification time, until the bytes fit; a folder
 * emptied goes with its last file; the age limit at open. */
static void test_limits(void **state)
{
    (void)state;
    RecStore s;
    size_t swept;
    char err[512], a[4300], b[4300], pa[4400], pb1[4400], pb2[4400];
    assert_true(vmprofd_recstore_open(&s, root, 0, 0, &swept, err, sizeof err));
    assert_true(vmprofd_recstore_process_dir(&s, 1, 1, a, sizeof a, err, sizeof err));
    assert_true(vmprofd_recstore_process_dir(&s, 2, 2, b, sizeof b, err, sizeof err));
    char data[100];
    memset(data, 'x', sizeof data);
    assert_true(vmprofd_recstore_write(&s, a, &(struct timespec){1000, 0}, data, 100, pa, sizeof pa, err, sizeof err));
    assert_true(vmprofd_recstore_write(&s, b, &(struct timespec){2000, 0}, data, 100, pb1, sizeof pb1, err, sizeof err));
    assert_true(vmprofd_recstore_write(&s, b, &(struct timespec){3000, 0}, data, 100, pb2, sizeof pb2, err, sizeof err));
    vmprofd_recstore_close(&s);
    time_t now = time(NULL);
    set_mtime(pa, now - 3 * 86400);
    set_mtime(pb1, now - 2 * 86400);
    set_mtime(pb2, now - 60);
    /* 250 bytes: the oldest (a's only file) goes, and a's folder with it */
    assert_true(vmprofd_recstore_open(&s, root, 0, 250, &swept, err, sizeof err));
    assert_int_equal(s.removed, 1);
    assert_int_equal(access(pa, F_OK), -1);
    assert_int_equal(access(a, F_OK), -1);
    assert_int_equal(access(pb1, F_OK), 0);
    /* a write over the limit removes the oldest left, not the new one */
    char pn[4400];
    assert_true(vmprofd_recstore_write(&s, b, &(struct timespec){4000, 0}, data, 100, pn, sizeof pn, err, sizeof err));
    assert_int_equal(s.removed, 2);
    assert_int_equal(access(pb1, F_OK), -1);
    assert_int_equal(access(pb2, F_OK), 0);
    assert_int_equal(access(pn, F_OK), 0);
    vmprofd_recstore_close(&s);
    /* one day of age: pb2 (a minute old) and pn stay */
    assert_true(vmprofd_recstore_open(&s, root, 86400, 0, &swept, err, sizeof err));
    assert_int_equal(s.removed, 0);
    vmprofd_recstore_close(&s);
    set_mtime(pb2, now - 2 * 86400);
    assert_true(vmprofd_recstore_open(&s, root, 86400, 0, &swept, err, sizeof err));
    assert_int_equal(s.removed, 1);
    assert_int_equal(access(pb2, F_OK), -1);
    assert_int_equal(access(pn, F_OK), 0);
    vmprofd_recstore_close(&s);
}

static void test_not_a_folder(void **state)
{
    (void)state;
    char path[300], err[512];
    snprintf(path, sizeof path, "%s/file", root);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    RecStore s;
    size_t swept;
    assert_false(vmprofd_recstore_open(&s, path, 0, 0, &swept, err, sizeof err));
    assert_non_null(strstr(err, "is not a folder"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stamp),
        cmocka_unit_test(test_durations_and_sizes),
        cmocka_unit_test_setup_teardown(test_never_overwrites, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_sweep, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_limits, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_not_a_folder, make_root, remove_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
