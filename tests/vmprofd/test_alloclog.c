/*
 * tests/vmprofd/test_alloclog.c — the allocation log reader
 * (report/alloclog_reader.h) and the allocation profile built from it
 * (report/allocprof.h, the text report and pprof's sample types), against a
 * log written here by a writer of the ABI (proto/allocabi.h: the ring
 * protocol of proto/export.h) in plain memory: samples of two classes 1:3,
 * LIVE answers in several records, a writer that laps the reader, damage.
 */
#include "proto/allocabi.h"
#include "proto/profile.pb-c.h"
#include "report/allocprof.h"
#include "report/alloclog_reader.h"
#include "report/report.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#define RING (64u << 10)

/* The region as the VM lays it out: control block, then the ring. */
typedef struct Region {
    _Alignas(64) ProfAllocLogControl ctl;
    uint8_t ring[RING];
} Region;

typedef struct Writer {
    Region *r;
    uint64_t end, seq;
    uint64_t bytes; /* the VM's counter */
} Writer;

static bool read_region(void *ctx, uint64_t offset, void *buf, size_t len)
{
    if (offset > sizeof(Region) || len > sizeof(Region) - offset)
        return false;
    memcpy(buf, (uint8_t *)ctx + offset, len);
    return true;
}

static Region *region_new(Writer *w)
{
    Region *r = calloc(1, sizeof *r);
    r->ctl.control_size = sizeof r->ctl;
    r->ctl.ring_offset = offsetof(Region, ring);
    r->ctl.ring_size = RING;
    r->ctl.magic = PROF_ALLOC_LOG_MAGIC;
    *w = (Writer){.r = r};
    return r;
}

/* The writer's three steps (proto/export.h). */
static void commit(Writer *w, uint8_t *rec, uint32_t size, uint16_t type, uint16_t flags)
{
    ProfCodeRecord h = {.size = size, .seq = w->seq++, .time_ns = 1000 + w->seq, .type = type, .flags = flags};
    memcpy(rec, &h, sizeof h);
    h.checksum = prof_code_log_checksum(rec + 8, size - 8);
    memcpy(rec, &h, sizeof h);
    w->r->ctl.write_begin = w->end + size;
    for (uint32_t i = 0; i < size; i++)
        w->r->ring[(w->end + i) & (RING - 1)] = rec[i];
    w->end += size;
    w->r->ctl.write_end = w->end;
    w->r->ctl.records = w->seq;
}

static void start(Writer *w, uint64_t interval)
{
    uint8_t rec[48] = {0};
    ProfAllocStart s = {.interval = interval, .bytes_allocated = w->bytes};
    memcpy(rec + 32, &s, sizeof s);
    commit(w, rec, sizeof rec, PROF_ALLOC_REC_START, 0);
}

static void stop(Writer *w)
{
    uint8_t rec[48] = {0};
    ProfAllocStop s = {.bytes_allocated = w->bytes, .why = PROF_ALLOC_STOP_CANCELLED};
    memcpy(rec + 32, &s, sizeof s);
    commit(w, rec, sizeof rec, PROF_ALLOC_REC_STOP, 0);
}

/* A sample standing for weight bytes (the counter grows by as much). */
static uint64_t sample(Writer *w, const char *cls, uint64_t weight, uint64_t size)
{
    static uint8_t rec[4096];
    memset(rec, 0, sizeof rec);
    w->bytes += weight;
    size_t name_len = strlen(cls);
    uint32_t raw_offset = (uint32_t)((32 + sizeof(ProfAllocSample) + name_len + 1 + 7) & ~7u);
    uint32_t total = (uint32_t)((raw_offset + sizeof(ProfRawStack) + 7) & ~7u);
    assert_true(total <= sizeof rec);
    ProfAllocSample s = {.weight = weight, .size = size, .bytes_allocated = w->bytes, .class_index = 7,
                         .name_len = (uint16_t)name_len, .raw_offset = raw_offset, .raw_size = sizeof(ProfRawStack)};
    memcpy(rec + 32, &s, sizeof s);
    memcpy(rec + 32 + sizeof s, cls, name_len);
    ProfRawStack raw = {.tid = 42, .mode = PROF_RAW_UNKNOWN};
    memcpy(rec + raw_offset, &raw, sizeof raw);
    uint64_t seq = w->seq;
    commit(w, rec, total, PROF_ALLOC_REC_SAMPLE, 0);
    return seq;
}

/* A LIVE answer naming seqs, in records of at most per seqs each. */
static void live(Writer *w, uint64_t answers, const uint64_t *seqs, size_t n, size_t per)
{
    size_t done = 0;
    do {
        size_t k = n - done < per ? n - done : per;
        uint8_t rec[32 + sizeof(ProfAllocLive) + 8 * 64] = {0};
        assert_true(k <= 64);
        ProfAllocLive l = {.answers = answers, .count = k, .total = n};
        memcpy(rec + 32, &l, sizeof l);
        memcpy(rec + 32 + sizeof l, seqs + done, 8 * k);
        done += k;
        commit(w, rec, (uint32_t)(32 + sizeof l + 8 * k), PROF_ALLOC_REC_LIVE, done < n ? PROF_ALLOC_REC_F_MORE : 0);
    } while (done < n);
}

static ReportAllocLog *reader(Region *r, bool from_start)
{
    static ReportAllocLog log;
    char err[256];
    assert_true(report_alloclog_open(&log, sizeof *r, read_region, r, from_start, err, sizeof err));
    return &log;
}

static uint64_t class_bytes(const ReportAllocLog *log, const char *cls)
{
    uint64_t b = 0;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log->names[log->v[i].name], cls) == 0)
            b += log->v[i].weight;
    return b;
}

/* -- Tests ---------------------------------------------------------------------- */

static void samples_of_two_classes_are_read_with_their_weights(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    w.bytes = 5000; /* allocated before sampling began: not counted */
    start(&w, 1024);
    for (int i = 0; i < 8; i++) {
        sample(&w, "One", 1000, 40);
        sample(&w, "Three", 3000, 40);
    }
    stop(&w);
    char warn[256];
    assert_int_equal(report_alloclog_poll(log, warn, sizeof warn), 18);
    assert_string_equal(warn, "");
    assert_int_equal(log->n, 16);
    assert_int_equal(log->interval, 1024);
    assert_int_equal(class_bytes(log, "One"), 8000);
    assert_int_equal(class_bytes(log, "Three"), 24000);
    assert_int_equal(report_alloclog_counted_bytes(log), 32000);
    assert_int_equal(report_alloc_estimated_bytes(log), 32000);
    assert_int_equal(log->stats.lost, 0);
    assert_int_equal(log->stop_why, PROF_ALLOC_STOP_CANCELLED);
    report_alloclog_close(log);
    free(r);
}

static void a_reader_that_joins_skips_the_samples_before_it(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    start(&w, 1024);
    sample(&w, "Old", 1000, 40);
    ReportAllocLog *log = reader(r, false);
    char warn[256];
    assert_int_equal(report_alloclog_poll(log, warn, sizeof warn), 0);
    sample(&w, "New", 2000, 40);
    assert_int_equal(report_alloclog_poll(log, warn, sizeof warn), 1);
    assert_int_equal(log->n, 1);
    assert_int_equal(class_bytes(log, "New"), 2000);
    assert_int_equal(log->stats.lost, 0); /* what came before was not ours */
    report_alloclog_close(log);
    free(r);
}

static void a_live_answer_in_several_records_marks_its_samples(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 1024);
    uint64_t seqs[12];
    for (int i = 0; i < 12; i++)
        seqs[i] = sample(&w, "Obj", 1000, 40);
    uint64_t alive[3] = {seqs[0], seqs[4], seqs[8]};
    live(&w, 1, alive, 3, 2); /* two records: F_MORE on the first */
    char warn[256];
    report_alloclog_poll(log, warn, sizeof warn);
    assert_string_equal(warn, "");
    assert_true(log->have_live);
    assert_int_equal(log->live_answers, 1);
    int n = 0;
    for (size_t i = 0; i < log->n; i++)
        n += log->v[i].live;
    assert_int_equal(n, 3);
    assert_true(log->v[4].live && !log->v[5].live);
    /* a newer answer replaces it */
    live(&w, 2, seqs + 1, 1, 8);
    report_alloclog_poll(log, warn, sizeof warn);
    assert_int_equal(log->live_answers, 2);
    assert_true(log->v[1].live && !log->v[0].live && !log->v[4].live);
    report_alloclog_close(log);
    free(r);
}

static void a_writer_that_laps_the_reader_is_counted_as_lost(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 1024);
    char warn[256];
    report_alloclog_poll(log, warn, sizeof warn);
    /* ~2.3 KB a sample: 100 of them are three and a half rings */
    for (int i = 0; i < 100; i++)
        sample(&w, "Obj", 1000, 40);
    report_alloclog_poll(log, warn, sizeof warn);
    assert_non_null(strstr(warn, "overwrote"));
    assert_int_equal(log->stats.overruns, 1);
    assert_int_equal(log->n, 0);
    /* the next record tells how many were missed */
    sample(&w, "Obj", 1000, 40);
    report_alloclog_poll(log, warn, sizeof warn);
    assert_int_equal(log->n, 1);
    assert_int_equal(log->stats.lost, 100);
    report_alloclog_close(log);
    free(r);
}

static void a_damaged_record_is_skipped_never_used(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 1024);
    uint64_t at = w.end;
    sample(&w, "Obj", 1000, 40);
    r->ring[(at + 40) & (RING - 1)] ^= 0x55; /* its weight: the checksum no longer matches */
    sample(&w, "Obj", 1000, 40);
    char warn[256];
    report_alloclog_poll(log, warn, sizeof warn);
    assert_non_null(strstr(warn, "checksum"));
    assert_int_equal(log->stats.bad_records, 1);
    assert_int_equal(log->n, 0); /* the rest of the chunk could not be trusted either */
    sample(&w, "Obj", 1000, 40);
    report_alloclog_poll(log, warn, sizeof warn);
    assert_int_equal(log->n, 1);
    assert_int_equal(log->stats.lost, 2); /* the damaged one and the one after it */
    report_alloclog_close(log);
    free(r);
}

static void a_sample_whose_name_overruns_it_is_refused(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 1024);
    /* a well-formed record (checksum right) whose body lies */
    uint8_t rec[128] = {0};
    ProfAllocSample s = {.weight = 1, .size = 8, .name_len = 200, .raw_offset = 80, .raw_size = sizeof(ProfRawStack)};
    memcpy(rec + 32, &s, sizeof s);
    commit(&w, rec, sizeof rec, PROF_ALLOC_REC_SAMPLE, 0);
    sample(&w, "Obj", 1000, 40);
    char warn[256];
    report_alloclog_poll(log, warn, sizeof warn);
    assert_non_null(strstr(warn, "class name"));
    assert_int_equal(log->stats.bad_records, 1);
    assert_int_equal(log->n, 1); /* the record after it is fine */
    report_alloclog_close(log);
    free(r);
}

static void a_control_block_that_lies_is_refused_at_open(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    r->ctl.ring_size = RING * 2; /* past the region */
    ReportAllocLog log;
    char err[256];
    assert_false(report_alloclog_open(&log, sizeof *r, read_region, r, true, err, sizeof err));
    assert_non_null(strstr(err, "does not fit"));
    r->ctl.ring_size = RING;
    r->ctl.magic = 0;
    assert_false(report_alloclog_open(&log, sizeof *r, read_region, r, true, err, sizeof err));
    free(r);
}

/* Bytes of a well-formed log changed at random (a fixed seed: the same
 * cases every run), read from the start each time: the reader warns or
 * not, never crashes, and never makes up samples: what it keeps is a
 * subset of what was written, with its true weights. */
static void random_damage_never_makes_up_samples(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    start(&w, 1024);
    for (int i = 0; i < 20; i++)
        sample(&w, i % 4 ? "Three" : "One", 1000 + (uint64_t)i, 40);
    uint64_t seqs[2] = {3, 5};
    live(&w, 1, seqs, 2, 1);
    stop(&w);
    Region *good = malloc(sizeof *good);
    memcpy(good, r, sizeof *r);
    uint32_t rng = 2463534242u;
    for (int round = 0; round < 3000; round++) {
        memcpy(r, good, sizeof *r);
        int flips = 1 + round % 4;
        for (int f = 0; f < flips; f++) {
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            size_t at = rng % (round % 5 == 0 ? sizeof r->ctl : sizeof *r);
            ((uint8_t *)r)[at] ^= (uint8_t)(1u << (rng >> 29));
        }
        ReportAllocLog log;
        char err[256], warn[256];
        if (!report_alloclog_open(&log, sizeof *r, read_region, r, true, err, sizeof err))
            continue;
        for (int poll = 0; poll < 3; poll++)
            report_alloclog_poll(&log, warn, sizeof warn);
        assert_true(log.n <= 20);
        for (size_t i = 0; i < log.n; i++) {
            assert_true(log.v[i].seq >= 1 && log.v[i].seq <= 20);
            assert_int_equal(log.v[i].weight, 1000 + log.v[i].seq - 1);
            assert_int_equal(log.v[i].size, 40);
        }
        report_alloclog_close(&log);
    }
    free(good);
    free(r);
}

/* -- The profile and its renderings ---------------------------------------------- */

static char *text_of(const Profile *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[128];
    assert_true(report_write_text(f, p, NULL, err, sizeof err));
    fclose(f);
    return buf;
}

static void the_report_shows_bytes_objects_and_shares_by_class(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 4096);
    uint64_t seqs[40];
    char warn[256];
    for (int i = 0; i < 10; i++) {
        seqs[4 * i] = sample(&w, "One", 4000, 40);
        for (int k = 1; k < 4; k++)
            seqs[4 * i + k] = sample(&w, "Three", 4000, 80);
        report_alloclog_poll(log, warn, sizeof warn); /* a ring holds ~27 samples */
        assert_string_equal(warn, "");
    }
    stop(&w);
    uint64_t alive[10];
    for (int i = 0; i < 10; i++)
        alive[i] = seqs[4 * i + 1]; /* one in four, all Threes */
    live(&w, PROF_ALLOC_LIVE_AT_EXIT, alive, 10, 64);
    report_alloclog_poll(log, warn, sizeof warn);
    Profile *p = report_profile_new();
    ReportHeader h = {.vm_path = "/x/stvm", .seconds = 1.0};
    report_profile_set_header(p, &h);
    report_alloc_build(p, log, true, 4096, NULL, NULL);
    char *t = text_of(p);
    /* 160,000 bytes: One 40,000 (1,000 objects of 40 bytes), Three 120,000 (1,500 of 80) */
    assert_non_null(strstr(t, "allocations sampled every 4,096 bytes on average; 40 samples"));
    assert_non_null(strstr(t, "160,000 bytes allocated (estimated from the samples), 2,500 objects; the VM counted "
                              "160,000 bytes while sampled (estimate +0.0%)"));
    assert_non_null(strstr(t, "75.00%    (75.00%)\tThree\t(120,000)\t(1,500)\t(75.00%)"));
    assert_non_null(strstr(t, "25.00%    (25.00%)\tOne\t(40,000)\t(1,000)\t(100.0%)"));
    assert_non_null(strstr(t, "live at the end (after a full GC): 40,000 bytes, 500 objects (estimated), 25.00% of the "
                              "bytes allocated"));
    free(t);
    /* folded: by bytes, the class as the leaf */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[128];
    assert_true(report_write_folded(f, p, err, sizeof err));
    fclose(f);
    assert_non_null(strstr(buf, ";[Three] 120000\n"));
    assert_non_null(strstr(buf, ";[One] 40000\n"));
    free(buf);
    report_profile_free(p);
    report_alloclog_close(log);
    free(r);
}

/* The profile as pprof's reader sees it: gunzipped and unpacked. */
static Perftools__Profiles__Profile *pprof_of(const Profile *p)
{
    char *gz = NULL;
    size_t gzlen = 0;
    FILE *f = open_memstream(&gz, &gzlen);
    char err[128];
    assert_true(report_write_pprof_stream(f, p, err, sizeof err));
    fclose(f);
    static uint8_t raw[1 << 20];
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (Bytef *)gz;
    z.avail_in = (uInt)gzlen;
    z.next_out = raw;
    z.avail_out = sizeof raw;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    inflateEnd(&z);
    free(gz);
    Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, n, raw);
    assert_non_null(pb);
    return pb;
}

static const char *str(const Perftools__Profiles__Profile *pb, int64_t i)
{
    assert_true(i >= 0 && (size_t)i < pb->n_string_table);
    return pb->string_table[i];
}

/* Go's heap profile types, the interval as period, and values that add up
 * to the bytes and objects the samples stand for. */
static void pprof_has_go_heap_profile_types(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 4096);
    uint64_t keep = sample(&w, "One", 4000, 40);
    sample(&w, "Three", 12000, 80);
    live(&w, PROF_ALLOC_LIVE_AT_EXIT, &keep, 1, 8);
    char warn[256];
    report_alloclog_poll(log, warn, sizeof warn);
    static const char *const want[4][2] = {
        {"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
    for (int with_live = 0; with_live < 2; with_live++) {
        Profile *p = report_profile_new();
        ReportHeader h = {.vm_path = "/x/stvm", .seconds = 1.0};
        report_profile_set_header(p, &h);
        report_alloc_build(p, log, with_live, 4096, NULL, NULL);
        Perftools__Profiles__Profile *pb = pprof_of(p);
        size_t ntypes = with_live ? 4 : 2;
        assert_int_equal(pb->n_sample_type, ntypes);
        for (size_t i = 0; i < ntypes; i++) {
            assert_string_equal(str(pb, pb->sample_type[i]->type), want[i][0]);
            assert_string_equal(str(pb, pb->sample_type[i]->unit), want[i][1]);
        }
        assert_string_equal(str(pb, pb->period_type->type), "space");
        assert_string_equal(str(pb, pb->period_type->unit), "bytes");
        assert_int_equal(pb->period, 4096);
        assert_string_equal(str(pb, pb->default_sample_type), "alloc_space");
        int64_t sum[4] = {0};
        for (size_t i = 0; i < pb->n_sample; i++)
            for (size_t k = 0; k < ntypes; k++)
                sum[k] += pb->sample[i]->value[k];
        assert_int_equal(sum[0], 100 + 150); /* 4000 / 40 + 12000 / 80 */
        assert_int_equal(sum[1], 16000);
        if (with_live) {
            assert_int_equal(sum[2], 100);
            assert_int_equal(sum[3], 4000);
        }
        perftools__profiles__profile__free_unpacked(pb, NULL);
        report_profile_free(p);
    }
    report_alloclog_close(log);
    free(r);
}

static void without_an_answer_the_live_figures_are_not_shown(void **state)
{
    (void)state;
    Writer w;
    Region *r = region_new(&w);
    ReportAllocLog *log = reader(r, true);
    start(&w, 4096);
    sample(&w, "One", 4000, 40);
    char warn[256];
    report_alloclog_poll(log, warn, sizeof warn);
    Profile *p = report_profile_new();
    ReportHeader h = {.vm_path = "/x/stvm", .seconds = 1.0};
    report_profile_set_header(p, &h);
    report_alloc_build(p, log, true, 4096, NULL, NULL);
    char *t = text_of(p);
    assert_non_null(strstr(t, "live at the end: unknown"));
    assert_null(strstr(t, "live at the end (after"));
    free(t);
    report_profile_free(p);
    report_alloclog_close(log);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_of_two_classes_are_read_with_their_weights),
        cmocka_unit_test(a_reader_that_joins_skips_the_samples_before_it),
        cmocka_unit_test(a_live_answer_in_several_records_marks_its_samples),
        cmocka_unit_test(a_writer_that_laps_the_reader_is_counted_as_lost),
        cmocka_unit_test(a_damaged_record_is_skipped_never_used),
        cmocka_unit_test(a_sample_whose_name_overruns_it_is_refused),
        cmocka_unit_test(a_control_block_that_lies_is_refused_at_open),
        cmocka_unit_test(random_damage_never_makes_up_samples),
        cmocka_unit_test(the_report_shows_bytes_objects_and_shares_by_class),
        cmocka_unit_test(pprof_has_go_heap_profile_types),
        cmocka_unit_test(without_an_answer_the_live_figures_are_not_shown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
