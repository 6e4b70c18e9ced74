/*
 * vm/bytecode/bytecodes.h — the one bytecode table.
 *
 * The compiler, the interpreter's dispatch table and the disassembler expand
 * BYTECODE_LIST, so they cannot drift apart; the JIT reads the tables made
 * from it (lengths, names) and has a template per bytecode.
 *
 *   X(NAME, length, stack_effect, mapped, operands, selector, sargs)
 *
 * length        bytes including the opcode
 * stack_effect  net change of the operand stack depth; BC_VARIABLE for sends,
 *               whose effect is -nargs (receiver and args replaced by result)
 * mapped        1 if the JIT must record an mcpc->bcpc pair at this bytecode
 *               (sends, conditional branches, backward jumps)
 * operands      "" no operand, "b" one byte, "bb" two bytes, "w" a 16-bit
 *               little-endian value, "wb" 16-bit then a byte
 * selector      a special send's selector (the compiler turns a send of it
 *               with sargs arguments into this bytecode); 0 for the others
 * sargs         a special send's argument count; -1 for the others
 *
 * Operand meanings:
 *   var index   index into the frame's variables: args first (0..nargs-1),
 *               then temps (nargs..nargs+ntemps-1)
 *   ctx level   how many lexical levels out (1 = the enclosing block/method)
 *   literal     index into the method's literal frame
 *   jump offset unsigned 16-bit distance, measured from the bytecode after
 *               the jump (forward jumps add it, JUMP_BACK subtracts it)
 *   SEND        literal index of the selector Symbol, then the argument count
 */
#ifndef VM_BYTECODES_H
#define VM_BYTECODES_H

/* Args + temps of one method or block: their operands (PUSH_ARG, PUSH_TEMP,
 * …) are one byte. The compiler reports more as an error (vm/compiler/classdesc.h
 * lists its other limits); frames and the JIT size by it. */
#define VM_COMPILE_MAX_VARS 255

#define BC_VARIABLE 99

#define BYTECODE_LIST(X)                                                                         \
    X(HALT,             1, 0,  0, "",   0,         -1)                                           \
    X(DUP,              1, 1,  0, "",   0,         -1)                                           \
    X(POP,              1, -1, 0, "",   0,         -1)                                           \
    X(PUSH_VAR,         2, 1,  0, "b",  0,         -1) /* var index */                           \
    X(PUSH_OUTER,       3, 1,  0, "bb", 0,         -1) /* var index, ctx level */                \
    X(PUSH_FIELD,       2, 1,  0, "b",  0,         -1) /* field index of self */                 \
    X(PUSH_SELF,        1, 1,  0, "",   0,         -1)                                           \
    X(PUSH_NIL,         1, 1,  0, "",   0,         -1)                                           \
    X(PUSH_TRUE,        1, 1,  0, "",   0,         -1)                                           \
    X(PUSH_FALSE,       1, 1,  0, "",   0,         -1)                                           \
    X(PUSH_0,           1, 1,  0, "",   0,         -1)                                           \
    X(PUSH_1,           1, 1,  0, "",   0,         -1)                                           \
    X(PUSH_LITERAL,     2, 1,  0, "b",  0,         -1)                                           \
    X(PUSH_LITERAL_W,   3, 1,  0, "w",  0,         -1)                                           \
    X(PUSH_GLOBAL,      2, 1,  1, "b",  0,         -1) /* literal: Symbol; may send unknownGlobal: */ \
    X(PUSH_GLOBAL_W,    3, 1,  1, "w",  0,         -1)                                           \
    X(PUSH_BLOCK,       2, 1,  0, "b",  0,         -1) /* literal: block Method */               \
    X(PUSH_BLOCK_W,     3, 1,  0, "w",  0,         -1)                                           \
    X(STORE_VAR,        2, 0,  0, "b",  0,         -1) /* store top, keep it */                  \
    X(POP_VAR,          2, -1, 0, "b",  0,         -1) /* store top, pop */                      \
    X(STORE_OUTER,      3, 0,  0, "bb", 0,         -1)                                           \
    X(POP_OUTER,        3, -1, 0, "bb", 0,         -1)                                           \
    X(STORE_FIELD,      2, 0,  0, "b",  0,         -1)                                           \
    X(POP_FIELD,        2, -1, 0, "b",  0,         -1)                                           \
    X(SEND,             3, BC_VARIABLE, 1, "bb", 0,         -1) /* selector literal, nargs */    \
    X(SEND_W,           4, BC_VARIABLE, 1, "wb", 0,         -1)                                  \
    X(SUPER_SEND,       3, BC_VARIABLE, 1, "bb", 0,         -1)                                  \
    X(SUPER_SEND_W,     4, BC_VARIABLE, 1, "wb", 0,         -1)                                  \
    /* special sends: inline fast path on SmallIntegers, else a real send */ \
    X(SEND_ADD,         1, -1, 1, "",   "+",        1)                                           \
    X(SEND_SUB,         1, -1, 1, "",   "-",        1)                                           \
    X(SEND_MUL,         1, -1, 1, "",   "*",        1)                                           \
    X(SEND_LT,          1, -1, 1, "",   "<",        1)                                           \
    X(SEND_GT,          1, -1, 1, "",   ">",        1)                                           \
    X(SEND_LE,          1, -1, 1, "",   "<=",       1)                                           \
    X(SEND_GE,          1, -1, 1, "",   ">=",       1)                                           \
    X(SEND_EQ,          1, -1, 1, "",   "=",        1)                                           \
    X(SEND_NE,          1, -1, 1, "",   "<>",       1)                                           \
    X(SEND_IDENTICAL,   1, -1, 1, "",   "==",       1)                                           \
    X(SEND_AT,          1, -1, 1, "",   "at:",      1)                                           \
    X(SEND_AT_PUT,      1, -2, 1, "",   "at:put:",  2)                                           \
    X(SEND_VALUE,       1, 0,  1, "",   "value",    0)                                           \
    X(SEND_VALUE1,      1, -1, 1, "",   "value:",   1)                                           \
    X(SEND_LENGTH,      1, 0,  1, "",   "length",   0)                                           \
    /* SmallInteger receiver and argument, each while Integer's method is \
       the VM's primitive (vm/interp/special.h, vm_int_special_prims) */ \
    X(SEND_BIT_AND,     1, -1, 1, "",   "&",        1)                                           \
    X(SEND_BIT_XOR,     1, -1, 1, "",   "bitXor:",  1)                                           \
    X(SEND_SHIFT_LEFT,  1, -1, 1, "",   "<<",       1)                                           \
    X(SEND_SHIFT_RIGHT, 1, -1, 1, "",   ">>>",      1)                                           \
    X(SEND_DIV,         1, -1, 1, "",   "/",        1) /* / truncated */                         \
    X(SEND_MOD,         1, -1, 1, "",   "%",        1) /* % floored */                           \
    X(SEND_REM,         1, -1, 1, "",   "rem:",     1)                                           \
    X(SEND_NOT_EQUAL,   1, -1, 1, "",   "~=",       1)                                           \
    X(SEND_MAX,         1, -1, 1, "",   "max:",     1)                                           \
    X(SEND_MIN,         1, -1, 1, "",   "min:",     1)                                           \
    X(SEND_ABS,         1, 0,  1, "",   "abs",      0)                                           \
    X(SEND_NEGATED,     1, 0,  1, "",   "negated",  0)                                           \
    /* any receiver, while its class's method answers a constant */ \
    X(SEND_IS_NIL,      1, 0,  1, "",   "isNil",    0)                                           \
    X(SEND_NOT_NIL,     1, 0,  1, "",   "notNil",   0)                                           \
    X(RETURN_TOP,       1, -1, 0, "",   0,         -1) /* return from this frame */              \
    X(RETURN_SELF,      1, 0,  0, "",   0,         -1)                                           \
    X(RETURN_NONLOCAL,  1, -1, 1, "",   0,         -1) /* ^ inside a block: return from home */  \
    X(JUMP,             3, 0,  0, "w",  0,         -1)                                           \
    X(JUMP_BACK,        3, 0,  1, "w",  0,         -1) /* loop edge: interrupt check */          \
    X(JUMP_IF_TRUE,     3, -1, 1, "w",  0,         -1) /* pops the condition */                  \
    X(JUMP_IF_FALSE,    3, -1, 1, "w",  0,         -1)                                           \
    X(JUMP_IF_NIL,      3, -1, 1, "w",  0,         -1)                                           \
    X(JUMP_IF_NOT_NIL,  3, -1, 1, "w",  0,         -1)                                           \
    /* quickened forms: the loader rewrites *_VAR into these once it knows \
       the method's argument count (never emitted by the compiler) */ \
    X(PUSH_ARG,         2, 1,  0, "b",  0,         -1) /* fp word offset of the argument */      \
    X(STORE_ARG,        2, 0,  0, "b",  0,         -1)                                           \
    X(POP_ARG,          2, -1, 0, "b",  0,         -1)                                           \
    X(PUSH_TEMP,        2, 1,  0, "b",  0,         -1) /* temp index: fp[-5-t] */                \
    X(STORE_TEMP,       2, 0,  0, "b",  0,         -1)                                           \
    X(POP_TEMP,         2, -1, 0, "b",  0,         -1)

enum {
#define BC_ENUM(name, len, eff, mapped, ops, sel, sargs) BC_##name,
    BYTECODE_LIST(BC_ENUM)
#undef BC_ENUM
    BC_COUNT
};

/* The special sends are BC_SEND_ADD .. BC_SEND_LAST_SPECIAL (bytecodes.c
 * checks that exactly these rows have a selector). */
#define BC_SEND_LAST_SPECIAL BC_SEND_NOT_NIL
#define BC_N_SPECIAL (BC_SEND_LAST_SPECIAL - BC_SEND_ADD + 1)

/* Tables indexed by bc - BC_SEND_ADD hold the special sends first: they are
 * BC_COUNT long, the bytecodes rotated by BC_SEND_ADD (the other rows at
 * BC_N_SPECIAL and beyond, selector 0 and sargs -1). BC_SPECIAL_SELECTORS
 * and BC_SPECIAL_NARGS are their initializers, for a table a file wants as
 * its own constant (the interpreter folds special_nargs[op - BC_SEND_ADD]). */
#define BC_SPECIAL_INDEX(bc) (((bc) - BC_SEND_ADD + BC_COUNT) % BC_COUNT)
#define BC_SPECIAL_SELECTOR_AT(name, len, eff, mapped, ops, sel, sargs) [BC_SPECIAL_INDEX(BC_##name)] = sel,
#define BC_SPECIAL_NARGS_AT(name, len, eff, mapped, ops, sel, sargs) [BC_SPECIAL_INDEX(BC_##name)] = sargs,
#define BC_SPECIAL_SELECTORS BYTECODE_LIST(BC_SPECIAL_SELECTOR_AT)
#define BC_SPECIAL_NARGS BYTECODE_LIST(BC_SPECIAL_NARGS_AT)

extern const unsigned char vm_bytecode_length[BC_COUNT];
extern const signed char vm_bytecode_effect[BC_COUNT];
extern const unsigned char vm_bytecode_mapped[BC_COUNT];
extern const char *const vm_bytecode_name[BC_COUNT];
extern const char *const vm_bytecode_operands[BC_COUNT]; /* the "operands" column */
/* By bc - BC_SEND_ADD (above): a special send's selector and argument count. */
extern const char *const vm_special_selector[BC_COUNT];
extern const signed char vm_special_nargs[BC_COUNT];

#endif
