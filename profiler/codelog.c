/*
 * profiler/codelog.c — writing the code event log (see codelog.h and
 * export.h, "The code event log").
 */
#include "profiler/codelog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A live piece: the body of its LOAD record (ProfCodeLoadRecord and what
 * follows it), the record's flags, and its key. */
struct ProfCodeLogEntry {
    uint64_t start;  /* key, with space; mirrors body->start */
    uint8_t *body;   /* NULL: empty slot */
    uint32_t body_len;
    uint16_t flags;  /* PROF_CODE_REC_F_TRUNCATED survives into checkpoints */
    uint8_t space;
};

#define HEADER_BYTES ((uint64_t)sizeof(ProfCodeRecord))
#define CONTROL_BYTES 128u /* the ring starts here: sizeof(ProfCodeLogControl), 64-aligned */
_Static_assert(CONTROL_BYTES >= sizeof(ProfCodeLogControl) && CONTROL_BYTES % 64 == 0, "ring offset");

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

size_t prof_codelog_region_bytes(uint64_t ring_bytes) { return CONTROL_BYTES + (size_t)ring_bytes; }

bool prof_codelog_init(ProfCodeLog *log, void *region, size_t region_bytes, uint64_t ring_bytes,
                       uint64_t zone_start, uint64_t zone_end, char *err, size_t errlen)
{
    memset(log, 0, sizeof *log);
    if (ring_bytes < PROF_CODE_LOG_MIN_RING || ring_bytes > PROF_CODE_LOG_MAX_RING ||
        (ring_bytes & (ring_bytes - 1)) != 0) {
        snprintf(err, errlen, "the code log ring must be a power of two from %u KiB to %llu MiB, not %llu bytes",
                 PROF_CODE_LOG_MIN_RING >> 10, (unsigned long long)(PROF_CODE_LOG_MAX_RING >> 20),
                 (unsigned long long)ring_bytes);
        return false;
    }
    if (region_bytes < prof_codelog_region_bytes(ring_bytes) || ((uintptr_t)region & 63) != 0) {
        snprintf(err, errlen, "the code log region (%zu bytes) is too small or misaligned for a %llu-byte ring",
                 region_bytes, (unsigned long long)ring_bytes);
        return false;
    }
    /* Only the control block: readers never look at ring bytes no record
     * covers, and leaving them alone keeps untouched pages unallocated. */
    memset(region, 0, CONTROL_BYTES);
    log->ctl = region;
    log->ring = (uint8_t *)region + CONTROL_BYTES;
    log->ring_size = ring_bytes;
    log->max_record = ring_bytes / PROF_CODE_LOG_MAX_RECORD_FRACTION;
    log->zone_start = zone_start;
    log->zone_end = zone_end;
    log->ctl->control_size = sizeof(ProfCodeLogControl);
    log->ctl->ring_offset = CONTROL_BYTES;
    log->ctl->ring_size = ring_bytes;
    __atomic_store_n(&log->ctl->magic, PROF_CODE_LOG_MAGIC, __ATOMIC_RELEASE);
    return true;
}

void prof_codelog_release(ProfCodeLog *log)
{
    for (size_t i = 0; i < log->cap; i++)
        free(log->slots[i].body);
    free(log->slots);
    free(log->scratch);
    log->slots = NULL;
    log->scratch = NULL;
    log->cap = log->count = log->scratch_cap = 0;
}

static void warn_once(ProfCodeLog *log, bool *warned, const char *msg)
{
    if (*warned)
        return;
    *warned = true;
    if (log->warn)
        log->warn(msg);
}

/* -- Records into the ring ------------------------------------------------------- */

static uint8_t *scratch(ProfCodeLog *log, size_t n)
{
    if (n > log->scratch_cap) {
        size_t cap = log->scratch_cap ? log->scratch_cap : 1024;
        while (cap < n)
            cap *= 2;
        uint8_t *p = realloc(log->scratch, cap);
        if (!p)
            return NULL;
        log->scratch = p;
        log->scratch_cap = cap;
    }
    return log->scratch;
}

/* Stamps, checksums and commits the record assembled in rec (size bytes,
 * body already in place) following the protocol of export.h. */
static void commit(ProfCodeLog *log, uint8_t *rec, uint32_t size, uint16_t type, uint16_t flags, uint64_t time_ns)
{
    ProfCodeRecord h = {
        .size = size, .seq = log->seq, .time_ns = time_ns, .type = type, .flags = flags,
    };
    memcpy(rec, &h, sizeof h);
    h.checksum = prof_code_log_checksum(rec + 8, size - 8);
    memcpy(rec + offsetof(ProfCodeRecord, checksum), &h.checksum, sizeof h.checksum);

    ProfCodeLogControl *c = log->ctl;
    uint64_t end = log->end + size;
    __atomic_store_n(&c->write_begin, end, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* readers see write_begin move before any byte it covers */
    uint64_t at = log->end & (log->ring_size - 1);
    uint64_t first = log->ring_size - at < size ? log->ring_size - at : size;
    memcpy(log->ring + at, rec, first);
    memcpy(log->ring, rec + first, size - first);
    log->end = end;
    log->seq++;
    __atomic_store_n(&c->records, log->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&c->write_end, end, __ATOMIC_RELEASE);
}

/* -- The mirror -------------------------------------------------------------- */

static size_t slot_of(const ProfCodeLog *log, uint8_t space, uint64_t start)
{
    uint64_t h = (start ^ ((uint64_t)space << 63)) * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing (Knuth 6.4) */
    return (size_t)(h >> 20) & (log->cap - 1);
}

static ProfCodeLogEntry *mirror_find(ProfCodeLog *log, uint8_t space, uint64_t start)
{
    if (log->cap == 0)
        return NULL;
    for (size_t i = slot_of(log, space, start);; i = (i + 1) & (log->cap - 1)) {
        ProfCodeLogEntry *e = &log->slots[i];
        if (!e->body)
            return NULL;
        if (e->start == start && e->space == space)
            return e;
    }
}

static uint64_t entry_ring_bytes(const ProfCodeLogEntry *e) { return HEADER_BYTES + e->body_len; }

/* Takes the entry out of its slot and shifts the entries after it that
 * probed past it (linear probing without tombstones); answers its body,
 * now the caller's. */
static uint8_t *mirror_detach(ProfCodeLog *log, ProfCodeLogEntry *gone)
{
    uint8_t *body = gone->body;
    log->mirror_bytes -= entry_ring_bytes(gone);
    gone->body = NULL;
    log->count--;
    size_t hole = (size_t)(gone - log->slots);
    for (size_t i = (hole + 1) & (log->cap - 1); log->slots[i].body; i = (i + 1) & (log->cap - 1)) {
        size_t home = slot_of(log, log->slots[i].space, log->slots[i].start);
        /* the entry at i may fill the hole unless its home lies cyclically in (hole, i] */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            log->slots[hole] = log->slots[i];
            log->slots[i].body = NULL;
            hole = i;
        }
    }
    return body;
}

static void mirror_remove(ProfCodeLog *log, ProfCodeLogEntry *gone) { free(mirror_detach(log, gone)); }

static bool mirror_grow(ProfCodeLog *log)
{
    /* 256 slots (6 KiB) to start: a start of stvm announces ~200 pieces
     * (the core's methods, the trampolines), and each page of an empty
     * table calloc clears is a page fault (scripts/bench-startup). */
    size_t ncap = log->cap ? log->cap * 2 : 256;
    ProfCodeLogEntry *old = log->slots;
    size_t ocap = log->cap;
    log->slots = calloc(ncap, sizeof *log->slots);
    if (!log->slots) {
        log->slots = old;
        return false;
    }
    log->cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].body)
            continue;
        size_t j = slot_of(log, old[i].space, old[i].start);
        while (log->slots[j].body)
            j = (j + 1) & (ncap - 1);
        log->slots[j] = old[i];
    }
    free(old);
    return true;
}

static void mirror_failed(ProfCodeLog *log)
{
    log->mirror_failed = true;
    log->ctl->flags |= PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG;
    warn_once(log, &log->warned_oom, "out of memory for the code log's mirror of live code: no more checkpoints; "
                       "profilers that join later or fall behind will miss code");
}

/* Takes over body (malloc'd). */
static void mirror_put(ProfCodeLog *log, uint8_t space, uint64_t start, uint8_t *body, uint32_t len, uint16_t flags)
{
    if (log->mirror_failed) {
        free(body);
        return;
    }
    ProfCodeLogEntry *e = mirror_find(log, space, start);
    if (e)
        mirror_remove(log, e); /* a piece at the same start was never freed: it is gone now */
    if ((log->count + 1) * 4 > log->cap * 3 && !mirror_grow(log)) {
        free(body);
        mirror_failed(log);
        return;
    }
    size_t i = slot_of(log, space, start);
    while (log->slots[i].body)
        i = (i + 1) & (log->cap - 1);
    log->slots[i] = (ProfCodeLogEntry){.start = start, .body = body, .body_len = len, .flags = flags, .space = space};
    log->count++;
    log->mirror_bytes += entry_ring_bytes(&log->slots[i]);
}

/* The live piece at start, in the space its address says when unknown. */
static ProfCodeLogEntry *mirror_lookup(ProfCodeLog *log, uint64_t start, uint8_t *space)
{
    for (uint8_t s = 0; s < PROF_CODE_SPACE_COUNT; s++) {
        ProfCodeLogEntry *e = mirror_find(log, s, start);
        if (e) {
            *space = s;
            return e;
        }
    }
    *space = start >= log->zone_start && start < log->zone_end ? PROF_CODE_SPACE_MACHINE : PROF_CODE_SPACE_BYTECODES;
    return NULL;
}

/* -- Checkpoints ------------------------------------------------------------- */

static void write_begin_record(ProfCodeLog *log, uint64_t time_ns)
{
    uint8_t rec[HEADER_BYTES];
    log->in_checkpoint = true;
    log->cp_begin_seq = log->seq;
    log->cp_begin_pos = log->end;
    log->cp_pieces = 0;
    log->last_checkpoint = log->end;
    commit(log, rec, sizeof rec, PROF_CODE_REC_CHECKPOINT_BEGIN, 0, time_ns);
}

void prof_codelog_checkpoint_begin(ProfCodeLog *log, uint64_t time_ns)
{
    if (!log->in_checkpoint)
        write_begin_record(log, time_ns);
}

void prof_codelog_checkpoint_end(ProfCodeLog *log, uint64_t time_ns)
{
    if (!log->in_checkpoint)
        return;
    uint8_t rec[HEADER_BYTES + sizeof(ProfCodeCheckpointEnd)];
    ProfCodeCheckpointEnd body = {.begin_seq = log->cp_begin_seq, .pieces = log->cp_pieces};
    memcpy(rec + HEADER_BYTES, &body, sizeof body);
    commit(log, rec, sizeof rec, PROF_CODE_REC_CHECKPOINT_END, 0, time_ns);
    log->in_checkpoint = false;
    /* Published only if it survived its own writing (the first one, made
     * from the VM's replay, has no size check before it). */
    if (log->end - log->cp_begin_pos <= log->ring_size) {
        __atomic_store_n(&log->ctl->checkpoint_pos, log->cp_begin_pos, __ATOMIC_RELEASE);
        __atomic_store_n(&log->ctl->checkpoints, log->ctl->checkpoints + 1, __ATOMIC_RELAXED);
    }
    if (log->end - log->cp_begin_pos > log->ring_size / 2 - log->max_record) {
        log->ctl->flags |= PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG;
        warn_once(log, &log->warned_too_big,
                  "the code log ring is too small for a checkpoint of the live code: profilers that join "
                  "later or fall behind will miss code (raise --export-log-size)");
    }
}

static void write_entry(ProfCodeLog *log, const ProfCodeLogEntry *e, uint64_t time_ns)
{
    uint32_t size = (uint32_t)entry_ring_bytes(e);
    uint8_t *rec = scratch(log, size);
    if (!rec)
        return;
    memcpy(rec + HEADER_BYTES, e->body, e->body_len);
    commit(log, rec, size, PROF_CODE_REC_LOAD, (uint16_t)(e->flags | PROF_CODE_REC_F_CHECKPOINT), time_ns);
    log->cp_pieces++;
}

void prof_codelog_checkpoint(ProfCodeLog *log, uint64_t time_ns)
{
    if (log->in_checkpoint || log->mirror_failed)
        return;
    uint64_t need = HEADER_BYTES + log->mirror_bytes + HEADER_BYTES + sizeof(ProfCodeCheckpointEnd);
    if (need > log->ring_size / 2 - log->max_record) {
        log->last_checkpoint = log->end; /* try again after another half ring */
        log->ctl->flags |= PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG;
        warn_once(log, &log->warned_too_big,
                  "the code log ring is too small for a checkpoint of the live code: profilers that join "
                  "later or fall behind will miss code (raise --export-log-size)");
        return;
    }
    write_begin_record(log, time_ns);
    for (size_t i = 0; i < log->cap; i++)
        if (log->slots[i].body)
            write_entry(log, &log->slots[i], time_ns);
    prof_codelog_checkpoint_end(log, time_ns);
}

/* Before every event outside a checkpoint: a checkpoint when the stream
 * has grown by half a ring since the last (export.h says why half). */
static void maybe_checkpoint(ProfCodeLog *log, uint64_t time_ns)
{
    if (!log->in_checkpoint && log->end - log->last_checkpoint >= log->ring_size / 2)
        prof_codelog_checkpoint(log, time_ns);
}

/* -- Events ---------------------------------------------------------------- */

static size_t bounded_len(const char *s, size_t max)
{
    if (!s)
        return 0;
    size_t n = strnlen(s, max + 1);
    return n;
}

void prof_codelog_load(ProfCodeLog *log, uint64_t time_ns, const ProfCodeLoad *e)
{
    maybe_checkpoint(log, time_ns);
    size_t name_len = bounded_len(e->name, PROF_CODE_LOG_NAME_MAX);
    if (name_len > PROF_CODE_LOG_NAME_MAX)
        name_len = PROF_CODE_LOG_NAME_MAX; /* cut */
    size_t source_len = bounded_len(e->source, PROF_CODE_LOG_SOURCE_MAX);
    if (source_len > PROF_CODE_LOG_SOURCE_MAX)
        source_len = 0; /* a cut path would name another file */
    uint32_t map_count = e->map ? e->map_count : 0, line_count = e->lines ? e->line_count : 0;
    uint16_t flags = 0;
    /* the unwind pairs are never cut: without them a stack through this
     * piece would be guessed */
    uint32_t unwind_count = e->unwind ? e->unwind_count : 0;
    uint64_t fixed = sizeof(ProfCodeLoadRecord) + name_len + 1 + source_len + 1 + 8ull * unwind_count;
    uint64_t body = pad8(fixed + 8ull * map_count + 8ull * line_count);
    if (HEADER_BYTES + body > log->max_record) {
        line_count = 0;
        flags |= PROF_CODE_REC_F_TRUNCATED;
        body = pad8(fixed + 8ull * map_count);
    }
    if (HEADER_BYTES + body > log->max_record) {
        uint64_t room = log->max_record - HEADER_BYTES - pad8(fixed);
        map_count = (uint32_t)(room / 8); /* the first pairs: the ranges nearest the entry stay right */
        body = pad8(fixed + 8ull * map_count);
    }
    uint32_t size = (uint32_t)(HEADER_BYTES + body);
    uint8_t *rec = scratch(log, size);
    if (!rec) {
        mirror_failed(log); /* the piece is unknown to readers: so must the mirror's state be unusable */
        return;
    }
    memset(rec, 0, size);
    bool bytecodes = e->kind == PROF_CODE_BYTECODES;
    ProfCodeLoadRecord r = {
        .start = e->start, .size = e->size, .code_start = bytecodes ? e->start : e->code_start,
        .kind = e->kind, .bytecode_size = bytecodes ? (uint32_t)e->size : e->bytecode_size,
        .map_count = map_count, .line_count = line_count,
        .name_len = (uint16_t)name_len, .source_len = (uint16_t)source_len, .unwind_count = unwind_count,
    };
    uint8_t *p = rec + HEADER_BYTES;
    memcpy(p, &r, sizeof r);
    p += sizeof r;
    if (map_count)
        memcpy(p, e->map, 8ull * map_count);
    p += 8ull * map_count;
    if (line_count)
        memcpy(p, e->lines, 8ull * line_count);
    p += 8ull * line_count;
    if (name_len)
        memcpy(p, e->name, name_len);
    p += name_len + 1;
    if (source_len)
        memcpy(p, e->source, source_len);
    p += source_len + 1;
    if (unwind_count)
        memcpy(p, e->unwind, 8ull * unwind_count);
    uint16_t rf = flags | (log->in_checkpoint ? PROF_CODE_REC_F_CHECKPOINT : 0);
    commit(log, rec, size, PROF_CODE_REC_LOAD, rf, time_ns);
    if (flags & PROF_CODE_REC_F_TRUNCATED)
        log->ctl->truncated++;
    if (log->in_checkpoint)
        log->cp_pieces++;
    if (log->mirror_failed)
        return;
    uint8_t *keep = malloc(body);
    if (!keep) {
        mirror_failed(log);
        return;
    }
    memcpy(keep, rec + HEADER_BYTES, body);
    mirror_put(log, bytecodes ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE, e->start, keep, (uint32_t)body,
               flags);
}

void prof_codelog_move(ProfCodeLog *log, uint64_t time_ns, uint64_t from, uint64_t to, uint64_t size)
{
    maybe_checkpoint(log, time_ns);
    uint8_t space;
    ProfCodeLogEntry *e = mirror_lookup(log, from, &space);
    uint8_t rec[HEADER_BYTES + sizeof(ProfCodeMoveRecord)];
    ProfCodeMoveRecord body = {.from = from, .to = to, .size = size, .space = space};
    memcpy(rec + HEADER_BYTES, &body, sizeof body);
    commit(log, rec, sizeof rec, PROF_CODE_REC_MOVE, 0, time_ns);
    if (e && from != to) {
        uint32_t len = e->body_len;
        uint16_t flags = e->flags;
        uint8_t *b = mirror_detach(log, e);
        uint64_t cs;
        memcpy(&cs, b + offsetof(ProfCodeLoadRecord, code_start), sizeof cs);
        cs = cs - from + to;
        memcpy(b + offsetof(ProfCodeLoadRecord, start), &to, sizeof to);
        memcpy(b + offsetof(ProfCodeLoadRecord, code_start), &cs, sizeof cs);
        mirror_put(log, space, to, b, len, flags);
    }
}

void prof_codelog_free(ProfCodeLog *log, uint64_t time_ns, uint64_t start, uint64_t size)
{
    maybe_checkpoint(log, time_ns);
    uint8_t space;
    ProfCodeLogEntry *e = mirror_lookup(log, start, &space);
    uint8_t rec[HEADER_BYTES + sizeof(ProfCodeFreeRecord)];
    ProfCodeFreeRecord body = {.start = start, .size = size, .space = space};
    memcpy(rec + HEADER_BYTES, &body, sizeof body);
    commit(log, rec, sizeof rec, PROF_CODE_REC_FREE, 0, time_ns);
    if (e)
        mirror_remove(log, e);
}

void prof_codelog_set_interp(ProfCodeLog *log, uint64_t interp_fn, uint32_t perf_reg)
{
    log->ctl->interp_fn = interp_fn;
    __atomic_store_n(&log->ctl->interp_ip_reg, perf_reg + 1, __ATOMIC_RELEASE);
}

/* -- As a sink of the VM's code events ------------------------------------------- */

static void sink_load(const ProfCodeLoad *e, void *ctx) { prof_codelog_load(ctx, prof_code_event_time(), e); }

static void sink_move(uint64_t from, uint64_t to, uint64_t size, void *ctx)
{
    prof_codelog_move(ctx, prof_code_event_time(), from, to, size);
}

static void sink_free(uint64_t start, uint64_t size, void *ctx)
{
    prof_codelog_free(ctx, prof_code_event_time(), start, size);
}

void prof_codelog_sink(ProfCodeLog *log, ProfCodeSink *out)
{
    *out = (ProfCodeSink){.name = "export code log", .load = sink_load, .move = sink_move, .free = sink_free,
                          .ctx = log};
}
