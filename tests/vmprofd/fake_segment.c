/*
 * tests/vmprofd/fake_segment.c — writes a stvm export segment for any pid,
 * good or broken in one chosen way, so the tests can check how vmprofd's
 * export reader treats it.
 *
 *   fake_segment PID KIND
 *
 * KIND: valid        a well-formed segment (eden 1,234,567 bytes, 7 stack pages)
 *       bad_magic    the magic number is wrong
 *       truncated    the file ends inside the header
 *       short        segment_size promises more bytes than the file has
 *       bad_offset   the counters lie past the end of the segment
 *       wrong_pid    the header names another process
 *
 * The file is /dev/shm/stvm-PID, mode 0600, like the VM's own.
 */
#include "profiler/export.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_SEGMENT_BYTES 4096

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fake_segment PID valid|bad_magic|truncated|short|bad_offset|wrong_pid\n");
        return 2;
    }
    int pid = atoi(argv[1]);
    const char *kind = argv[2];
    static unsigned char seg[FAKE_SEGMENT_BYTES];
    ProfExportHeader *h = (ProfExportHeader *)seg;
    h->magic = PROF_EXPORT_MAGIC;
    h->version = PROF_EXPORT_VERSION;
    h->header_size = sizeof *h;
    h->segment_size = FAKE_SEGMENT_BYTES;
    h->pid = pid;
    h->vm_tid = pid;
    h->counters_offset = (sizeof *h + 63) & ~63ull;
    h->counters_size = sizeof(ProfCounters);
    snprintf(h->vm_path, sizeof h->vm_path, "/proc/%d/exe", pid);
    ProfCounters *c = (ProfCounters *)(seg + h->counters_offset);
    c->eden_bytes = 1234567;
    c->stack_pages = 7;
    c->old_bytes = 1 << 20;
    c->old_free_bytes = 1 << 19;
    size_t len = FAKE_SEGMENT_BYTES;

    if (strcmp(kind, "valid") == 0) {
    } else if (strcmp(kind, "bad_magic") == 0) {
        h->magic = 0x0123456789abcdefull;
    } else if (strcmp(kind, "truncated") == 0) {
        len = 40;
    } else if (strcmp(kind, "short") == 0) {
        len = h->counters_offset + 16;
    } else if (strcmp(kind, "bad_offset") == 0) {
        h->counters_offset = FAKE_SEGMENT_BYTES - 8;
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
