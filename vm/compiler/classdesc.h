/*
 * vm/compiler/classdesc.h — SOM source to bytecode, as plain C descriptions.
 *
 * The compiler (vm/compiler/lexer.c, vm/compiler/parser.c, vm/compiler/codegen.c) turns one class file
 * into a ClassDesc: names, fields and methods whose bytecodes follow
 * vm/bytecode/bytecodes.h. It never touches the heap; vm/loader/loader.c materialises a
 * ClassDesc into class and method objects. That split lets the compiler be
 * tested on its own and keeps allocation out of parsing.
 *
 * Variables: a method's or block's variables are numbered args first, then
 * temps (its own temps, then the temps and args of blocks inlined into it —
 * ifTrue:, whileTrue:, to:do: … — which live in the enclosing frame).
 * Field indices count from the first inherited field; for the class side
 * the resolver's inherited list already includes the VM's hidden class slots
 * (names starting with '$', which no identifier can match).
 *
 * Who may call: vm/loader/loader.c, vm/main.c, tests.
 */
#ifndef VM_CLASSDESC_H
#define VM_CLASSDESC_H

#include "vm/bytecode/bytecodes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Limits, reported as compile errors when exceeded. Variable, field, argument
 * and context-level operands are one byte; the literal count is bounded by the
 * 16-bit pointer-slot field of the method header, which also holds the 7
 * fixed slots (vm/model/method.h); jump offsets are 16 bits. */
#define VM_COMPILE_MAX_LITERALS (65535 - 7)
/* VM_COMPILE_MAX_VARS, args + temps of one method or block, is in
 * vm/bytecode/bytecodes.h: frames (vm/model/frame.h) and the JIT size by it too. */
#define VM_COMPILE_MAX_FIELDS 255 /* inherited + own, per side */
#define VM_COMPILE_MAX_ARGS 255   /* of a send or a method */
#define VM_COMPILE_MAX_JUMP 65535

typedef enum LiteralKind {
    LIT_INT,    /* fits in int64_t: value in .i (the loader boxes if beyond SmallInteger) */
    LIT_BIGINT, /* decimal digits in .s, optional leading '-' */
    LIT_DOUBLE, /* .d */
    LIT_STRING, /* .s / .len (may contain NUL) */
    LIT_SYMBOL, /* .s / .len */
    LIT_ARRAY,  /* .elems / .nelems (literal arrays, nested allowed) */
    LIT_BLOCK,  /* .block: a block method, pushed by PUSH_BLOCK */
    LIT_NIL, LIT_TRUE, LIT_FALSE, /* only inside literal arrays */
} LiteralKind;

struct MethodDesc;

typedef struct Literal {
    LiteralKind kind;
    int64_t i;
    double d;
    char *s;
    size_t len;
    struct Literal *elems;
    size_t nelems;
    struct MethodDesc *block;
} Literal;

typedef struct LineEntry {
    uint32_t bcpc; /* first bytecode pc of a run */
    uint32_t line; /* source line of the bytecodes from bcpc up to the next entry */
} LineEntry;

typedef struct MethodDesc {
    char *selector;      /* e.g. "at:put:"; for blocks, the home method's selector */
    bool is_block;
    bool is_primitive;   /* body was `primitive`: no code */
    int nargs;           /* for blocks: block parameters (not counting the closure) */
    int ntemps;          /* temps beyond args, inlined blocks' variables included */
    int max_stack;       /* deepest operand stack, for frame and context sizing */
    int line;            /* source line where the method (or block) starts */
    uint8_t *code;
    size_t code_len;
    Literal *lits;
    size_t nlits;
    LineEntry *lines;
    size_t nlines;
    char **var_names;    /* nargs + ntemps names, for debugging and disassembly */
} MethodDesc;

typedef struct ClassDesc {
    char *name;
    char *super_name;    /* "Object" when omitted; "nil" for a root class */
    char *file;          /* path it was compiled from */
    char **inst_fields;  /* own fields only, in declaration order */
    size_t ninst_fields;
    char **class_fields; /* own class-side fields only */
    size_t nclass_fields;
    MethodDesc **inst_methods;
    size_t ninst_methods;
    MethodDesc **class_methods;
    size_t nclass_methods;
} ClassDesc;

typedef struct CompileError {
    char file[512];
    int line, col;
    char msg[512];
} CompileError;

/* Answers the names of the fields a class inherits (its superclass's full
 * field list; class_side: the superclass metaclass's). Returns false if the
 * superclass cannot be found (the compiler reports it as an error). The
 * returned array stays owned by the resolver. */
typedef bool (*FieldResolver)(const char *super_name, bool class_side,
                              const char *const **names, size_t *count, void *ctx);

/* Compile one class file. On error returns NULL and fills err; the caller
 * prints "file:line:col: error: msg". */
ClassDesc *vm_compile_class(const char *file, const char *src, size_t len,
                            FieldResolver resolve, void *ctx, CompileError *err);


void vm_class_desc_free(ClassDesc *c);
void vm_method_desc_free(MethodDesc *m);

/* Human-readable listing of a method's bytecodes (and its blocks'). */
void vm_disassemble_desc(FILE *out, const MethodDesc *m, int indent);

#endif
