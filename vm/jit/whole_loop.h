/*
 * vm/jit/whole_loop.h — the plans of vm/jit/whole_loop.c (what one
 * iteration, body or inlined callee computes: values, stores, registers)
 * and what its emitter, vm/jit/whole_loop_emit.c, needs of them. Private
 * to those two files.
 */
#ifndef VM_JIT_WHOLE_LOOP_H
#define VM_JIT_WHOLE_LOOP_H

#include "vm/jit/compile_int.h"

#include "vm/jit/compile.h"

#include "vm/model/vm.h"

#define WL_NODES_MAX 192
#define WL_STORES_MAX 32
#define WL_LOOPS_MAX 4
#define WL_COMMIT INT32_MAX /* the last use of a value the commit writes */
#define WL_IFS_MAX 16

/* WT_FLAG: a condition, 1 or 0 in a register (no Oop: never stored) */
typedef enum WType { WT_OOP, WT_INT, WT_DBL, WT_NONE, WT_FLAG } WType;

typedef enum WKind {
    WN_TEMP,     /* v: temp index; the slot as the iteration began */
    WN_ARG,      /* v: the argument's fp word offset */
    WN_SELF,
    WN_CONST,    /* v: an Oop that never moves (a SmallInteger, nil, true, false) */
    WN_DCONST,   /* d */
    WN_FIELD,    /* field v of object a */
    WN_UNBOX,    /* a's value as a Double, else bail */
    WN_IS_INT,   /* bail unless a is a SmallInteger */
    WN_CLASS,    /* bail unless a is an object of class index v */
    WN_DISTINCT, /* bail when a and b are the same object */
    WN_IARITH,   /* op on SmallIntegers a and b, bail on overflow */
    WN_IABS,     /* SmallInteger a's abs, bail on overflow */
    WN_DARITH,   /* op (+ - * or JIT_DOUBLE_OP_DIVIDE) on Doubles a and b */
    WN_SQRT,
    WN_SIZE,     /* the slot count of Array a, else bail */
    WN_AT,       /* Array a (its count s) at: SmallInteger b, else bail */
    WN_INDEX,    /* the 0-based index of SmallInteger b into Array a (its count s), else bail */
    WN_EXIT,     /* leave the loop unless SmallIntegers a op b holds */
    WN_OUTER,    /* variable v of the frame `level` (op) blocks out, read once */
    WN_ICMP,     /* 1 when SmallIntegers a op b hold (op an X64Cond), else 0 */
    WN_DCMP,     /* 1 when Doubles a op b hold (op the bytecode: < > <= >=), else 0 */
    WN_TRUTH,    /* 1 when a is true, 0 when false, else bail */
    WN_FEXIT,    /* leave the loop when flag a is v */
    WN_BEXIT,    /* leave the loop when a is true (v 1) or false (v 0), bail unless it is the other */
    WN_DEXIT,    /* leave the loop when Doubles a op b hold (v 1) or do not (v 0): a WN_DCMP and its exit */
    WN_SELECT,   /* flag s ? a : b: a temp or stack word an if's arms left apart */
    WN_IF,       /* if v's test: its then arm's nodes follow, run when flag a is op */
    WN_ELSE,     /* if v's else arm's nodes follow */
    WN_JOIN,     /* if v's arms are over */
    WN_PHI       /* a value carried from one iteration to the next in its register:
                  * temp v (a < 0) or field v of object a (a Double) as the loop
                  * began, then node `next` of the iteration before */
} WKind;

typedef struct WNode {
    uint8_t kind, type, op;
    bool invariant; /* the same in every iteration: computed once, before the loop */
    bool hidden;    /* computed in an if's arm: what comes after the if does not look it up */
    int a, b, s;
    int next; /* a WN_PHI's value for the next iteration */
    int ifk;  /* a WN_SELECT of if ifk's arms: moved into at each arm's end (no flag); -1: a cmov */
    int64_t v;
    double d;
    size_t pc;
    int reg;  /* an X64Reg (WT_OOP, WT_INT) or X64Xmm (WT_DBL); -1: none */
    int last; /* the last node that uses it, WL_COMMIT, or -1 */
    /* what planning learnt of an object or SmallInteger value */
    bool consumes;  /* its operand a dies here: its register may be clobbered */
    bool fused;     /* a compare whose only use is the WN_IF right after it: the flags are the test */
    bool is_int;
    int64_t klass; /* the class a WN_CLASS tested, -1: none */
    int unboxed;   /* its WN_UNBOX, -1: none */
} WNode;

/* A field store (obj >= 0), an Array's (obj >= 0, index its WN_INDEX), or a
 * temp's new value (obj < 0, field the temp). */
typedef struct WStore {
    int obj, value, field;
    int index; /* -1: not an Array's */
    size_t pc;
} WStore;

struct JitWholeLoop {
    /* a loop: head .. its JUMP_BACK at back, left for exit; a body (a
     * method or block without jumps): its bytecodes from head = 0 to the
     * return at back, answering node `answer` (-1: self) */
    bool body;
    int answer;
    size_t head, back, exit;
    int n;
    WNode node[WL_NODES_MAX];
    int nstores, nfield_stores; /* the field stores first, then the temps' */
    WStore store[WL_STORES_MAX];
    bool uses_accessors; /* (and Boolean sends): a tracer on the method probes bails */
    /* an inlined callee's body (vm/jit/inline.c), at the send at site: its
     * receiver and nargs arguments on the machine stack, its temps nil */
    bool inlined;
    int nargs;
    size_t site;
};

/* Values whose registers hold through the whole loop: those computed
 * before it, and the carried ones. */
static inline bool jit_whole_before_loop(const WNode *n) { return n->invariant || n->kind == WN_PHI; }

/* A constant the commit stores as an immediate, not from a register. */
static inline bool jit_whole_stored_immediate(const WNode *n)
{
    return n->kind == WN_CONST && jit_compile_fits_i32(n->v);
}

/* The method `level` blocks out of c's, or 0 when one is not known. */
Oop jit_whole_outer_method(const Compiler *c, int level);

#endif
