/*
 * vmprofd/export_reader.h — reading stvm's export segment
 * (/dev/shm/stvm-<pid>, layout in profiler/export.h) from outside the VM.
 *
 * The segment is written by another process that may be buggy, gone or
 * hostile, so nothing in it is trusted before it is checked: the file must
 * be a regular file owned by the target's user, and magic, version, sizes
 * and every offset must lie inside the segment. A failed check is a
 * warning and "no counters", never a crash.
 *
 * The segment is read with pread, not mmap: a writer that truncates the
 * file under a mapping would raise SIGBUS in vmprofd; pread just comes up
 * short. The descriptor stays open, so the last counters can still be read
 * after the VM exited and unlinked the segment.
 *
 * Who may call: vmprofd/session.c, tests.
 */
#ifndef VMPROFD_EXPORT_READER_H
#define VMPROFD_EXPORT_READER_H

#include "profiler/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum ExportStatus {
    VMPROFD_EXPORT_OK,
    VMPROFD_EXPORT_ABSENT,  /* no segment for this pid (not an stvm, or not yet) */
    VMPROFD_EXPORT_INVALID, /* a segment that fails a check; msg says which */
} ExportStatus;

typedef struct ExportReader ExportReader;

/* msg receives the reason for ABSENT/INVALID. */
ExportReader *vmprofd_export_open(pid_t pid, ExportStatus *status, char *msg, size_t msglen);
const ProfExportHeader *vmprofd_export_header(const ExportReader *r);
/* A consistent copy of the counters (retrying while the VM's seqlock is
 * odd or moves). False, with msg, when the segment became unreadable. */
bool vmprofd_export_read_counters(ExportReader *r, ProfCounters *out, char *msg, size_t msglen);
void vmprofd_export_close(ExportReader *r);

/* The checks on a header read from a file of file_size bytes that should
 * belong to pid. False with the failed check in why. */
bool vmprofd_export_validate(const ProfExportHeader *h, uint64_t file_size, pid_t pid, char *why, size_t whylen);

#endif
