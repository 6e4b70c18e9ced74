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
    static const char *const sels[2] = {"isNil", "notNil"};
    for (int k = 0; k < 2; k++) {
        Oop sel = vm_symbol_from_cstr(sels[k]);
        Oop m = vm_lookup_cached(vm_class_index_of(vm_nil), sel);
        vm_special_nil_answers[k] = m ? vm_special_constant(m) : 0;
        m = vm_lookup_cached(CLASS_INDEX_SMALLINT, sel);
        vm_special_int_answers[k] = m ? vm_special_constant(m) : 0;
    }
}

Oop vm_special_constant(Oop m)
{
    if (obj_slots(m)[METHOD_PRIMITIVE] != oop_from_int(0) || vm_method_bytecode_length(m) < 2) return 0;
    const uint8_t *p = vm_method_bytecodes(m);
    if (p[1] != BC_RETURN_TOP) return 0;
    return p[0] == BC_PUSH_TRUE ? vm_true : p[0] == BC_PUSH_FALSE ? vm_false : 0;
}
