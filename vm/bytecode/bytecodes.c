/*
 * vm/bytecode/bytecodes.c — the per-bytecode tables, expanded from BYTECODE_LIST so
 * that lengths, stack effects and names can never disagree with the enum.
 */
#include "vm/bytecode/bytecodes.h"

const unsigned char vm_bytecode_length[BC_COUNT] = {
#define BC_LENGTH(name, len, eff, mapped, ops, sel, sargs) len,
    BYTECODE_LIST(BC_LENGTH)
#undef BC_LENGTH
};

const signed char vm_bytecode_effect[BC_COUNT] = {
#define BC_EFFECT(name, len, eff, mapped, ops, sel, sargs) eff,
    BYTECODE_LIST(BC_EFFECT)
#undef BC_EFFECT
};

const unsigned char vm_bytecode_mapped[BC_COUNT] = {
#define BC_MAPPED(name, len, eff, mapped, ops, sel, sargs) mapped,
    BYTECODE_LIST(BC_MAPPED)
#undef BC_MAPPED
};

const char *const vm_bytecode_name[BC_COUNT] = {
#define BC_NAME(name, len, eff, mapped, ops, sel, sargs) #name,
    BYTECODE_LIST(BC_NAME)
#undef BC_NAME
};

const char *const vm_special_selector[BC_COUNT] = {BC_SPECIAL_SELECTORS};
const signed char vm_special_nargs[BC_COUNT] = {BC_SPECIAL_NARGS};

/* Operand strings, for the disassembler and the table's own unit test
 * (string indexing is not a constant expression, so lengths are checked
 * there rather than by _Static_assert). */
const char *const vm_bytecode_operands[BC_COUNT] = {
#define BC_OPERANDS(name, len, eff, mapped, ops, sel, sargs) ops,
    BYTECODE_LIST(BC_OPERANDS)
#undef BC_OPERANDS
};

/* Exactly the rows BC_SEND_ADD .. BC_SEND_LAST_SPECIAL are special sends:
 * the tables by bc - BC_SEND_ADD hold them first. */
enum {
#define BC_IS_SPECIAL(name, len, eff, mapped, ops, sel, sargs) +((sargs) >= 0)
    SPECIAL_ROWS = 0 BYTECODE_LIST(BC_IS_SPECIAL),
#undef BC_IS_SPECIAL
#define BC_STRAY_SPECIAL(name, len, eff, mapped, ops, sel, sargs) \
    +((sargs) >= 0 && (BC_##name < BC_SEND_ADD || BC_##name > BC_SEND_LAST_SPECIAL))
    STRAY_SPECIAL_ROWS = 0 BYTECODE_LIST(BC_STRAY_SPECIAL),
#undef BC_STRAY_SPECIAL
};
_Static_assert(SPECIAL_ROWS == BC_N_SPECIAL, "a selector and argument count for each special send");
_Static_assert(STRAY_SPECIAL_ROWS == 0, "the special sends are BC_SEND_ADD .. BC_SEND_LAST_SPECIAL");
