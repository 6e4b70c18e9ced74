/*
 * tests/vmprofd/test_offcpu.c — off-CPU naming for --event wall
 * (vmprofd/offcpu.c): system call names from the generated table, the
 * pseudo-frames, the report's share line. Its options (default rate,
 * --mode perf refused) are test_options.c's.
 */
#include "vmprofd/offcpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>

#include <cmocka.h>

static void syscall_numbers_have_their_kernel_names(void **state)
{
    (void)state;
    assert_string_equal(vmprofd_offcpu_syscall_name(SYS_read), "read");
    assert_string_equal(vmprofd_offcpu_syscall_name(SYS_write), "write");
    assert_string_equal(vmprofd_offcpu_syscall_name(SYS_clock_nanosleep), "clock_nanosleep");
    assert_string_equal(vmprofd_offcpu_syscall_name(SYS_futex), "futex");
    assert_string_equal(vmprofd_offcpu_syscall_name(SYS_epoll_wait), "epoll_wait");
    assert_null(vmprofd_offcpu_syscall_name(-1));
    assert_null(vmprofd_offcpu_syscall_name(100000));
}

static void labels_name_the_call_else_the_state(void **state)
{
    (void)state;
    char b[VMPROFD_OFFCPU_LABEL_MAX];
    vmprofd_offcpu_label('S', SYS_read, b, sizeof b);
    assert_string_equal(b, "[off-CPU: read]");
    vmprofd_offcpu_label('S', -1, b, sizeof b);
    assert_string_equal(b, "[off-CPU: S (sleeping)]");
    vmprofd_offcpu_label('D', -1, b, sizeof b);
    assert_string_equal(b, "[off-CPU: D (disk sleep)]");
    vmprofd_offcpu_label('S', 99999, b, sizeof b);
    assert_string_equal(b, "[off-CPU: syscall 99999]");
    assert_false(vmprofd_offcpu_is_off('R'));
    assert_true(vmprofd_offcpu_is_off('S'));
    assert_true(vmprofd_offcpu_is_off('D'));
}

static void summary_gives_shares_most_frequent_first(void **state)
{
    (void)state;
    OffCpuTally t = {0};
    for (int i = 0; i < 6; i++)
        vmprofd_offcpu_count(&t, NULL);
    vmprofd_offcpu_count(&t, "[off-CPU: read]");
    for (int i = 0; i < 3; i++)
        vmprofd_offcpu_count(&t, "[off-CPU: clock_nanosleep]");
    char b[256];
    vmprofd_offcpu_summary(&t, b, sizeof b);
    assert_string_equal(b, "off-CPU: 40.0 % of 10 wall-clock samples (clock_nanosleep 30.0 %, read 10.0 %)");
    vmprofd_offcpu_free(&t);
    vmprofd_offcpu_summary(&t, b, sizeof b);
    assert_string_equal(b, "off-CPU: 0.0 % of 0 wall-clock samples");
    /* a short buffer is cut, not overrun */
    vmprofd_offcpu_count(&t, "[off-CPU: read]");
    char small[20];
    vmprofd_offcpu_summary(&t, small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    vmprofd_offcpu_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(syscall_numbers_have_their_kernel_names),
        cmocka_unit_test(labels_name_the_call_else_the_state),
        cmocka_unit_test(summary_gives_shares_most_frequent_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
