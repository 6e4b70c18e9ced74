/*
 * vm/bytecode/bytecodes.c — the per-bytecode tables, expanded from BYTECODE_LIST so
 * that lengths, stack effects and names can never disagree with the enum.
 */
#include "vm/bytecode/bytecodes.h"

const unsigned char vm_bytecode_length[BC_COUNT] = {
#define BC_LENGTH(name, len, eff, mapped, ops) len,
    BYTECODE_LIST(BC_LENGTH)
#undef BC_LENGTH
};

const signed char vm_bytecode_effect[BC_COUNT] = {
#define BC_EFFECT(name, len, eff, mapped, ops) eff,
    BYTECODE_LIST(BC_EFFECT)
#undef BC_EFFECT
};

const unsigned char vm_bytecode_mapped[BC_COUNT] = {
#define BC_MAPPED(name, len, eff, mapped, ops) mapped,
    BYTECODE_LIST(BC_MAPPED)
#undef BC_MAPPED
};

const char *const vm_bytecode_name[BC_COUNT] = {
#define BC_NAME(name, len, eff, mapped, ops) #name,
    BYTECODE_LIST(BC_NAME)
#undef BC_NAME
};

const char *const vm_special_selector[] = {BC_SPECIAL_SELECTORS};
const unsigned char vm_special_nargs[] = {BC_SPECIAL_NARGS};

/* Operand strings, for the disassembler and the table's own unit test
 * (string indexing is not a constant expression, so lengths are checked
 * there rather than by _Static_assert). */
const char *const vm_bytecode_operands[BC_COUNT] = {
#define BC_OPERANDS(name, len, eff, mapped, ops) ops,
    BYTECODE_LIST(BC_OPERANDS)
#undef BC_OPERANDS
};

/* The special sends are contiguous and there is one selector per bytecode. */
_Static_assert(sizeof(vm_special_nargs) == BC_N_SPECIAL,
               "BC_SPECIAL_NARGS must list one entry per special send");
_Static_assert(sizeof((const char *[]){BC_SPECIAL_SELECTORS}) / sizeof(const char *) ==
                   BC_N_SPECIAL,
               "BC_SPECIAL_SELECTORS must list one entry per special send");
