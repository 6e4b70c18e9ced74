/*
 * vm/compiler/lexer.h — SOM tokens, plus the two things every compiler stage shares:
 * an arena for data that lives exactly as long as one compilation, and the
 * error exit.
 *
 * Lexical rules (SOM's specification/SOM.g4, extended where noted):
 *   identifier   letter (letter | digit | '_')*; `primitive` is an identifier
 *   keyword      identifier ':' (not ':='); `at:put:` written without spaces
 *                is one TK_KEYWORD_SEQ (used by symbols and literal arrays)
 *   operator     a run of  ~ & | * / \ + = > < , @ % -
 *   separator    four or more '-' (between instance and class side)
 *   integer      digits, any length (the parser decides int64 vs. big)
 *   double       digits '.' digits  (no exponent, as in the grammar)
 *   string       '…' with escapes \t \b \n \r \f \0 \' \\ ; others are errors
 *   symbol       #ident  #kw:kw:  #op  #'string' ; '#(' is TK_POUND
 *   comment      "…" (skipped)
 * A '-' is always an operator here; the parser turns '-' followed by a
 * number in operand position into a negative literal.
 *
 * Errors leave through vm_compile_fail(), a longjmp to the entry point of the
 * compilation (vm_compile_class), which frees the arena and partial output.
 *
 * Who may call: vm/compiler/parser.c, vm/compiler/codegen.c, tests.
 */
#ifndef VM_LEXER_H
#define VM_LEXER_H

#include "vm/compiler/classdesc.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

/* -- Arena ---------------------------------------------------------------- */

typedef struct ArenaChunk ArenaChunk;

typedef struct Arena {
    ArenaChunk *head;
} Arena;

void *vm_arena_alloc(Arena *a, size_t n);              /* zeroed, 16-byte aligned */
char *vm_arena_strndup(Arena *a, const char *s, size_t n); /* NUL-terminated copy */
void vm_arena_free(Arena *a);

/* -- Errors --------------------------------------------------------------- */

typedef struct CompileFail {
    CompileError *err;
    const char *file;
    jmp_buf jump;
} CompileFail;

_Noreturn void vm_compile_fail(CompileFail *f, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* -- Tokens --------------------------------------------------------------- */

typedef enum TokenKind {
    TK_EOF,
    TK_IDENT,
    TK_KEYWORD,     /* "at:" */
    TK_KEYWORD_SEQ, /* "at:put:" */
    TK_OPERATOR,    /* "+", "<=", "|", "=" … */
    TK_SEPARATOR,   /* "----" */
    TK_INTEGER,     /* text: the digits */
    TK_DOUBLE,      /* text: "digits.digits" */
    TK_STRING,      /* text: the decoded contents (may hold NUL; see len) */
    TK_SYMBOL,      /* text: the symbol's characters, without '#' */
    TK_POUND,       /* '#' directly before '(' */
    TK_ASSIGN,      /* ":=" */
    TK_COLON,
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACKET,
    TK_RBRACKET,
    TK_CARET,
    TK_PERIOD,
} TokenKind;

typedef struct Token {
    TokenKind kind;
    const char *text; /* arena copy, NUL-terminated */
    size_t len;
    int line, col;    /* of the first character, both 1-based */
    size_t pos;       /* byte offset of the first character */
} Token;

typedef struct Lexer {
    const char *src;
    size_t len, pos;
    int line, col;
    Arena *arena;
    CompileFail *fail;
} Lexer;

void vm_lexer_init(Lexer *lx, const char *src, size_t len, Arena *arena, CompileFail *fail);
void vm_lexer_next(Lexer *lx, Token *t);
/* Continue lexing from an earlier position (the parser splits "||" this way). */
void vm_lexer_rewind(Lexer *lx, size_t pos, int line, int col);

#endif
