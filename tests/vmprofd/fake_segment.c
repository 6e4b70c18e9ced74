/*
 * tests/vmprofd/fake_segment.c — writes a stvm export segment for any pid,
 * good or broken in one chosen way, so the tests can check how vmprofd's
 * export reader treats it.
 *
 *   fake_segment PID KIND [SEED]
 *
 * KIND: valid        a well-formed version-2 segment (eden 1,234,567 bytes,
 *                    7 stack pages) whose code event log, written by the
 *                    VM's own writer (profiler/codelog_writer.c), holds a few
 *                    methods, moves and frees over a wrapped 64 KiB ring
 *       v1           a version-1 segment: counters, no code event log
 *       bad_log      the code event log's control block is broken
 *       log_fuzz     valid, then bytes of the log region changed at random
 *                    (SEED picks which and how)
 *       bad_magic    the magic number is wrong
 *       truncated    the file ends inside the header
 *       short        segment_size promises more bytes than the file has
 *       bad_offset   the counters lie past the end of the segment
 *       wrong_pid    the header names another process
 *
 * The file is /dev/shm/stvm-PID, mode 0600, like the VM's own.
 */
#include "proto/identity.h"
#include "profiler/codelog_writer.h"
#include "proto/export.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_SEGMENT_BYTES 4096
#define FAKE_LOG_OFFSET 4096
#define FAKE_RING (64u << 10)
#define FAKE_ZONE 0x7f1200000000ull

/* A few thousand events over 64 slots: the ring wraps several times. */
static void fill_log(ProfCodeLog *log)
{
    static const uint32_t map[] = {64, 2, 100, 6, 140, 9};
    static const uint32_t lines[] = {0, 3, 4, 4, 8, 5};
    uint64_t t = 1000000;
    uint32_t rng = 12345;
    bool live[64] = {false};
    for (int i = 0; i < 3000; i++, t += 1000) {
        rng = rng * 1103515245u + 12345u;
        int slot = (int)((rng >> 16) % 64);
        uint64_t start = FAKE_ZONE + (uint64_t)slot * 256;
        if (live[slot] && (rng & 1)) {
            prof_codelog_free(log, t, start, 256);
            live[slot] = false;
        } else {
            char name[64];
            snprintf(name, sizeof name, "Fake>>method%d", i);
            ProfCodeLoad e = {.kind = PROF_CODE_METHOD, .name = name, .start = start, .size = 256,
                              .code_start = start + 48, .map = map, .map_count = 3, .source = "Fake.som",
                              .lines = lines, .line_count = 3, .bytecode_size = 12};
            prof_codelog_load(log, t, &e);
            live[slot] = true;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: fake_segment PID valid|v1|bad_log|log_fuzz|bad_magic|truncated|short|bad_offset|wrong_pid "
                        "[SEED]\n");
        return 2;
    }
    int pid = atoi(argv[1]);
    const char *kind = argv[2];
    unsigned seed = argc == 4 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
    static _Alignas(64) unsigned char seg[FAKE_LOG_OFFSET + 128 + FAKE_RING];
    size_t seg_bytes = FAKE_LOG_OFFSET + prof_codelog_region_bytes(FAKE_RING);
    ProfExportHeader *h = (ProfExportHeader *)seg;
    h->magic = PROF_EXPORT_MAGIC;
    h->version = PROF_EXPORT_VERSION;
    h->header_size = sizeof *h;
    h->segment_size = seg_bytes;
    h->pid = pid;
    h->vm_tid = pid;
    h->counters_offset = (sizeof *h + 63) & ~63ull;
    h->counters_size = sizeof(ProfCounters);
    {
        ProfIdentity id; /* made by this process: a reader checks who made it */
        if (prof_identity_of(pid, &id)) {
            h->start_ticks = id.start_ticks;
            memcpy(h->boot_id, id.boot_id, sizeof h->boot_id);
        }
    }

    snprintf(h->vm_path, sizeof h->vm_path, "/proc/%d/exe", pid);
    ProfCounters *c = (ProfCounters *)(seg + h->counters_offset);
    c->eden_bytes = 1234567;
    c->stack_pages = 7;
    c->old_bytes = 1 << 20;
    c->old_free_bytes = 1 << 19;
    size_t len = seg_bytes;
    h->code_log_offset = FAKE_LOG_OFFSET;
    h->code_log_size = seg_bytes - FAKE_LOG_OFFSET;
    ProfCodeLog log;
    char err[256];
    if (!prof_codelog_init(&log, seg + FAKE_LOG_OFFSET, h->code_log_size, FAKE_RING, FAKE_ZONE, FAKE_ZONE + 64 * 256,
                           err, sizeof err)) {
        fprintf(stderr, "fake_segment: %s\n", err);
        return 1;
    }
    prof_codelog_checkpoint_begin(&log, 1);
    prof_codelog_checkpoint_end(&log, 1);
    fill_log(&log);
    prof_codelog_release(&log);

    if (strcmp(kind, "valid") == 0) {
    } else if (strcmp(kind, "v1") == 0) {
        h->version = 1;
        h->code_log_offset = h->code_log_size = 0;
        h->segment_size = len = FAKE_SEGMENT_BYTES;
    } else if (strcmp(kind, "bad_log") == 0) {
        ((ProfCodeLogControl *)(seg + FAKE_LOG_OFFSET))->ring_size = 12345;
    } else if (strcmp(kind, "log_fuzz") == 0) {
        /* 1 to 64 bytes anywhere in the log region, half of them in the
         * control block and the newest records, where a reader looks */
        srand(seed);
        int n = 1 + rand() % 64;
        for (int i = 0; i < n; i++) {
            size_t off = rand() % 2 ? (size_t)rand() % 256 : (size_t)rand() % h->code_log_size;
            seg[FAKE_LOG_OFFSET + off] = (unsigned char)rand();
        }
    } else if (strcmp(kind, "bad_magic") == 0) {
        h->magic = 0x0123456789abcdefull;
    } else if (strcmp(kind, "truncated") == 0) {
        len = 40;
    } else if (strcmp(kind, "short") == 0) {
        len = h->counters_offset + 16;
    } else if (strcmp(kind, "bad_offset") == 0) {
        h->counters_offset = seg_bytes - 8;
    } else if (strcmp(kind, "wrong_pid") == 0) {
        h->pid = pid + 1;
    } else {
        fprintf(stderr, "fake_segment: unknown kind '%s'\n", kind);
        return 2;
    }

    char path[64];
    snprintf(path, sizeof path, PROF_EXPORT_PATH_FMT, pid);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, seg, len) != (ssize_t)len || close(fd) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}
