/*
 * vmprofd/serve.h — `vmprofd serve`: Go's net/http/pprof paths over HTTP
 * for every stvm of the host (docs/serve.md), so that go tool pprof,
 * Parca and Grafana Alloy/Pyroscope can scrape it.
 *
 *   main thread      parses the options, opens the listening socket,
 *                    starts libmicrohttpd, then waits for SIGINT/SIGTERM/
 *                    SIGHUP (blocked in every thread, taken by sigwait)
 *   a thread per     libmicrohttpd's: parses HTTP; vmprofd/serve_request.c
 *   connection       decides the answer; a profile is made in that thread
 *                    (vmprofd/engine.h: one thread more per process when
 *                    every stvm is profiled at once)
 * At the signal the running profiles stop early and answer what they
 * have, the server closes its connections and exits 0.
 *
 * Who may call: vmprofd/vmprofd_main.c.
 */
#ifndef VMPROFD_SERVE_H
#define VMPROFD_SERVE_H

#include <stdio.h>

/* argv[0] is "serve". Answers the exit status. */
int vmprofd_serve_main(int argc, char **argv);
void vmprofd_serve_usage(FILE *out);

#endif
