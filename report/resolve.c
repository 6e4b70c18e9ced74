/*
 * report/resolve.c — stored samples to a report Profile. See resolve.h.
 */
#include "report/resolve.h"

#include "report/mem.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int intern_plain(Profile *p, const char *name, int *fn_cache, uint64_t addr)
{
    if (*fn_cache < 0) {
        ReportFunctionInfo f;
        memset(&f, 0, sizeof f);
        f.name = name;
        f.region = REPORT_REGION_REST;
        f.mapping = -1;
        *fn_cache = report_profile_add_function(p, &f);
    }
    return report_profile_add_location(p, *fn_cache, addr, 0);
}

/* -- The code zone ---------------------------------------------------------------- */

typedef struct Zone {
    ResolveCode *code;
    int mapping;          /* the zone's mapping in the profile */
    int anonymous[4];     /* function per ReportCodeStatus other than FOUND, -1 until made */
    char path[4096];
    uint64_t interp_start, interp_end; /* the interpreter function, when published */
    int *interp_fn;       /* span -> function of its interpreted method, + 1 */
    size_t ninterp_fn;
    int kernel_fn, unknown_fn;
    struct {
        const char *text;
        int fn;
    } why[16];            /* "[unknown: …]" functions by reason */
    size_t nwhy;
} Zone;

static const char *status_word(ReportCodeStatus st)
{
    switch (st) {
    case REPORT_CODE_FOUND: return "found";
    case REPORT_CODE_NOTHING: return "nothing";
    case REPORT_CODE_GAP: return "lost";
    case REPORT_CODE_BEFORE: return "before";
    }
    return "?";
}

/* A zone address no piece explains: one row per reason. */
static int anonymous(Profile *p, Zone *z, ReportCodeStatus st, uint64_t addr)
{
    static const char *const names[4] = {
        [REPORT_CODE_NOTHING] = "[code zone]",
        [REPORT_CODE_GAP] = "[code zone: events lost]",
        [REPORT_CODE_BEFORE] = "[code zone: before the code log]",
    };
    if (z->anonymous[st] < 0) {
        ReportFunctionInfo f = {.name = names[st], .region = REPORT_REGION_GENERATED, .mapping = z->mapping};
        z->anonymous[st] = report_profile_add_function(p, &f);
    }
    return report_profile_add_location(p, z->anonymous[st], addr, 0);
}

/* Removes "." and ".." components and repeated slashes of an absolute
 * path in place, lexically (the file may live in the target's mount
 * namespace, not ours): "/a/build/../t/F.som" -> "/a/t/F.som". */
static void clean_path(char *path)
{
    char *out = path; /* path[0] == '/' */
    const char *in = path;
    while (*in) {
        while (*in == '/')
            in++;
        const char *end = strchr(in, '/');
        size_t len = end ? (size_t)(end - in) : strlen(in);
        if (len == 0)
            break;
        if (len == 1 && in[0] == '.') {
            /* nothing */
        } else if (len == 2 && in[0] == '.' && in[1] == '.') {
            while (out > path && *--out != '/')
                ;
        } else {
            *out++ = '/';
            memmove(out, in, len);
            out += len;
        }
        in += len;
    }
    if (out == path)
        *out++ = '/';
    *out = '\0';
}

/* The .som file as the target would open it, absolute and clean. */
static const char *source_of(Zone *z, const char *src)
{
    if (!src)
        return NULL;
    if (src[0] == '/')
        snprintf(z->path, sizeof z->path, "%s", src);
    else if (z->code->cwd)
        snprintf(z->path, sizeof z->path, "%s/%s", z->code->cwd, src);
    else
        return src;
    clean_path(z->path);
    return z->path;
}

/* The function of inlined scope k of the piece hit found. */
static int inlined_function(Profile *p, Zone *z, const ReportCodeHit *hit, int32_t k)
{
    const ReportCodePiece *pc = hit->piece;
    const ReportInlineScope *sc = &pc->scopes[k];
    char name[PROF_CODE_LOG_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s (inlined)", sc->name);
    ReportCodePiece as_piece = {.bytecode_size = sc->bytecode_size, .lines = sc->lines, .nlines = sc->nlines};
    ReportFunctionInfo f = {
        .name = name,
        .file = source_of(z, sc->source),
        .start_line = (int)report_codemap_first_line(&as_piece),
        .region = REPORT_REGION_GENERATED,
        .start = hit->start,
        .size = pc->size,
        .mapping = z->mapping,
        .map = sc->map,
        .nmap = sc->nmap,
        .last_bcpc = report_codemap_last_bcpc(&as_piece),
        .lines = sc->lines,
        .nlines = sc->nlines,
        .inlined_into = pc->name,
    };
    return report_profile_add_function(p, &f);
}

/* The frames of machine-code address addr in the zone, into frames (room >
 * 0), innermost first: the methods inlined there (report/codemap.h's
 * chain), then the piece's own method; one frame without inlining, or the
 * anonymous zone row. All share addr, so pprof makes them one Location
 * (report/pprof.c). Answers how many. */
static size_t zone_frames(Profile *p, Zone *z, uint64_t time, uint64_t addr, bool is_return, bool leaf, uint32_t tid,
                          int *frames, size_t room)
{
    ResolveCode *c = z->code;
    uint64_t q = is_return && addr > 0 ? addr - 1 : addr; /* the call, not the instruction after it */
    ReportCodeHit hit;
    ReportCodeStatus st = c->map ? report_codemap_resolve(c->map, time, q, PROF_CODE_SPACE_MACHINE, &hit)
                                 : REPORT_CODE_NOTHING;
    if (leaf) {
        c->zone_leaves++;
        c->resolved += st == REPORT_CODE_FOUND;
        c->nothing += st == REPORT_CODE_NOTHING;
        c->lost += st == REPORT_CODE_GAP;
        c->before += st == REPORT_CODE_BEFORE;
    }
    ReportInlineFrame chain[REPORT_INLINE_MAX_DEPTH];
    size_t nchain = 0;
    if (st == REPORT_CODE_FOUND)
        nchain = report_codemap_inline_chain(hit.piece, q - hit.start, chain, room < REPORT_INLINE_MAX_DEPTH ? room
                                                                                                     : REPORT_INLINE_MAX_DEPTH);
    /* every frame of a whole stack, leaf or not, so a checker can judge
     * the callers as well (tests/stacks); inlined frames on lines of their
     * own ("i"), innermost first, after the piece's ("m") */
    if ((leaf || c->debug_all_frames) && c->debug) {
        fprintf(c->debug, "%" PRIu64 " %" PRIu32 " m 0x%" PRIx64 " %s", time, tid, q, status_word(st));
        if (st == REPORT_CODE_FOUND)
            fprintf(c->debug, " 0x%" PRIx64 " %" PRIu32 " %" PRIu32 " %s", hit.start, hit.bc_from, hit.bc_to,
                    hit.piece->name);
        fputc('\n', c->debug);
        for (size_t i = 0; i + 1 < nchain; i++)
            fprintf(c->debug, "%" PRIu64 " %" PRIu32 " i 0x%" PRIx64 " found 0x%" PRIx64 " %" PRIu32 " %" PRIu32
                              " %s (inlined into %s)\n",
                    time, tid, q, hit.start, chain[i].bc_from, chain[i].bc_to, hit.piece->scopes[chain[i].scope].name,
                    hit.piece->name);
    }
    if (st != REPORT_CODE_FOUND) {
        frames[0] = anonymous(p, z, st, addr);
        return 1;
    }
    const ReportCodePiece *pc = hit.piece;
    size_t n = 0;
    for (; n + 1 < nchain; n++)
        frames[n] = report_profile_add_location(p, inlined_function(p, z, &hit, chain[n].scope), addr,
                                                (int)chain[n].line);
    ReportFunctionInfo f = {
        .name = pc->name,
        .file = source_of(z, pc->source),
        .start_line = (int)report_codemap_first_line(pc),
        .region = REPORT_REGION_GENERATED,
        .start = hit.start,
        .size = pc->size,
        .mapping = z->mapping,
        .map = pc->own_map,
        .nmap = pc->nown_map,
        .last_bcpc = report_codemap_last_bcpc(pc),
        .lines = pc->lines,
        .nlines = pc->nlines,
    };
    int fn = report_profile_add_function(p, &f);
    frames[n++] = report_profile_add_location(p, fn, addr, (int)chain[nchain - 1].line);
    return n;
}

/* -- Interpreted methods ---------------------------------------------------------------- */

/* The method whose bytecode the interpreter was at, as a location, or -1. */
static int interpreted_location(Profile *p, Zone *z, uint64_t time_ns, uint32_t tid, uint64_t addr)
{
    ResolveCode *c = z->code;
    ReportCodeHit hit;
    ReportCodeStatus st = c->map ? report_codemap_resolve(c->map, time_ns, addr, PROF_CODE_SPACE_BYTECODES, &hit)
                                 : REPORT_CODE_NOTHING;
    if (c->debug) {
        fprintf(c->debug, "%" PRIu64 " %" PRIu32 " b 0x%" PRIx64 " %s", time_ns, tid, addr,
                status_word(st));
        if (st == REPORT_CODE_FOUND)
            fprintf(c->debug, " 0x%" PRIx64 " %" PRIu32 " %" PRIu32 " %s", hit.start, hit.bc_from, hit.bc_to,
                    hit.piece->name);
        fputc('\n', c->debug);
    }
    if (st != REPORT_CODE_FOUND)
        return -1;
    c->interpreted++;
    if (hit.span >= z->ninterp_fn || z->interp_fn[hit.span] == 0) {
        const ReportCodePiece *pc = hit.piece;
        /* one range per bytecode: map pairs (b + 1, b), so the bytes of
         * bytecode b fall in the range b -> b (ranges.h) */
        uint32_t nb = pc->bytecode_size;
        ReportMapEntry *map = malloc((nb ? nb : 1) * sizeof *map);
        for (uint32_t b = 0; map && b < nb; b++)
            map[b] = (ReportMapEntry){.mcpc = b + 1, .bcpc = b};
        char name[PROF_CODE_LOG_NAME_MAX + 32];
        snprintf(name, sizeof name, "%s (interpreted)", pc->name);
        ReportFunctionInfo f = {
            .name = name,
            .file = source_of(z, pc->source),
            .start_line = (int)report_codemap_first_line(pc),
            .region = REPORT_REGION_VANILLA,
            .start = hit.start,
            .size = pc->size,
            .mapping = -1,
            .map = map,
            .nmap = map ? nb : 0,
            .last_bcpc = report_codemap_last_bcpc(pc),
            .lines = pc->lines,
            .nlines = pc->nlines,
        };
        int fn = report_profile_add_function(p, &f);
        free(map);
        if (hit.span >= z->ninterp_fn)
            return report_profile_add_location(p, fn, addr, (int)hit.line);
        z->interp_fn[hit.span] = fn + 1;
    }
    return report_profile_add_location(p, z->interp_fn[hit.span] - 1, addr, (int)hit.line);
}

/* -- Whole stacks (proto/stackabi.h) ----------------------------------------------------- */

/* "[unknown: why]" rows, one function per reason. */
static int unknown_frame(Profile *p, Zone *z, const char *why)
{
    for (size_t i = 0; i < z->nwhy; i++)
        if (strcmp(z->why[i].text, why) == 0)
            return report_profile_add_location(p, z->why[i].fn, 0, 0);
    if (z->nwhy == sizeof z->why / sizeof z->why[0])
        return report_profile_add_location(p, z->why[0].fn, 0, 0);
    char name[200];
    snprintf(name, sizeof name, "[unknown: %s]", why);
    ReportFunctionInfo f = {.name = name, .region = REPORT_REGION_REST, .mapping = -1};
    z->why[z->nwhy].text = why;
    z->why[z->nwhy].fn = report_profile_add_function(p, &f);
    return report_profile_add_location(p, z->why[z->nwhy++].fn, 0, 0);
}

static uint32_t rule_at(const ReportCodePiece *pc, uint64_t offset)
{
    uint32_t rule = PROF_UNWIND_FRAMELESS;
    for (size_t i = 0; i < pc->nunwind && pc->unwind[2 * i] <= offset; i++)
        rule = pc->unwind[2 * i + 1];
    return rule;
}

/* The frames of a native pc (more than one only in machine code with
 * inlined methods), into frames (room > 0); answers how many. */
static size_t native_frames(Profile *p, Zone *z, Symbolizer *sym, const StoredSample *s, uint64_t pc, bool is_return,
                            bool leaf, int *frames, size_t room)
{
    ResolveCode *c = z->code;
    uint64_t q = is_return && pc > 0 ? pc - 1 : pc;
    if (c && c->zone_end > c->zone_start && q >= c->zone_start && q < c->zone_end)
        return zone_frames(p, z, s->time_ns, pc, is_return, leaf, s->tid, frames, room);
    frames[0] = sym ? report_symbolize(sym, p, pc, is_return) : intern_plain(p, "[unknown]", &z->unknown_fn, pc);
    return 1;
}

/* The Smalltalk frames of a whole stack, innermost first, into frames;
 * answers how many. */
static size_t smalltalk_frames(Profile *p, Zone *z, const StoredSample *s, const uint64_t *st, int *frames,
                               size_t room, bool leaf)
{
    size_t n = 0;
    bool chain = true;
    if (s->raw_mode == PROF_RAW_INTERP) {
        uint64_t at = s->top[0] ? s->top[0] : s->top[3];
        int loc = at ? interpreted_location(p, z, s->time_ns, s->tid, at) : -1;
        frames[n++] = loc >= 0 ? loc : unknown_frame(p, z, "no method for the interpreter's frame");
    } else {
        /* machine code: frameless pieces (PICs, stubs, prologues) name
         * their caller through the words at the top of the stack */
        uint64_t pc = s->top[0], sp = s->top[1];
        bool is_return = s->raw_mode == PROF_RAW_CSTATE;
        for (int step = 0; n < room; step++) {
            ReportCodeHit hit;
            uint64_t q = is_return ? pc - 1 : pc;
            ReportCodeStatus cs = z->code && z->code->map
                                      ? report_codemap_resolve(z->code->map, s->time_ns, q, PROF_CODE_SPACE_MACHINE, &hit)
                                      : REPORT_CODE_NOTHING;
            if (cs != REPORT_CODE_FOUND) {
                frames[n++] = anonymous(p, z, cs, pc);
                if (n < room)
                    frames[n++] = unknown_frame(p, z, "no unwind rule: code not known at that time");
                chain = false;
                break;
            }
            if (z->code->return_to_interpreter && pc == z->code->return_to_interpreter) {
                /* machine code entered from the interpreter: its caller is the
                 * interpreted frame at top_fp */
                int loc = s->top[3] ? interpreted_location(p, z, s->time_ns, s->tid, s->top[3] & ~PROF_RAW_BYTECODE) : -1;
                frames[n++] = loc >= 0 ? loc : unknown_frame(p, z, "interpreted caller unreadable");
                break;
            }
            n += zone_frames(p, z, s->time_ns, pc, is_return, leaf && step == 0, s->tid, frames + n, room - n);
            uint32_t rule = rule_at(hit.piece, (is_return ? pc : pc) - hit.start);
            if (rule == PROF_UNWIND_FRAME)
                break;
            uint64_t at;
            if (rule == PROF_UNWIND_FRAMELESS)
                at = sp;
            else if (rule == PROF_UNWIND_PUSHED_BP)
                at = sp + 8;
            else {
                if (n < room)
                    frames[n++] = unknown_frame(p, z, "switching stacks");
                chain = false;
                break;
            }
            uint64_t idx = (at - s->top[1]) / 8;
            if (at < s->top[1] || idx >= PROF_RAW_TOP_WORDS || step >= PROF_RAW_TOP_WORDS || n >= room) {
                if (n < room)
                    frames[n++] = unknown_frame(p, z, "frameless code nested too deep");
                chain = false;
                break;
            }
            pc = s->top[4 + idx];
            sp = at + 8;
            is_return = true;
        }
    }
    if (!chain)
        return n;
    for (uint16_t i = 0; i < s->nst && n < room; i++) {
        uint64_t a = st[i];
        if (!(a & PROF_RAW_BYTECODE)) {
            n += zone_frames(p, z, s->time_ns, a, false, false, s->tid, frames + n, room - n);
            continue;
        }
        int loc = interpreted_location(p, z, s->time_ns, s->tid, a & ~PROF_RAW_BYTECODE);
        frames[n++] = loc >= 0 ? loc : unknown_frame(p, z, "no method at a frame's bytecode");
    }
    if (n < room && (s->raw_flags & PROF_RAW_F_ST_TRUNCATED))
        frames[n++] = unknown_frame(p, z, "deeper Smalltalk frames not read");
    else if (n < room && (s->raw_flags & (PROF_RAW_F_BAD_FRAME | PROF_RAW_F_FAULT)))
        frames[n++] = unknown_frame(p, z, "Smalltalk frame chain unreadable");
    return n;
}

/* Whether pc lies in machine code whose rule there is `rule`; pcs outside
 * the zone (C) pass. */
static bool leaf_rule_is(Zone *z, const StoredSample *s, uint64_t pc, uint32_t rule)
{
    ResolveCode *c = z->code;
    if (!(c->zone_end > c->zone_start && pc >= c->zone_start && pc < c->zone_end))
        return true;
    ReportCodeHit hit;
    if (!c->map || report_codemap_resolve(c->map, s->time_ns, pc, PROF_CODE_SPACE_MACHINE, &hit) != REPORT_CODE_FOUND)
        return false;
    return rule_at(hit.piece, pc - hit.start) == rule;
}

/* A whole stack, leaf first, into frames (room for it all). */
static size_t whole_frames(Profile *p, Zone *z, Symbolizer *sym, const SampleStore *store, const StoredSample *s,
                           int *frames, size_t room)
{
    static const uint64_t no_pcs[1]; /* a store of frameless samples has no pcs array */
    const uint64_t *k = store->pcs ? store->pcs + s->first : no_pcs;
    const uint64_t *leaf = k + s->nkernel, *st = leaf + s->nleaf, *root = st + s->nst;
    size_t n = 0;
    if (s->nkernel)
        frames[n++] = intern_plain(p, "[kernel]", &z->kernel_fn, k[0]);
    bool smalltalk = s->raw_mode == PROF_RAW_INTERP || s->raw_mode == PROF_RAW_MACHINE || s->raw_mode == PROF_RAW_CSTATE;
    ResolveCode *c = z->code;
    for (uint16_t i = 0; i < s->nleaf && n < room; i++) {
        n += native_frames(p, z, sym, s, leaf[i], i > 0, i == 0 && !s->nkernel, frames + n, room - n);
        uint64_t q = i > 0 && leaf[i] > 0 ? leaf[i] - 1 : leaf[i];
        if ((s->raw_flags & PROF_RAW_F_NO_FACTS) && c->zone_end > c->zone_start && q >= c->zone_start &&
            q < c->zone_end) {
            /* walked without the facts: frame pointers through machine code
             * skip the callers of frameless code and end at a wrong root, so
             * the stack stops at its first Smalltalk frame, as a sample
             * without a walk does */
            if (n < room)
                frames[n++] = unknown_frame(p, z, "Smalltalk callers not walked (stacks partial)");
            return n;
        }
    }
    if (smalltalk && s->raw_mode == PROF_RAW_CSTATE && s->nleaf && !leaf_rule_is(z, s, leaf[0], PROF_UNWIND_CSTATE)) {
        /* a piece on the C stack whose state is not in st_sp/st_fp (an enilopmart) */
        smalltalk = false;
        if (n < room)
            frames[n++] = unknown_frame(p, z, "switching between machine code and the interpreter");
    }
    if (smalltalk)
        n += smalltalk_frames(p, z, s, st, frames + n, room - n, s->nleaf == 0 && !s->nkernel);
    else if (s->raw_mode == PROF_RAW_NATIVE && s->interp_ip && s->nleaf && leaf[0] >= z->interp_start &&
             leaf[0] < z->interp_end && n + 2 < room) {
        /* no walk facts, but the interpreter's ip register: its method, above
         * the interpreter's frame, callers unknown */
        int loc = interpreted_location(p, z, s->time_ns, s->tid, s->interp_ip);
        if (loc >= 0) {
            memmove(frames + 2, frames, n * sizeof *frames);
            frames[0] = loc;
            frames[1] = unknown_frame(p, z, "Smalltalk callers not walked (stacks partial)");
            n += 2;
        }
    } else if (s->raw_mode == PROF_RAW_UNKNOWN && n < room)
        frames[n++] = unknown_frame(p, z, s->raw_why == PROF_RAW_WHY_SWITCH
                                              ? "switching between machine code and the interpreter"
                                              : "no walk facts");
    if (n < room && (s->raw_flags & PROF_RAW_F_LEAF_TRUNCATED))
        frames[n++] = unknown_frame(p, z, "deeper native frames not read");
    for (uint16_t i = 0; i < s->nroot && n < room; i++) {
        /* root[0] is the interpreter's pc: the sampled one when nothing is above it */
        bool is_return = !(i == 0 && ((s->raw_mode == PROF_RAW_INTERP && s->nleaf == 0) ||
                                      (s->raw_flags & PROF_RAW_F_LEAF_GUESSLESS)));
        n += native_frames(p, z, sym, s, root[i], is_return, false, frames + n, room - n);
    }
    if (n == 0)
        frames[n++] = intern_plain(p, "[unknown]", &z->unknown_fn, 0);
    return n;
}

struct ReportResolver {
    Profile *p;
    Symbolizer *sym;
    Zone z;
    ResolveCode no_code;
    bool have_zone;
    int *label_fn; /* the labels' pseudo-functions, made on first use (-1 until then) */
    size_t nlabel_fn;
};

/* The pseudo-function of label k (1-based) of st; -1 when out of memory. */
static int label_frame(ReportResolver *r, const SampleStore *st, uint32_t k)
{
    if (r->nlabel_fn < st->nlabels) {
        int *fn = realloc(r->label_fn, st->nlabels * sizeof *fn);
        if (!fn)
            return -1;
        for (size_t i = r->nlabel_fn; i < st->nlabels; i++)
            fn[i] = -1;
        r->label_fn = fn;
        r->nlabel_fn = st->nlabels;
    }
    return intern_plain(r->p, st->labels[k - 1], &r->label_fn[k - 1], 0);
}

ReportResolver *report_resolver_new(Profile *p, Symbolizer *sym, ResolveCode *code)
{
    ReportResolver *r = report_mem_alloc(sizeof *r);
    r->p = p;
    r->sym = sym;
    r->z = (Zone){.code = code, .mapping = -1, .anonymous = {-1, -1, -1, -1}, .kernel_fn = -1, .unknown_fn = -1};
    if (!r->z.code)
        r->z.code = &r->no_code;
    Zone *z = &r->z;
    if (sym)
        report_symbolize_vm_mapping(sym, p); /* the first mapping: pprof's main binary */
    r->have_zone = code && code->zone_end > code->zone_start;
    if (code && code->map && code->interp_fn && sym) {
        SymbolizedAddr a;
        report_symbolize_lookup(sym, code->interp_fn, false, &a);
        if (a.region == REPORT_REGION_VANILLA && a.function_start && a.function_size) {
            z->interp_start = a.function_start;
            z->interp_end = a.function_start + a.function_size;
            z->ninterp_fn = report_codemap_span_count(code->map);
            z->interp_fn = calloc(z->ninterp_fn ? z->ninterp_fn : 1, sizeof *z->interp_fn);
            if (!z->interp_fn)
                z->ninterp_fn = 0;
        }
    }
    if (r->have_zone) {
        ReportMappingInfo mi = {.start = code->zone_start, .limit = code->zone_end, .file = "[code zone]"};
        z->mapping = report_profile_add_mapping(p, &mi);
    }
    return r;
}

void report_resolver_free(ReportResolver *r)
{
    if (!r)
        return;
    free(r->z.interp_fn);
    free(r->label_fn);
    free(r);
}

size_t report_resolver_stack(ReportResolver *r, const SampleStore *st, size_t i, int *frames)
{
    Profile *p = r->p;
    Symbolizer *sym = r->sym;
    Zone *z = &r->z;
    const ResolveCode *code = z->code;
    const StoredSample *s = &st->v[i];
    size_t n = 0;
    if (s->label && s->label <= st->nlabels) { /* wall mode's [off-CPU: ...] above the leaf */
        int f = label_frame(r, st, s->label);
        if (f >= 0)
            frames[n++] = f;
    }
    if (s->whole)
        return n + whole_frames(p, z, sym, st, s, frames + n, REPORT_RESOLVE_ROOM - n);
    if (s->kernel_ip)
        frames[n++] = intern_plain(p, "[kernel]", &z->kernel_fn, s->kernel_ip);
    /* Without a whole stack the Smalltalk frames were not walked at the
     * sample: a frame-pointer chain read through them skips the callers
     * of frameless code, so it stops at the first Smalltalk frame and
     * says so (stacks partial) instead of showing a wrong caller. */
    if (s->interp_ip && !s->kernel_ip && s->npcs > 0 && st->pcs[s->first] >= z->interp_start &&
        st->pcs[s->first] < z->interp_end) {
        int loc = interpreted_location(p, z, s->time_ns, s->tid, s->interp_ip);
        if (loc >= 0) {
            frames[n++] = loc; /* above the interpreter's own frame */
            frames[n++] = unknown_frame(p, z, "Smalltalk callers not walked (stacks partial)");
        }
    }
    for (uint32_t k = 0; k < s->npcs && n + 2 <= REPORT_RESOLVE_ROOM; k++) {
        uint64_t pc = st->pcs[s->first + k];
        /* Frames above the leaf are return addresses: the call is the
         * instruction before them. */
        uint64_t q = k > 0 && pc > 0 ? pc - 1 : pc;
        if (r->have_zone && q >= code->zone_start && q < code->zone_end) {
            n += zone_frames(p, z, s->time_ns, pc, k > 0, k == 0 && !s->kernel_ip, s->tid, frames + n,
                             REPORT_RESOLVE_ROOM - n - 1);
            frames[n++] = unknown_frame(p, z, "Smalltalk callers not walked (stacks partial)");
            break;
        }
        frames[n++] = sym ? report_symbolize(sym, p, pc, k > 0) : intern_plain(p, "[unknown]", &z->unknown_fn, pc);
    }
    if (n == 0 || (n == 1 && s->label))
        frames[n++] = intern_plain(p, "[unknown]", &z->unknown_fn, 0);
    return n;
}

void report_resolve_samples(Profile *p, Symbolizer *sym, const SampleStore *st, ResolveCode *code)
{
    static _Thread_local int frames[REPORT_RESOLVE_ROOM]; /* vmprofd serve resolves in several threads */
    ReportResolver *r = report_resolver_new(p, sym, code);
    for (size_t i = 0; i < st->n; i++) {
        size_t n = report_resolver_stack(r, st, i, frames);
        report_profile_add_weighted_sample(p, st->v[i].time_ns, st->v[i].tid, frames, n, st->v[i].weight);
    }
    report_resolver_free(r);
}
