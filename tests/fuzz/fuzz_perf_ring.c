/*
 * tests/fuzz/fuzz_perf_ring.c — the perf_event ring buffer's records as
 * vmprofd walks and decodes them (vmprofd/perfring.c).
 *
 * Input: a 24-byte preamble, then the ring's data area.
 *
 *   u64 regs_mask     sample_regs_user; 0: vmprofd's own mask
 *   u32 flags         bit 0: PERF_SAMPLE_REGS_USER, bit 1: PERF_SAMPLE_STACK_USER
 *   u32 head - tail   bytes the kernel says it wrote (at most the data area)
 *   u64 tail          where the reader starts (the low bits in the area)
 *   data              cut to a power of two, as the kernel's area is
 *
 * What the kernel guarantees is kept (head - tail within the area, tail
 * 8-aligned, the area 8-aligned); what it writes is not trusted. Decoded
 * samples have their stack bytes summed, so a stack that lies past its
 * record trips AddressSanitizer.
 */
#include "tests/fuzz/fuzz.h"
#include "vmprofd/perfring.h"
#include "vmprofd/unwind.h"

#include <asm/perf_regs.h>
#include <stdlib.h>
#include <string.h>

typedef struct FuzzPerfCtx {
    const PerfSampleLayout *layout;
    uint64_t samples, lost, sum;
} FuzzPerfCtx;

/* Index of bit among the set bits of mask, or -1 (as sample_perf.c
 * computes the layout). */
static int fuzz_packed_index(uint64_t mask, int bit)
{
    if (!((mask >> bit) & 1))
        return -1;
    return __builtin_popcountll(mask & ((1ull << bit) - 1));
}

static volatile uint64_t fuzz_perf_sink;

static void fuzz_record(void *vctx, const struct perf_event_header *h, const uint8_t *rec)
{
    FuzzPerfCtx *c = vctx;
    if (h->type == PERF_RECORD_SAMPLE) {
        RawSample r;
        if (!vmprofd_perfring_sample(c->layout, h, rec, &r))
            return;
        c->samples++;
        for (size_t i = 0; i < r.stack_len; i++)
            c->sum += r.stack[i];
        c->sum += r.regs.ip + r.regs.sp + r.regs.bp + r.kernel_ip + r.time_ns + r.tid;
    } else if (h->type == PERF_RECORD_LOST) {
        uint64_t lost;
        if (vmprofd_perfring_lost(h, rec, &lost))
            c->lost += lost;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 24 + sizeof(struct perf_event_header))
        return 0;
    uint64_t mask;
    __u64 tail; /* as perf_event_mmap_page's data_tail */
    uint32_t flags, span;
    memcpy(&mask, data, 8);
    memcpy(&flags, data + 8, 4);
    memcpy(&span, data + 12, 4);
    memcpy(&tail, data + 16, 8);
    if (mask == 0)
        mask = vmprofd_unwind_regs_mask();
    PerfSampleLayout layout = {
        .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
        .regs_mask = mask,
        .nregs = (unsigned)__builtin_popcountll(mask),
        .ip_index = fuzz_packed_index(mask, PERF_REG_X86_IP),
        .sp_index = fuzz_packed_index(mask, PERF_REG_X86_SP),
        .bp_index = fuzz_packed_index(mask, PERF_REG_X86_BP),
    };
    if (flags & 1)
        layout.sample_type |= PERF_SAMPLE_REGS_USER;
    if (flags & 2)
        layout.sample_type |= PERF_SAMPLE_STACK_USER;

    size_t len = size - 24;
    uint64_t data_size = 8;
    while (data_size * 2 <= len)
        data_size *= 2;
    if (data_size > len)
        return 0;
    uint8_t *area = malloc(data_size), *scratch = malloc(VMPROFD_PERFRING_MAX_RECORD);
    if (area && scratch) {
        memcpy(area, data + 24, data_size);
        tail &= ~7ull;
        uint64_t head = tail + span % (data_size + 1);
        FuzzPerfCtx c = {&layout, 0, 0, 0};
        vmprofd_perfring_drain(area, data_size, head, &tail, scratch, fuzz_record, &c);
        fuzz_perf_sink = c.samples + c.lost + c.sum; /* keeps the decoding from being optimised away */
    }
    free(area);
    free(scratch);
    return 0;
}
