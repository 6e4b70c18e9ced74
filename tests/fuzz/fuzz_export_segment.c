/*
 * tests/fuzz/fuzz_export_segment.c — stvm's export segment as vmprofd
 * reads it (vmprofd/export_reader.c): the input is the segment file.
 *
 * vmprofd_export_validate runs on the header as given; then the bytes go
 * into a file of ours and the whole reader runs on it as on
 * /dev/shm/stvm-PID: open (checks), counters, walk facts, and the code
 * event log replayed through vmprofd/codelog_poll.c (report/codelog_reader.c into
 * report/codemap.c) as vmprofd does while sampling, with its notes.
 *
 * Two liberties, both so the fuzzer spends its time past the checks that
 * need no search: the header's pid is set to ours (the reader refuses a
 * segment of another process, which validate above already covers), and
 * the counters' seqlock is made even (an odd one makes the reader wait
 * 10 ms for a VM that will never finish its update). The file is extended
 * with zeros to the segment_size the header claims, up to 4 MiB: a seed
 * then needs only the bytes that are not zero, and the code log's 64 KiB
 * minimum ring is no 64 KiB input.
 */
#include "tests/fuzz/fuzz.h"
#include "report/report.h"
#include "vmprofd/export_reader.h"
#include "vmprofd/codelog_poll.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_SEGMENT_MAX_EXTEND (4u << 20)

static char fuzz_path[128];

static void fuzz_cleanup(void)
{
    unlink(fuzz_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    pid_t pid = getpid();
    if (fd < 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_path, sizeof fuzz_path, "%s/stvm-fuzz-export-%d", tmp && *tmp ? tmp : "/tmp", (int)pid);
        fd = open(fuzz_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            perror(fuzz_path);
            abort();
        }
        atexit(fuzz_cleanup);
    }
    char why[256];
    uint8_t *seg = malloc(size ? size : 1);
    if (!seg)
        return 0;
    memcpy(seg, data, size);
    uint64_t file_size = size;
    if (size >= sizeof(ProfExportHeader)) {
        ProfExportHeader h;
        memcpy(&h, seg, sizeof h);
        vmprofd_export_validate(&h, size, h.pid, why, sizeof why);
        vmprofd_export_validate(&h, size, pid, why, sizeof why);
        h.pid = pid;
        if (h.segment_size > file_size && h.segment_size <= FUZZ_SEGMENT_MAX_EXTEND)
            file_size = h.segment_size;
        if (h.counters_offset < size && size - h.counters_offset >= sizeof(uint64_t)) {
            uint64_t seq;
            memcpy(&seq, seg + h.counters_offset, sizeof seq);
            seq &= ~1ull;
            memcpy(seg + h.counters_offset, &seq, sizeof seq);
        }
        memcpy(seg, &h, sizeof h);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, seg, size, 0) != (ssize_t)size ||
        ftruncate(fd, (off_t)file_size) != 0) {
        perror(fuzz_path);
        abort();
    }
    free(seg);

    ExportStatus status;
    char msg[512];
    ExportReader *r = vmprofd_export_open_file(fuzz_path, pid, &status, msg, sizeof msg);
    if (!r)
        return 0;
    ProfCounters counters;
    vmprofd_export_read_counters(r, &counters, msg, sizeof msg);
    ProfWalkFacts facts;
    vmprofd_export_walk_facts(r, &facts, why, sizeof why);
    CodeLogPoll jc;
    if (vmprofd_codelog_open(&jc, r, true, why, sizeof why)) {
        vmprofd_codelog_poll(&jc);
        vmprofd_codelog_poll(&jc);
        Profile *p = report_profile_new();
        vmprofd_codelog_notes(&jc, p);
        report_profile_free(p);
        vmprofd_codelog_close(&jc);
    }
    vmprofd_export_close(r);
    return 0;
}
