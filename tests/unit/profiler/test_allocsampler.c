/* Unit tests for profiler/allocsampler.c through its private log (the
 * in-VM profiler's API): requests, leases, START/SAMPLE/STOP, chunked LIVE
 * answers, on a real heap (tests/unit/gc/gc_test.h). */
#include "../gc/gc_test.h"

#include "gc/weak.h"
#include "profiler/allocsampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static ProfAllocLogControl *ctl;
static uint64_t cursor;

static const char *class_name(uint32_t ci, char *buf, size_t len)
{
    snprintf(buf, len, ci == CLASS_INDEX_ARRAY ? "Array" : "Other%u", ci);
    return buf;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void request(uint64_t interval, uint64_t until)
{
    ctl->request_interval = interval;
    __atomic_store_n(&ctl->request_until_ns, until, __ATOMIC_RELEASE);
    prof_allocsampler_poll();
}

/* The next record after the cursor (checked like a reader), into rec; false at the end. */
static bool next_record(uint8_t *rec, size_t cap)
{
    uint64_t e = __atomic_load_n(&ctl->write_end, __ATOMIC_ACQUIRE);
    if (cursor >= e) return false;
    const uint8_t *ring = (const uint8_t *)ctl + ctl->ring_offset;
    uint32_t size;
    for (int i = 0; i < 4; i++) ((uint8_t *)&size)[i] = ring[(cursor + (uint64_t)i) & (ctl->ring_size - 1)];
    assert_true(size >= sizeof(ProfCodeRecord) && size <= cap && size % 8 == 0);
    for (uint32_t i = 0; i < size; i++) rec[i] = ring[(cursor + i) & (ctl->ring_size - 1)];
    assert_true(ctl->write_begin <= ctl->ring_size || ctl->write_begin - ctl->ring_size <= cursor); /* not overwritten */
    ProfCodeRecord h;
    memcpy(&h, rec, sizeof h);
    assert_int_equal(h.checksum, prof_code_log_checksum(rec + 8, size - 8));
    cursor += size;
    return true;
}

static uint16_t type_of(const uint8_t *rec) { return ((const ProfCodeRecord *)rec)->type; }

static int open_log(uint64_t ring)
{
    setup_small_heap(NULL);
    prof_allocsampler_init(NULL, class_name);
    gc_alloc_sampling_seed(1); /* the same gaps every run */
    char err[256];
    ctl = prof_allocsampler_private_open(ring, err, sizeof err);
    if (!ctl) fail_msg("%s", err);
    cursor = 0;
    return 0;
}

static int setup_big(void **state)
{
    (void)state;
    return open_log(1u << 20);
}

static int setup_small(void **state)
{
    (void)state;
    return open_log(PROF_ALLOC_LOG_MIN_RING);
}

static int teardown(void **state)
{
    prof_allocsampler_private_close();
    return teardown_heap(state);
}

static uint8_t rec[1 << 16];

static void samples_add_up_and_stop_when_cancelled(void **state)
{
    (void)state;
    uintptr_t limit = gc_eden_soft_limit;
    request(16384, UINT64_MAX);
    assert_int_equal(ctl->active_interval, 16384);
    assert_int_equal(gc_alloc_sampling_interval(), 16384);
    for (int i = 0; i < 20000; i++) {
        new_array(2); /* 24 bytes: 480 KB */
        if (gc_wants_collect()) gc_collect(false);
    }
    assert_true(next_record(rec, sizeof rec));
    assert_int_equal(type_of(rec), PROF_ALLOC_REC_START);
    ProfAllocStart start;
    memcpy(&start, rec + sizeof(ProfCodeRecord), sizeof start);
    assert_int_equal(start.interval, 16384);
    uint64_t samples = 0, weights = 0, last = start.bytes_allocated;
    while (next_record(rec, sizeof rec)) {
        assert_int_equal(type_of(rec), PROF_ALLOC_REC_SAMPLE);
        ProfAllocSample s;
        memcpy(&s, rec + sizeof(ProfCodeRecord), sizeof s);
        assert_int_equal(s.size, 24);
        /* the weights so far put this sample's point inside its object */
        uint64_t point = start.bytes_allocated + weights + s.weight;
        assert_true(s.weight > 0 && point < s.bytes_allocated && point >= s.bytes_allocated - s.size);
        assert_int_equal(s.name_len, 5);
        assert_memory_equal(rec + sizeof(ProfCodeRecord) + sizeof s, "Array", 6);
        assert_int_equal(s.raw_size, sizeof(ProfRawStack));
        assert_int_equal(s.raw_offset + s.raw_size, ((ProfCodeRecord *)rec)->size);
        assert_false(s.flags & PROF_ALLOC_F_OLD);
        last = s.bytes_allocated;
        weights += s.weight;
        samples++;
    }
    assert_true(weights <= last - start.bytes_allocated && weights + 24 > last - start.bytes_allocated);
    assert_int_equal(samples, ctl->samples);
    assert_true(samples > 29 - 12 && samples < 29 + 12); /* 480 KB / 16 KiB, within 2 sd of a Poisson count (fixed seed) */
    request(0, UINT64_MAX);
    assert_true(next_record(rec, sizeof rec));
    assert_int_equal(type_of(rec), PROF_ALLOC_REC_STOP);
    ProfAllocStop stop;
    memcpy(&stop, rec + sizeof(ProfCodeRecord), sizeof stop);
    assert_int_equal(stop.why, PROF_ALLOC_STOP_CANCELLED);
    assert_int_equal(ctl->active_interval, 0);
    assert_int_equal(gc_alloc_sampling_interval(), 0);
    assert_int_equal(gc_eden_soft_limit, limit);
    assert_int_equal(gc_weak_count(), 0); /* nobody samples: nothing followed */
}

static void a_lapsed_lease_stops_at_the_next_collection(void **state)
{
    (void)state;
    request(4096, now_ns() + 1000000); /* 1 ms */
    assert_int_equal(ctl->active_interval, 4096);
    struct timespec pause = {0, 5000000};
    nanosleep(&pause, NULL);
    gc_collect(false); /* the clock is read again at collections */
    assert_int_equal(ctl->active_interval, 0);
    assert_int_equal(gc_alloc_sampling_interval(), 0);
    bool stopped = false;
    while (next_record(rec, sizeof rec))
        if (type_of(rec) == PROF_ALLOC_REC_STOP) {
            ProfAllocStop stop;
            memcpy(&stop, rec + sizeof(ProfCodeRecord), sizeof stop);
            assert_int_equal(stop.why, PROF_ALLOC_STOP_LAPSED);
            stopped = true;
        }
    assert_true(stopped);
}

static void live_answers_come_in_chunks_after_a_full_gc(void **state)
{
    (void)state;
    const size_t n = 6000;
    Oop keep = new_old_array(n);
    tc.roots[0] = keep;
    request(32, UINT64_MAX); /* ~2000 samples: more than one LIVE record of a 64 KiB ring holds */
    for (size_t i = 0; i < n; i++) {
        gc_store(keep, i, new_array(1));
        for (int j = 0; j < 2; j++) new_array(1); /* garbage */
        if (gc_wants_collect()) gc_collect(false);
    }
    uint64_t full = gc_stats.full_gcs, samples = ctl->samples;
    cursor = ctl->write_end; /* a reader that joins now */
    ctl->request_live = 1;
    prof_allocsampler_poll();
    assert_true(gc_wants_collect());
    request(0, UINT64_MAX); /* the samples end; the answer is still due */
    gc_collect(false);      /* the safe point: a full GC, then the answer */
    assert_int_equal(gc_stats.full_gcs, full + 1);
    uint64_t records = 0, seqs = 0, total = 0;
    bool last = false;
    while (next_record(rec, sizeof rec)) {
        if (type_of(rec) != PROF_ALLOC_REC_LIVE) continue;
        assert_false(last);
        ProfAllocLive l;
        memcpy(&l, rec + sizeof(ProfCodeRecord), sizeof l);
        assert_int_equal(l.answers, 1);
        assert_true(((ProfCodeRecord *)rec)->size <= PROF_ALLOC_LOG_MIN_RING / 8);
        seqs += l.count;
        total = l.total;
        records++;
        last = !(((ProfCodeRecord *)rec)->flags & PROF_ALLOC_REC_F_MORE);
    }
    assert_true(last);
    assert_true(records >= 2);
    assert_int_equal(seqs, total);
    /* a third of the objects stayed; about a third of the samples, never more than were taken */
    assert_true(total > samples / 4 && total < samples / 2);
    assert_int_equal(ctl->live_answered, 1);
}

static void closing_the_private_log_stops_sampling(void **state)
{
    (void)state;
    request(4096, UINT64_MAX);
    assert_int_equal(gc_alloc_sampling_interval(), 4096);
    prof_allocsampler_private_close();
    assert_int_equal(gc_alloc_sampling_interval(), 0);
    char err[256];
    ctl = prof_allocsampler_private_open(PROF_ALLOC_LOG_MIN_RING, err, sizeof err);
    assert_non_null(ctl);
    assert_null(prof_allocsampler_private_open(PROF_ALLOC_LOG_MIN_RING, err, sizeof err)); /* one at a time */
}

static void bad_ring_sizes_are_refused(void **state)
{
    (void)state;
    prof_allocsampler_private_close();
    char err[256] = "";
    assert_null(prof_allocsampler_private_open(PROF_ALLOC_LOG_MIN_RING + 8, err, sizeof err));
    assert_non_null(strstr(err, "power of two"));
    assert_null(prof_allocsampler_private_open(PROF_ALLOC_LOG_MIN_RING / 2, err, sizeof err));
    ctl = prof_allocsampler_private_open(PROF_ALLOC_LOG_MIN_RING, err, sizeof err);
    assert_non_null(ctl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(samples_add_up_and_stop_when_cancelled, setup_big, teardown),
        cmocka_unit_test_setup_teardown(a_lapsed_lease_stops_at_the_next_collection, setup_big, teardown),
        cmocka_unit_test_setup_teardown(live_answers_come_in_chunks_after_a_full_gc, setup_small, teardown),
        cmocka_unit_test_setup_teardown(closing_the_private_log_stops_sampling, setup_small, teardown),
        cmocka_unit_test_setup_teardown(bad_ring_sizes_are_refused, setup_small, teardown),
    };
    return cmocka_run_group_tests_name("allocsampler", tests, NULL, NULL);
}
