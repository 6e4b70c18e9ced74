/*
 * vm/model/class.c — making instances of a class, and its printable name.
 */
#include "vm/model/class.h"

#include "gc/heap.h"
#include "vm/model/universe.h"

#include <stdio.h>

Oop vm_class_new_instance(Oop cls, size_t n)
{
    uint32_t index = (uint32_t)oop_int(obj_slots(cls)[CLASS_INSTANCE_INDEX]);
    size_t fields = (size_t)oop_int(obj_slots(cls)[CLASS_INSTANCE_FIELDS]);
    switch (index) {
    case CLASS_INDEX_STRING:
    case CLASS_INDEX_SYMBOL: return gc_alloc_bytes(index, n);
    case CLASS_INDEX_ARRAY: return gc_alloc(index, FMT_POINTERS, n);
    case CLASS_INDEX_DOUBLE: return vm_double_new(0.0);
    default: return gc_alloc(index, FMT_POINTERS, fields + n);
    }
}

const char *vm_class_name_cstr(Oop cls, char *buf, size_t len)
{
    if (!oop_is_ptr(cls) || cls == vm_nil) {
        snprintf(buf, len, "nil");
        return buf;
    }
    Oop name = vm_class_name(cls);
    if (!oop_is_ptr(name) || name == vm_nil) {
        snprintf(buf, len, "?");
        return buf;
    }
    return vm_string_cstr(name, buf, len);
}
