/*
 * vm/compiler/parser.h — SOM class files to an abstract syntax tree.
 *
 * The parser follows SOM's specification/SOM.g4 and checks syntax only:
 * names are resolved, blocks inlined and limits enforced by vm/compiler/codegen.c,
 * which walks this tree. Every node lives in the compilation's arena and
 * carries the line and column codegen reports errors and line tables with.
 *
 * Deliberate extensions of the grammar (all of them accepted by the
 * Smalltalk-80 family and harmless to SOM programs):
 *   - literal arrays may hold bare nested arrays `#(1 (2 3))`, and bare
 *     words: `true` `false` `nil` are those objects, other identifiers,
 *     keywords and operators are Symbols (`#(foo at:put: +)`);
 *   - a method or block body may be empty even after temporaries, and
 *     repeated periods between statements are ignored;
 *   - `[:a]` (parameters, no bar, no body) and `[:a:b | …]` (no space
 *     before a parameter's colon) are accepted.
 *
 * Who may call: vm/compiler/codegen.c, tests.
 */
#ifndef VM_PARSER_H
#define VM_PARSER_H

#include "vm/compiler/classdesc.h"
#include "vm/compiler/lexer.h"

/* Deepest nesting of parentheses, blocks, literal arrays and assignments, and
 * deepest syntax tree (a chain `a + b + c …` is one level per send): the
 * parser and codegen recurse that deep, so hostile input must not overflow
 * the C stack. 1000 is far beyond hand-written code and costs well under
 * 1 MiB of stack in either stage. */
#define VM_PARSE_MAX_DEPTH 1000

typedef struct Name {
    const char *text;
    int line, col;
} Name;

typedef enum NodeKind {
    NODE_LITERAL,  /* u.lit (never LIT_BLOCK) */
    NODE_VARIABLE, /* u.var: any name, including self super nil true false */
    NODE_ASSIGN,   /* u.assign; line/col are the target's */
    NODE_SEND,     /* u.send; line/col are the (first) selector token's */
    NODE_BLOCK,    /* u.block */
    NODE_RETURN,   /* u.ret: `^ expr`, only ever the last statement */
} NodeKind;

typedef struct Node Node;

typedef struct Body {
    Name *params;   /* block parameters; methods keep theirs in MethodAst */
    int nparams;
    Name *temps;
    int ntemps;
    Node **stmts;
    int nstmts;
    int line, col;         /* opening '[' or '(' */
    int end_line, end_col; /* closing ']' or ')' */
} Body;

struct Node {
    NodeKind kind;
    int line, col;
    int depth; /* of the subtree rooted here, at most VM_PARSE_MAX_DEPTH */
    union {
        Literal lit;
        const char *var;
        struct {
            Name target;
            Node *value;
        } assign;
        struct {
            Node *recv;
            const char *selector;
            Node **args;
            int nargs;
        } send;
        Body *block;
        Node *ret;
    } u;
};

typedef struct MethodAst {
    const char *selector;
    Name *params;
    int nparams;
    bool primitive;
    Body *body; /* NULL for primitives */
    int line, col;
} MethodAst;

typedef struct ClassAst {
    Name name;
    Name super;         /* .text NULL when omitted (meaning Object) */
    Name *inst_fields;
    int ninst_fields;
    MethodAst **inst_methods;
    int ninst_methods;
    Name *class_fields;
    int nclass_fields;
    MethodAst **class_methods;
    int nclass_methods;
} ClassAst;

/* Parses a whole class file; errors leave through fail. */
ClassAst *vm_parser_parse_class(const char *src, size_t len, Arena *arena, CompileFail *fail);

#endif
