/*
 * vm/boot.c — bringing the VM up and down: heap, well-known objects, core
 * classes, the GC client, the first send, exits.
 */
#include "vm/vm.h"

#include "gc/heap.h"
#include "vm/class.h"
#include "vm/globals.h"
#include "vm/interp.h"
#include "vm/loader.h"
#include "vm/stack.h"
#include "vm/universe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

VmOptions vm_options;
VmCounters vm_counters;
static uint64_t start_usec;

static uint64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t vm_ticks_usec(void) { return now_usec() - start_usec; }

noreturn void vm_exit(int status)
{
    fflush(stdout);
    fflush(stderr);
    exit(status);
}

noreturn void vm_out_of_memory(const char *what)
{
    fflush(stdout);
    fprintf(stderr,
            "stvm: out of memory while allocating %s: the heap limit of %zu MiB is reached "
            "(old space in use: %zu MiB). Raise it with --heap-size.\n",
            what, vm_options.heap_bytes >> 20, gc_old_used_bytes() >> 20);
    vm_exit(1);
}

noreturn void vm_panic(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "stvm: panic: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nSmalltalk stack:\n");
    vm_print_backtrace(stderr);
    abort();
}

static void visit_roots(GcVisitFn visit, void *ctx, void *client)
{
    (void)client;
    vm_universe_visit_roots(visit, ctx);
    vm_interp_visit_roots(visit, ctx);
}

static void after_collect(bool full, void *client)
{
    (void)client;
    /* selectors and methods are old: only a full GC moves them */
    if (full) vm_lookup_cache_flush();
}

bool vm_boot(const VmOptions *opts, char *err, size_t errlen)
{
    start_usec = now_usec();
    vm_options = *opts;
    GcConfig cfg = {
        .heap_bytes = opts->heap_bytes,
        .eden_bytes = opts->eden_bytes,
        .verify = opts->gc_verify,
        .stress = opts->gc_stress,
    };
    if (!gc_heap_init(&cfg, err, errlen)) return false;
    vm_class_table_reserve(CLASS_INDEX_FIRST_FREE);
    /* first in old space, so compaction never moves them */
    vm_nil = gc_alloc_old(CLASS_INDEX_NIL, FMT_POINTERS, 0);
    vm_true = gc_alloc_old(CLASS_INDEX_TRUE, FMT_POINTERS, 0);
    vm_false = gc_alloc_old(CLASS_INDEX_FALSE, FMT_POINTERS, 0);
    vm_system = gc_alloc_old(CLASS_INDEX_SYSTEM, FMT_POINTERS, 0);
    if (!vm_nil || !vm_true || !vm_false || !vm_system) {
        snprintf(err, errlen, "heap too small for the boot objects");
        return false;
    }
    gc_set_fill(vm_nil);
    vm_universe_fill_nil_slots();
    static const GcClient client = {visit_roots, NULL, after_collect, NULL};
    gc_set_client(&client);
    vm_prims_init();
    if (!vm_stack_init(opts->stack_pages, err, errlen)) return false;

    vm_global_put(vm_symbol_from_cstr("nil"), vm_nil);
    vm_global_put(vm_symbol_from_cstr("true"), vm_true);
    vm_global_put(vm_symbol_from_cstr("false"), vm_false);
    vm_global_put(vm_symbol_from_cstr("system"), vm_system);
    return vm_load_core(err, errlen);
}

int vm_run(int argc, char **argv)
{
    Oop args = vm_array_new((size_t)argc);
    if (!args) vm_out_of_memory("arguments");
    for (int i = 0; i < argc; i++) {
        Oop s = vm_string_from_cstr(argv[i]);
        if (!s) vm_out_of_memory("arguments");
        gc_store(args, (size_t)i, s);
    }
    vm_interpret(vm_system, vm_symbol_from_cstr("initialize:"), &args, 1);
    fflush(stdout);
    return 0;
}
