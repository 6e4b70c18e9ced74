/*
 * vm/compiler/lexer.c — SOM source text to tokens; the compilation arena; the error exit.
 */
#include "vm/compiler/lexer.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- Arena ---------------------------------------------------------------- */

/* 64 KiB chunks: a large class file's AST fits in a handful, and a
 * compilation is short-lived, so waste at the chunk tails does not matter. */
#define ARENA_CHUNK_BYTES (64u * 1024u)

struct ArenaChunk {
    ArenaChunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

void *vm_arena_alloc(Arena *a, size_t n)
{
    n = (n + 15u) & ~(size_t)15u;
    ArenaChunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > ARENA_CHUNK_BYTES ? n : ARENA_CHUNK_BYTES;
        c = malloc(sizeof(ArenaChunk) + size);
        if (!c) {
            fprintf(stderr, "stvm: out of memory while compiling\n");
            abort();
        }
        c->used = 0;
        c->size = size;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *vm_arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = vm_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void vm_arena_free(Arena *a)
{
    ArenaChunk *c = a->head;
    while (c) {
        ArenaChunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

/* -- Errors --------------------------------------------------------------- */

void vm_compile_fail(CompileFail *f, int line, int col, const char *fmt, ...)
{
    CompileError *e = f->err;
    snprintf(e->file, sizeof e->file, "%s", f->file ? f->file : "");
    e->line = line;
    e->col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    longjmp(f->jump, 1);
}

/* -- Character classes ---------------------------------------------------- */

static bool is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(int c) { return is_letter(c) || is_digit(c) || c == '_'; }

static bool is_operator_char(int c)
{
    return c != '\0' && strchr("~&|*/\\+=><,@%-", c) != NULL;
}

/* -- Scanning ------------------------------------------------------------- */

static int peek_at(const Lexer *lx, size_t ahead)
{
    size_t p = lx->pos + ahead;
    return p < lx->len ? (unsigned char)lx->src[p] : -1;
}

static int cur(const Lexer *lx) { return peek_at(lx, 0); }

static void advance(Lexer *lx)
{
    if (lx->pos >= lx->len)
        return;
    if (lx->src[lx->pos] == '\n') {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->pos++;
}

static void skip_blanks_and_comments(Lexer *lx)
{
    for (;;) {
        int c = cur(lx);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            advance(lx);
        } else if (c == '"') {
            int line = lx->line, col = lx->col;
            advance(lx);
            while (cur(lx) != '"') {
                if (cur(lx) < 0)
                    vm_compile_fail(lx->fail, line, col, "unterminated comment");
                advance(lx);
            }
            advance(lx);
        } else {
            return;
        }
    }
}

/* Reads an identifier at the cursor, then any ':'-joined parts: "foo",
 * "foo:" or "at:put:". A ':' followed by '=' is an assignment, not part of
 * the name. */
static TokenKind scan_name(Lexer *lx)
{
    while (is_ident_char(cur(lx)))
        advance(lx);
    if (cur(lx) != ':' || peek_at(lx, 1) == '=')
        return TK_IDENT;
    advance(lx);
    TokenKind kind = TK_KEYWORD;
    for (;;) {
        /* Another part only if a whole "ident:" follows without a gap. */
        size_t n = 0;
        if (!is_letter(peek_at(lx, 0)))
            break;
        while (is_ident_char(peek_at(lx, n)))
            n++;
        if (peek_at(lx, n) != ':' || peek_at(lx, n + 1) == '=')
            break;
        for (size_t i = 0; i <= n; i++)
            advance(lx);
        kind = TK_KEYWORD_SEQ;
    }
    return kind;
}

/* Decodes a quoted string whose opening quote is at the cursor. */
static void scan_string(Lexer *lx, Token *t)
{
    int line = lx->line, col = lx->col;
    advance(lx);
    size_t start = lx->pos;
    /* Decoded text is never longer than the raw text. */
    size_t end = start;
    while (end < lx->len && lx->src[end] != '\'')
        end += (lx->src[end] == '\\' && end + 1 < lx->len) ? 2 : 1;
    char *buf = vm_arena_alloc(lx->arena, end - start + 1);
    size_t n = 0;
    for (;;) {
        int c = cur(lx);
        if (c < 0)
            vm_compile_fail(lx->fail, line, col, "unterminated string");
        if (c == '\'') {
            advance(lx);
            break;
        }
        if (c != '\\') {
            buf[n++] = (char)c;
            advance(lx);
            continue;
        }
        int eline = lx->line, ecol = lx->col;
        advance(lx);
        int e = cur(lx);
        switch (e) {
        case 't': buf[n++] = '\t'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 'f': buf[n++] = '\f'; break;
        case '0': buf[n++] = '\0'; break;
        case '\'': buf[n++] = '\''; break;
        case '\\': buf[n++] = '\\'; break;
        case -1: vm_compile_fail(lx->fail, line, col, "unterminated string");
        default:
            if (e >= 0x20 && e < 0x7f)
                vm_compile_fail(lx->fail, eline, ecol, "unknown escape sequence '\\%c'", e);
            vm_compile_fail(lx->fail, eline, ecol, "unknown escape sequence: '\\' followed by byte 0x%02x", e);
        }
        advance(lx);
    }
    buf[n] = '\0';
    t->text = buf;
    t->len = n;
}

static void scan_symbol(Lexer *lx, Token *t)
{
    int line = lx->line, col = lx->col;
    advance(lx); /* '#' */
    int c = cur(lx);
    if (c == '(') {
        t->kind = TK_POUND;
        t->text = "#";
        t->len = 1;
        return;
    }
    t->kind = TK_SYMBOL;
    if (c == '\'') {
        scan_string(lx, t);
        return;
    }
    size_t start = lx->pos;
    if (is_letter(c)) {
        scan_name(lx);
    } else if (is_operator_char(c)) {
        while (is_operator_char(cur(lx)))
            advance(lx);
    } else {
        vm_compile_fail(lx->fail, line, col,
                        "expected a selector or a string after '#'");
    }
    t->len = lx->pos - start;
    t->text = vm_arena_strndup(lx->arena, lx->src + start, t->len);
}

void vm_lexer_init(Lexer *lx, const char *src, size_t len, Arena *arena, CompileFail *fail)
{
    lx->src = src;
    lx->len = len;
    lx->pos = 0;
    lx->line = 1;
    lx->col = 1;
    lx->arena = arena;
    lx->fail = fail;
}

void vm_lexer_rewind(Lexer *lx, size_t pos, int line, int col)
{
    lx->pos = pos;
    lx->line = line;
    lx->col = col;
}

void vm_lexer_next(Lexer *lx, Token *t)
{
    skip_blanks_and_comments(lx);
    t->line = lx->line;
    t->col = lx->col;
    t->pos = lx->pos;
    t->text = NULL;
    int c = cur(lx);
    if (c < 0) {
        t->kind = TK_EOF;
        t->text = "";
        t->len = 0;
        return;
    }
    if (c == '\'') {
        t->kind = TK_STRING;
        scan_string(lx, t);
        return;
    }
    if (c == '#') {
        scan_symbol(lx, t);
        return;
    }
    size_t start = lx->pos;
    if (is_letter(c)) {
        t->kind = scan_name(lx);
    } else if (is_digit(c)) {
        while (is_digit(cur(lx)))
            advance(lx);
        t->kind = TK_INTEGER;
        if (cur(lx) == '.' && is_digit(peek_at(lx, 1))) {
            advance(lx);
            while (is_digit(cur(lx)))
                advance(lx);
            t->kind = TK_DOUBLE;
        }
    } else if (c == '-' && peek_at(lx, 1) == '-' && peek_at(lx, 2) == '-' && peek_at(lx, 3) == '-') {
        while (cur(lx) == '-')
            advance(lx);
        t->kind = TK_SEPARATOR;
    } else if (is_operator_char(c)) {
        while (is_operator_char(cur(lx)))
            advance(lx);
        t->kind = TK_OPERATOR;
    } else if (c == ':') {
        advance(lx);
        t->kind = TK_COLON;
        if (cur(lx) == '=') {
            advance(lx);
            t->kind = TK_ASSIGN;
        }
    } else {
        switch (c) {
        case '(': t->kind = TK_LPAREN; break;
        case ')': t->kind = TK_RPAREN; break;
        case '[': t->kind = TK_LBRACKET; break;
        case ']': t->kind = TK_RBRACKET; break;
        case '^': t->kind = TK_CARET; break;
        case '.': t->kind = TK_PERIOD; break;
        default:
            if (c >= 0x20 && c < 0x7f)
                vm_compile_fail(lx->fail, t->line, t->col, "unexpected character '%c'", c);
            vm_compile_fail(lx->fail, t->line, t->col, "unexpected byte 0x%02x", c);
        }
        advance(lx);
    }
    t->len = lx->pos - start;
    t->text = vm_arena_strndup(lx->arena, lx->src + start, t->len);
}

