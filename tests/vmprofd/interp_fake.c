/*
 * tests/vmprofd/interp_fake.c — a stand-in for an stvm whose interpreter
 * keeps its bytecode ip in a register, to test vmprofd's attribution of
 * interpreted samples before stvm's own interpreter publishes its ip.
 *
 *   interp_fake SECONDS
 *
 * It publishes an export segment /dev/shm/stvm-<pid> as stvm does (version 2,
 * its code event log written by profiler/codelog_writer.c) with two "methods"
 * of 16 bytecodes each, Fake>>light and Fake>>heavy, loaded as
 * PROF_CODE_BYTECODES, and says that inside fake_interpret register R12 holds
 * the ip. fake_interpret steps R12 over a method's bytecodes, spinning the
 * same number of iterations on each; heavy is run three times for each run of
 * light, so a profiler must give light 25% and heavy 75% of the interpreted
 * samples and each bytecode 1/16 of its method. Halfway through, heavy's
 * bytecodes move (as the old-space compactor moves a method), and the mover
 * logs it: heavy must be found at both places. Prints "interp_fake: ok" at
 * the end and removes its segment.
 */
#define _GNU_SOURCE
#include "proto/identity.h"
#include "profiler/codelog_writer.h"
#include "proto/export.h"

#include <asm/perf_regs.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LOG_OFFSET 4096u
#define RING (256u << 10)
#define NBYTECODES 16
/* Spins per bytecode: ~20 us a method on a 2020s core, a few dozen
 * samples' worth of rounds a second, and a round much shorter than the
 * ~0.7 ms between samples is what keeps the shares from aliasing. */
#define SPINS 2000

static uint8_t light_code[NBYTECODES], heavy_code[NBYTECODES], heavy_moved[NBYTECODES];
static char shm_name[64];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* R12 walks code[0..n); each bytecode takes `spins` loop iterations. */
/* Not cloned either: the segment names fake_interpret's own address, and a
 * Release build's .constprop copy would run somewhere else. */
#ifdef __clang__
#define FAKE_NOT_COPIED __attribute__((noinline))
#else
#define FAKE_NOT_COPIED __attribute__((noinline, noclone))
#endif
FAKE_NOT_COPIED static void fake_interpret(const uint8_t *code, long n, long spins)
{
    __asm__ volatile("mov %0, %%r12\n\t"
                     "1:\n\t"
                     "mov %2, %%rcx\n\t"
                     "2:\n\t"
                     "dec %%rcx\n\t"
                     "jnz 2b\n\t"
                     "inc %%r12\n\t"
                     "dec %1\n\t"
                     "jnz 1b\n\t"
                     : "+r"(code), "+r"(n)
                     : "r"(spins)
                     : "r12", "rcx", "cc", "memory");
}

static void load(ProfCodeLog *log, const char *name, const uint8_t *code)
{
    static const uint32_t lines[] = {0, 10, 8, 11}; /* bytecodes 0-7 on line 10, 8-15 on line 11 */
    ProfCodeLoad e = {
        .kind = PROF_CODE_BYTECODES, .name = name, .start = (uint64_t)(uintptr_t)code, .size = NBYTECODES,
        .source = "/fake/Fake.som", .lines = lines, .line_count = 2,
    };
    prof_codelog_load(log, now_ns(), &e);
}

static void unlink_segment(void) { shm_unlink(shm_name); }

int main(int argc, char **argv)
{
    double seconds = argc == 2 ? atof(argv[1]) : 0;
    if (seconds <= 0) {
        fprintf(stderr, "usage: interp_fake SECONDS\n");
        return 2;
    }
    snprintf(shm_name, sizeof shm_name, PROF_EXPORT_NAME_FMT, (int)getpid());
    size_t size = LOG_OFFSET + prof_codelog_region_bytes(RING);
    int fd = shm_open(shm_name, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror(shm_name);
        return 1;
    }
    uint8_t *seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    atexit(unlink_segment);
    ProfExportHeader *h = (ProfExportHeader *)seg;
    h->version = PROF_EXPORT_VERSION;
    h->header_size = sizeof *h;
    h->segment_size = size;
    h->pid = getpid();
    h->vm_tid = gettid();
    h->start_monotonic_ns = now_ns();
    h->counters_offset = 704; /* 64-aligned after the header */
    h->counters_size = sizeof(ProfCounters);
    {
        ProfIdentity id; /* made by this process: a reader checks who made it */
        if (prof_identity_of(0, &id)) {
            h->start_ticks = id.start_ticks;
            memcpy(h->boot_id, id.boot_id, sizeof h->boot_id);
        }
    }

    h->code_log_offset = LOG_OFFSET;
    h->code_log_size = size - LOG_OFFSET;
    ssize_t n = readlink("/proc/self/exe", h->vm_path, sizeof h->vm_path - 1);
    h->vm_path[n > 0 ? n : 0] = 0;
    ProfCodeLog log;
    char err[256];
    if (!prof_codelog_init(&log, seg + LOG_OFFSET, h->code_log_size, RING, 0, 0, err, sizeof err)) {
        fprintf(stderr, "interp_fake: %s\n", err);
        return 1;
    }
    prof_codelog_checkpoint_begin(&log, now_ns());
    prof_codelog_checkpoint_end(&log, now_ns());
    load(&log, "Fake>>light", light_code);
    load(&log, "Fake>>heavy", heavy_code);
    prof_codelog_set_interp(&log, (uint64_t)(uintptr_t)fake_interpret, PERF_REG_X86_R12);
    __atomic_store_n(&h->magic, PROF_EXPORT_MAGIC, __ATOMIC_RELEASE);

    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), half = start + (end - start) / 2;
    const uint8_t *heavy = heavy_code;
    while (now_ns() < end) {
        fake_interpret(light_code, NBYTECODES, SPINS);
        for (int i = 0; i < 3; i++)
            fake_interpret(heavy, NBYTECODES, SPINS);
        if (heavy == heavy_code && now_ns() >= half) {
            memcpy(heavy_moved, heavy_code, NBYTECODES);
            prof_codelog_move(&log, now_ns(), (uint64_t)(uintptr_t)heavy_code, (uint64_t)(uintptr_t)heavy_moved,
                              NBYTECODES);
            heavy = heavy_moved;
        }
    }
    prof_codelog_release(&log);
    printf("interp_fake: ok (light at %p, heavy at %p then %p)\n", (void *)light_code, (void *)heavy_code,
           (void *)heavy_moved);
    return 0;
}
