/*
 * tests/vmprofd/test_segment_fuzz.c — a version-2 export segment, its code
 * event log written by the VM's own writer (profiler/codelog_writer.c),
 * damaged byte by byte and at random (fixed seed), then read the way vmprofd
 * reads a live one: vmprofd_export_open_file, vmprofd_codelog_open and _poll
 * (pread on the file, report/codelog_reader.c, report/codemap.c), and
 * resolved at a few hundred (time, address) probes.
 *
 * Always: no crash (the sanitizer build runs this too), and a refused
 * segment or log comes with a reason. Where the reader's trust is total,
 * more: a changed byte among the records it reads is either reported (a
 * warning) or changes no answer at all; a changed byte it has no reason to
 * read (ring bytes outside the stream it replays) changes nothing and
 * raises no warning.
 */
#include "proto/identity.h"
#include "profiler/codelog_writer.h"
#include "vmprofd/export_reader.h"
#include "vmprofd/codelog_poll.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define LOG_OFFSET 4096u
#define RING (64u << 10)
#define ZONE 0x7f3400000000ull
#define SLOTS 64
#define SLOT 256u
#define NPROBES 300
#define RANDOM_ROUNDS 1500

static _Alignas(64) uint8_t seg[LOG_OFFSET + 128 + RING];
static size_t seg_bytes;
static char path[64];
static int fd = -1;
static uint64_t t_first, t_last;

typedef struct Answer {
    int status;
    uint64_t start;
    uint32_t from, to;
    char name[40];
} Answer;

static struct {
    uint64_t t, addr;
} probes[NPROBES];
static Answer baseline[NPROBES];
static uint64_t join_pos, write_end; /* the stream the reader replays */

static void build_segment(void)
{
    seg_bytes = LOG_OFFSET + prof_codelog_region_bytes(RING);
    memset(seg, 0, sizeof seg);
    ProfExportHeader *h = (ProfExportHeader *)seg;
    h->magic = PROF_EXPORT_MAGIC;
    h->version = PROF_EXPORT_VERSION;
    h->header_size = sizeof *h;
    h->segment_size = seg_bytes;
    h->pid = getpid();
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
    h->code_log_size = seg_bytes - LOG_OFFSET;
    h->code_zone_start = ZONE;
    h->code_zone_end = ZONE + SLOTS * SLOT;
    snprintf(h->vm_path, sizeof h->vm_path, "/usr/bin/stvm");
    ProfCodeLog log;
    char err[256];
    assert_true(prof_codelog_init(&log, seg + LOG_OFFSET, h->code_log_size, RING, ZONE, ZONE + SLOTS * SLOT, err,
                                  sizeof err));
    prof_codelog_checkpoint_begin(&log, 1000);
    prof_codelog_checkpoint_end(&log, 1000);
    static const uint32_t map[] = {64, 2, 100, 6, 140, 9};
    static const uint32_t lines[] = {0, 3, 4, 4, 8, 5};
    bool live[SLOTS] = {false};
    uint32_t rng = 777;
    uint64_t t = 2000;
    t_first = t;
    /* enough to wrap once, so the reader starts at a checkpoint */
    for (int i = 0; log.end < RING + RING / 4; i++, t += 100) {
        rng = rng * 1103515245u + 12345u;
        int slot = (int)((rng >> 16) % SLOTS), to = (int)((rng >> 8) % SLOTS);
        uint64_t start = ZONE + (uint64_t)slot * SLOT;
        if (!live[slot]) {
            char name[40];
            snprintf(name, sizeof name, "Fuzz>>m%d", i);
            ProfCodeLoad e = {.kind = PROF_CODE_METHOD, .name = name, .start = start, .size = SLOT,
                              .code_start = start + 48, .map = map, .map_count = 3, .source = "/src/Fuzz.som",
                              .lines = lines, .line_count = 3, .bytecode_size = 12};
            prof_codelog_load(&log, t, &e);
            live[slot] = true;
        } else if (!live[to] && (rng & 1)) {
            prof_codelog_move(&log, t, start, ZONE + (uint64_t)to * SLOT, SLOT);
            live[slot] = false;
            live[to] = true;
        } else {
            prof_codelog_free(&log, t, start, SLOT);
            live[slot] = false;
        }
    }
    t_last = t;
    join_pos = log.ctl->checkpoint_pos;
    write_end = log.end;
    assert_true(log.ctl->write_begin > RING); /* so the reader joins at checkpoint_pos */
    /* the reader knows the zone from the checkpoint it joins at: probe from its time on */
    ProfCodeRecord begin;
    memcpy(&begin, log.ring + (join_pos & (RING - 1)), sizeof begin);
    assert_int_equal(begin.type, PROF_CODE_REC_CHECKPOINT_BEGIN);
    t_first = begin.time_ns;
    prof_codelog_release(&log);
    uint32_t r = 4242;
    for (int i = 0; i < NPROBES; i++) {
        r = r * 1103515245u + 12345u;
        probes[i].t = t_first + (r >> 8) % (t_last - t_first + 200);
        r = r * 1103515245u + 12345u;
        probes[i].addr = ZONE + (r >> 8) % (SLOTS * SLOT);
    }
}

static void write_all(void)
{
    assert_int_equal(pwrite(fd, seg, seg_bytes, 0), (ssize_t)seg_bytes);
}

static void put_byte(size_t off, uint8_t v)
{
    assert_int_equal(pwrite(fd, &v, 1, (off_t)off), 1);
}

/* vmprofd's reading of the file: answers whether a warning or refusal was
 * given, and fills answers (status -1: no map at all). */
static bool read_segment(Answer *answers)
{
    ExportStatus st;
    char msg[512] = "";
    ExportReader *r = vmprofd_export_open_file(path, getpid(), &st, msg, sizeof msg);
    if (!r) {
        assert_true(msg[0] != '\0'); /* refused with a reason */
        for (int i = 0; i < NPROBES; i++)
            answers[i].status = -1;
        return true;
    }
    CodeLogPoll j;
    char why[512] = "";
    bool warned = false;
    if (!vmprofd_codelog_open(&j, r, true, why, sizeof why)) {
        assert_true(why[0] != '\0');
        warned = true;
        for (int i = 0; i < NPROBES; i++)
            answers[i].status = -1;
    } else {
        vmprofd_codelog_poll(&j);
        vmprofd_codelog_poll(&j); /* a second poll finds nothing new, or recovers */
        warned = j.warnings > 0;
        for (int i = 0; i < NPROBES; i++) {
            ReportCodeHit h;
            Answer *a = &answers[i];
            memset(a, 0, sizeof *a);
            a->status = (int)report_codemap_resolve(j.map, probes[i].t, probes[i].addr, PROF_CODE_SPACE_MACHINE, &h);
            if (a->status == REPORT_CODE_FOUND) {
                a->start = h.start;
                a->from = h.bc_from;
                a->to = h.bc_to;
                snprintf(a->name, sizeof a->name, "%s", h.piece->name);
            }
        }
        vmprofd_codelog_close(&j);
    }
    vmprofd_export_close(r);
    return warned;
}

static bool same_answers(const Answer *a)
{
    return memcmp(a, baseline, sizeof baseline) == 0;
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_segment_fuzz.%d", (int)getpid());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    build_segment();
    write_all();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(fd);
    unlink(path);
    return 0;
}

static void the_intact_segment_resolves_without_warnings(void **state)
{
    (void)state;
    Answer *a = calloc(NPROBES, sizeof *a);
    assert_false(read_segment(a));
    int found = 0;
    for (int i = 0; i < NPROBES; i++)
        found += a[i].status == REPORT_CODE_FOUND;
    assert_true(found > NPROBES / 4); /* the probes mean something */
    memcpy(baseline, a, sizeof baseline);
    free(a);
}

/* Every byte of the header, the log's control block and the replayed
 * stream, one at a time, each set to its complement. */
static void every_byte_changed_in_turn_is_survived_and_never_silently_trusted(void **state)
{
    (void)state;
    Answer *a = calloc(NPROBES, sizeof *a);
    int refused = 0, warned = 0, silent_same = 0, header_bytes = 0, stream_bytes = 0;
    /* the header and the control block */
    for (size_t off = 0; off < LOG_OFFSET + 128; off++) {
        if (off >= sizeof(ProfExportHeader) && off < LOG_OFFSET)
            continue; /* counters and padding: not this test's business */
        uint8_t old = seg[off];
        put_byte(off, (uint8_t)~old);
        bool w = read_segment(a);
        refused += a[0].status == -1;
        warned += w;
        put_byte(off, old);
        header_bytes++;
    }
    /* the stream the reader replays, [join_pos, write_end) */
    size_t ring = LOG_OFFSET + 128;
    for (uint64_t p = join_pos; p < write_end; p++) {
        size_t off = ring + (p & (RING - 1));
        uint8_t old = seg[off];
        put_byte(off, (uint8_t)~old);
        bool w = read_segment(a);
        put_byte(off, old);
        stream_bytes++;
        if (w) {
            warned++;
        } else {
            if (!same_answers(a))
                fail_msg("byte %llu of the stream changed, no warning, and the answers changed",
                         (unsigned long long)p);
            silent_same++;
        }
    }
    print_message("%d header/control bytes (%d refused), %d stream bytes: %d warned, %d harmless\n", header_bytes,
                  refused, stream_bytes, warned, silent_same);
    assert_true(refused > 0 && warned > 0);
    free(a);
}

static void ring_bytes_outside_the_stream_are_never_read(void **state)
{
    (void)state;
    Answer *a = calloc(NPROBES, sizeof *a);
    size_t ring = LOG_OFFSET + 128;
    int checked = 0;
    for (uint64_t p = write_end; p < join_pos + RING; p += 61) { /* the stale part of the ring */
        size_t off = ring + (p & (RING - 1));
        uint8_t old = seg[off];
        put_byte(off, (uint8_t)~old);
        bool w = read_segment(a);
        put_byte(off, old);
        assert_false(w);
        assert_true(same_answers(a));
        checked++;
    }
    assert_true(checked > 100);
    free(a);
}

static void random_damage_is_survived(void **state)
{
    (void)state;
    Answer *a = calloc(NPROBES, sizeof *a);
    srand(20261121);
    int warned = 0;
    uint8_t *saved = malloc(seg_bytes);
    memcpy(saved, seg, seg_bytes);
    for (int round = 0; round < RANDOM_ROUNDS; round++) {
        int n = 1 + rand() % 16;
        size_t offs[16];
        for (int k = 0; k < n; k++) {
            /* mostly where readers look: header, control block, recent stream */
            int where = rand() % 4;
            size_t off = where == 0   ? (size_t)rand() % sizeof(ProfExportHeader)
                         : where == 1 ? LOG_OFFSET + (size_t)rand() % 128
                                      : LOG_OFFSET + 128 + (size_t)rand() % RING;
            offs[k] = off;
            put_byte(off, (uint8_t)rand());
        }
        warned += read_segment(a);
        for (int k = 0; k < n; k++)
            put_byte(offs[k], saved[offs[k]]);
    }
    free(saved);
    print_message("%d random rounds, %d warned or refused\n", RANDOM_ROUNDS, warned);
    assert_true(warned > RANDOM_ROUNDS / 4);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_intact_segment_resolves_without_warnings),
        cmocka_unit_test(every_byte_changed_in_turn_is_survived_and_never_silently_trusted),
        cmocka_unit_test(ring_bytes_outside_the_stream_are_never_read),
        cmocka_unit_test(random_damage_is_survived),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
