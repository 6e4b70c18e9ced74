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
    }
    if (only) {
        if (only->load) only->load(&e, only->ctx);
    } else {
        prof_code_load(&e);
    }
    free(map);
    free(lines);
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
