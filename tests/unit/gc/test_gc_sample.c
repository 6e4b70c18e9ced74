/* Unit tests for allocation sampling in gc/heap.c (gc/heap.h,
 * GcAllocSampler): where the samples fall, their weights, the gaps. */
#include "gc_test.h"

#include <math.h>

#define MAX_SAMPLES 4096
#define STREAM 30000

typedef struct Seen {
    uint64_t after, size, weight;
    bool old;
} Seen;

static Seen seen[MAX_SAMPLES];
static size_t nseen;
static uint64_t polls, observed;

static void on_poll(void) { polls++; }

static void on_sample(Oop obj, size_t bytes, uint64_t weight, bool old, void *const *frame)
{
    assert_true(obj != 0);
    assert_int_equal(obj_total_bytes(obj), bytes);
    assert_true(frame != NULL && frame[1] != NULL); /* a return address into the caller */
    assert_true(nseen < MAX_SAMPLES);
    seen[nseen++] = (Seen){gc_stats.bytes_allocated, bytes, weight, old};
}

static const GcAllocSampler sampler = {on_poll, on_sample};

static int setup(void **state)
{
    setup_small_heap(state);
    nseen = 0;
    polls = observed = 0;
    gc_set_alloc_sampler(&sampler);
    return 0;
}

static int teardown(void **state)
{
    gc_set_alloc_sampler(NULL);
    gc_set_alloc_observer(NULL, NULL);
    return teardown_heap(state);
}

/* Allocation i of the stream: small objects of every allocator, some past
 * 255 slots, large ones (old space), methods, and straight-to-old ones. */
static Oop allocate(size_t i)
{
    if (i % 997 == 0) return gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, i % 13);
    if (i % 1499 == 0) return gc_alloc_method(CLASS_INDEX_METHOD, 6, i % 50);
    if (i % 701 == 0) return gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 2000); /* > eden / 8: old space */
    if (i % 101 == 0) return gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, 300); /* overflow word */
    if (i % 3 == 0) return gc_alloc_bytes(CLASS_INDEX_STRING, i % 40);
    return gc_alloc_fast(CLASS_INDEX_ARRAY, FMT_POINTERS, i % 6);
}

/* Runs the stream with sampling every `interval` bytes from seed 42 and
 * checks every sample against the points the same gaps put down: the
 * allocation whose bytes [before, after) hold a point is sampled, none
 * other, with weight = the gaps ending at the points inside it. */
static void stream_matches_the_points(uint64_t interval)
{
    static uint64_t gaps[MAX_SAMPLES + 1];
    gc_alloc_sampling_seed(42);
    for (size_t k = 0; k <= MAX_SAMPLES; k++)
        gaps[k] = gc_alloc_sampling_gap(interval);
    gc_alloc_sampling_seed(42);
    uint64_t start = gc_stats.bytes_allocated;
    gc_alloc_sampling_set(interval);
    assert_int_equal(gc_alloc_sampling_interval(), interval);

    uint64_t point = start + gaps[0], prev = start, weights = 0; /* prev: the previous point */
    size_t k = 1, expected = 0;
    for (size_t i = 1; i <= STREAM; i++) {
        uint64_t before = gc_stats.bytes_allocated;
        size_t had = nseen;
        Oop o = allocate(i);
        assert_true(o != 0);
        uint64_t after = gc_stats.bytes_allocated;
        assert_int_equal(after - before, obj_total_bytes(o));
        if (after > point) {
            /* the gaps ending at the points inside [before, after) */
            uint64_t w = 0;
            while (point < after) {
                w += point - prev;
                prev = point;
                point += gaps[k++];
            }
            assert_int_equal(nseen, had + 1);
            assert_int_equal(seen[had].after, after);
            assert_int_equal(seen[had].weight, w);
            assert_int_equal(seen[had].old, gc_is_old(o));
            weights += seen[had].weight;
            expected++;
        } else {
            assert_int_equal(nseen, had);
        }
        if (gc_wants_collect()) gc_collect(false);
    }
    assert_int_equal(nseen, expected);
    assert_true(expected > 20);
    /* the weights add up to the bytes allocated up to the last point */
    assert_int_equal(weights, prev - start);
}

static void samples_fall_where_the_points_are(void **state)
{
    (void)state;
    stream_matches_the_points(1000);
}

static void sparse_samples_fall_where_the_points_are(void **state)
{
    (void)state;
    stream_matches_the_points(64 << 10); /* longer than eden's room: across collections */
}

static void on_observed(Oop obj, size_t bytes)
{
    (void)obj;
    (void)bytes;
    observed++;
}

static void observer_and_sampler_work_at_once(void **state)
{
    (void)state;
    static volatile unsigned short watch = 1;
    gc_set_alloc_observer(&watch, on_observed);
    stream_matches_the_points(1000);
    assert_int_equal(observed, STREAM);
}

static void stopping_restores_the_soft_limit(void **state)
{
    (void)state;
    uintptr_t limit = gc_eden_soft_limit;
    gc_alloc_sampling_set(64);
    assert_true(gc_eden_soft_limit < limit);
    assert_true(gc_eden_soft_limit >= gc_eden_top);
    for (int i = 0; i < 100; i++)
        new_array(1);
    gc_alloc_sampling_set(0);
    assert_int_equal(gc_alloc_sampling_interval(), 0);
    assert_int_equal(gc_eden_soft_limit, limit);
    size_t had = nseen;
    for (int i = 0; i < 100; i++)
        new_array(1);
    assert_int_equal(nseen, had);
}

static void polled_at_slow_paths_and_collections(void **state)
{
    (void)state;
    uint64_t p = polls;
    gc_collect(false);
    assert_true(polls > p);
    p = polls;
    new_array(300); /* out of line */
    assert_true(polls > p);
}

static void no_sampler_no_sampling(void **state)
{
    (void)state;
    gc_set_alloc_sampler(NULL);
    gc_alloc_sampling_set(1000);
    assert_int_equal(gc_alloc_sampling_interval(), 0);
}

static void gaps_are_exponential_with_the_mean_asked(void **state)
{
    (void)state;
    gc_alloc_sampling_seed(7);
    const size_t n = 200000;
    const uint64_t mean = 512 << 10;
    double sum = 0, sq = 0;
    size_t below_mean = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t g = gc_alloc_sampling_gap(mean);
        assert_true(g >= GC_ALLOC_SAMPLE_MIN_GAP);
        sum += (double)g;
        sq += (double)g * (double)g;
        below_mean += g < mean;
    }
    double m = sum / (double)n, sd = sqrt(sq / (double)n - m * m);
    /* the standard error of the mean is mean / sqrt(n), 0.22%: 1% is 4.5 of them */
    assert_true(fabs(m / (double)mean - 1) < 0.01);
    assert_true(fabs(sd / (double)mean - 1) < 0.02); /* an exponential's sd is its mean */
    /* P(gap < mean) = 1 - 1/e = 0.632 */
    assert_true(fabs((double)below_mean / (double)n - 0.632) < 0.01);
    for (int i = 0; i < 1000; i++)
        assert_true(gc_alloc_sampling_gap(1) >= GC_ALLOC_SAMPLE_MIN_GAP);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(samples_fall_where_the_points_are),
        T(sparse_samples_fall_where_the_points_are),
        T(observer_and_sampler_work_at_once),
        T(stopping_restores_the_soft_limit),
        T(polled_at_slow_paths_and_collections),
        T(no_sampler_no_sampling),
        T(gaps_are_exponential_with_the_mean_asked),
    };
    return cmocka_run_group_tests_name("gc_sample", tests, NULL, NULL);
}
