/*
 * vmprofd/sample_bpf.c — loading and running the eBPF stack walker. See
 * sample_bpf.h.
 */
#include "vmprofd/sample_bpf.h"

#if VMPROFD_HAVE_BPF

#include "vmprofd/bpf/config.h"
#include "stackwalk.skel.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct SampleBpf {
    struct stackwalk *skel;
    struct ring_buffer *ring;
    struct bpf_link **links;
    size_t nlinks, caplinks;
    void (*fn)(void *ctx, const ProfRawStack *r);
    void *ctx;
    int delivered;
};

/* libbpf's messages go nowhere by default: the verifier's log would bury
 * vmprofd's own reason (set VMPROFD_BPF_DEBUG=1 to see it). */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    if (getenv("VMPROFD_BPF_DEBUG"))
        return vfprintf(stderr, fmt, ap);
    return 0;
}

static void reason(int err, const char *what, char *why, size_t whylen)
{
    int e = err < 0 ? -err : err;
    if (e == EACCES && geteuid() == 0)
        snprintf(why, whylen, "%s: the kernel's verifier rejected it (VMPROFD_BPF_DEBUG=1 shows its log)", what);
    else if (e == EPERM || e == EACCES)
        snprintf(why, whylen,
                 "%s: %s (loading BPF needs root, or CAP_BPF and CAP_PERFMON: sudo setcap "
                 "cap_bpf,cap_perfmon+ep vmprofd)", what, strerror(e));
    else if (e == EMFILE || e == ENFILE)
        snprintf(why, whylen, "%s: %s (raise the limit: ulimit -n)", what, strerror(e));
    else if (e == ENOSYS || e == EOPNOTSUPP)
        snprintf(why, whylen, "%s: %s (the kernel lacks BPF perf_event programs: Linux >= 5.17 with BPF)", what,
                 strerror(e));
    else
        snprintf(why, whylen, "%s: %s (VMPROFD_BPF_DEBUG=1 shows libbpf's log)", what, strerror(e));
}

/* How many descriptors the stack walker's load and ring take (its BTF, three
 * maps, the program, the ring's epoll; counted with ulimit -n at the edge). */
#define BPF_LOAD_FDS 6

/* Whether fewer than n more descriptors can be opened now. libbpf answers
 * a map it could not create for want of descriptors as the program's
 * "Invalid argument" (it drops the map and poisons the program's loads of
 * it); once it has closed what it opened, this asks the kernel directly. */
static bool short_of_fds(int n)
{
    int fds[BPF_LOAD_FDS], got = 0;
    while (got < n && got < BPF_LOAD_FDS && (fds[got] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        got++;
    int e = errno;
    for (int i = 0; i < got; i++)
        close(fds[i]);
    return got < n && (e == EMFILE || e == ENFILE);
}

static int on_record(void *ctx, void *data, size_t size)
{
    SampleBpf *b = ctx;
    if (size < sizeof(ProfRawStack))
        return 0; /* not ours: never trusted */
    ProfRawStack r;
    memcpy(&r, data, sizeof r);
    b->fn(b->ctx, &r);
    b->delivered++;
    return 0;
}

SampleBpf *vmprofd_bpf_open(pid_t pid, char *why, size_t whylen)
{
    libbpf_set_print(quiet);
    SampleBpf *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    b->skel = stackwalk__open();
    if (!b->skel) {
        reason(errno, "cannot open the eBPF stack walker", why, whylen);
        free(b);
        return NULL;
    }
    b->skel->bss->walk_config.tgid = (prof_u32)pid;
    struct stat ns;
    if (stat("/proc/self/ns/pid", &ns) == 0) { /* else the kernel's pids: right outside containers */
        b->skel->bss->walk_config.pidns_dev = (prof_u64)ns.st_dev;
        b->skel->bss->walk_config.pidns_ino = (prof_u64)ns.st_ino;
    }
    int err = stackwalk__load(b->skel);
    if (err) {
        if (err != -EMFILE && err != -ENFILE && short_of_fds(BPF_LOAD_FDS))
            err = -EMFILE;
        reason(err, "the kernel refused the eBPF stack walker", why, whylen);
        stackwalk__destroy(b->skel);
        free(b);
        return NULL;
    }
    /* now, not at the first drain: made there, a failure (an epoll fd
     * over the limit) lost every sample without a word */
    b->ring = ring_buffer__new(bpf_map__fd(b->skel->maps.records), on_record, b, NULL);
    if (!b->ring) {
        reason(errno, "cannot read the eBPF stack walker's ring", why, whylen);
        stackwalk__destroy(b->skel);
        free(b);
        return NULL;
    }
    return b;
}

void vmprofd_bpf_set_facts(SampleBpf *b, const ProfWalkFacts *f)
{
    /* size last: the program reads the facts only once it is set */
    ProfWalkFacts *d = &b->skel->bss->walk_config.facts;
    ProfWalkFacts c = *f;
    uint32_t size = c.size;
    c.size = 0;
    *d = c;
    __atomic_store_n(&d->size, size, __ATOMIC_RELEASE);
}

bool vmprofd_bpf_attach(SampleBpf *b, int perf_fd, char *why, size_t whylen)
{
    if (b->nlinks == b->caplinks) {
        size_t cap = b->caplinks ? 2 * b->caplinks : 8;
        struct bpf_link **l = realloc(b->links, cap * sizeof *l);
        if (!l) {
            snprintf(why, whylen, "out of memory");
            return false;
        }
        b->links = l;
        b->caplinks = cap;
    }
    struct bpf_link *link = bpf_program__attach_perf_event(b->skel->progs.vmprofd_stackwalk, perf_fd);
    if (!link) {
        reason(errno, "cannot attach the eBPF stack walker to a perf event", why, whylen);
        return false;
    }
    b->links[b->nlinks++] = link;
    return true;
}

int vmprofd_bpf_fd(SampleBpf *b) { return bpf_map__fd(b->skel->maps.records); }

int vmprofd_bpf_drain(SampleBpf *b, void (*fn)(void *ctx, const ProfRawStack *r), void *ctx)
{
    b->fn = fn;
    b->ctx = ctx;
    b->delivered = 0;
    ring_buffer__consume(b->ring);
    return b->delivered;
}

uint64_t vmprofd_bpf_dropped(SampleBpf *b) { return __atomic_load_n(&b->skel->bss->dropped, __ATOMIC_RELAXED); }

void vmprofd_bpf_close(SampleBpf *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nlinks; i++)
        bpf_link__destroy(b->links[i]);
    free(b->links);
    if (b->ring)
        ring_buffer__free(b->ring);
    stackwalk__destroy(b->skel);
    free(b);
}

#else /* built without clang's BPF target, bpftool or libbpf */

SampleBpf *vmprofd_bpf_open(pid_t pid, char *why, size_t whylen)
{
    (void)pid;
    snprintf(why, whylen, "this vmprofd was built without the eBPF stack walker (clang, bpftool and libbpf-dev "
                          "were missing at build time: scripts/run-tests installs them)");
    return NULL;
}
void vmprofd_bpf_set_facts(SampleBpf *b, const ProfWalkFacts *f) { (void)b, (void)f; }
bool vmprofd_bpf_attach(SampleBpf *b, int perf_fd, char *why, size_t whylen)
{
    (void)b, (void)perf_fd, (void)why, (void)whylen;
    return false;
}
int vmprofd_bpf_fd(SampleBpf *b) { (void)b; return -1; }
int vmprofd_bpf_drain(SampleBpf *b, void (*fn)(void *ctx, const ProfRawStack *r), void *ctx)
{
    (void)b, (void)fn, (void)ctx;
    return 0;
}
uint64_t vmprofd_bpf_dropped(SampleBpf *b) { (void)b; return 0; }
void vmprofd_bpf_close(SampleBpf *b) { (void)b; }

#endif
