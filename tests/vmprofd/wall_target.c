/*
 * tests/vmprofd/wall_target.c — targets for --event wall (wall_test.sh),
 * which also check that being sampled changed nothing they can see.
 *
 *   wall_target half SECONDS
 *     One thread alternates busy() — 20 ms of wall time spinning on
 *     CLOCK_MONOTONIC, so runnable-but-waiting time on a busy machine
 *     counts too, as the sampler counts it — and nap(), a 20 ms nanosleep.
 *     Every nanosleep must return 0 (a stop that broke it would make it
 *     fail with EINTR) and must not end early. Prints
 *       wall_target: half ok cycles=N busy_ms=B sleep_ms=S
 *     (S: the wall time nap() took, wake-up delays included: of each nap
 *     20 ms are asleep, the rest runnable, waiting for a CPU once the
 *     timer has fired, which a wall-clock sampler counts as on-CPU) and
 *     exits 0.
 *   wall_target pipe SECONDS
 *     A second thread blocks in read() on a pipe (reader()); the main
 *     thread spins in busy() for SECONDS, then writes "hello\n". The
 *     reader must get exactly that, without an EINTR. Prints
 *       wall_target: pipe ok read 6 bytes: hello
 *     and exits 3 (a status vmprofd must pass on).
 *
 * Anything else: "wall_target: FAILED ..." and exit 1.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PHASE_NS 20000000ll

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void failed(const char *fmt, const char *what, long v)
{
    printf("wall_target: FAILED ");
    printf(fmt, what, v);
    printf("\n");
    exit(1);
}

__attribute__((noinline)) static void busy(int64_t ns)
{
    int64_t end = mono_ns() + ns;
    while (mono_ns() < end)
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int64_t nap(int64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ll), .tv_nsec = (long)(ns % 1000000000ll)};
    int64_t t0 = mono_ns();
    if (nanosleep(&ts, NULL) != 0)
        failed("%s: errno %ld (a stop interrupted it)", "nanosleep", errno);
    int64_t took = mono_ns() - t0;
    if (took < ns)
        failed("%s ended %ld ns early", "nanosleep", (long)(ns - took));
    return took;
}

static int half(double seconds)
{
    int64_t end = mono_ns() + (int64_t)(seconds * 1e9), busy_ns = 0, sleep_ns = 0;
    long cycles = 0;
    while (mono_ns() < end) {
        int64_t t0 = mono_ns();
        busy(PHASE_NS);
        busy_ns += mono_ns() - t0;
        sleep_ns += nap(PHASE_NS);
        cycles++;
    }
    printf("wall_target: half ok cycles=%ld busy_ms=%lld sleep_ms=%lld\n", cycles, (long long)(busy_ns / 1000000),
           (long long)(sleep_ns / 1000000));
    return 0;
}

static int pipe_fds[2];
static char got[64];
static ssize_t got_n;

__attribute__((noinline)) static void *reader(void *arg)
{
    (void)arg;
    got_n = read(pipe_fds[0], got, sizeof got - 1);
    if (got_n < 0)
        failed("%s: errno %ld (a stop interrupted it)", "read", errno);
    return NULL;
}

static int pipe_mode(double seconds)
{
    if (pipe(pipe_fds) != 0)
        failed("%s: errno %ld", "pipe", errno);
    pthread_t t;
    if (pthread_create(&t, NULL, reader, NULL) != 0)
        failed("%s%ld", "pthread_create", 0);
    busy((int64_t)(seconds * 1e9));
    if (write(pipe_fds[1], "hello\n", 6) != 6)
        failed("%s: errno %ld", "write", errno);
    pthread_join(t, NULL);
    if (got_n != 6 || memcmp(got, "hello\n", 6) != 0)
        failed("%s got %ld bytes, not \"hello\\n\"", "read", (long)got_n);
    printf("wall_target: pipe ok read %ld bytes: %.5s\n", (long)got_n, got);
    return 3;
}

int main(int argc, char **argv)
{
    double seconds = argc == 3 ? strtod(argv[2], NULL) : 0;
    if (argc != 3 || seconds <= 0 || seconds > 600) {
        fprintf(stderr, "usage: wall_target half|pipe SECONDS\n");
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(argv[1], "half") == 0)
        return half(seconds);
    if (strcmp(argv[1], "pipe") == 0)
        return pipe_mode(seconds);
    fprintf(stderr, "usage: wall_target half|pipe SECONDS\n");
    return 1;
}
