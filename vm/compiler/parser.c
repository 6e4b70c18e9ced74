/*
 * vm/compiler/parser.c — recursive descent over SOM's grammar (specification/SOM.g4).
 */
#include "vm/compiler/parser.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Parser {
    Lexer lx;
    Token tok;
    Token ahead;
    bool has_ahead;
    Arena *arena;
    CompileFail *fail;
    int nesting;
} Parser;

/* -- Growable arrays in the arena ------------------------------------------ */

/* Doubling into fresh arena blocks wastes at most the sum of the old blocks
 * (less than the final size) and needs no cleanup on error. */
static void *grow(Parser *p, void *old, int count, int *cap, size_t elem)
{
    if (count < *cap)
        return old;
    int ncap = *cap ? *cap * 2 : 4;
    void *n = vm_arena_alloc(p->arena, (size_t)ncap * elem);
    if (old)
        memcpy(n, old, (size_t)count * elem);
    *cap = ncap;
    return n;
}

#define PUSH(p, arr, count, cap, value)                                   \
    do {                                                                  \
        (arr) = grow((p), (arr), (count), &(cap), sizeof *(arr));         \
        (arr)[(count)++] = (value);                                       \
    } while (0)

/* -- Tokens ---------------------------------------------------------------- */

static void next(Parser *p)
{
    if (p->has_ahead) {
        p->tok = p->ahead;
        p->has_ahead = false;
    } else {
        vm_lexer_next(&p->lx, &p->tok);
    }
}

static const Token *lookahead(Parser *p)
{
    if (!p->has_ahead) {
        vm_lexer_next(&p->lx, &p->ahead);
        p->has_ahead = true;
    }
    return &p->ahead;
}

/* 'text' for messages, shortened so one huge token cannot fill the message. */
static const char *describe(const Token *t, char *buf, size_t size)
{
    switch (t->kind) {
    case TK_EOF:
        return "end of file";
    case TK_STRING:
        snprintf(buf, size, "string '%.40s%s'", t->text, t->len > 40 ? "..." : "");
        return buf;
    case TK_SYMBOL:
        snprintf(buf, size, "'#%.40s%s'", t->text, t->len > 40 ? "..." : "");
        return buf;
    default:
        snprintf(buf, size, "'%.40s%s'", t->text, t->len > 40 ? "..." : "");
        return buf;
    }
}

_Noreturn static void fail_expected(Parser *p, const char *what)
{
    char buf[80];
    vm_compile_fail(p->fail, p->tok.line, p->tok.col, "expected %s but found %s", what,
                    describe(&p->tok, buf, sizeof buf));
}

static void expect(Parser *p, TokenKind kind, const char *what)
{
    if (p->tok.kind != kind)
        fail_expected(p, what);
    next(p);
}

static bool is_operator(const Parser *p, const char *text)
{
    return p->tok.kind == TK_OPERATOR && strcmp(p->tok.text, text) == 0;
}

/* A bar may be glued to the next operator characters ("||", "|-1"): split
 * it off and let the lexer continue right after it. */
static bool at_bar(Parser *p)
{
    if (p->tok.kind != TK_OPERATOR || p->tok.text[0] != '|')
        return false;
    if (p->tok.len > 1) {
        p->tok.text = "|";
        p->tok.len = 1;
        p->has_ahead = false;
        vm_lexer_rewind(&p->lx, p->tok.pos + 1, p->tok.line, p->tok.col + 1);
    }
    return true;
}

static void expect_bar(Parser *p)
{
    if (!at_bar(p))
        fail_expected(p, "'|'");
    next(p);
}

static Name take_name(Parser *p)
{
    Name n = {p->tok.text, p->tok.line, p->tok.col};
    next(p);
    return n;
}

/* -- Depth limits ---------------------------------------------------------- */

static void enter(Parser *p)
{
    if (++p->nesting > VM_PARSE_MAX_DEPTH)
        vm_compile_fail(p->fail, p->tok.line, p->tok.col,
                        "expression nested too deeply (more than %d levels)", VM_PARSE_MAX_DEPTH);
}

static void leave(Parser *p) { p->nesting--; }

/* -- Literals -------------------------------------------------------------- */

static Literal integer_literal(Parser *p, const char *digits, bool negative)
{
    while (digits[0] == '0' && digits[1] != '\0')
        digits++;
    size_t n = strlen(digits);
    Literal lit = {0};
    if (n <= 19) {
        uint64_t v = strtoull(digits, NULL, 10);
        if (!negative && v <= (uint64_t)INT64_MAX) {
            lit.kind = LIT_INT;
            lit.i = (int64_t)v;
            return lit;
        }
        if (negative && v <= (uint64_t)INT64_MAX + 1u) {
            lit.kind = LIT_INT;
            lit.i = v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
            return lit;
        }
    }
    lit.kind = LIT_BIGINT;
    lit.len = n + (negative ? 1 : 0);
    char *s = vm_arena_alloc(p->arena, lit.len + 1);
    if (negative)
        s[0] = '-';
    memcpy(s + (negative ? 1 : 0), digits, n + 1);
    lit.s = s;
    return lit;
}

static Literal number_literal(Parser *p, bool negative)
{
    Literal lit = {0};
    if (p->tok.kind == TK_INTEGER) {
        lit = integer_literal(p, p->tok.text, negative);
    } else {
        lit.kind = LIT_DOUBLE;
        lit.d = strtod(p->tok.text, NULL);
        if (negative)
            lit.d = -lit.d;
    }
    next(p);
    return lit;
}

/* '-' directly followed (whitespace allowed, as the grammar's
 * `negativeDecimal: Minus literalDecimal` says) by a number. */
static bool at_negative_number(Parser *p)
{
    if (!is_operator(p, "-"))
        return false;
    TokenKind k = lookahead(p)->kind;
    return k == TK_INTEGER || k == TK_DOUBLE;
}

static Literal text_literal(Parser *p, LiteralKind kind)
{
    Literal lit = {0};
    lit.kind = kind;
    lit.s = (char *)p->tok.text;
    lit.len = p->tok.len;
    next(p);
    return lit;
}

static Literal array_literal(Parser *p);

static Literal array_element(Parser *p)
{
    Literal lit = {0};
    switch (p->tok.kind) {
    case TK_INTEGER:
    case TK_DOUBLE:
        return number_literal(p, false);
    case TK_STRING:
        return text_literal(p, LIT_STRING);
    case TK_SYMBOL:
    case TK_KEYWORD:
    case TK_KEYWORD_SEQ:
        return text_literal(p, LIT_SYMBOL);
    case TK_POUND:
        next(p);
        return array_literal(p);
    case TK_LPAREN:
        return array_literal(p);
    case TK_IDENT:
        if (strcmp(p->tok.text, "true") == 0 || strcmp(p->tok.text, "false") == 0 ||
            strcmp(p->tok.text, "nil") == 0) {
            lit.kind = p->tok.text[0] == 't' ? LIT_TRUE : p->tok.text[0] == 'f' ? LIT_FALSE : LIT_NIL;
            next(p);
            return lit;
        }
        return text_literal(p, LIT_SYMBOL);
    case TK_OPERATOR:
        if (at_negative_number(p)) {
            next(p);
            return number_literal(p, true);
        }
        return text_literal(p, LIT_SYMBOL);
    default:
        fail_expected(p, "a literal or ')'");
    }
}

/* At the '(' of a literal array (its '#' already consumed). */
static Literal array_literal(Parser *p)
{
    enter(p);
    expect(p, TK_LPAREN, "'('");
    Literal lit = {0};
    lit.kind = LIT_ARRAY;
    int n = 0, cap = 0;
    Literal *elems = NULL;
    while (p->tok.kind != TK_RPAREN)
        PUSH(p, elems, n, cap, array_element(p));
    next(p);
    lit.elems = elems;
    lit.nelems = (size_t)n;
    leave(p);
    return lit;
}

/* -- Expressions ----------------------------------------------------------- */

static Node *new_node(Parser *p, NodeKind kind, int line, int col)
{
    Node *n = vm_arena_alloc(p->arena, sizeof *n);
    n->kind = kind;
    n->line = line;
    n->col = col;
    n->depth = 1;
    return n;
}

/* Records that child hangs below n. */
static void deepen(Parser *p, Node *n, const Node *child)
{
    if (child->depth + 1 > n->depth)
        n->depth = child->depth + 1;
    if (n->depth > VM_PARSE_MAX_DEPTH)
        vm_compile_fail(p->fail, n->line, n->col,
                        "expression nested too deeply (more than %d levels)", VM_PARSE_MAX_DEPTH);
}

static Node *expression(Parser *p);
static Body *block_body(Parser *p, TokenKind close, const char *close_text);

static Node *literal_node(Parser *p, Literal lit, int line, int col)
{
    Node *n = new_node(p, NODE_LITERAL, line, col);
    n->u.lit = lit;
    return n;
}

static Node *primary(Parser *p)
{
    int line = p->tok.line, col = p->tok.col;
    switch (p->tok.kind) {
    case TK_IDENT: {
        Node *n = new_node(p, NODE_VARIABLE, line, col);
        n->u.var = p->tok.text;
        next(p);
        return n;
    }
    case TK_LPAREN: {
        next(p);
        Node *n = expression(p);
        expect(p, TK_RPAREN, "')'");
        return n;
    }
    case TK_LBRACKET: {
        Node *n = new_node(p, NODE_BLOCK, line, col);
        next(p);
        n->u.block = block_body(p, TK_RBRACKET, "']'");
        n->u.block->line = line;
        n->u.block->col = col;
        for (int i = 0; i < n->u.block->nstmts; i++)
            deepen(p, n, n->u.block->stmts[i]);
        return n;
    }
    case TK_INTEGER:
    case TK_DOUBLE:
        return literal_node(p, number_literal(p, false), line, col);
    case TK_STRING:
        return literal_node(p, text_literal(p, LIT_STRING), line, col);
    case TK_SYMBOL:
        return literal_node(p, text_literal(p, LIT_SYMBOL), line, col);
    case TK_POUND:
        next(p);
        return literal_node(p, array_literal(p), line, col);
    case TK_OPERATOR:
        if (at_negative_number(p)) {
            next(p);
            return literal_node(p, number_literal(p, true), line, col);
        }
        break;
    default:
        break;
    }
    fail_expected(p, "an expression");
}

static Node *send_node(Parser *p, Node *recv, const char *selector, int line, int col)
{
    Node *n = new_node(p, NODE_SEND, line, col);
    n->u.send.recv = recv;
    n->u.send.selector = selector;
    deepen(p, n, recv);
    return n;
}

static Node *unary_sends(Parser *p, Node *recv)
{
    while (p->tok.kind == TK_IDENT) {
        recv = send_node(p, recv, p->tok.text, p->tok.line, p->tok.col);
        next(p);
    }
    return recv;
}

static Node *binary_sends(Parser *p, Node *recv)
{
    while (p->tok.kind == TK_OPERATOR) {
        Node *n = send_node(p, recv, p->tok.text, p->tok.line, p->tok.col);
        next(p);
        n->u.send.args = vm_arena_alloc(p->arena, sizeof(Node *));
        n->u.send.args[0] = unary_sends(p, primary(p));
        n->u.send.nargs = 1;
        deepen(p, n, n->u.send.args[0]);
        recv = n;
    }
    return recv;
}

static Node *keyword_send(Parser *p, Node *recv)
{
    Node *n = send_node(p, recv, NULL, p->tok.line, p->tok.col);
    size_t sel_len = 0, sel_cap = 0;
    char *sel = NULL;
    int nargs = 0, cap = 0;
    Node **args = NULL;
    while (p->tok.kind == TK_KEYWORD) {
        if (sel_len + p->tok.len + 1 > sel_cap) {
            size_t ncap = (sel_len + p->tok.len + 1) * 2;
            char *s = vm_arena_alloc(p->arena, ncap);
            if (sel)
                memcpy(s, sel, sel_len);
            sel = s;
            sel_cap = ncap;
        }
        memcpy(sel + sel_len, p->tok.text, p->tok.len + 1);
        sel_len += p->tok.len;
        next(p);
        PUSH(p, args, nargs, cap, binary_sends(p, unary_sends(p, primary(p))));
        deepen(p, n, args[nargs - 1]);
    }
    n->u.send.selector = sel;
    n->u.send.args = args;
    n->u.send.nargs = nargs;
    return n;
}

static Node *expression(Parser *p)
{
    enter(p);
    Node *e;
    if (p->tok.kind == TK_IDENT && lookahead(p)->kind == TK_ASSIGN) {
        e = new_node(p, NODE_ASSIGN, p->tok.line, p->tok.col);
        e->u.assign.target = take_name(p);
        next(p); /* := */
        e->u.assign.value = expression(p);
        deepen(p, e, e->u.assign.value);
    } else {
        e = binary_sends(p, unary_sends(p, primary(p)));
        if (p->tok.kind == TK_KEYWORD)
            e = keyword_send(p, e);
    }
    leave(p);
    return e;
}

/* -- Bodies ---------------------------------------------------------------- */

static void names_until_bar(Parser *p, Name **names, int *count)
{
    int cap = 0;
    while (p->tok.kind == TK_IDENT)
        PUSH(p, *names, *count, cap, take_name(p));
    if (!at_bar(p))
        fail_expected(p, "a variable name or '|'");
    next(p);
}

/* Statements up to `close`; the opening bracket is already consumed. */
static Body *block_body(Parser *p, TokenKind close, const char *close_text)
{
    Body *b = vm_arena_alloc(p->arena, sizeof *b);
    b->line = p->tok.line;
    b->col = p->tok.col;
    if (close == TK_RBRACKET && p->tok.kind == TK_COLON) {
        int cap = 0;
        while (p->tok.kind == TK_COLON) {
            next(p);
            if (p->tok.kind == TK_KEYWORD || p->tok.kind == TK_KEYWORD_SEQ) {
                /* `[:a:b |` lexes `a:` as a keyword: the name ends at the
                 * first colon, which introduces the next parameter. */
                size_t k = (size_t)(strchr(p->tok.text, ':') - p->tok.text);
                Name n = {vm_arena_strndup(p->arena, p->tok.text, k), p->tok.line, p->tok.col};
                PUSH(p, b->params, b->nparams, cap, n);
                p->has_ahead = false;
                vm_lexer_rewind(&p->lx, p->tok.pos + k, p->tok.line, p->tok.col + (int)k);
                next(p);
                continue;
            }
            if (p->tok.kind != TK_IDENT)
                fail_expected(p, "a parameter name");
            PUSH(p, b->params, b->nparams, cap, take_name(p));
        }
        if (p->tok.kind != close)
            expect_bar(p);
    }
    if (at_bar(p)) {
        next(p);
        names_until_bar(p, &b->temps, &b->ntemps);
    }
    int cap = 0;
    for (;;) {
        while (p->tok.kind == TK_PERIOD)
            next(p);
        if (p->tok.kind == close)
            break;
        if (p->tok.kind == TK_CARET) {
            Node *r = new_node(p, NODE_RETURN, p->tok.line, p->tok.col);
            next(p);
            r->u.ret = expression(p);
            deepen(p, r, r->u.ret);
            PUSH(p, b->stmts, b->nstmts, cap, r);
            while (p->tok.kind == TK_PERIOD)
                next(p);
            if (p->tok.kind != close) {
                char what[64];
                snprintf(what, sizeof what, "%s after the return statement", close_text);
                fail_expected(p, what);
            }
            break;
        }
        PUSH(p, b->stmts, b->nstmts, cap, expression(p));
        if (p->tok.kind == TK_PERIOD)
            continue;
        if (p->tok.kind != close) {
            char what[64];
            snprintf(what, sizeof what, "'.' or %s", close_text);
            fail_expected(p, what);
        }
    }
    b->end_line = p->tok.line;
    b->end_col = p->tok.col;
    next(p);
    return b;
}

/* -- Classes --------------------------------------------------------------- */

static MethodAst *method(Parser *p)
{
    MethodAst *m = vm_arena_alloc(p->arena, sizeof *m);
    m->line = p->tok.line;
    m->col = p->tok.col;
    int cap = 0;
    switch (p->tok.kind) {
    case TK_IDENT:
        m->selector = p->tok.text;
        next(p);
        break;
    case TK_OPERATOR:
        m->selector = p->tok.text;
        next(p);
        if (p->tok.kind != TK_IDENT)
            fail_expected(p, "an argument name");
        PUSH(p, m->params, m->nparams, cap, take_name(p));
        break;
    case TK_KEYWORD: {
        size_t len = 0;
        const char *parts[256];
        size_t lens[256];
        int nparts = 0;
        while (p->tok.kind == TK_KEYWORD) {
            if (nparts == 256)
                vm_compile_fail(p->fail, p->tok.line, p->tok.col,
                                "too many arguments in method pattern (more than 255)");
            parts[nparts] = p->tok.text;
            lens[nparts++] = p->tok.len;
            len += p->tok.len;
            next(p);
            if (p->tok.kind != TK_IDENT)
                fail_expected(p, "an argument name");
            PUSH(p, m->params, m->nparams, cap, take_name(p));
        }
        char *sel = vm_arena_alloc(p->arena, len + 1);
        size_t at = 0;
        for (int i = 0; i < nparts; i++) {
            memcpy(sel + at, parts[i], lens[i]);
            at += lens[i];
        }
        m->selector = sel;
        break;
    }
    default:
        fail_expected(p, "a method definition");
    }
    if (!is_operator(p, "="))
        fail_expected(p, "'='");
    next(p);
    if (p->tok.kind == TK_IDENT && strcmp(p->tok.text, "primitive") == 0) {
        m->primitive = true;
        next(p);
        return m;
    }
    int line = p->tok.line, col = p->tok.col;
    expect(p, TK_LPAREN, "'(' or 'primitive'");
    m->body = block_body(p, TK_RPAREN, "')'");
    m->body->line = line;
    m->body->col = col;
    return m;
}

static void class_side(Parser *p, Name **fields, int *nfields, MethodAst ***methods, int *nmethods)
{
    if (at_bar(p)) {
        next(p);
        names_until_bar(p, fields, nfields);
    }
    int cap = 0;
    while (p->tok.kind != TK_RPAREN && p->tok.kind != TK_SEPARATOR && p->tok.kind != TK_EOF)
        PUSH(p, *methods, *nmethods, cap, method(p));
}

ClassAst *vm_parser_parse_class(const char *src, size_t len, Arena *arena, CompileFail *fail)
{
    Parser p = {.arena = arena, .fail = fail};
    vm_lexer_init(&p.lx, src, len, arena, fail);
    next(&p);
    ClassAst *c = vm_arena_alloc(arena, sizeof *c);
    if (p.tok.kind != TK_IDENT)
        fail_expected(&p, "a class name");
    c->name = take_name(&p);
    if (!is_operator(&p, "="))
        fail_expected(&p, "'='");
    next(&p);
    if (p.tok.kind == TK_IDENT)
        c->super = take_name(&p);
    expect(&p, TK_LPAREN, "'(' or a superclass name");
    class_side(&p, &c->inst_fields, &c->ninst_fields, &c->inst_methods, &c->ninst_methods);
    if (p.tok.kind == TK_SEPARATOR) {
        next(&p);
        class_side(&p, &c->class_fields, &c->nclass_fields, &c->class_methods, &c->nclass_methods);
    }
    expect(&p, TK_RPAREN, "')'");
    if (p.tok.kind != TK_EOF)
        fail_expected(&p, "end of file after the class definition");
    return c;
}
