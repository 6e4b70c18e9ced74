/*
 * report/alloclog_reader.c — the allocation sample log reader (see
 * alloclog_reader.h; the log in proto/allocabi.h, its ring protocol in
 * report/ring.h).
 *
 * One poll: refresh the control block, copy the stream from the cursor to
 * write_end in chunks, check each record before use and take it in. The
 * log has no checkpoints: after an overrun or a damaged record the reader
 * jumps to the writer's end and counts, from the next good record's seq,
 * how many records it never saw.
 */
#include "report/alloclog_reader.h"

#include "report/mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES sizeof(ProfCodeRecord)
/* The ABI bounds a record by the ring; half of it keeps a record whose
 * write is in progress (write_begin - write_end) from passing for one
 * that fills the ring. A SAMPLE is ~2.5 KB, the smallest ring 64 KiB. */
#define MAX_RECORD_FRACTION 2
/* Resynchronisations one poll may go through: a hostile log cannot keep
 * a poll going forever. */
#define MAX_RESYNCS_PER_POLL 4

bool report_alloclog_open(ReportAllocLog *r, uint64_t region_size, ReportRingReadFn read, void *ctx, bool from_start,
                          char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->from_start = from_start;
    ProfAllocLogControl c;
    if (!report_ring_open(&r->ring, "allocation log", region_size, read, ctx, &c, sizeof c, PROF_ALLOC_LOG_MAGIC,
                          PROF_ALLOC_LOG_MIN_RING, PROF_ALLOC_LOG_MAX_RING, MAX_RECORD_FRACTION, err, errlen))
        return false;
    r->control = c;
    return true;
}

void report_alloclog_close(ReportAllocLog *r)
{
    report_ring_close(&r->ring);
    free(r->v);
    report_samples_free(&r->stacks);
    for (size_t i = 0; i < r->nnames; i++)
        free(r->names[i]);
    free(r->names);
    report_index_free(&r->name_index);
    free(r->pending);
    memset(r, 0, sizeof *r);
}

uint64_t report_alloclog_counted_bytes(const ReportAllocLog *r)
{
    uint64_t open = r->sampling && r->last_bytes > r->period_start ? r->last_bytes - r->period_start : 0;
    return r->counted_bytes + open;
}

/* -- Records ------------------------------------------------------------------- */

typedef struct NameKey {
    const ReportAllocLog *r;
    const char *s;
} NameKey;

static bool name_eq(const void *ctx, int item)
{
    const NameKey *k = ctx;
    return strcmp(k->r->names[item], k->s) == 0;
}

static int intern_name(ReportAllocLog *r, const char *s)
{
    uint64_t h = report_index_hash_str(BASE_FNV1A_BASIS, s);
    NameKey key = {r, s};
    int i = report_index_find(&r->name_index, h, name_eq, &key);
    if (i >= 0)
        return i;
    report_mem_reserve(&r->names, &r->names_cap, r->nnames + 1, sizeof *r->names);
    r->names[r->nnames] = report_mem_strdup(s);
    report_index_insert(&r->name_index, h, (int)r->nnames);
    return (int)r->nnames++;
}

static void counter_seen(ReportAllocLog *r, uint64_t bytes)
{
    if (bytes > r->last_bytes)
        r->last_bytes = bytes;
}

static bool take_sample(ReportAllocLog *r, const uint8_t *rec, const ProfCodeRecord *h, const char **why)
{
    ProfAllocSample s;
    if (h->size < HEADER_BYTES + sizeof s) {
        *why = "SAMPLE record too short";
        return false;
    }
    memcpy(&s, rec + HEADER_BYTES, sizeof s);
    uint64_t name_at = HEADER_BYTES + sizeof s;
    if (s.name_len > PROF_ALLOC_CLASS_NAME_MAX || name_at + s.name_len + 1 > h->size) {
        *why = "SAMPLE record's class name overruns it";
        return false;
    }
    const char *name = (const char *)rec + name_at;
    if (name[s.name_len] != '\0' || memchr(name, 0, s.name_len)) {
        *why = "SAMPLE record's class name is not a string of its length";
        return false;
    }
    if (s.raw_offset % 8 != 0 || s.raw_offset < name_at + s.name_len + 1 || s.raw_size != sizeof(ProfRawStack) ||
        (uint64_t)s.raw_offset + s.raw_size > h->size) {
        *why = "SAMPLE record's stack is not where its record says";
        return false;
    }
    if (s.size == 0 || s.weight == 0) {
        *why = "SAMPLE of an object of no bytes, or standing for none";
        return false;
    }
    if (!r->sampling) {
        /* joined mid-period (its START was before us or lost): the period
         * counts from the bytes this first sample stands for */
        r->sampling = true;
        r->period_start = s.bytes_allocated >= s.weight ? s.bytes_allocated - s.weight : 0;
    }
    ProfRawStack raw;
    memcpy(&raw, rec + s.raw_offset, sizeof raw);
    if (raw.time_ns == 0)
        raw.time_ns = h->time_ns;
    if (!report_samples_add_raw(&r->stacks, &raw)) {
        r->stats.dropped++;
        return true;
    }
    report_mem_reserve(&r->v, &r->cap, r->n + 1, sizeof *r->v);
    r->v[r->n++] = (ReportAllocRecord){
        .seq = h->seq,
        .time_ns = raw.time_ns,
        .weight = s.weight,
        .size = s.size,
        .bytes_allocated = s.bytes_allocated,
        .class_index = s.class_index,
        .flags = s.flags,
        .name = intern_name(r, s.name_len ? name : "[class unknown]"),
        .stack = r->stacks.n - 1,
    };
    r->stats.samples++;
    counter_seen(r, s.bytes_allocated);
    return true;
}

static ReportAllocRecord *sample_by_seq(ReportAllocLog *r, uint64_t seq)
{
    size_t lo = 0, hi = r->n; /* v is in seq order: records are taken in order */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->v[lo].seq == seq ? &r->v[lo] : NULL;
}

/* A complete answer replaces the previous one. */
static void apply_live(ReportAllocLog *r)
{
    for (size_t i = 0; i < r->n; i++)
        r->v[i].live = false;
    r->live_unknown = 0;
    for (size_t i = 0; i < r->npending; i++) {
        ReportAllocRecord *s = sample_by_seq(r, r->pending[i]);
        if (s)
            s->live = true;
        else
            r->live_unknown++;
    }
    r->have_live = true;
    r->live_answers = r->pending_answers;
    r->live_count = r->npending;
    r->npending = 0;
    r->pending_open = false;
}

static bool take_live(ReportAllocLog *r, const uint8_t *rec, const ProfCodeRecord *h, const char **why)
{
    ProfAllocLive l;
    if (h->size < HEADER_BYTES + sizeof l) {
        *why = "LIVE record too short";
        return false;
    }
    memcpy(&l, rec + HEADER_BYTES, sizeof l);
    if (l.count > (h->size - HEADER_BYTES - sizeof l) / 8) {
        *why = "LIVE record's seqs overrun it";
        return false;
    }
    if (r->pending_open && (l.answers != r->pending_answers || l.total != r->pending_total)) {
        r->npending = 0; /* the rest of the previous answer was lost: start over with this one */
        r->pending_open = false;
    }
    if (!r->pending_open) {
        r->pending_open = true;
        r->pending_answers = l.answers;
        r->pending_total = l.total;
        r->npending = 0;
    }
    if (r->npending + l.count > l.total) {
        r->pending_open = false;
        r->npending = 0;
        *why = "LIVE answer with more seqs than its total";
        return false;
    }
    report_mem_reserve(&r->pending, &r->pending_cap, r->npending + l.count, sizeof *r->pending);
    memcpy(r->pending + r->npending, rec + HEADER_BYTES + sizeof l, l.count * 8);
    r->npending += l.count;
    r->stats.live_records++;
    if (!(h->flags & PROF_ALLOC_REC_F_MORE)) {
        if (r->npending != l.total) {
            r->pending_open = false;
            r->npending = 0;
            *why = "LIVE answer that ends short of its total";
            return false;
        }
        apply_live(r);
    }
    return true;
}

/* Takes one record whose header and checksum are right. */
static bool take(ReportAllocLog *r, const uint8_t *rec, const ProfCodeRecord *h, const char **why)
{
    switch (h->type) {
    case PROF_ALLOC_REC_START: {
        ProfAllocStart s;
        if (h->size < HEADER_BYTES + sizeof s) {
            *why = "START record too short";
            return false;
        }
        memcpy(&s, rec + HEADER_BYTES, sizeof s);
        if (r->sampling && s.bytes_allocated >= r->period_start)
            r->counted_bytes += s.bytes_allocated - r->period_start; /* the interval changed: one period on */
        r->sampling = true;
        r->period_start = s.bytes_allocated;
        r->interval = s.interval;
        r->stats.starts++;
        counter_seen(r, s.bytes_allocated);
        return true;
    }
    case PROF_ALLOC_REC_SAMPLE:
        return take_sample(r, rec, h, why);
    case PROF_ALLOC_REC_STOP: {
        ProfAllocStop s;
        if (h->size < HEADER_BYTES + sizeof s) {
            *why = "STOP record too short";
            return false;
        }
        memcpy(&s, rec + HEADER_BYTES, sizeof s);
        if (r->sampling && s.bytes_allocated >= r->period_start)
            r->counted_bytes += s.bytes_allocated - r->period_start;
        r->sampling = false;
        r->stop_why = s.why;
        r->stats.stops++;
        counter_seen(r, s.bytes_allocated);
        return true;
    }
    case PROF_ALLOC_REC_LIVE:
        return take_live(r, rec, h, why);
    default:
        *why = "record of an unknown type";
        return false;
    }
}

/* -- Polling ------------------------------------------------------------------- */

/* Everything up to the writer's end is given up; the next good record's
 * seq tells how much that was. */
static void resync(ReportAllocLog *r, uint64_t write_end)
{
    r->pos = write_end;
    r->resync = true;
    r->pending_open = false; /* part of an answer may be in what was skipped */
    r->npending = 0;
}

/* Parses the records of the chunk [r->pos, r->pos + n); answers the bytes
 * consumed. *why: the first trouble; *stop: at a record whose length
 * cannot be trusted (at r->pos + the answer), else only bodies that failed
 * their checks were skipped. */
static size_t parse_chunk(ReportAllocLog *r, size_t n, uint64_t write_end, size_t *taken, const char **why,
                          uint64_t *bad_seq, bool *stop)
{
    size_t off = 0;
    while (off < n) {
        ProfCodeRecord h;
        const char *ring_why = NULL;
        ReportRingRecord got = report_ring_record(&r->ring, off, n, r->pos, write_end, &h, &ring_why);
        if (got == REPORT_RING_PARTIAL)
            return off;
        if (got == REPORT_RING_BAD) {
            *why = ring_why;
            *stop = true;
            return off;
        }
        if (h.seq < r->next_seq || (!r->resync && h.seq != r->next_seq)) {
            /* a gap with a good checksum is a record we did not see (a
             * damaged one skipped); one going back is not the log's */
            if (h.seq > r->next_seq && !r->resync) {
                r->stats.lost += h.seq - r->next_seq;
                r->next_seq = h.seq;
            } else {
                *why = "record out of sequence";
                *bad_seq = h.seq;
                *stop = true;
                return off;
            }
        }
        if (!r->uncounted)
            r->stats.lost += h.seq - r->next_seq;
        r->uncounted = false;
        r->resync = false;
        r->next_seq = h.seq + 1;
        const char *body_why = NULL;
        if (take(r, r->ring.buf + off, &h, &body_why)) {
            r->stats.records++;
            (*taken)++;
        } else {
            /* its size and checksum are right: only this record is lost */
            r->stats.bad_records++;
            *bad_seq = h.seq;
            if (!*why)
                *why = body_why;
        }
        off += h.size;
    }
    return off;
}

size_t report_alloclog_poll(ReportAllocLog *r, char *warn, size_t warnlen)
{
    if (warn && warnlen)
        warn[0] = '\0';
    ProfAllocLogControl c;
    char why_ring[256];
    if (!report_ring_refresh(&r->ring, &c, sizeof c, why_ring, sizeof why_ring)) {
        report_ring_say(warn, warnlen, "%s", why_ring);
        return 0;
    }
    if (c.magic != PROF_ALLOC_LOG_MAGIC) {
        report_ring_say(warn, warnlen, "allocation log: its control block changed its magic; ignored");
        return 0;
    }
    r->control = c;
    if (!r->joined) {
        r->joined = true;
        if (r->from_start && c.write_begin <= r->ring.ring_size) {
            r->pos = 0; /* nothing overwritten yet: every record is there */
            r->next_seq = 0;
        } else {
            r->pos = c.write_end;
            r->resync = true;
            r->uncounted = true; /* the records before are not ours to miss */
            if (r->from_start) {
                r->stats.overruns++;
                report_ring_say(warn, warnlen, "allocation log: the VM overwrote samples before vmprofd first read the log");
            }
        }
    }
    size_t taken = 0;
    for (int resyncs = 0; resyncs <= MAX_RESYNCS_PER_POLL;) {
        uint64_t E = c.write_end;
        if (r->pos == E)
            break;
        if (E - r->pos > r->ring.ring_size) {
            r->stats.overruns++;
            report_ring_say(warn, warnlen, "allocation log: the VM overwrote %" PRIu64 " bytes of samples before they were read",
                E - r->pos - r->ring.ring_size);
            resync(r, E);
            resyncs++;
            continue;
        }
        size_t n = report_ring_chunk(&r->ring, r->pos, E);
        ReportRingCopy copied = report_ring_copy(&r->ring, r->pos, n, c.write_begin);
        if (copied == REPORT_RING_UNREADABLE) {
            report_ring_say(warn, warnlen, "allocation log: the ring cannot be read any more");
            break;
        }
        if (copied == REPORT_RING_OVERRUN) {
            r->stats.overruns++;
            report_ring_say(warn, warnlen, "allocation log: the VM overwrote samples while they were being read");
            resync(r, E);
            resyncs++;
            continue;
        }
        const char *why = NULL;
        uint64_t bad_seq = r->next_seq;
        bool stop = false;
        size_t used = parse_chunk(r, n, E, &taken, &why, &bad_seq, &stop);
        uint64_t at = r->pos + used;
        r->pos = at;
        if (why)
            report_ring_say(warn, warnlen, "allocation log: %s at position %" PRIu64 " (seq %" PRIu64 ")%s", why, at, bad_seq,
                stop ? "; resumed at the newest record" : "; that record skipped");
        if (stop) {
            r->stats.bad_records++;
            resync(r, E);
            resyncs++;
            continue;
        }
        if (used == 0)
            break; /* cannot be: a record is at most half a chunk */
    }
    return taken;
}
