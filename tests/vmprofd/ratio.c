/*
 * tests/vmprofd/ratio.c — a target whose profile is known in advance.
 *
 *   ratio SECONDS
 *
 * Alternately calls light() and heavy(), which run the same loop for N and
 * 3N iterations: a quarter of the CPU time is in light, three quarters in
 * heavy, whatever the machine. The loop is a chain of 64-bit multiply-adds
 * (an LCG) kept in a register: its speed is the multiplier's latency and
 * nothing else. (A loop incrementing a volatile counter in memory, the
 * obvious choice, ran light() anywhere from 25 % to 39 % of the time on a
 * virtual machine: store-forwarding speed is not stable there.) Each call
 * takes milliseconds, so it spans several sampling periods and no sampler
 * can alias with the alternation.
 *
 * Runs for SECONDS of wall time, then checks its result against the LCG
 * advanced in closed form (a profiler that corrupted a register would
 * show) and prints
 *
 *   ratio: ok rounds=R x=X cpu_light=P%
 *
 * and exits 0 — or prints "ratio: FAILED ..." and exits 1. cpu_light is the
 * share of its CPU time light() really took (CLOCK_THREAD_CPUTIME_ID
 * around each call), so a test can tell a wrong profile from a machine
 * that changed the program's speed under it.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ~2 ms of light() at ~4 cycles per iteration: longer than the 0.7 ms
 * sampling period, short enough for hundreds of alternations in 2 s. */
#define RATIO_N 2000000ull
/* Knuth's MMIX LCG. */
#define LCG_A 6364136223846793005ull
#define LCG_C 1442695040888963407ull

__attribute__((noinline)) static uint64_t light(uint64_t x)
{
    for (uint64_t i = 0; i < RATIO_N; i++) {
        x = x * LCG_A + LCG_C;
        __asm__ volatile("" : "+r"(x)); /* keep every step: no closed form for the compiler */
    }
    return x;
}

__attribute__((noinline)) static uint64_t heavy(uint64_t x)
{
    for (uint64_t i = 0; i < 3 * RATIO_N; i++) {
        x = x * LCG_A + LCG_C;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

/* x after n LCG steps, in O(log n) (Brown, "Random number generation with
 * arbitrary strides", 1994). */
static uint64_t lcg_advance(uint64_t x, uint64_t n)
{
    uint64_t acc_mult = 1, acc_plus = 0, mult = LCG_A, plus = LCG_C;
    while (n > 0) {
        if (n & 1) {
            acc_mult *= mult;
            acc_plus = acc_plus * mult + plus;
        }
        plus = (mult + 1) * plus;
        mult *= mult;
        n >>= 1;
    }
    return acc_mult * x + acc_plus;
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    double end = clock_s(CLOCK_MONOTONIC) + seconds;
    uint64_t x = 1, rounds = 0;
    double cpu_light = 0, cpu_heavy = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (clock_s(CLOCK_MONOTONIC) < end) {
        double a = clock_s(CLOCK_THREAD_CPUTIME_ID);
        x = light(x);
        double b = clock_s(CLOCK_THREAD_CPUTIME_ID);
        x = heavy(x);
        double c = clock_s(CLOCK_THREAD_CPUTIME_ID);
        cpu_light += b - a;
        cpu_heavy += c - b;
        rounds++;
    }
    uint64_t want = lcg_advance(1, rounds * 4 * RATIO_N);
    if (x != want) {
        printf("ratio: FAILED rounds=%" PRIu64 " x=%016" PRIx64 " expected %016" PRIx64 "\n", rounds, x, want);
        return 1;
    }
    double total = cpu_light + cpu_heavy;
    printf("ratio: ok rounds=%" PRIu64 " x=%016" PRIx64 " cpu_light=%.1f%%\n", rounds, x,
           100.0 * cpu_light / (total > 0 ? total : 1));
    return 0;
}
