/*
 * profiler/ringlog.h — committing one record to an export ring: the
 * writer's three steps of proto/export.h ("The code event log": write_begin,
 * copy, write_end) with the record header every such log shares
 * (ProfCodeRecord: size, checksum, seq, time, type, flags). The code event
 * log (codelog_writer.c) and the allocation sample log (allocsampler.c)
 * both write through here, so they cannot drift apart.
 *
 * Who may call: profiler/. Single writer: the VM thread.
 */
#ifndef PROFILER_RINGLOG_H
#define PROFILER_RINGLOG_H

#include "proto/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A ring and the three control words its readers follow (in the region). */
typedef struct ProfRingLog {
    uint8_t *ring;
    uint64_t ring_size;     /* a power of two */
    uint64_t *write_begin, *write_end, *records;
    uint64_t end, seq;      /* private copies of write_end and records */
} ProfRingLog;

/* A ring of ring_bytes in region (region_bytes, need of them for control
 * block + ring): false with a reason naming `what` unless ring_bytes is a
 * power of two in [min, max] and the region is big enough and 64-aligned. */
bool prof_ringlog_geometry_ok(const char *what, uint64_t ring_bytes, uint64_t min, uint64_t max, const void *region,
                              size_t region_bytes, size_t need, char *err, size_t errlen);

/* Stamps the header of rec (size bytes, a multiple of 8 and at most
 * ring_size, its body already after the 32-byte header) with the next seq,
 * time_ns, type and flags, checksums it and commits it. */
void prof_ringlog_commit(ProfRingLog *r, uint8_t *rec, uint32_t size, uint16_t type, uint16_t flags,
                         uint64_t time_ns);

#endif
