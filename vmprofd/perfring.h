/*
 * vmprofd/perfring.h — the records of a perf_event mmap ring buffer:
 * walking them from data_tail to data_head and decoding the two kinds
 * vmprofd reads (PERF_RECORD_SAMPLE in the layout of our sample_type,
 * PERF_RECORD_LOST).
 *
 * Nothing in a record is trusted beyond what is checked here: a record
 * whose size is impossible ends the walk (the kernel's ring cannot hold
 * one, so we resynchronise at data_head), and a sample whose fields run
 * past its size is dropped. Split from sample_perf.c, which owns the
 * events and the mappings, so that this part can be fuzzed without a
 * kernel (tests/fuzz/fuzz_perf_ring.c).
 *
 * Who may call: vmprofd/sample_perf.c, tests.
 */
#ifndef VMPROFD_PERFRING_H
#define VMPROFD_PERFRING_H

#include "vmprofd/sampler.h"

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Perf records are at most 64 KiB (a u16 size): the scratch buffer a
 * record that wraps the end of the ring is reassembled in. */
#define VMPROFD_PERFRING_MAX_RECORD 65536

/* What a PERF_RECORD_SAMPLE holds, as the event was opened. */
typedef struct PerfSampleLayout {
    uint64_t sample_type; /* PERF_SAMPLE_*: IP | TID | TIME, maybe REGS_USER and STACK_USER */
    uint64_t regs_mask;   /* sample_regs_user */
    unsigned nregs;       /* popcount of regs_mask */
    int ip_index, sp_index, bp_index; /* positions in the packed regs, or -1 */
} PerfSampleLayout;

/* Called for each whole record; rec (h's bytes, then the body) is valid
 * only during the call and holds h->size bytes. */
typedef void (*PerfRecordFn)(void *ctx, const struct perf_event_header *h, const uint8_t *rec);

/* Walks the records of the data area (data_size bytes, a power of two)
 * from *data_tail up to head, handing each to fn, and publishes the new
 * tail in *data_tail (release order) after each one so the kernel may
 * reuse the space at once. scratch holds VMPROFD_PERFRING_MAX_RECORD
 * bytes. data_tail is __u64 as in struct perf_event_mmap_page. */
void vmprofd_perfring_drain(const uint8_t *data, uint64_t data_size, uint64_t head, __u64 *data_tail,
                            uint8_t *scratch, PerfRecordFn fn, void *ctx);

/* Decodes a PERF_RECORD_SAMPLE into out (its pointers into rec). False
 * when the record is too short for what the layout says it holds. */
bool vmprofd_perfring_sample(const PerfSampleLayout *l, const struct perf_event_header *h, const uint8_t *rec,
                             RawSample *out);

/* The count of a PERF_RECORD_LOST; false when the record is too short. */
bool vmprofd_perfring_lost(const struct perf_event_header *h, const uint8_t *rec, uint64_t *lost);

#endif
