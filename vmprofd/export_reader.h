/*
 * vmprofd/export_reader.h — reading stvm's export segment
 * (/dev/shm/stvm-<pid>, layout in proto/export.h) from outside the VM.
 *
 * The segment is written by another process that may be buggy, gone or
 * hostile, so nothing in it is trusted before it is checked: the file must
 * be a regular file owned by the target's user, and magic, version, sizes
 * and every offset must lie inside the segment. A pid is not a process: the
 * segment must also name the target's start time and boot (version 4,
 * proto/identity.h), else it is a dead VM's that left it (SIGKILL) and is
 * STALE, never read. A failed check is a
 * warning and "no counters", never a crash.
 *
 * The segment is read with pread, not mmap: a writer that truncates the
 * file under a mapping would raise SIGBUS in vmprofd; pread just comes up
 * short. The descriptor stays open, so the last counters and the last code
 * events can still be read after the VM exited and unlinked the segment.
 *
 * Versions: 1 (no code event log) and 2 are read; a version-1 segment has
 * no log, which vmprofd_export_has_code_log tells the caller (it warns).
 * A later version is read as far as version 2's layout goes.
 *
 * Who may call: vmprofd/session.c, vmprofd/alloc_session.c, vmprofd/engine.c, tests.
 */
#ifndef VMPROFD_EXPORT_READER_H
#define VMPROFD_EXPORT_READER_H

#include "proto/allocabi.h"
#include "proto/export.h"
#include "proto/stackabi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum ExportStatus {
    VMPROFD_EXPORT_OK,
    VMPROFD_EXPORT_ABSENT,  /* no segment for this pid (not an stvm, or not yet) */
    VMPROFD_EXPORT_INVALID, /* a segment that fails a check; msg says which */
    VMPROFD_EXPORT_STALE,   /* a dead process's, whose pid the target has now (removed when we may) */
} ExportStatus;

typedef struct ExportReader ExportReader;

/* msg receives the reason for ABSENT/INVALID. */
ExportReader *vmprofd_export_open(pid_t pid, ExportStatus *status, char *msg, size_t msglen);
/* The same for a segment file at path that should belong to pid (tests,
 * copies of a segment). */
ExportReader *vmprofd_export_open_file(const char *path, pid_t pid, ExportStatus *status, char *msg, size_t msglen);
const ProfExportHeader *vmprofd_export_header(const ExportReader *r);
/* True for a segment older than export version 4, which does not say which
 * process made it: it may be a dead VM's (the caller says so). */
bool vmprofd_export_identity_unchecked(const ExportReader *r);
/* A consistent copy of the counters (retrying while the VM's seqlock is
 * odd or moves). False, with msg, when the segment became unreadable. */
bool vmprofd_export_read_counters(ExportReader *r, ProfCounters *out, char *msg, size_t msglen);
void vmprofd_export_close(ExportReader *r);

/* The facts to walk the VM's stacks with (version >= 3), checked for
 * sense; false with why (an older VM, a corrupt segment). */
bool vmprofd_export_walk_facts(ExportReader *r, ProfWalkFacts *out, char *why, size_t whylen);
/* Whether the segment carries a code event log (version >= 2 and a log
 * region). */
bool vmprofd_export_has_code_log(const ExportReader *r);
/* A report/codelog_reader.h read function over the log region: reader is the
 * ExportReader; offset counts from the region's start. False outside the
 * region or when the file no longer holds those bytes. */
bool vmprofd_export_read_log(void *reader, uint64_t offset, void *buf, size_t len);

/* Whether the segment carries an allocation sample log (version >= 5 and
 * a log region: stvm --no-alloc-log has none). */
bool vmprofd_export_has_alloc_log(const ExportReader *r);
/* A report/ring.h read function over the allocation log's region. */
bool vmprofd_export_read_alloc_log(void *reader, uint64_t offset, void *buf, size_t len);
/* The allocation log's control block mapped shared and writable (made on
 * the first call, unmapped by close): the request a profiler writes
 * (proto/allocabi.h) with atomic stores. The mapping keeps the memory after
 * the VM unlinked the segment; the VM never shrinks it. NULL with why. */
ProfAllocLogControl *vmprofd_export_alloc_request(ExportReader *r, char *why, size_t whylen);
/* The checks on a header read from a file of file_size bytes that should
 * belong to pid. False with the failed check in why. */
bool vmprofd_export_validate(const ProfExportHeader *h, uint64_t file_size, pid_t pid, char *why, size_t whylen);

#endif
