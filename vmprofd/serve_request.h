/*
 * vmprofd/serve_request.h — what `vmprofd serve` makes of one HTTP request:
 * its path, its query arguments and its Authorization header, decided
 * without any I/O, so that tests/fuzz/fuzz_serve_request.c can feed it
 * arbitrary bytes. libmicrohttpd parses the HTTP itself (vmprofd/serve.c);
 * this decides the answer.
 *
 *   /debug/pprof/ (and /debug/pprof)   the index of the VMs (HTML)
 *   /debug/pprof/profile               CPU profile, gzipped pprof
 *   /debug/pprof/allocs                allocation profile, gzipped pprof
 *   /vmprofd/report                    the VMProfiler text report
 *   /vmprofd/flamegraph                the SVG flame graph
 * Arguments: seconds=N (default 30, as Go's net/http/pprof; above 0 and at
 * most the server's maximum), pid=P (decimal; without it every stvm the
 * server may profile, merged), event=cpu|alloc|wall (report and
 * flamegraph only; profile is cpu, allocs alloc).
 *
 * Who may call: vmprofd/serve.c, tests/fuzz.
 */
#ifndef VMPROFD_SERVE_REQUEST_H
#define VMPROFD_SERVE_REQUEST_H

#include "vmprofd/options.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VMPROFD_SERVE_DEFAULT_SECONDS 30.0

typedef enum ServeKind {
    SERVE_ERROR,      /* answer status with reason */
    SERVE_INDEX,
    SERVE_PROFILE,    /* a profile rendered as format */
} ServeKind;

typedef struct ServeRequest {
    ServeKind kind;
    int status;          /* 200, or the error's: 400, 401, 404, 405 */
    char reason[256];    /* one line, for an error */
    VmprofdEvent event;
    VmprofdFormat format; /* PPROF, TEXT or FLAMEGRAPH */
    double seconds;
    pid_t pid;           /* 0: every stvm */
} ServeRequest;

/* A query argument by name, NULL when absent (libmicrohttpd's
 * MHD_lookup_connection_value, or the fuzz harness's). */
typedef const char *(*ServeArgFn)(void *ctx, const char *key);

/* method and path as received (path without the query); token: the
 * server's bearer token, NULL when none is required; authorization: the
 * request's Authorization header or NULL. max_seconds: the longest profile
 * the server makes. Fills out; never fails. */
void vmprofd_serve_decide(const char *method, const char *path, ServeArgFn arg, void *ctx, const char *token,
                          const char *authorization, double max_seconds, ServeRequest *out);

/* Whether authorization is "Bearer <token>", compared in time that does
 * not depend on where they differ. */
bool vmprofd_serve_token_ok(const char *token, const char *authorization);

#endif
