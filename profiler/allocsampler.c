/*
 * profiler/allocsampler.c — allocation samples into the allocation logs
 * (allocsampler.h, proto/allocabi.h).
 */
#define _GNU_SOURCE /* gettid */
#include "profiler/allocsampler.h"

#include "gc/heap.h"
#include "gc/weak.h"
#include "profiler/ownmem.h"
#include "profiler/ringlog.h"
#include "report/stackcapture.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CONTROL_BYTES 256u /* the ring starts here: sizeof(ProfAllocLogControl), 64-aligned */
_Static_assert(CONTROL_BYTES >= sizeof(ProfAllocLogControl) && CONTROL_BYTES % 64 == 0, "ring offset");
#define HEADER_BYTES sizeof(ProfCodeRecord)
/* A record is at most this fraction of its ring (the code log's rule): the
 * smallest ring (64 KiB) takes 8 KiB, a SAMPLE ~2.5 KB. */
#define MAX_RECORD_FRACTION 8

enum { LOG_EXPORT, LOG_PRIVATE, LOG_COUNT };

typedef struct AllocLog {
    ProfAllocLogControl *ctl; /* NULL: closed */
    ProfRingLog ring;
    uint64_t max_record;
    uint64_t interval;        /* what it samples with now (START written); 0: not sampling */
    uint64_t seen_interval, seen_until, seen_live;
    bool live_pending;        /* a full GC was asked for, to answer live_value */
    uint64_t live_value, live_full_gcs;
} AllocLog;

static AllocLog logs[LOG_COUNT];
/* The private log's reader, called when half its ring is unread (it reads
 * only between records, on the VM thread, as this writes) */
static void (*private_drain)(void *ctx);
static void *private_drain_ctx;
static uint64_t private_drained_at; /* the ring's end at the last call */
static void *private_region;
static ProfAllocClassNameFn class_name_of;
static ProfWalkFacts walk_facts;
static bool have_walk_facts;
static uint64_t env_interval, env_live; /* STVM_ALLOC_SAMPLE(_LIVE), read at init */
static uint64_t now_cached;      /* CLOCK_MONOTONIC as of the last look */
static uint64_t collections_seen;
static StackReader reader;
static ProfRawStack walked;      /* scratch: too big for the C stack of an allocation */
/* One record being assembled: a SAMPLE (~2.5 KB) or a LIVE of up to 8K
 * seqs (static: its pages cost nothing until a LIVE answer touches them). */
static uint8_t record[64u << 10];
_Static_assert(sizeof record >= HEADER_BYTES + sizeof(ProfAllocSample) + 8 + PROF_ALLOC_CLASS_NAME_MAX + sizeof(ProfRawStack),
               "a SAMPLE fits");

static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

size_t prof_alloclog_region_bytes(uint64_t ring_bytes) { return CONTROL_BYTES + (size_t)ring_bytes; }

static bool log_init(AllocLog *l, void *region, size_t region_bytes, uint64_t ring_bytes, char *err, size_t errlen)
{
    if (!prof_ringlog_geometry_ok("allocation log", ring_bytes, PROF_ALLOC_LOG_MIN_RING, PROF_ALLOC_LOG_MAX_RING, region,
                                  region_bytes, prof_alloclog_region_bytes(ring_bytes), err, errlen))
        return false;
    memset(l, 0, sizeof *l);
    /* only the control block: ring pages nobody writes stay unallocated */
    memset(region, 0, CONTROL_BYTES);
    ProfAllocLogControl *c = region;
    c->control_size = sizeof(ProfAllocLogControl);
    c->ring_offset = CONTROL_BYTES;
    c->ring_size = ring_bytes;
    l->ring = (ProfRingLog){
        .ring = (uint8_t *)region + CONTROL_BYTES, .ring_size = ring_bytes, .write_begin = &c->write_begin,
        .write_end = &c->write_end, .records = &c->records,
    };
    l->max_record = ring_bytes / MAX_RECORD_FRACTION;
    l->ctl = c;
    __atomic_store_n(&c->magic, PROF_ALLOC_LOG_MAGIC, __ATOMIC_RELEASE);
    return true;
}

/* Commits the record in `record` (body in place) and the VM's state words. */
static uint64_t log_write(AllocLog *l, uint32_t size, uint16_t type, uint16_t flags, uint64_t time_ns)
{
    uint64_t seq = l->ring.seq;
    prof_ringlog_commit(&l->ring, record, size, type, flags, time_ns);
    __atomic_store_n(&l->ctl->bytes_allocated, gc_stats.bytes_allocated, __ATOMIC_RELAXED);
    if (l == &logs[LOG_PRIVATE] && private_drain && l->ring.end - private_drained_at > l->ring.ring_size / 2) {
        private_drained_at = l->ring.end;
        private_drain(private_drain_ctx);
    }
    return seq;
}

static void write_start(AllocLog *l, uint64_t interval, uint64_t t)
{
    ProfAllocStart b = {.interval = interval, .bytes_allocated = gc_stats.bytes_allocated};
    memcpy(record + HEADER_BYTES, &b, sizeof b);
    log_write(l, (uint32_t)(HEADER_BYTES + sizeof b), PROF_ALLOC_REC_START, 0, t);
    __atomic_store_n(&l->ctl->active_interval, interval, __ATOMIC_RELAXED);
}

static void write_stop(AllocLog *l, uint32_t why, uint64_t t)
{
    ProfAllocStop b = {.bytes_allocated = gc_stats.bytes_allocated, .why = why};
    memcpy(record + HEADER_BYTES, &b, sizeof b);
    log_write(l, (uint32_t)(HEADER_BYTES + sizeof b), PROF_ALLOC_REC_STOP, 0, t);
    __atomic_store_n(&l->ctl->active_interval, 0, __ATOMIC_RELAXED);
}

/* -- LIVE answers -------------------------------------------------------------- */

typedef struct LiveWalk {
    AllocLog *l;
    unsigned shift;      /* where this log's seq + 1 is in a tag */
    uint64_t answers, total, count, gc_time;
    bool counting;       /* the first pass counts, the second writes */
    uint64_t per_record; /* seqs that fit one record */
} LiveWalk;

static void flush_live(LiveWalk *w, bool more)
{
    ProfAllocLive b = {.answers = w->answers, .count = w->count, .total = w->total, .gc_time_ns = w->gc_time};
    memcpy(record + HEADER_BYTES, &b, sizeof b);
    log_write(w->l, (uint32_t)(HEADER_BYTES + sizeof b + 8 * w->count), PROF_ALLOC_REC_LIVE,
              more ? PROF_ALLOC_REC_F_MORE : 0, clock_ns());
    w->count = 0;
}

static uint64_t tag_seq(uint64_t tag, unsigned shift) { return (tag >> shift) & 0xffffffffu; }

static void live_one(uint64_t tag, Oop obj, void *ctx)
{
    (void)obj;
    LiveWalk *w = ctx;
    uint64_t s = tag_seq(tag, w->shift);
    if (s == 0) return; /* not sampled for this log */
    if (w->counting) {
        w->total++;
        return;
    }
    if (w->count == w->per_record) flush_live(w, true);
    uint64_t seq = s - 1;
    memcpy(record + HEADER_BYTES + sizeof(ProfAllocLive) + 8 * w->count, &seq, 8);
    w->count++;
}

/* The sampled objects alive now (as of the last collection), answering
 * `answers`: records of at most an eighth of the ring each. */
static void write_live(AllocLog *l, uint64_t answers, uint64_t gc_time)
{
    LiveWalk w = {.l = l, .shift = l == &logs[LOG_EXPORT] ? 0 : 32, .answers = answers, .gc_time = gc_time};
    uint64_t room = l->max_record < sizeof record ? l->max_record : sizeof record;
    w.per_record = (room - HEADER_BYTES - sizeof(ProfAllocLive)) / 8;
    w.counting = true;
    gc_weak_each(live_one, &w);
    w.counting = false;
    gc_weak_each(live_one, &w);
    flush_live(&w, false);
    __atomic_store_n(&l->ctl->live_answered, answers, __ATOMIC_RELAXED);
    __atomic_store_n(&l->ctl->tracked, gc_weak_count(), __ATOMIC_RELAXED);
}

/* -- Requests -------------------------------------------------------------------- */

/* What l's request asks for now: an interval, 0 with why. */
static uint64_t wanted(AllocLog *l, uint32_t *why)
{
    ProfAllocLogControl *c = l->ctl;
    uint64_t until = __atomic_load_n(&c->request_until_ns, __ATOMIC_ACQUIRE);
    uint64_t interval = __atomic_load_n(&c->request_interval, __ATOMIC_RELAXED);
    if (until != l->seen_until || interval != l->seen_interval) {
        l->seen_until = until;
        l->seen_interval = interval;
        now_cached = clock_ns();
    }
    *why = interval == 0 ? PROF_ALLOC_STOP_CANCELLED : PROF_ALLOC_STOP_LAPSED;
    return interval != 0 && until > now_cached ? interval : 0;
}

static void poll(void)
{
    uint64_t collections = gc_stats.scavenges + gc_stats.full_gcs;
    if (collections != collections_seen) {
        collections_seen = collections;
        now_cached = clock_ns();
    }
    uint64_t want[LOG_COUNT] = {0}, least = 0;
    uint32_t why[LOG_COUNT] = {0};
    for (int i = 0; i < LOG_COUNT; i++) {
        AllocLog *l = &logs[i];
        if (!l->ctl) continue;
        want[i] = wanted(l, &why[i]);
        if (want[i] && (!least || want[i] < least)) least = want[i];
        uint64_t live = __atomic_load_n(&l->ctl->request_live, __ATOMIC_RELAXED);
        if (live != l->seen_live && !l->live_pending) {
            l->seen_live = live;
            l->live_pending = true;
            l->live_value = live;
            l->live_full_gcs = gc_stats.full_gcs;
            gc_collect_full_soon();
        } else if (l->live_pending && gc_stats.full_gcs > l->live_full_gcs) {
            l->live_pending = false;
            write_live(l, l->live_value, now_cached);
        }
    }
    if (least != gc_alloc_sampling_interval()) gc_alloc_sampling_set(least);
    /* Nobody samples, nobody waits for an answer: the objects followed are
     * of no more use (a profiler asks for what is alive before it cancels). */
    bool keep = least != 0;
    for (int i = 0; i < LOG_COUNT; i++)
        keep = keep || (logs[i].ctl && (logs[i].live_pending || logs[i].ctl->request_live_at_exit));
    if (!keep && gc_weak_count()) gc_weak_clear();
    for (int i = 0; i < LOG_COUNT; i++) {
        AllocLog *l = &logs[i];
        if (!l->ctl) continue;
        if (!want[i] && l->interval) write_stop(l, why[i], now_cached);
        else if (want[i] && l->interval != least) write_start(l, least, now_cached);
        l->interval = want[i] ? least : 0;
    }
}

void prof_allocsampler_poll(void) { gc_alloc_poll_watch(); }

/* -- Samples ---------------------------------------------------------------------- */

/* r14 and r15 are fixed registers in the whole VM (-ffixed-r14/-r15): the
 * interpreter's frame pointer and bytecode ip, whatever C runs. */
static void fixed_registers(uint64_t *r14, uint64_t *r15)
{
#if defined(__x86_64__)
    __asm__ volatile("movq %%r14, %0\n\tmovq %%r15, %1" : "=r"(*r14), "=r"(*r15));
#else
    *r14 = *r15 = 0;
#endif
}

static void sample(Oop obj, size_t bytes, uint64_t weight, bool old, void *const *frame)
{
    uint64_t t = clock_ns();
    now_cached = t;
    /* The walk starts in the code that asked for the object: the allocator's
     * frame holds that code's frame pointer and the return address into it
     * (gc/heap.h), and its stack pointer is what it was before the call.
     * So neither the allocator's frames nor this function's are walked. */
    StackRegs regs = {
        .ip = (uint64_t)(uintptr_t)frame[1], .sp = (uint64_t)(uintptr_t)(frame + 2),
        .bp = (uint64_t)(uintptr_t)frame[0],
    };
    fixed_registers(&regs.r14, &regs.r15);
    report_stackcapture_reset(&reader, prof_ownmem_read, &walk_facts);
    report_stackcapture(&reader, have_walk_facts ? &walk_facts : NULL, &regs, &walked);
    walked.pid = (uint32_t)getpid();
    walked.tid = (uint32_t)gettid();
    walked.time_ns = t;

    char buf[PROF_ALLOC_CLASS_NAME_MAX + 1];
    const char *name = class_name_of ? class_name_of(obj_class_index(obj), buf, sizeof buf) : "?";
    size_t name_len = strnlen(name, PROF_ALLOC_CLASS_NAME_MAX);
    uint32_t raw_offset = (uint32_t)(HEADER_BYTES + sizeof(ProfAllocSample) + pad8(name_len + 1));
    uint32_t size = raw_offset + (uint32_t)sizeof(ProfRawStack);
    memset(record + HEADER_BYTES, 0, raw_offset - HEADER_BYTES);
    ProfAllocSample b = {
        .weight = weight, .size = bytes, .bytes_allocated = gc_stats.bytes_allocated,
        .class_index = obj_class_index(obj), .name_len = (uint16_t)name_len, .flags = old ? PROF_ALLOC_F_OLD : 0,
        .raw_offset = raw_offset, .raw_size = (uint32_t)sizeof(ProfRawStack),
    };
    memcpy(record + HEADER_BYTES + sizeof b, name, name_len);
    memcpy(record + raw_offset, &walked, sizeof walked);

    uint64_t tag = 0;
    for (int i = 0; i < LOG_COUNT; i++) {
        AllocLog *l = &logs[i];
        if (!l->ctl || !l->interval || size > l->max_record) continue;
        uint64_t seq = l->ring.seq;
        tag |= ((seq + 1) & 0xffffffffu) << (i == LOG_EXPORT ? 0 : 32);
    }
    bool tracked = tag != 0 && gc_weak_add(obj, tag);
    if (!tracked) b.flags |= PROF_ALLOC_F_UNTRACKED;
    memcpy(record + HEADER_BYTES, &b, sizeof b);
    for (int i = 0; i < LOG_COUNT; i++) {
        AllocLog *l = &logs[i];
        if (!l->ctl || !l->interval || size > l->max_record) continue;
        log_write(l, size, PROF_ALLOC_REC_SAMPLE, 0, t);
        ProfAllocLogControl *c = l->ctl;
        __atomic_store_n(&c->samples, c->samples + 1, __ATOMIC_RELAXED);
        if (!tracked) __atomic_store_n(&c->untracked, c->untracked + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&c->tracked, gc_weak_count(), __ATOMIC_RELAXED);
    }
}

/* -- Set-up ------------------------------------------------------------------------- */

static const GcAllocSampler gc_sampler = {poll, sample};

/* BYTES, a decimal count; 0 when absent or not a number. */
static uint64_t env_bytes(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || v[0] == '-') {
        fprintf(stderr, "stvm: warning: %s=%s is not a byte count; ignored\n", name, v);
        return 0;
    }
    return n;
}

void prof_allocsampler_init(const ProfWalkFacts *walk, ProfAllocClassNameFn class_name)
{
    if (walk) {
        walk_facts = *walk;
        have_walk_facts = true;
    }
    class_name_of = class_name;
    env_interval = env_bytes(PROF_ALLOC_SAMPLE_ENV);
    env_live = env_bytes(PROF_ALLOC_SAMPLE_LIVE_ENV);
    unsetenv(PROF_ALLOC_SAMPLE_ENV); /* the processes it starts do not inherit it */
    unsetenv(PROF_ALLOC_SAMPLE_LIVE_ENV);
    prof_ownmem_init();
    gc_alloc_sampling_seed(((uint64_t)getpid() << 32) ^ clock_ns());
    gc_set_alloc_sampler(&gc_sampler);
}

bool prof_allocsampler_open_export(void *region, size_t region_bytes, uint64_t ring_bytes, char *err, size_t errlen)
{
    if (!log_init(&logs[LOG_EXPORT], region, region_bytes, ring_bytes, err, errlen)) return false;
    ProfAllocLogControl *c = logs[LOG_EXPORT].ctl;
    if (env_interval) {
        c->request_interval = env_interval;
        c->request_live_at_exit = env_live != 0;
        __atomic_store_n(&c->request_until_ns, clock_ns() + PROF_ALLOC_LEASE_NS, __ATOMIC_RELEASE);
    }
    gc_alloc_poll_watch();
    return true;
}

void prof_allocsampler_no_export(void)
{
    if (env_interval)
        fprintf(stderr, "stvm: warning: %s ignored: no allocation sample log (--no-export, --no-alloc-log, or it could "
                        "not be made)\n", PROF_ALLOC_SAMPLE_ENV);
}

ProfAllocLogControl *prof_allocsampler_private_open(uint64_t ring_bytes, char *err, size_t errlen)
{
    if (private_region) {
        snprintf(err, errlen, "the private allocation log is open already");
        return NULL;
    }
    void *region = aligned_alloc(64, pad8(prof_alloclog_region_bytes(ring_bytes) + 63) & ~(uint64_t)63);
    if (!region) {
        snprintf(err, errlen, "no memory for a private allocation log of %llu bytes", (unsigned long long)ring_bytes);
        return NULL;
    }
    if (!log_init(&logs[LOG_PRIVATE], region, prof_alloclog_region_bytes(ring_bytes), ring_bytes, err, errlen)) {
        free(region);
        return NULL;
    }
    private_region = region;
    return logs[LOG_PRIVATE].ctl;
}

void prof_allocsampler_private_drain(void (*fn)(void *ctx), void *ctx)
{
    private_drain = fn;
    private_drain_ctx = ctx;
    private_drained_at = logs[LOG_PRIVATE].ctl ? logs[LOG_PRIVATE].ring.end : 0;
}

void prof_allocsampler_private_close(void)
{
    private_drain = NULL;
    if (!private_region) return;
    memset(&logs[LOG_PRIVATE], 0, sizeof logs[LOG_PRIVATE]);
    free(private_region);
    private_region = NULL;
    gc_alloc_poll_watch(); /* the interval the export's request alone asks for */
}

void prof_allocsampler_exit(bool can_collect)
{
    static bool exited;
    if (exited) return;
    exited = true;
    bool live = false;
    uint64_t t = clock_ns();
    for (int i = 0; i < LOG_COUNT; i++) {
        AllocLog *l = &logs[i];
        if (!l->ctl) continue;
        if (l->interval) write_stop(l, PROF_ALLOC_STOP_EXIT, t);
        l->interval = 0;
        live = live || __atomic_load_n(&l->ctl->request_live_at_exit, __ATOMIC_RELAXED);
    }
    gc_set_alloc_sampler(NULL);
    if (!live) return;
    if (can_collect) gc_collect(true);
    t = clock_ns();
    for (int i = 0; i < LOG_COUNT; i++)
        if (logs[i].ctl && __atomic_load_n(&logs[i].ctl->request_live_at_exit, __ATOMIC_RELAXED))
            write_live(&logs[i], PROF_ALLOC_LIVE_AT_EXIT, t);
}
