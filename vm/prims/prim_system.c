/*
 * vm/prims/prim_system.c — System primitives that need no frames
 * (printStackTrace and fullGC are interpreter primitives).
 */
#include "gc/heap.h"
#include "vm/loader/loader.h"
#include "vm/model/class.h"
#include "vm/model/globals.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *type_name(Oop o)
{
    static char buf[256];
    return vm_class_name_cstr(vm_class_of(o), buf, sizeof buf);
}

static bool want_symbol(Oop o)
{
    if (vm_is_symbol(o)) return true;
    return vm_prim_error("Expected instance of 'Symbol' but got instance of '%s'.", type_name(o));
}

static bool want_text(Oop o)
{
    if (vm_is_symbol(o) || vm_is_string(o)) return true;
    return vm_prim_error("Expected instance of 'String' but got instance of '%s'.", type_name(o));
}

static bool p_global(Oop *a, Oop *r)
{
    if (!want_symbol(a[1])) return false;
    Oop v = vm_global_get(a[1]);
    *r = v ? v : vm_nil;
    return true;
}

static bool p_global_put(Oop *a, Oop *r)
{
    if (!want_symbol(a[1])) return false;
    vm_global_put(a[1], a[2]);
    *r = a[2];
    return true;
}

static bool p_has_global(Oop *a, Oop *r)
{
    if (!want_symbol(a[1])) return false;
    Oop v = vm_global_get(a[1]);
    *r = vm_bool(v != 0);
    return true;
}

static bool p_load_file(Oop *a, Oop *r)
{
    if (!want_text(a[1])) return false;
    char path[4096];
    vm_string_cstr(a[1], path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        *r = vm_nil;
        return true;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(len > 0 ? (size_t)len : 1);
    size_t got = buf ? fread(buf, 1, (size_t)(len > 0 ? len : 0), f) : 0;
    fclose(f);
    if (!buf) vm_out_of_memory("loadFile:");
    Oop s = vm_string_new(buf, got);
    free(buf);
    if (!s) vm_out_of_memory("loadFile:");
    *r = s;
    return true;
}

static bool p_load(Oop *a, Oop *r)
{
    if (!want_symbol(a[1])) return false;
    char name[512];
    Oop cls = vm_load_class(vm_string_cstr(a[1], name, sizeof name));
    *r = cls ? cls : vm_nil;
    return true;
}

static bool p_exit(Oop *a, Oop *r)
{
    (void)r;
    if (vm_is_large_int(a[1])) return vm_prim_error("Domain error.");
    if (!oop_is_int(a[1]))
        return vm_prim_error("Expected object of type 'Int' but got type '%s'.", type_name(a[1]));
    intptr_t code = oop_int(a[1]);
    if (code < INT32_MIN || code > INT32_MAX) return vm_prim_error("Domain error.");
    vm_exit((int)code);
}

static bool p_print_string(Oop *a, Oop *r)
{
    if (!want_text(a[1])) return false;
    fwrite(obj_bytes(a[1]), 1, obj_byte_length(a[1]), stdout);
    *r = a[0];
    return true;
}

static bool p_print_newline(Oop *a, Oop *r)
{
    putchar('\n');
    *r = a[0];
    return true;
}

static bool p_error_print(Oop *a, Oop *r)
{
    if (!want_text(a[1])) return false;
    fflush(stdout);
    fwrite(obj_bytes(a[1]), 1, obj_byte_length(a[1]), stderr);
    *r = a[0];
    return true;
}

static bool p_error_println(Oop *a, Oop *r)
{
    if (!p_error_print(a, r)) return false;
    fputc('\n', stderr);
    return true;
}

static bool p_time(Oop *a, Oop *r)
{
    (void)a;
    *r = oop_from_int((intptr_t)(vm_ticks_usec() / 1000));
    return true;
}

static bool p_ticks(Oop *a, Oop *r)
{
    (void)a;
    *r = oop_from_int((intptr_t)vm_ticks_usec());
    return true;
}

/* The thread's CPU time: what a CPU-clock sampler (vmprofd's perf_event,
 * the in-VM sampler) divides among the code, so a program that times its
 * own parts with it can be held against a profile on a busy machine, where
 * wall-clock intervals also count the time the scheduler gave to others. */
static bool p_cpu_ticks(Oop *a, Oop *r)
{
    (void)a;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    *r = oop_from_int((intptr_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    return true;
}

/* #(collections, their total milliseconds, bytes allocated) as SOM defines it */
static bool p_gc_stats(Oop *a, Oop *r)
{
    (void)a;
    Oop arr = vm_array_new(3);
    if (!arr) vm_out_of_memory("gcStats");
    obj_slots(arr)[0] = oop_from_int((intptr_t)(gc_stats.scavenges + gc_stats.full_gcs));
    obj_slots(arr)[1] = oop_from_int((intptr_t)((gc_stats.scavenge_usecs + gc_stats.full_usecs) / 1000));
    obj_slots(arr)[2] = oop_from_int((intptr_t)gc_stats.bytes_allocated);
    *r = arr;
    return true;
}

const VmPrimDef vm_prims_system[] = {
    {"System", false, "gcStats", p_gc_stats},
    {"System", false, "global:", p_global},
    {"System", false, "global:put:", p_global_put},
    {"System", false, "hasGlobal:", p_has_global},
    {"System", false, "loadFile:", p_load_file},
    {"System", false, "load:", p_load},
    {"System", false, "exit:", p_exit},
    {"System", false, "printString:", p_print_string},
    {"System", false, "printNewline", p_print_newline},
    {"System", false, "errorPrint:", p_error_print},
    {"System", false, "errorPrintln:", p_error_println},
    {"System", false, "time", p_time},
    {"System", false, "ticks", p_ticks},
    {"System", false, "cpuTicks", p_cpu_ticks},
    {NULL, false, NULL, NULL},
};
