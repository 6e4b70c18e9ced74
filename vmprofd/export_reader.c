/*
 * vmprofd/export_reader.c — opening and checking stvm's export segment,
 * reading its counters. See export_reader.h.
 */
#define _GNU_SOURCE /* process_vm_readv, ppoll, pipe2, strsignal, __WALL: Linux interfaces */
#include "vmprofd/export_reader.h"

#include "proto/identity.h"
#include "vmprofd/target.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The VM holds its seqlock odd only while copying a few dozen words after
 * a collection; 1000 tries of 10 us outlast that by far. */
#define EXPORT_SEQLOCK_TRIES 1000

struct ExportReader {
    int fd;
    char path[PROF_EXPORT_PATH_MAX];
    ProfExportHeader header;
    bool identity_unchecked; /* a segment older than version 4: its maker cannot be told */
    void *request_map;       /* the pages holding the allocation log's control block, shared, writable */
    size_t request_map_len;
    ProfAllocLogControl *request; /* inside request_map */
};

/* a + b <= limit, without overflow. */
static bool fits(uint64_t a, uint64_t b, uint64_t limit)
{
    return a <= limit && b <= limit - a;
}

bool vmprofd_export_validate(const ProfExportHeader *h, uint64_t file_size, pid_t pid, char *why, size_t whylen)
{
    if (h->magic != PROF_EXPORT_MAGIC) {
        snprintf(why, whylen, "bad magic 0x%016" PRIx64 " (expected 0x%016llx)", h->magic,
                 (unsigned long long)PROF_EXPORT_MAGIC);
        return false;
    }
    /* Versions only add fields (export.h): any version >= 1 whose sizes
     * cover version 1's layout can be read. */
    if (h->version < 1) {
        snprintf(why, whylen, "unknown version %" PRIu32, h->version);
        return false;
    }
    if (h->header_size < PROF_EXPORT_HEADER_V2_SIZE) {
        snprintf(why, whylen, "header_size %" PRIu32 " is smaller than the %d bytes of version 1", h->header_size,
                 PROF_EXPORT_HEADER_V2_SIZE);
        return false;
    }
    if (h->segment_size > file_size) {
        snprintf(why, whylen, "truncated: segment_size is %" PRIu64 " but the file has %" PRIu64 " bytes",
                 h->segment_size, file_size);
        return false;
    }
    if (h->header_size > h->segment_size) {
        snprintf(why, whylen, "header_size %" PRIu32 " exceeds segment_size %" PRIu64, h->header_size,
                 h->segment_size);
        return false;
    }
    if (h->pid != pid) {
        snprintf(why, whylen, "it names pid %" PRId32 ", not %d", h->pid, (int)pid);
        return false;
    }
    if (h->counters_offset % 8 != 0 || h->counters_offset < h->header_size ||
        h->counters_size < sizeof(ProfCounters) || !fits(h->counters_offset, h->counters_size, h->segment_size)) {
        snprintf(why, whylen,
                 "counters at offset %" PRIu64 " size %" PRIu64 " do not fit a segment of %" PRIu64
                 " bytes after a %" PRIu32 "-byte header (need 8-aligned, >= %zu bytes)",
                 h->counters_offset, h->counters_size, h->segment_size, h->header_size, sizeof(ProfCounters));
        return false;
    }
    if (h->code_log_offset != 0 &&
        (h->code_log_offset < h->header_size || h->code_log_offset % 8 != 0 ||
         !fits(h->code_log_offset, h->code_log_size, h->segment_size))) {
        snprintf(why, whylen, "code log at offset %" PRIu64 " size %" PRIu64 " lies outside the segment of %" PRIu64
                 " bytes", h->code_log_offset, h->code_log_size, h->segment_size);
        return false;
    }
    if (h->code_zone_start > h->code_zone_end) {
        snprintf(why, whylen, "code zone start 0x%" PRIx64 " is above its end 0x%" PRIx64, h->code_zone_start,
                 h->code_zone_end);
        return false;
    }
    if (h->version >= PROF_EXPORT_VERSION_STACKS && h->header_size >= PROF_EXPORT_HEADER_V3_SIZE &&
        h->walk_offset != 0 &&
        (h->walk_offset % 8 != 0 || h->walk_offset < h->header_size || h->walk_size < sizeof(ProfWalkFacts) ||
         !fits(h->walk_offset, h->walk_size, h->segment_size))) {
        snprintf(why, whylen, "walk facts at offset %" PRIu64 " size %" PRIu64 " do not fit the segment of %" PRIu64
                 " bytes (need 8-aligned, >= %zu bytes)", h->walk_offset, h->walk_size, h->segment_size,
                 sizeof(ProfWalkFacts));
        return false;
    }
    if (h->version >= PROF_EXPORT_VERSION_ALLOC && h->header_size >= sizeof(ProfExportHeader) &&
        h->alloc_log_offset != 0 &&
        (h->alloc_log_offset % 8 != 0 || h->alloc_log_offset < h->header_size ||
         h->alloc_log_size < sizeof(ProfAllocLogControl) || !fits(h->alloc_log_offset, h->alloc_log_size, h->segment_size))) {
        snprintf(why, whylen, "allocation log at offset %" PRIu64 " size %" PRIu64 " does not fit the segment of %" PRIu64
                 " bytes (need 8-aligned, >= %zu bytes)", h->alloc_log_offset, h->alloc_log_size, h->segment_size,
                 sizeof(ProfAllocLogControl));
        return false;
    }
    if (memchr(h->vm_path, '\0', sizeof h->vm_path) == NULL) {
        snprintf(why, whylen, "vm_path is not NUL-terminated");
        return false;
    }
    return true;
}

static bool read_exact(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

/* A stale segment goes when we may remove it (ours, or we are root): the
 * next reader need not decide again. Only if the name still holds the
 * file we judged. */
static void remove_stale(const char *path, const struct stat *judged)
{
    struct stat now;
    if ((geteuid() == 0 || judged->st_uid == geteuid()) && lstat(path, &now) == 0 && now.st_ino == judged->st_ino &&
        now.st_dev == judged->st_dev)
        unlink(path);
}

static ExportReader *open_segment(const char *path, pid_t pid, bool remove, ExportStatus *status, char *msg,
                                  size_t msglen);

ExportReader *vmprofd_export_open(pid_t pid, ExportStatus *status, char *msg, size_t msglen)
{
    char path[64];
    snprintf(path, sizeof path, PROF_EXPORT_PATH_FMT, (int)pid);
    return open_segment(path, pid, true, status, msg, msglen);
}

ExportReader *vmprofd_export_open_file(const char *path, pid_t pid, ExportStatus *status, char *msg, size_t msglen)
{
    return open_segment(path, pid, false, status, msg, msglen);
}

/* remove: a stale segment found where the VM publishes is removed (when we
 * may); a file given by path (a test's, a copy) is the caller's. */
static ExportReader *open_segment(const char *path, pid_t pid, bool remove, ExportStatus *status, char *msg,
                                  size_t msglen)
{
    /* O_NOFOLLOW: /dev/shm is world-writable; a symlink planted there must
     * not make vmprofd (perhaps root) read some other file. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            *status = VMPROFD_EXPORT_ABSENT;
            snprintf(msg, msglen, "no stvm export segment for pid %d", (int)pid);
        } else {
            *status = VMPROFD_EXPORT_INVALID;
            snprintf(msg, msglen, "cannot open %s: %s%s", path, strerror(e),
                     e == EACCES ? " (the segment is mode 0600: run vmprofd as the VM's user or as root)" : "");
        }
        return NULL;
    }
    *status = VMPROFD_EXPORT_INVALID;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "%s is not a regular file", path);
        close(fd);
        return NULL;
    }
    uid_t owner;
    if (vmprofd_target_uid(pid, &owner) && st.st_uid != owner) {
        snprintf(msg, msglen, "%s belongs to uid %u, not to the target's uid %u: not its export, ignored", path,
                 (unsigned)st.st_uid, (unsigned)owner);
        close(fd);
        return NULL;
    }
    ExportReader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(msg, msglen, "out of memory");
        close(fd);
        return NULL;
    }
    r->fd = fd;
    snprintf(r->path, sizeof r->path, "%s", path);
    if ((uint64_t)st.st_size < sizeof(ProfExportHeader) || !read_exact(fd, &r->header, sizeof r->header, 0)) {
        snprintf(msg, msglen, "%s is invalid: truncated: %lld bytes, the header alone needs %zu", path,
                 (long long)st.st_size, sizeof(ProfExportHeader));
        vmprofd_export_close(r);
        return NULL;
    }
    /* bytes past a smaller (older) header are the counters, not its fields */
    if (r->header.header_size < sizeof r->header)
        memset((char *)&r->header + r->header.header_size, 0, sizeof r->header - r->header.header_size);
    char why[256];
    if (!vmprofd_export_validate(&r->header, (uint64_t)st.st_size, pid, why, sizeof why)) {
        snprintf(msg, msglen, "%s is invalid: %s", path, why);
        vmprofd_export_close(r);
        return NULL;
    }
    switch (prof_segment_owner(&r->header, sizeof r->header, pid)) {
    case PROF_SEGMENT_STALE:
        *status = VMPROFD_EXPORT_STALE;
        snprintf(msg, msglen, "%s was left by an earlier process with pid %d: ignored", path, (int)pid);
        if (remove)
            remove_stale(path, &st);
        vmprofd_export_close(r);
        return NULL;
    case PROF_SEGMENT_UNKNOWN:
        r->identity_unchecked = true; /* validated: magic set, so an older version */
        break;
    case PROF_SEGMENT_OURS:
        break;
    }
    *status = VMPROFD_EXPORT_OK;
    msg[0] = '\0';
    return r;
}

bool vmprofd_export_identity_unchecked(const ExportReader *r)
{
    return r->identity_unchecked;
}

const ProfExportHeader *vmprofd_export_header(const ExportReader *r)
{
    return &r->header;
}

bool vmprofd_export_read_counters(ExportReader *r, ProfCounters *out, char *msg, size_t msglen)
{
    const ProfExportHeader *h = &r->header;
    struct stat st;
    /* The file may have been truncated since it was validated. */
    if (fstat(r->fd, &st) != 0 || !fits(h->counters_offset, sizeof *out, (uint64_t)st.st_size)) {
        snprintf(msg, msglen, "%s shrank below its counters", r->path);
        return false;
    }
    for (int i = 0; i < EXPORT_SEQLOCK_TRIES; i++) {
        uint64_t seq_after;
        if (!read_exact(r->fd, out, sizeof *out, h->counters_offset) ||
            !read_exact(r->fd, &seq_after, sizeof seq_after, h->counters_offset + offsetof(ProfCounters, seq))) {
            snprintf(msg, msglen, "cannot read the counters of %s", r->path);
            return false;
        }
        if (out->seq % 2 == 0 && seq_after == out->seq)
            return true; /* no collection copied statistics in while we read */
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
    }
    /* A seqlock stuck odd: the VM died mid-update. The values are still
     * the best there is. */
    return true;
}

bool vmprofd_export_walk_facts(ExportReader *r, ProfWalkFacts *out, char *why, size_t whylen)
{
    const ProfExportHeader *h = &r->header;
    if (h->version < PROF_EXPORT_VERSION_STACKS || h->header_size < PROF_EXPORT_HEADER_V3_SIZE || h->walk_offset == 0) {
        snprintf(why, whylen, "the VM's export (version %" PRIu32 ") says nothing about its stacks: an stvm older "
                 "than export version %d", h->version, PROF_EXPORT_VERSION_STACKS);
        return false;
    }
    if (!read_exact(r->fd, out, sizeof *out, h->walk_offset)) {
        snprintf(why, whylen, "the VM's walk facts could not be read from its export");
        return false;
    }
    /* a fact that points nowhere would make every walk read garbage */
    if (out->size < sizeof *out || out->page_bytes == 0 || out->npages == 0 || out->state_addr == 0 ||
        out->interp_start >= out->interp_end || out->zone_start > out->zone_end) {
        snprintf(why, whylen, "the VM's walk facts are inconsistent (corrupt export)");
        return false;
    }
    return true;
}

bool vmprofd_export_has_code_log(const ExportReader *r)
{
    return r->header.version >= PROF_EXPORT_VERSION_CODE_LOG && r->header.code_log_offset != 0 &&
           r->header.code_log_size != 0;
}

bool vmprofd_export_read_log(void *reader, uint64_t offset, void *buf, size_t len)
{
    ExportReader *r = reader;
    const ProfExportHeader *h = &r->header;
    if (!vmprofd_export_has_code_log(r) || !fits(offset, len, h->code_log_size))
        return false;
    /* validated at open: code_log_offset + code_log_size <= segment_size */
    return read_exact(r->fd, buf, len, h->code_log_offset + offset);
}

bool vmprofd_export_has_alloc_log(const ExportReader *r)
{
    const ProfExportHeader *h = &r->header;
    return h->version >= PROF_EXPORT_VERSION_ALLOC && h->header_size >= sizeof(ProfExportHeader) &&
           h->alloc_log_offset != 0 && h->alloc_log_size != 0;
}

bool vmprofd_export_read_alloc_log(void *reader, uint64_t offset, void *buf, size_t len)
{
    ExportReader *r = reader;
    const ProfExportHeader *h = &r->header;
    if (!vmprofd_export_has_alloc_log(r) || !fits(offset, len, h->alloc_log_size))
        return false;
    return read_exact(r->fd, buf, len, h->alloc_log_offset + offset);
}

ProfAllocLogControl *vmprofd_export_alloc_request(ExportReader *r, char *why, size_t whylen)
{
    if (r->request)
        return r->request;
    if (!vmprofd_export_has_alloc_log(r)) {
        snprintf(why, whylen, "the segment has no allocation log");
        return NULL;
    }
    /* A descriptor of our own for writing, on the very file read so far
     * (the name may point elsewhere by now). */
    int fd = open(r->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat a, b;
    if (fd < 0) {
        snprintf(why, whylen, "cannot open %s for writing: %s", r->path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &a) != 0 || fstat(r->fd, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
        snprintf(why, whylen, "%s is no longer the segment vmprofd read", r->path);
        close(fd);
        return NULL;
    }
    long page = sysconf(_SC_PAGESIZE);
    uint64_t at = r->header.alloc_log_offset;
    uint64_t first = at - at % (uint64_t)page;
    size_t len = (size_t)(at + sizeof(ProfAllocLogControl) - first);
    if ((uint64_t)a.st_size < at + sizeof(ProfAllocLogControl)) {
        snprintf(why, whylen, "%s shrank below its allocation log", r->path);
        close(fd);
        return NULL;
    }
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)first);
    close(fd); /* the mapping keeps the file, unlinked or not */
    if (m == MAP_FAILED) {
        snprintf(why, whylen, "cannot map the allocation log's request: %s", strerror(errno));
        return NULL;
    }
    r->request_map = m;
    r->request_map_len = len;
    r->request = (ProfAllocLogControl *)((char *)m + (at - first));
    return r->request;
}

void vmprofd_export_close(ExportReader *r)
{
    if (!r)
        return;
    if (r->request_map)
        munmap(r->request_map, r->request_map_len);
    close(r->fd);
    free(r);
}
