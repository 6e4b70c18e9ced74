/*
 * report/codelog_reader.c — the code event log reader (see
 * codelog_reader.h; protocol in proto/export.h).
 *
 * One poll: read the control block, check it, then copy the stream from
 * the cursor to write_end in chunks; after each copy re-read write_begin to
 * learn whether the writer overtook the copy (export.h, reader step 4);
 * parse the complete records of the chunk, each checked before use, and
 * advance. Damage or an overrun makes the reader LOST: the map is told
 * (a gap from the last good record on) and the reader waits for a
 * checkpoint past the damage, which it then applies onto an empty map.
 */
#include "report/codelog_reader.h"

#include "report/mem.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stream bytes copied per read: large enough that a poll costs few reads,
 * small enough that a 1 GiB ring is not copied whole. */
#define CHUNK_BYTES (8u << 20)
/* Recoveries one poll may go through: a hostile log cannot keep a poll
 * going forever; the next poll carries on. */
#define MAX_RECOVERIES_PER_POLL 4

#define HEADER_BYTES sizeof(ProfCodeRecord)

static bool fits(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

static void say(char *warn, size_t warnlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *warn, size_t warnlen, const char *fmt, ...)
{
    if (!warn || warnlen == 0 || warn[0])
        return; /* the first trouble of a poll is the one worth reading */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warn, warnlen, fmt, ap);
    va_end(ap);
}

static bool check_control(const ProfCodeLogControl *c, uint64_t region_size, char *why, size_t whylen)
{
    if (c->magic != PROF_CODE_LOG_MAGIC) {
        snprintf(why, whylen, "bad code log magic 0x%016" PRIx64, c->magic);
        return false;
    }
    if (c->control_size < sizeof(ProfCodeLogControl) || c->control_size > region_size) {
        snprintf(why, whylen, "code log control_size %" PRIu32 " is wrong", c->control_size);
        return false;
    }
    if (c->ring_size < PROF_CODE_LOG_MIN_RING || c->ring_size > PROF_CODE_LOG_MAX_RING ||
        (c->ring_size & (c->ring_size - 1)) != 0) {
        snprintf(why, whylen, "code log ring size %" PRIu64 " is not a power of two from %u to %llu", c->ring_size,
                 PROF_CODE_LOG_MIN_RING, (unsigned long long)PROF_CODE_LOG_MAX_RING);
        return false;
    }
    if (c->ring_offset < c->control_size || c->ring_offset % 8 != 0 ||
        !fits(c->ring_offset, c->ring_size, region_size)) {
        snprintf(why, whylen,
                 "code log ring at offset %" PRIu64 " size %" PRIu64 " does not fit the %" PRIu64 "-byte log region",
                 c->ring_offset, c->ring_size, region_size);
        return false;
    }
    return true;
}

bool report_codelog_open(ReportCodeLog *r, uint64_t region_size, ReportCodeLogReadFn read, void *ctx, char *err,
                         size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->read = read;
    r->ctx = ctx;
    r->region_size = region_size;
    if (region_size < sizeof(ProfCodeLogControl)) {
        snprintf(err, errlen, "the code log region (%" PRIu64 " bytes) is smaller than its control block",
                 region_size);
        return false;
    }
    ProfCodeLogControl c;
    if (!read(ctx, 0, &c, sizeof c)) {
        snprintf(err, errlen, "cannot read the code log's control block");
        return false;
    }
    if (!check_control(&c, region_size, err, errlen))
        return false;
    r->control = c;
    r->ring_offset = c.ring_offset;
    r->ring_size = c.ring_size;
    r->max_record = c.ring_size / PROF_CODE_LOG_MAX_RECORD_FRACTION;
    r->mode = REPORT_CODELOG_JOINING;
    return true;
}

void report_codelog_close(ReportCodeLog *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

/* Copies the stream [pos, pos + n) out of the ring. */
static bool copy_stream(ReportCodeLog *r, uint64_t pos, size_t n)
{
    report_mem_reserve(&r->buf, &r->cap, n, 1);
    uint64_t at = pos & (r->ring_size - 1);
    size_t first = r->ring_size - at < n ? (size_t)(r->ring_size - at) : n;
    return r->read(r->ctx, r->ring_offset + at, r->buf, first) &&
           (first == n || r->read(r->ctx, r->ring_offset, r->buf + first, n - first));
}

/* -- Records ------------------------------------------------------------------- */

/* Checks a LOAD body and fills piece (pointing into rec). */
static bool decode_load(const uint8_t *rec, uint32_t size, ReportCodePiece *piece, uint64_t *start,
                        ProfCodeSpace *space, const char **why)
{
    const uint8_t *body = rec + HEADER_BYTES;
    uint64_t len = size - HEADER_BYTES;
    ProfCodeLoadRecord l;
    if (len < sizeof l) {
        *why = "LOAD record too short";
        return false;
    }
    memcpy(&l, body, sizeof l);
    if (l.kind < PROF_CODE_METHOD || l.kind > PROF_CODE_BYTECODES) {
        *why = "LOAD of an unknown kind";
        return false;
    }
    uint64_t need = sizeof l + 8ull * l.map_count + 8ull * l.line_count + l.name_len + 1ull + l.source_len + 1ull +
                    8ull * l.unwind_count;
    if (need > len) {
        *why = "LOAD record's map, lines and names overrun it";
        return false;
    }
    const uint8_t *p = body + sizeof l;
    const uint8_t *map = p, *lines = p + 8ull * l.map_count;
    const char *name = (const char *)(lines + 8ull * l.line_count);
    const char *source = name + l.name_len + 1;
    const uint8_t *unwind = (const uint8_t *)source + l.source_len + 1;
    if (name[l.name_len] != '\0' || source[l.source_len] != '\0' || memchr(name, 0, l.name_len) ||
        memchr(source, 0, l.source_len)) {
        *why = "LOAD record's name or source is not a string of its length";
        return false;
    }
    if (l.start + l.size < l.start || l.code_start < l.start || l.code_start - l.start > l.size) {
        *why = "LOAD record's addresses are inconsistent";
        return false;
    }
    *start = l.start;
    *space = l.kind == PROF_CODE_BYTECODES ? PROF_CODE_SPACE_BYTECODES : PROF_CODE_SPACE_MACHINE;
    *piece = (ReportCodePiece){
        .kind = l.kind,
        .bytecode_size = l.bytecode_size,
        .size = l.size,
        .code_offset = l.code_start - l.start,
        .name = name,
        .source = l.source_len ? source : NULL,
        /* the ring's (u32, u32) pairs are ReportMapEntry / ReportLineEntry,
         * and the buffer is 8-aligned at every record */
        .map = (const ReportMapEntry *)(const void *)map,
        .nmap = l.map_count,
        .lines = (const ReportLineEntry *)(const void *)lines,
        .nlines = l.line_count,
        /* not 8-aligned after the strings: only ever copied (report_codemap_load) */
        .unwind = l.unwind_count ? (const uint32_t *)(const void *)unwind : NULL,
        .nunwind = l.unwind_count,
    };
    return true;
}

_Static_assert(sizeof(ReportMapEntry) == 8 && offsetof(ReportMapEntry, bcpc) == 4, "map pairs as in the log");
_Static_assert(sizeof(ReportLineEntry) == 8 && offsetof(ReportLineEntry, line) == 4, "line pairs as in the log");

/* Takes one checked-sum, in-sequence record; false (why) when it does not
 * belong where it is. */
static bool apply(ReportCodeLog *r, ReportCodeMap *map, const uint8_t *rec, const ProfCodeRecord *h,
                  const char **why)
{
    bool cp_flag = (h->flags & PROF_CODE_REC_F_CHECKPOINT) != 0;
    ReportCodePiece piece;
    uint64_t start;
    ProfCodeSpace space;
    if (r->mode == REPORT_CODELOG_JOINING && h->type != PROF_CODE_REC_CHECKPOINT_BEGIN) {
        *why = "no checkpoint where the log said one starts";
        return false;
    }
    switch (h->type) {
    case PROF_CODE_REC_CHECKPOINT_BEGIN:
        if (r->mode == REPORT_CODELOG_APPLYING || r->mode == REPORT_CODELOG_SKIPPING) {
            *why = "checkpoint inside a checkpoint";
            return false;
        }
        if (r->mode == REPORT_CODELOG_JOINING) {
            report_codemap_known(map, h->time_ns);
            r->mode = REPORT_CODELOG_APPLYING;
        } else {
            r->mode = REPORT_CODELOG_SKIPPING;
        }
        r->cp_seq = h->seq;
        r->cp_pieces = 0;
        return true;
    case PROF_CODE_REC_CHECKPOINT_END: {
        ProfCodeCheckpointEnd e;
        if (h->size < HEADER_BYTES + sizeof e) {
            *why = "CHECKPOINT_END record too short";
            return false;
        }
        memcpy(&e, rec + HEADER_BYTES, sizeof e);
        if (r->mode != REPORT_CODELOG_APPLYING && r->mode != REPORT_CODELOG_SKIPPING) {
            *why = "checkpoint end without its beginning";
            return false;
        }
        if (e.begin_seq != r->cp_seq || e.pieces != r->cp_pieces) {
            *why = "checkpoint end does not match its beginning";
            return false;
        }
        r->stats.checkpoints++;
        r->mode = REPORT_CODELOG_FOLLOWING;
        return true;
    }
    case PROF_CODE_REC_LOAD:
        if (cp_flag != (r->mode == REPORT_CODELOG_APPLYING || r->mode == REPORT_CODELOG_SKIPPING)) {
            *why = cp_flag ? "checkpoint LOAD outside a checkpoint" : "plain LOAD inside a checkpoint";
            return false;
        }
        if (!decode_load(rec, h->size, &piece, &start, &space, why))
            return false;
        piece.truncated = (h->flags & PROF_CODE_REC_F_TRUNCATED) != 0;
        if (cp_flag)
            r->cp_pieces++;
        if (r->mode == REPORT_CODELOG_SKIPPING)
            return true;
        r->stats.loads++;
        if (piece.truncated)
            r->stats.truncated++;
        report_codemap_load(map, h->time_ns, space, start, &piece);
        return true;
    case PROF_CODE_REC_MOVE: {
        ProfCodeMoveRecord mv;
        if (h->size < HEADER_BYTES + sizeof mv) {
            *why = "MOVE record too short";
            return false;
        }
        memcpy(&mv, rec + HEADER_BYTES, sizeof mv);
        if (r->mode != REPORT_CODELOG_FOLLOWING || mv.space >= PROF_CODE_SPACE_COUNT) {
            *why = mv.space >= PROF_CODE_SPACE_COUNT ? "MOVE in an unknown space" : "MOVE inside a checkpoint";
            return false;
        }
        r->stats.moves++;
        report_codemap_move(map, h->time_ns, (ProfCodeSpace)mv.space, mv.from, mv.to);
        return true;
    }
    case PROF_CODE_REC_FREE: {
        ProfCodeFreeRecord f;
        if (h->size < HEADER_BYTES + sizeof f) {
            *why = "FREE record too short";
            return false;
        }
        memcpy(&f, rec + HEADER_BYTES, sizeof f);
        if (r->mode != REPORT_CODELOG_FOLLOWING || f.space >= PROF_CODE_SPACE_COUNT) {
            *why = f.space >= PROF_CODE_SPACE_COUNT ? "FREE in an unknown space" : "FREE inside a checkpoint";
            return false;
        }
        r->stats.frees++;
        report_codemap_unload(map, h->time_ns, (ProfCodeSpace)f.space, f.start);
        return true;
    }
    default:
        *why = "record of an unknown type";
        return false;
    }
}

/* Everything from position `at` on is lost: the map learns of a gap from
 * the last good record, and the reader waits for a checkpoint. */
static void lose(ReportCodeLog *r, ReportCodeMap *map, uint64_t at)
{
    if (r->mode != REPORT_CODELOG_LOST)
        report_codemap_lost(map, r->last_time);
    r->mode = REPORT_CODELOG_LOST;
    r->lost_at = at;
}

/* A checkpoint to start from, or to recover at: [pos, write_end) must hold
 * it whole and not be overwritten yet. */
static bool usable_checkpoint(const ReportCodeLog *r, uint64_t cp, uint64_t write_begin, uint64_t write_end)
{
    return cp % 8 == 0 && cp <= write_end && write_begin - cp <= r->ring_size;
}

/* Parses the complete records of the chunk [r->pos, r->pos + n); answers
 * the bytes consumed, or sets *bad (with *why and *bad_at). */
static size_t parse_chunk(ReportCodeLog *r, ReportCodeMap *map, size_t n, uint64_t write_end, size_t *taken,
                          bool *bad, const char **why, uint64_t *bad_at)
{
    size_t off = 0;
    while (n - off >= HEADER_BYTES) {
        const uint8_t *rec = r->buf + off;
        ProfCodeRecord h;
        memcpy(&h, rec, sizeof h);
        *bad_at = r->pos + off;
        if (h.size < HEADER_BYTES || h.size % 8 != 0 || h.size > r->max_record) {
            *why = "record with an impossible size";
            *bad = true;
            return off;
        }
        if (h.size > n - off) {
            if (r->pos + off + h.size > write_end) {
                *why = "record running past the end of what was written";
                *bad = true;
            }
            return off; /* the rest comes with the next chunk */
        }
        if (prof_code_log_checksum(rec + 8, h.size - 8) != h.checksum) {
            *why = "record whose checksum does not match (torn or corrupt)";
            *bad = true;
            return off;
        }
        if (r->mode != REPORT_CODELOG_JOINING && h.seq != r->next_seq) {
            *why = "record out of sequence (records missing)";
            *bad = true;
            return off;
        }
        if (!apply(r, map, rec, &h, why)) {
            *bad = true;
            return off;
        }
        r->next_seq = h.seq + 1;
        if (h.time_ns > r->last_time)
            r->last_time = h.time_ns;
        r->stats.records++;
        (*taken)++;
        off += h.size;
    }
    if (n - off > 0 && n - off < HEADER_BYTES && r->pos + n == write_end) {
        *bad_at = r->pos + off;
        *why = "record running past the end of what was written";
        *bad = true;
    }
    return off;
}

/* Reads the control block and checks that it agrees with what this
 * reader knows: positions only grow and a record in progress is smaller
 * than the ring allows. */
static bool refresh(ReportCodeLog *r, ProfCodeLogControl *c, char *warn, size_t warnlen)
{
    /* A copy of another process's memory is not atomic even per word: a
     * copy torn while the writer moves on can pass every check below with
     * positions ahead of the writer's, and the reader would then refuse every
     * true copy as going back. Two copies that agree are not torn. */
    bool agree = false;
    for (int attempt = 0; attempt < 4 && !agree; attempt++) {
        ProfCodeLogControl again;
        if (!r->read(r->ctx, 0, c, sizeof *c) || !r->read(r->ctx, 0, &again, sizeof again)) {
            say(warn, warnlen, "code log: the control block cannot be read any more");
            return false;
        }
        agree = c->write_begin == again.write_begin && c->write_end == again.write_end &&
                c->checkpoint_pos == again.checkpoint_pos;
    }
    if (!agree) {
        say(warn, warnlen, "code log: its control block kept changing while it was read; trying at the next poll");
        return false;
    }
    if (c->magic != PROF_CODE_LOG_MAGIC || c->ring_size != r->ring_size || c->ring_offset != r->ring_offset) {
        say(warn, warnlen, "code log: its control block changed its magic or geometry; ignored");
        return false;
    }
    uint64_t B = c->write_begin, E = c->write_end;
    if (E < r->last_end || B < E || B - E > r->max_record || E % 8 != 0) {
        /* a torn copy of the control block, or a corrupt one: try again next poll */
        say(warn, warnlen, "code log: inconsistent positions (write_end %" PRIu64 ", write_begin %" PRIu64 ")", E, B);
        return false;
    }
    r->last_end = E;
    r->control = *c;
    return true;
}

size_t report_codelog_poll(ReportCodeLog *r, ReportCodeMap *map, char *warn, size_t warnlen)
{
    if (warn && warnlen)
        warn[0] = '\0';
    ProfCodeLogControl c;
    if (!refresh(r, &c, warn, warnlen))
        return 0;
    if (!r->joined) {
        uint64_t start = c.write_begin <= r->ring_size ? 0 : c.checkpoint_pos;
        if (!usable_checkpoint(r, start, c.write_begin, c.write_end)) {
            say(warn, warnlen, "code log: no intact checkpoint to start from yet (position %" PRIu64 ")", start);
            return 0;
        }
        r->joined = true;
        r->pos = start;
        r->mode = REPORT_CODELOG_JOINING;
    }
    size_t taken = 0;
    for (int recoveries = 0; recoveries <= MAX_RECOVERIES_PER_POLL;) {
        if (r->mode == REPORT_CODELOG_LOST) {
            /* the newest checkpoint, read afresh: the writer may have moved on while we copied */
            if (!refresh(r, &c, warn, warnlen))
                break;
            uint64_t cp = c.checkpoint_pos;
            if (cp < r->lost_at || !usable_checkpoint(r, cp, c.write_begin, c.write_end))
                break; /* wait for the next checkpoint */
            r->pos = cp;
            r->mode = REPORT_CODELOG_JOINING;
            r->stats.recoveries++;
            recoveries++;
        }
        uint64_t E = c.write_end;
        if (r->pos == E)
            break;
        if (E - r->pos > r->ring_size) {
            r->stats.overruns++;
            say(warn, warnlen, "code log: the VM overwrote %" PRIu64 " bytes of events before they were read",
                E - r->pos - r->ring_size);
            lose(r, map, r->pos);
            continue;
        }
        uint64_t chunk = CHUNK_BYTES > 2 * r->max_record ? CHUNK_BYTES : 2 * r->max_record;
        size_t n = (size_t)(E - r->pos < chunk ? E - r->pos : chunk);
        uint64_t b2;
        if (!copy_stream(r, r->pos, n) ||
            !r->read(r->ctx, offsetof(ProfCodeLogControl, write_begin), &b2, sizeof b2)) {
            say(warn, warnlen, "code log: the ring cannot be read any more");
            break;
        }
        if (b2 > r->pos + r->ring_size || b2 < c.write_begin) {
            r->stats.overruns++;
            say(warn, warnlen, "code log: the VM overwrote events while they were being read");
            lose(r, map, r->pos);
            continue;
        }
        bool bad = false;
        const char *why = NULL;
        uint64_t bad_at = r->pos;
        size_t used = parse_chunk(r, map, n, E, &taken, &bad, &why, &bad_at);
        r->pos += used;
        if (bad) {
            r->stats.bad_records++;
            say(warn, warnlen, "code log: %s at position %" PRIu64 " (seq %" PRIu64 "); skipped to the next checkpoint",
                why, bad_at, r->next_seq);
            lose(r, map, bad_at + 8);
            continue;
        }
        if (used == 0)
            break; /* cannot be: a record is at most half a chunk */
    }
    return taken;
}
