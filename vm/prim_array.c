/*
 * vm/prim_array.c — Array primitives (indexable pointer objects).
 */
#include "gc/heap.h"
#include "vm/class.h"
#include "vm/primitive.h"
#include "vm/universe.h"
#include "vm/vm.h"

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
    {"Array", true, "new:", p_new},
    {NULL, false, NULL, NULL},
};
