/*
 * vm/prims/prim_class.c — Class primitives (classes and metaclasses alike).
 */
#include "gc/heap.h"
#include "vm/model/class.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

static bool p_name(Oop *a, Oop *r)
{
    *r = vm_class_name(a[0]);
    return true;
}

static bool p_new(Oop *a, Oop *r)
{
    Oop o = vm_class_new_instance(a[0], 0);
    if (!o) vm_out_of_memory("new");
    *r = o;
    return true;
}

static bool p_superclass(Oop *a, Oop *r)
{
    *r = vm_class_superclass(a[0]);
    return true;
}

/* A copy: the class's own array defines its layout and must not change. */
static bool p_fields(Oop *a, Oop *r)
{
    Oop f = obj_slots(a[0])[CLASS_FIELDS];
    size_t n = f != vm_nil ? obj_num_slots(f) : 0;
    Oop c = vm_array_new(n);
    if (!c) vm_out_of_memory("fields");
    for (size_t i = 0; i < n; i++) obj_slots(c)[i] = obj_slots(f)[i];
    *r = c;
    return true;
}

static bool p_methods(Oop *a, Oop *r)
{
    *r = vm_class_methods(a[0]);
    return true;
}

const VmPrimDef vm_prims_class[] = {
    {"Class", false, "name", p_name},
    {"Class", false, "new", p_new},
    {"Class", false, "superclass", p_superclass},
    {"Class", false, "fields", p_fields},
    {"Class", false, "methods", p_methods},
    {NULL, false, NULL, NULL},
};
