/*
 * tests/alloc/alloc_reader.c — reads a real stvm's allocation sample log
 * (proto/allocabi.h) as a profiler would, and checks it.
 *
 *   alloc_reader INTERVAL CLASS:SHARE[,CLASS:SHARE…] STVM [stvm args…]
 *
 * Starts STVM with STVM_ALLOC_SAMPLE=INTERVAL and STVM_ALLOC_SAMPLE_LIVE=1,
 * maps /dev/shm/stvm-PID as soon as it exists, follows the ring (the
 * reader's four steps of proto/export.h) until the VM has exited (the
 * mapping outlives the unlink), and checks:
 *   - every record's checksum and seq (0, 1, 2, … without gaps: nothing lost);
 *   - START first, with the interval asked; STOP (exit) after every SAMPLE;
 *     a LIVE answering PROF_ALLOC_LIVE_AT_EXIT last, whose seqs are
 *     SAMPLE records' seqs;
 *   - the weights put every sample's last point inside its object: the
 *     running sum of weights from START's counter lies in [counter - size,
 *     counter) of each SAMPLE (so they add up to the growth up to the last
 *     point), and the number of samples is within 25% of that
 *     growth / INTERVAL;
 *   - with CLASS:SHARE:live, every sample of CLASS is in the LIVE answer;
 *     with :dead, none is;
 *   - each CLASS has its SHARE (- : any) of the listed classes' weight (± 0.06), the
 *     listed classes together at least 90% of all weight, every sample of
 *     one class the same size;
 *   - 90% of those samples have a Smalltalk stack (mode INTERP, MACHINE or
 *     CSTATE, with at least one caller in st[]).
 * Prints a summary; exits 1 with the reason on the first failed check.
 * ALLOC_READER_DUMP=1 also prints the first three listed samples' native
 * frames (leaf, root) for a look with addr2line.
 */
#define _GNU_SOURCE
#include "proto/allocabi.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Noreturn void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("alloc_reader: FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

#define MAX_CLASSES 8
static struct {
    char name[64];
    double share;
    uint64_t weight, size;
    int live;          /* 1: every sample alive at exit, 0: none, -1: not checked */
    uint64_t samples, alive;
} want[MAX_CLASSES];
static int nwant;

typedef struct Totals {
    uint64_t next_seq, records, samples, weight, start_bytes, last_bytes, interval;
    uint64_t listed, stacked, listed_samples;
    bool started, stopped, live_done;
    uint64_t *sample_seqs;
    int *sample_class;    /* index into want[], -1: not listed */
    size_t nsample_seqs, cap;
    uint64_t live_seqs, live_total;
} Totals;

/* The index of the SAMPLE with seq in t->sample_seqs, or -1. */
static long sample_index(const Totals *t, uint64_t seq)
{
    size_t lo = 0, hi = t->nsample_seqs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->sample_seqs[mid] < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->nsample_seqs && t->sample_seqs[lo] == seq ? (long)lo : -1;
}

static void record(Totals *t, const uint8_t *rec, uint64_t ask)
{
    ProfCodeRecord h;
    memcpy(&h, rec, sizeof h);
    if (h.checksum != prof_code_log_checksum(rec + 8, h.size - 8)) fail("record %llu: bad checksum", (unsigned long long)h.seq);
    if (h.seq != t->next_seq) fail("seq %llu after %llu: records lost", (unsigned long long)h.seq, (unsigned long long)t->next_seq);
    t->next_seq++;
    t->records++;
    const uint8_t *body = rec + sizeof h;
    switch (h.type) {
    case PROF_ALLOC_REC_START: {
        ProfAllocStart s;
        memcpy(&s, body, sizeof s);
        if (t->started) fail("a second START");
        if (s.interval != ask) fail("START interval %llu, asked %llu", (unsigned long long)s.interval, (unsigned long long)ask);
        t->started = true;
        t->start_bytes = t->last_bytes = s.bytes_allocated;
        break;
    }
    case PROF_ALLOC_REC_SAMPLE: {
        ProfAllocSample s;
        memcpy(&s, body, sizeof s);
        if (!t->started || t->stopped) fail("SAMPLE outside START..STOP");
        if (s.raw_offset + s.raw_size != h.size || s.raw_size != sizeof(ProfRawStack) || s.raw_offset % 8)
            fail("SAMPLE %llu: raw stack at %u (+%u) in %u bytes", (unsigned long long)h.seq, s.raw_offset, s.raw_size, h.size);
        const char *name = (const char *)body + sizeof s;
        if (name[s.name_len] != 0) fail("SAMPLE %llu: class name not terminated", (unsigned long long)h.seq);
        uint64_t point = t->start_bytes + t->weight + s.weight; /* this sample's last point */
        if (s.weight == 0 || point >= s.bytes_allocated || point < s.bytes_allocated - s.size)
            fail("SAMPLE %llu: weight %llu puts its point at %llu, outside the object [%llu, %llu)",
                 (unsigned long long)h.seq, (unsigned long long)s.weight, (unsigned long long)point,
                 (unsigned long long)(s.bytes_allocated - s.size), (unsigned long long)s.bytes_allocated);
        t->last_bytes = s.bytes_allocated;
        t->weight += s.weight;
        t->samples++;
        int listed = -1;
        for (int i = 0; i < nwant; i++) {
            if (strcmp(name, want[i].name)) continue;
            listed = i;
            want[i].samples++;
            if (want[i].size && s.size != want[i].size)
                fail("SAMPLE %llu: %s of %llu bytes, before %llu", (unsigned long long)h.seq, name,
                     (unsigned long long)s.size, (unsigned long long)want[i].size);
            want[i].size = s.size;
            want[i].weight += s.weight;
            t->listed += s.weight;
            ProfRawStack raw;
            memcpy(&raw, rec + s.raw_offset, sizeof raw);
            if ((raw.mode == PROF_RAW_INTERP || raw.mode == PROF_RAW_MACHINE || raw.mode == PROF_RAW_CSTATE) && raw.nst >= 1)
                t->stacked++;
            t->listed_samples++;
            if (getenv("ALLOC_READER_DUMP") && t->listed_samples <= 3) {
                printf("sample %llu mode %u nleaf %u nst %u nroot %u leaf", (unsigned long long)h.seq, raw.mode, raw.nleaf,
                       raw.nst, raw.nroot);
                for (unsigned k = 0; k < raw.nleaf; k++) printf(" %llx", (unsigned long long)raw.leaf[k]);
                printf(" root");
                for (unsigned k = 0; k < raw.nroot; k++) printf(" %llx", (unsigned long long)raw.root[k]);
                printf("\n");
            }
        }
        if (t->nsample_seqs == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 1024;
            t->sample_seqs = realloc(t->sample_seqs, t->cap * sizeof *t->sample_seqs);
            t->sample_class = realloc(t->sample_class, t->cap * sizeof *t->sample_class);
            if (!t->sample_seqs || !t->sample_class) fail("out of memory");
        }
        t->sample_class[t->nsample_seqs] = listed;
        t->sample_seqs[t->nsample_seqs++] = h.seq;
        break;
    }
    case PROF_ALLOC_REC_STOP: {
        ProfAllocStop s;
        memcpy(&s, body, sizeof s);
        if (s.why != PROF_ALLOC_STOP_EXIT) fail("STOP why %u, not exit", s.why);
        t->stopped = true;
        break;
    }
    case PROF_ALLOC_REC_LIVE: {
        ProfAllocLive l;
        memcpy(&l, body, sizeof l);
        if (!t->stopped || l.answers != PROF_ALLOC_LIVE_AT_EXIT) fail("LIVE before STOP or not at exit");
        if (h.size != sizeof h + sizeof l + 8 * l.count) fail("LIVE of %u bytes for %llu seqs", h.size, (unsigned long long)l.count);
        for (uint64_t i = 0; i < l.count; i++) {
            uint64_t seq;
            memcpy(&seq, body + sizeof l + 8 * i, 8);
            long k = sample_index(t, seq);
            if (k < 0) fail("LIVE names seq %llu, no SAMPLE", (unsigned long long)seq);
            if (t->sample_class[k] >= 0) want[t->sample_class[k]].alive++;
        }
        t->live_seqs += l.count;
        t->live_total = l.total;
        if (!(h.flags & PROF_ALLOC_REC_F_MORE)) t->live_done = true;
        break;
    }
    default:
        fail("record %llu of type %u", (unsigned long long)h.seq, h.type);
    }
}

/* Everything new in the ring: the reader's steps of proto/export.h. */
static void drain(Totals *t, volatile ProfAllocLogControl *c, const uint8_t *ring, uint64_t *cursor, uint64_t ask)
{
    static uint8_t buf[1 << 16];
    uint64_t e = __atomic_load_n(&c->write_end, __ATOMIC_ACQUIRE);
    while (*cursor < e) {
        uint64_t size_at = *cursor & (c->ring_size - 1);
        uint32_t size;
        memcpy(&size, ring + size_at, 4);
        if (size < sizeof(ProfCodeRecord) || size > sizeof buf || size % 8) fail("record size %u at %llu", size, (unsigned long long)*cursor);
        for (uint32_t i = 0; i < size; i++) buf[i] = ring[(*cursor + i) & (c->ring_size - 1)];
        uint64_t b = __atomic_load_n(&c->write_begin, __ATOMIC_ACQUIRE);
        if (b > c->ring_size && b - c->ring_size > *cursor) fail("the writer overtook the reader");
        record(t, buf, ask);
        *cursor += size;
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: alloc_reader INTERVAL CLASS:SHARE[,CLASS:SHARE…] STVM [args…]\n");
        return 2;
    }
    uint64_t ask = strtoull(argv[1], NULL, 10);
    for (const char *p = argv[2]; *p && nwant < MAX_CLASSES;) {
        const char *colon = strchr(p, ':');
        if (!colon || colon - p >= (long)sizeof want[0].name) fail("bad CLASS:SHARE list '%s'", argv[2]);
        memcpy(want[nwant].name, p, (size_t)(colon - p));
        char *end;
        want[nwant].share = strtod(colon + 1, &end);
        if (end == colon + 1 && *end == '-') want[nwant].share = NAN, end++; /* not checked */
        want[nwant].live = -1;
        if (!strncmp(end, ":live", 5)) want[nwant].live = 1, end += 5;
        else if (!strncmp(end, ":dead", 5)) want[nwant].live = 0, end += 5;
        nwant++;
        p = *end == ',' ? end + 1 : end;
    }
    argv++; /* STVM is argv[2] from here */
    char ask_text[32];
    snprintf(ask_text, sizeof ask_text, "%llu", (unsigned long long)ask);
    setenv(PROF_ALLOC_SAMPLE_ENV, ask_text, 1);
    setenv(PROF_ALLOC_SAMPLE_LIVE_ENV, "1", 1);
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        execv(argv[2], argv + 2);
        _exit(127);
    }
    char path[64];
    snprintf(path, sizeof path, PROF_EXPORT_PATH_FMT, (int)pid);
    int fd = -1, status = 0;
    bool exited = false;
    for (int i = 0; i < 20000 && fd < 0; i++) { /* 20 s */
        fd = open(path, O_RDONLY);
        if (fd >= 0) break;
        if (waitpid(pid, &status, WNOHANG) == pid) fail("stvm exited before its segment appeared");
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (fd < 0) fail("no %s", path);
    struct stat st;
    const ProfExportHeader *hdr = NULL;
    for (int i = 0; i < 20000; i++) {
        if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof *hdr) {
            hdr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
            if (hdr == MAP_FAILED) fail("mmap: %s", strerror(errno));
            if (__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) == PROF_EXPORT_MAGIC) break;
            munmap((void *)hdr, (size_t)st.st_size);
            hdr = NULL;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (!hdr) fail("the segment never got its magic");
    if (hdr->version < PROF_EXPORT_VERSION_ALLOC || !hdr->alloc_log_offset ||
        hdr->alloc_log_offset + hdr->alloc_log_size > (uint64_t)st.st_size)
        fail("no allocation log (version %u)", hdr->version);
    volatile ProfAllocLogControl *c = (volatile ProfAllocLogControl *)((const uint8_t *)hdr + hdr->alloc_log_offset);
    if (c->magic != PROF_ALLOC_LOG_MAGIC || c->ring_offset + c->ring_size > hdr->alloc_log_size) fail("bad allocation log control");
    const uint8_t *ring = (const uint8_t *)c + c->ring_offset;
    Totals t = {0};
    uint64_t cursor = 0;
    while (!exited) {
        drain(&t, c, ring, &cursor, ask);
        if (waitpid(pid, &status, WNOHANG) == pid) exited = true;
        else nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    drain(&t, c, ring, &cursor, ask);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("stvm failed (status %d)", status);
    printf("records %llu, samples %llu, weight %llu, counter grew %llu, live %llu of %llu\n",
           (unsigned long long)t.records, (unsigned long long)t.samples, (unsigned long long)t.weight,
           (unsigned long long)(t.last_bytes - t.start_bytes), (unsigned long long)t.live_seqs,
           (unsigned long long)t.live_total);
    if (!t.started || !t.stopped || !t.live_done) fail("START %d, STOP %d, LIVE %d", t.started, t.stopped, t.live_done);
    if (t.live_seqs != t.live_total) fail("LIVE: %llu seqs of %llu", (unsigned long long)t.live_seqs, (unsigned long long)t.live_total);
    if (t.weight > t.last_bytes - t.start_bytes) fail("the weights add up to more than the bytes allocated");
    double expect = (double)t.weight / (double)ask;
    if (t.samples < 0.75 * expect || t.samples > 1.25 * expect)
        fail("%llu samples for %.0f expected", (unsigned long long)t.samples, expect);
    if (t.listed < 0.9 * (double)t.weight)
        fail("the classes listed have only %.1f%% of the weight", 100 * (double)t.listed / (double)t.weight);
    for (int i = 0; i < nwant; i++) {
        double share = (double)want[i].weight / (double)t.listed;
        printf("%s: %.3f of the listed classes' weight (expected %.3f)\n", want[i].name, share, want[i].share);
        if (!isnan(want[i].share) && fabs(share - want[i].share) > 0.06) fail("%s has %.3f of the weight, not %.3f", want[i].name, share, want[i].share);
        printf("%s: %llu of %llu samples alive at exit\n", want[i].name, (unsigned long long)want[i].alive,
               (unsigned long long)want[i].samples);
        if (want[i].live == 1 && want[i].alive != want[i].samples) fail("%s: samples missing from LIVE", want[i].name);
        if (want[i].live == 0 && want[i].alive != 0) fail("%s: dead samples in LIVE", want[i].name);
    }
    if (t.stacked < 0.9 * (double)t.listed_samples)
        fail("only %llu of %llu samples have a Smalltalk stack", (unsigned long long)t.stacked,
             (unsigned long long)t.listed_samples);
    printf("ok: %llu of %llu samples with Smalltalk callers\n", (unsigned long long)t.stacked,
           (unsigned long long)t.listed_samples);
    return 0;
}
