/*
 * Unit tests for the flame graph (report/flamegraph.c), the frame kinds
 * (report/framekind.c) and the text report's callers section
 * (report/callers.c), on profiles built by hand whose every frame, width
 * and share can be worked out on paper.
 *
 *   test_report_flamegraph [DIR]
 *
 * With DIR, every SVG the tests write is also saved there, so that
 * flamegraph_xml.sh can check each parses as XML (report/flamegraph-xml).
 */
#include "report/framekind.h"
#include "report/report.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *save_dir; /* argv[1], or NULL */

/* -- Building profiles ---------------------------------------------------- */

typedef struct Fn {
    const char *name;
    ReportRegion region;
} Fn;

/* Every function the tests use, with the region the resolver would give
 * it; a location's address is its row here, so equal names intern alike. */
static const Fn fns[] = {
    {"main", REPORT_REGION_VANILLA},
    {"interpret", REPORT_REGION_VANILLA},
    {"Bench>>run", REPORT_REGION_GENERATED},
    {"Bench>>loop (interpreted)", REPORT_REGION_VANILLA},
    {"Integer>>+", REPORT_REGION_GENERATED},
    {"Integer>><", REPORT_REGION_GENERATED},
    {"+ (closed PIC)", REPORT_REGION_GENERATED},
    {"ceSend1Args", REPORT_REGION_GENERATED},
    {"memcpy", REPORT_REGION_REST},
    {"[kernel]", REPORT_REGION_REST},
    {"[unknown: switching]", REPORT_REGION_REST},
    {"Bench>>fib:", REPORT_REGION_GENERATED},
    {"Bench>>benchmark", REPORT_REGION_GENERATED},
};

static int location_of(Profile *p, const char *name)
{
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
        if (strcmp(fns[i].name, name) == 0) {
            ReportFunctionInfo f = {.name = name, .region = fns[i].region, .start = 0x1000 * (i + 1), .size = 0x100,
                                    .mapping = -1};
            return report_profile_add_location(p, report_profile_add_function(p, &f), 0x1000 * (i + 1) + 8, 0);
        }
    /* any other name: a native function of its own */
    ReportFunctionInfo f = {.name = name, .region = REPORT_REGION_REST, .mapping = -1};
    return report_profile_add_location(p, report_profile_add_function(p, &f), 0, 0);
}

/* count samples of one stack, written root first: "main;interpret;leaf". */
static void add_stack(Profile *p, const char *stack, int count)
{
    int frames[64];
    size_t n = 0;
    char *copy = strdup(stack), *save = NULL;
    for (char *name = strtok_r(copy, ";", &save); name; name = strtok_r(NULL, ";", &save))
        frames[n++] = location_of(p, name);
    free(copy);
    for (size_t i = 0; i < n / 2; i++) { /* the profile wants leaf first */
        int t = frames[i];
        frames[i] = frames[n - 1 - i];
        frames[n - 1 - i] = t;
    }
    for (int i = 0; i < count; i++)
        report_profile_add_sample(p, (uint64_t)i * 1000, 1, frames, n);
}

/* The tree profile: 100 samples,
 *
 *   main;interpret;Bench>>run;Integer>>+                       40
 *   main;interpret;Bench>>run;+ (closed PIC);Integer>>+        10
 *   main;interpret;Bench>>run;Integer>><                       20
 *   main;interpret;Bench>>run                                  15
 *   main;interpret;Bench>>loop (interpreted);memcpy;[kernel]    5
 *   main;interpret                                              5
 *   [unknown: switching];ceSend1Args                            5
 *
 * added in the order given by `order` (a permutation of 0..6), so a test
 * can check the order of samples does not matter. */
static const struct {
    const char *stack;
    int count;
} tree_stacks[] = {
    {"main;interpret;Bench>>run;Integer>>+", 40},
    {"main;interpret;Bench>>run;+ (closed PIC);Integer>>+", 10},
    {"main;interpret;Bench>>run;Integer>><", 20},
    {"main;interpret;Bench>>run", 15},
    {"main;interpret;Bench>>loop (interpreted);memcpy;[kernel]", 5},
    {"main;interpret", 5},
    {"[unknown: switching];ceSend1Args", 5},
};

static Profile *tree_profile(const int *order)
{
    Profile *p = report_profile_new();
    for (size_t i = 0; i < sizeof tree_stacks / sizeof *tree_stacks; i++) {
        size_t k = order ? (size_t)order[i] : i;
        add_stack(p, tree_stacks[k].stack, tree_stacks[k].count);
    }
    return p;
}

/* -- Rendering and reading back ------------------------------------------- */

static char *render_svg(const Profile *p, const char *title, const char *save_as)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    char err[256] = "";
    ReportFlameOptions opt = {.title = title};
    bool ok = report_write_flamegraph(f, p, title ? &opt : NULL, err, sizeof err);
    assert_int_equal(fclose(f), 0);
    if (!ok)
        fprintf(stderr, "report_write_flamegraph: %s\n", err);
    assert_true(ok);
    if (save_dir && save_as) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", save_dir, save_as);
        FILE *out = fopen(path, "w");
        assert_non_null(out);
        fwrite(buf, 1, len, out);
        assert_int_equal(fclose(out), 0);
    }
    return buf;
}

static char *render_text(const Profile *p, bool callers)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    char err[256] = "";
    ReportTextOptions opt = {.range_min_samples = 10, .callers = callers};
    assert_true(report_write_text(f, p, &opt, err, sizeof err));
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* One frame as the SVG draws it (flamegraph.c's element layout). */
typedef struct Frame {
    int kind, depth;
    double x, w;
    unsigned long long n;
    char name[256];  /* <title> unescaped, counts cut off */
    char label[256]; /* <text> unescaped */
} Frame;

/* XML text to plain: the five entities flamegraph.c writes. */
static void unescape(const char *from, const char *to, char *out, size_t cap)
{
    static const struct {
        const char *ent, *ch;
    } ents[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}, {"&quot;", "\""}, {"&apos;", "'"}};
    size_t n = 0;
    while (from < to && n + 1 < cap) {
        bool done = false;
        for (size_t e = 0; e < 5 && !done; e++) {
            size_t l = strlen(ents[e].ent);
            if ((size_t)(to - from) >= l && strncmp(from, ents[e].ent, l) == 0) {
                out[n++] = ents[e].ch[0];
                from += l;
                done = true;
            }
        }
        if (!done)
            out[n++] = *from++;
    }
    out[n] = '\0';
}

/* Every frame in document order (the root "all" first); answers how many. */
static size_t read_frames(const char *svg, Frame *v, size_t cap)
{
    size_t n = 0;
    for (const char *at = strstr(svg, "<g "); at && n < cap; at = strstr(at + 1, "<g ")) {
        Frame f = {0};
        const char *cls = strstr(at, "class=\"f k");
        const char *end = strchr(at, '>');
        if (!cls || cls > end)
            continue;
        assert_int_equal(sscanf(cls, "class=\"f k%d\" data-x=\"%lf\" data-w=\"%lf\" data-d=\"%d\" data-n=\"%llu\"",
                                &f.kind, &f.x, &f.w, &f.depth, &f.n),
                         5);
        const char *t0 = strstr(at, "<title>") + 7, *t1 = strstr(t0, "</title>");
        const char *counts = t1;
        while (counts > t0 && *counts != '(') /* " (N samples, P%)" */
            counts--;
        unescape(t0, counts - 1, f.name, sizeof f.name);
        const char *l0 = strchr(strstr(t1, "<text"), '>') + 1, *l1 = strstr(l0, "</text>");
        unescape(l0, l1, f.label, sizeof f.label);
        v[n++] = f;
    }
    return n;
}

static bool near(double a, double b)
{
    return a - b < 1e-6 && b - a < 1e-6;
}

/* -- Flame graph: frames ---------------------------------------------------- */

static void stacks_merge_root_to_leaf_with_counts_and_widths(void **state)
{
    (void)state;
    Profile *p = tree_profile(NULL);
    char *svg = render_svg(p, "tree", "tree.svg");
    report_profile_free(p);
    /* preorder, children by name (strcmp: '+' < 'I' < '[' < 'm'); x and w
     * are fractions of the 100 samples */
    static const struct {
        int depth;
        const char *name;
        unsigned long long n;
        double x;
        ReportFrameKind kind;
    } want[] = {
        {0, "all", 100, 0.00, REPORT_FRAME_OTHER},
        {1, "[unknown: switching]", 5, 0.00, REPORT_FRAME_UNKNOWN},
        {2, "ceSend1Args", 5, 0.00, REPORT_FRAME_STUB},
        {1, "main", 95, 0.05, REPORT_FRAME_VM},
        {2, "interpret", 95, 0.05, REPORT_FRAME_VM},
        {3, "Bench>>loop (interpreted)", 5, 0.05, REPORT_FRAME_INTERPRETED},
        {4, "memcpy", 5, 0.05, REPORT_FRAME_NATIVE},
        {5, "[kernel]", 5, 0.05, REPORT_FRAME_KERNEL},
        {3, "Bench>>run", 85, 0.10, REPORT_FRAME_JIT},
        {4, "+ (closed PIC)", 10, 0.10, REPORT_FRAME_STUB},
        {5, "Integer>>+", 10, 0.10, REPORT_FRAME_JIT},
        {4, "Integer>>+", 40, 0.20, REPORT_FRAME_JIT},
        {4, "Integer>><", 20, 0.60, REPORT_FRAME_JIT},
    };
    Frame got[32];
    size_t n = read_frames(svg, got, 32);
    assert_int_equal(n, sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++) {
        if (got[i].depth != want[i].depth || strcmp(got[i].name, want[i].name) != 0 || got[i].n != want[i].n ||
            !near(got[i].x, want[i].x) || !near(got[i].w, (double)want[i].n / 100.0) ||
            got[i].kind != (int)want[i].kind) {
            fprintf(stderr, "frame %zu: got d%d '%s' n=%llu x=%f w=%f k%d, want d%d '%s' n=%llu x=%f k%d\n", i,
                    got[i].depth, got[i].name, got[i].n, got[i].x, got[i].w, got[i].kind, want[i].depth, want[i].name,
                    want[i].n, want[i].x, want[i].kind);
            fail();
        }
    }
    /* the rectangles are the fractions in px of the 1200 px width */
    assert_non_null(strstr(svg, "<title>Bench&gt;&gt;run (85 samples, 85.00%)</title><rect x=\"120.00\" y=\"121.0\" "
                                "width=\"1020.00\" height=\"16.0\"/>"));
    assert_non_null(strstr(svg, ">100 samples; root at the top"));
    assert_non_null(strstr(svg, ">tree</text>"));
    free(svg);
}

static void sample_order_does_not_change_the_file(void **state)
{
    (void)state;
    static const int backwards[] = {6, 5, 4, 3, 2, 1, 0}, shuffled[] = {3, 6, 0, 4, 1, 5, 2};
    Profile *a = tree_profile(NULL), *b = tree_profile(backwards), *c = tree_profile(shuffled);
    char *sa = render_svg(a, NULL, NULL), *sb = render_svg(b, NULL, NULL), *sc = render_svg(c, NULL, NULL);
    char *again = render_svg(a, NULL, NULL);
    assert_string_equal(sa, again);
    assert_string_equal(sa, sb);
    assert_string_equal(sa, sc);
    assert_non_null(strstr(sa, ">vmprofd flame graph</text>")); /* NULL options: the default title */
    free(sa), free(sb), free(sc), free(again);
    report_profile_free(a), report_profile_free(b), report_profile_free(c);
}

static void frames_are_coloured_by_kind_with_a_legend(void **state)
{
    (void)state;
    Profile *p = tree_profile(NULL);
    char *svg = render_svg(p, NULL, NULL);
    report_profile_free(p);
    /* one swatch and name per kind but the root's */
    for (int k = 0; k < REPORT_FRAME_KIND_COUNT; k++) {
        char swatch[64], css[32];
        snprintf(swatch, sizeof swatch, "<g class=\"k%d\"><rect", k);
        snprintf(css, sizeof css, ".k%d rect{fill:#", k);
        assert_non_null(strstr(svg, css));
        if (k == REPORT_FRAME_OTHER) {
            assert_null(strstr(svg, swatch));
            continue;
        }
        const char *at = strstr(svg, swatch);
        assert_non_null(at);
        char name[64];
        snprintf(name, sizeof name, ">%s</text>", report_frame_kind_name((ReportFrameKind)k));
        assert_non_null(strstr(at, name));
    }
    /* self-contained: nothing fetched from anywhere */
    assert_null(strstr(svg, "href"));
    assert_null(strstr(svg, "<script src"));
    assert_null(strstr(svg, "@import"));
    assert_non_null(strstr(svg, "<script><![CDATA["));
    free(svg);
}

/* -- Flame graph: names ----------------------------------------------------- */

static void names_with_markup_are_escaped(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    add_stack(p, "main;Integer>><", 50);
    add_stack(p, "main;Foo>>a&b:\"c\" 'd'", 30);
    add_stack(p, "main;]]></script><script>alert(1)</script>", 20);
    char *svg = render_svg(p, "<&\"title\">", "escape.svg");
    report_profile_free(p);
    assert_null(strstr(svg, "Integer>><"));
    assert_non_null(strstr(svg, "<title>Integer&gt;&gt;&lt; (50 samples, 50.00%)</title>"));
    assert_non_null(strstr(svg, "<title>Foo&gt;&gt;a&amp;b:&quot;c&quot; &apos;d&apos; (30 samples, 30.00%)</title>"));
    assert_null(strstr(svg, "alert(1)</script>")); /* a name never closes the script or opens one */
    assert_non_null(strstr(svg, ">&lt;&amp;&quot;title&quot;&gt;</text>"));
    Frame got[8];
    assert_int_equal(read_frames(svg, got, 8), 5);
    assert_string_equal(got[2].name, "Foo>>a&b:\"c\" 'd'"); /* by strcmp: 'F' < 'I' < ']' */
    assert_string_equal(got[3].name, "Integer>><");
    assert_string_equal(got[3].label, "Integer>><"); /* 600 px: the whole name */
    assert_string_equal(got[4].name, "]]></script><script>alert(1)</script>");
    free(svg);
}

static void labels_are_cut_to_fit_on_a_character_boundary(void **state)
{
    (void)state;
    /* "Größe>>überall" is 14 characters, 17 bytes. At 6 of 100 samples its
     * frame is 72 px: (72 - 4) / 6.6 = 10 characters fit, so 8 and "..". */
    Profile *p = report_profile_new();
    add_stack(p, "main;Größe>>überall", 6);
    add_stack(p, "main;x", 93);
    add_stack(p, "main;yz", 1); /* 12 px: 1 character fits: no label */
    char *svg = render_svg(p, NULL, "utf8.svg");
    report_profile_free(p);
    Frame got[8];
    assert_int_equal(read_frames(svg, got, 8), 5);
    assert_string_equal(got[2].name, "Größe>>überall");
    assert_string_equal(got[2].label, "Größe>>ü..");
    assert_string_equal(got[3].label, "x");
    assert_string_equal(got[4].name, "yz");
    assert_string_equal(got[4].label, "");
    free(svg);
}

static void bytes_that_are_not_utf8_become_replacement_characters(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    /* a stray byte, a cut sequence, an overlong '/', a C0 control */
    add_stack(p, "main;bad\xff name", 1);
    add_stack(p, "main;cut\xc3", 1);
    add_stack(p, "main;over\xc0\xaflong", 1);
    add_stack(p, "main;bell\x07", 1);
    char *svg = render_svg(p, NULL, "badutf8.svg");
    report_profile_free(p);
    assert_non_null(strstr(svg, "<title>bad\xef\xbf\xbd name (1 samples"));
    assert_non_null(strstr(svg, "<title>cut\xef\xbf\xbd (1 samples"));
    assert_non_null(strstr(svg, "<title>over\xef\xbf\xbd\xef\xbf\xbdlong (1 samples"));
    assert_non_null(strstr(svg, "<title>bell\xef\xbf\xbd (1 samples"));
    assert_null(strchr(svg, '\xff'));
    assert_null(strchr(svg, '\x07'));
    free(svg);
}

static void frames_under_a_tenth_of_a_pixel_are_left_out(void **state)
{
    (void)state;
    /* 1 of 20000 samples is 0.06 px: not drawn, but counted in main */
    Profile *p = report_profile_new();
    add_stack(p, "main;big", 19999);
    add_stack(p, "main;tiny", 1);
    char *svg = render_svg(p, NULL, "tiny.svg");
    report_profile_free(p);
    Frame got[8];
    assert_int_equal(read_frames(svg, got, 8), 3);
    assert_string_equal(got[1].name, "main");
    assert_int_equal(got[1].n, 20000);
    assert_string_equal(got[2].name, "big");
    assert_null(strstr(svg, "tiny"));
    assert_non_null(strstr(svg, "frames under 0.1 px are not drawn"));
    free(svg);
}

static void empty_profile_writes_a_valid_svg(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    char *svg = render_svg(p, NULL, "empty.svg");
    report_profile_free(p);
    Frame got[4];
    assert_int_equal(read_frames(svg, got, 4), 1);
    assert_string_equal(got[0].name, "all");
    assert_int_equal(got[0].n, 0);
    assert_non_null(strstr(svg, ">0 samples; root at the top"));
    assert_non_null(strstr(svg, "</svg>\n"));
    free(svg);
}

static void flamegraph_write_errors_are_reported(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    Profile *p = tree_profile(NULL);
    char err[256] = "";
    assert_false(report_write_flamegraph(full, p, NULL, err, sizeof err));
    assert_non_null(strstr(err, "No space left on device"));
    fclose(full);
    report_profile_free(p);
}

/* -- Frame kinds -------------------------------------------------------------- */

static void frame_kinds_come_from_names_then_regions(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        ReportRegion region;
        ReportFrameKind kind;
    } cases[] = {
        {"Integer>>benchFib", REPORT_REGION_GENERATED, REPORT_FRAME_JIT},
        {"[] in Foo>>bar", REPORT_REGION_GENERATED, REPORT_FRAME_JIT},
        {"Foo class>>new", REPORT_REGION_GENERATED, REPORT_FRAME_JIT},
        {"+ (closed PIC)", REPORT_REGION_GENERATED, REPORT_FRAME_STUB},
        {"isNil (open PIC)", REPORT_REGION_GENERATED, REPORT_FRAME_STUB},
        {">>> (closed PIC)", REPORT_REGION_GENERATED, REPORT_FRAME_STUB}, /* a selector with ">>" */
        {"ceSend1Args", REPORT_REGION_GENERATED, REPORT_FRAME_STUB},
        {"ceReturnToInterpreter", REPORT_REGION_GENERATED, REPORT_FRAME_STUB},
        {"Stacks>>leaf: (interpreted)", REPORT_REGION_VANILLA, REPORT_FRAME_INTERPRETED},
        {"gc_scavenge_run", REPORT_REGION_VANILLA, REPORT_FRAME_VM},
        {"interpret", REPORT_REGION_VANILLA, REPORT_FRAME_VM},
        {"memcpy", REPORT_REGION_REST, REPORT_FRAME_NATIVE},
        {"[vdso]", REPORT_REGION_REST, REPORT_FRAME_NATIVE},
        {"[kernel]", REPORT_REGION_REST, REPORT_FRAME_KERNEL},
        {"[k] do_syscall_64", REPORT_REGION_REST, REPORT_FRAME_KERNEL},
        {"[unknown]", REPORT_REGION_REST, REPORT_FRAME_UNKNOWN},
        {"[unknown: switching between machine code and the interpreter]", REPORT_REGION_VANILLA,
         REPORT_FRAME_UNKNOWN},
        {"[code zone: events lost]", REPORT_REGION_GENERATED, REPORT_FRAME_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ReportFunctionInfo f = {.name = cases[i].name, .region = cases[i].region, .mapping = -1};
        ReportFrameKind k = report_frame_kind(&f);
        if (k != cases[i].kind) {
            fprintf(stderr, "'%s': %s, want %s\n", cases[i].name, report_frame_kind_name(k),
                    report_frame_kind_name(cases[i].kind));
            fail();
        }
    }
}

/* -- Callers section ---------------------------------------------------------- */

static const char *section(const char *text)
{
    const char *s = strstr(text, "**Callers**");
    assert_non_null(s);
    return s;
}

static void callers_section_gives_each_top_function_its_callers_shares(void **state)
{
    (void)state;
    Profile *p = tree_profile(NULL);
    char *t = render_text(p, true);
    report_profile_free(p);
    /* own samples: Integer>>+ 50, Integer>>< 20, Bench>>run 15, then the
     * 5s by name; Integer>>+'s caller through the PIC is the PIC */
    const char *want = "**Callers** (of the 6 functions with most samples, by whole stacks)\n"
                       "Integer>>+\t(50 samples)\n"
                       "\t80.00%\tBench>>run\t(40)\n"
                       "\t20.00%\t+ (closed PIC)\t(10)\n"
                       "Integer>><\t(20 samples)\n"
                       "\t100.0%\tBench>>run\t(20)\n"
                       "Bench>>run\t(15 samples)\n"
                       "\t100.0%\tinterpret\t(15)\n"
                       "[kernel]\t(5 samples)\n"
                       "\t100.0%\tmemcpy\t(5)\n"
                       "ceSend1Args\t(5 samples)\n"
                       "\t100.0%\t[unknown: switching]\t(5)\n"
                       "interpret\t(5 samples)\n"
                       "\t100.0%\tmain\t(5)\n"
                       "\n";
    const char *s = section(t);
    if (strncmp(s, want, strlen(want)) != 0) {
        fprintf(stderr, "got:\n%.*s\nwant:\n%s", (int)strlen(want), s, want);
        fail();
    }
    /* after the tables, before **Memory** */
    const char *vanilla = strstr(t, "% of vanilla vm code"), *rest = strstr(t, "% of rest"),
               *memory = strstr(t, "**Memory**");
    assert_non_null(vanilla);
    assert_non_null(rest);
    assert_non_null(memory);
    assert_true(vanilla < s && rest < s && s < memory);
    free(t);
}

static void callers_section_is_off_unless_asked(void **state)
{
    (void)state;
    Profile *p = tree_profile(NULL);
    char *t = render_text(p, false);
    report_profile_free(p);
    assert_null(strstr(t, "**Callers**"));
    free(t);
}

static void recursion_counts_the_nearest_different_caller(void **state)
{
    (void)state;
    Profile *p = report_profile_new();
    add_stack(p, "main;Bench>>benchmark;Bench>>fib:;Bench>>fib:;Bench>>fib:", 30);
    add_stack(p, "main;Bench>>benchmark;Bench>>fib:", 10);
    add_stack(p, "main;Bench>>fib:;Bench>>fib:", 5);
    add_stack(p, "Bench>>fib:;Bench>>fib:", 3); /* nothing else on the stack */
    char *t = render_text(p, true);
    report_profile_free(p);
    const char *want = "**Callers** (of the 1 functions with most samples, by whole stacks)\n"
                       "Bench>>fib:\t(48 samples)\n"
                       "\t83.33%\tBench>>benchmark\t(40)\n"
                       "\t10.42%\tmain\t(5)\n"
                       "\t 6.25%\t(no caller)\t(3)\n"
                       "\n";
    const char *s = section(t);
    if (strncmp(s, want, strlen(want)) != 0) {
        fprintf(stderr, "got:\n%.*s\nwant:\n%s", (int)strlen(want), s, want);
        fail();
    }
    free(t);
}

static void ten_functions_and_ten_callers_each_the_rest_folded(void **state)
{
    (void)state;
    /* 12 leaves f00..f11 with 100 - i samples each; f00's samples come
     * from 13 callers c00..c12 (c00 with 28, the others 6 each). */
    Profile *p = report_profile_new();
    char stack[64];
    for (int i = 1; i < 12; i++) {
        snprintf(stack, sizeof stack, "main;f%02d", i);
        add_stack(p, stack, 100 - i);
    }
    add_stack(p, "main;c00;f00", 28);
    for (int c = 1; c <= 12; c++) {
        snprintf(stack, sizeof stack, "main;c%02d;f00", c);
        add_stack(p, stack, 6);
    }
    char *t = render_text(p, true);
    report_profile_free(p);
    const char *s = section(t);
    assert_non_null(strstr(s, "(of the 10 functions with most samples"));
    assert_non_null(strstr(s, "f09\t(91 samples)\n"));
    assert_null(strstr(s, "f10\t"));
    const char *want = "f00\t(100 samples)\n"
                       "\t28.00%\tc00\t(28)\n"
                       "\t 6.00%\tc01\t(6)\n";
    assert_non_null(strstr(s, want));
    /* c01..c09 shown, c10..c12 folded: 18 samples */
    assert_non_null(strstr(s, "\t 6.00%\tc09\t(6)\n\t18.00%\t...others...\t(18)\nf01\t(99 samples)\n"));
    assert_null(strstr(s, "\tc10\t"));
    free(t);
}

int main(int argc, char **argv)
{
    save_dir = argc > 1 ? argv[1] : NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stacks_merge_root_to_leaf_with_counts_and_widths),
        cmocka_unit_test(sample_order_does_not_change_the_file),
        cmocka_unit_test(frames_are_coloured_by_kind_with_a_legend),
        cmocka_unit_test(names_with_markup_are_escaped),
        cmocka_unit_test(labels_are_cut_to_fit_on_a_character_boundary),
        cmocka_unit_test(bytes_that_are_not_utf8_become_replacement_characters),
        cmocka_unit_test(frames_under_a_tenth_of_a_pixel_are_left_out),
        cmocka_unit_test(empty_profile_writes_a_valid_svg),
        cmocka_unit_test(flamegraph_write_errors_are_reported),
        cmocka_unit_test(frame_kinds_come_from_names_then_regions),
        cmocka_unit_test(callers_section_gives_each_top_function_its_callers_shares),
        cmocka_unit_test(callers_section_is_off_unless_asked),
        cmocka_unit_test(recursion_counts_the_nearest_different_caller),
        cmocka_unit_test(ten_functions_and_ten_callers_each_the_rest_folded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
