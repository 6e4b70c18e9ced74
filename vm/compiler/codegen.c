/*
 * vm/compiler/codegen.c — syntax tree to bytecode; the vm_compile_class() entry.
 *
 * Emission conventions are written down in vm/compiler/codegen.h. Errors longjmp to
 * vm_compile_class(), which frees the arena (tree, frames, scopes) and the
 * MethodDescs still under construction, so no other function cleans up.
 */
#include "vm/compiler/codegen.h"

#include "base/hash.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/compiler/lexer.h"
#include "vm/compiler/parser.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- Generator state ------------------------------------------------------- */

typedef struct Var {
    const char *name;
    int slot;
    bool is_arg; /* an argument: never nil-initialised, a loop bound if unassigned */
    bool captured;
} Var;

typedef struct Frame Frame;

/* One lexical scope: a method, a real block, or a block inlined into one. */
typedef struct Scope {
    struct Scope *parent;
    Frame *frame;
    Var *vars;
    int nvars, cap;
    int mark; /* frame->live on entry; slots above it belong to this scope */
    const char *what; /* "method" or "block", for messages */
} Scope;

/* One method or real block under construction. Lives in the arena so that
 * the error path can still reach it after a longjmp. */
struct Frame {
    Frame *outer;
    MethodDesc *m;
    size_t code_cap, lits_cap, lines_cap;
    int *lit_table; /* dedupe: literal index + 1, open addressing; 0 = empty */
    size_t lit_table_cap;
    int live;  /* variable slots in use */
    int floor; /* slots captured by a real block are never released below this */
    int high;  /* slots ever used = nargs + ntemps */
    int depth, max_depth;
    int loop_depth; /* inlined loops around the code being emitted */
    int line;       /* source line of the bytecodes being emitted */
    int level;      /* real-block nesting: the method is 0 */
};

typedef struct Gen {
    Arena *arena;
    CompileFail *fail;
    Frame *frame;
    Scope *scope;
    const char **fields; /* the side's full field list, inherited first */
    int nfields;
    const char *selector; /* of the method being compiled */
    const char **assigned; /* names assigned anywhere in that method */
    int nassigned, assigned_cap;
    MethodDesc *pending;  /* a finished block not yet owned by a literal */
    ClassDesc *cls;
    int line, col; /* of the node being compiled, for errors */
} Gen;

_Noreturn static void fail_at(Gen *g, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail_at(Gen *g, int line, int col, const char *fmt, ...)
{
    char msg[sizeof g->fail->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vm_compile_fail(g->fail, line, col, "%s", msg);
}

/* The compiler cannot report running out of memory in SOM terms and has no
 * sensible way to continue, so it stops the process. */
static void *checked(void *p)
{
    if (!p) {
        fprintf(stderr, "stvm: out of memory while compiling\n");
        abort();
    }
    return p;
}

static void *xmalloc(size_t n) { return checked(malloc(n ? n : 1)); }
static void *xcalloc(size_t n, size_t size) { return checked(calloc(n ? n : 1, size ? size : 1)); }
static void *xrealloc(void *p, size_t n) { return checked(realloc(p, n ? n : 1)); }

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

/* -- Literals -------------------------------------------------------------- */

static void free_literal(Literal *l)
{
    free(l->s);
    for (size_t i = 0; i < l->nelems; i++)
        free_literal(&l->elems[i]);
    free(l->elems);
    if (l->block)
        vm_method_desc_free(l->block);
}

/* Deep copy of an arena literal into malloc'd memory the MethodDesc owns. */
static void copy_literal(Literal *dst, const Literal *src)
{
    *dst = *src;
    dst->s = src->s ? xstrndup(src->s, src->len) : NULL;
    dst->elems = NULL;
    if (src->kind == LIT_ARRAY) {
        dst->elems = xcalloc(src->nelems, sizeof(Literal));
        for (size_t i = 0; i < src->nelems; i++)
            copy_literal(&dst->elems[i], &src->elems[i]);
    }
}

/* Arrays are mutable objects and blocks are distinct closures' code, so only
 * immutable values share a literal slot. */
static bool literal_shareable(LiteralKind k)
{
    return k == LIT_INT || k == LIT_BIGINT || k == LIT_DOUBLE || k == LIT_STRING || k == LIT_SYMBOL;
}

static uint64_t literal_hash(const Literal *l)
{
    uint64_t h = base_fnv1a_bytes(&l->kind, sizeof l->kind);
    switch (l->kind) {
    case LIT_INT: return base_fnv1a(h, &l->i, sizeof l->i);
    case LIT_DOUBLE: return base_fnv1a(h, &l->d, sizeof l->d);
    default: return base_fnv1a(h, l->s, l->len);
    }
}

static bool literal_equal(const Literal *a, const Literal *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case LIT_INT: return a->i == b->i;
    case LIT_DOUBLE: return memcmp(&a->d, &b->d, sizeof a->d) == 0; /* 0.0 and -0.0 differ */
    default: return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    }
}

static void lit_table_insert(Frame *f, size_t index)
{
    size_t mask = f->lit_table_cap - 1;
    size_t h = (size_t)literal_hash(&f->m->lits[index]) & mask;
    while (f->lit_table[h])
        h = (h + 1) & mask;
    f->lit_table[h] = (int)index + 1;
}

static void lit_table_grow(Frame *f)
{
    free(f->lit_table);
    f->lit_table_cap = f->lit_table_cap ? f->lit_table_cap * 2 : 64;
    f->lit_table = xcalloc(f->lit_table_cap, sizeof(int));
    for (size_t i = 0; i < f->m->nlits; i++)
        if (literal_shareable(f->m->lits[i].kind))
            lit_table_insert(f, i);
}

static int find_literal(const Frame *f, const Literal *lit)
{
    if (!f->lit_table_cap)
        return -1;
    size_t mask = f->lit_table_cap - 1;
    size_t h = (size_t)literal_hash(lit) & mask;
    while (f->lit_table[h]) {
        int idx = f->lit_table[h] - 1;
        if (literal_equal(&f->m->lits[idx], lit))
            return idx;
        h = (h + 1) & mask;
    }
    return -1;
}

/* Index of lit in the current frame's literals, appending a copy if needed.
 * A LIT_BLOCK's MethodDesc is moved in (g->pending is then cleared). */
static int literal_index(Gen *g, const Literal *lit)
{
    Frame *f = g->frame;
    bool shareable = literal_shareable(lit->kind);
    if (shareable) {
        int idx = find_literal(f, lit);
        if (idx >= 0)
            return idx;
    }
    MethodDesc *m = f->m;
    if (m->nlits >= VM_COMPILE_MAX_LITERALS)
        fail_at(g, g->line, g->col,
                "too many literals in method '%s' (more than %d); split it into smaller methods",
                g->selector, VM_COMPILE_MAX_LITERALS);
    if (m->nlits == f->lits_cap) {
        f->lits_cap = f->lits_cap ? f->lits_cap * 2 : 8;
        m->lits = xrealloc(m->lits, f->lits_cap * sizeof(Literal));
    }
    Literal *dst = &m->lits[m->nlits];
    if (lit->kind == LIT_BLOCK) {
        memset(dst, 0, sizeof *dst);
        dst->kind = LIT_BLOCK;
        dst->block = lit->block;
        g->pending = NULL;
    } else {
        copy_literal(dst, lit);
    }
    m->nlits++;
    if (shareable) {
        if ((m->nlits) * 2 > f->lit_table_cap)
            lit_table_grow(f);
        else
            lit_table_insert(f, m->nlits - 1);
    }
    return (int)m->nlits - 1;
}

static int symbol_index(Gen *g, const char *name)
{
    Literal lit = {.kind = LIT_SYMBOL, .s = (char *)name, .len = strlen(name)};
    return literal_index(g, &lit);
}

/* -- Emission -------------------------------------------------------------- */

static void set_pos(Gen *g, int line, int col)
{
    g->frame->line = line;
    g->line = line;
    g->col = col;
}

static void note_line(Frame *f)
{
    MethodDesc *m = f->m;
    uint32_t pc = (uint32_t)m->code_len, line = (uint32_t)f->line;
    if (m->nlines && m->lines[m->nlines - 1].line == line)
        return;
    if (m->nlines && m->lines[m->nlines - 1].bcpc == pc) {
        /* Nothing was emitted under the previous line: replace it. */
        m->nlines--;
        if (m->nlines && m->lines[m->nlines - 1].line == line)
            return;
    }
    if (m->nlines == f->lines_cap) {
        f->lines_cap = f->lines_cap ? f->lines_cap * 2 : 8;
        m->lines = xrealloc(m->lines, f->lines_cap * sizeof(LineEntry));
    }
    m->lines[m->nlines++] = (LineEntry){pc, line};
}

static void put_byte(Frame *f, int b)
{
    MethodDesc *m = f->m;
    if (m->code_len == f->code_cap) {
        f->code_cap = f->code_cap ? f->code_cap * 2 : 32;
        m->code = xrealloc(m->code, f->code_cap);
    }
    m->code[m->code_len++] = (uint8_t)b;
}

static void adjust_depth(Frame *f, int delta)
{
    f->depth += delta;
    if (f->depth < 0) {
        /* A broken invariant of this file (vm_panic lives in the vm library,
         * which this one must not depend on). */
        fprintf(stderr, "stvm: compiler bug: negative stack depth in '%s' at pc %zu\n",
                f->m->selector, f->m->code_len);
        abort();
    }
    if (f->depth > f->max_depth)
        f->max_depth = f->depth;
}

/* Writes op and its operands (per the table's operand string) and tracks
 * the stack; nargs is the argument count of SEND-like bytecodes. */
static void emit(Gen *g, int op, int a, int b)
{
    Frame *f = g->frame;
    note_line(f);
    put_byte(f, op);
    const char *ops = vm_bytecode_operands[op];
    if (ops[0] == 'b') {
        put_byte(f, a);
    } else if (ops[0] == 'w') {
        put_byte(f, a & 0xff);
        put_byte(f, (a >> 8) & 0xff);
    }
    if (ops[0] && ops[1] == 'b')
        put_byte(f, b);
    int effect = vm_bytecode_effect[op];
    adjust_depth(f, effect == BC_VARIABLE ? -b : effect);
}

static void emit0(Gen *g, int op) { emit(g, op, 0, 0); }

/* The one-byte or wide form of a literal-indexed bytecode. */
static void emit_lit(Gen *g, int op, int wide_op, int index, int nargs)
{
    emit(g, index <= 255 ? op : wide_op, index, nargs);
}

static size_t emit_jump(Gen *g, int op)
{
    emit(g, op, 0, 0);
    return g->frame->m->code_len - 2;
}

/* Errors point at the construct (n) whose jump is too long. */
static void check_jump(Gen *g, size_t distance, const Node *n)
{
    if (distance > VM_COMPILE_MAX_JUMP)
        fail_at(g, n->line, n->col,
                "method '%s' is too large: a jump spans %zu bytes (at most %d); "
                "split it into smaller methods",
                g->selector, distance, VM_COMPILE_MAX_JUMP);
}

static void patch_jump(Gen *g, size_t at, const Node *n)
{
    MethodDesc *m = g->frame->m;
    size_t distance = m->code_len - (at + 2);
    check_jump(g, distance, n);
    m->code[at] = (uint8_t)(distance & 0xff);
    m->code[at + 1] = (uint8_t)(distance >> 8);
}

static void emit_jump_back(Gen *g, size_t target, const Node *n)
{
    size_t distance = g->frame->m->code_len + vm_bytecode_length[BC_JUMP_BACK] - target;
    check_jump(g, distance, n);
    emit(g, BC_JUMP_BACK, (int)distance, 0);
}

/* -- Variables ------------------------------------------------------------- */

static bool is_reserved(const char *name)
{
    return strcmp(name, "self") == 0 || strcmp(name, "super") == 0 || strcmp(name, "nil") == 0 ||
           strcmp(name, "true") == 0 || strcmp(name, "false") == 0;
}

static void open_scope(Gen *g, Scope *s, const char *what)
{
    memset(s, 0, sizeof *s);
    s->parent = g->scope;
    s->frame = g->frame;
    s->mark = g->frame->live;
    s->what = what;
    g->scope = s;
}

/* Slots above the scope's mark are free again unless a real block captured
 * one: its closure may still read the slot after the scope has ended. */
static void close_scope(Gen *g, Scope *s)
{
    Frame *f = s->frame;
    for (int i = 0; i < s->nvars; i++)
        if (s->vars[i].captured && s->vars[i].slot + 1 > f->floor)
            f->floor = s->vars[i].slot + 1;
    f->live = s->mark > f->floor ? s->mark : f->floor;
    g->scope = s->parent;
}

static void release_slots(Frame *f, int mark)
{
    if (f->live > mark)
        f->live = mark > f->floor ? mark : f->floor;
}

/* A new variable slot in the current frame; *reused tells whether earlier
 * code of this frame may have left a value in it. */
static int alloc_slot(Gen *g, const char *name, int line, int col, bool *reused)
{
    Frame *f = g->frame;
    if (f->live >= VM_COMPILE_MAX_VARS)
        fail_at(g, line, col, "too many variables in method '%s' (more than %d)", g->selector,
                VM_COMPILE_MAX_VARS);
    int slot = f->live++;
    if (reused)
        *reused = slot < f->high;
    if (slot >= f->high) {
        f->high = slot + 1;
        MethodDesc *m = f->m;
        m->var_names = xrealloc(m->var_names, (size_t)f->high * sizeof(char *));
        m->var_names[slot] = xstrdup(name);
    }
    return slot;
}

static void declare(Gen *g, Scope *s, const Name *n, int slot, bool is_arg)
{
    if (is_reserved(n->text))
        fail_at(g, n->line, n->col, "cannot declare '%s': it is a reserved name", n->text);
    for (int i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i].name, n->text) == 0)
            fail_at(g, n->line, n->col, "variable '%s' is already declared in this %s", n->text,
                    s->what);
    if (s->nvars == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 8;
        Var *v = vm_arena_alloc(g->arena, (size_t)ncap * sizeof(Var));
        if (s->vars)
            memcpy(v, s->vars, (size_t)s->nvars * sizeof(Var));
        s->vars = v;
        s->cap = ncap;
    }
    s->vars[s->nvars++] = (Var){n->text, slot, is_arg, false};
}

/* Allocates a slot and declares n in it; answers the slot. */
static int declare_new(Gen *g, Scope *s, const Name *n, bool is_arg, bool *reused)
{
    int slot = alloc_slot(g, n->text, n->line, n->col, reused);
    declare(g, s, n, slot, is_arg);
    return slot;
}

typedef enum RefKind {
    REF_LOCAL,
    REF_OUTER,
    REF_FIELD,
    REF_SELF,
    REF_SUPER,
    REF_NIL,
    REF_TRUE,
    REF_FALSE,
    REF_GLOBAL,
} RefKind;

typedef struct Ref {
    RefKind kind;
    int index; /* slot or field index */
    int level; /* REF_OUTER */
    Var *var;
} Ref;

static Ref resolve(Gen *g, const char *name, int line, int col)
{
    for (Scope *s = g->scope; s; s = s->parent) {
        for (int i = s->nvars - 1; i >= 0; i--) {
            Var *v = &s->vars[i];
            if (strcmp(v->name, name) != 0)
                continue;
            int level = g->frame->level - s->frame->level;
            if (level == 0)
                return (Ref){REF_LOCAL, v->slot, 0, v};
            if (level > 255)
                fail_at(g, line, col, "variable '%s' is referenced across more than 255 nested blocks",
                        name);
            v->captured = true;
            return (Ref){REF_OUTER, v->slot, level, v};
        }
    }
    for (int i = g->nfields - 1; i >= 0; i--)
        if (strcmp(g->fields[i], name) == 0)
            return (Ref){REF_FIELD, i, 0, NULL};
    if (strcmp(name, "self") == 0)
        return (Ref){REF_SELF, 0, 0, NULL};
    if (strcmp(name, "super") == 0)
        return (Ref){REF_SUPER, 0, 0, NULL};
    if (strcmp(name, "nil") == 0)
        return (Ref){REF_NIL, 0, 0, NULL};
    if (strcmp(name, "true") == 0)
        return (Ref){REF_TRUE, 0, 0, NULL};
    if (strcmp(name, "false") == 0)
        return (Ref){REF_FALSE, 0, 0, NULL};
    return (Ref){REF_GLOBAL, 0, 0, NULL};
}

static void push_ref(Gen *g, Ref r, const char *name)
{
    switch (r.kind) {
    case REF_LOCAL: emit(g, BC_PUSH_VAR, r.index, 0); break;
    case REF_OUTER: emit(g, BC_PUSH_OUTER, r.index, r.level); break;
    case REF_FIELD: emit(g, BC_PUSH_FIELD, r.index, 0); break;
    case REF_SELF:
    case REF_SUPER: emit0(g, BC_PUSH_SELF); break;
    case REF_NIL: emit0(g, BC_PUSH_NIL); break;
    case REF_TRUE: emit0(g, BC_PUSH_TRUE); break;
    case REF_FALSE: emit0(g, BC_PUSH_FALSE); break;
    case REF_GLOBAL: emit_lit(g, BC_PUSH_GLOBAL, BC_PUSH_GLOBAL_W, symbol_index(g, name), 0); break;
    }
}

/* -- Expressions ----------------------------------------------------------- */

static void compile_expr(Gen *g, Node *n, bool want);
static bool compile_statements(Gen *g, Body *b, bool want_last);

static void push_literal(Gen *g, const Literal *lit)
{
    if (lit->kind == LIT_INT && (lit->i == 0 || lit->i == 1)) {
        emit0(g, lit->i == 0 ? BC_PUSH_0 : BC_PUSH_1);
        return;
    }
    emit_lit(g, BC_PUSH_LITERAL, BC_PUSH_LITERAL_W, literal_index(g, lit), 0);
}

static void compile_assign(Gen *g, Node *n, bool want)
{
    const Name *t = &n->u.assign.target;
    Ref r = resolve(g, t->text, t->line, t->col);
    switch (r.kind) {
    case REF_LOCAL:
    case REF_OUTER:
    case REF_FIELD:
        /* Arguments too: SOM's own test suite (CompilerReturnTest
         * testWriteArgument) assigns to a method argument. */
        break;
    case REF_SELF:
    case REF_SUPER:
    case REF_NIL:
    case REF_TRUE:
    case REF_FALSE:
        fail_at(g, t->line, t->col, "cannot assign to '%s'", t->text);
    case REF_GLOBAL:
        fail_at(g, t->line, t->col,
                "cannot assign to '%s': no such variable or field (globals are set with "
                "system global:put:)",
                t->text);
    }
    compile_expr(g, n->u.assign.value, true);
    set_pos(g, n->line, n->col);
    switch (r.kind) {
    case REF_LOCAL: emit(g, want ? BC_STORE_VAR : BC_POP_VAR, r.index, 0); break;
    case REF_OUTER: emit(g, want ? BC_STORE_OUTER : BC_POP_OUTER, r.index, r.level); break;
    default: emit(g, want ? BC_STORE_FIELD : BC_POP_FIELD, r.index, 0); break;
    }
}

static void compile_return(Gen *g, Node *n)
{
    Node *v = n->u.ret;
    bool in_block = g->frame->level > 0;
    if (!in_block && v->kind == NODE_VARIABLE &&
        (strcmp(v->u.var, "self") == 0 || strcmp(v->u.var, "super") == 0)) {
        set_pos(g, n->line, n->col);
        emit0(g, BC_RETURN_SELF);
        return;
    }
    compile_expr(g, v, true);
    set_pos(g, n->line, n->col);
    emit0(g, in_block ? BC_RETURN_NONLOCAL : BC_RETURN_TOP);
}

/* -- Assigned names -------------------------------------------------------- */

/* Inlined loops use an argument directly as a bound, or a block parameter as
 * the loop counter, only if nothing in the method assigns that name: a
 * closure called inside the loop could otherwise change it. Collecting by
 * name, ignoring scopes, errs on the safe side. */
static void note_assigned(Gen *g, const char *name)
{
    for (int i = 0; i < g->nassigned; i++)
        if (strcmp(g->assigned[i], name) == 0)
            return;
    if (g->nassigned == g->assigned_cap) {
        int ncap = g->assigned_cap ? g->assigned_cap * 2 : 8;
        const char **a = vm_arena_alloc(g->arena, (size_t)ncap * sizeof(char *));
        if (g->assigned)
            memcpy(a, g->assigned, (size_t)g->nassigned * sizeof(char *));
        g->assigned = a;
        g->assigned_cap = ncap;
    }
    g->assigned[g->nassigned++] = name;
}

static void collect_assigned(Gen *g, const Node *n)
{
    switch (n->kind) {
    case NODE_LITERAL:
    case NODE_VARIABLE:
        return;
    case NODE_ASSIGN:
        note_assigned(g, n->u.assign.target.text);
        collect_assigned(g, n->u.assign.value);
        return;
    case NODE_SEND:
        collect_assigned(g, n->u.send.recv);
        for (int i = 0; i < n->u.send.nargs; i++)
            collect_assigned(g, n->u.send.args[i]);
        return;
    case NODE_BLOCK:
        for (int i = 0; i < n->u.block->nstmts; i++)
            collect_assigned(g, n->u.block->stmts[i]);
        return;
    case NODE_RETURN:
        collect_assigned(g, n->u.ret);
        return;
    }
}

static bool is_assigned(const Gen *g, const char *name)
{
    for (int i = 0; i < g->nassigned; i++)
        if (strcmp(g->assigned[i], name) == 0)
            return true;
    return false;
}

/* -- Frames and real blocks ------------------------------------------------ */

static Frame *push_frame(Gen *g, const char *selector, bool is_block, int line)
{
    Frame *f = vm_arena_alloc(g->arena, sizeof *f);
    f->outer = g->frame;
    f->level = g->frame ? g->frame->level + 1 : 0;
    f->line = line;
    f->m = xcalloc(1, sizeof(MethodDesc));
    f->m->selector = xstrdup(selector);
    f->m->is_block = is_block;
    f->m->line = line;
    g->frame = f;
    return f;
}

/* Detaches the finished MethodDesc from the frame and pops it. */
static MethodDesc *pop_frame(Gen *g)
{
    Frame *f = g->frame;
    MethodDesc *m = f->m;
    m->ntemps = f->high - m->nargs;
    m->max_stack = f->max_depth;
    free(f->lit_table);
    f->lit_table = NULL;
    f->m = NULL;
    g->frame = f->outer;
    return m;
}

static void compile_block(Gen *g, Node *n, bool want)
{
    Body *b = n->u.block;
    if (g->frame->level >= 255)
        fail_at(g, n->line, n->col, "blocks are nested more than 255 levels deep");
    push_frame(g, g->selector, true, b->line);
    Scope s;
    open_scope(g, &s, "block");
    if (b->nparams > VM_COMPILE_MAX_ARGS)
        fail_at(g, b->params[0].line, b->params[0].col, "too many block parameters");
    for (int i = 0; i < b->nparams; i++)
        declare_new(g, &s, &b->params[i], true, NULL);
    g->frame->m->nargs = b->nparams; /* only now: var_names must hold nargs names */
    for (int i = 0; i < b->ntemps; i++)
        declare_new(g, &s, &b->temps[i], false, NULL);
    set_pos(g, b->line, b->col);
    /* Every block ends with RETURN_TOP, even after a final `^`: the
     * interpreter resumes a block whose escapedBlock: send answered at its
     * last bytecode. */
    if (compile_statements(g, b, true))
        g->frame->depth++; /* unreachable: model the value RETURN_TOP pops */
    emit0(g, BC_RETURN_TOP);
    close_scope(g, &s);
    g->pending = pop_frame(g);
    if (!want) {
        /* Compiled only for its errors: a block nobody uses has no effect. */
        vm_method_desc_free(g->pending);
        g->pending = NULL;
        return;
    }
    Literal lit = {.kind = LIT_BLOCK, .block = g->pending};
    int idx = literal_index(g, &lit);
    set_pos(g, n->line, n->col);
    emit_lit(g, BC_PUSH_BLOCK, BC_PUSH_BLOCK_W, idx, 0);
}

/* -- Inlining -------------------------------------------------------------- */

static bool is_block_with(const Node *n, int nparams)
{
    return n->kind == NODE_BLOCK && n->u.block->nparams == nparams;
}

/* Compiles a literal block's body into the current frame. Its parameters,
 * if any, are bound to param_slots, which the caller allocated and fills. */
static void compile_inlined(Gen *g, Node *n, bool want, const int *param_slots)
{
    Body *b = n->u.block;
    Frame *f = g->frame;
    Scope s;
    open_scope(g, &s, "block");
    for (int i = 0; i < b->nparams; i++)
        declare(g, &s, &b->params[i], param_slots[i], true);
    for (int i = 0; i < b->ntemps; i++) {
        bool reused;
        int slot = declare_new(g, &s, &b->temps[i], false, &reused);
        if (reused || f->loop_depth > 0) {
            set_pos(g, b->temps[i].line, b->temps[i].col);
            emit0(g, BC_PUSH_NIL);
            emit(g, BC_POP_VAR, slot, 0);
        }
    }
    set_pos(g, b->line, b->col);
    int base = f->depth;
    if (compile_statements(g, b, want))
        f->depth = base + (want ? 1 : 0); /* the code after a return is unreachable */
    close_scope(g, &s);
}

/* ifTrue:, ifFalse:, and:, or: and the two-branch forms: jump_op skips
 * then_b; without else_b a wanted value is the constant else_op pushes
 * (nil, or what and:/or: answer without evaluating their block). */
static void inline_if(Gen *g, Node *n, bool want, int jump_op, Node *then_b, Node *else_b, int else_op)
{
    Frame *f = g->frame;
    compile_expr(g, n->u.send.recv, true);
    set_pos(g, n->line, n->col);
    size_t skip = emit_jump(g, jump_op);
    int base = f->depth;
    compile_inlined(g, then_b, want, NULL);
    if (!else_b && !want) {
        patch_jump(g, skip, n);
        return;
    }
    set_pos(g, n->line, n->col);
    size_t end = emit_jump(g, BC_JUMP);
    patch_jump(g, skip, n);
    f->depth = base;
    if (else_b) {
        compile_inlined(g, else_b, want, NULL);
    } else {
        set_pos(g, n->line, n->col);
        emit0(g, else_op);
    }
    patch_jump(g, end, n);
}

/* ifNil: / ifNotNil: and their two-branch forms. In the one-branch forms
 * the other block is NULL and that case answers the receiver itself, as the
 * library's Object>>ifNil: and Nil>>ifNotNil: do (the latter answers nil). */
static void inline_nil_test(Gen *g, Node *n, bool want, Node *nil_b, Node *notnil_b, bool notnil_first)
{
    Frame *f = g->frame;
    int mark = f->live;
    compile_expr(g, n->u.send.recv, true);
    set_pos(g, n->line, n->col);
    bool binds = notnil_b && notnil_b->u.block->nparams == 1;
    int slot = -1;
    if (binds) {
        const Name *p = &notnil_b->u.block->params[0];
        slot = alloc_slot(g, p->text, p->line, p->col, NULL);
    }
    if (!nil_b || !notnil_b) {
        /* One branch; the other answers the receiver itself. */
        Node *b = nil_b ? nil_b : notnil_b;
        int jump_op = nil_b ? BC_JUMP_IF_NOT_NIL : BC_JUMP_IF_NIL;
        size_t skip;
        if (want) {
            emit0(g, BC_DUP);
            skip = emit_jump(g, jump_op);
            emit(g, binds ? BC_POP_VAR : BC_POP, slot, 0);
        } else {
            if (binds)
                emit(g, BC_STORE_VAR, slot, 0);
            skip = emit_jump(g, jump_op);
        }
        compile_inlined(g, b, want, &slot);
        patch_jump(g, skip, n);
        release_slots(f, mark);
        return;
    }
    if (binds)
        emit(g, BC_STORE_VAR, slot, 0);
    Node *first = notnil_first ? notnil_b : nil_b;
    Node *second = notnil_first ? nil_b : notnil_b;
    size_t skip = emit_jump(g, notnil_first ? BC_JUMP_IF_NIL : BC_JUMP_IF_NOT_NIL);
    int base = f->depth;
    compile_inlined(g, first, want, &slot);
    set_pos(g, n->line, n->col);
    size_t end = emit_jump(g, BC_JUMP);
    patch_jump(g, skip, n);
    f->depth = base;
    compile_inlined(g, second, want, &slot);
    patch_jump(g, end, n);
    release_slots(f, mark);
}

static void inline_while(Gen *g, Node *n, bool want, bool while_true)
{
    Frame *f = g->frame;
    set_pos(g, n->line, n->col);
    size_t loop = f->m->code_len;
    f->loop_depth++;
    compile_inlined(g, n->u.send.recv, true, NULL);
    set_pos(g, n->line, n->col);
    size_t exit = emit_jump(g, while_true ? BC_JUMP_IF_FALSE : BC_JUMP_IF_TRUE);
    compile_inlined(g, n->u.send.args[0], false, NULL);
    set_pos(g, n->line, n->col);
    emit_jump_back(g, loop, n);
    f->loop_depth--;
    patch_jump(g, exit, n);
    if (want)
        emit0(g, BC_PUSH_NIL);
}

/* A loop bound: used directly when it cannot change during the loop, else
 * evaluated once into a hidden temp. */
typedef struct Operand {
    bool is_literal;
    const Literal *lit;
    int slot;
} Operand;

static bool is_number_literal(const Node *n)
{
    return n->kind == NODE_LITERAL &&
           (n->u.lit.kind == LIT_INT || n->u.lit.kind == LIT_DOUBLE || n->u.lit.kind == LIT_BIGINT);
}

static bool is_negative_number(const Node *n)
{
    if (!is_number_literal(n))
        return false;
    const Literal *l = &n->u.lit;
    return l->kind == LIT_INT ? l->i < 0 : l->kind == LIT_DOUBLE ? l->d < 0 : l->s[0] == '-';
}

static Operand loop_operand(Gen *g, Node *e, const char *hidden_name)
{
    if (is_number_literal(e))
        return (Operand){true, &e->u.lit, 0};
    if (e->kind == NODE_VARIABLE) {
        Ref r = resolve(g, e->u.var, e->line, e->col);
        if (r.kind == REF_LOCAL && r.var->is_arg && !is_assigned(g, e->u.var))
            return (Operand){false, NULL, r.index};
    }
    compile_expr(g, e, true);
    int slot = alloc_slot(g, hidden_name, e->line, e->col, NULL);
    set_pos(g, e->line, e->col);
    emit(g, BC_POP_VAR, slot, 0);
    return (Operand){false, NULL, slot};
}

static void push_operand(Gen *g, Operand o)
{
    if (o.is_literal)
        push_literal(g, o.lit);
    else
        emit(g, BC_PUSH_VAR, o.slot, 0);
}

static void inline_to_do(Gen *g, Node *n, bool want, bool down, bool has_step)
{
    Frame *f = g->frame;
    Node **args = n->u.send.args;
    Node *body = args[has_step ? 2 : 1];
    int mark = f->live;
    compile_expr(g, n->u.send.recv, true);
    set_pos(g, n->line, n->col);
    if (want)
        emit0(g, BC_DUP); /* the loop answers its receiver */
    /* The counter is the block parameter itself unless the method assigns
     * that name; then each iteration copies a hidden counter into it, as
     * `block value: i` would. */
    const Name *p = &body->u.block->params[0];
    bool copy = is_assigned(g, p->text);
    int var = alloc_slot(g, copy ? "$counter" : p->text, p->line, p->col, NULL);
    emit(g, BC_POP_VAR, var, 0);
    static const Literal one = {.kind = LIT_INT, .i = 1};
    Operand limit = loop_operand(g, args[0], "$limit");
    Operand step = {true, &one, 0};
    bool ascending = !down;
    if (has_step) {
        step = loop_operand(g, args[1], "$step");
        if (is_negative_number(args[1]))
            ascending = !ascending;
    }
    set_pos(g, n->line, n->col);
    size_t loop = f->m->code_len;
    f->loop_depth++;
    emit(g, BC_PUSH_VAR, var, 0);
    push_operand(g, limit);
    emit0(g, ascending ? BC_SEND_LE : BC_SEND_GE);
    size_t exit = emit_jump(g, BC_JUMP_IF_FALSE);
    int param = var;
    if (copy) {
        param = alloc_slot(g, p->text, p->line, p->col, NULL);
        emit(g, BC_PUSH_VAR, var, 0);
        emit(g, BC_POP_VAR, param, 0);
    }
    compile_inlined(g, body, false, &param);
    set_pos(g, n->line, n->col);
    emit(g, BC_PUSH_VAR, var, 0);
    push_operand(g, step);
    emit0(g, down ? BC_SEND_SUB : BC_SEND_ADD);
    emit(g, BC_POP_VAR, var, 0);
    emit_jump_back(g, loop, n);
    f->loop_depth--;
    patch_jump(g, exit, n);
    release_slots(f, mark);
}

static bool try_inline(Gen *g, Node *n, bool want)
{
    const char *sel = n->u.send.selector;
    Node *r = n->u.send.recv;
    Node **a = n->u.send.args;
    switch (n->u.send.nargs) {
    case 1:
        if (strcmp(sel, "ifTrue:") == 0 && is_block_with(a[0], 0))
            inline_if(g, n, want, BC_JUMP_IF_FALSE, a[0], NULL, BC_PUSH_NIL);
        else if (strcmp(sel, "ifFalse:") == 0 && is_block_with(a[0], 0))
            inline_if(g, n, want, BC_JUMP_IF_TRUE, a[0], NULL, BC_PUSH_NIL);
        /* the core's && and || are and: and or:, so a literal block
         * after them is inlined as theirs (as TruffleSOM does): without
         * it `a && [b]` makes a closure and two sends */
        else if ((strcmp(sel, "and:") == 0 || strcmp(sel, "&&") == 0) && is_block_with(a[0], 0))
            inline_if(g, n, want, BC_JUMP_IF_FALSE, a[0], NULL, BC_PUSH_FALSE);
        else if ((strcmp(sel, "or:") == 0 || strcmp(sel, "||") == 0) && is_block_with(a[0], 0))
            inline_if(g, n, want, BC_JUMP_IF_TRUE, a[0], NULL, BC_PUSH_TRUE);
        else if (strcmp(sel, "ifNil:") == 0 && is_block_with(a[0], 0))
            inline_nil_test(g, n, want, a[0], NULL, false);
        else if (strcmp(sel, "ifNotNil:") == 0 && (is_block_with(a[0], 0) || is_block_with(a[0], 1)))
            inline_nil_test(g, n, want, NULL, a[0], true);
        else if (strcmp(sel, "whileTrue:") == 0 && is_block_with(r, 0) && is_block_with(a[0], 0))
            inline_while(g, n, want, true);
        else if (strcmp(sel, "whileFalse:") == 0 && is_block_with(r, 0) && is_block_with(a[0], 0))
            inline_while(g, n, want, false);
        else
            return false;
        return true;
    case 2:
        if (strcmp(sel, "ifTrue:ifFalse:") == 0 && is_block_with(a[0], 0) && is_block_with(a[1], 0))
            inline_if(g, n, want, BC_JUMP_IF_FALSE, a[0], a[1], BC_PUSH_NIL);
        else if (strcmp(sel, "ifFalse:ifTrue:") == 0 && is_block_with(a[0], 0) &&
                 is_block_with(a[1], 0))
            inline_if(g, n, want, BC_JUMP_IF_TRUE, a[0], a[1], BC_PUSH_NIL);
        else if (strcmp(sel, "ifNil:ifNotNil:") == 0 && is_block_with(a[0], 0) &&
                 (is_block_with(a[1], 0) || is_block_with(a[1], 1)))
            inline_nil_test(g, n, want, a[0], a[1], false);
        else if (strcmp(sel, "ifNotNil:ifNil:") == 0 && is_block_with(a[1], 0) &&
                 (is_block_with(a[0], 0) || is_block_with(a[0], 1)))
            inline_nil_test(g, n, want, a[1], a[0], true);
        else if (strcmp(sel, "to:do:") == 0 && is_block_with(a[1], 1))
            inline_to_do(g, n, want, false, false);
        else if (strcmp(sel, "downTo:do:") == 0 && is_block_with(a[1], 1))
            inline_to_do(g, n, want, true, false);
        else
            return false;
        return true;
    case 3:
        if (strcmp(sel, "to:by:do:") == 0 && is_block_with(a[2], 1))
            inline_to_do(g, n, want, false, true);
        else if (strcmp(sel, "downTo:by:do:") == 0 && is_block_with(a[2], 1))
            inline_to_do(g, n, want, true, true);
        else
            return false;
        return true;
    default:
        return false;
    }
}

/* -- Sends ----------------------------------------------------------------- */

static int special_send(const char *sel, int nargs)
{
    for (int i = 0; i < BC_N_SPECIAL; i++)
        if (vm_special_nargs[i] == nargs && strcmp(vm_special_selector[i], sel) == 0)
            return BC_SEND_ADD + i;
    return -1;
}

static void compile_send(Gen *g, Node *n, bool want)
{
    Node *recv = n->u.send.recv;
    int nargs = n->u.send.nargs;
    if (nargs > VM_COMPILE_MAX_ARGS)
        fail_at(g, n->line, n->col, "too many arguments in a send of '%.60s...' (%d; at most %d)",
                n->u.send.selector, nargs, VM_COMPILE_MAX_ARGS);
    bool super = recv->kind == NODE_VARIABLE && strcmp(recv->u.var, "super") == 0;
    if (!super && try_inline(g, n, want))
        return;
    if (super) {
        set_pos(g, recv->line, recv->col);
        emit0(g, BC_PUSH_SELF);
    } else {
        compile_expr(g, recv, true);
    }
    for (int i = 0; i < nargs; i++)
        compile_expr(g, n->u.send.args[i], true);
    set_pos(g, n->line, n->col);
    int special = super ? -1 : special_send(n->u.send.selector, nargs);
    if (special >= 0)
        emit0(g, special);
    else if (super)
        emit_lit(g, BC_SUPER_SEND, BC_SUPER_SEND_W, symbol_index(g, n->u.send.selector), nargs);
    else
        emit_lit(g, BC_SEND, BC_SEND_W, symbol_index(g, n->u.send.selector), nargs);
    if (!want)
        emit0(g, BC_POP);
}

static void compile_expr(Gen *g, Node *n, bool want)
{
    g->line = n->line;
    g->col = n->col;
    switch (n->kind) {
    case NODE_LITERAL:
        if (want) {
            set_pos(g, n->line, n->col);
            push_literal(g, &n->u.lit);
        }
        return;
    case NODE_VARIABLE: {
        Ref r = resolve(g, n->u.var, n->line, n->col);
        /* Reading a global may load a class or send unknownGlobal:, so it is
         * kept even when its value is not used. */
        if (!want && r.kind != REF_GLOBAL)
            return;
        set_pos(g, n->line, n->col);
        push_ref(g, r, n->u.var);
        if (!want)
            emit0(g, BC_POP);
        return;
    }
    case NODE_ASSIGN:
        compile_assign(g, n, want);
        return;
    case NODE_SEND:
        compile_send(g, n, want);
        return;
    case NODE_BLOCK:
        compile_block(g, n, want);
        return;
    case NODE_RETURN:
        /* The parser only makes returns statements. */
        compile_return(g, n);
        return;
    }
}

/* Answers whether the body ended with a return. With want_last the value of
 * the last statement (nil for an empty body) is left on the stack. */
static bool compile_statements(Gen *g, Body *b, bool want_last)
{
    for (int i = 0; i < b->nstmts; i++) {
        Node *s = b->stmts[i];
        if (s->kind == NODE_RETURN) {
            compile_return(g, s);
            return true;
        }
        compile_expr(g, s, want_last && i == b->nstmts - 1);
    }
    if (b->nstmts == 0 && want_last) {
        set_pos(g, b->line, b->col);
        emit0(g, BC_PUSH_NIL);
    }
    return false;
}

/* -- Methods and classes --------------------------------------------------- */

static MethodDesc *compile_method(Gen *g, MethodAst *ma)
{
    g->selector = ma->selector;
    g->nassigned = 0;
    if (ma->body)
        for (int i = 0; i < ma->body->nstmts; i++)
            collect_assigned(g, ma->body->stmts[i]);
    Frame *f = push_frame(g, ma->selector, false, ma->line);
    f->m->is_primitive = ma->primitive;
    Scope s;
    open_scope(g, &s, "method");
    for (int i = 0; i < ma->nparams; i++)
        declare_new(g, &s, &ma->params[i], true, NULL);
    f->m->nargs = ma->nparams; /* only now: var_names must hold nargs names */
    if (ma->body) {
        Body *b = ma->body;
        for (int i = 0; i < b->ntemps; i++)
            declare_new(g, &s, &b->temps[i], false, NULL);
        set_pos(g, b->line, b->col);
        if (!compile_statements(g, b, false)) {
            set_pos(g, b->end_line, b->end_col);
            emit0(g, BC_RETURN_SELF);
        }
    }
    close_scope(g, &s);
    return pop_frame(g);
}

static void add_method(MethodDesc ***arr, size_t *n, MethodDesc *m)
{
    *arr = xrealloc(*arr, (*n + 1) * sizeof(MethodDesc *));
    (*arr)[(*n)++] = m;
}

/* Builds the side's full field list (inherited ++ own) into g->fields. */
static void collect_fields(Gen *g, const ClassAst *ast, bool class_side, FieldResolver resolve,
                           void *ctx)
{
    const char *const *inherited = NULL;
    size_t ninherited = 0;
    const char *super = ast->super.text ? ast->super.text : "Object";
    bool root = strcmp(super, "nil") == 0;
    /* A root class inherits no instance fields; its class side still
     * inherits Class's (the hidden class slots), so the resolver is asked. */
    if (resolve && (class_side || !root)) {
        if (!resolve(super, class_side, &inherited, &ninherited, ctx)) {
            const Name *at = ast->super.text ? &ast->super : &ast->name;
            fail_at(g, at->line, at->col, "cannot find superclass '%s'", super);
        }
    }
    const Name *own = class_side ? ast->class_fields : ast->inst_fields;
    int nown = class_side ? ast->nclass_fields : ast->ninst_fields;
    size_t total = ninherited + (size_t)nown;
    g->fields = vm_arena_alloc(g->arena, (total ? total : 1) * sizeof(char *));
    g->nfields = 0;
    for (size_t i = 0; i < ninherited; i++)
        g->fields[g->nfields++] = vm_arena_strndup(g->arena, inherited[i], strlen(inherited[i]));
    for (int i = 0; i < nown; i++) {
        const Name *n = &own[i];
        if (is_reserved(n->text))
            fail_at(g, n->line, n->col, "cannot declare '%s': it is a reserved name", n->text);
        for (size_t j = 0; j < ninherited; j++)
            if (strcmp(g->fields[j], n->text) == 0)
                fail_at(g, n->line, n->col, "field '%s' is already defined in a superclass",
                        n->text);
        for (int j = 0; j < i; j++)
            if (strcmp(own[j].text, n->text) == 0)
                fail_at(g, n->line, n->col, "field '%s' is already defined in this class", n->text);
        if (g->nfields >= VM_COMPILE_MAX_FIELDS)
            fail_at(g, n->line, n->col, "too many fields in '%s%s' (more than %d)", ast->name.text,
                    class_side ? " class" : "", VM_COMPILE_MAX_FIELDS);
        g->fields[g->nfields++] = n->text;
    }
    if (g->nfields > VM_COMPILE_MAX_FIELDS)
        fail_at(g, ast->name.line, ast->name.col, "too many fields in '%s%s' (more than %d)",
                ast->name.text, class_side ? " class" : "", VM_COMPILE_MAX_FIELDS);
}

static char **copy_names(const Name *names, int n)
{
    char **out = xcalloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++)
        out[i] = xstrdup(names[i].text);
    return out;
}

typedef struct Compilation {
    Arena arena;
    CompileFail fail;
    Gen gen;
} Compilation;

static void discard_partial(Compilation *c)
{
    Gen *g = &c->gen;
    for (Frame *f = g->frame; f; f = f->outer) {
        free(f->lit_table);
        if (f->m) {
            f->m->ntemps = f->high - f->m->nargs; /* so that every var name is freed */
            vm_method_desc_free(f->m);
        }
    }
    if (g->pending)
        vm_method_desc_free(g->pending);
    if (g->cls)
        vm_class_desc_free(g->cls);
}

ClassDesc *vm_compile_class(const char *file, const char *src, size_t len, FieldResolver resolve,
                            void *ctx, CompileError *err)
{
    /* Everything setjmp's caller touches after a longjmp lives behind this
     * pointer, which is never reassigned: locals changed after setjmp would be
     * indeterminate once it returns a second time. */
    Compilation *const c = xcalloc(1, sizeof *c);
    memset(err, 0, sizeof *err);
    c->fail.err = err;
    c->fail.file = file;
    c->gen.arena = &c->arena;
    c->gen.fail = &c->fail;
    if (setjmp(c->fail.jump)) {
        discard_partial(c);
        vm_arena_free(&c->arena);
        free(c);
        return NULL;
    }
    Gen *g = &c->gen;
    ClassAst *ast = vm_parser_parse_class(src, len, &c->arena, &c->fail);
    ClassDesc *cd = g->cls = xcalloc(1, sizeof(ClassDesc));
    cd->name = xstrdup(ast->name.text);
    cd->super_name = xstrdup(ast->super.text ? ast->super.text : "Object");
    cd->file = xstrdup(file ? file : "");
    cd->inst_fields = copy_names(ast->inst_fields, ast->ninst_fields);
    cd->ninst_fields = (size_t)ast->ninst_fields;
    cd->class_fields = copy_names(ast->class_fields, ast->nclass_fields);
    cd->nclass_fields = (size_t)ast->nclass_fields;

    collect_fields(g, ast, false, resolve, ctx);
    for (int i = 0; i < ast->ninst_methods; i++)
        add_method(&cd->inst_methods, &cd->ninst_methods, compile_method(g, ast->inst_methods[i]));
    collect_fields(g, ast, true, resolve, ctx);
    for (int i = 0; i < ast->nclass_methods; i++)
        add_method(&cd->class_methods, &cd->nclass_methods,
                   compile_method(g, ast->class_methods[i]));

    vm_arena_free(&c->arena);
    free(c);
    return cd;
}

/* -- Freeing --------------------------------------------------------------- */

void vm_method_desc_free(MethodDesc *m)
{
    if (!m)
        return;
    free(m->selector);
    free(m->code);
    for (size_t i = 0; i < m->nlits; i++)
        free_literal(&m->lits[i]);
    free(m->lits);
    free(m->lines);
    if (m->var_names)
        for (int i = 0; i < m->nargs + m->ntemps; i++)
            free(m->var_names[i]);
    free(m->var_names);
    free(m);
}

void vm_class_desc_free(ClassDesc *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->super_name);
    free(c->file);
    for (size_t i = 0; i < c->ninst_fields; i++)
        free(c->inst_fields[i]);
    free(c->inst_fields);
    for (size_t i = 0; i < c->nclass_fields; i++)
        free(c->class_fields[i]);
    free(c->class_fields);
    for (size_t i = 0; i < c->ninst_methods; i++)
        vm_method_desc_free(c->inst_methods[i]);
    free(c->inst_methods);
    for (size_t i = 0; i < c->nclass_methods; i++)
        vm_method_desc_free(c->class_methods[i]);
    free(c->class_methods);
    free(c);
}
