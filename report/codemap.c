/*
 * report/codemap.c — the code timeline and its lookups (see codemap.h).
 *
 * Spans are appended as events arrive. Lookups sort each space's spans by
 * start address once (again only after new spans came in) and, for an
 * address a, walk back from the last span starting at or below a for as
 * long as a span that long could still reach a: spans of the same bytes
 * at different times lie side by side there, and the time test picks the
 * one. A 64 KiB code zone compacting every few milliseconds gives some
 * hundreds of spans per byte over ten seconds: a few microseconds a
 * lookup.
 */
#include "report/codemap.h"

#include "report/addrtable.h"
#include "report/mem.h"
#include "report/ranges.h"

#include <stdlib.h>
#include <string.h>

#define NO_END UINT64_MAX

typedef struct Span {
    uint64_t start, size;
    uint64_t t_begin, t_end;
    uint32_t piece;
    uint8_t space;
} Span;

typedef struct Gap {
    uint64_t from, to; /* [from, to); to = NO_END while lost */
} Gap;

typedef struct SpaceIndex {
    uint32_t *order; /* span numbers sorted by start, then t_begin */
    size_t n, cap;
    uint64_t max_size;
    bool dirty;
} SpaceIndex;

struct ReportCodeMap {
    ReportCodePiece *pieces;
    size_t npieces, pieces_cap;
    Span *spans;
    size_t nspans, spans_cap;
    ReportAddrTable open; /* (space, start) -> its open span's number */
    Gap *gaps;
    size_t ngaps, gaps_cap;
    bool known;
    uint64_t known_from;
    uint64_t last_time;
    SpaceIndex index[PROF_CODE_SPACE_COUNT];
    ReportCodeMapStats stats;
};

ReportCodeMap *report_codemap_new(void)
{
    ReportCodeMap *m = report_mem_alloc(sizeof *m);
    return m;
}

void report_codemap_free(ReportCodeMap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->npieces; i++) {
        ReportCodePiece *p = &m->pieces[i];
        free((char *)p->name);
        free((char *)p->source);
        free((ReportMapEntry *)p->map);
        free((ReportLineEntry *)p->lines);
        free((uint32_t *)p->unwind);
    }
    free(m->pieces);
    free(m->spans);
    report_addrtable_free(&m->open);
    free(m->gaps);
    for (int s = 0; s < PROF_CODE_SPACE_COUNT; s++)
        free(m->index[s].order);
    free(m);
}

static uint64_t clamp_time(ReportCodeMap *m, uint64_t t)
{
    if (t < m->last_time)
        t = m->last_time;
    m->last_time = t;
    return t;
}

static bool valid_space(ProfCodeSpace s) { return (unsigned)s < PROF_CODE_SPACE_COUNT; }

/* -- Open spans ----------------------------------------------------------------- */

/* Ends the open span at (space, start), if any; answers its piece or -1. */
static int64_t close_open(ReportCodeMap *m, uint8_t space, uint64_t start, uint64_t t)
{
    uint64_t span;
    if (!report_addrtable_take(&m->open, space, start, &span))
        return -1;
    Span *s = &m->spans[span];
    s->t_end = t;
    return s->piece;
}

static void open_span(ReportCodeMap *m, uint8_t space, uint64_t start, uint32_t piece, uint64_t t)
{
    if (close_open(m, space, start, t) >= 0)
        m->stats.anomalies++; /* the piece there was never freed */
    report_mem_reserve(&m->spans, &m->spans_cap, m->nspans + 1, sizeof *m->spans);
    m->spans[m->nspans] = (Span){.start = start, .size = m->pieces[piece].size, .t_begin = t, .t_end = NO_END,
                                 .piece = piece, .space = space};
    if (!report_addrtable_put(&m->open, space, start, m->nspans))
        report_mem_fail(2 * m->open.cap * sizeof *m->open.slots);
    m->nspans++;
    m->index[space].dirty = true;
}

/* -- Events ---------------------------------------------------------------------- */

void report_codemap_known(ReportCodeMap *m, uint64_t time)
{
    time = clamp_time(m, time);
    if (!m->known) {
        m->known = true;
        m->known_from = time;
    }
    if (m->ngaps && m->gaps[m->ngaps - 1].to == NO_END)
        m->gaps[m->ngaps - 1].to = time;
}

void report_codemap_lost(ReportCodeMap *m, uint64_t time)
{
    time = clamp_time(m, time);
    if (m->ngaps && m->gaps[m->ngaps - 1].to == NO_END)
        return; /* already lost */
    m->stats.gaps++;
    size_t cursor = 0;
    for (const ReportAddrSlot *o; (o = report_addrtable_next(&m->open, &cursor));)
        m->spans[o->value].t_end = time;
    report_addrtable_clear(&m->open);
    report_mem_reserve(&m->gaps, &m->gaps_cap, m->ngaps + 1, sizeof *m->gaps);
    m->gaps[m->ngaps++] = (Gap){time, NO_END};
}

void report_codemap_load(ReportCodeMap *m, uint64_t time, ProfCodeSpace space, uint64_t start,
                         const ReportCodePiece *piece)
{
    if (!valid_space(space) || piece->size == 0)
        return;
    time = clamp_time(m, time);
    m->stats.loads++;
    report_mem_reserve(&m->pieces, &m->pieces_cap, m->npieces + 1, sizeof *m->pieces);
    ReportCodePiece *d = &m->pieces[m->npieces];
    *d = *piece;
    d->name = report_mem_strdup(piece->name ? piece->name : "?");
    d->source = report_mem_strdup(piece->source && piece->source[0] ? piece->source : NULL);
    d->map = report_mem_dup(piece->map, piece->nmap * sizeof *piece->map);
    d->nmap = d->map ? piece->nmap : 0;
    d->lines = report_mem_dup(piece->lines, piece->nlines * sizeof *piece->lines);
    d->nlines = d->lines ? piece->nlines : 0;
    d->unwind = report_mem_dup(piece->unwind, piece->nunwind * 2 * sizeof *piece->unwind);
    d->nunwind = d->unwind ? piece->nunwind : 0;
    if (d->nmap > 1)
        report_ranges_sort_map((ReportMapEntry *)d->map, d->nmap);
    if (d->nlines > 1)
        report_ranges_sort_lines((ReportLineEntry *)d->lines, d->nlines);
    open_span(m, (uint8_t)space, start, (uint32_t)m->npieces, time);
    m->npieces++;
}

void report_codemap_move(ReportCodeMap *m, uint64_t time, ProfCodeSpace space, uint64_t from, uint64_t to)
{
    if (!valid_space(space))
        return;
    time = clamp_time(m, time);
    m->stats.moves++;
    int64_t piece = close_open(m, (uint8_t)space, from, time);
    if (piece < 0) {
        m->stats.anomalies++;
        return;
    }
    open_span(m, (uint8_t)space, to, (uint32_t)piece, time);
}

void report_codemap_unload(ReportCodeMap *m, uint64_t time, ProfCodeSpace space, uint64_t start)
{
    if (!valid_space(space))
        return;
    time = clamp_time(m, time);
    m->stats.frees++;
    if (close_open(m, (uint8_t)space, start, time) < 0)
        m->stats.anomalies++;
}

/* -- Lookups --------------------------------------------------------------------- */

static const ReportCodeMap *sort_map; /* qsort has no context argument */

static int cmp_span(const void *a, const void *b)
{
    const Span *x = &sort_map->spans[*(const uint32_t *)a], *y = &sort_map->spans[*(const uint32_t *)b];
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->t_begin > y->t_begin) - (x->t_begin < y->t_begin);
}

static void build_index(ReportCodeMap *m, uint8_t space)
{
    SpaceIndex *ix = &m->index[space];
    ix->n = 0;
    ix->max_size = 0;
    for (size_t i = 0; i < m->nspans; i++) {
        if (m->spans[i].space != space)
            continue;
        report_mem_reserve(&ix->order, &ix->cap, ix->n + 1, sizeof *ix->order);
        ix->order[ix->n++] = (uint32_t)i;
        if (m->spans[i].size > ix->max_size)
            ix->max_size = m->spans[i].size;
    }
    sort_map = m;
    qsort(ix->order, ix->n, sizeof *ix->order, cmp_span);
    sort_map = NULL;
    ix->dirty = false;
}

static bool in_gap(const ReportCodeMap *m, uint64_t t)
{
    size_t lo = 0, hi = m->ngaps; /* gaps are in time order and disjoint */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->gaps[mid].from <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && t < m->gaps[lo - 1].to;
}

uint32_t report_codemap_last_bcpc(const ReportCodePiece *p) { return p->bytecode_size ? p->bytecode_size - 1 : 0; }

uint32_t report_codemap_first_line(const ReportCodePiece *p)
{
    uint32_t best = 0;
    for (size_t i = 0; i < p->nlines; i++)
        if (p->lines[i].line && (best == 0 || p->lines[i].line < best))
            best = p->lines[i].line;
    return best;
}

ReportCodeStatus report_codemap_resolve(ReportCodeMap *m, uint64_t time, uint64_t address, ProfCodeSpace space,
                                        ReportCodeHit *hit)
{
    if (!valid_space(space))
        return REPORT_CODE_NOTHING;
    if (!m->known || time < m->known_from)
        return REPORT_CODE_BEFORE;
    if (in_gap(m, time))
        return REPORT_CODE_GAP;
    SpaceIndex *ix = &m->index[space];
    if (ix->dirty)
        build_index(m, (uint8_t)space);
    /* the first span starting above address */
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->spans[ix->order[mid]].start <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    const Span *best = NULL;
    uint32_t best_no = 0;
    for (size_t k = lo; k-- > 0;) {
        const Span *s = &m->spans[ix->order[k]];
        if (address - s->start >= ix->max_size)
            break; /* no span starting this low reaches address */
        if (address - s->start < s->size && s->t_begin <= time && time < s->t_end &&
            (!best || s->t_begin > best->t_begin)) {
            best = s;
            best_no = ix->order[k];
        }
    }
    if (!best)
        return REPORT_CODE_NOTHING;
    const ReportCodePiece *p = &m->pieces[best->piece];
    *hit = (ReportCodeHit){.piece = p, .start = best->start, .t_begin = best->t_begin, .t_end = best->t_end,
                           .span = best_no};
    uint64_t offset = address - best->start;
    if (space == PROF_CODE_SPACE_BYTECODES) {
        hit->bc_from = hit->bc_to = (uint32_t)offset;
    } else {
        report_ranges_range_of(p->map, p->nmap, report_codemap_last_bcpc(p), offset, &hit->bc_from, &hit->bc_to);
    }
    hit->line = report_ranges_line_at(p->lines, p->nlines, hit->bc_to);
    return REPORT_CODE_FOUND;
}

ReportCodeMapStats report_codemap_stats(const ReportCodeMap *m) { return m->stats; }

size_t report_codemap_span_count(const ReportCodeMap *m) { return m->nspans; }
