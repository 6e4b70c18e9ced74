/*
 * profiler/codelog_writer.c — writing the code event log (see
 * codelog_writer.h and proto/export.h, "The code event log").
 */
#include "profiler/codelog_writer.h"

#include "profiler/ringlog.h"
#include "report/codemap.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A live piece, the value of its key (space, start) in log->mirror: the
 * body of its LOAD record (ProfCodeLoadRecord and what follows it) and the
 * record's flags. One allocation. */
struct ProfCodeLogEntry {
    uint32_t body_len;
    uint16_t flags;  /* PROF_CODE_REC_F_TRUNCATED and _INLINE survive into checkpoints */
    uint8_t body[];  /* body_len bytes; its start field mirrors the key */
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
    if (!prof_ringlog_geometry_ok("code log", ring_bytes, PROF_CODE_LOG_MIN_RING, PROF_CODE_LOG_MAX_RING, region,
                                  region_bytes, prof_codelog_region_bytes(ring_bytes), err, errlen))
        return false;
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
    size_t cursor = 0;
    for (const ReportAddrSlot *s; (s = report_addrtable_next(&log->mirror, &cursor));)
        free((ProfCodeLogEntry *)(uintptr_t)s->value);
    report_addrtable_free(&log->mirror);
    free(log->scratch);
    log->scratch = NULL;
    log->scratch_cap = 0;
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

/* Commits the record assembled in rec (size bytes, body already in place)
 * following the protocol of export.h (profiler/ringlog.h). */
static void commit(ProfCodeLog *log, uint8_t *rec, uint32_t size, uint16_t type, uint16_t flags, uint64_t time_ns)
{
    ProfCodeLogControl *c = log->ctl;
    ProfRingLog r = {
        .ring = log->ring, .ring_size = log->ring_size, .write_begin = &c->write_begin, .write_end = &c->write_end,
        .records = &c->records, .end = log->end, .seq = log->seq,
    };
    prof_ringlog_commit(&r, rec, size, type, flags, time_ns);
    log->end = r.end;
    log->seq = r.seq;
}

/* -- The mirror -------------------------------------------------------------- */

static ProfCodeLogEntry *entry_of(uint64_t value) { return (ProfCodeLogEntry *)(uintptr_t)value; }

static ProfCodeLogEntry *mirror_find(ProfCodeLog *log, uint8_t space, uint64_t start)
{
    uint64_t v;
    return report_addrtable_get(&log->mirror, space, start, &v) ? entry_of(v) : NULL;
}

static uint64_t entry_ring_bytes(const ProfCodeLogEntry *e) { return HEADER_BYTES + e->body_len; }

/* Takes the piece at (space, start) out of the mirror and answers it, now
 * the caller's; NULL when there is none. */
static ProfCodeLogEntry *mirror_detach(ProfCodeLog *log, uint8_t space, uint64_t start)
{
    uint64_t v;
    if (!report_addrtable_take(&log->mirror, space, start, &v))
        return NULL;
    ProfCodeLogEntry *e = entry_of(v);
    log->mirror_bytes -= entry_ring_bytes(e);
    return e;
}

static void mirror_failed(ProfCodeLog *log)
{
    log->mirror_failed = true;
    log->ctl->flags |= PROF_CODE_LOG_F_CHECKPOINT_TOO_BIG;
    warn_once(log, &log->warned_oom, "out of memory for the code log's mirror of live code: no more checkpoints; "
                       "profilers that join later or fall behind will miss code");
}

/* Takes over e (malloc'd). */
static void mirror_put(ProfCodeLog *log, uint8_t space, uint64_t start, ProfCodeLogEntry *e)
{
    if (log->mirror_failed) {
        free(e);
        return;
    }
    free(mirror_detach(log, space, start)); /* a piece at the same start was never freed: it is gone now */
    if (!report_addrtable_put(&log->mirror, space, start, (uintptr_t)e)) {
        free(e);
        mirror_failed(log);
        return;
    }
    log->mirror_bytes += entry_ring_bytes(e);
}

/* The space of the live piece at start, else the one its address says. */
static uint8_t space_of(ProfCodeLog *log, uint64_t start)
{
    for (uint8_t s = 0; s < PROF_CODE_SPACE_COUNT; s++)
        if (mirror_find(log, s, start))
            return s;
    return start >= log->zone_start && start < log->zone_end ? PROF_CODE_SPACE_MACHINE : PROF_CODE_SPACE_BYTECODES;
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
    size_t cursor = 0;
    for (const ReportAddrSlot *s; (s = report_addrtable_next(&log->mirror, &cursor));)
        write_entry(log, entry_of(s->value), time_ns);
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

/* The inline section of e (export.h, version 6): its size with and
 * without the scopes' lines, and each scope's name and source lengths
 * (cut and dropped as the piece's own are). */
typedef struct InlineSize {
    uint64_t fixed, lines;
} InlineSize;

static uint16_t scope_name_len(const ProfInlineScope *s)
{
    size_t n = bounded_len(s->name, PROF_CODE_LOG_NAME_MAX);
    return (uint16_t)(n > PROF_CODE_LOG_NAME_MAX ? PROF_CODE_LOG_NAME_MAX : n);
}

static uint16_t scope_source_len(const ProfInlineScope *s)
{
    size_t n = bounded_len(s->source, PROF_CODE_LOG_SOURCE_MAX);
    return (uint16_t)(n > PROF_CODE_LOG_SOURCE_MAX ? 0 : n);
}

/* Whether e's scopes and ranges follow export.h's rules, by the readers'
 * own check (report/codemap.h): a section they would reject would make
 * every reader lose the log up to the next checkpoint, and that
 * checkpoint would restate it. */
static bool inline_sound(const ProfCodeLoad *e)
{
    ReportInlineScope *sc = calloc(e->scope_count, sizeof *sc);
    ReportInlineRange *rg = malloc(e->range_count * sizeof *rg);
    bool ok = sc && rg;
    for (uint32_t i = 0; ok && i < e->scope_count; i++)
        sc[i] = (ReportInlineScope){.name = e->scopes[i].name, .parent = e->scopes[i].parent};
    for (uint32_t i = 0; ok && i < e->range_count; i++)
        rg[i] = (ReportInlineRange){e->ranges[i].start, e->ranges[i].end, e->ranges[i].scope};
    const char *why;
    ReportCodePiece p = {.size = e->size, .scopes = sc, .nscopes = e->scope_count, .ranges = rg,
                         .nranges = e->range_count};
    ok = ok && report_codemap_check_inline(&p, &why);
    free(sc);
    free(rg);
    return ok;
}

static InlineSize inline_size(const ProfCodeLoad *e)
{
    InlineSize z = {0, 0};
    if (!e->scopes || !e->ranges || !e->scope_count || !e->range_count)
        return z;
    z.fixed = sizeof(ProfCodeInlineHeader) + (uint64_t)e->scope_count * sizeof(ProfCodeInlineScopeRecord) +
              (uint64_t)e->range_count * sizeof(ProfCodeInlineRangeRecord);
    for (uint32_t i = 0; i < e->scope_count; i++) {
        const ProfInlineScope *s = &e->scopes[i];
        z.fixed += scope_name_len(s) + 1ull + scope_source_len(s) + 1ull;
        z.lines += s->lines ? 8ull * s->line_count : 0;
    }
    return z;
}

/* Writes the inline section at p; answers the byte after it. */
static uint8_t *put_inline(uint8_t *p, const ProfCodeLoad *e, bool with_lines)
{
    ProfCodeInlineHeader h = {.scope_count = e->scope_count, .range_count = e->range_count};
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    for (uint32_t i = 0; i < e->scope_count; i++) {
        const ProfInlineScope *s = &e->scopes[i];
        ProfCodeInlineScopeRecord r = {
            .line_count = with_lines && s->lines ? s->line_count : 0, .bytecode_size = s->bytecode_size,
            .call_bcpc = s->call_bcpc, .parent = s->parent, .name_len = scope_name_len(s),
            .source_len = scope_source_len(s),
        };
        memcpy(p, &r, sizeof r);
        p += sizeof r;
    }
    for (uint32_t i = 0; i < e->range_count; i++) {
        ProfCodeInlineRangeRecord r = {e->ranges[i].start, e->ranges[i].end, e->ranges[i].scope};
        memcpy(p, &r, sizeof r);
        p += sizeof r;
    }
    for (uint32_t i = 0; i < e->scope_count; i++) {
        const ProfInlineScope *s = &e->scopes[i];
        if (with_lines && s->lines && s->line_count) {
            memcpy(p, s->lines, 8ull * s->line_count);
            p += 8ull * s->line_count;
        }
        uint16_t nl = scope_name_len(s), sl = scope_source_len(s);
        if (nl)
            memcpy(p, s->name, nl);
        p += nl + 1;
        if (sl)
            memcpy(p, s->source, sl);
        p += sl + 1;
    }
    return p;
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
    InlineSize in = inline_size(e);
    if (in.fixed > 0 && !inline_sound(e)) {
        /* the map goes with it: its pairs inside the ranges carry the
         * inlined methods' bcpcs, which would read as the piece's own */
        in = (InlineSize){0, 0};
        map_count = 0;
        flags |= PROF_CODE_REC_F_TRUNCATED;
        warn_once(log, &log->warned_inline, "a piece's inlined methods break the code log's rules (scopes, ranges): "
                                            "left out with the piece's map, the piece reads as one method without "
                                            "bytecode ranges");
    }
    bool inl = in.fixed > 0, inline_lines = inl;
    uint64_t fixed = sizeof(ProfCodeLoadRecord) + name_len + 1 + source_len + 1 + 8ull * unwind_count + in.fixed;
    uint64_t body = pad8(fixed + 8ull * map_count + 8ull * line_count + in.lines);
    /* too big: lines go first, then map pairs, then the inline section
     * (export.h, "Truncation") */
    if (HEADER_BYTES + body > log->max_record) {
        line_count = 0;
        inline_lines = false;
        flags |= PROF_CODE_REC_F_TRUNCATED;
        body = pad8(fixed + 8ull * map_count);
    }
    if (HEADER_BYTES + body > log->max_record && HEADER_BYTES + pad8(fixed) > log->max_record && inl) {
        inl = false;
        fixed -= in.fixed;
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
    p += 8ull * unwind_count;
    if (inl) {
        flags |= PROF_CODE_REC_F_INLINE;
        p = put_inline(p, e, inline_lines);
    }
    assert(p <= rec + size);
    uint16_t rf = flags | (log->in_checkpoint ? PROF_CODE_REC_F_CHECKPOINT : 0);
    commit(log, rec, size, PROF_CODE_REC_LOAD, rf, time_ns);
    if (flags & PROF_CODE_REC_F_TRUNCATED)
        log->ctl->truncated++;
    if (log->in_checkpoint)
        log->cp_pieces++;
    if (log->mirror_failed)
        return;
    ProfCodeLogEntry *keep = malloc(sizeof *keep + body);
    if (!keep) {
        mirror_failed(log);
        return;
    }
    keep->body_len = (uint32_t)body;
    keep->flags = flags;
    memcpy(keep->body, rec + HEADER_BYTES, body);
    mirror_put(log, bytecodes ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE, e->start, keep);
}

void prof_codelog_move(ProfCodeLog *log, uint64_t time_ns, uint64_t from, uint64_t to, uint64_t size)
{
    maybe_checkpoint(log, time_ns);
    uint8_t space = space_of(log, from);
    uint8_t rec[HEADER_BYTES + sizeof(ProfCodeMoveRecord)];
    ProfCodeMoveRecord body = {.from = from, .to = to, .size = size, .space = space};
    memcpy(rec + HEADER_BYTES, &body, sizeof body);
    commit(log, rec, sizeof rec, PROF_CODE_REC_MOVE, 0, time_ns);
    ProfCodeLogEntry *e = from != to ? mirror_detach(log, space, from) : NULL;
    if (e) {
        uint64_t cs;
        memcpy(&cs, e->body + offsetof(ProfCodeLoadRecord, code_start), sizeof cs);
        cs = cs - from + to;
        memcpy(e->body + offsetof(ProfCodeLoadRecord, start), &to, sizeof to);
        memcpy(e->body + offsetof(ProfCodeLoadRecord, code_start), &cs, sizeof cs);
        mirror_put(log, space, to, e);
    }
}

void prof_codelog_free(ProfCodeLog *log, uint64_t time_ns, uint64_t start, uint64_t size)
{
    maybe_checkpoint(log, time_ns);
    uint8_t space = space_of(log, start);
    uint8_t rec[HEADER_BYTES + sizeof(ProfCodeFreeRecord)];
    ProfCodeFreeRecord body = {.start = start, .size = size, .space = space};
    memcpy(rec + HEADER_BYTES, &body, sizeof body);
    commit(log, rec, sizeof rec, PROF_CODE_REC_FREE, 0, time_ns);
    free(mirror_detach(log, space, start));
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
