/*
 * vm/boot/boot.c — bringing the VM up and down: heap, well-known objects, core
 * classes, the GC client, the hooks through which the lower layers reach
 * the higher ones, the first send, the reports at exit.
 */
#include "vm/boot/boot.h"

#include "gc/heap.h"
#include "profiler/allocsampler.h"
#include "profiler/codetruth.h"
#include "profiler/publish.h"
#include "vm/boot/snapshot.h"
#include "vm/interp/interp.h"
#include "vm/interp/jitinterface.h"
#include "vm/interp/probes.h"
#include "vm/interp/sendcache.h"
#include "vm/interp/special.h"
#include "vm/interp/stack.h"
#include "vm/interp/walkfacts.h"
#include "vm/jit/jitpublish.h"
#include "vm/jit/runtime.h"
#include "vm/loader/bytecodepublish.h"
#include "vm/loader/loader.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/globals.h"
#include "vm/model/universe.h"
#include "vm/prims/prims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How the core library came to be (--print-stats): the boot's duration
 * and whether a snapshot gave it. */
static uint64_t boot_usecs;
static bool booted_from_snapshot;

void vm_print_stats(FILE *out)
{
    const GcStats *g = &gc_stats;
    const ProfCounters *c = vm_counters;
    fprintf(out,
            "stvm statistics (%.3f s)\n"
            "  boot                 %.3f ms (%s)\n"
            "  scavenges            %llu (total %.3f ms, max %.3f ms)\n"
            "  full GCs             %llu (total %.3f ms, max %.3f ms, %llu compacting)\n"
            "  tenures              %llu scavenges promoted %llu objects\n"
            "  bytes allocated      %llu\n"
            "  bytes freed          %llu\n"
            "  root table overflows %llu\n"
            "  old space            %zu bytes used, %zu free\n"
            "  stack overflows      %llu\n"
            "  page divorces        %llu (%llu contexts resumed)\n"
            "  interrupt checks     %llu\n"
            "  process switches     %llu\n",
            vm_ticks_usec() / 1e6, boot_usecs / 1e3,
            booted_from_snapshot ? "the core library from a snapshot" : "the core library compiled from source",
            (unsigned long long)g->scavenges, g->scavenge_usecs / 1e3,
            g->scavenge_max_usecs / 1e3, (unsigned long long)g->full_gcs, g->full_usecs / 1e3, g->full_max_usecs / 1e3,
            (unsigned long long)g->compactions, (unsigned long long)g->tenures, (unsigned long long)g->objects_tenured,
            (unsigned long long)g->bytes_allocated, (unsigned long long)g->bytes_freed,
            (unsigned long long)g->remembered_overflows, gc_old_used_bytes(), gc_old_free_bytes(),
            (unsigned long long)c->stack_overflows, (unsigned long long)c->page_divorces,
            (unsigned long long)vm_contexts_resumed, (unsigned long long)c->interrupt_checks,
            (unsigned long long)c->process_switches);
}

static void print_exit_reports(void)
{
    /* Once: --disassemble-after loads its class, and a class that fails to
     * compile exits through here again (it recursed until the stack ran out) */
    static bool printed;
    if (printed) return;
    printed = true;
    if (vm_options.print_stats) vm_print_stats(stderr);
    if (vm_options.disassemble_after && vm_jit_enabled) {
        char err[512];
        fflush(stdout);
        if (!vm_jit_disassemble_after(vm_options.disassemble_after, stdout, err, sizeof err))
            fprintf(stderr, "stvm: %s\n", err);
        fflush(stdout);
    }
    if (vm_options.code_zone_stats) {
        if (vm_jit_enabled) vm_jit_print_zone_stats(stderr);
        else fprintf(stderr, "code zone: none (the JIT is off: --no-jit)\n");
    }
}

static void before_exit(int status)
{
    /* `system exit:` and errors (inside a primitive or the interpreter,
     * where the VM may not collect); after vm_run's end, nothing more */
    prof_allocsampler_exit(false);
    vm_probe_rt_end(status);
    print_exit_reports();
}

static void visit_roots(GcVisitFn visit, void *ctx, void *client)
{
    (void)client;
    vm_universe_visit_roots(visit, ctx);
    vm_bytecode_publish_visit_roots(visit, ctx);
    vm_jit_visit_roots(visit, ctx);
    vm_interp_visit_roots(visit, ctx);
}

static void before_collect(bool full, void *client)
{
    (void)client;
    vm_jit_before_collect(full);
    vm_probe_gc_start(full);
}

static void after_collect(bool full, void *client)
{
    (void)client;
    vm_jit_after_collect(full);
    if (full) vm_bytecode_publish_after_full_gc();
    vm_probe_gc_finish(full);
    prof_publish_gc();
    /* selectors and methods are old: only a full GC moves them */
    if (full) vm_lookup_cache_flush();
}

/* -- Snapshots (vm/boot/snapshot.h) -------------------------------------------- */

static void snapshot_refused(const VmOptions *o, VmSnapshotRefusal r, const char *why)
{
    /* The default snapshot is missing or out of date after every rebuild
     * and every edit of the core: that is routine, and rewritten below. */
    if (o->snapshot_mode == VM_SNAPSHOT_READ || r == VM_SNAPSHOT_CORRUPT)
        fprintf(stderr, "stvm: warning: snapshot %s not used: %s; compiling the core library from source\n",
                o->snapshot_path, why);
}

/* Opened before the heap exists: the heap then goes where the snapshot's
 * old space was, and the image needs no relocation. */
static bool open_snapshot(const VmOptions *o, VmSnapshot *s)
{
    if (o->snapshot_mode != VM_SNAPSHOT_DEFAULT && o->snapshot_mode != VM_SNAPSHOT_READ) return false;
    char why[700];
    VmSnapshotRefusal r = vm_snapshot_open(s, o->snapshot_path, o->classpath, o->nclasspath, why, sizeof why);
    if (r == VM_SNAPSHOT_OK) return true;
    snapshot_refused(o, r, why);
    return false;
}

static bool restore_snapshot(const VmOptions *o, VmSnapshot *s)
{
    char why[700];
    VmSnapshotRefusal r = vm_snapshot_restore(s, why, sizeof why);
    vm_snapshot_close(s);
    if (r == VM_SNAPSHOT_OK) return true;
    snapshot_refused(o, r, why);
    return false;
}

static bool save_snapshot(const VmOptions *o, char *err, size_t errlen)
{
    if (o->snapshot_mode == VM_SNAPSHOT_WRITE) return vm_snapshot_write(o->snapshot_path, NULL, err, errlen);
    if (o->snapshot_mode == VM_SNAPSHOT_DEFAULT) {
        /* best effort: a read-only checkout just boots from source each time */
        char ignored[600];
        vm_snapshot_write(o->snapshot_path, o->core_dir, ignored, sizeof ignored);
    }
    return true;
}

bool vm_boot(const VmOptions *opts, char *err, size_t errlen)
{
    vm_ticks_start();
    static const VmExitHooks exit_hooks = { .print_backtrace = vm_print_backtrace, .before_exit = before_exit };
    vm_set_exit_hooks(&exit_hooks);
    /* the interpreter's caches built on lookups follow the global cache */
    static const VmLookupObserver lookups = { .filled = vm_special_note_lookup, .flushed = vm_sendcache_flush };
    vm_lookup_set_observer(&lookups);
    vm_probe_rt_init();
    vm_options = *opts;
    if (!vm_options.max_stack_depth) vm_options.max_stack_depth = VM_MAX_STACK_DEPTH_DEFAULT;
    VmSnapshot snap;
    bool have_snapshot = open_snapshot(opts, &snap);
    GcConfig cfg = {
        .heap_bytes = opts->heap_bytes,
        .eden_bytes = opts->eden_bytes,
        .verify = opts->gc_verify,
        .stress = opts->gc_stress,
        .old_start_hint = have_snapshot ? vm_snapshot_old_start(&snap) : 0,
    };
    if (!gc_heap_init(&cfg, err, errlen)) {
        if (have_snapshot) vm_snapshot_close(&snap);
        return false;
    }
    vm_probe_gc_init();
    /* The snapshot replaces everything from here to the core library's
     * last class; it must come first, into an empty old space. */
    bool restored = have_snapshot && restore_snapshot(opts, &snap);
    if (!restored) {
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
    }
    gc_set_fill(vm_nil);
    vm_universe_fill_nil_slots();
    static const GcClient client = {visit_roots, before_collect, after_collect, NULL};
    gc_set_client(&client);
    static const VmPrimDef *const prims[] = { vm_prims_integer, vm_prims_double, vm_prims_string, vm_prims_object,
                                              vm_prims_array,   vm_prims_class,  vm_prims_system, vm_prims_profiler };
    vm_prims_init(prims, sizeof prims / sizeof prims[0]);
    if (!vm_stack_init(opts->stack_pages, err, errlen)) return false;
    vm_jit_publish_init(); /* late code-event sinks get the bytecodes and the zone replayed */
    if (!opts->no_jit || opts->disassemble) {
        vm_jit_threshold = opts->jit_threshold > 0 ? opts->jit_threshold : VM_JIT_THRESHOLD_DEFAULT;
        if (!vm_jit_init(opts->code_bytes, err, errlen)) return false;
        vm_jit_verify = opts->jit_verify;
        /* --inline-budget N, --inline (-1): on; neither: VM_JIT_INLINE_BY_DEFAULT */
        int budget = opts->no_inline                                                ? 0
                     : opts->inline_budget > 0                                      ? opts->inline_budget
                     : opts->inline_budget < 0 || VM_JIT_INLINE_BY_DEFAULT ? VM_JIT_INLINE_BUDGET_DEFAULT
                                                                                    : 0;
        vm_jit_set_inlining(budget, opts->deopt_every);
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ProfWalkFacts walk;
    vm_walk_facts(&walk);
    ProfPublishInit pub = {
        .enabled = !opts->no_export,
        .eden_bytes = opts->eden_bytes,
        .stack_pages = (uint64_t)opts->stack_pages,
        .code_bytes = vm_jit_enabled ? (uint64_t)(vm_jit_zone_end - vm_jit_zone_start) : 0,
        .code_zone_start = vm_jit_enabled ? (uint64_t)vm_jit_zone_start : 0,
        .code_zone_end = vm_jit_enabled ? (uint64_t)vm_jit_zone_end : 0,
        .start_monotonic_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
        .code_log_bytes = opts->export_log_bytes,
        .walk = &walk,
        .alloc_log_bytes = opts->alloc_log_bytes,
        .no_alloc_log = opts->no_alloc_log,
    };
    prof_allocsampler_init(&walk, vm_probe_class_name);
    char warn[512];
    vm_counters = prof_publish_open(&pub, warn, sizeof warn);
    if (warn[0]) fprintf(stderr, "stvm: warning: %s\n", warn);
    /* an address inside: the section's start also carries the linker's
     * __start_ symbol, which a symbolizer may name instead of interpret */
    prof_publish_interp_ip((const void *)(vm_interp_code_start() + 1), VM_INTERP_IP_PERF_REG);
    if (opts->code_log_truth && !prof_code_truth_open(opts->code_log_truth, err, errlen)) return false;

    if (restored) {
        vm_snapshot_publish(); /* the sinks are open: announce the methods */
        booted_from_snapshot = true;
        boot_usecs = vm_ticks_usec();
        return true;
    }
    vm_global_put(vm_symbol_from_cstr("nil"), vm_nil);
    vm_global_put(vm_symbol_from_cstr("true"), vm_true);
    vm_global_put(vm_symbol_from_cstr("false"), vm_false);
    vm_global_put(vm_symbol_from_cstr("system"), vm_system);
    if (!vm_load_core(err, errlen)) return false;
    boot_usecs = vm_ticks_usec(); /* a snapshot written below is not part of the boot */
    return save_snapshot(opts, err, errlen);
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
    vm_probe_rt_start();
    vm_interpret(vm_system, vm_symbol_from_cstr("initialize:"), &args, 1);
    prof_allocsampler_exit(true); /* no frame is left: a full GC is safe */
    vm_probe_rt_end(0);
    fflush(stdout);
    print_exit_reports();
    return 0;
}
