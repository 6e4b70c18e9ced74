/*
 * vm/loader/bytecodepublish.c — announcing methods' bytecodes to profilers.
 */
#include "vm/loader/bytecodepublish.h"

#include "vm/model/method.h"
#include "vm/model/vm.h"

#include <stdlib.h>

typedef struct Registered {
    Oop method;
    uint64_t announced_at; /* bytecode address last announced; 0 = not yet */
} Registered;

static Registered *methods;
static size_t count, capacity, flushed;

static uint64_t bytecodes_at(Oop m) { return (uint64_t)(uintptr_t)vm_method_bytecodes(m); }

void vm_bytecode_publish_add(Oop method)
{
    if (vm_method_bytecode_length(method) == 0) return; /* a primitive */
    if (count == capacity) {
        size_t ncap = capacity ? capacity * 2 : 1024;
        Registered *n = realloc(methods, ncap * sizeof *n);
        if (!n) vm_out_of_memory("the method registry");
        methods = n;
        capacity = ncap;
    }
    methods[count++] = (Registered){ method, 0 };
}

static void announce(Oop m, const ProfCodeSink *only)
{
    char name[600], file[512];
    size_t nl = vm_method_lines(m, NULL, 0);
    uint32_t *lines = nl ? malloc(nl * 2 * sizeof *lines) : NULL;
    if (lines) vm_method_lines(m, lines, nl);
    uint64_t start = bytecodes_at(m);
    ProfCodeLoad e = {
        .kind = PROF_CODE_BYTECODES,
        .name = vm_method_name(m, name, sizeof name),
        .start = start,
        .size = vm_method_bytecode_length(m),
        .code_start = start,
        .source = vm_method_source_path(m, file, sizeof file),
        .lines = lines,
        .line_count = lines ? (uint32_t)nl : 0,
        .bytecode_size = (uint32_t)vm_method_bytecode_length(m),
    };
    if (only) {
        if (only->load) only->load(&e, only->ctx);
    } else {
        prof_code_load(&e);
    }
    free(lines);
}

void vm_bytecode_publish_flush(void)
{
    bool observed = prof_code_observed();
    for (; flushed < count; flushed++) {
        methods[flushed].announced_at = bytecodes_at(methods[flushed].method);
        if (observed) announce(methods[flushed].method, NULL);
    }
}

size_t vm_bytecode_publish_count(void) { return count; }

Oop vm_bytecode_publish_method(size_t i) { return i < count ? methods[i].method : 0; }

void vm_bytecode_publish_visit_roots(GcVisitFn visit, void *ctx)
{
    for (size_t i = 0; i < count; i++) visit(&methods[i].method, ctx);
}

typedef struct Move {
    uint64_t from, to, size;
} Move;

static int by_from(const void *a, const void *b)
{
    uint64_t x = ((const Move *)a)->from, y = ((const Move *)b)->from;
    return x < y ? -1 : x > y;
}

void vm_bytecode_publish_after_full_gc(void)
{
    size_t n = 0;
    Move *moves = NULL;
    for (size_t i = 0; i < flushed; i++) {
        uint64_t now = bytecodes_at(methods[i].method);
        if (now == methods[i].announced_at) continue;
        if (!moves && !(moves = malloc((flushed - i) * sizeof *moves))) vm_out_of_memory("method moves");
        moves[n++] = (Move){ methods[i].announced_at, now, vm_method_bytecode_length(methods[i].method) };
        methods[i].announced_at = now;
    }
    if (n && prof_code_observed()) {
        qsort(moves, n, sizeof *moves, by_from);
        for (size_t i = 0; i < n; i++) prof_code_move(moves[i].from, moves[i].to, moves[i].size);
    }
    free(moves);
}

void vm_bytecode_publish_replay(const ProfCodeSink *to)
{
    for (size_t i = 0; i < flushed; i++) announce(methods[i].method, to);
}
