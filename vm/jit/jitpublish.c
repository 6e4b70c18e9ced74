/*
 * vm/jit/jitpublish.c — telling profiler/codeevents' sinks what the JIT loads,
 * moves and frees: names, maps, source files and line tables come from the
 * heap methods, which only vm/ can read.
 */
#include "vm/jit/jitpublish.h"

#include "vm/jit/jitmethod.h"
#include "vm/jit/map.h"
#include "vm/jit/zone.h"
#include "profiler/codeevents.h"
#include "vm/interp/jitinterface.h"
#include "vm/interp/probes.h"
#include "vm/jit/jitstate.h"
#include "vm/loader/bytecodepublish.h"
#include "vm/loader/loader.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"

#include <stdio.h>
#include <stdlib.h>

static uint32_t kind_of(const JitMethod *m)
{
    switch ((JitMethodKind)m->kind) {
    case JIT_KIND_METHOD: return PROF_CODE_METHOD;
    case JIT_KIND_BLOCK: return PROF_CODE_BLOCK;
    case JIT_KIND_CLOSED_PIC: return PROF_CODE_CLOSED_PIC;
    case JIT_KIND_OPEN_PIC: return PROF_CODE_OPEN_PIC;
    default: return PROF_CODE_TRAMPOLINE;
    }
}

/* A trampoline piece is named by the first entry the VM knows inside it. */
static const char *trampoline_name(const JitMethod *m)
{
    for (const uint8_t *p = jit_method_code(m); p < jit_method_end(m); p++) {
        const char *n = vm_jit_trampoline_name(p);
        if (n) return n;
    }
    return "trampoline";
}

const char *vm_jit_publish_name(const JitMethod *m, char *buf, size_t len)
{
    char sel[256];
    if (jit_method_is_compiled(m))
        vm_method_name(m->method, buf, len);
    else if (jit_method_is_pic(m))
        snprintf(buf, len, "%s (%s)", vm_string_cstr(m->method, sel, sizeof sel),
                 jit_method_kind_name((JitMethodKind)m->kind));
    else
        snprintf(buf, len, "%s", trampoline_name(m));
    return buf;
}

/* The inlined methods of m as the sinks take them (profiler/codeevents.h,
 * "Inlining"): names, sources and line tables read from the heap methods
 * now, as the piece's own are. Freed with inline_tables_free. */
typedef struct InlineTables {
    ProfInlineScope *scopes;
    char (*text)[2][PROF_CODE_LOG_SOURCE_MAX + 1]; /* per scope: its name, its source */
    uint32_t **lines;
    ProfInlineRange *ranges;
    uint32_t count;
} InlineTables;

static void inline_tables_free(InlineTables *t)
{
    for (uint32_t i = 0; t->lines && i < t->count; i++) free(t->lines[i]);
    free(t->lines);
    free(t->text);
    free(t->scopes);
    free(t->ranges);
    *t = (InlineTables){0};
}

/* Fills e's scopes and ranges from m's inline tables; on a failed
 * allocation the piece is published without them (one method, as before
 * inlining), never with a part of them. */
static void inline_tables(const JitMethod *m, ProfCodeLoad *e, InlineTables *t)
{
    uint32_t n = jit_method_inline_scope_count(m);
    *t = (InlineTables){0};
    if (n == 0) return;
    t->scopes = calloc(n, sizeof *t->scopes);
    t->text = calloc(n, sizeof *t->text);
    t->lines = calloc(n, sizeof *t->lines);
    uint32_t nr = jit_method_inline_range_count(m);
    t->ranges = malloc((nr ? nr : 1) * sizeof *t->ranges);
    if (!t->scopes || !t->text || !t->lines || !t->ranges) {
        inline_tables_free(t);
        return;
    }
    t->count = n;
    const JitInlineScope *js = jit_method_inline_scopes(m);
    for (uint32_t i = 0; i < n; i++) {
        ProfInlineScope *s = &t->scopes[i];
        Oop im = js[i].method;
        s->name = vm_method_name(im, t->text[i][0], sizeof t->text[i][0]);
        s->source = vm_method_source_path(im, t->text[i][1], sizeof t->text[i][1]);
        size_t nl = vm_method_lines(im, NULL, 0);
        if (nl && (t->lines[i] = malloc(nl * 2 * sizeof **t->lines))) {
            vm_method_lines(im, t->lines[i], nl);
            s->lines = t->lines[i];
            s->line_count = (uint32_t)nl;
        }
        s->bytecode_size = (uint32_t)vm_method_bytecode_length(im);
        s->call_bcpc = js[i].call_bcpc;
        s->parent = js[i].parent;
    }
    const JitInlineRange *jr = jit_method_inline_ranges(m);
    for (uint32_t i = 0; i < nr; i++) t->ranges[i] = (ProfInlineRange){jr[i].start, jr[i].end, jr[i].scope};
    e->scopes = t->scopes;
    e->scope_count = n;
    e->ranges = t->ranges;
    e->range_count = nr;
}

static void announce(const JitMethod *m, const ProfCodeSink *only)
{
    char name[600], file[1100];
    ProfCodeLoad e = {
        .kind = kind_of(m),
        .name = name,
        .start = (uint64_t)(uintptr_t)m,
        .size = m->size,
        .code_start = (uint64_t)(uintptr_t)jit_method_code(m),
        .code_size = jit_method_code_bytes(m),
        .unwind = jit_method_unwind(m),
        .unwind_count = jit_method_unwind_count(m),
    };
    uint32_t *map = NULL, *lines = NULL;
    InlineTables inl = {0};
    vm_jit_publish_name(m, name, sizeof name);
    if (jit_method_is_compiled(m)) {
        map = malloc((m->map_count ? m->map_count : 1) * 2 * sizeof *map);
        JitMapIter it;
        JitMapEntry me;
        jit_map_iter_init(&it, jit_method_map(m));
        uint32_t n = 0;
        while (map && n < m->map_count && jit_map_iter_next(&it, &me)) {
            map[2 * n] = me.mcpc;
            map[2 * n + 1] = me.bcpc;
            n++;
        }
        e.map = map;
        e.map_count = map ? n : 0;
        e.source = vm_method_source_path(m->method, file, sizeof file);
        size_t nl = vm_method_lines(m->method, NULL, 0);
        lines = nl ? malloc(nl * 2 * sizeof *lines) : NULL;
        if (lines) {
            vm_method_lines(m->method, lines, nl);
            e.lines = lines;
            e.line_count = (uint32_t)nl;
        }
        e.bytecode_size = (uint32_t)vm_method_bytecode_length(m->method);
        inline_tables(m, &e, &inl);
    }
    if (only) {
        if (only->load) only->load(&e, only->ctx);
    } else {
        prof_code_load(&e);
    }
    free(map);
    free(lines);
    inline_tables_free(&inl);
}

void vm_jit_publish_load(const JitMethod *m)
{
    if (prof_code_observed()) announce(m, NULL);
    if (STVM_JIT_COMPILE_ENABLED()) {
        char name[600];
        STVM_JIT_COMPILE(vm_jit_publish_name(m, name, sizeof name), (uint64_t)(uintptr_t)m, (uint64_t)m->size);
    }
}

void vm_jit_publish_move(const JitMethod *from, const JitMethod *to)
{
    if (prof_code_observed()) prof_code_move((uint64_t)(uintptr_t)from, (uint64_t)(uintptr_t)to, from->size);
}

void vm_jit_publish_free(const JitMethod *m)
{
    if (prof_code_observed()) prof_code_free((uint64_t)(uintptr_t)m, m->size);
}

static void replay(const ProfCodeSink *to)
{
    vm_bytecode_publish_replay(to);
    if (!vm_jit_enabled) return;
    JitZone *z = vm_jit_zone();
    for (JitMethod *m = jit_zone_first(z); m; m = jit_zone_next(z, m)) announce(m, to);
}

void vm_jit_publish_init(void) { prof_code_set_replay(replay); }
