/*
 * vmprofd/serve.c — `vmprofd serve`. See serve.h and docs/serve.md.
 */
#define _GNU_SOURCE /* open_memstream */
#include "vmprofd/serve.h"

#include "report/report.h"
#include "vmprofd/engine.h"
#include "vmprofd/options.h"
#include "vmprofd/serve_request.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SERVE_DEFAULT_LISTEN "127.0.0.1:6060"
#define SERVE_DEFAULT_MAX_PROFILES 4
/* Longest profile asked for: Parca and Alloy ask for their scrape interval
 * (10-60 s typically); five minutes covers any of them. */
#define SERVE_DEFAULT_MAX_SECONDS 300.0
/* 100 Hz, as Go's CPU profiler: a scraped VM pays ~1/14 of the command
 * line's 1.4 kHz. */
#define SERVE_DEFAULT_RATE_HZ 100.0
/* A client that sends nothing for this long is dropped (libmicrohttpd's
 * idle timeout), one that never finishes its request included (--timeout). */
#define SERVE_IDLE_TIMEOUT_S 30
/* Connections at once, and per client address: enough for a few
 * scrapers and browsers, few enough that idle sockets cannot pile up. */
#define SERVE_MAX_CONNECTIONS 64
#define SERVE_MAX_PER_IP 16
/* Request headers and query beyond this are refused (431/414) by
 * libmicrohttpd. */
#define SERVE_CONNECTION_MEMORY (32 * 1024)
#define SERVE_TOKEN_MAX 4096
/* At a signal: how long the answers of the profiles being made may take. */
#define SERVE_STOP_WAIT_MS 10000

typedef struct Server {
    const char *listen;
    char *token;            /* NULL: none required */
    int max_profiles;
    double max_seconds;
    double rate_hz;
    VmprofdMode mode;
    bool quiet;
    unsigned idle_timeout;  /* seconds */
    /* The profiles being made: when each is due to end (monotonic s), 0 a
     * free slot; max_profiles of them, under lock. */
    pthread_mutex_t lock;
    double *ends;
    atomic_int active;      /* how many of ends are taken */
    atomic_int inflight;    /* profile requests not yet answered to the end (notify_completed) */
} Server;

/* A request's req_cls: its headers were seen; it asks for a profile. */
static int seen, profiling;

/* Set once the server is told to stop; running profiles read it. */
static volatile sig_atomic_t stopping;

void vmprofd_serve_usage(FILE *out)
{
    fprintf(out,
            "usage: vmprofd serve [--listen ADDR:PORT] [--token-file FILE] [options]\n"
            "\n"
            "Serves profiles of this host's stvm processes over HTTP, at the paths of\n"
            "Go's net/http/pprof (go tool pprof, Parca, Grafana Alloy/Pyroscope):\n"
            "  /debug/pprof/                  index: each VM's pid, command line, start\n"
            "  /debug/pprof/profile?seconds=N&pid=P\n"
            "                                 CPU profile, gzipped pprof; without pid\n"
            "                                 every VM, samples labelled pid and cmd\n"
            "  /debug/pprof/allocs?seconds=N&pid=P     allocation profile (pprof)\n"
            "  /vmprofd/report?seconds=N&pid=P&event=cpu|alloc|wall   text report\n"
            "  /vmprofd/flamegraph?seconds=N&pid=P&event=...          SVG flame graph\n"
            "\n"
            "Options:\n"
            "  --listen ADDR:PORT   where (default " SERVE_DEFAULT_LISTEN "; port 0: a free one,\n"
            "                       said on stderr). Beyond loopback, command lines and\n"
            "                       code names are exposed: use --token-file\n"
            "  --token-file FILE    require 'Authorization: Bearer TOKEN', FILE's first line\n"
            "  --max-profiles N     profiles made at once (default %d); more: 503\n"
            "  --max-seconds S      longest profile asked for (default %g)\n"
            "  --rate HZ            CPU sampling rate (default %g)\n"
            "  --mode auto|perf|ptrace   the CPU sampler (default auto)\n"
            "  --timeout S          drop a client silent for S seconds (default %d)\n"
            "  -q, --quiet          no line per request on stderr\n"
            "  -h, --help\n"
            "\n"
            "SIGINT, SIGTERM, SIGHUP: running profiles end and are answered; exit 0.\n"
            "docs/serve.md says more, and what the endpoint exposes.\n",
            SERVE_DEFAULT_MAX_PROFILES, SERVE_DEFAULT_MAX_SECONDS, SERVE_DEFAULT_RATE_HZ, SERVE_IDLE_TIMEOUT_S);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* -- Answers --------------------------------------------------------------------- */

static enum MHD_Result send_buffer(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                                   size_t len, const char *h1, const char *v1)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (h1)
        MHD_add_response_header(r, h1, v1);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* A one-line reason as text/plain. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *reason, const char *h1,
                                  const char *v1)
{
    char *body;
    if (asprintf(&body, "%s\n", reason) < 0)
        return MHD_NO;
    for (char *p = body; *p && p[1]; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' '; /* one line */
    return send_buffer(c, status, "text/plain; charset=utf-8", body, strlen(body), h1, v1);
}

static void html_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static enum MHD_Result send_index(Server *sv, struct MHD_Connection *c)
{
    VmprofdProcess *v;
    size_t n = vmprofd_engine_list(&v);
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f) {
        free(v);
        return send_error(c, 500, "out of memory", NULL, NULL);
    }
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>vmprofd</title></head><body>\n"
               "<h1>vmprofd: %zu stvm process%s</h1>\n"
               "<p class=\"busy\">profiles being made: %d of at most %d</p>\n"
               "<p><a href=\"/debug/pprof/profile?seconds=30\">CPU profile of all (30 s)</a> &middot; "
               "<a href=\"/debug/pprof/allocs?seconds=30\">allocations of all (30 s)</a></p>\n"
               "<table border=\"1\" cellpadding=\"4\">\n"
               "<tr><th>pid</th><th>command line</th><th>started</th><th>profiles (10 s)</th></tr>\n",
            n, n == 1 ? "" : "es", atomic_load(&sv->active), sv->max_profiles);
    for (size_t i = 0; i < n; i++) {
        char when[64] = "unknown";
        struct tm tm;
        if (v[i].start && gmtime_r(&v[i].start, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
        fprintf(f, "<tr><td class=\"pid\">%d</td><td><code>", (int)v[i].pid);
        html_escaped(f, v[i].cmd);
        fprintf(f, "</code></td><td>%s</td><td>", when);
        if (v[i].may_profile) {
            int p = (int)v[i].pid;
            fprintf(f,
                    "<a href=\"/debug/pprof/profile?seconds=10&amp;pid=%d\">cpu pprof</a> "
                    "<a href=\"/debug/pprof/allocs?seconds=10&amp;pid=%d\">allocs pprof</a> "
                    "<a href=\"/vmprofd/report?seconds=10&amp;pid=%d\">report</a> "
                    "<a href=\"/vmprofd/flamegraph?seconds=10&amp;pid=%d\">flame graph</a> "
                    "<a href=\"/vmprofd/report?seconds=10&amp;pid=%d&amp;event=alloc\">allocation report</a>",
                    p, p, p, p, p);
        } else {
            fputs("not profiled: ", f);
            html_escaped(f, v[i].why);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n</body></html>\n", f);
    free(v);
    if (fclose(f) != 0) {
        free(body);
        return send_error(c, 500, "out of memory", NULL, NULL);
    }
    return send_buffer(c, 200, "text/html; charset=utf-8", body, len, NULL, NULL);
}

/* -- Profiles -------------------------------------------------------------------- */

static Profile *make_profile(Server *sv, const ServeRequest *rq, unsigned *status, char *err, size_t errlen)
{
    VmprofdEngineRequest er = {
        .event = rq->event,
        .seconds = rq->seconds,
        .rate_hz = rq->event == VMPROFD_EVENT_CPU ? sv->rate_hz : 0,
        .mode = sv->mode,
        .stop = &stopping,
        .log_warnings = !sv->quiet,
    };
    *status = 500;
    if (rq->pid) {
        VmprofdProcess pr;
        if (!vmprofd_engine_find(rq->pid, &pr)) {
            *status = 400;
            snprintf(err, errlen, "unknown pid %d: no live stvm with an export segment has it", (int)rq->pid);
            return NULL;
        }
        if (!pr.may_profile) {
            *status = 403;
            snprintf(err, errlen, "may not profile pid %d: %s", (int)rq->pid, pr.why);
            return NULL;
        }
        er.pid = rq->pid;
        Profile *p = vmprofd_engine_profile(&er, err, errlen);
        return p;
    }
    VmprofdProcess *v;
    size_t n = vmprofd_engine_list(&v), k = 0;
    pid_t *pids = calloc(n ? n : 1, sizeof *pids);
    const char **cmds = calloc(n ? n : 1, sizeof *cmds);
    if (!pids || !cmds) {
        free(pids);
        free(cmds);
        free(v);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].may_profile) {
            pids[k] = v[i].pid;
            cmds[k++] = v[i].cmd;
        }
    }
    Profile *p;
    if (k == 0) {
        /* a valid, empty profile: a scraper of a host without VMs is not failing */
        p = report_profile_new();
        ReportHeader h = {.vm_path = "(no stvm)", .start_wall = time(NULL), .seconds = 0, .requested_hz = er.rate_hz,
                          .mode = "none"};
        report_profile_set_header(p, &h);
        report_profile_add_warning(p, "no stvm process that vmprofd may profile runs on this host");
    } else {
        p = vmprofd_engine_profile_many(&er, pids, cmds, k, err, errlen);
    }
    free(pids);
    free(cmds);
    free(v);
    return p;
}

static bool render(const Profile *p, VmprofdFormat format, char **body, size_t *len, char *err, size_t errlen)
{
    *body = NULL;
    *len = 0;
    FILE *f = open_memstream(body, len);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bool ok;
    switch (format) {
    case VMPROFD_FORMAT_TEXT:
        ok = report_write_text(f, p, NULL, err, errlen);
        break;
    case VMPROFD_FORMAT_FLAMEGRAPH: {
        ReportFlameOptions fo = {.title = "vmprofd serve"};
        ok = report_write_flamegraph(f, p, &fo, err, errlen);
        break;
    }
    default:
        ok = report_write_pprof_stream(f, p, err, errlen);
        break;
    }
    if (fclose(f) != 0 && ok) {
        snprintf(err, errlen, "out of memory");
        ok = false;
    }
    if (!ok) {
        free(*body);
        *body = NULL;
    }
    return ok;
}

/* *status: the answer's, for the log. */
static enum MHD_Result send_profile(Server *sv, struct MHD_Connection *c, const ServeRequest *rq, unsigned *status)
{
    *status = 503;
    if (stopping)
        return send_error(c, 503, "vmprofd is stopping", NULL, NULL);
    /* a slot, or 503 with the time until the first running profile ends */
    int slot = -1;
    double now = now_s(), first_end = 0;
    pthread_mutex_lock(&sv->lock);
    for (int i = 0; i < sv->max_profiles; i++) {
        if (sv->ends[i] == 0 && slot < 0)
            slot = i;
        else if (sv->ends[i] != 0 && (first_end == 0 || sv->ends[i] < first_end))
            first_end = sv->ends[i];
    }
    if (slot >= 0) {
        sv->ends[slot] = now + rq->seconds;
        atomic_fetch_add(&sv->active, 1);
    }
    pthread_mutex_unlock(&sv->lock);
    if (slot < 0) {
        char retry[32];
        double wait = ceil(first_end - now);
        snprintf(retry, sizeof retry, "%.0f", wait >= 1 ? wait : 1);
        char reason[160];
        snprintf(reason, sizeof reason, "%d profiles are being made already (vmprofd serve --max-profiles): try later",
                 sv->max_profiles);
        return send_error(c, 503, reason, MHD_HTTP_HEADER_RETRY_AFTER, retry);
    }
    char err[1024] = "";
    Profile *p = make_profile(sv, rq, status, err, sizeof err);
    pthread_mutex_lock(&sv->lock);
    sv->ends[slot] = 0;
    atomic_fetch_sub(&sv->active, 1);
    pthread_mutex_unlock(&sv->lock);
    if (!p)
        return send_error(c, *status, err[0] ? err : "cannot profile", NULL, NULL);
    char *body;
    size_t len;
    bool ok = render(p, rq->format, &body, &len, err, sizeof err);
    report_profile_free(p);
    *status = ok ? 200 : 500;
    if (!ok)
        return send_error(c, 500, err, NULL, NULL);
    switch (rq->format) {
    case VMPROFD_FORMAT_TEXT:
        return send_buffer(c, 200, "text/plain; charset=utf-8", body, len, NULL, NULL);
    case VMPROFD_FORMAT_FLAMEGRAPH:
        return send_buffer(c, 200, "image/svg+xml", body, len, NULL, NULL);
    default:
        return send_buffer(c, 200, "application/octet-stream", body, len, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
                           rq->event == VMPROFD_EVENT_ALLOC ? "attachment; filename=\"allocs\""
                                                            : "attachment; filename=\"profile\"");
    }
}

/* -- The handler ----------------------------------------------------------------- */

static const char *query_arg(void *ctx, const char *key)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    Server *sv = cls;
    if (*req_cls != &seen) { /* the headers: answer once the body (if any) is read */
        *req_cls = &seen;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* a body is never used: read and dropped */
        *upload_size = 0;
        return MHD_YES;
    }
    double t0 = now_s();
    ServeRequest rq;
    vmprofd_serve_decide(method, url, query_arg, c, sv->token,
                         MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
                         sv->max_seconds, &rq);
    enum MHD_Result r;
    unsigned status = (unsigned)rq.status;
    switch (rq.kind) {
    case SERVE_INDEX:
        r = send_index(sv, c);
        break;
    case SERVE_PROFILE:
        *req_cls = &profiling; /* shutdown waits for its answer: notify_completed */
        atomic_fetch_add(&sv->inflight, 1);
        r = send_profile(sv, c, &rq, &status);
        break;
    default:
        r = send_error(c, (unsigned)rq.status, rq.reason,
                       rq.status == 401 ? MHD_HTTP_HEADER_WWW_AUTHENTICATE : rq.status == 405 ? "Allow" : NULL,
                       rq.status == 401 ? "Bearer realm=\"vmprofd\"" : "GET");
        break;
    }
    if (!sv->quiet) {
        char shown[128];
        size_t o = 0;
        for (const char *p = url; *p && o + 1 < sizeof shown; p++)
            shown[o++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        shown[o] = '\0';
        fprintf(stderr, "vmprofd: %.8s %s: %u%s%s (%.3f s)\n", method, shown, status, rq.reason[0] ? " " : "",
                rq.reason, now_s() - t0);
    }
    return r;
}

static void notify_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    Server *sv = cls;
    if (*req_cls == &profiling)
        atomic_fetch_sub(&sv->inflight, 1);
    *req_cls = NULL;
}

/* -- Start-up -------------------------------------------------------------------- */

/* "ADDR:PORT" or "[V6]:PORT" into a bound, listening socket; with err, -2
 * for a malformed spec (a bad option), -1 when it cannot listen there. */
static int open_listener(const char *spec, bool *loopback, char *shown, size_t shownlen, char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || strlen(colon + 1) == 0) {
        snprintf(err, errlen, "--listen %s: expected ADDR:PORT (127.0.0.1:6060, [::1]:6060, 0.0.0.0:6060)", spec);
        return -2;
    }
    size_t hl = (size_t)(colon - spec);
    if (hl >= sizeof host) {
        snprintf(err, errlen, "--listen %s: address too long", spec);
        return -2;
    }
    memcpy(host, spec, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 0 || port > 65535) {
        snprintf(err, errlen, "--listen %s: the port must be 0-65535", spec);
        return -2;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
    struct addrinfo *ai;
    int rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "--listen %s: %s (a numeric address is needed)", spec, gai_strerror(rc));
        return -2;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "--listen %s: socket: %s", spec, strerror(errno));
        freeaddrinfo(ai);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "--listen %s: %s", spec, strerror(errno));
        close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    if (ai->ai_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)ai->ai_addr;
        *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    } else {
        const struct sockaddr_in6 *a = (const void *)ai->ai_addr;
        *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    char addr[INET6_ADDRSTRLEN] = "?";
    int bound = 0;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
        bound = ntohs(a->sin_port);
        snprintf(shown, shownlen, "%s:%d", addr, bound);
    } else {
        const struct sockaddr_in6 *a = (const void *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof addr);
        bound = ntohs(a->sin6_port);
        snprintf(shown, shownlen, "[%s]:%d", addr, bound);
    }
    return fd;
}

/* The token: the file's first line, printable, without spaces. */
static char *read_token(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 077))
        fprintf(stderr, "vmprofd: warning: --token-file %s can be read by other users (chmod 600 it)\n", path);
    char buf[SERVE_TOKEN_MAX + 1];
    ssize_t n = read(fd, buf, SERVE_TOKEN_MAX);
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return NULL;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    size_t len = strlen(buf);
    bool printable = len > 0;
    for (size_t i = 0; i < len; i++)
        printable &= buf[i] > 0x20 && buf[i] < 0x7f;
    if (!printable) {
        snprintf(err, errlen, "--token-file %s: its first line must be the token: printable, without spaces, "
                              "not empty", path);
        return NULL;
    }
    return strdup(buf);
}

static bool number(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    Server *sv = cls;
    if (sv->quiet)
        return;
    fputs("vmprofd: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

int vmprofd_serve_main(int argc, char **argv)
{
    Server sv = {
        .listen = SERVE_DEFAULT_LISTEN,
        .max_profiles = SERVE_DEFAULT_MAX_PROFILES,
        .max_seconds = SERVE_DEFAULT_MAX_SECONDS,
        .rate_hz = SERVE_DEFAULT_RATE_HZ,
        .mode = VMPROFD_MODE_AUTO,
        .idle_timeout = SERVE_IDLE_TIMEOUT_S,
    };
    const char *token_file = NULL;
    enum { O_LISTEN = 256, O_TOKEN, O_MAXP, O_MAXS, O_RATE, O_MODE, O_TIMEOUT };
    static const struct option longs[] = {
        {"listen", required_argument, NULL, O_LISTEN},   {"token-file", required_argument, NULL, O_TOKEN},
        {"max-profiles", required_argument, NULL, O_MAXP}, {"max-seconds", required_argument, NULL, O_MAXS},
        {"rate", required_argument, NULL, O_RATE},       {"mode", required_argument, NULL, O_MODE},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"quiet", no_argument, NULL, 'q'},               {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    opterr = 0;
    int ch;
    double v;
    while ((ch = getopt_long(argc, argv, "+qh", longs, NULL)) != -1) {
        switch (ch) {
        case O_LISTEN: sv.listen = optarg; break;
        case O_TOKEN: token_file = optarg; break;
        case O_MAXP:
            if (!number(optarg, 1, 1024, &v) || v != floor(v)) {
                fprintf(stderr, "vmprofd serve: --max-profiles must be a whole number from 1 to 1024\n");
                return 2;
            }
            sv.max_profiles = (int)v;
            break;
        case O_MAXS:
            if (!number(optarg, 0.001, 86400, &sv.max_seconds)) {
                fprintf(stderr, "vmprofd serve: --max-seconds must be a number of seconds from 0.001 to 86400\n");
                return 2;
            }
            break;
        case O_RATE:
            if (!number(optarg, 1, VMPROFD_MAX_RATE_HZ, &sv.rate_hz)) {
                fprintf(stderr, "vmprofd serve: --rate must be from 1 to %.0f Hz\n", VMPROFD_MAX_RATE_HZ);
                return 2;
            }
            break;
        case O_MODE:
            if (strcmp(optarg, "auto") == 0) sv.mode = VMPROFD_MODE_AUTO;
            else if (strcmp(optarg, "perf") == 0) sv.mode = VMPROFD_MODE_PERF;
            else if (strcmp(optarg, "ptrace") == 0) sv.mode = VMPROFD_MODE_PTRACE;
            else {
                fprintf(stderr, "vmprofd serve: --mode must be auto, perf or ptrace\n");
                return 2;
            }
            break;
        case O_TIMEOUT:
            if (!number(optarg, 1, 3600, &v) || v != floor(v)) {
                fprintf(stderr, "vmprofd serve: --timeout must be a whole number of seconds from 1 to 3600\n");
                return 2;
            }
            sv.idle_timeout = (unsigned)v;
            break;
        case 'q': sv.quiet = true; break;
        case 'h': vmprofd_serve_usage(stdout); return 0;
        default:
            return vmprofd_options_usage_error("serve", "unknown option ", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        return vmprofd_options_usage_error("serve", "unexpected argument ", argv[optind]);
    }
    pthread_mutex_init(&sv.lock, NULL);
    sv.ends = calloc((size_t)sv.max_profiles, sizeof *sv.ends);
    if (!sv.ends) {
        fprintf(stderr, "vmprofd serve: out of memory\n");
        return 1;
    }
    char err[1024];
    if (token_file && !(sv.token = read_token(token_file, err, sizeof err))) {
        fprintf(stderr, "vmprofd serve: %s\n", err);
        free(sv.ends);
        return 2;
    }
    bool loopback = false;
    char shown[128];
    int fd = open_listener(sv.listen, &loopback, shown, sizeof shown, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "vmprofd serve: %s\n", err);
        free(sv.token);
        free(sv.ends);
        return fd == -2 ? 2 : 1;
    }
    if (!loopback && !sv.token)
        fprintf(stderr, "vmprofd serve: warning: listening on %s, beyond this host, without --token-file: anyone who "
                        "reaches it can read the command lines and code of every VM listed and make them profiled "
                        "(docs/serve.md)\n", shown);

    /* Every thread started from here (libmicrohttpd's, the profiles') has
     * these blocked: sigwait below takes them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ERROR_LOG |
            MHD_USE_ITC, 0, NULL,
        NULL, handle, &sv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, &sv, /* first: libmicrohttpd asks */
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT,
        sv.idle_timeout, MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)SERVE_MAX_PER_IP, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)SERVE_CONNECTION_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, notify_completed, &sv, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "vmprofd serve: the HTTP server did not start (libmicrohttpd)\n");
        close(fd);
        free(sv.token);
        free(sv.ends);
        return 1;
    }
    fprintf(stderr, "vmprofd: serving on http://%s/debug/pprof/\n", shown);
    fflush(stderr);
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    stopping = sig;
    if (!sv.quiet)
        fprintf(stderr, "vmprofd: %s: stopping (running profiles end now)\n", strsignal(sig));
    /* No new connections; the profiles being made see stopping, end and
     * are answered (bounded: a client that does not read its answer is
     * cut off by MHD_stop_daemon after SERVE_STOP_WAIT_MS). */
    MHD_socket lfd = MHD_quiesce_daemon(d);
    for (int i = 0; i < SERVE_STOP_WAIT_MS / 10 && atomic_load(&sv.inflight) > 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    MHD_stop_daemon(d); /* waits for the connections' threads */
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd); /* quiesced: ours to close */
    free(sv.token);
    free(sv.ends);
    return 0;
}
