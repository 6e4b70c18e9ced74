/*
 * tests/lang/lang_runner.c — runs one language test or one command-line fault test.
 *
 * Mode A (language tests, Wren style: expectations live in the test's comments):
 *
 *   lang_runner --stvm PATH --cp CLASSPATH [--flags "F1 F2"] [--timeout S] [--verbose] TEST.som
 *
 * runs `PATH F1 F2 -cp CLASSPATH:<dir of TEST> <Name> [args]`, where <Name> is
 * TEST's file name without ".som", and checks the directives found in TEST's
 * comments (comments are "…"; string literals are skipped, so a directive
 * inside a string is ignored):
 *
 *   "expect: TEXT"        the next line of stdout is exactly TEXT (one space
 *                         after the colon is dropped; `"expect:"` is an empty line)
 *   "expect error: TEXT"  TEXT occurs in stderr, after the text of the
 *                         previous "expect error:" (so they also check the
 *                         order); the exit code must be non-zero unless an
 *                         "expect exit:" says otherwise. Compile errors are
 *                         written as the `Name.som:LINE:COL: error: message`
 *                         part: the VM prefixes the file's directory
 *   "expect stderr: TEXT" the next line of stderr is exactly TEXT: with one,
 *                         stderr must be exactly these lines (an error
 *                         expectation too)
 *   "expect exit: N"      the exit code is exactly N
 *   "args: A B …"         extra command-line arguments after <Name>
 *   "flags: F1 F2 …"      extra stvm options, after --flags' (a limit the
 *                         test needs, say)
 *   "stress: skip"        read by CMake only (no stress variant)
 *
 * stdout must consist of exactly the expected lines (errors go to stderr).
 * Without an error expectation stderr must be empty and the exit code must
 * be N (default 0). A child killed by a signal, a sanitizer report or a
 * time-out always fails. --max-rss-mb M (both modes) fails a child whose
 * peak resident memory exceeded M MiB (getrusage of the child).
 *
 * Mode B (fault tests on the command line):
 *
 *   lang_runner [--timeout S] --exit N|nonzero [--stderr-contains T]… [--stdout-contains T]…
 *               [--stderr-lacks T]… [--stdout-lacks T]… [--stdout-empty] [--stderr-empty]
 *               [--stderr-nonempty] [--max-rss-mb M] -- COMMAND ARGS…
 *
 * Both modes exit 0 on success (printing "ok …") and 1 on failure with a report
 * of what differed; 2 for a usage error of the runner itself.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Output beyond this is drained but not kept: a runaway printing loop must
 * not exhaust the runner's memory. 64 MiB is far above any test's output. */
#define RUNNER_CAPTURE_LIMIT (64u << 20)
/* Default child time limit; ctest's TIMEOUT is set above it so that the
 * runner, not ctest, reports the time-out with the output collected so far. */
#define RUNNER_DEFAULT_TIMEOUT_S 60
/* How much of a long stderr/stdout a failure report shows (head and tail). */
#define RUNNER_SHOW_BYTES 3000
#define RUNNER_SHOW_LINES 40

/* -- Small helpers ---------------------------------------------------------- */

typedef struct Buf {
    char *p;
    size_t n, cap;
    bool truncated;
} Buf;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("lang_runner: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die("out of memory");
    return q;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = xrealloc(NULL, n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void buf_add(Buf *b, const char *s, size_t n)
{
    if (b->n + n > RUNNER_CAPTURE_LIMIT) {
        b->truncated = true;
        n = RUNNER_CAPTURE_LIMIT - b->n;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static const char *buf_str(const Buf *b) { return b->p ? b->p : ""; }

/* Case-sensitive substring search over a buffer that may contain NUL bytes. */
static bool contains(const char *hay, size_t hay_len, const char *needle)
{
    size_t m = strlen(needle);
    if (m == 0)
        return true;
    return memmem(hay, hay_len, needle, m) != NULL;
}

typedef struct StrList {
    char **v;
    int *line; /* source line of each entry (mode A), or 0 */
    size_t n;
} StrList;

static void list_push(StrList *l, char *s, int line)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->line = xrealloc(l->line, (l->n + 1) * sizeof *l->line);
    l->v[l->n] = s;
    l->line[l->n] = line;
    l->n++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prints s with control characters made visible, so that a stray '\r' or
 * trailing blank is obvious in a mismatch report. */
static void print_visible(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\t')
            fputs("\\t", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c == '\\')
            fputs("\\\\", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
}

/* Shows a captured stream, head and tail if it is long. */
static void show_stream(const char *name, const Buf *b)
{
    fprintf(stderr, "---- %s (%zu bytes%s) ----\n", name, b->n, b->truncated ? ", truncated" : "");
    if (b->n <= 2 * RUNNER_SHOW_BYTES) {
        fwrite(buf_str(b), 1, b->n, stderr);
    } else {
        fwrite(b->p, 1, RUNNER_SHOW_BYTES, stderr);
        fprintf(stderr, "\n[... %zu bytes omitted ...]\n", b->n - 2 * RUNNER_SHOW_BYTES);
        fwrite(b->p + b->n - RUNNER_SHOW_BYTES, 1, RUNNER_SHOW_BYTES, stderr);
    }
    if (b->n && b->p[b->n - 1] != '\n')
        fputs("\n[no newline at end]\n", stderr);
    fprintf(stderr, "---- end of %s ----\n", name);
}

/* -- Running the child ------------------------------------------------------ */

typedef struct RunResult {
    Buf out, err;
    int status; /* waitpid status */
    bool timed_out;
    double seconds;
    long max_rss_kb; /* the child's peak resident set (wait4's rusage) */
} RunResult;

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl: %s", strerror(errno));
}

/* Runs argv with stdin from /dev/null, stdout and stderr captured through
 * pipes, in its own process group so that a time-out kills everything it
 * started. */
static void run_child(char **argv, int timeout_s, RunResult *r)
{
    int po[2], pe[2];
    memset(r, 0, sizeof *r);
    if (pipe(po) < 0 || pipe(pe) < 0)
        die("pipe: %s", strerror(errno));
    double start = now_s();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL); /* as a shell starts it (the runner ignores SIGPIPE) */
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "lang_runner: cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also from the parent: no race with the kill below */
    close(po[1]);
    close(pe[1]);
    set_nonblock(po[0]);
    set_nonblock(pe[0]);

    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    Buf *bufs[2] = {&r->out, &r->err};
    int open_fds = 2;
    double deadline = start + timeout_s;
    char chunk[65536];
    while (open_fds > 0) {
        double left = deadline - now_s();
        if (left <= 0) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        int ms = left > 1000.0 ? 1000000 : (int)(left * 1000.0) + 1;
        int k = poll(fds, 2, ms);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            die("poll: %s", strerror(errno));
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
            if (got > 0) {
                buf_add(bufs[i], chunk, (size_t)got);
            } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    /* After a kill, take whatever is still buffered in the pipes. */
    for (int i = 0; i < 2; i++) {
        if (fds[i].fd < 0)
            continue;
        ssize_t got;
        while ((got = read(fds[i].fd, chunk, sizeof chunk)) > 0)
            buf_add(bufs[i], chunk, (size_t)got);
        close(fds[i].fd);
    }
    /* The pipes may close before the child ends (or a grandchild may hold
     * them): keep enforcing the time limit while waiting for the exit. */
    for (;;) {
        struct rusage ru;
        pid_t w = wait4(pid, &r->status, r->timed_out ? 0 : WNOHANG, &ru);
        if (w == pid)
            r->max_rss_kb = ru.ru_maxrss;
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            die("waitpid: %s", strerror(errno));
        if (w == 0 && now_s() >= deadline) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        } else if (w == 0) {
            struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    r->seconds = now_s() - start;
}

static void print_command(FILE *f, char **argv)
{
    for (char **a = argv; *a; a++) {
        bool plain = **a != '\0' && strpbrk(*a, " \t\n'\"\\$`*?;&|<>()") == NULL;
        if (a != argv)
            fputc(' ', f);
        if (plain) {
            fputs(*a, f);
        } else {
            fputc('\'', f);
            for (const char *c = *a; *c; c++) {
                if (*c == '\'')
                    fputs("'\\''", f);
                else
                    fputc(*c, f);
            }
            fputc('\'', f);
        }
    }
    fputc('\n', f);
}

static void describe_status(FILE *f, const RunResult *r)
{
    if (r->timed_out)
        fprintf(f, "timed out after %.1f s (killed)", r->seconds);
    else if (WIFSIGNALED(r->status))
        fprintf(f, "killed by signal %d (%s)", WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
    else
        fprintf(f, "exit code %d", WEXITSTATUS(r->status));
}

/* A crash, a time-out or a sanitizer report fails every test, whatever the
 * expected exit code (ASan exits 1, which an error test would accept). */
static long max_rss_mb; /* --max-rss-mb; 0: no limit */

static bool check_sane(const RunResult *r, FILE *f)
{
    if (max_rss_mb && r->max_rss_kb > max_rss_mb * 1024) {
        fprintf(f, "the child's peak resident memory was %ld KiB, more than --max-rss-mb %ld\n", r->max_rss_kb,
                max_rss_mb);
        return false;
    }
    if (r->timed_out || WIFSIGNALED(r->status)) {
        fputs("child did not exit normally: ", f);
        describe_status(f, r);
        fputc('\n', f);
        return false;
    }
    if (contains(buf_str(&r->err), r->err.n, "AddressSanitizer") ||
        contains(buf_str(&r->err), r->err.n, "UndefinedBehaviorSanitizer") ||
        contains(buf_str(&r->err), r->err.n, "LeakSanitizer")) {
        fputs("sanitizer report on stderr\n", f);
        return false;
    }
    return true;
}

/* -- Mode A: language tests ------------------------------------------------- */

typedef struct TestSpec {
    StrList expect;     /* expected stdout lines */
    StrList errors;     /* texts expected in the error output */
    StrList err_lines;  /* exact stderr lines ("expect stderr:") */
    StrList flags;      /* extra stvm options ("flags:") */
    StrList args;       /* extra program arguments */
    bool has_exit;
    int exit_code;
} TestSpec;

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open test %s: %s", path, strerror(errno));
    Buf b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&b, chunk, got);
    if (ferror(f))
        die("cannot read %s: %s", path, strerror(errno));
    fclose(f);
    *len = b.n;
    return b.p ? b.p : xstrndup("", 0);
}

static bool starts_with(const char *s, size_t n, const char *prefix)
{
    size_t m = strlen(prefix);
    return n >= m && memcmp(s, prefix, m) == 0;
}

/* Text after a directive's colon: one separating space is dropped. */
static char *directive_text(const char *s, size_t n, size_t skip)
{
    s += skip;
    n -= skip;
    if (n > 0 && *s == ' ') {
        s++;
        n--;
    }
    return xstrndup(s, n);
}

static void parse_directive(const char *path, int line, const char *c, size_t n, TestSpec *t)
{
    if (starts_with(c, n, "expect:")) {
        list_push(&t->expect, directive_text(c, n, strlen("expect:")), line);
    } else if (starts_with(c, n, "expect error:")) {
        char *text = directive_text(c, n, strlen("expect error:"));
        if (!*text)
            die("%s:%d: empty \"expect error:\" directive", path, line);
        list_push(&t->errors, text, line);
    } else if (starts_with(c, n, "expect stderr:")) {
        list_push(&t->err_lines, directive_text(c, n, strlen("expect stderr:")), line);
    } else if (starts_with(c, n, "expect exit:")) {
        char *text = directive_text(c, n, strlen("expect exit:"));
        char *end;
        long v = strtol(text, &end, 10);
        if (end == text || *end || v < 0 || v > 255)
            die("%s:%d: bad \"expect exit:\" value '%s'", path, line, text);
        if (t->has_exit)
            die("%s:%d: second \"expect exit:\" directive", path, line);
        t->has_exit = true;
        t->exit_code = (int)v;
        free(text);
    } else if (starts_with(c, n, "args:")) {
        char *text = directive_text(c, n, strlen("args:"));
        for (char *save = NULL, *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
            list_push(&t->args, xstrndup(tok, strlen(tok)), line);
        free(text);
    } else if (starts_with(c, n, "flags:")) {
        char *text = directive_text(c, n, strlen("flags:"));
        for (char *save = NULL, *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
            list_push(&t->flags, xstrndup(tok, strlen(tok)), line);
        free(text);
    } else if (starts_with(c, n, "expect")) {
        /* A misspelt directive would silently test nothing. */
        die("%s:%d: unknown directive \"%.*s\"", path, line, (int)(n > 40 ? 40 : n), c);
    }
}

/* Walks the SOM source: strings are skipped, each comment is a candidate
 * directive. */
static void parse_test(const char *path, TestSpec *t)
{
    size_t len;
    char *src = read_file(path, &len);
    int line = 1;
    for (size_t i = 0; i < len; i++) {
        char ch = src[i];
        if (ch == '\n') {
            line++;
        } else if (ch == '\'') {
            for (i++; i < len && src[i] != '\''; i++) {
                if (src[i] == '\\' && i + 1 < len)
                    i++;
                if (src[i] == '\n')
                    line++;
            }
        } else if (ch == '"') {
            size_t start = i + 1;
            int start_line = line;
            for (i++; i < len && src[i] != '"'; i++) {
                if (src[i] == '\n')
                    line++;
            }
            parse_directive(path, start_line, src + start, i - start, t);
        }
    }
    free(src);
}

/* Splits captured stdout into lines (a last line without '\n' still counts). */
static void split_lines(const Buf *b, StrList *lines)
{
    const char *s = buf_str(b);
    size_t i = 0;
    while (i < b->n) {
        const char *nl = memchr(s + i, '\n', b->n - i);
        size_t end = nl ? (size_t)(nl - s) : b->n;
        list_push(lines, xstrndup(s + i, end - i), 0);
        i = end + 1;
    }
}

static void split_words(const char *s, StrList *out)
{
    char *copy = xstrndup(s, strlen(s));
    for (char *save = NULL, *tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
        list_push(out, xstrndup(tok, strlen(tok)), 0);
    free(copy);
}

/* Lists expected and actual lines side by side by index, marking the
 * differing ones, so the first divergence and its context are obvious. */
static void show_line_diff(const char *test, const TestSpec *t, const StrList *actual, size_t compare_n)
{
    size_t n = t->expect.n > compare_n ? t->expect.n : compare_n;
    size_t first = 0;
    while (first < t->expect.n && first < compare_n && strcmp(t->expect.v[first], actual->v[first]) == 0)
        first++;
    /* Start a little before the first difference: the context matters, the
     * long run of equal lines before it does not. */
    size_t from = first > 5 ? first - 5 : 0;
    fprintf(stderr, "---- stdout: expected vs actual ('!' marks a difference; tab, backslash and control "
                    "characters shown C-escaped) ----\n");
    if (from > 0)
        fprintf(stderr, "  [... %zu equal lines ...]\n", from);
    size_t shown = 0;
    for (size_t i = from; i < n && shown < RUNNER_SHOW_LINES; i++, shown++) {
        bool have_e = i < t->expect.n, have_a = i < actual->n && i < compare_n;
        bool same = have_e && have_a && strcmp(t->expect.v[i], actual->v[i]) == 0;
        if (same) {
            fprintf(stderr, "  %4zu   ", i + 1);
            print_visible(stderr, actual->v[i], strlen(actual->v[i]));
            fputc('\n', stderr);
            continue;
        }
        if (have_e) {
            fprintf(stderr, "! %4zu - ", i + 1);
            print_visible(stderr, t->expect.v[i], strlen(t->expect.v[i]));
            fprintf(stderr, "    [%s:%d]\n", test, t->expect.line[i]);
        } else {
            fprintf(stderr, "! %4zu - <no more expected lines>\n", i + 1);
        }
        if (have_a) {
            fprintf(stderr, "! %4zu + ", i + 1);
            print_visible(stderr, actual->v[i], strlen(actual->v[i]));
            fputc('\n', stderr);
        } else {
            fprintf(stderr, "! %4zu + <end of output>\n", i + 1);
        }
    }
    if (from + shown < n)
        fprintf(stderr, "  [... %zu more lines ...]\n", n - from - shown);
}

static int run_lang_test(const char *stvm, const char *cp, const char *flags, int timeout_s, bool verbose,
                         const char *test)
{
    TestSpec t = {0};
    parse_test(test, &t);
    if (t.expect.n == 0 && t.errors.n == 0 && t.err_lines.n == 0 && !t.has_exit)
        die("%s: no \"expect\" directive: the test could not fail", test);

    char *pathcopy = xstrndup(test, strlen(test));
    char *namecopy = xstrndup(test, strlen(test));
    const char *dir = dirname(pathcopy);
    char *name = basename(namecopy);
    size_t nlen = strlen(name);
    if (nlen <= 4 || strcmp(name + nlen - 4, ".som") != 0)
        die("%s: a test file must be named <ClassName>.som", test);
    name[nlen - 4] = '\0';

    size_t cplen = strlen(cp) + strlen(dir) + 2;
    char *fullcp = xrealloc(NULL, cplen);
    snprintf(fullcp, cplen, "%s:%s", cp, dir);

    StrList argv = {0};
    list_push(&argv, (char *)stvm, 0);
    if (flags)
        split_words(flags, &argv);
    for (size_t i = 0; i < t.flags.n; i++)
        list_push(&argv, t.flags.v[i], 0);
    list_push(&argv, "-cp", 0);
    list_push(&argv, fullcp, 0);
    list_push(&argv, name, 0);
    for (size_t i = 0; i < t.args.n; i++)
        list_push(&argv, t.args.v[i], 0);
    list_push(&argv, NULL, 0);

    RunResult r;
    run_child(argv.v, timeout_s, &r);
    StrList lines = {0};
    split_lines(&r.out, &lines);

    bool ok = check_sane(&r, stderr);
    bool expect_error = t.errors.n > 0 || t.err_lines.n > 0;
    int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;

    /* Exit code. */
    if (ok) {
        if (t.has_exit && code != t.exit_code) {
            fprintf(stderr, "exit code %d, expected %d\n", code, t.exit_code);
            ok = false;
        } else if (!t.has_exit && expect_error && code == 0) {
            fputs("exit code 0, expected a non-zero exit code (the test expects an error)\n", stderr);
            ok = false;
        } else if (!t.has_exit && !expect_error && code != 0) {
            fprintf(stderr, "exit code %d, expected 0\n", code);
            ok = false;
        }
    }

    /* Expected stdout lines: all of stdout (error reports go to stderr). */
    bool lines_ok = lines.n == t.expect.n;
    for (size_t i = 0; lines_ok && i < t.expect.n; i++)
        lines_ok = strcmp(t.expect.v[i], lines.v[i]) == 0;
    if (!lines_ok) {
        size_t first = 0;
        while (first < t.expect.n && first < lines.n && strcmp(t.expect.v[first], lines.v[first]) == 0)
            first++;
        if (first < t.expect.n && first < lines.n)
            fprintf(stderr, "stdout line %zu differs (expectation at %s:%d)\n", first + 1, test,
                    t.expect.line[first]);
        else if (first < t.expect.n)
            fprintf(stderr, "stdout ended after %zu lines; %zu expected (next expectation at %s:%d)\n",
                    lines.n, t.expect.n, test, t.expect.line[first]);
        else
            fprintf(stderr, "stdout has %zu unexpected extra lines after the %zu expected\n", lines.n - first,
                    t.expect.n);
        ok = false;
    }

    /* Error texts: in stderr, each after the one before. */
    size_t err_off = 0;
    for (size_t i = 0; i < t.errors.n; i++) {
        const char *at = memmem(buf_str(&r.err) + err_off, r.err.n - err_off, t.errors.v[i], strlen(t.errors.v[i]));
        if (!at) {
            fprintf(stderr, "expected error text not found in stderr%s (%s:%d): ",
                    contains(buf_str(&r.err), r.err.n, t.errors.v[i]) ? " after the previous one" : "", test,
                    t.errors.line[i]);
            print_visible(stderr, t.errors.v[i], strlen(t.errors.v[i]));
            fputc('\n', stderr);
            ok = false;
            continue;
        }
        err_off = (size_t)(at - buf_str(&r.err)) + strlen(t.errors.v[i]);
    }
    /* Exact stderr lines. */
    if (t.err_lines.n) {
        StrList elines = {0};
        split_lines(&r.err, &elines);
        for (size_t i = 0; i < t.err_lines.n || i < elines.n; i++) {
            if (i < t.err_lines.n && i < elines.n && strcmp(t.err_lines.v[i], elines.v[i]) == 0)
                continue;
            if (i < t.err_lines.n)
                fprintf(stderr, "stderr line %zu differs from the expectation at %s:%d: ", i + 1, test,
                        t.err_lines.line[i]);
            else
                fprintf(stderr, "stderr has unexpected line %zu: ", i + 1);
            print_visible(stderr, i < elines.n ? elines.v[i] : "<end of stderr>",
                          strlen(i < elines.n ? elines.v[i] : "<end of stderr>"));
            fputc('\n', stderr);
            ok = false;
            break;
        }
    }
    if (!expect_error && r.err.n > 0) {
        fputs("unexpected output on stderr\n", stderr);
        ok = false;
    }

    size_t nexp = t.expect.n + t.errors.n + t.err_lines.n + (t.has_exit ? 1 : 0);
    if (!ok || verbose) {
        fprintf(stderr, "%s %s\ncommand: ", ok ? "PASS" : "FAIL", test);
        print_command(stderr, argv.v);
        fputs("status: ", stderr);
        describe_status(stderr, &r);
        fprintf(stderr, " after %.2f s\n", r.seconds);
        if (!lines_ok || verbose)
            show_line_diff(test, &t, &lines, lines.n);
        show_stream("stderr", &r.err);
        if (expect_error || (lines_ok && !ok))
            show_stream("stdout", &r.out);
    }
    if (!ok)
        return 1;
    printf("ok %zu expectations (%s, %.2f s)\n", nexp, name, r.seconds);
    return 0;
}

/* -- Mode B: command-line fault tests --------------------------------------- */

typedef struct FaultChecks {
    const char *exit_spec;
    StrList err_has, out_has, err_lacks, out_lacks;
    bool stdout_empty, stderr_empty, stderr_nonempty;
} FaultChecks;

static bool check_texts(const Buf *b, const StrList *l, bool want, const char *stream)
{
    bool ok = true;
    for (size_t i = 0; i < l->n; i++) {
        if (contains(buf_str(b), b->n, l->v[i]) != want) {
            fprintf(stderr, "%s %s text: %s\n", stream, want ? "lacks the expected" : "contains the forbidden",
                    l->v[i]);
            ok = false;
        }
    }
    return ok;
}

static int run_fault_test(char **cmd, int timeout_s, const FaultChecks *c, bool verbose)
{
    const char *exit_spec = c->exit_spec;
    bool nonzero = strcmp(exit_spec, "nonzero") == 0;
    int want = 0;
    if (!nonzero) {
        char *end;
        long v = strtol(exit_spec, &end, 10);
        if (end == exit_spec || *end || v < 0 || v > 255)
            die("--exit wants a number 0..255 or 'nonzero', not '%s'", exit_spec);
        want = (int)v;
    }
    RunResult r;
    run_child(cmd, timeout_s, &r);
    bool ok = check_sane(&r, stderr);
    int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
    if (ok && nonzero && code == 0) {
        fputs("exit code 0, expected a non-zero exit code\n", stderr);
        ok = false;
    } else if (ok && !nonzero && code != want) {
        fprintf(stderr, "exit code %d, expected %d\n", code, want);
        ok = false;
    }
    ok &= check_texts(&r.err, &c->err_has, true, "stderr");
    ok &= check_texts(&r.out, &c->out_has, true, "stdout");
    ok &= check_texts(&r.err, &c->err_lacks, false, "stderr");
    ok &= check_texts(&r.out, &c->out_lacks, false, "stdout");
    if (c->stdout_empty && r.out.n > 0) {
        fputs("stdout is not empty\n", stderr);
        ok = false;
    }
    if (c->stderr_empty && r.err.n > 0) {
        fputs("stderr is not empty\n", stderr);
        ok = false;
    }
    if (c->stderr_nonempty && r.err.n == 0) {
        fputs("stderr is empty: an error message was expected\n", stderr);
        ok = false;
    }
    if (!ok || verbose) {
        fprintf(stderr, "%s\ncommand: ", ok ? "PASS" : "FAIL");
        print_command(stderr, cmd);
        fputs("status: ", stderr);
        describe_status(stderr, &r);
        fprintf(stderr, " after %.2f s\n", r.seconds);
        show_stream("stdout", &r.out);
        show_stream("stderr", &r.err);
    }
    if (!ok)
        return 1;
    printf("ok %zu expectations (%s, %.2f s)\n",
           1 + c->err_has.n + c->out_has.n + c->err_lacks.n + c->out_lacks.n + c->stdout_empty + c->stderr_empty +
               c->stderr_nonempty,
           cmd[0], r.seconds);
    return 0;
}

/* -- Command line ------------------------------------------------------------ */

static void usage(void)
{
    fputs("usage: lang_runner --stvm PATH --cp CLASSPATH [--flags \"...\"] [--timeout S] [--verbose] TEST.som\n"
          "       lang_runner [--timeout S] --exit N|nonzero [--stderr-contains T]... [--stdout-contains T]...\n"
          "                   [--stderr-lacks T]... [--stdout-lacks T]... [--stdout-empty] [--stderr-empty]\n"
          "                   [--stderr-nonempty] [--max-rss-mb M] [--verbose] -- COMMAND ARGS...\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *stvm = NULL, *cp = NULL, *flags = NULL, *test = NULL;
    int timeout_s = RUNNER_DEFAULT_TIMEOUT_S;
    bool verbose = false, fault_options = false;
    FaultChecks fc = {0};
    char **cmd = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--") == 0) {
            cmd = argv + i + 1;
            break;
        } else if (strcmp(a, "--verbose") == 0) {
            verbose = true;
        } else if (strcmp(a, "--stdout-empty") == 0) {
            fc.stdout_empty = fault_options = true;
        } else if (strcmp(a, "--stderr-empty") == 0) {
            fc.stderr_empty = fault_options = true;
        } else if (strcmp(a, "--stderr-nonempty") == 0) {
            fc.stderr_nonempty = fault_options = true;
        } else if (strncmp(a, "--", 2) == 0 && !has_value) {
            usage();
        } else if (strcmp(a, "--stvm") == 0) {
            stvm = argv[++i];
        } else if (strcmp(a, "--cp") == 0) {
            cp = argv[++i];
        } else if (strcmp(a, "--flags") == 0) {
            flags = argv[++i];
        } else if (strcmp(a, "--timeout") == 0) {
            timeout_s = atoi(argv[++i]);
            if (timeout_s <= 0)
                die("--timeout wants a positive number of seconds");
        } else if (strcmp(a, "--max-rss-mb") == 0) {
            max_rss_mb = atol(argv[++i]);
            if (max_rss_mb <= 0)
                die("--max-rss-mb wants a positive number of MiB");
        } else if (strcmp(a, "--exit") == 0) {
            fc.exit_spec = argv[++i];
            fault_options = true;
        } else if (strcmp(a, "--stderr-contains") == 0) {
            list_push(&fc.err_has, argv[++i], 0);
            fault_options = true;
        } else if (strcmp(a, "--stdout-contains") == 0) {
            list_push(&fc.out_has, argv[++i], 0);
            fault_options = true;
        } else if (strcmp(a, "--stderr-lacks") == 0) {
            list_push(&fc.err_lacks, argv[++i], 0);
            fault_options = true;
        } else if (strcmp(a, "--stdout-lacks") == 0) {
            list_push(&fc.out_lacks, argv[++i], 0);
            fault_options = true;
        } else if (a[0] == '-') {
            die("unknown option %s", a);
        } else if (!test) {
            test = a;
        } else {
            usage();
        }
    }
    signal(SIGPIPE, SIG_IGN);

    if (cmd) {
        if (!*cmd || !fc.exit_spec || stvm || cp || test)
            usage();
        return run_fault_test(cmd, timeout_s, &fc, verbose);
    }
    if (!stvm || !cp || !test || fault_options)
        usage();
    return run_lang_test(stvm, cp, flags, timeout_s, verbose, test);
}
