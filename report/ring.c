/*
 * report/ring.c — the ring protocol shared by the export's logs (see
 * ring.h; the protocol in proto/export.h).
 */
#include "report/ring.h"

#include "report/mem.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stream bytes copied per read: large enough that a poll costs few reads,
 * small enough that a 1 GiB ring is not copied whole. */
#define CHUNK_BYTES (8u << 20)

#define HEADER_BYTES sizeof(ProfCodeRecord)

static bool fits(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

bool report_ring_open(ReportRing *r, const char *what, uint64_t region_size, ReportRingReadFn read, void *ctx,
                      void *control, size_t struct_size, uint64_t magic, uint64_t min_ring, uint64_t max_ring,
                      uint64_t max_fraction, char *why, size_t whylen)
{
    const uint8_t *c = control;
    if (region_size < struct_size) {
        snprintf(why, whylen, "the %s region (%" PRIu64 " bytes) is smaller than its control block", what,
                 region_size);
        return false;
    }
    if (!read(ctx, 0, control, struct_size)) {
        snprintf(why, whylen, "cannot read the %s's control block", what);
        return false;
    }
    uint64_t m;
    memcpy(&m, c, sizeof m);
    if (m != magic) {
        snprintf(why, whylen, "bad %s magic 0x%016" PRIx64, what, m);
        return false;
    }
    memset(r, 0, sizeof *r);
    uint32_t control_size;
    uint64_t ring_offset, ring_size;
    memcpy(&control_size, c + 8, sizeof control_size);
    memcpy(&ring_offset, c + REPORT_RING_RING_OFFSET, sizeof ring_offset);
    memcpy(&ring_size, c + REPORT_RING_RING_OFFSET + 8, sizeof ring_size);
    if (control_size < struct_size || control_size > region_size) {
        snprintf(why, whylen, "%s control_size %" PRIu32 " is wrong", what, control_size);
        return false;
    }
    if (ring_size < min_ring || ring_size > max_ring || (ring_size & (ring_size - 1)) != 0) {
        snprintf(why, whylen, "%s ring size %" PRIu64 " is not a power of two from %" PRIu64 " to %" PRIu64, what,
                 ring_size, min_ring, max_ring);
        return false;
    }
    if (ring_offset < control_size || ring_offset % 8 != 0 || !fits(ring_offset, ring_size, region_size)) {
        snprintf(why, whylen, "%s ring at offset %" PRIu64 " size %" PRIu64 " does not fit the %" PRIu64
                              "-byte log region",
                 what, ring_offset, ring_size, region_size);
        return false;
    }
    r->what = what;
    r->read = read;
    r->ctx = ctx;
    r->region_size = region_size;
    r->ring_offset = ring_offset;
    r->ring_size = ring_size;
    r->max_record = ring_size / max_fraction;
    return true;
}

void report_ring_say(char *warn, size_t warnlen, const char *fmt, ...)
{
    if (!warn || warnlen == 0 || warn[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warn, warnlen, fmt, ap);
    va_end(ap);
}

void report_ring_close(ReportRing *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

bool report_ring_refresh(ReportRing *r, void *c, size_t size, char *why, size_t whylen)
{
    /* A copy torn while the writer moves on can pass every check below
     * with positions ahead of the writer's, and the reader would then
     * refuse every true copy as going back. Two copies that agree are not
     * torn. */
    bool agree = false;
    uint8_t again[REPORT_RING_AGREE_END];
    for (int attempt = 0; attempt < 4 && !agree; attempt++) {
        if (!r->read(r->ctx, 0, c, size) || !r->read(r->ctx, 0, again, sizeof again)) {
            snprintf(why, whylen, "%s: the control block cannot be read any more", r->what);
            return false;
        }
        agree = memcmp((const uint8_t *)c + REPORT_RING_WRITE_BEGIN, again + REPORT_RING_WRITE_BEGIN,
                       REPORT_RING_AGREE_END - REPORT_RING_WRITE_BEGIN) == 0;
    }
    if (!agree) {
        snprintf(why, whylen, "%s: its control block kept changing while it was read; trying at the next poll",
                 r->what);
        return false;
    }
    uint64_t ring_offset, ring_size;
    memcpy(&ring_offset, (const uint8_t *)c + REPORT_RING_RING_OFFSET, sizeof ring_offset);
    memcpy(&ring_size, (const uint8_t *)c + REPORT_RING_RING_OFFSET + 8, sizeof ring_size);
    if (ring_size != r->ring_size || ring_offset != r->ring_offset) {
        snprintf(why, whylen, "%s: its control block changed its magic or geometry; ignored", r->what);
        return false;
    }
    uint64_t B = report_ring_write_begin(c), E = report_ring_write_end(c);
    if (E < r->last_end || B < E || B - E > r->max_record || E % 8 != 0) {
        /* a torn copy of the control block, or a corrupt one: try again next poll */
        snprintf(why, whylen, "%s: inconsistent positions (write_end %" PRIu64 ", write_begin %" PRIu64 ")", r->what,
                 E, B);
        return false;
    }
    r->last_end = E;
    return true;
}

ReportRingCopy report_ring_copy(ReportRing *r, uint64_t pos, size_t n, uint64_t begin_before)
{
    report_mem_reserve(&r->buf, &r->cap, n, 1);
    uint64_t at = pos & (r->ring_size - 1);
    size_t first = r->ring_size - at < n ? (size_t)(r->ring_size - at) : n;
    uint64_t b2;
    if (!r->read(r->ctx, r->ring_offset + at, r->buf, first) ||
        (first != n && !r->read(r->ctx, r->ring_offset, r->buf + first, n - first)) ||
        !r->read(r->ctx, REPORT_RING_WRITE_BEGIN, &b2, sizeof b2))
        return REPORT_RING_UNREADABLE;
    if (b2 > pos + r->ring_size || b2 < begin_before)
        return REPORT_RING_OVERRUN;
    return REPORT_RING_COPIED;
}

size_t report_ring_chunk(const ReportRing *r, uint64_t pos, uint64_t end)
{
    uint64_t chunk = CHUNK_BYTES > 2 * r->max_record ? CHUNK_BYTES : 2 * r->max_record;
    return (size_t)(end - pos < chunk ? end - pos : chunk);
}

ReportRingRecord report_ring_record(const ReportRing *r, size_t off, size_t n, uint64_t chunk_pos, uint64_t write_end,
                                    ProfCodeRecord *h, const char **why)
{
    if (n - off < HEADER_BYTES) {
        if (n - off > 0 && chunk_pos + n == write_end) {
            *why = "record running past the end of what was written";
            return REPORT_RING_BAD;
        }
        return REPORT_RING_PARTIAL;
    }
    const uint8_t *rec = r->buf + off;
    memcpy(h, rec, sizeof *h);
    if (h->size < HEADER_BYTES || h->size % 8 != 0 || h->size > r->max_record) {
        *why = "record with an impossible size";
        return REPORT_RING_BAD;
    }
    if (h->size > n - off) {
        if (chunk_pos + off + h->size > write_end) {
            *why = "record running past the end of what was written";
            return REPORT_RING_BAD;
        }
        return REPORT_RING_PARTIAL; /* the rest comes with the next chunk */
    }
    if (prof_code_log_checksum(rec + 8, h->size - 8) != h->checksum) {
        *why = "record whose checksum does not match (torn or corrupt)";
        return REPORT_RING_BAD;
    }
    return REPORT_RING_RECORD;
}
