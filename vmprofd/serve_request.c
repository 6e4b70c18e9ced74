/*
 * vmprofd/serve_request.c — deciding an HTTP request's answer. See
 * serve_request.h.
 */
#include "vmprofd/serve_request.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* pid_max's ceiling (PID_MAX_LIMIT, 2^22) */
#define SERVE_PID_MAX 4194304L

static void error(ServeRequest *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error(ServeRequest *r, int status, const char *fmt, ...)
{
    r->kind = SERVE_ERROR;
    r->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

bool vmprofd_serve_token_ok(const char *token, const char *authorization)
{
    if (!token)
        return true;
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    const char *given = authorization + 7;
    while (*given == ' ')
        given++;
    size_t n = strlen(token), m = strlen(given);
    /* every byte of the longer one is looked at, whatever matched before */
    size_t len = n > m ? n : m;
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < len; i++) {
        unsigned char a = i < n ? (unsigned char)token[i] : 0;
        unsigned char b = i < m ? (unsigned char)given[i] : 0;
        diff |= (unsigned)(a ^ b);
    }
    return diff == 0;
}

/* An argument's value for a message: printable ASCII, cut. */
static const char *shown(const char *v, char *buf, size_t len)
{
    size_t o = 0;
    for (const char *c = v; *c && o + 4 < len; c++)
        buf[o++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
    if (strlen(v) > o && o + 4 <= len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

static bool parse_seconds(const char *v, double max, ServeRequest *r)
{
    char b[40];
    if (!v) {
        r->seconds = VMPROFD_SERVE_DEFAULT_SECONDS < max ? VMPROFD_SERVE_DEFAULT_SECONDS : max;
        return true;
    }
    /* decimal only, as Go's strconv.ParseInt: no hex, inf or nan of strtod's */
    bool decimal = v[0] != '\0' && strspn(v, "0123456789.eE+-") == strlen(v);
    char *end;
    double s = decimal ? strtod(v, &end) : 0;
    if (!decimal || end == v || *end != '\0' || !isfinite(s)) {
        error(r, 400, "seconds is not a number: '%s'", shown(v, b, sizeof b));
        return false;
    }
    if (!(s > 0)) {
        error(r, 400, "seconds must be above 0 (got %s)", shown(v, b, sizeof b));
        return false;
    }
    if (s > max) {
        error(r, 400, "seconds=%s is over this server's maximum of %g (vmprofd serve --max-seconds)",
              shown(v, b, sizeof b), max);
        return false;
    }
    r->seconds = s;
    return true;
}

static bool parse_pid(const char *v, ServeRequest *r)
{
    char b[40];
    r->pid = 0;
    if (!v)
        return true;
    bool digits = v[0] >= '1' && v[0] <= '9' && strlen(v) <= 8;
    for (const char *c = v; digits && *c; c++)
        digits = *c >= '0' && *c <= '9';
    long p = digits ? strtol(v, NULL, 10) : 0;
    if (!digits || p > SERVE_PID_MAX) {
        error(r, 400, "pid is not a process id: '%s'", shown(v, b, sizeof b));
        return false;
    }
    r->pid = (pid_t)p;
    return true;
}

static bool parse_event(const char *v, ServeRequest *r)
{
    char b[40];
    if (!v)
        r->event = VMPROFD_EVENT_CPU;
    else if (!vmprofd_options_parse_event(v, &r->event)) {
        error(r, 400, "event must be cpu, alloc or wall, not '%s'", shown(v, b, sizeof b));
        return false;
    }
    return true;
}

void vmprofd_serve_decide(const char *method, const char *path, ServeArgFn arg, void *ctx, const char *token,
                          const char *authorization, double max_seconds, ServeRequest *out)
{
    memset(out, 0, sizeof *out);
    out->status = 200;
    if (!vmprofd_serve_token_ok(token, authorization)) {
        error(out, 401, "a bearer token is required (Authorization: Bearer ...)");
        return;
    }
    bool index = strcmp(path, "/debug/pprof/") == 0 || strcmp(path, "/debug/pprof") == 0 || strcmp(path, "/") == 0;
    bool cpu = strcmp(path, "/debug/pprof/profile") == 0;
    bool allocs = strcmp(path, "/debug/pprof/allocs") == 0;
    bool text = strcmp(path, "/vmprofd/report") == 0;
    bool flame = strcmp(path, "/vmprofd/flamegraph") == 0;
    if (!index && !cpu && !allocs && !text && !flame) {
        char b[64];
        error(out, 404, "no such page: '%s' (the index is /debug/pprof/)", shown(path, b, sizeof b));
        return;
    }
    if (strcmp(method, "GET") != 0 && !(index && strcmp(method, "HEAD") == 0)) {
        char b[24];
        error(out, 405, "method %s is not allowed: GET only", shown(method, b, sizeof b));
        return;
    }
    if (index) {
        out->kind = SERVE_INDEX;
        return;
    }
    out->kind = SERVE_PROFILE;
    out->format = text ? VMPROFD_FORMAT_TEXT : flame ? VMPROFD_FORMAT_FLAMEGRAPH : VMPROFD_FORMAT_PPROF;
    if (!parse_seconds(arg(ctx, "seconds"), max_seconds, out) || !parse_pid(arg(ctx, "pid"), out))
        return;
    if (cpu)
        out->event = VMPROFD_EVENT_CPU;
    else if (allocs)
        out->event = VMPROFD_EVENT_ALLOC;
    else
        parse_event(arg(ctx, "event"), out);
}
