/*
 * vm/interp/special.c — which special sends may answer without a send (vm/interp/special.h).
 */
#include "vm/interp/special.h"

#include "vm/loader/loader.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"

#include <string.h>

uint64_t vm_int_special_prims, vm_double_special_prims;
bool vm_double_divide_is_prim, vm_double_sqrt_is_prim;
Oop vm_special_nil_answers[2], vm_special_int_answers[2]; /* true, false or 0: never move */
uint8_t vm_special_nil_table[VM_SPECIAL_NIL_TABLE_CLASSES];
uint8_t vm_special_bool_answers[VM_SPECIAL_BOOL_SELS][2];
const char *const vm_special_bool_selectors[VM_SPECIAL_BOOL_SELS] = { "&&", "||", "and:", "or:" };

static VmBoolAnswer bool_answer(uint32_t class_index, Oop sel, int hops);

void vm_special_note_lookup(uint32_t class_index, Oop selector, Oop m)
{
    /* by name: symbols move in a full GC, and this runs on cache misses only */
    size_t len = obj_byte_length(selector);
    const uint8_t *s = obj_bytes(selector);
    int k = len == 5 && memcmp(s, "isNil", 5) == 0 ? 0 : len == 6 && memcmp(s, "notNil", 6) == 0 ? 1 : -1;
    if (class_index >= VM_SPECIAL_NIL_TABLE_CLASSES) return;
    if (len == 2 && s[0] == '=' && s[1] == '=') {
        intptr_t p = oop_int(obj_slots(m)[METHOD_PRIMITIVE]);
        if (p > 1 && strcmp(vm_prim_table[p].class_name, "Object") == 0 && strcmp(vm_prim_table[p].selector, "==") == 0 &&
            class_index != CLASS_INDEX_SMALLINT && class_index != CLASS_INDEX_LARGE_POS &&
            class_index != CLASS_INDEX_LARGE_NEG && class_index != CLASS_INDEX_DOUBLE)
            vm_special_nil_table[class_index] |= VM_SPECIAL_IDENTITY;
        return;
    }
    if (k < 0) return;
    Oop answer = vm_special_constant(m);
    if (!answer) return;
    vm_special_nil_table[class_index] |=
        (uint8_t)(VM_SPECIAL_NIL_KNOWN(k) | (answer == vm_true ? VM_SPECIAL_NIL_TRUE(k) : 0));
}

bool vm_special_is_own_prim(uint32_t class_index, const char *cls, const char *sel)
{
    Oop m = vm_lookup(vm_class_table[class_index], vm_symbol_from_cstr(sel));
    if (!m) return false;
    intptr_t p = oop_int(obj_slots(m)[METHOD_PRIMITIVE]);
    return p > 1 && strcmp(vm_prim_table[p].class_name, cls) == 0 && strcmp(vm_prim_table[p].selector, sel) == 0;
}

void vm_special_init(void)
{
    uint64_t ints = 0, doubles = 0;
    for (int i = 0; i < BC_N_SPECIAL; i++) {
        if (vm_special_is_own_prim(CLASS_INDEX_SMALLINT, "Integer", vm_special_selector[i])) ints |= (uint64_t)1 << i;
        if (vm_special_is_own_prim(CLASS_INDEX_DOUBLE, "Double", vm_special_selector[i])) doubles |= (uint64_t)1 << i;
    }
    vm_int_special_prims = ints;
    vm_double_special_prims = doubles;
    vm_double_divide_is_prim = vm_special_is_own_prim(CLASS_INDEX_DOUBLE, "Double", "//");
    vm_double_sqrt_is_prim = vm_special_is_own_prim(CLASS_INDEX_DOUBLE, "Double", "sqrt");
    for (int k = 0; k < VM_SPECIAL_BOOL_SELS; k++) {
        Oop sel = vm_symbol_from_cstr(vm_special_bool_selectors[k]);
        vm_special_bool_answers[k][0] = (uint8_t)bool_answer(CLASS_INDEX_TRUE, sel, 1);
        vm_special_bool_answers[k][1] = (uint8_t)bool_answer(CLASS_INDEX_FALSE, sel, 1);
    }
    static const char *const sels[2] = {"isNil", "notNil"};
    for (int k = 0; k < 2; k++) {
        Oop sel = vm_symbol_from_cstr(sels[k]);
        Oop m = vm_lookup_cached(vm_class_index_of(vm_nil), sel);
        vm_special_nil_answers[k] = m ? vm_special_constant(m) : 0;
        m = vm_lookup_cached(CLASS_INDEX_SMALLINT, sel);
        vm_special_int_answers[k] = m ? vm_special_constant(m) : 0;
    }
}

/* m's bytecodes begin with want[0..n) (a return among them: the rest is
 * never reached) and m is no primitive. */
static bool method_starts(Oop m, const uint8_t *want, size_t n)
{
    return obj_slots(m)[METHOD_PRIMITIVE] == oop_from_int(0) && vm_method_bytecode_length(m) >= n &&
           memcmp(vm_method_bytecodes(m), want, n) == 0;
}

/* Whether class_index's value answers self (`value = ( ^self )`). */
static bool value_is_self(uint32_t class_index)
{
    Oop m = vm_lookup(vm_class_table[class_index], vm_symbol_from_cstr("value"));
    static const uint8_t ret_self[] = { BC_RETURN_SELF }, push_ret[] = { BC_PUSH_SELF, BC_RETURN_TOP };
    return m && (method_starts(m, ret_self, sizeof ret_self) || method_starts(m, push_ret, sizeof push_ret));
}

/* What the method class_index finds for sel answers for a Boolean argument;
 * hops: how many `^self other: arg` delegations may still be followed. */
static VmBoolAnswer bool_answer(uint32_t class_index, Oop sel, int hops)
{
    Oop m = vm_lookup(vm_class_table[class_index], sel);
    if (!m || vm_method_nargs(m) != 1) return VM_BOOL_UNKNOWN;
    Oop k = vm_special_constant(m);
    if (k) return k == vm_true ? VM_BOOL_TRUE : VM_BOOL_FALSE;
    /* PUSH_ARG's operand is the fp word offset: 2 is the last argument */
    static const uint8_t arg_value[] = { BC_PUSH_ARG, 2, BC_SEND_VALUE, BC_RETURN_TOP };
    if (method_starts(m, arg_value, sizeof arg_value))
        return value_is_self(CLASS_INDEX_TRUE) && value_is_self(CLASS_INDEX_FALSE) ? VM_BOOL_ARG : VM_BOOL_UNKNOWN;
    const uint8_t *p = vm_method_bytecodes(m);
    if (hops > 0 && vm_method_bytecode_length(m) >= 7 && obj_slots(m)[METHOD_PRIMITIVE] == oop_from_int(0) &&
        p[0] == BC_PUSH_SELF && p[1] == BC_PUSH_ARG && p[2] == 2 && p[3] == BC_SEND && p[5] == 1 &&
        p[6] == BC_RETURN_TOP) {
        size_t nlits = vm_method_pointer_slots(m) - METHOD_FIXED_SLOTS;
        if (p[4] < nlits) return bool_answer(class_index, vm_method_literals(m)[p[4]], hops - 1);
    }
    return VM_BOOL_UNKNOWN;
}

Oop vm_special_constant(Oop m)
{
    if (obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0) || vm_method_bytecode_length(m) < 2) return 0;
    const uint8_t *p = vm_method_bytecodes(m);
    if (p[1] != BC_RETURN_TOP) return 0;
    return p[0] == BC_PUSH_TRUE ? vm_true : p[0] == BC_PUSH_FALSE ? vm_false : 0;
}
