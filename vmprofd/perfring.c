/*
 * vmprofd/perfring.c — walking and decoding perf_event ring records. See
 * perfring.h; the ring protocol is described in sample_perf.c.
 *
 * Sample layout for our sample_type (IP | TID | TIME | REGS_USER |
 * STACK_USER), in the order the man page gives:
 *
 *   u64 ip; u32 pid, tid; u64 time;
 *   u64 abi; u64 regs[popcount(sample_regs_user)]   (regs only if abi != 0)
 *   u64 size; u8 data[size]; u64 dyn_size           (dyn_size only if size != 0)
 */
#include "vmprofd/perfring.h"

#include <string.h>

static bool take(const uint8_t **p, const uint8_t *end, void *dst, size_t n)
{
    if ((size_t)(end - *p) < n)
        return false;
    memcpy(dst, *p, n);
    *p += n;
    return true;
}

bool vmprofd_perfring_sample(const PerfSampleLayout *l, const struct perf_event_header *h, const uint8_t *rec,
                             RawSample *out)
{
    const uint8_t *p = rec + sizeof *h, *end = rec + h->size;
    uint64_t ip, time, abi = 0;
    uint32_t ids[2];
    RawSample r;
    memset(&r, 0, sizeof r);
    if (!take(&p, end, &ip, 8) || !take(&p, end, ids, 8) || !take(&p, end, &time, 8))
        return false;
    if (l->sample_type & PERF_SAMPLE_REGS_USER) {
        if (!take(&p, end, &abi, 8))
            return false;
        if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
            if (l->nregs > sizeof r.regs.regs / sizeof r.regs.regs[0] || !take(&p, end, r.regs.regs, 8u * l->nregs))
                return false;
            r.regs.mask = l->regs_mask;
            r.regs.ip = l->ip_index >= 0 ? r.regs.regs[l->ip_index] : 0;
            r.regs.sp = l->sp_index >= 0 ? r.regs.regs[l->sp_index] : 0;
            r.regs.bp = l->bp_index >= 0 ? r.regs.regs[l->bp_index] : 0;
        }
    }
    if (l->sample_type & PERF_SAMPLE_STACK_USER) {
        uint64_t size;
        if (!take(&p, end, &size, 8) || size > (uint64_t)(end - p))
            return false;
        const uint8_t *stack = p;
        p += size;
        uint64_t dyn = 0;
        if (size != 0 && !take(&p, end, &dyn, 8))
            return false;
        r.stack = stack;
        r.stack_len = (size_t)(dyn < size ? dyn : size);
    }
    r.time_ns = time;
    r.pid = ids[0];
    r.tid = ids[1];
    if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
        r.regs.ip = ip; /* the sample's own ip is authoritative for user samples */
    } else {
        r.kernel_ip = ip; /* in the kernel: regs_user holds where user space entered it */
        if (abi == PERF_SAMPLE_REGS_ABI_NONE)
            r.regs.ip = 0;
    }
    *out = r;
    return true;
}

bool vmprofd_perfring_lost(const struct perf_event_header *h, const uint8_t *rec, uint64_t *lost)
{
    /* u64 id; u64 lost */
    if (h->size < sizeof *h + 16)
        return false;
    memcpy(lost, rec + sizeof *h + 8, 8);
    return true;
}

void vmprofd_perfring_drain(const uint8_t *data, uint64_t data_size, uint64_t head, __u64 *data_tail,
                            uint8_t *scratch, PerfRecordFn fn, void *ctx)
{
    uint64_t tail = *data_tail;
    uint64_t mask = data_size - 1;
    while (head - tail >= sizeof(struct perf_event_header)) {
        uint64_t off = tail & mask;
        /* Records are 8-byte aligned and the ring a power of two, so a
         * header never straddles the end; a body may. */
        const struct perf_event_header *h = (const void *)(data + off);
        uint16_t size = h->size;
        /* the kernel writes whole u64s: a size that is not would leave the
         * next header misaligned (found by tests/fuzz/fuzz_perf_ring.c) */
        if (size < sizeof *h || size % 8 != 0 || size > head - tail) {
            tail = head; /* cannot happen with a sane kernel: resynchronise */
            break;
        }
        const uint8_t *rec = data + off;
        if (off + size > data_size) {
            size_t first = (size_t)(data_size - off);
            memcpy(scratch, data + off, first);
            memcpy(scratch + first, data, size - first);
            rec = scratch;
        }
        fn(ctx, (const struct perf_event_header *)(const void *)rec, rec);
        tail += size;
        /* Hand the space back at once: the kernel may fill it while we
         * unwind the next sample. */
        __atomic_store_n(data_tail, tail, __ATOMIC_RELEASE);
    }
    __atomic_store_n(data_tail, tail, __ATOMIC_RELEASE);
}
