/*
 * tests/vmprofd/test_options.c — vmprofd's command line (vmprofd/options.c):
 * defaults, the output scheme (-o with --format, names, shorthands, stdout)
 * and the messages for bad usage.
 */
#include "vmprofd/options.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* Parses a NULL-terminated argument list (program name added). */
static bool parse(VmprofdOptions *o, char *err, size_t errlen, ...)
{
    static char *argv[64];
    int argc = 0;
    argv[argc++] = "vmprofd";
    va_list ap;
    va_start(ap, errlen);
    char *a;
    while ((a = va_arg(ap, char *)) != NULL)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return vmprofd_options_parse(argc, argv, o, err, errlen);
}

static void pid_alone_gives_the_documented_defaults(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "--pid", "42", NULL));
    assert_int_equal(o.pid, 42);
    assert_null(o.command);
    assert_true(o.seconds == VMPROFD_DEFAULT_SECONDS);
    assert_true(o.rate_hz == 1400.0);
    assert_int_equal(o.mode, VMPROFD_MODE_AUTO);
    assert_int_equal(o.stack_bytes, VMPROFD_DEFAULT_STACK_BYTES);
    assert_int_equal(o.noutputs, 1);
    assert_string_equal(o.outputs[0].path, "-");
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_TEXT);
}

static void format_applies_to_the_output_before_it(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-p", "1", "-o", "out.txt", "--format", "text", "-o", "prof.pb.gz", "--format",
                      "pprof", "-o", "x", "-f", "folded", NULL));
    assert_int_equal(o.noutputs, 3);
    assert_string_equal(o.outputs[0].path, "out.txt");
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_TEXT);
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_PPROF);
    assert_string_equal(o.outputs[2].path, "x");
    assert_int_equal(o.outputs[2].format, VMPROFD_FORMAT_FOLDED);
}

static void output_without_format_is_guessed_from_its_name(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-p", "1", "-o", "a.pb.gz", "-o", "b.folded", "-o", "c.report", NULL));
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_PPROF);
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_FOLDED);
    assert_int_equal(o.outputs[2].format, VMPROFD_FORMAT_TEXT);
    assert_int_equal(o.noutputs, 3); /* files given: nothing on stdout */
}

static void shorthands_and_a_leading_format_for_stdout(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-p", "1", "--format", "folded", "--text", "t", "--pprof", "p.bin", "--folded",
                      "f.txt", NULL));
    assert_int_equal(o.noutputs, 4);
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_TEXT);
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_PPROF);
    assert_int_equal(o.outputs[2].format, VMPROFD_FORMAT_FOLDED);
    assert_string_equal(o.outputs[3].path, "-");
    assert_int_equal(o.outputs[3].format, VMPROFD_FORMAT_FOLDED);
}

static void command_after_dashdash_keeps_its_own_options(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-s", "2.5", "-F", "997", "--mode", "ptrace", "--", "stvm", "--pid", "3", NULL));
    assert_int_equal(o.pid, 0);
    assert_non_null(o.command);
    assert_string_equal(o.command[0], "stvm");
    assert_string_equal(o.command[1], "--pid");
    assert_string_equal(o.command[2], "3");
    assert_null(o.command[3]);
    assert_true(o.seconds == 2.5);
    assert_true(o.rate_hz == 997.0);
    assert_int_equal(o.mode, VMPROFD_MODE_PTRACE);
}

static void help_and_version_need_no_target(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "--help", NULL));
    assert_true(o.help);
    assert_true(parse(&o, err, sizeof err, "--version", NULL));
    assert_true(o.version);
}

static void expect_error(const char *want, ...)
{
    static char *argv[64];
    int argc = 0;
    argv[argc++] = "vmprofd";
    va_list ap;
    va_start(ap, want);
    char *a;
    while ((a = va_arg(ap, char *)) != NULL)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    VmprofdOptions o;
    char err[256] = "";
    assert_false(vmprofd_options_parse(argc, argv, &o, err, sizeof err));
    if (strstr(err, want) == NULL)
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void bad_usage_says_what_is_wrong(void **state)
{
    (void)state;
    expect_error("nothing to profile", NULL);
    expect_error("not both", "--pid", "1", "--", "ls", NULL);
    expect_error("'--' must be followed by a command", "--", NULL);
    expect_error("--pid needs a process id", "--pid", "0", NULL);
    expect_error("--pid needs a process id", "--pid", "99999999999", NULL);
    expect_error("--seconds needs", "-p", "1", "-s", "0", NULL);
    expect_error("--seconds needs", "-p", "1", "-s", "nan", NULL);
    expect_error("--rate needs a frequency in Hz from 1 to 100000", "-p", "1", "-F", "100001", NULL);
    expect_error("--mode is auto, perf or ptrace", "-p", "1", "-m", "hw", NULL);
    expect_error("--stack-bytes needs a multiple of 8", "-p", "1", "--stack-bytes", "40000", NULL);
    expect_error("--format is text, pprof, folded or flamegraph", "-p", "1", "-f", "json", NULL);
    expect_error("--code-log-poll needs milliseconds from 1 to 5000", "-p", "1", "--code-log-poll", "0", NULL);
    expect_error("--code-log-poll needs milliseconds from 1 to 5000", "-p", "1", "--code-log-poll", "9s", NULL);
    expect_error("follows no -o", "-p", "1", "-f", "text", "-f", "folded", NULL);
    expect_error("given twice", "-p", "1", "-o", "a", "--folded", "a", NULL);
    expect_error("pprof output is gzipped binary", "-p", "1", "-o", "-", "-f", "pprof", NULL);
    expect_error("needs a value", "-p", "1", "-o", NULL);
    expect_error("unknown option '--frobnicate'", "--frobnicate", NULL);
    expect_error("unknown option '-x'", "-x", NULL);
    expect_error("unexpected argument 'ls'", "-p", "1", "ls", NULL);
}

static void wall_has_its_own_default_rate_and_refuses_perf(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "--event", "wall", "--pid", "1", NULL));
    assert_true(o.rate_hz == VMPROFD_DEFAULT_WALL_RATE_HZ);
    assert_true(parse(&o, err, sizeof err, "-F", "250", "--event", "wall", "--pid", "1", NULL));
    assert_true(o.rate_hz == 250.0);
    assert_true(parse(&o, err, sizeof err, "--pid", "1", NULL));
    assert_true(o.rate_hz == VMPROFD_DEFAULT_RATE_HZ);
    assert_true(parse(&o, err, sizeof err, "--event", "wall", "--mode", "ptrace", "--pid", "1", NULL));
    assert_false(parse(&o, err, sizeof err, "--event", "wall", "--mode", "perf", "--pid", "1", NULL));
    assert_non_null(strstr(err, "--event wall needs the ptrace sampler"));
}

static void alloc_options_parse_and_belong_to_alloc(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "--pid", "1", NULL));
    assert_int_equal(o.event, VMPROFD_EVENT_CPU);
    assert_true(parse(&o, err, sizeof err, "-e", "alloc", "--pid", "1", NULL));
    assert_int_equal(o.event, VMPROFD_EVENT_ALLOC);
    assert_int_equal(o.alloc_interval, 512 * 1024);
    assert_false(o.live);
    assert_true(parse(&o, err, sizeof err, "--event", "alloc", "--alloc-interval", "16K", "--live", "--pid", "1", NULL));
    assert_int_equal(o.alloc_interval, 16384);
    assert_true(o.live);
    assert_true(parse(&o, err, sizeof err, "-e", "alloc", "--alloc-interval", "4MiB", "--pid", "1", NULL));
    assert_int_equal(o.alloc_interval, 4u << 20);
    assert_true(parse(&o, err, sizeof err, "-e", "alloc", "--alloc-interval", "1000", "--pid", "1", NULL));
    assert_int_equal(o.alloc_interval, 1000);
    assert_true(parse(&o, err, sizeof err, "-e", "alloc", "--alloc-interval", "1.5M", "--pid", "1", NULL));
    assert_int_equal(o.alloc_interval, 1572864);
    const char *bad[] = {"1x", "", "K", "-5", "100", "2T", "99999999999999999999", "0x1000", "1e6", "1.2.3K", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(parse(&o, err, sizeof err, "-e", "alloc", "--alloc-interval", bad[i], "--pid", "1", NULL));
        assert_non_null(strstr(err, "--alloc-interval needs bytes"));
    }
    assert_false(parse(&o, err, sizeof err, "--live", "--pid", "1", NULL));
    assert_non_null(strstr(err, "--live applies to --event alloc only"));
    assert_false(parse(&o, err, sizeof err, "-e", "wall", "--alloc-interval", "1M", "--pid", "1", NULL));
    assert_non_null(strstr(err, "--alloc-interval applies to --event alloc only"));
    assert_false(parse(&o, err, sizeof err, "-e", "heap", "--pid", "1", NULL));
    assert_non_null(strstr(err, "--event is cpu, alloc or wall, not 'heap'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pid_alone_gives_the_documented_defaults),
        cmocka_unit_test(format_applies_to_the_output_before_it),
        cmocka_unit_test(output_without_format_is_guessed_from_its_name),
        cmocka_unit_test(shorthands_and_a_leading_format_for_stdout),
        cmocka_unit_test(command_after_dashdash_keeps_its_own_options),
        cmocka_unit_test(help_and_version_need_no_target),
        cmocka_unit_test(bad_usage_says_what_is_wrong),
        cmocka_unit_test(wall_has_its_own_default_rate_and_refuses_perf),
        cmocka_unit_test(alloc_options_parse_and_belong_to_alloc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
