/*
 * vm/interp/probes.c — firing the `stvm` USDT probes (profiler/usdt.h) with what
 * only vm/ knows: class and selector names copied out of the heap into C
 * strings, the heap's byte counts, the frames a non-local return unwinds.
 *
 * Everything here runs while a tracer watches (the guarded probes) or a few
 * times per run (boot, exit, collections), so clarity wins over speed; the
 * hot paths' cost is the semaphore test in vm/interp/probes.h's macros and in the
 * JIT's templates.
 */
#define _GNU_SOURCE /* gettid */
#include "vm/interp/probes.h"

#include "gc/heap.h"
#include "vm/model/class.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"

#include <stdio.h>
#include <unistd.h>

/* Room for a class name ("Foo class") or a selector ("[] in at:put:"):
 * SOM names are short; a longer one is cut, still NUL-terminated. */
#define PROBE_NAME_BYTES 256

/* -- Runtime ----------------------------------------------------------------- */

void vm_probe_rt_init(void)
{
    STVM_RT_INIT();
    STVM_THREAD_CREATE((uint64_t)gettid());
}

void vm_probe_rt_start(void)
{
    STVM_RT_START();
    STVM_PROCESS_TRANSFER((uint64_t)STVM_PROBE_PROCESS_VM, 0, (uint64_t)STVM_PROBE_PROCESS_MAIN, 0);
}

void vm_probe_rt_end(int status)
{
    static bool ended; /* vm_exit may follow the end of vm_run's send, or come instead */
    if (ended) return;
    ended = true;
    STVM_PROCESS_TRANSFER((uint64_t)STVM_PROBE_PROCESS_MAIN, 0, (uint64_t)STVM_PROBE_PROCESS_VM, 0);
    STVM_RT_END(status);
}

/* -- Names --------------------------------------------------------------------- */

/* Names of the fixed class indices (gc/object.h) for objects allocated
 * before their class is loaded (boot makes nil, symbols, methods and arrays
 * first), so that a class's count does not depend on when it came to be;
 * the core library's names, and for the VM's own objects, which have no
 * Smalltalk class, a name in parentheses. */
static const char *const fixed_class_names[CLASS_INDEX_FIRST_FREE] = {
    [CLASS_INDEX_LARGE_POS] = "Integer", [CLASS_INDEX_LARGE_NEG] = "Integer", [CLASS_INDEX_DOUBLE] = "Double",
    [CLASS_INDEX_STRING] = "String",     [CLASS_INDEX_SYMBOL] = "Symbol",     [CLASS_INDEX_ARRAY] = "Array",
    [CLASS_INDEX_METHOD] = "Method",     [CLASS_INDEX_PRIMITIVE] = "Primitive", [CLASS_INDEX_BLOCK1] = "Block1",
    [CLASS_INDEX_BLOCK2] = "Block2",     [CLASS_INDEX_BLOCK3] = "Block3",     [CLASS_INDEX_CONTEXT] = "(Context)",
    [CLASS_INDEX_NIL] = "Nil",           [CLASS_INDEX_TRUE] = "True",         [CLASS_INDEX_FALSE] = "False",
    [CLASS_INDEX_SYSTEM] = "System",     [CLASS_INDEX_OBJECT] = "Object",     [CLASS_INDEX_CLASS] = "Class",
    [CLASS_INDEX_METACLASS] = "Metaclass", [CLASS_INDEX_BYTES] = "(Bytes)",
};

/* The name of the class whose instances have index ci. The loader makes a
 * class object (the one instance of its new metaclass) before it names the
 * metaclass: such an object is "(new class object)". */
static const char *index_class_name(uint32_t ci, char *buf, size_t len)
{
    /* early in boot the table holds 0 (nil did not exist yet), later nil */
    Oop cls = ci < vm_class_table_size && vm_class_table ? vm_class_table[ci] : 0;
    bool named = cls && cls != vm_nil && oop_is_ptr(cls) && obj_num_slots(cls) > CLASS_NAME;
    Oop name = named ? vm_class_name(cls) : 0;
    if (name && vm_is_symbol(name)) return vm_string_cstr(name, buf, len);
    if (ci < CLASS_INDEX_FIRST_FREE && fixed_class_names[ci]) return fixed_class_names[ci];
    (void)buf;
    (void)len;
    return "(new class object)";
}

/* The class defining method (a block: its home method's class) and its
 * selector, "[] in sel" for a block. */
static void method_names(Oop method, char *cls, char *sel)
{
    /* the holder is a class or, for a class-side method, a metaclass (whose
     * name is "Foo class"): either names itself in CLASS_NAME */
    Oop holder = obj_slots(method)[METHOD_HOLDER];
    bool named = holder && holder != vm_nil && oop_is_ptr(holder) && obj_num_slots(holder) > CLASS_NAME &&
                 vm_is_symbol(vm_class_name(holder));
    if (named) vm_string_cstr(vm_class_name(holder), cls, PROBE_NAME_BYTES);
    else snprintf(cls, PROBE_NAME_BYTES, "?");
    /* a block's selector is cut 6 bytes earlier: "[] in " goes first */
    size_t at = 0;
    if (vm_method_is_block(method)) at = (size_t)snprintf(sel, PROBE_NAME_BYTES, "[] in ");
    Oop signature = obj_slots(method)[METHOD_SIGNATURE];
    if (vm_is_symbol(signature) || vm_is_string(signature)) vm_string_cstr(signature, sel + at, PROBE_NAME_BYTES - at);
    else snprintf(sel + at, PROBE_NAME_BYTES - at, "?");
}

/* -- Methods --------------------------------------------------------------------- */

void vm_probe_method_entry(Oop method, intptr_t primitive)
{
    char cls[PROBE_NAME_BYTES], sel[PROBE_NAME_BYTES];
    method_names(method, cls, sel);
    STVM_METHOD_ENTRY(cls, sel, (int)primitive);
}

void vm_probe_method_return(Oop method, intptr_t primitive)
{
    char cls[PROBE_NAME_BYTES], sel[PROBE_NAME_BYTES];
    method_names(method, cls, sel);
    STVM_METHOD_RETURN(cls, sel, (int)primitive);
}

/* The primitive vm_probe_primitive_fn handed out last: primitives do not
 * nest (they never send), so one at a time is all there is. */
static Oop probed_method;
static intptr_t probed_primitive;
static VmProbePrimFn probed_fn;

static bool probed_call(Oop *args, Oop *result)
{
    Oop method = probed_method;
    intptr_t primitive = probed_primitive;
    if (STVM_METHOD_ENTRY_ENABLED()) vm_probe_method_entry(method, primitive);
    bool ok = probed_fn(args, result);
    if (STVM_METHOD_RETURN_ENABLED()) vm_probe_method_return(method, primitive);
    return ok;
}

VmProbePrimFn vm_probe_primitive_fn(Oop method, intptr_t primitive, VmProbePrimFn fn)
{
    probed_method = method;
    probed_primitive = primitive;
    probed_fn = fn;
    return probed_call;
}

/* Only activations whose entry fired (frames entered before a tracer came,
 * and machine-code frames, finish unseen on return too). */
void vm_probe_frame_unwound(const Oop *fp)
{
    if (oop_int(fp[FRAME_FLAGS]) & FRAME_FLAG_TRACED) vm_probe_method_return(fp[FRAME_METHOD], 0);
}

void vm_probe_context_unwound(Oop context) { vm_probe_method_return(obj_slots(context)[CTX_METHOD], 0); }

bool vm_probe_method_semaphores(const volatile void *near, const volatile unsigned short **semaphores, char *err,
                                size_t errlen)
{
#if STVM_PROBES
    /* the prologue reads the semaphore word at a 32-bit displacement from
     * &gc_collect_wanted (vm/jit/compile.h): both are in this binary's data */
    intptr_t d = (intptr_t)stvm_method_probe_semaphores - (intptr_t)near;
    if (d != (int32_t)d) {
        snprintf(err, errlen, "the method probes' semaphores lie %td bytes from gc_collect_wanted (more than 2 GiB)", d);
        return false;
    }
    *semaphores = stvm_method_probe_semaphores;
#else
    (void)near;
    (void)err;
    (void)errlen;
    *semaphores = NULL;
#endif
    return true;
}

/* -- The heap ------------------------------------------------------------------------ */

static uint64_t freed_before; /* gc_stats.bytes_freed when the collection began */

static uint64_t bytes_in_use(void) { return gc_stats.bytes_allocated - gc_stats.bytes_freed; }

void vm_probe_gc_start(bool full)
{
    freed_before = gc_stats.bytes_freed;
    if (full) STVM_GC_START(bytes_in_use());
    else STVM_EGC_START(bytes_in_use(), STVM_PROBE_NURSERY_GENERATION);
}

void vm_probe_gc_finish(bool full)
{
    uint64_t freed = gc_stats.bytes_freed - freed_before;
    if (full) STVM_GC_FINISH(freed);
    else STVM_EGC_FINISH(freed, STVM_PROBE_NURSERY_GENERATION);
}

#if STVM_PROBES
static void on_alloc(Oop obj, size_t bytes)
{
    char cls[PROBE_NAME_BYTES];
    STVM_OBJECT_ALLOC(index_class_name(obj_class_index(obj), cls, sizeof cls), (uint64_t)bytes);
}
#endif

void vm_probe_gc_init(void)
{
#if STVM_PROBES
    gc_set_alloc_observer(&stvm_object__alloc_semaphore, on_alloc);
#endif
}

const char *vm_probe_class_name(uint32_t class_index, char *buf, size_t len)
{
    return index_class_name(class_index, buf, len);
}

/* -- The code zone --------------------------------------------------------------------- */

void vm_probe_code_compact(size_t bytes_freed, uint64_t methods_moved)
{
    STVM_CODE_COMPACT((uint64_t)bytes_freed, methods_moved);
}
