/*
 * tests/fuzz/fuzz_serve_request.c — vmprofd serve's request decisions
 * (vmprofd/serve_request.c) on arbitrary requests: what libmicrohttpd
 * hands it after parsing (method, path, query arguments, Authorization)
 * can be any bytes a client sends.
 *
 * The input: the first byte chooses the token the server requires (odd:
 * "tok", even: none) and the maximum seconds (1 + byte % 64 ... 300);
 * then lines (split at '\n', NUL bytes kept within them as the end of
 * that string, as C strings from libmicrohttpd end there): the method,
 * the path, the Authorization header (an empty line: none), then query
 * arguments "key=value" (no '=': the value is "").
 *
 * Checked: the answer is one of the statuses the server gives, a refusal
 * has a one-line printable reason, a profile asked for is within the
 * limits (seconds above 0 and at most the maximum, a pid in range), and a
 * request without the token never gets past 401.
 */
#include "tests/fuzz/fuzz.h"
#include "vmprofd/serve_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_ARGS 16

typedef struct Args {
    char *key[FUZZ_MAX_ARGS], *value[FUZZ_MAX_ARGS];
    int n;
} Args;

static const char *lookup(void *ctx, const char *key)
{
    const Args *a = ctx;
    for (int i = 0; i < a->n; i++) /* the first, as libmicrohttpd answers */
        if (strcmp(a->key[i], key) == 0)
            return a->value[i];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *token = (data[0] & 1) ? "tok" : NULL;
    double max = (data[0] & 2) ? 300.0 : 1.0 + (double)(data[0] % 64);
    char *copy = malloc(size); /* data + 1 .. end, NUL-terminated */
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';
    char *lines[3 + FUZZ_MAX_ARGS] = {0};
    int nlines = 0;
    char *p = copy, *end = copy + size - 1;
    while (nlines < 3 + FUZZ_MAX_ARGS) {
        lines[nlines++] = p;
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    const char *method = nlines > 0 ? lines[0] : "";
    const char *path = nlines > 1 ? lines[1] : "";
    const char *auth = nlines > 2 && lines[2][0] ? lines[2] : NULL;
    Args args = {.n = 0};
    for (int i = 3; i < nlines; i++) {
        char *eq = strchr(lines[i], '=');
        args.key[args.n] = lines[i];
        args.value[args.n] = eq ? eq + 1 : lines[i] + strlen(lines[i]);
        if (eq)
            *eq = '\0';
        args.n++;
    }
    ServeRequest r;
    vmprofd_serve_decide(method, path, lookup, &args, token, auth, max, &r);
    switch (r.status) {
    case 200: case 400: case 401: case 404: case 405: break;
    default: abort();
    }
    if (r.kind == SERVE_ERROR) {
        if (r.status == 200 || r.reason[0] == '\0')
            abort();
        for (const char *c = r.reason; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                abort(); /* one printable line */
    } else if (r.status != 200) {
        abort();
    }
    if (r.kind == SERVE_PROFILE && (!(r.seconds > 0) || r.seconds > max || r.pid < 0 || r.pid > 4194304))
        abort();
    if (token && r.status != 401 && !vmprofd_serve_token_ok(token, auth))
        abort();
    free(copy);
    return 0;
}
