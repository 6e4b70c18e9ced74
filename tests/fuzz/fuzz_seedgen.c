/*
 * tests/fuzz/fuzz_seedgen.c — writes seed inputs for the harnesses whose
 * input is a binary format: the code event log and export segments made
 * by the VM's own writer (profiler/codelog_writer.c), perf ring data areas and
 * Profile programs in the layouts the harnesses document.
 *
 *   fuzz_seedgen DIR      writes DIR/<harness>/seed-*
 *
 * The committed corpora (corpus/<harness>/) grew from these by fuzzing
 * and were minimised with libFuzzer's -merge=1; rerun this only to start
 * a corpus afresh.
 */
#include "profiler/codelog_writer.h"
#include "proto/export.h"
#include "proto/stackabi.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SEED_RING PROF_CODE_LOG_MIN_RING
#define SEED_ZONE 0x7f1200000000ull
#define SEED_SEPARATOR "\nPOLL!!\n" /* fuzz_codelog.c's */

static const char *seed_dir;

static void seed_write(const char *harness, const char *name, const void *bytes, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", seed_dir, harness);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed-%s", seed_dir, harness, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* Bytes up to the last one that is not zero (the harnesses read the rest
 * as zeros). */
static size_t seed_trim(const uint8_t *p, size_t len)
{
    while (len > 0 && p[len - 1] == 0)
        len--;
    return (len + 7) & ~(size_t)7;
}

static void seed_events(ProfCodeLog *log, uint64_t *t, int first, int count, bool moves)
{
    static const uint32_t map[] = {64, 2, 100, 6, 140, 9};
    static const uint32_t lines[] = {0, 3, 4, 4, 8, 5};
    static const uint32_t unwind[] = {0, PROF_UNWIND_FRAMELESS, 1, PROF_UNWIND_PUSHED_BP, 4, PROF_UNWIND_FRAME};
    for (int i = first; i < first + count; i++, *t += 1000) {
        char name[64];
        snprintf(name, sizeof name, i % 3 ? "Seed>>method%d" : "[] in Seed>>block%d", i);
        uint64_t start = SEED_ZONE + (uint64_t)(i % 16) * 256;
        if (i % 5 == 4) {
            ProfCodeLoad b = {.kind = PROF_CODE_BYTECODES, .name = name, .start = 0x600000 + (uint64_t)i * 64,
                              .size = 12, .code_start = 0x600000 + (uint64_t)i * 64, .source = "Seed.som",
                              .lines = lines, .line_count = 3, .bytecode_size = 12};
            prof_codelog_load(log, *t, &b);
            continue;
        }
        /* every other method with a method inlined into it, and one inlined
         * into that (export version 6's inline section) */
        static const ProfInlineScope scopes[] = {
            {.name = "Seed>>inlined", .source = "Seed.som", .lines = lines, .line_count = 3, .bytecode_size = 10,
             .call_bcpc = 2, .parent = -1},
            {.name = "Seed>>deeper", .source = "", .bytecode_size = 4, .call_bcpc = 6, .parent = 0},
        };
        static const ProfInlineRange ranges[] = {{64, 100, 0}, {100, 120, 1}, {120, 140, 0}};
        ProfCodeLoad e = {.kind = PROF_CODE_METHOD, .name = name, .start = start, .size = 256,
                          .code_start = start + 48, .map = map, .map_count = 3, .source = "Seed.som",
                          .lines = lines, .line_count = 3, .bytecode_size = 12, .unwind = unwind,
                          .unwind_count = 3};
        if (i % 2) {
            e.scopes = scopes;
            e.scope_count = 2;
            e.ranges = ranges;
            e.range_count = 3;
        }
        prof_codelog_load(log, *t, &e);
        if (moves && i % 4 == 1)
            prof_codelog_move(log, *t + 500, start, start + 16 * 256, 256);
        if (moves && i % 4 == 2)
            prof_codelog_free(log, *t + 600, start, 256);
    }
}

/* The code log harness: one to three snapshots of a region as the writer
 * goes on. */
static void seed_codelog(void)
{
    size_t region = prof_codelog_region_bytes(SEED_RING);
    uint8_t *buf = aligned_alloc(64, region);
    uint8_t *out = malloc(4 * region + 64);
    char err[256];
    for (int variant = 0; variant < 3; variant++) {
        ProfCodeLog log;
        if (!prof_codelog_init(&log, buf, region, SEED_RING, SEED_ZONE, SEED_ZONE + 32 * 256, err, sizeof err)) {
            fprintf(stderr, "fuzz_seedgen: %s\n", err);
            exit(1);
        }
        uint64_t t = 1000;
        prof_codelog_checkpoint_begin(&log, t);
        prof_codelog_checkpoint_end(&log, t);
        size_t len = 0;
        int polls = variant + 1;
        for (int poll = 0; poll < polls; poll++) {
            seed_events(&log, &t, poll * 6, 6, variant > 0);
            if (variant == 2 && poll == 1)
                prof_codelog_checkpoint(&log, t);
            if (poll > 0) {
                memcpy(out + len, SEED_SEPARATOR, sizeof SEED_SEPARATOR - 1);
                len += sizeof SEED_SEPARATOR - 1;
            }
            size_t n = seed_trim(buf, region);
            memcpy(out + len, buf, n);
            len += n;
        }
        prof_codelog_release(&log);
        char name[32];
        snprintf(name, sizeof name, "polls%d", polls);
        seed_write("codelog", name, out, len);
    }
    free(buf);
    free(out);
}

/* The export segment harness: versions 1, 2 and 3 (walk facts). */
static void seed_export(void)
{
    size_t log_off = 4096, region = prof_codelog_region_bytes(SEED_RING);
    size_t total = log_off + region;
    uint8_t *seg = aligned_alloc(64, total);
    char err[256];
    for (int version = 1; version <= 3; version++) {
        memset(seg, 0, total);
        ProfExportHeader *h = (ProfExportHeader *)seg;
        h->magic = PROF_EXPORT_MAGIC;
        h->version = (uint32_t)version;
        h->header_size = version < 3 ? PROF_EXPORT_HEADER_V2_SIZE : sizeof *h;
        h->segment_size = version == 1 ? log_off : total;
        h->pid = 4242;
        h->vm_tid = 4242;
        h->counters_offset = (sizeof *h + 63) & ~63ull;
        h->counters_size = sizeof(ProfCounters);
        h->code_zone_start = SEED_ZONE;
        h->code_zone_end = SEED_ZONE + 32 * 256;
        snprintf(h->vm_path, sizeof h->vm_path, "/usr/bin/stvm");
        ProfCounters *c = (ProfCounters *)(seg + h->counters_offset);
        c->seq = 2;
        c->eden_bytes = 1234567;
        c->stack_pages = 7;
        if (version == 3) {
            h->walk_offset = h->counters_offset + ((sizeof(ProfCounters) + 63) & ~63ull);
            h->walk_size = sizeof(ProfWalkFacts);
            ProfWalkFacts *w = (ProfWalkFacts *)(seg + h->walk_offset);
            *w = (ProfWalkFacts){.size = sizeof *w, .state_addr = 0x555500001000, .interp_start = 0x555500400000,
                                 .interp_end = 0x555500404000, .zone_start = SEED_ZONE,
                                 .zone_end = SEED_ZONE + 32 * 256, .stack_base = 0x7f0000000000,
                                 .page_bytes = 4096, .npages = 8, .fp_reg = 14, .ip_reg = 15};
        }
        if (version >= 2) {
            h->code_log_offset = log_off;
            h->code_log_size = region;
            ProfCodeLog log;
            if (!prof_codelog_init(&log, seg + log_off, region, SEED_RING, SEED_ZONE, SEED_ZONE + 32 * 256, err,
                                   sizeof err)) {
                fprintf(stderr, "fuzz_seedgen: %s\n", err);
                exit(1);
            }
            uint64_t t = 1000;
            prof_codelog_checkpoint_begin(&log, t);
            prof_codelog_checkpoint_end(&log, t);
            seed_events(&log, &t, 0, 8, true);
            prof_codelog_release(&log);
        }
        char name[32];
        snprintf(name, sizeof name, "v%d", version);
        seed_write("export_segment", name, seg, seed_trim(seg, total));
    }
    free(seg);
}

/* -- perf ring ----------------------------------------------------------- */

typedef struct SeedBuf {
    uint8_t b[8192];
    size_t len;
} SeedBuf;

static void put(SeedBuf *s, const void *p, size_t n)
{
    memcpy(s->b + s->len, p, n);
    s->len += n;
}

static void put64(SeedBuf *s, uint64_t v)
{
    put(s, &v, 8);
}

static void seed_sample(SeedBuf *s, bool regs, uint64_t nregs, uint64_t stack)
{
    struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER};
    h.size = (uint16_t)(8 + 24 + (regs ? 8 + 8 * nregs : 0) + (stack ? 8 + stack + 8 : 0));
    put(s, &h, sizeof h);
    put64(s, 0x555500400123);
    uint32_t ids[2] = {4242, 4243};
    put(s, ids, 8);
    put64(s, 123456789);
    if (regs) {
        put64(s, PERF_SAMPLE_REGS_ABI_64);
        for (uint64_t i = 0; i < nregs; i++)
            put64(s, 0x7ffd00000000 + i * 8);
    }
    if (stack) {
        put64(s, stack);
        for (uint64_t i = 0; i < stack; i++)
            s->b[s->len++] = (uint8_t)i;
        put64(s, stack / 2);
    }
}

static void seed_perf(void)
{
    for (int variant = 0; variant < 3; variant++) {
        SeedBuf s = {.len = 0};
        uint64_t mask = variant == 2 ? 0x1ff : 0; /* 0: vmprofd's mask */
        uint32_t flags = variant == 0 ? 0 : 3;
        put64(&s, mask);
        put(&s, &flags, 4);
        uint32_t span = 0;
        put(&s, &span, 4);
        uint64_t tail = variant == 1 ? 1024 - 16 : 0; /* variant 1 wraps its first record */
        put64(&s, tail);
        size_t data_at = s.len;
        seed_sample(&s, flags & 1, variant == 2 ? 9 : 3, flags & 2 ? 64 : 0);
        struct perf_event_header lost = {.type = PERF_RECORD_LOST, .size = 24};
        put(&s, &lost, sizeof lost);
        put64(&s, 1);
        put64(&s, 17);
        struct perf_event_header thr = {.type = PERF_RECORD_THROTTLE, .size = 24};
        put(&s, &thr, sizeof thr);
        put64(&s, 0);
        put64(&s, 0);
        span = (uint32_t)(s.len - data_at);
        memcpy(s.b + 12, &span, 4);
        if (variant == 1) {
            /* the records start 16 bytes before the end of a 1 KiB area */
            uint8_t area[1024] = {0};
            size_t n = s.len - data_at;
            memcpy(area + 1024 - 16, s.b + data_at, 16);
            memcpy(area, s.b + data_at + 16, n - 16);
            s.len = data_at;
            put(&s, area, sizeof area);
        }
        char name[32];
        snprintf(name, sizeof name, "ring%d", variant);
        seed_write("perf_ring", name, s.b, s.len);
    }
}

/* -- Profile programs (fuzz_profile_writers.c) ---------------------------- */

static void put_str(SeedBuf *s, const char *str)
{
    uint8_t n = (uint8_t)strlen(str);
    put(s, &n, 1);
    put(s, str, n);
}

static void put32(SeedBuf *s, uint32_t v)
{
    put(s, &v, 4);
}

static void seed_profile(void)
{
    SeedBuf s = {.len = 0};
    uint8_t op;
    op = 5; /* header */
    put(&s, &op, 1);
    put_str(&s, "/usr/bin/stvm");
    put_str(&s, "perf_event (cpu-clock)");
    put_str(&s, "asked for");
    double secs = 2.5, hz = 1400;
    put(&s, &secs, 8);
    put(&s, &hz, 8);
    put64(&s, 3);
    put32(&s, 1700000000);
    op = 0;
    put(&s, &op, 1);
    op = 0; /* mapping */
    put(&s, &op, 1);
    put64(&s, 0x555500000000);
    put64(&s, 0x555500800000);
    put64(&s, 0);
    put_str(&s, "/usr/bin/stvm");
    put_str(&s, "0123abcd");
    const char *names[] = {"Integer>>benchFib", "interpret", "[libc.so.6]"};
    for (int i = 0; i < 3; i++) {
        op = 1; /* function */
        put(&s, &op, 1);
        put_str(&s, names[i]);
        put_str(&s, i == 0 ? "Fib.som" : "vm/interp/interp.c");
        put32(&s, 10 + (uint32_t)i);
        uint8_t region = (uint8_t)i;
        put(&s, &region, 1);
        put64(&s, 0x555500400000 + 0x1000 * (uint64_t)i);
        put64(&s, 0x100);
        uint8_t mapping = i == 1 ? 0 : 0xff;
        put(&s, &mapping, 1);
        uint8_t nmap = i == 0 ? 3 : 0;
        put(&s, &nmap, 1);
        for (uint32_t k = 0; k < nmap; k++) {
            put32(&s, 16 * k);
            put32(&s, 2 * k);
        }
        put32(&s, 8);
        uint8_t nlines = i == 0 ? 2 : 0;
        put(&s, &nlines, 1);
        for (uint32_t k = 0; k < nlines; k++) {
            put32(&s, 4 * k);
            put32(&s, 11 + k);
        }
    }
    for (int i = 0; i < 6; i++) {
        op = 2; /* location */
        put(&s, &op, 1);
        put32(&s, (uint32_t)(i % 3));
        put64(&s, 0x555500400000 + 0x1000 * (uint64_t)(i % 3) + 8 * (uint64_t)i);
        put32(&s, (uint32_t)i);
    }
    for (int i = 0; i < 12; i++) {
        op = 3; /* sample */
        put(&s, &op, 1);
        put64(&s, 1000000 + 1000 * (uint64_t)i);
        put32(&s, 4242);
        uint8_t n = (uint8_t)(1 + i % 3);
        put(&s, &n, 1);
        for (int k = 0; k < n; k++) {
            uint16_t loc = (uint16_t)((i + k) % 6);
            put(&s, &loc, 2);
        }
    }
    op = 4;
    put(&s, &op, 1);
    put_str(&s, "target exited");
    uint8_t options = 1 | (2 << 1) | 32;
    put(&s, &options, 1);
    seed_write("profile_writers", "small", s.b, s.len);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seedgen DIR\n");
        return 2;
    }
    seed_dir = argv[1];
    mkdir(seed_dir, 0755);
    seed_codelog();
    seed_export();
    seed_perf();
    seed_profile();
    return 0;
}
