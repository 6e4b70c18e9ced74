/*
 * vmprofd/options.c — parsing vmprofd's command line (see options.h for the
 * output scheme). Options are handled in order, because a --format belongs
 * to the -o before it.
 */
#include "vmprofd/options.h"

#include "base/error.h"
#include "proto/allocabi.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void vmprofd_options_usage(FILE *out)
{
    fputs(
        "usage: vmprofd [options] --pid PID\n"
        "       vmprofd [options] -- COMMAND [ARGS...]\n"
        "\n"
        "Samples a running process, or a command it starts, and writes a profile:\n"
        "the VMProfiler-style text report, a pprof profile, folded stacks, or an\n"
        "interactive flame graph (SVG).\n"
        "Made for stvm (it reads the VM's export segment /dev/shm/stvm-PID for GC\n"
        "and VM counters) but profiles any process (native symbols only then).\n"
        "\n"
        "Target:\n"
        "  -p, --pid PID        profile the running process PID, all its threads\n"
        "  -- COMMAND ARGS...   run COMMAND and profile it until it exits (its\n"
        "                       threads, not the processes it starts), as perf\n"
        "                       record and py-spy record do; vmprofd then exits\n"
        "                       with COMMAND's status (128+N after signal N)\n"
        "\n"
        "Sampling:\n"
        "  -s, --seconds S      stop sampling after S seconds (decimals allowed);\n"
        "                       default 10 with --pid, none with -- COMMAND (a\n"
        "                       COMMAND still running then runs on, and vmprofd\n"
        "                       waits for it)\n"
        "  -F, --rate HZ        samples per second of CPU time of each thread\n"
        "                       (default 1400); with --event wall, of wall-clock\n"
        "                       time (default 100, as py-spy: every thread stops\n"
        "                       at each tick)\n"
        "  -m, --mode MODE      auto: perf_event, or ptrace when perf events are\n"
        "                       refused (default; with --event wall, ptrace); perf;\n"
        "                       ptrace\n"
        "  -e, --event EVENT    what a sample stands for: cpu, CPU time (default);\n"
        "                       alloc, bytes an stvm allocates (with the class of\n"
        "                       the object; needs its export segment); wall,\n"
        "                       wall-clock time of every thread, running or not\n"
        "                       (off-CPU samples end in [off-CPU: read], the\n"
        "                       system call it waits in, or [off-CPU: S (sleeping)];\n"
        "                       runnable counts as on-CPU; ptrace mode only)\n"
        "      --alloc-interval BYTES\n"
        "                       --event alloc: about one sample per BYTES allocated\n"
        "                       (default 512K; K, M, G suffixes)\n"
        "      --live           --event alloc: also what the sampled objects left\n"
        "                       alive at the end (after a full GC): inuse_space\n"
        "      --stack-bytes N  user stack copied per sample for unwinding\n"
        "                       (default 8192, a multiple of 8, at most 32768)\n"
        "\n"
        "Output (any number; all are written from the same samples):\n"
        "  -o, --output FILE    write a profile to FILE ('-' is stdout). Its format is\n"
        "                       the --format that follows it, else guessed from the\n"
        "                       name: *.pb.gz, *.pb, *.pprof: pprof (gzipped);\n"
        "                       *.folded: folded; *.svg: flame graph; *.gz:\n"
        "                       refused (give --format); anything else: text.\n"
        "                       Checked before sampling starts; written whole or\n"
        "                       not at all (a temporary file, then a rename)\n"
        "  -f, --format FMT     text, pprof, folded or flamegraph: the format of the -o\n"
        "                       before it; with no -o before it, the format of\n"
        "                       stdout's report, or of the one -o FILE when that is\n"
        "                       the only output (--format pprof -o FILE is\n"
        "                       -o FILE --format pprof)\n"
        "      --text FILE      same as -o FILE --format text\n"
        "      --pprof FILE     same as -o FILE --format pprof (gzipped profile.proto,\n"
        "                       for `go tool pprof`)\n"
        "      --folded FILE    same as -o FILE --format folded (for flamegraph.pl)\n"
        "      --flamegraph FILE  same as -o FILE --format flamegraph: a self-contained\n"
        "                       interactive SVG of the whole stacks (hover, click to\n"
        "                       zoom, search), coloured by kind of code\n"
        "      --callers        text report: who called each of the 10 functions with\n"
        "                       the most samples, with shares (after the tables)\n"
        "      --lines          text report: source lines next to bytecode ranges\n"
        "  With no output option the text report goes to stdout.\n"
        "  Example: vmprofd -p 1234 -o run.txt -o run.pb.gz --folded run.folded\n"
        "           vmprofd -o run.svg --callers -o run.txt -- stvm Program.som\n"
        "\n"
        "Other:\n"
        "  -q, --quiet          no countdown and no summary line on stderr\n"
        "      --debug-resolutions FILE\n"
        "                       write one line per sample whose leaf lies in the\n"
        "                       VM's code zone: time, tid, address, and the piece\n"
        "                       of code and bytecode range it was resolved to\n"
        "      --code-log-poll MS\n"
        "                       read the VM's code event log every MS ms at first\n"
        "                       (default 50, 1..5000; halved after each overrun,\n"
        "                       down to 10): tests use a long one to force overruns\n"
        "  -h, --help           this text\n"
        "      --version        print the version\n"
        "\n"
        "With --pid, vmprofd stops after --seconds, on Ctrl-C (SIGINT), SIGTERM or\n"
        "SIGHUP, or when the target exits, and writes what it collected. With\n"
        "-- COMMAND, SIGINT, SIGTERM and SIGHUP sent to vmprofd are passed to\n"
        "COMMAND (Ctrl-C reaches both already), and the profile is written once\n"
        "COMMAND has ended; a report on stdout comes after all of COMMAND's output.\n"
        "What vmprofd cannot see (not an stvm, a stale export segment, a target\n"
        "that used no CPU) is said at the top of the report and on stderr, also\n"
        "with -q.\n"
        "perf_event needs kernel.perf_event_paranoid <= 2 (or CAP_PERFMON); ptrace\n"
        "needs the right to trace the target (same user and yama ptrace_scope <= 1,\n"
        "or CAP_SYS_PTRACE).\n"
        "\n"
        "Exit status: with --pid, 0 profile written (also when the target exited);\n"
        "with -- COMMAND, COMMAND's exit status (128+N when signal N ended it;\n"
        "126 COMMAND not executable, 127 not found). Either way 1 when vmprofd\n"
        "could not profile or write an output (no such process, not permitted,\n"
        "output not writable), 2 bad usage.\n",
        out);
}

const char *vmprofd_options_event_name(VmprofdEvent e)
{
    switch (e) {
    case VMPROFD_EVENT_CPU: return "cpu";
    case VMPROFD_EVENT_ALLOC: return "alloc";
    case VMPROFD_EVENT_WALL: return "wall";
    }
    return "?";
}

const char *vmprofd_options_format_name(VmprofdFormat f)
{
    switch (f) {
    case VMPROFD_FORMAT_TEXT: return "text";
    case VMPROFD_FORMAT_PPROF: return "pprof";
    case VMPROFD_FORMAT_FOLDED: return "folded";
    case VMPROFD_FORMAT_FLAMEGRAPH: return "flame graph";
    }
    return "?";
}

/* -- Helpers ---------------------------------------------------------- */

static bool parse_format(const char *s, VmprofdFormat *f)
{
    if (strcmp(s, "text") == 0) *f = VMPROFD_FORMAT_TEXT;
    else if (strcmp(s, "pprof") == 0) *f = VMPROFD_FORMAT_PPROF;
    else if (strcmp(s, "folded") == 0) *f = VMPROFD_FORMAT_FOLDED;
    else if (strcmp(s, "flamegraph") == 0 || strcmp(s, "svg") == 0) *f = VMPROFD_FORMAT_FLAMEGRAPH;
    else return false;
    return true;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static VmprofdFormat guess_format(const char *path)
{
    if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof") || ends_with(path, ".pb"))
        return VMPROFD_FORMAT_PPROF;
    if (ends_with(path, ".folded"))
        return VMPROFD_FORMAT_FOLDED;
    if (ends_with(path, ".svg"))
        return VMPROFD_FORMAT_FLAMEGRAPH;
    return VMPROFD_FORMAT_TEXT;
}

/* A finite decimal number in [lo, hi], the whole string. */
static bool parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool vmprofd_options_parse_bytes(const char *s, uint64_t *out)
{
    /* the number: digits and at most one point (no sign, exponent, hex,
     * inf or nan, which strtod alone would take) */
    size_t n = strspn(s, "0123456789.");
    const char *point = memchr(s, '.', n);
    if (n == 0 || s[0] == '.' || (point && memchr(point + 1, '.', n - (size_t)(point + 1 - s))))
        return false;
    char num[64];
    if (n >= sizeof num)
        return false;
    memcpy(num, s, n);
    num[n] = '\0';
    double v = strtod(num, NULL);
    const char *u = s + n;
    double unit = 1;
    switch (*u) {
    case 'k': case 'K': unit = 1024.0; u++; break;
    case 'm': case 'M': unit = 1024.0 * 1024; u++; break;
    case 'g': case 'G': unit = 1024.0 * 1024 * 1024; u++; break;
    case 't': case 'T': unit = 1024.0 * 1024 * 1024 * 1024; u++; break;
    default: break;
    }
    if (unit > 1 && strcmp(u, "iB") == 0) /* 512KiB */
        u += 2;
    else if (strcmp(u, "B") == 0) /* 512KB, 100B */
        u++;
    if (*u != '\0' || !(v * unit < 9.2e18))
        return false;
    *out = (uint64_t)llround(v * unit);
    return true;
}

bool vmprofd_options_parse_event(const char *s, VmprofdEvent *e)
{
    for (VmprofdEvent k = VMPROFD_EVENT_CPU; k <= VMPROFD_EVENT_WALL; k++)
        if (strcmp(s, vmprofd_options_event_name(k)) == 0) {
            *e = k;
            return true;
        }
    return false;
}

static bool add_output(VmprofdOptions *o, const char *path, bool has_format, VmprofdFormat f, char *err,
                       size_t errlen)
{
    if (path[0] == '\0')
        return base_error(err, errlen, "an output file name is empty");
    for (size_t i = 0; i < o->noutputs; i++)
        if (strcmp(o->outputs[i].path, path) == 0)
            return base_error(err, errlen, "output '%s' is given twice", path);
    if (o->noutputs == VMPROFD_MAX_OUTPUTS)
        return base_error(err, errlen, "more than %d outputs", VMPROFD_MAX_OUTPUTS);
    VmprofdOutput *out = &o->outputs[o->noutputs++];
    out->path = path;
    out->format_given = has_format;
    out->format = has_format ? f : guess_format(path);
    return true;
}

/* -- Parsing ---------------------------------------------------------- */

enum {
    OPT_STACK_BYTES = 256,
    OPT_TEXT,
    OPT_PPROF,
    OPT_FOLDED,
    OPT_FLAMEGRAPH,
    OPT_CALLERS,
    OPT_LINES,
    OPT_VERSION,
    OPT_DEBUG_RESOLUTIONS,
    OPT_CODE_LOG_POLL,
    OPT_ALLOC_INTERVAL,
    OPT_LIVE,
};

bool vmprofd_options_parse(int argc, char **argv, VmprofdOptions *o, char *err, size_t errlen)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"seconds", required_argument, NULL, 's'},
        {"rate", required_argument, NULL, 'F'},
        {"mode", required_argument, NULL, 'm'},
        {"stack-bytes", required_argument, NULL, OPT_STACK_BYTES},
        {"event", required_argument, NULL, 'e'},
        {"alloc-interval", required_argument, NULL, OPT_ALLOC_INTERVAL},
        {"live", no_argument, NULL, OPT_LIVE},
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"text", required_argument, NULL, OPT_TEXT},
        {"pprof", required_argument, NULL, OPT_PPROF},
        {"folded", required_argument, NULL, OPT_FOLDED},
        {"flamegraph", required_argument, NULL, OPT_FLAMEGRAPH},
        {"callers", no_argument, NULL, OPT_CALLERS},
        {"lines", no_argument, NULL, OPT_LINES},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {"debug-resolutions", required_argument, NULL, OPT_DEBUG_RESOLUTIONS},
        {"code-log-poll", required_argument, NULL, OPT_CODE_LOG_POLL},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->seconds = VMPROFD_DEFAULT_SECONDS;
    o->rate_hz = VMPROFD_DEFAULT_RATE_HZ;
    o->mode = VMPROFD_MODE_AUTO;
    o->stack_bytes = VMPROFD_DEFAULT_STACK_BYTES;
    o->event = VMPROFD_EVENT_CPU;
    o->alloc_interval = PROF_ALLOC_DEFAULT_INTERVAL;

    /* The -o a following --format applies to (-1: none since the last
     * --format); --format with no -o at all names stdout's format. */
    int pending = -1;
    bool stdout_format_given = false;
    VmprofdFormat stdout_format = VMPROFD_FORMAT_TEXT;
    bool pid_given = false;
    bool rate_given = false;

    opterr = 0; /* our messages, not getopt's */
    optind = 1;
    int c;
    /* "+": stop at the first non-option, so COMMAND's own options after
     * "--" are never taken for ours. ":" reports a missing argument. */
    while ((c = getopt_long(argc, argv, "+:p:s:F:m:e:o:f:qh", longopts, NULL)) != -1) {
        long l;
        VmprofdFormat f;
        switch (c) {
        case 'p':
            if (!parse_long(optarg, 1, INT_MAX, &l))
                return base_error(err, errlen, "--pid needs a process id (a positive integer), got '%s'", optarg);
            o->pid = (pid_t)l;
            pid_given = true;
            break;
        case 's':
            if (!parse_double(optarg, 0.001, 31536000.0, &o->seconds))
                return base_error(err, errlen, "--seconds needs a number of seconds > 0, got '%s'", optarg);
            o->seconds_given = true;
            break;
        case 'F':
            if (!parse_double(optarg, 1.0, VMPROFD_MAX_RATE_HZ, &o->rate_hz))
                return base_error(err, errlen, "--rate needs a frequency in Hz from 1 to %.0f, got '%s'",
                            VMPROFD_MAX_RATE_HZ, optarg);
            rate_given = true;
            break;
        case 'm':
            if (strcmp(optarg, "auto") == 0) o->mode = VMPROFD_MODE_AUTO;
            else if (strcmp(optarg, "perf") == 0 || strcmp(optarg, "perf_event") == 0) o->mode = VMPROFD_MODE_PERF;
            else if (strcmp(optarg, "ptrace") == 0) o->mode = VMPROFD_MODE_PTRACE;
            else return base_error(err, errlen, "--mode is auto, perf or ptrace, not '%s'", optarg);
            break;
        case 'e':
            if (!vmprofd_options_parse_event(optarg, &o->event))
                return base_error(err, errlen, "--event is cpu, alloc or wall, not '%s'", optarg);
            break;
        case OPT_ALLOC_INTERVAL: {
            uint64_t b;
            if (!vmprofd_options_parse_bytes(optarg, &b) || b < VMPROFD_MIN_ALLOC_INTERVAL || b > VMPROFD_MAX_ALLOC_INTERVAL)
                return base_error(err, errlen,
                            "--alloc-interval needs bytes from %u to 1T (a number, optionally with K, M or G: "
                            "512K), got '%s'",
                            VMPROFD_MIN_ALLOC_INTERVAL, optarg);
            o->alloc_interval = b;
            o->alloc_interval_given = true;
            break;
        }
        case OPT_LIVE: o->live = true; break;
        case OPT_STACK_BYTES:
            if (!parse_long(optarg, 0, VMPROFD_MAX_STACK_BYTES, &l) || l % 8 != 0)
                return base_error(err, errlen, "--stack-bytes needs a multiple of 8 from 0 to %u, got '%s'",
                            VMPROFD_MAX_STACK_BYTES, optarg);
            o->stack_bytes = (uint32_t)l;
            break;
        case 'o':
            if (!add_output(o, optarg, false, VMPROFD_FORMAT_TEXT, err, errlen))
                return false;
            pending = (int)o->noutputs - 1;
            break;
        case 'f':
            if (!parse_format(optarg, &f))
                return base_error(err, errlen, "--format is text, pprof, folded or flamegraph, not '%s'", optarg);
            if (pending >= 0) {
                o->outputs[pending].format = f;
                o->outputs[pending].format_given = true;
                pending = -1;
            } else if (o->noutputs == 0 && !stdout_format_given) {
                stdout_format = f;
                stdout_format_given = true;
            } else {
                return base_error(err, errlen,
                            "--format %s follows no -o FILE (each -o takes at most one --format right after it)",
                            optarg);
            }
            break;
        case OPT_TEXT:
        case OPT_PPROF:
        case OPT_FOLDED:
        case OPT_FLAMEGRAPH:
            f = c == OPT_TEXT     ? VMPROFD_FORMAT_TEXT
                : c == OPT_PPROF  ? VMPROFD_FORMAT_PPROF
                : c == OPT_FOLDED ? VMPROFD_FORMAT_FOLDED
                                  : VMPROFD_FORMAT_FLAMEGRAPH;
            if (!add_output(o, optarg, true, f, err, errlen))
                return false;
            pending = -1;
            break;
        case OPT_LINES: o->lines = true; break;
        case OPT_CALLERS: o->callers = true; break;
        case OPT_DEBUG_RESOLUTIONS:
            if (optarg[0] == '\0')
                return base_error(err, errlen, "--debug-resolutions needs a file name");
            o->debug_resolutions = optarg;
            break;
        case OPT_CODE_LOG_POLL: {
            long ms;
            if (!parse_long(optarg, 1, 5000, &ms))
                return base_error(err, errlen, "--code-log-poll needs milliseconds from 1 to 5000, not '%s'", optarg);
            o->code_log_poll_ms = (int)ms;
            break;
        }
        case 'q': o->quiet = true; break;
        case 'h': o->help = true; return true;
        case OPT_VERSION: o->version = true; return true;
        case ':':
            return base_error(err, errlen, "option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt != 0 && optopt < 256)
                return base_error(err, errlen, "unknown option '-%c'", optopt);
            return base_error(err, errlen, "unknown option '%s'", argv[optind - 1]);
        }
    }

    if (o->event != VMPROFD_EVENT_ALLOC && (o->live || o->alloc_interval_given))
        return base_error(err, errlen, "%s applies to --event alloc only (this profile is --event %s)",
                    o->live ? "--live" : "--alloc-interval", vmprofd_options_event_name(o->event));

    if (o->event == VMPROFD_EVENT_WALL && o->mode == VMPROFD_MODE_PERF)
        return base_error(err, errlen, "--event wall needs the ptrace sampler (perf's cpu-clock sees running threads "
                                 "only): give --mode ptrace or auto, not perf");
    if (o->event == VMPROFD_EVENT_WALL && !rate_given)
        o->rate_hz = VMPROFD_DEFAULT_WALL_RATE_HZ;

    bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
    if (optind < argc && !dashdash)
        return base_error(err, errlen, "unexpected argument '%s' (a command to run goes after '--')", argv[optind]);
    if (dashdash && optind < argc)
        o->command = &argv[optind];
    if (dashdash && optind == argc)
        return base_error(err, errlen, "'--' must be followed by a command to run");
    if (pid_given && o->command)
        return base_error(err, errlen, "give either --pid PID or -- COMMAND, not both");
    if (!pid_given && !o->command)
        return base_error(err, errlen, "nothing to profile: give --pid PID or -- COMMAND");

    /* A leading --format and one -o FILE with no format of its own: the
     * format is that file's, as if written after it. Whoever writes
     * "--format pprof -o out.pb" means one pprof file, not text in it and
     * pprof on stdout. With several outputs the pairing stays as --help
     * says (a leading --format is stdout's), so no -o changes meaning
     * because another was added. */
    if (stdout_format_given && o->noutputs == 1 && !o->outputs[0].format_given) {
        o->outputs[0].format = stdout_format;
        o->outputs[0].format_given = true;
        stdout_format_given = false;
    }
    if (stdout_format_given || o->noutputs == 0) {
        /* Stdout last, so files named first are written first. */
        if (!add_output(o, "-", true, stdout_format, err, errlen))
            return false;
    }
    for (size_t i = 0; i < o->noutputs; i++) {
        const VmprofdOutput *out = &o->outputs[i];
        if (strcmp(out->path, "-") == 0 && out->format == VMPROFD_FORMAT_PPROF)
            return base_error(err, errlen, "pprof output is gzipped binary: give it a file with -o FILE --format pprof");
        /* only pprof is gzipped: text in x.gz would surprise whoever gunzips it */
        if (!out->format_given && ends_with(out->path, ".gz") && !ends_with(out->path, ".pb.gz"))
            return base_error(err, errlen,
                        "-o %s: only pprof profiles are written gzipped (name it *.pb.gz); for another format "
                        "give --format after it",
                        out->path);
    }
    return true;
}

int vmprofd_options_usage_error(const char *command, const char *msg, const char *arg)
{
    if (arg)
        fprintf(stderr, "vmprofd %s: %s'%s'\nTry 'vmprofd %s --help'.\n", command, msg, arg, command);
    else
        fprintf(stderr, "vmprofd %s: %s\nTry 'vmprofd %s --help'.\n", command, msg, command);
    return 2;
}
