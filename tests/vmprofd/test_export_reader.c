/*
 * tests/vmprofd/test_export_reader.c — vmprofd's reader of the stvm export
 * segment (vmprofd/export_reader.c): the header checks one by one, and a
 * real segment in /dev/shm for this test's own pid, including one that
 * shrinks after it was opened, and the code event log's region (version 2
 * only, reads bounded by it); and whether a process the reader knows by
 * its identity still runs (proto/identity.c), out of file descriptors too.
 */
#include "proto/identity.h"
#include "vmprofd/export_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define SEG_BYTES 4096u

static unsigned char seg[SEG_BYTES];

static ProfExportHeader *good_header(void)
{
    memset(seg, 0, sizeof seg);
    ProfExportHeader *h = (ProfExportHeader *)seg;
    h->magic = PROF_EXPORT_MAGIC;
    h->version = PROF_EXPORT_VERSION;
    h->header_size = sizeof *h;
    h->segment_size = SEG_BYTES;
    h->pid = getpid();
    h->counters_offset = 704; /* 64-aligned after the header */
    h->counters_size = sizeof(ProfCounters);
    {
        ProfIdentity id; /* made by this process: a reader checks who made it */
        if (prof_identity_of(0, &id)) {
            h->start_ticks = id.start_ticks;
            memcpy(h->boot_id, id.boot_id, sizeof h->boot_id);
        }
    }

    snprintf(h->vm_path, sizeof h->vm_path, "/usr/bin/stvm");
    ProfCounters *c = (ProfCounters *)(seg + h->counters_offset);
    c->eden_bytes = 4194304;
    c->scavenges = 17;
    return h;
}

static void expect_invalid(const ProfExportHeader *h, uint64_t size, const char *want)
{
    char why[256] = "";
    assert_false(vmprofd_export_validate(h, size, getpid(), why, sizeof why));
    if (strstr(why, want) == NULL)
        fail_msg("reason '%s' lacks '%s'", why, want);
}

static void a_well_formed_header_passes(void **state)
{
    (void)state;
    char why[256];
    assert_true(vmprofd_export_validate(good_header(), SEG_BYTES, getpid(), why, sizeof why));
}

static void each_broken_field_is_named(void **state)
{
    (void)state;
    ProfExportHeader *h;
    h = good_header(), h->magic ^= 1, expect_invalid(h, SEG_BYTES, "bad magic");
    h = good_header(), h->version = 0, expect_invalid(h, SEG_BYTES, "unknown version");
    h = good_header(), h->header_size = 16, expect_invalid(h, SEG_BYTES, "header_size 16");
    h = good_header(), expect_invalid(h, SEG_BYTES - 1, "truncated");
    h = good_header(), h->pid = getpid() + 1, expect_invalid(h, SEG_BYTES, "names pid");
    h = good_header(), h->counters_offset = SEG_BYTES - 8, expect_invalid(h, SEG_BYTES, "do not fit");
    h = good_header(), h->counters_offset = 708, expect_invalid(h, SEG_BYTES, "8-aligned");
    h = good_header(), h->counters_offset = 8, expect_invalid(h, SEG_BYTES, "do not fit");
    h = good_header(), h->counters_size = 8, expect_invalid(h, SEG_BYTES, "do not fit");
    /* offset + size wrapping around 2^64 must not pass as "inside". */
    h = good_header(), h->counters_size = UINT64_MAX - 100, expect_invalid(h, SEG_BYTES, "do not fit");
    h = good_header(), h->code_log_offset = 1024, h->code_log_size = SEG_BYTES,
    expect_invalid(h, SEG_BYTES, "code log");
    h = good_header(), h->code_zone_start = 0x2000, h->code_zone_end = 0x1000, expect_invalid(h, SEG_BYTES, "code zone");
    h = good_header(), memset(h->vm_path, 'x', sizeof h->vm_path), expect_invalid(h, SEG_BYTES, "NUL-terminated");
}

static char path[64];

static void the_code_log_is_there_from_version_2_and_read_within_its_region(void **state)
{
    (void)state;
    ProfExportHeader *h = good_header();
    h->code_log_offset = 1024;
    h->code_log_size = 2048;
    memset(seg + 1024, 0x5a, 2048);
    seg[1024 + 2047] = 0x77;
    snprintf(path, sizeof path, "/tmp/test_export_reader.%d", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, seg, SEG_BYTES), (ssize_t)SEG_BYTES);
    close(fd);
    ExportStatus st;
    char msg[256];
    ExportReader *r = vmprofd_export_open_file(path, getpid(), &st, msg, sizeof msg);
    assert_non_null(r);
    assert_true(vmprofd_export_has_code_log(r));
    uint8_t b[2];
    assert_true(vmprofd_export_read_log(r, 2046, b, 2));
    assert_int_equal(b[0], 0x5a);
    assert_int_equal(b[1], 0x77);
    assert_false(vmprofd_export_read_log(r, 2047, b, 2));       /* one byte past the region */
    assert_false(vmprofd_export_read_log(r, UINT64_MAX, b, 2)); /* offset + len wrapping */
    vmprofd_export_close(r);
    /* version 1: the same bytes are no log */
    h->version = 1;
    fd = open(path, O_WRONLY | O_TRUNC, 0600);
    assert_int_equal(write(fd, seg, SEG_BYTES), (ssize_t)SEG_BYTES);
    close(fd);
    r = vmprofd_export_open_file(path, getpid(), &st, msg, sizeof msg);
    assert_non_null(r);
    assert_false(vmprofd_export_has_code_log(r));
    assert_false(vmprofd_export_read_log(r, 0, b, 2));
    vmprofd_export_close(r);
    unlink(path);
}


static void write_segment(size_t len)
{
    snprintf(path, sizeof path, PROF_EXPORT_PATH_FMT, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, seg, len), (ssize_t)len);
    close(fd);
}

static void a_real_segment_is_read_and_survives_shrinking(void **state)
{
    (void)state;
    good_header();
    write_segment(SEG_BYTES);
    ExportStatus st;
    char msg[256];
    ExportReader *r = vmprofd_export_open(getpid(), &st, msg, sizeof msg);
    assert_non_null(r);
    assert_int_equal(st, VMPROFD_EXPORT_OK);
    assert_string_equal(vmprofd_export_header(r)->vm_path, "/usr/bin/stvm");
    ProfCounters c;
    assert_true(vmprofd_export_read_counters(r, &c, msg, sizeof msg));
    assert_int_equal(c.eden_bytes, 4194304);
    assert_int_equal(c.scavenges, 17);
    /* The writer truncates the file under us: a message, not SIGBUS. */
    assert_int_equal(truncate(path, 100), 0);
    assert_false(vmprofd_export_read_counters(r, &c, msg, sizeof msg));
    assert_non_null(strstr(msg, "shrank"));
    vmprofd_export_close(r);
    unlink(path);
}

static void a_missing_segment_is_absent_and_a_short_one_invalid(void **state)
{
    (void)state;
    ExportStatus st;
    char msg[256];
    snprintf(path, sizeof path, PROF_EXPORT_PATH_FMT, (int)getpid());
    unlink(path);
    assert_null(vmprofd_export_open(getpid(), &st, msg, sizeof msg));
    assert_int_equal(st, VMPROFD_EXPORT_ABSENT);
    good_header();
    write_segment(40);
    assert_null(vmprofd_export_open(getpid(), &st, msg, sizeof msg));
    assert_int_equal(st, VMPROFD_EXPORT_INVALID);
    assert_non_null(strstr(msg, "truncated: 40 bytes"));
    unlink(path);
}

/* A child blocked reading a pipe until the write end closes. */
static pid_t blocked_child(int *write_end)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char c;
        close(fds[1]);
        while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(fds[0]);
    *write_end = fds[1];
    return pid;
}

static bool is_zombie(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (prof_proc_read(path, buf, sizeof buf) <= 0)
        return false;
    const char *paren = strrchr(buf, ')');
    return paren && paren[2] == 'Z';
}

static void a_process_is_gone_only_on_proof(void **state)
{
    (void)state;
    ProfIdentity me, other;
    assert_true(prof_identity_of(0, &me));
    assert_int_equal(prof_process_state(getpid(), &me), PROF_PROCESS_ALIVE);
    other = me;
    other.start_ticks++;
    assert_int_equal(prof_process_state(getpid(), &other), PROF_PROCESS_GONE);

    /* out of descriptors: /proc cannot be read, and that is no exit */
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64], n = 0;
    while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
        n++;
    int err = errno;
    ProfProcessState st = prof_process_state(getpid(), &me);
    while (n > 0)
        close(fds[--n]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(err, EMFILE);
    assert_int_equal(st, PROF_PROCESS_UNKNOWN);

    /* a child: alive, then a zombie (exited, not reaped), then reaped */
    int w;
    pid_t child = blocked_child(&w);
    ProfIdentity cid;
    assert_true(prof_identity_of(child, &cid));
    assert_int_equal(prof_process_state(child, &cid), PROF_PROCESS_ALIVE);
    close(w);
    for (int i = 0; i < 500 && !is_zombie(child); i++)
        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
    assert_true(is_zombie(child));
    assert_int_equal(prof_process_state(child, &cid), PROF_PROCESS_GONE);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(prof_process_state(child, &cid), PROF_PROCESS_GONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_well_formed_header_passes),
        cmocka_unit_test(each_broken_field_is_named),
        cmocka_unit_test(a_real_segment_is_read_and_survives_shrinking),
        cmocka_unit_test(a_missing_segment_is_absent_and_a_short_one_invalid),
        cmocka_unit_test(the_code_log_is_there_from_version_2_and_read_within_its_region),
        cmocka_unit_test(a_process_is_gone_only_on_proof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
