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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Recoveries one poll may go through: a hostile log cannot keep a poll
 * going forever; the next poll carries on. */
#define MAX_RECOVERIES_PER_POLL 4

#define HEADER_BYTES sizeof(ProfCodeRecord)

bool report_codelog_open(ReportCodeLog *r, uint64_t region_size, ReportCodeLogReadFn read, void *ctx, char *err,
                         size_t errlen)
{
    memset(r, 0, sizeof *r);
    ProfCodeLogControl c;
    if (!report_ring_open(&r->ring, "code log", region_size, read, ctx, &c, sizeof c, PROF_CODE_LOG_MAGIC,
                          PROF_CODE_LOG_MIN_RING, PROF_CODE_LOG_MAX_RING, PROF_CODE_LOG_MAX_RECORD_FRACTION, err, errlen))
        return false;
    r->control = c;
    r->mode = REPORT_CODELOG_JOINING;
    return true;
}

void report_codelog_close(ReportCodeLog *r)
{
    report_ring_close(&r->ring);
    free(r->scopes);
    free(r->ranges);
    free(r->scope_lines);
    r->scopes = NULL;
    r->ranges = NULL;
    r->scope_lines = NULL;
}

/* -- Records ------------------------------------------------------------------- */

/* A string of len bytes and its NUL at p, with nothing past end. */
static bool string_at(const uint8_t *p, uint64_t len, const uint8_t *end)
{
    return (uint64_t)(end - p) > len && p[len] == '\0' && !memchr(p, 0, len);
}

/* Decodes the inline section [p, end) of a LOAD (export.h, version 6) into
 * r's buffers and piece; every count is checked against the bytes left
 * before it is used, the result against export.h's rules. */
static bool decode_inline(ReportCodeLog *r, const uint8_t *p, const uint8_t *end, ReportCodePiece *piece,
                          const char **why)
{
    ProfCodeInlineHeader h;
    if ((uint64_t)(end - p) < sizeof h) {
        *why = "LOAD record's inline section overruns it";
        return false;
    }
    memcpy(&h, p, sizeof h);
    p += sizeof h;
    uint64_t left = (uint64_t)(end - p);
    if (h.scope_count == 0 || h.range_count == 0 ||
        (uint64_t)h.scope_count * sizeof(ProfCodeInlineScopeRecord) +
                (uint64_t)h.range_count * sizeof(ProfCodeInlineRangeRecord) > left) {
        *why = h.scope_count && h.range_count ? "LOAD record's inline scopes and ranges overrun it"
                                              : "LOAD record's inline section is empty";
        return false;
    }
    const uint8_t *scope_recs = p, *range_recs = p + (uint64_t)h.scope_count * sizeof(ProfCodeInlineScopeRecord);
    p = range_recs + (uint64_t)h.range_count * sizeof(ProfCodeInlineRangeRecord);
    uint64_t nlines = 0;
    for (uint32_t i = 0; i < h.scope_count; i++) {
        ProfCodeInlineScopeRecord sr;
        memcpy(&sr, scope_recs + i * sizeof sr, sizeof sr);
        nlines += sr.line_count;
    }
    if (nlines * 8 > (uint64_t)(end - p)) {
        *why = "LOAD record's inline lines overrun it";
        return false;
    }
    report_mem_reserve(&r->scopes, &r->scopes_cap, h.scope_count, sizeof *r->scopes);
    report_mem_reserve(&r->ranges, &r->ranges_cap, h.range_count, sizeof *r->ranges);
    report_mem_reserve(&r->scope_lines, &r->scope_lines_cap, nlines ? nlines : 1, sizeof *r->scope_lines);
    size_t line_at = 0;
    for (uint32_t i = 0; i < h.scope_count; i++) {
        ProfCodeInlineScopeRecord sr;
        memcpy(&sr, scope_recs + i * sizeof sr, sizeof sr);
        /* the lines were counted above; the strings are checked one by one */
        ReportLineEntry *lines = r->scope_lines + line_at;
        if (sr.line_count)
            memcpy(lines, p, 8ull * sr.line_count);
        p += 8ull * sr.line_count;
        line_at += sr.line_count;
        const uint8_t *name = p;
        if (!string_at(name, sr.name_len, end)) {
            *why = "LOAD record's inline scope name is not a string of its length";
            return false;
        }
        p += sr.name_len + 1ull;
        const uint8_t *source = p;
        if (!string_at(source, sr.source_len, end)) {
            *why = "LOAD record's inline scope source is not a string of its length";
            return false;
        }
        p += sr.source_len + 1ull;
        r->scopes[i] = (ReportInlineScope){
            .name = (const char *)name, .source = sr.source_len ? (const char *)source : NULL,
            .lines = sr.line_count ? lines : NULL, .nlines = sr.line_count, .bytecode_size = sr.bytecode_size,
            .call_bcpc = sr.call_bcpc, .parent = sr.parent,
        };
    }
    for (uint32_t i = 0; i < h.range_count; i++) {
        ProfCodeInlineRangeRecord rr;
        memcpy(&rr, range_recs + i * sizeof rr, sizeof rr);
        r->ranges[i] = (ReportInlineRange){rr.start, rr.end, rr.scope};
    }
    piece->scopes = r->scopes;
    piece->nscopes = h.scope_count;
    piece->ranges = r->ranges;
    piece->nranges = h.range_count;
    return report_codemap_check_inline(piece, why);
}

/* Checks a LOAD body and fills piece (pointing into rec, and into r's
 * buffers for an inline section). */
static bool decode_load(ReportCodeLog *r, const uint8_t *rec, uint32_t size, uint16_t flags, ReportCodePiece *piece,
                        uint64_t *start, ProfCodeSpace *space, const char **why)
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
    if (flags & PROF_CODE_REC_F_INLINE) {
        if (*space != PROF_CODE_SPACE_MACHINE) {
            *why = "LOAD of bytecodes with an inline section";
            return false;
        }
        return decode_inline(r, unwind + 8ull * l.unwind_count, body + len, piece, why);
    }
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
        if (!decode_load(r, rec, h->size, h->flags, &piece, &start, &space, why))
            return false;
        piece.truncated = (h->flags & PROF_CODE_REC_F_TRUNCATED) != 0;
        if (cp_flag)
            r->cp_pieces++;
        if (r->mode == REPORT_CODELOG_SKIPPING)
            return true;
        r->stats.loads++;
        if (piece.truncated)
            r->stats.truncated++;
        if (piece.nranges)
            r->stats.inlined++;
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
    return cp % 8 == 0 && cp <= write_end && write_begin - cp <= r->ring.ring_size;
}

/* Parses the complete records of the chunk [r->pos, r->pos + n); answers
 * the bytes consumed, or sets *bad (with *why and *bad_at). */
static size_t parse_chunk(ReportCodeLog *r, ReportCodeMap *map, size_t n, uint64_t write_end, size_t *taken,
                          bool *bad, const char **why, uint64_t *bad_at)
{
    size_t off = 0;
    while (off < n) {
        ProfCodeRecord h;
        *bad_at = r->pos + off;
        ReportRingRecord got = report_ring_record(&r->ring, off, n, r->pos, write_end, &h, why);
        if (got == REPORT_RING_PARTIAL)
            return off;
        if (got == REPORT_RING_BAD) {
            *bad = true;
            return off;
        }
        if (r->mode != REPORT_CODELOG_JOINING && h.seq != r->next_seq) {
            *why = "record out of sequence (records missing)";
            *bad = true;
            return off;
        }
        if (!apply(r, map, r->ring.buf + off, &h, why)) {
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
    return off;
}

/* Reads the control block and checks that it agrees with what this
 * reader knows (report/ring.h), and that it is still a code log. */
static bool refresh(ReportCodeLog *r, ProfCodeLogControl *c, char *warn, size_t warnlen)
{
    char why[256];
    if (!report_ring_refresh(&r->ring, c, sizeof *c, why, sizeof why)) {
        report_ring_say(warn, warnlen, "%s", why);
        return false;
    }
    if (c->magic != PROF_CODE_LOG_MAGIC) {
        report_ring_say(warn, warnlen, "code log: its control block changed its magic or geometry; ignored");
        return false;
    }
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
    uint64_t ring_size = r->ring.ring_size;
    if (!r->joined) {
        uint64_t start = c.write_begin <= ring_size ? 0 : c.checkpoint_pos;
        if (!usable_checkpoint(r, start, c.write_begin, c.write_end)) {
            report_ring_say(warn, warnlen, "code log: no intact checkpoint to start from yet (position %" PRIu64 ")", start);
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
        if (E - r->pos > ring_size) {
            r->stats.overruns++;
            report_ring_say(warn, warnlen, "code log: the VM overwrote %" PRIu64 " bytes of events before they were read",
                E - r->pos - ring_size);
            lose(r, map, r->pos);
            continue;
        }
        size_t n = report_ring_chunk(&r->ring, r->pos, E);
        ReportRingCopy copied = report_ring_copy(&r->ring, r->pos, n, c.write_begin);
        if (copied == REPORT_RING_UNREADABLE) {
            report_ring_say(warn, warnlen, "code log: the ring cannot be read any more");
            break;
        }
        if (copied == REPORT_RING_OVERRUN) {
            r->stats.overruns++;
            report_ring_say(warn, warnlen, "code log: the VM overwrote events while they were being read");
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
            report_ring_say(warn, warnlen, "code log: %s at position %" PRIu64 " (seq %" PRIu64 "); skipped to the next checkpoint",
                why, bad_at, r->next_seq);
            lose(r, map, bad_at + 8);
            continue;
        }
        if (used == 0)
            break; /* cannot be: a record is at most half a chunk */
    }
    return taken;
}
