/*
 * tests/vmprofd/test_options_flamegraph.c — vmprofd's command line for the
 * flame graph and the callers section (vmprofd/options.c): *.svg names,
 * --format flamegraph, --flamegraph FILE, --callers, --help; and a leading
 * --format with one -o FILE, which means that file's format in either
 * order, while with several outputs it stays stdout's.
 */
#include "vmprofd/options.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
    bool ok = vmprofd_options_parse(argc, argv, o, err, errlen);
    if (!ok)
        fprintf(stderr, "vmprofd_options_parse: %s\n", err);
    return ok;
}

static void assert_outputs_equal(const VmprofdOptions *a, const VmprofdOptions *b)
{
    assert_int_equal(a->noutputs, b->noutputs);
    for (size_t i = 0; i < a->noutputs; i++) {
        assert_string_equal(a->outputs[i].path, b->outputs[i].path);
        assert_int_equal(a->outputs[i].format, b->outputs[i].format);
        assert_int_equal(a->outputs[i].format_given, b->outputs[i].format_given);
    }
}

static void svg_names_and_the_flamegraph_options_give_a_flame_graph(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-p", "1", "-o", "run.svg", "--flamegraph", "g.out", "-o", "x.data",
                      "--format", "flamegraph", "-o", "y.data", "-f", "svg", NULL));
    assert_int_equal(o.noutputs, 4);
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_false(o.outputs[0].format_given); /* guessed from the name */
    assert_string_equal(o.outputs[1].path, "g.out");
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_true(o.outputs[1].format_given);
    assert_int_equal(o.outputs[2].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_int_equal(o.outputs[3].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_string_equal(vmprofd_options_format_name(VMPROFD_FORMAT_FLAMEGRAPH), "flame graph");
}

static void format_before_the_only_output_is_that_outputs_format(void **state)
{
    (void)state;
    static const char *const formats[] = {"text", "pprof", "folded", "flamegraph"};
    static const VmprofdFormat want[] = {VMPROFD_FORMAT_TEXT, VMPROFD_FORMAT_PPROF, VMPROFD_FORMAT_FOLDED,
                                         VMPROFD_FORMAT_FLAMEGRAPH};
    for (size_t i = 0; i < 4; i++) {
        VmprofdOptions before, after;
        char err[256];
        char *f = (char *)formats[i];
        /* "prof.out" guesses text: only the --format can make it anything else */
        assert_true(parse(&before, err, sizeof err, "--format", f, "-o", "prof.out", "--", "stvm", NULL));
        assert_true(parse(&after, err, sizeof err, "-o", "prof.out", "--format", f, "--", "stvm", NULL));
        assert_int_equal(before.noutputs, 1); /* nothing on stdout */
        assert_string_equal(before.outputs[0].path, "prof.out");
        assert_int_equal(before.outputs[0].format, want[i]);
        assert_outputs_equal(&before, &after);
        /* the short options too, and with other options between */
        assert_true(parse(&before, err, sizeof err, "-f", f, "-q", "-s", "2", "-o", "prof.out", "-p", "7", NULL));
        assert_true(parse(&after, err, sizeof err, "-o", "prof.out", "-f", f, "-q", "-s", "2", "-p", "7", NULL));
        assert_outputs_equal(&before, &after);
    }
}

static void leading_format_with_several_outputs_stays_stdouts(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-p", "1", "--format", "folded", "-o", "a.txt", "-o", "b.svg", NULL));
    assert_int_equal(o.noutputs, 3);
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_TEXT);
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_string_equal(o.outputs[2].path, "-");
    assert_int_equal(o.outputs[2].format, VMPROFD_FORMAT_FOLDED);

    /* the one -o has a format of its own: the leading one is stdout's */
    assert_true(parse(&o, err, sizeof err, "-p", "1", "--format", "folded", "-o", "a.out", "-f", "flamegraph", NULL));
    assert_int_equal(o.noutputs, 2);
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_string_equal(o.outputs[1].path, "-");
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_FOLDED);

    /* a shorthand names its own format: likewise */
    assert_true(parse(&o, err, sizeof err, "-p", "1", "--format", "folded", "--flamegraph", "g.svg", NULL));
    assert_int_equal(o.noutputs, 2);
    assert_int_equal(o.outputs[0].format, VMPROFD_FORMAT_FLAMEGRAPH);
    assert_int_equal(o.outputs[1].format, VMPROFD_FORMAT_FOLDED);

    /* pprof on stdout stays refused, whichever way it is asked for */
    assert_false(parse(&o, err, sizeof err, "-p", "1", "--format", "pprof", "-o", "-", NULL));
    assert_non_null(strstr(err, "pprof output is gzipped binary"));
    assert_false(parse(&o, err, sizeof err, "-p", "1", "--format", "pprof", "-o", "a.txt", "-o", "b.txt", NULL));
    assert_non_null(strstr(err, "pprof output is gzipped binary"));
}

static void callers_option_turns_the_section_on(void **state)
{
    (void)state;
    VmprofdOptions o;
    char err[256];
    assert_true(parse(&o, err, sizeof err, "-p", "1", NULL));
    assert_false(o.callers);
    assert_true(parse(&o, err, sizeof err, "-p", "1", "--callers", "-o", "r.txt", NULL));
    assert_true(o.callers);
}

static void help_tells_of_the_flame_graph_and_the_callers(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    vmprofd_options_usage(f);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(text, "*.svg: flame graph"));
    assert_non_null(strstr(text, "text, pprof, folded or flamegraph"));
    assert_non_null(strstr(text, "--flamegraph FILE"));
    assert_non_null(strstr(text, "--callers"));
    assert_non_null(strstr(text, "--format pprof -o FILE is"));
    /* every line fits 80 columns */
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (n > 79) {
            fprintf(stderr, "too long: %.*s\n", (int)n, line);
            fail();
        }
        line += n + (nl != NULL);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(svg_names_and_the_flamegraph_options_give_a_flame_graph),
        cmocka_unit_test(format_before_the_only_output_is_that_outputs_format),
        cmocka_unit_test(leading_format_with_several_outputs_stays_stdouts),
        cmocka_unit_test(callers_option_turns_the_section_on),
        cmocka_unit_test(help_tells_of_the_flame_graph_and_the_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
