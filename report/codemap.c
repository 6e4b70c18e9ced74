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
        for (size_t k = 0; k < p->nscopes; k++) {
            const ReportInlineScope *sc = &p->scopes[k];
            free((char *)sc->name);
            free((char *)sc->source);
            free((ReportLineEntry *)sc->lines);
            free((ReportMapEntry *)sc->map);
        }
        free((ReportInlineScope *)p->scopes);
        free((ReportInlineRange *)p->ranges);
        if (p->own_map != p->map)
            free((ReportMapEntry *)p->own_map);
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

/* -- Inlining -------------------------------------------------------------------- */

bool report_codemap_check_inline(const ReportCodePiece *p, const char **why)
{
    if (p->nscopes == 0 && p->nranges == 0)
        return true;
    if (!p->scopes || !p->ranges || p->nscopes == 0 || p->nranges == 0) {
        *why = "inline scopes without ranges, or ranges without scopes";
        return false;
    }
    for (size_t i = 0; i < p->nscopes; i++) {
        /* a parent chain longer than the scopes is a cycle */
        int64_t at = (int64_t)i;
        size_t steps = 0;
        while (at >= 0 && steps <= p->nscopes) {
            int32_t parent = p->scopes[at].parent;
            if (parent < -1 || (parent >= 0 && (size_t)parent >= p->nscopes)) {
                *why = "an inline scope's parent does not exist";
                return false;
            }
            at = parent;
            steps++;
        }
        if (at >= 0) {
            *why = "inline scopes' parents form a cycle";
            return false;
        }
    }
    for (size_t i = 0; i < p->nranges; i++) {
        const ReportInlineRange *r = &p->ranges[i];
        if (r->start >= r->end || r->end > p->size || r->scope >= p->nscopes) {
            *why = "an inline range is empty, past the piece, or of no scope";
            return false;
        }
        if (i > 0 && r->start < p->ranges[i - 1].end) {
            *why = "inline ranges overlap or are not sorted";
            return false;
        }
    }
    return true;
}

int64_t report_codemap_inline_range_at(const ReportCodePiece *p, uint64_t offset)
{
    size_t lo = 0, hi = p->nranges; /* the first range starting above offset */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->ranges[mid].start <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && offset < p->ranges[lo - 1].end ? (int64_t)(lo - 1) : -1;
}

static bool same_method(const ReportInlineScope *a, const ReportInlineScope *b)
{
    return a->bytecode_size == b->bytecode_size && strcmp(a->name, b->name) == 0;
}

/* The derived maps of a piece (codemap.h): its own method's pairs, and
 * each scope's method's. */
static void derive_inline_maps(ReportCodePiece *d)
{
    d->own_map = d->map;
    d->nown_map = d->nmap;
    if (d->nranges == 0)
        return;
    int32_t *scope_at = report_mem_array(d->nmap ? d->nmap : 1, sizeof *scope_at);
    size_t own = 0;
    for (size_t i = 0; i < d->nmap; i++) {
        int64_t r = report_codemap_inline_range_at(d, d->map[i].mcpc);
        scope_at[i] = r < 0 ? -1 : (int32_t)d->ranges[r].scope;
        own += r < 0;
    }
    ReportMapEntry *om = report_mem_array(own ? own : 1, sizeof *om);
    size_t k = 0;
    for (size_t i = 0; i < d->nmap; i++)
        if (scope_at[i] < 0)
            om[k++] = d->map[i];
    d->own_map = om;
    d->nown_map = k;
    for (size_t s = 0; s < d->nscopes; s++) {
        ReportInlineScope *sc = (ReportInlineScope *)&d->scopes[s];
        size_t n = 0;
        for (size_t i = 0; i < d->nmap; i++)
            n += scope_at[i] >= 0 && same_method(&d->scopes[scope_at[i]], sc);
        ReportMapEntry *sm = report_mem_array(n ? n : 1, sizeof *sm);
        k = 0;
        for (size_t i = 0; i < d->nmap; i++)
            if (scope_at[i] >= 0 && same_method(&d->scopes[scope_at[i]], sc))
                sm[k++] = d->map[i];
        sc->map = sm;
        sc->nmap = k;
    }
    free(scope_at);
}

static void copy_inline(ReportCodePiece *d, const ReportCodePiece *piece)
{
    d->scopes = NULL;
    d->nscopes = 0;
    d->ranges = NULL;
    d->nranges = 0;
    const char *why;
    if (piece->nscopes == 0 || !report_codemap_check_inline(piece, &why))
        return; /* the reader rejected unsound ones already: a producer's bug costs the frames only */
    ReportInlineScope *sc = report_mem_array(piece->nscopes, sizeof *sc);
    for (size_t i = 0; i < piece->nscopes; i++) {
        const ReportInlineScope *f = &piece->scopes[i];
        sc[i] = (ReportInlineScope){
            .name = report_mem_strdup(f->name ? f->name : "?"),
            .source = report_mem_strdup(f->source && f->source[0] ? f->source : NULL),
            .lines = report_mem_dup(f->lines, f->nlines * sizeof *f->lines),
            .bytecode_size = f->bytecode_size, .call_bcpc = f->call_bcpc, .parent = f->parent,
        };
        sc[i].nlines = sc[i].lines ? f->nlines : 0;
        if (sc[i].nlines > 1)
            report_ranges_sort_lines((ReportLineEntry *)sc[i].lines, sc[i].nlines);
    }
    d->scopes = sc;
    d->nscopes = piece->nscopes;
    d->ranges = report_mem_dup(piece->ranges, piece->nranges * sizeof *piece->ranges);
    d->nranges = piece->nranges;
}

static uint32_t scope_last_bcpc(const ReportInlineScope *s) { return s->bytecode_size ? s->bytecode_size - 1 : 0; }

size_t report_codemap_inline_chain(const ReportCodePiece *p, uint64_t offset, ReportInlineFrame *out, size_t room)
{
    size_t n = 0;
    int64_t r = report_codemap_inline_range_at(p, offset);
    if (r < 0) {
        uint32_t from, to;
        report_ranges_range_of(p->own_map, p->nown_map, report_codemap_last_bcpc(p), offset, &from, &to);
        out[0] = (ReportInlineFrame){-1, from, to, report_ranges_line_at(p->lines, p->nlines, to)};
        return 1;
    }
    /* the innermost scope, then its parents; the piece's own method last
     * always, so a chain cut for room keeps its outermost frame */
    int32_t s = (int32_t)p->ranges[r].scope;
    const ReportInlineScope *sc = &p->scopes[s];
    uint32_t from, to;
    report_ranges_range_of(sc->map, sc->nmap, scope_last_bcpc(sc), offset, &from, &to);
    size_t cap = room < REPORT_INLINE_MAX_DEPTH ? room : REPORT_INLINE_MAX_DEPTH;
    if (cap > 1)
        out[n++] = (ReportInlineFrame){s, from, to, report_ranges_line_at(sc->lines, sc->nlines, to)};
    uint32_t call = sc->call_bcpc;
    for (int32_t parent = sc->parent; parent >= 0; parent = p->scopes[parent].parent) {
        const ReportInlineScope *ps = &p->scopes[parent];
        if (n + 1 < cap)
            out[n++] = (ReportInlineFrame){parent, call, call, report_ranges_line_at(ps->lines, ps->nlines, call)};
        call = ps->call_bcpc;
    }
    out[n++] = (ReportInlineFrame){-1, call, call, report_ranges_line_at(p->lines, p->nlines, call)};
    return n;
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
    copy_inline(d, piece);
    derive_inline_maps(d);
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

/* qsort has no context argument; one per thread, since vmprofd record's
 * workers index their VMs' maps at the same time (shared, one worker's
 * NULL after its sort met another's comparisons: UBSan saw it) */
static _Thread_local const ReportCodeMap *sort_map;

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
                           .span = best_no, .scope = -1};
    uint64_t offset = address - best->start;
    if (space == PROF_CODE_SPACE_BYTECODES) {
        hit->bc_from = hit->bc_to = (uint32_t)offset;
        hit->line = report_ranges_line_at(p->lines, p->nlines, hit->bc_to);
    } else {
        ReportInlineFrame chain[REPORT_INLINE_MAX_DEPTH];
        size_t n = report_codemap_inline_chain(p, offset, chain, REPORT_INLINE_MAX_DEPTH);
        hit->scope = chain[0].scope;
        hit->bc_from = chain[n - 1].bc_from;
        hit->bc_to = chain[n - 1].bc_to;
        hit->line = chain[n - 1].line;
    }
    return REPORT_CODE_FOUND;
}

ReportCodeMapStats report_codemap_stats(const ReportCodeMap *m) { return m->stats; }

size_t report_codemap_span_count(const ReportCodeMap *m) { return m->nspans; }
