/*
 * vm/prims/prim_number.c — primitives Integer and Double share.
 */
#include "vm/prims/prim_number.h"

bool vm_prim_number_equal(Oop *args, Oop *result)
{
    *result = vm_bool(vm_num_equal(args[0], args[1]));
    return true;
}

bool vm_prim_number_less(Oop *args, Oop *result)
{
    bool ok;
    int c = vm_num_compare(args[0], args[1], &ok);
    if (!ok) return numeric_type_error(args[1]);
    *result = vm_bool(c == -1);
    return true;
}
