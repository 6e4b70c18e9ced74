/*
 * vmprofd/record.c — `vmprofd record --continuous`. See record.h; the
 * folder it writes: recstore.h; the profiling itself: engine.h.
 *
 *   main thread                         one worker thread per VM
 *   ──────────────────────────────      ──────────────────────────────────
 *   list the VMs (engine) ─ new one ──► loop: profile up to the next
 *   join workers whose VM is gone             interval boundary (engine),
 *   wait: inotify on /dev/shm, 1 s,           write it (recstore), until the
 *         or SIGTERM/SIGINT ─ stop ───►       VM exits or stop is set
 */
#define _GNU_SOURCE /* ppoll, pthread_sigmask */
#include "vmprofd/record.h"

#include "base/error.h"
#include "proto/identity.h"
#include "report/report.h"
#include "vmprofd/engine.h"
#include "vmprofd/recstore.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* How often the list of VMs is read when inotify says nothing: a VM whose
 * segment appeared unnoticed (inotify's queue overflowed, or /dev/shm is
 * not watchable) is found within this time. */
#define RECORD_RESCAN_MS 1000
/* A VM whose segment is not readable yet (being made) is looked at again
 * this soon (stvm fills its segment within milliseconds of making it), and
 * so is /dev/shm after inotify says it changed, but never more often. */
#define RECORD_PENDING_MS 50
/* A worker whose VM could not be profiled tries again after this long
 * (a VM still starting, a transient refusal), at most RECORD_TRIES times:
 * the first time at once (a perf_event_open once answered ESRCH for every
 * thread of a live VM, and the next attach worked), then after a pause. */
#define RECORD_RETRY_FIRST_S 0.2
#define RECORD_RETRY_S 5.0
#define RECORD_TRIES 3
#define RECORD_TRIES_TEXT "3"
/* The next boundary closer than this is skipped: an interval of a few ms
 * would cost a whole attach for nothing. */
#define RECORD_MIN_SLICE_S 0.05

/* -- Options ------------------------------------------------------------ */

void vmprofd_record_usage(FILE *out)
{
    fputs("usage: vmprofd record --continuous --dir DIR [options]\n"
          "\n"
          "Profiles every stvm on this host that vmprofd may profile, all the time:\n"
          "each VM found as it starts (its export segment in /dev/shm), one pprof\n"
          "profile per process per interval, written to\n"
          "  DIR/HOST/PID-STARTTICKS/YYYYMMDDTHHMMSS.mmmZ.pb.gz\n"
          "(the interval's start, UTC). Intervals end on multiples of --interval\n"
          "(wall clock); a VM's last one ends when it exits. SIGTERM or SIGINT\n"
          "writes the intervals in progress and exits 0.\n"
          "\n"
          "  --continuous         record until stopped (the only mode)\n"
          "  --dir DIR            where the profiles go (made when missing)\n"
          "  --interval DUR       length of an interval (default 60s; ms, s, m, h)\n"
          "  -F, --rate HZ        samples per second of CPU time (default 100)\n"
          "  -e, --event EVENT    cpu (default) or alloc (bytes allocated)\n"
          "  --keep-age DUR       remove profiles older than DUR (default 7d; 0: never)\n"
          "  --keep-size SIZE     keep the host's profiles under SIZE bytes, oldest\n"
          "                       removed first (default 1G; K, M, G; 0: no limit)\n"
          "  --match GLOB         only the VMs whose command line (arguments joined by\n"
          "                       spaces) matches GLOB, e.g. '*MyServer*'\n"
          "  -q, --quiet          no line per profile written\n"
          "  -h, --help           this text\n",
          out);
}

bool vmprofd_record_parse_duration(const char *s, double *seconds)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v) || v < 0)
        return false;
    double unit;
    if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
        unit = 1;
    else if (strcmp(end, "ms") == 0)
        unit = 1e-3;
    else if (strcmp(end, "m") == 0)
        unit = 60;
    else if (strcmp(end, "h") == 0)
        unit = 3600;
    else if (strcmp(end, "d") == 0)
        unit = 86400;
    else
        return false;
    *seconds = v * unit;
    return *seconds < 1e9; /* ~31 years: past it, a typo */
}

bool vmprofd_record_parse(int argc, char **argv, RecordOptions *o, char *err, size_t errlen)
{
    *o = (RecordOptions){
        .interval_s = VMPROFD_RECORD_DEFAULT_INTERVAL_S,
        .rate_hz = VMPROFD_RECORD_DEFAULT_RATE_HZ,
        .keep_age_s = VMPROFD_RECORD_DEFAULT_KEEP_AGE_S,
        .keep_bytes = VMPROFD_RECORD_DEFAULT_KEEP_BYTES,
        .event = VMPROFD_EVENT_CPU,
    };
    enum { OPT_CONTINUOUS = 256, OPT_DIR, OPT_INTERVAL, OPT_KEEP_AGE, OPT_KEEP_SIZE, OPT_MATCH };
    static const struct option longs[] = {
        {"continuous", no_argument, NULL, OPT_CONTINUOUS},
        {"dir", required_argument, NULL, OPT_DIR},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"rate", required_argument, NULL, 'F'},
        {"event", required_argument, NULL, 'e'},
        {"keep-age", required_argument, NULL, OPT_KEEP_AGE},
        {"keep-size", required_argument, NULL, OPT_KEEP_SIZE},
        {"match", required_argument, NULL, OPT_MATCH},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bool continuous = false;
    optind = 0; /* a fresh scan (glibc), argv[0] being "record" */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":F:e:qh", longs, NULL)) != -1) {
        switch (c) {
        case OPT_CONTINUOUS:
            continuous = true;
            break;
        case OPT_DIR:
            if (!optarg[0])
                return base_error(err, errlen, "--dir needs a folder%s", "");
            o->dir = optarg;
            break;
        case OPT_INTERVAL:
            if (!vmprofd_record_parse_duration(optarg, &o->interval_s))
                return base_error(err, errlen, "--interval: '%s' is not a duration (60s, 500ms, 5m, 1h)", optarg);
            if (o->interval_s < VMPROFD_RECORD_MIN_INTERVAL_S)
                return base_error(err, errlen, "--interval %s is too short (at least 200ms: each interval re-attaches)",
                           optarg);
            break;
        case 'F': {
            char *end;
            errno = 0;
            o->rate_hz = strtod(optarg, &end);
            if (end == optarg || *end || errno || !(o->rate_hz >= 1 && o->rate_hz <= VMPROFD_MAX_RATE_HZ))
                return base_error(err, errlen, "--rate: '%s' is not a rate from 1 to 100000 Hz", optarg);
            break;
        }
        case 'e':
            if (!vmprofd_options_parse_event(optarg, &o->event) || o->event == VMPROFD_EVENT_WALL)
                return base_error(err, errlen, "--event: '%s' is not cpu or alloc", optarg);
            break;
        case OPT_KEEP_AGE:
            if (!vmprofd_record_parse_duration(optarg, &o->keep_age_s))
                return base_error(err, errlen, "--keep-age: '%s' is not a duration (7d, 12h, 0 for no limit)", optarg);
            break;
        case OPT_KEEP_SIZE:
            if (!vmprofd_options_parse_bytes(optarg, &o->keep_bytes))
                return base_error(err, errlen, "--keep-size: '%s' is not a size (1G, 500M, 0 for no limit)", optarg);
            break;
        case OPT_MATCH:
            o->match = optarg;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            o->help = true;
            return true;
        case ':':
            return base_error(err, errlen, "%s needs a value", argv[optind - 1]);
        default:
            return base_error(err, errlen, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return base_error(err, errlen, "unexpected argument '%s'", argv[optind]);
    if (!continuous)
        return base_error(err, errlen, "record needs --continuous (the only mode so far)%s", "");
    if (!o->dir)
        return base_error(err, errlen, "record needs --dir DIR%s", "");
    return true;
}

/* -- Facts about a VM ----------------------------------------------------- */

/* The GNU build id of the ELF file at path, in hex; "" when it has none
 * or cannot be read. Reads the program headers and the notes they point
 * to, each bounded. */
static void read_build_id(const char *path, char *out, size_t outlen)
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
        goto done;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            goto done;
        if (ph.p_type != PT_NOTE || ph.p_filesz > 65536)
            continue;
        unsigned char notes[65536];
        if (pread(fd, notes, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
            continue;
        size_t at = 0;
        while (at + sizeof(Elf64_Nhdr) <= ph.p_filesz) {
            Elf64_Nhdr nh;
            memcpy(&nh, notes + at, sizeof nh);
            size_t name_at = at + sizeof nh, desc_at = name_at + ((nh.n_namesz + 3u) & ~3u);
            size_t next = desc_at + ((nh.n_descsz + 3u) & ~3u);
            if (next > ph.p_filesz || next <= at)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0) {
                size_t n = 0;
                for (size_t k = 0; k < nh.n_descsz && n + 3 <= outlen; k++)
                    n += (size_t)snprintf(out + n, outlen - n, "%02x", notes[desc_at + k]);
                goto done;
            }
            at = next;
        }
    }
done:
    close(fd);
}

static void iso_time(const struct timespec *t, char out[32])
{
    struct tm tm;
    time_t s = t->tv_sec;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(t->tv_nsec / 1000000) % 1000u);
}

static double ts_seconds(const struct timespec *t) { return (double)t->tv_sec + t->tv_nsec / 1e9; }

/* -- Workers --------------------------------------------------------------- */

typedef struct Recorder Recorder;

typedef struct Worker {
    Recorder *rec;
    pid_t pid;
    ProfIdentity id;
    char cmd[VMPROFD_ENGINE_CMD_MAX];
    char build_id[2 * 64 + 1];
    char pdir[4300];
    pthread_t thread;
    bool running;                 /* a thread was started and not joined yet */
    bool started;                 /* one was ever started */
    bool said;                    /* why it is not profiled was said */
    double first_seen;            /* CLOCK_MONOTONIC s */
    atomic_bool done;             /* its thread has finished */
    /* The engine's stop flag, set by the main thread when the interval's
     * end (deadline_ns, CLOCK_REALTIME) has come, or at shutdown. Both
     * under lock, so a cut meant for one interval never falls on the next. */
    pthread_mutex_t lock;
    volatile sig_atomic_t cut;
    int64_t deadline_ns;          /* 0: none (between intervals) */
    bool gone;                    /* the VM has exited: forget it once joined */
    int tries;                    /* engine calls in a row that profiled nothing */
    double retry_at;              /* CLOCK_MONOTONIC s: when to try again */
    /* Not sampled since resume, for why: a retry's first interval starts
     * there (written by whoever ends the wait: no hole in the files) */
    bool have_resume;
    struct timespec resume;
    /* when start_worker began, before it made the process folder: the first
     * interval starts there, so a folder never exists before the time its
     * profiles cover (a thread starts late on a busy machine) */
    struct timespec began;
    char why[1100];
    size_t files;
    struct Worker *next;
} Worker;

struct Recorder {
    RecordOptions o;
    RecStore store;
    Worker *workers;
    pthread_mutex_t log_lock;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return ts_seconds(&t);
}

static int64_t ts_ns(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

/* The first multiple of the interval after t (ns, wall clock). */
static int64_t next_boundary_ns(int64_t t, double interval_s)
{
    int64_t iv = (int64_t)llround(interval_s * 1e9);
    return (t / iv + 1) * iv;
}

static void say(Recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(Recorder *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&r->log_lock);
    fputs("vmprofd record: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&r->log_lock);
    va_end(ap);
}

/* Whether the process the worker was made for may still be alive (the pid
 * may have gone to another process since). Only proof of an exit drops the
 * worker: /proc unreadable for want of descriptors is no exit, and the next
 * look decides. */
static bool still_alive(const Worker *w)
{
    return prof_process_state(w->pid, &w->id) != PROF_PROCESS_GONE;
}

/* The profile of one interval, labelled and with its comments, gzipped
 * pprof in *data (malloc'd). */
static bool render(Worker *w, const Profile *src, const struct timespec *start, const struct timespec *end,
                   char **data, size_t *len, char *err, size_t errlen)
{
    Profile *p = report_profile_new();
    if (!report_profile_merge(p, src, w->pid, w->cmd)) {
        report_profile_free(p);
        snprintf(err, errlen, "cannot label the profile");
        return false;
    }
    /* the interval is the header's: pprof's time_nanos and duration_nanos */
    report_profile_set_interval(p, ts_ns(start), (double)(ts_ns(end) - ts_ns(start)) / 1e9);
    char a[32], b[32];
    iso_time(start, a);
    iso_time(end, b);
    report_profile_add_note(p, "host=%s", w->rec->store.host);
    report_profile_add_note(p, "pid=%d", (int)w->pid);
    report_profile_add_note(p, "cmd=%s", w->cmd);
    report_profile_add_note(p, "build_id=%s", w->build_id);
    report_profile_add_note(p, "boot_id=%s", w->id.boot_id);
    report_profile_add_note(p, "start_ticks=%llu", (unsigned long long)w->id.start_ticks);
    report_profile_add_note(p, "interval_start=%s", a);
    report_profile_add_note(p, "interval_end=%s", b);
    /* what the engine sampled of it: the rest went to attaching and to the
     * previous interval's profile (docs/fleet.md, "Intervals") */
    report_profile_add_note(p, "sampled_seconds=%.3f", report_profile_seconds(src));
    FILE *f = open_memstream(data, len);
    bool ok = f && report_write_pprof_stream(f, p, err, errlen);
    if (f && fclose(f) != 0 && ok) {
        snprintf(err, errlen, "cannot hold the profile in memory");
        ok = false;
    }
    if (!ok) {
        free(*data);
        *data = NULL;
    }
    report_profile_free(p);
    return ok;
}

/* A profile without samples for an interval the VM lived in but that could
 * not be sampled; why (a printf format with one string) is its warning. */
static Profile *empty_profile(const RecordOptions *o, const struct timespec *start, const char *why, const char *arg)
{
    Profile *p = report_profile_new();
    ReportHeader h = {.vm_path = "", .start_wall = start->tv_sec, .requested_hz = o->rate_hz, .mode = "none"};
    report_profile_set_header(p, &h);
    char text[1200];
    snprintf(text, sizeof text, why, arg);
    report_profile_add_warning(p, "%s", text);
    return p;
}

/* Renders and writes one interval, and says so. */
static void write_interval(Worker *w, const Profile *p, const struct timespec *start, const struct timespec *end,
                           bool last)
{
    Recorder *r = w->rec;
    char err[1024], path[4400];
    char *data = NULL;
    size_t len = 0;
    if (render(w, p, start, end, &data, &len, err, sizeof err) &&
        vmprofd_recstore_write(&r->store, w->pdir, start, data, len, path, sizeof path, err, sizeof err)) {
        w->files++;
        if (!r->o.quiet)
            say(r, "%s: %zu samples, %.3f s%s", path, report_profile_sample_count(p),
                (double)(ts_ns(end) - ts_ns(start)) / 1e9, last ? " (the VM exited)" : "");
    } else {
        say(r, "pid %d: the interval from %ld is lost: %s", (int)w->pid, (long)start->tv_sec, err);
    }
    free(data);
}

static struct timespec ts_of(int64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
}

/* The unsampled time since w->resume, as empty intervals on the wall
 * clock's boundaries that say why: up to the last boundary before to (the
 * rest begins the next sampled interval, answered), or all of it (last:
 * the VM exited, or vmprofd gave up or stopped). */
static struct timespec write_gap(Worker *w, const struct timespec *to, bool last, bool exited, const char *fmt)
{
    const RecordOptions *o = &w->rec->o;
    struct timespec start = w->resume;
    for (;;) {
        int64_t b = next_boundary_ns(ts_ns(&start), o->interval_s);
        bool whole = b <= ts_ns(to);
        if (!whole && !last)
            break;
        struct timespec end = whole ? ts_of(b) : *to;
        Profile *p = empty_profile(o, &start, fmt, w->why);
        write_interval(w, p, &start, &end, exited && !whole);
        report_profile_free(p);
        start = end;
        if (!whole)
            break;
    }
    w->have_resume = false;
    return start;
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    Recorder *r = w->rec;
    const RecordOptions *o = &r->o;
    char err[1024];
    struct timespec start = w->began;
    char carried[1400] = "";
    if (w->have_resume) {
        struct timespec now = start;
        start = write_gap(w, &now, false, false, "vmprofd could not sample this VM while it waited to try again (%s)");
        snprintf(carried, sizeof carried, "vmprofd could not sample this VM in the first %.3f s of this interval (%s)",
                 (double)(ts_ns(&now) - ts_ns(&start)) / 1e9, w->why);
    }
    for (;;) {
        if (stop_signal) {
            /* stopped between two intervals (while the last one's profile
             * was made): the time since is this VM's too, unsampled */
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            Profile *p = empty_profile(o, &start, "vmprofd record stopped (%s) before this interval was sampled",
                                       strsignal(stop_signal));
            write_interval(w, p, &start, &now, false);
            report_profile_free(p);
            break;
        }
        /* up to the next multiple of the interval, wall clock: the main
         * thread cuts it there (the engine's own time is a backstop) */
        int64_t boundary = next_boundary_ns(ts_ns(&start), o->interval_s);
        if ((double)(boundary - ts_ns(&start)) / 1e9 < RECORD_MIN_SLICE_S)
            boundary += (int64_t)llround(o->interval_s * 1e9);
        pthread_mutex_lock(&w->lock);
        w->cut = stop_signal; /* 0, unless a shutdown came since the check above */
        w->deadline_ns = boundary;
        pthread_mutex_unlock(&w->lock);
        VmprofdEngineRequest rq = {
            .pid = w->pid,
            .event = o->event,
            .seconds = (double)(boundary - ts_ns(&start)) / 1e9 + o->interval_s,
            .rate_hz = o->rate_hz,
            .mode = VMPROFD_MODE_AUTO,
            .stop = &w->cut,
        };
        Profile *p = vmprofd_engine_profile(&rq, err, sizeof err);
        pthread_mutex_lock(&w->lock);
        bool at_boundary = w->cut == VMPROFD_ENGINE_CUT, by_stop = w->cut != 0 && !at_boundary;
        w->deadline_ns = 0;
        pthread_mutex_unlock(&w->lock);
        /* Cut at the boundary, the interval ends there (the engine noticed
         * within its poll period, then built the profile: not sampling
         * time); else it ended now (the VM exited, or shutdown). */
        struct timespec end;
        clock_gettime(CLOCK_REALTIME, &end);
        if (at_boundary)
            end = ts_of(boundary);
        bool alive = still_alive(w);
        if (!p && alive) {
            /* the time since start stays unsampled until the retry, which
             * writes it (tend() does if the VM exits first) */
            w->tries++;
            w->retry_at = mono_now() + (w->tries == 1 ? RECORD_RETRY_FIRST_S : RECORD_RETRY_S);
            say(r, "pid %d (%s): %s%s", (int)w->pid, w->cmd, err,
                w->tries < RECORD_TRIES ? (w->tries == 1 ? "; trying again at once" : "; trying again in 5 s")
                                        : "; given up");
            w->resume = start;
            w->have_resume = true;
            snprintf(w->why, sizeof w->why, "%s", err);
            if (w->tries >= RECORD_TRIES)
                write_gap(w, &end, true, false, "vmprofd could not sample this VM (%s), " RECORD_TRIES_TEXT
                                         " times in a row: it gave up");
            break;
        }
        if (carried[0]) {
            if (p)
                report_profile_add_warning(p, "%s", carried);
            carried[0] = '\0';
        }
        w->tries = 0;
        if (!p) /* it exited while the engine attached: its last interval, kept */
            p = empty_profile(o, &start, "the VM exited before this interval could be sampled (%s)", err);
        /* Cut at the boundary and dead now: it died after the cut, while
         * the engine finished (an exit before the cut ends the engine at
         * once, through the pidfd it polls): its life went on past the
         * boundary, into one more (partial) interval without samples. */
        bool tail = at_boundary && !alive;
        write_interval(w, p, &start, &end, !alive && !tail);
        report_profile_free(p);
        if (tail) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            p = empty_profile(o, &end, "the VM exited %s", "as this interval began");
            write_interval(w, p, &end, &now, true);
            report_profile_free(p);
        }
        if (!alive) {
            w->gone = true;
            break;
        }
        if (by_stop)
            break; /* this interval ended at the shutdown */
        start = end; /* the next interval starts where this one ended */
    }
    atomic_store(&w->done, true);
    return NULL;
}

/* Starts (or restarts) w's thread; false when it cannot. */
static bool start_worker(Recorder *r, Worker *w)
{
    char err[512];
    clock_gettime(CLOCK_REALTIME, &w->began);
    if (!vmprofd_recstore_process_dir(&r->store, w->pid, w->id.start_ticks, w->pdir, sizeof w->pdir, err,
                                      sizeof err)) {
        say(r, "pid %d: %s", (int)w->pid, err);
        return false;
    }
    atomic_store(&w->done, false);
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    if (rc != 0) {
        say(r, "pid %d: cannot start a thread: %s", (int)w->pid, strerror(rc));
        return false;
    }
    w->running = w->started = true;
    return true;
}

static void free_worker(Worker *w)
{
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* Cuts the intervals whose end has come (or every one, at shutdown). */
static void cut_due(Recorder *r, bool all)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t now = ts_ns(&t);
    for (Worker *w = r->workers; w; w = w->next) {
        pthread_mutex_lock(&w->lock);
        if (all || (w->deadline_ns && now >= w->deadline_ns)) {
            w->cut = all ? (sig_atomic_t)stop_signal : VMPROFD_ENGINE_CUT;
            w->deadline_ns = 0;
        }
        pthread_mutex_unlock(&w->lock);
    }
}

/* Joins finished threads; forgets the VMs that are gone; restarts the ones
 * whose retry time has come. */
static void tend(Recorder *r)
{
    double now = mono_now();
    for (Worker **link = &r->workers; *link;) {
        Worker *w = *link;
        if (w->running && atomic_load(&w->done)) {
            pthread_join(w->thread, NULL);
            w->running = false;
        }
        if (!w->running && (w->gone || !still_alive(w))) {
            if (w->have_resume) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                write_gap(w, &now, true, true, "the VM exited while vmprofd waited to try again to sample it (%s)");
            }
            *link = w->next;
            free_worker(w);
            continue;
        }
        if (!w->running && w->started && w->tries > 0 && w->tries < RECORD_TRIES && now >= w->retry_at &&
            !stop_signal)
            start_worker(r, w);
        link = &w->next;
    }
}

/* Nanoseconds until the earliest retry tend() would start (INT64_MAX: none). */
static int64_t next_retry_ns(const Recorder *r)
{
    int64_t best = INT64_MAX;
    double now = mono_now();
    for (const Worker *w = r->workers; w; w = w->next)
        if (!w->running && w->started && w->tries > 0 && w->tries < RECORD_TRIES) {
            int64_t ns = w->retry_at > now ? (int64_t)((w->retry_at - now) * 1e9) : 0;
            if (ns < best)
                best = ns;
        }
    return best;
}

static Worker *find_worker(Recorder *r, pid_t pid, const ProfIdentity *id)
{
    for (Worker *w = r->workers; w; w = w->next)
        if (w->pid == pid && prof_identity_equal(&w->id, id))
            return w;
    return NULL;
}

/* Reads the list of VMs; starts a worker for each new one it may profile.
 * One it may not is looked at again at every scan (a segment still being
 * made reads as invalid for a moment) and said once, a second after it
 * was found. */
static bool discover(Recorder *r)
{
    bool pending = false;
    VmprofdProcess *v = NULL;
    size_t n = vmprofd_engine_list(&v);
    double now = mono_now();
    for (size_t i = 0; i < n && !stop_signal; i++) {
        if (r->o.match && fnmatch(r->o.match, v[i].cmd, 0) != 0)
            continue;
        ProfIdentity id;
        if (!prof_identity_of(v[i].pid, &id))
            continue; /* gone meanwhile */
        Worker *w = find_worker(r, v[i].pid, &id);
        if (!w) {
            w = calloc(1, sizeof *w);
            if (!w)
                break;
            w->rec = r;
            w->pid = v[i].pid;
            w->id = id;
            w->first_seen = now;
            pthread_mutex_init(&w->lock, NULL);
            snprintf(w->cmd, sizeof w->cmd, "%s", v[i].cmd);
            char exe[64];
            snprintf(exe, sizeof exe, "/proc/%d/exe", (int)w->pid);
            read_build_id(exe, w->build_id, sizeof w->build_id);
            w->next = r->workers;
            r->workers = w;
        }
        if (w->started)
            continue; /* running, or tend() decides about it */
        if (!v[i].may_profile) {
            pending |= now - w->first_seen < 1.0;
            if (!w->said && now - w->first_seen >= 1.0) {
                say(r, "pid %d (%s) is not profiled: %s", (int)w->pid, w->cmd, v[i].why);
                w->said = true;
            }
            continue;
        }
        if (!start_worker(r, w))
            w->started = true, w->tries = RECORD_TRIES; /* said why; not again */
    }
    free(v);
    return pending;
}

/* -- The command ------------------------------------------------------------ */

int vmprofd_record_main(int argc, char **argv)
{
    Recorder *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "vmprofd record: out of memory\n");
        return 1;
    }
    char err[1024];
    if (!vmprofd_record_parse(argc, argv, &r->o, err, sizeof err)) {
        fprintf(stderr, "vmprofd record: %s\nTry 'vmprofd record --help' for the options.\n", err);
        free(r);
        return 2;
    }
    if (r->o.help) {
        vmprofd_record_usage(stdout);
        free(r);
        return 0;
    }
    pthread_mutex_init(&r->log_lock, NULL);
    size_t swept = 0;
    if (!vmprofd_recstore_open(&r->store, r->o.dir, r->o.keep_age_s, r->o.keep_bytes, &swept, err, sizeof err)) {
        fprintf(stderr, "vmprofd record: %s\n", err);
        free(r);
        return 1;
    }
    if (swept)
        say(r, "removed %zu temporary file%s an earlier recorder left", swept, swept == 1 ? "" : "s");

    /* SIGTERM and SIGINT are taken by the main thread only, in ppoll: the
     * workers (and the engine's sampler threads) start with them blocked. */
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_sigmask(SIG_BLOCK, &stops, &old);
    sigset_t waiting = old;
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGINT);

    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in >= 0 && inotify_add_watch(in, "/dev/shm", IN_CREATE | IN_MOVED_TO) < 0) {
        close(in);
        in = -1;
    }
    say(r, "recording every stvm into %s (interval %gs, %g Hz, %s)%s", r->store.host_dir, r->o.interval_s,
        r->o.rate_hz, vmprofd_options_event_name(r->o.event), in < 0 ? "; /dev/shm not watched: a scan a second" : "");

    double last_scan = -1e9;
    while (!stop_signal) {
        cut_due(r, false);
        if (mono_now() - last_scan >= RECORD_RESCAN_MS / 1000.0) {
            bool pending = discover(r);
            /* a segment still being made: look again soon */
            last_scan = mono_now() - (pending ? (RECORD_RESCAN_MS - RECORD_PENDING_MS) / 1000.0 : 0);
        }
        tend(r);
        /* wake at the next interval boundary, for the next scan, or for a retry */
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        int64_t to_boundary = next_boundary_ns(ts_ns(&t), r->o.interval_s) - ts_ns(&t) + 1000000;
        int64_t to_scan = (int64_t)((last_scan + RECORD_RESCAN_MS / 1000.0 - mono_now()) * 1e9);
        int64_t to_retry = next_retry_ns(r);
        int64_t wait_ns = to_boundary < to_scan ? to_boundary : to_scan;
        if (to_retry < wait_ns)
            wait_ns = to_retry;
        if (wait_ns < 0)
            wait_ns = 0;
        struct timespec wait = {.tv_sec = (time_t)(wait_ns / 1000000000), .tv_nsec = (long)(wait_ns % 1000000000)};
        struct pollfd pfd = {.fd = in, .events = POLLIN};
        if (ppoll(&pfd, in >= 0 ? 1 : 0, &wait, &waiting) > 0) {
            char buf[4096]; /* what appeared does not matter: the list is read again */
            while (read(in, buf, sizeof buf) > 0)
                ;
            /* soon, but not more often than every RECORD_PENDING_MS
             * however busy /dev/shm is */
            double soon = mono_now() - (RECORD_RESCAN_MS - RECORD_PENDING_MS) / 1000.0;
            if (last_scan > soon)
                last_scan = soon;
        }
    }
    say(r, "%s: writing the intervals in progress", strsignal(stop_signal));
    cut_due(r, true);
    for (Worker *w = r->workers, *next; w; w = next) {
        next = w->next;
        if (w->running)
            pthread_join(w->thread, NULL);
        if (w->have_resume) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            write_gap(w, &now, true, false, "vmprofd record stopped while it waited to try again to sample this VM (%s)");
        }
        free_worker(w);
    }
    if (in >= 0)
        close(in);
    if (r->store.removed)
        say(r, "%llu old profile%s removed by the limits", (unsigned long long)r->store.removed,
            r->store.removed == 1 ? "" : "s");
    vmprofd_recstore_close(&r->store);
    pthread_mutex_destroy(&r->log_lock);
    free(r);
    return 0;
}
