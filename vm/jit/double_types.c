/*
 * vm/jit/double_types.c — which temps of a method likely hold Doubles, so that
 * a special send on them tries the Double path first (vm/jit/compile.c).
 *
 * A + - * tests for two SmallIntegers first and reaches the Double path
 * after a taken branch: four instructions and a jump for every Double
 * operation of Mandelbrot's loop, which never sees an Integer there. No
 * type feedback tells machine code what a send saw in the interpreter, but
 * the method's own stores usually do: a temp every store of which stores a
 * Double literal, a `//` or `sqrt`, another such temp, or a sum, difference
 * or product with such an operand, likely holds a Double (stores of nil
 * do not count: a block's temps are made nil at each iteration of an
 * inlined loop before the body stores into them). It is a guess
 * about the order of two tests, never about what they find: both paths and
 * the send stay behind it.
 *
 * The guess is made by running the bytecodes over a stack of kinds, once
 * per round, starting from "every stored temp is a Double" and dropping the
 * temps with another store until a round drops none. Where control merges
 * (a jump target) or leaves, the stack is forgotten: an unknown operand
 * makes no Double.
 */
#include "vm/jit/compile_int.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdint.h>
#include <string.h>

typedef enum Kind { KIND_OTHER, KIND_INT, KIND_DOUBLE, KIND_NIL } Kind;

#define KIND_STACK_MAX 64

typedef struct Kinds {
    Kind at[KIND_STACK_MAX];
    int n; /* entries known; deeper ones are KIND_OTHER */
} Kinds;

static void push(Kinds *k, Kind x)
{
    if (k->n == KIND_STACK_MAX) { /* forget the deepest */
        memmove(k->at, k->at + 1, (KIND_STACK_MAX - 1) * sizeof k->at[0]);
        k->n--;
    }
    k->at[k->n++] = x;
}

static Kind pop(Kinds *k) { return k->n ? k->at[--k->n] : KIND_OTHER; }

static Kind literal_kind(const Compiler *c, unsigned lit)
{
    Oop v = obj_slots(c->method)[METHOD_FIXED_SLOTS + lit];
    return vm_is_double(v) ? KIND_DOUBLE : oop_is_int(v) ? KIND_INT : KIND_OTHER;
}

/* One round over the bytecodes; answers whether a temp was dropped. */
static bool round_drops(Compiler *c)
{
    Kinds k = { .n = 0 };
    bool dropped = false;
    for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]]) {
        const uint8_t *p = c->code + pc;
        if (c->target[pc]) k.n = 0;
        switch (p[0]) {
        case BC_PUSH_LITERAL: push(&k, literal_kind(c, p[1])); break;
        case BC_PUSH_LITERAL_W: push(&k, literal_kind(c, (unsigned)p[1] | (unsigned)p[2] << 8)); break;
        case BC_PUSH_0:
        case BC_PUSH_1: push(&k, KIND_INT); break;
        case BC_PUSH_NIL: push(&k, KIND_NIL); break;
        case BC_PUSH_TEMP: push(&k, c->likely_double[p[1]] ? KIND_DOUBLE : KIND_OTHER); break;
        case BC_DUP: {
            Kind top = pop(&k);
            push(&k, top);
            push(&k, top);
            break;
        }
        case BC_STORE_TEMP:
        case BC_POP_TEMP: {
            Kind v = pop(&k);
            if (p[0] == BC_STORE_TEMP) push(&k, v);
            if (v != KIND_DOUBLE && v != KIND_NIL && c->likely_double[p[1]]) {
                c->likely_double[p[1]] = false;
                dropped = true;
            }
            break;
        }
        case BC_SEND_ADD:
        case BC_SEND_SUB:
        case BC_SEND_MUL: {
            Kind b = pop(&k), a = pop(&k);
            push(&k, a == KIND_DOUBLE || b == KIND_DOUBLE ? KIND_DOUBLE
                     : a == KIND_INT && b == KIND_INT     ? KIND_INT
                                                          : KIND_OTHER);
            break;
        }
        case BC_SEND:
        case BC_SEND_W: {
            int nargs = p[0] == BC_SEND ? p[2] : p[3];
            JitDoubleSend kind = jit_double_send_kind(c, pc); /* `//` is IEEE division on any number */
            for (int i = 0; i <= nargs; i++) pop(&k);
            push(&k, kind != JIT_DOUBLE_SEND_NONE ? KIND_DOUBLE : KIND_OTHER);
            break;
        }
        default: {
            int effect = vm_bytecode_effect[p[0]];
            if (effect == BC_VARIABLE || jit_compile_jump_target(c->code, pc) >= 0 || p[0] == BC_RETURN_TOP ||
                p[0] == BC_RETURN_SELF || p[0] == BC_RETURN_NONLOCAL) {
                k.n = 0;
                break;
            }
            int pops = p[0] >= BC_SEND_ADD && p[0] <= BC_SEND_LAST_SPECIAL ? vm_special_nargs[p[0] - BC_SEND_ADD] + 1
                                                                            : (effect < 0 ? -effect : 0);
            int pushes = pops + effect;
            for (int i = 0; i < pops; i++) pop(&k);
            for (int i = 0; i < pushes; i++) push(&k, KIND_OTHER);
            break;
        }
        }
    }
    return dropped;
}

void jit_double_types_plan(Compiler *c)
{
    memset(c->likely_double, 0, sizeof c->likely_double);
    /* the temps with a store of something but nil: every kind but nil is
     * pushed by a bytecode other than PUSH_NIL */
    size_t prev = SIZE_MAX;
    for (size_t pc = 0; pc < c->len; prev = pc, pc += vm_bytecode_length[c->code[pc]])
        if ((c->code[pc] == BC_STORE_TEMP || c->code[pc] == BC_POP_TEMP) &&
            !(prev != SIZE_MAX && c->code[prev] == BC_PUSH_NIL && !c->target[pc]))
            c->likely_double[c->code[pc + 1]] = true;
    while (round_drops(c)) {
    }
}

bool jit_double_likely(const Compiler *c, const SimEntry *e)
{
    return e && e->kind == SIM_TEMP && c->likely_double[e->v];
}
