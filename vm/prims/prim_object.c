/*
 * vm/prims/prim_object.c — Object, Method and Primitive primitives.
 * (perform: and invokeOn:with: send messages: they are in vm/interp/interp.c.)
 */
#include "base/hash.h"
#include "gc/heap.h"
#include "vm/model/class.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/number/bigint.h"

#include <stdio.h>
#include <string.h>

static bool p_class(Oop *a, Oop *r)
{
    *r = vm_class_of(a[0]);
    return true;
}

static bool p_object_size(Oop *a, Oop *r)
{
    *r = oop_from_int(oop_is_imm(a[0]) ? 8 : (intptr_t)obj_total_bytes(a[0]));
    return true;
}

static bool boxed_number(Oop o) { return vm_is_large_int(o) || vm_is_double(o); }

static bool p_identical(Oop *a, Oop *r)
{
    /* Integer == is value equality (SOM.md), so boxed numbers compare by value */
    if (a[0] != a[1] && (boxed_number(a[0]) || boxed_number(a[1])) && vm_is_number(a[0]) && vm_is_number(a[1])) {
        *r = vm_bool(vm_num_equal(a[0], a[1]));
        return true;
    }
    *r = vm_bool(a[0] == a[1]);
    return true;
}

static bool p_hashcode(Oop *a, Oop *r)
{
    Oop o = a[0];
    if (oop_is_int(o)) {
        *r = o;
        return true;
    }
    if (vm_is_large_int(o) || vm_is_double(o)) {
        /* by value: a Double's bits whether immediate or boxed */
        double d = vm_is_double(o) ? oop_double(o) : 0.0;
        const uint8_t *b = vm_is_double(o) ? (const uint8_t *)&d : (const uint8_t *)obj_slots(o);
        size_t n = vm_is_double(o) ? sizeof d : obj_num_slots(o) * 8;
        *r = oop_from_int((intptr_t)(base_fnv1a_bytes(b, n) >> 34));
        return true;
    }
    *r = oop_from_int(gc_identity_hash(o));
    return true;
}

static bool p_inspect(Oop *a, Oop *r)
{
    char cls[256];
    Oop o = a[0];
    printf("%s", vm_class_name_cstr(vm_class_of(o), cls, sizeof cls));
    if (oop_is_ptr(o) && obj_format(o) == FMT_POINTERS) {
        Oop fields = obj_slots(vm_class_of(o))[CLASS_FIELDS];
        size_t nf = fields != vm_nil ? obj_num_slots(fields) : 0;
        for (size_t i = 0; i < nf && i < obj_num_slots(o); i++) {
            char name[256], vcls[256];
            printf(" %s: a %s", vm_string_cstr(obj_slots(fields)[i], name, sizeof name),
                   vm_class_name_cstr(vm_class_of(obj_slots(o)[i]), vcls, sizeof vcls));
        }
    }
    printf("\n");
    *r = o;
    return true;
}

static bool p_halt(Oop *a, Oop *r)
{
    fflush(stdout);
    fprintf(stderr, "halt: stvm has no debugger; continuing\n");
    *r = a[0];
    return true;
}

static size_t field_count(Oop o)
{
    if (!oop_is_ptr(o) || obj_format(o) != FMT_POINTERS) return 0;
    return obj_num_slots(o);
}

static bool p_inst_var_at(Oop *a, Oop *r)
{
    if (!oop_is_int(a[1])) return vm_prim_error("instVarAt: expects an Integer index");
    intptr_t i = oop_int(a[1]);
    size_t n = field_count(a[0]);
    if (i < 1 || (size_t)i > n) return vm_prim_error("Index %ld not valid for array of length %zu.", (long)i, n);
    *r = obj_slots(a[0])[i - 1];
    return true;
}

static bool p_inst_var_at_put(Oop *a, Oop *r)
{
    if (!oop_is_int(a[1])) return vm_prim_error("instVarAt:put: expects an Integer index");
    intptr_t i = oop_int(a[1]);
    size_t n = field_count(a[0]);
    if (i < 1 || (size_t)i > n) return vm_prim_error("Index %ld not valid for array of length %zu.", (long)i, n);
    gc_store(a[0], (size_t)i - 1, a[2]);
    *r = a[2];
    return true;
}

static bool p_inst_var_named(Oop *a, Oop *r)
{
    Oop fields = obj_slots(vm_class_of(a[0]))[CLASS_FIELDS];
    if (!vm_is_symbol(a[1])) return vm_prim_error("instVarNamed: expects a Symbol");
    size_t n = fields != vm_nil ? obj_num_slots(fields) : 0;
    for (size_t i = 0; i < n && i < field_count(a[0]); i++)
        if (obj_slots(fields)[i] == a[1]) {
            *r = obj_slots(a[0])[i];
            return true;
        }
    char buf[256];
    return vm_prim_error("instVarNamed: no field named %s", vm_string_cstr(a[1], buf, sizeof buf));
}

static bool p_signature(Oop *a, Oop *r)
{
    *r = obj_slots(a[0])[METHOD_SIGNATURE];
    return true;
}

static bool p_holder(Oop *a, Oop *r)
{
    *r = obj_slots(a[0])[METHOD_HOLDER];
    return true;
}

const VmPrimDef vm_prims_object[] = {
    {"Object", false, "class", p_class},
    {"Object", false, "objectSize", p_object_size},
    {"Object", false, "==", p_identical},
    {"Object", false, "hashcode", p_hashcode},
    {"Object", false, "inspect", p_inspect},
    {"Object", false, "halt", p_halt},
    {"Object", false, "instVarAt:", p_inst_var_at},
    {"Object", false, "instVarAt:put:", p_inst_var_at_put},
    {"Object", false, "instVarNamed:", p_inst_var_named},
    {"Method", false, "signature", p_signature},
    {"Method", false, "holder", p_holder},
    {"Primitive", false, "signature", p_signature},
    {"Primitive", false, "holder", p_holder},
    {NULL, false, NULL, NULL},
};
