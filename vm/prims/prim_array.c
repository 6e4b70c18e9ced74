/*
 * vm/prims/prim_array.c — Array primitives (indexable pointer objects).
 */
#include "gc/heap.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

static bool index_ok(Oop arr, Oop idx, intptr_t *i)
{
    if (!oop_is_int(idx)) return vm_prim_error("Array index must be an Integer");
    *i = oop_int(idx);
    size_t n = obj_num_slots(arr);
    if (*i < 1 || (size_t)*i > n) return vm_prim_error("Index %ld not valid for array of length %zu.", (long)*i, n);
    return true;
}

static bool p_at(Oop *a, Oop *r)
{
    intptr_t i = 0;
    if (!index_ok(a[0], a[1], &i)) return false;
    *r = obj_slots(a[0])[i - 1];
    return true;
}

static bool p_at_put(Oop *a, Oop *r)
{
    intptr_t i = 0;
    if (!index_ok(a[0], a[1], &i)) return false;
    gc_store(a[0], (size_t)i - 1, a[2]);
    *r = a[2];
    return true;
}

static bool p_length(Oop *a, Oop *r)
{
    *r = oop_from_int((intptr_t)obj_num_slots(a[0]));
    return true;
}

/* A method that only answers its receiver: `^self` (or `^self` spelt as a push and
 * a return), with no primitive. */
static bool answers_self(Oop m)
{
    if (!m || obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0)) return false;
    const uint8_t *p = vm_method_bytecodes(m);
    size_t n = vm_method_bytecode_length(m);
    return (n >= 1 && p[0] == BC_RETURN_SELF) || (n >= 2 && p[0] == BC_PUSH_SELF && p[1] == BC_RETURN_TOP);
}

/* Array>>putAll: with an argument that is not a block (`Array new: n withAll: true`,
 * the sieve of tinyBenchmarks and of most benchmarks) sent #value to it once per
 * slot; when that #value is a plain ^self, one fill answers the same. */
static bool p_put_all_self_valued(Oop *a, Oop *r)
{
    Oop m = vm_lookup_cached(vm_class_index_of(a[1]), vm_symbol_from_cstr("value"));
    if (!answers_self(m)) {
        *r = vm_false;
        return true;
    }
    size_t n = obj_num_slots(a[0]);
    for (size_t i = 0; i < n; i++) gc_store(a[0], i, a[1]);
    *r = vm_true;
    return true;
}

static bool p_new(Oop *a, Oop *r)
{
    if (!oop_is_int(a[1]) || oop_int(a[1]) < 0) return vm_prim_error("Array new: expects a non-negative Integer");
    Oop o = vm_class_new_instance(a[0], (size_t)oop_int(a[1]));
    if (!o) vm_out_of_memory("Array new:");
    *r = o;
    return true;
}

const VmPrimDef vm_prims_array[] = {
    {"Array", false, "at:", p_at},
    {"Array", false, "at:put:", p_at_put},
    {"Array", false, "length", p_length},
    {"Array", false, "putAllSelfValued:", p_put_all_self_valued},
    {"Array", true, "new:", p_new},
    {NULL, false, NULL, NULL},
};
