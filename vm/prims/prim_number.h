/*
 * vm/prims/prim_number.h — helpers shared by the Integer and Double primitives.
 */
#ifndef VM_PRIM_NUMBER_H
#define VM_PRIM_NUMBER_H

#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"
#include "vm/number/bigint.h"

/* Failure messages quote at most this much of a string that did not parse. */
#define QUOTE_MAX 200

/* Stores value as the answer; 0 from a constructor means the heap is exhausted. */
static inline bool answer(Oop value, Oop *result)
{
    if (value == 0) vm_out_of_memory("a number");
    *result = value;
    return true;
}

static inline bool answer_double(double d, Oop *result) { return answer(vm_double_new(d), result); }

static inline bool numeric_type_error(Oop arg)
{
    return vm_prim_error("Expected a numeric type but got type '%s'.", vm_num_type_name(arg));
}

/* fromString:'s argument s, a String or Symbol: its text; else the
 * primitive's failure. */
static inline bool from_string_text(Oop s, const char **text, size_t *len)
{
    if (!vm_is_string(s) && !vm_is_symbol(s))
        return vm_prim_error("Expected object of type 'String_' but got type '%s'.", vm_num_type_name(s));
    *text = (const char *)obj_bytes(s);
    *len = obj_byte_length(s);
    return true;
}

/* fromString:'s failure on text that is no `what` ("a Double"). */
static inline bool from_string_invalid(const char *text, size_t len, const char *what)
{
    return vm_prim_error("'%.*s' cannot be converted to %s.", (int)(len < QUOTE_MAX ? len : QUOTE_MAX), text, what);
}

/* = and < are the same primitive for Integer and Double: exact comparison
 * across both kinds (vm_num_compare). */
bool vm_prim_number_equal(Oop *args, Oop *result);
bool vm_prim_number_less(Oop *args, Oop *result);

#endif
