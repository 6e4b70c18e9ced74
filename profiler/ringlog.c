/*
 * profiler/ringlog.c — one record into an export ring (ringlog.h).
 */
#include "profiler/ringlog.h"

#include <stdio.h>
#include <string.h>

void prof_ringlog_commit(ProfRingLog *r, uint8_t *rec, uint32_t size, uint16_t type, uint16_t flags,
                         uint64_t time_ns)
{
    ProfCodeRecord h = {
        .size = size, .seq = r->seq, .time_ns = time_ns, .type = type, .flags = flags,
    };
    memcpy(rec, &h, sizeof h);
    h.checksum = prof_code_log_checksum(rec + 8, size - 8);
    memcpy(rec + offsetof(ProfCodeRecord, checksum), &h.checksum, sizeof h.checksum);

    uint64_t end = r->end + size;
    __atomic_store_n(r->write_begin, end, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* readers see write_begin move before any byte it covers */
    uint64_t at = r->end & (r->ring_size - 1);
    uint64_t first = r->ring_size - at < size ? r->ring_size - at : size;
    memcpy(r->ring + at, rec, first);
    memcpy(r->ring, rec + first, size - first);
    r->end = end;
    r->seq++;
    __atomic_store_n(r->records, r->seq, __ATOMIC_RELAXED);
    __atomic_store_n(r->write_end, end, __ATOMIC_RELEASE);
}

bool prof_ringlog_geometry_ok(const char *what, uint64_t ring_bytes, uint64_t min, uint64_t max, const void *region,
                              size_t region_bytes, size_t need, char *err, size_t errlen)
{
    if (ring_bytes < min || ring_bytes > max || (ring_bytes & (ring_bytes - 1)) != 0) {
        snprintf(err, errlen, "the %s ring must be a power of two from %llu KiB to %llu MiB, not %llu bytes", what,
                 (unsigned long long)(min >> 10), (unsigned long long)(max >> 20), (unsigned long long)ring_bytes);
        return false;
    }
    if (region_bytes < need || ((uintptr_t)region & 63) != 0) {
        snprintf(err, errlen, "the %s region (%zu bytes) is too small or misaligned for a %llu-byte ring", what,
                 region_bytes, (unsigned long long)ring_bytes);
        return false;
    }
    return true;
}
