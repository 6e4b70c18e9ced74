/* Unit tests for the SOM compiler (vm/compiler/lexer.c, vm/compiler/parser.c, vm/compiler/codegen.c,
 * vm/bytecode/bytecodes.c, vm/compiler/bytecode_listing.c): source in, ClassDesc out, bytes checked. */
#define _GNU_SOURCE

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "vm/bytecode/bytecodes.h"
#include "vm/compiler/classdesc.h"

/* -- Fixtures -------------------------------------------------------------- */

#define HIDDEN "$superclass", "$name", "$fields", "$methods", "$index", "$shape", "$file"

static const char *const hidden_slots[] = {HIDDEN};
static const char *const base_class_fields[] = {HIDDEN, "cf"};
static const char *const base_fields[] = {"a", "b"};

/* Base has fields a b and class-side field cf; Nope does not exist; every
 * other superclass (Object, nil) has no fields. */
static bool test_resolver(const char *super, bool class_side, const char *const **names,
                          size_t *count, void *ctx)
{
    (void)ctx;
    if (strcmp(super, "Nope") == 0)
        return false;
    if (strcmp(super, "Base") == 0) {
        *names = class_side ? base_class_fields : base_fields;
        *count = class_side ? 8 : 2;
        return true;
    }
    *names = hidden_slots;
    *count = class_side ? 7 : 0;
    return true;
}

static ClassDesc *compiled[16];
static int ncompiled;

static int free_compiled(void **state)
{
    (void)state;
    for (int i = 0; i < ncompiled; i++)
        vm_class_desc_free(compiled[i]);
    ncompiled = 0;
    return 0;
}

static ClassDesc *compile_ok(const char *src)
{
    CompileError err;
    ClassDesc *c = vm_compile_class("T.som", src, strlen(src), test_resolver, NULL, &err);
    if (!c)
        fail_msg("unexpected compile error %s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_true(ncompiled < 16);
    compiled[ncompiled++] = c;
    return c;
}

static CompileError compile_fails(const char *src)
{
    CompileError err;
    ClassDesc *c = vm_compile_class("T.som", src, strlen(src), test_resolver, NULL, &err);
    if (c) {
        vm_class_desc_free(c);
        fail_msg("expected a compile error");
    }
    assert_string_equal(err.file, "T.som");
    return err;
}

static void assert_error(CompileError e, int line, int col, const char *text)
{
    if (!strstr(e.msg, text) || e.line != line || e.col != col)
        fail_msg("got %d:%d: %s\nwanted %d:%d: ...%s...", e.line, e.col, e.msg, line, col, text);
}

static MethodDesc *method_named(const ClassDesc *c, const char *sel)
{
    for (size_t i = 0; i < c->ninst_methods; i++)
        if (strcmp(c->inst_methods[i]->selector, sel) == 0)
            return c->inst_methods[i];
    for (size_t i = 0; i < c->nclass_methods; i++)
        if (strcmp(c->class_methods[i]->selector, sel) == 0)
            return c->class_methods[i];
    fail_msg("no method %s", sel);
    return NULL;
}

/* Compiles `T = Base ( | f | <methods> )` and answers its first method. */
static MethodDesc *compile_method(const char *methods)
{
    size_t n = strlen(methods) + 64;
    char *src = malloc(n);
    snprintf(src, n, "T = Base ( | f |\n%s\n)", methods);
    ClassDesc *c = compile_ok(src);
    free(src);
    assert_true(c->ninst_methods > 0);
    return c->inst_methods[0];
}

static MethodDesc *block_literal(const MethodDesc *m, size_t index)
{
    assert_true(index < m->nlits);
    assert_int_equal(m->lits[index].kind, LIT_BLOCK);
    assert_non_null(m->lits[index].block);
    return m->lits[index].block;
}

static void check_code(const MethodDesc *m, const uint8_t *want, size_t n, const char *file, int line)
{
    if (m->code_len == n && memcmp(m->code, want, n) == 0)
        return;
    vm_disassemble_desc(stderr, m, 2);
    fprintf(stderr, "  wanted:");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %u", want[i]);
    fprintf(stderr, "\n  got:   ");
    for (size_t i = 0; i < m->code_len; i++)
        fprintf(stderr, " %u", m->code[i]);
    fprintf(stderr, "\n");
    _fail(file, line);
}

#define ASSERT_CODE(m, ...)                                                   \
    do {                                                                      \
        const uint8_t want_[] = {__VA_ARGS__};                                \
        check_code((m), want_, sizeof want_, __FILE__, __LINE__);             \
    } while (0)

static bool code_contains(const MethodDesc *m, int op)
{
    for (size_t pc = 0; pc < m->code_len; pc += vm_bytecode_length[m->code[pc]])
        if (m->code[pc] == op)
            return true;
    return false;
}

static const char *sym(const MethodDesc *m, size_t index)
{
    assert_true(index < m->nlits);
    assert_int_equal(m->lits[index].kind, LIT_SYMBOL);
    return m->lits[index].s;
}

/* A growing source buffer for generated programs. */
typedef struct Buf {
    char *s;
    size_t len, cap;
} Buf;

static void bprintf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* -- Bytecode table -------------------------------------------------------- */

static void bytecode_table_lengths_match_operands(void **state)
{
    (void)state;
    for (int op = 0; op < BC_COUNT; op++) {
        const char *ops = vm_bytecode_operands[op];
        int len = 1;
        for (const char *p = ops; *p; p++)
            len += *p == 'w' ? 2 : 1;
        assert_int_equal(len, vm_bytecode_length[op]);
        assert_non_null(vm_bytecode_name[op]);
    }
    assert_string_equal(vm_bytecode_name[BC_SEND_AT_PUT], "SEND_AT_PUT");
    assert_string_equal(vm_special_selector[BC_SEND_AT_PUT - BC_SEND_ADD], "at:put:");
    assert_int_equal(vm_special_nargs[BC_SEND_AT_PUT - BC_SEND_ADD], 2);
    assert_int_equal(vm_bytecode_effect[BC_SEND], BC_VARIABLE);
}

/* -- Sends ----------------------------------------------------------------- */

static void keyword_send_compiles_to_send_with_nargs(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ self at: 1 between: 2 )");
    ASSERT_CODE(m, BC_PUSH_SELF, BC_PUSH_1, BC_PUSH_LITERAL, 0, BC_SEND, 1, 2, BC_RETURN_TOP);
    assert_int_equal(m->lits[0].kind, LIT_INT);
    assert_int_equal(m->lits[0].i, 2);
    assert_string_equal(sym(m, 1), "at:between:");
    assert_int_equal(m->max_stack, 3);
}

static void unary_and_binary_sends_bind_by_precedence(void **state)
{
    (void)state;
    /* self a ~ (self b) c: d  ==  ((self a) ~ (self b)) c: d */
    MethodDesc *m = compile_method("foo = ( ^ self a ~ self b c: 0 )");
    ASSERT_CODE(m, BC_PUSH_SELF, BC_SEND, 0, 0, BC_PUSH_SELF, BC_SEND, 1, 0, BC_SEND, 2, 1,
                BC_PUSH_0, BC_SEND, 3, 1, BC_RETURN_TOP);
    assert_string_equal(sym(m, 0), "a");
    assert_string_equal(sym(m, 1), "b");
    assert_string_equal(sym(m, 2), "~");
    assert_string_equal(sym(m, 3), "c:");
}

static void special_selector_sends_use_one_byte_bytecodes(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "x + x", "x - x", "x * x", "x < x", "x > x", "x <= x", "x >= x", "x = x",
        "x <> x", "x == x", "x at: x", "x at: x put: x", "x value", "x value: x", "x length",
        "x & x", "x bitXor: x", "x << x", "x >>> x", "x / x", "x % x", "x rem: x", "x ~= x",
        "x max: x", "x min: x", "x abs", "x negated", "x isNil", "x notNil",
    };
    _Static_assert(sizeof exprs / sizeof exprs[0] == BC_N_SPECIAL, "one expression per special send");
    for (int i = 0; i < BC_N_SPECIAL; i++) {
        char src[128];
        snprintf(src, sizeof src, "T = ( foo: x = ( ^ %s ) )", exprs[i]);
        ClassDesc *c = compile_ok(src);
        MethodDesc *m = c->inst_methods[0];
        int nargs = vm_special_nargs[i];
        assert_int_equal(m->code_len, 2 * (1 + nargs) + 2);
        assert_int_equal(m->code[2 * (1 + nargs)], BC_SEND_ADD + i);
        assert_int_equal(m->nlits, 0);
        free_compiled(NULL);
    }
}

static void super_send_uses_super_send_even_for_special_selectors(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( + x = ( ^ super + x ) foo = ( ^ super foo bar ) "
                              "bar = ( ^ super ) )");
    MethodDesc *plus = method_named(c, "+");
    ASSERT_CODE(plus, BC_PUSH_SELF, BC_PUSH_VAR, 0, BC_SUPER_SEND, 0, 1, BC_RETURN_TOP);
    assert_string_equal(sym(plus, 0), "+");
    MethodDesc *foo = method_named(c, "foo");
    ASSERT_CODE(foo, BC_PUSH_SELF, BC_SUPER_SEND, 0, 0, BC_SEND, 1, 0, BC_RETURN_TOP);
    /* super as a value is the receiver */
    ASSERT_CODE(method_named(c, "bar"), BC_RETURN_SELF);
}

static void globals_are_read_through_symbol_literals(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( Foo. ^ Foo ) bar = ( | x | x. 3. ^ nil ) )");
    MethodDesc *foo = method_named(c, "foo");
    /* A global statement is kept: reading it may load a class. */
    ASSERT_CODE(foo, BC_PUSH_GLOBAL, 0, BC_POP, BC_PUSH_GLOBAL, 0, BC_RETURN_TOP);
    assert_string_equal(sym(foo, 0), "Foo");
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_NIL, BC_RETURN_TOP);
}

static void cascades_are_not_part_of_som(void **state)
{
    (void)state;
    assert_error(compile_fails("T = ( foo = ( self a; b ) )"), 1, 21, "unexpected character ';'");
}

static void send_with_more_than_255_arguments_is_an_error(void **state)
{
    (void)state;
    Buf b = {0};
    bprintf(&b, "T = ( foo = ( self");
    for (int i = 0; i < 256; i++)
        bprintf(&b, " k: 2");
    bprintf(&b, " ) )");
    CompileError e = compile_fails(b.s);
    assert_error(e, 1, 20, "too many arguments");
    free(b.s);
}

/* -- Inlining -------------------------------------------------------------- */

static void if_true_with_literal_block_is_inlined_as_jump(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: x = ( x ifTrue: [ self bar ]. ^ 1 ) "
                              "bar: x = ( ^ x ifTrue: [ 2 ] ) "
                              "baz: x = ( ^ x ifFalse: [ 2 ] ) )");
    ASSERT_CODE(method_named(c, "foo:"), BC_PUSH_VAR, 0, BC_JUMP_IF_FALSE, 5, 0, BC_PUSH_SELF,
                BC_SEND, 0, 0, BC_POP, BC_PUSH_1, BC_RETURN_TOP);
    /* In value position the missing branch answers nil. */
    ASSERT_CODE(method_named(c, "bar:"), BC_PUSH_VAR, 0, BC_JUMP_IF_FALSE, 5, 0,
                BC_PUSH_LITERAL, 0, BC_JUMP, 1, 0, BC_PUSH_NIL, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "baz:"), BC_PUSH_VAR, 0, BC_JUMP_IF_TRUE, 5, 0,
                BC_PUSH_LITERAL, 0, BC_JUMP, 1, 0, BC_PUSH_NIL, BC_RETURN_TOP);
    assert_int_equal(method_named(c, "bar:")->max_stack, 1);
}

static void if_true_with_non_block_argument_is_a_normal_send(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: x = ( ^ x ifTrue: x ) bar: x = ( ^ x ifTrue: [ :y | y ] ) )");
    ASSERT_CODE(method_named(c, "foo:"), BC_PUSH_VAR, 0, BC_PUSH_VAR, 0, BC_SEND, 0, 1,
                BC_RETURN_TOP);
    MethodDesc *bar = method_named(c, "bar:");
    ASSERT_CODE(bar, BC_PUSH_VAR, 0, BC_PUSH_BLOCK, 0, BC_SEND, 1, 1, BC_RETURN_TOP);
    assert_string_equal(sym(bar, 1), "ifTrue:");
}

static void if_true_if_false_in_value_position_leaves_one_value(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: x = ( ^ x ifTrue: [ 3 ] ifFalse: [ 4 ] ) "
                              "bar: x = ( ^ 0 max: (x ifFalse: [ 3 ] ifTrue: [ 4 ]) ) "
                              "baz: x = ( x ifTrue: [ 3 ] ifFalse: [ self b ] ) )");
    MethodDesc *foo = method_named(c, "foo:");
    ASSERT_CODE(foo, BC_PUSH_VAR, 0, BC_JUMP_IF_FALSE, 5, 0, BC_PUSH_LITERAL, 0, BC_JUMP, 2, 0,
                BC_PUSH_LITERAL, 1, BC_RETURN_TOP);
    assert_int_equal(foo->max_stack, 1);
    MethodDesc *bar = method_named(c, "bar:");
    ASSERT_CODE(bar, BC_PUSH_0, BC_PUSH_VAR, 0, BC_JUMP_IF_TRUE, 5, 0, BC_PUSH_LITERAL, 0,
                BC_JUMP, 2, 0, BC_PUSH_LITERAL, 1, BC_SEND_MAX, BC_RETURN_TOP);
    assert_int_equal(bar->max_stack, 2);
    /* As a statement both branches leave nothing behind. */
    ASSERT_CODE(method_named(c, "baz:"), BC_PUSH_VAR, 0, BC_JUMP_IF_FALSE, 3, 0, BC_JUMP, 5, 0,
                BC_PUSH_SELF, BC_SEND, 0, 0, BC_POP, BC_RETURN_SELF);
}

static void and_or_are_inlined_with_short_circuit(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: a = ( ^ a and: [ a foo ] ) bar: a = ( ^ a or: [ a foo ] ) "
                              "baz: a = ( ^ a & [ a foo ] ) )");
    ASSERT_CODE(method_named(c, "foo:"), BC_PUSH_VAR, 0, BC_JUMP_IF_FALSE, 8, 0, BC_PUSH_VAR, 0,
                BC_SEND, 0, 0, BC_JUMP, 1, 0, BC_PUSH_FALSE, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "bar:"), BC_PUSH_VAR, 0, BC_JUMP_IF_TRUE, 8, 0, BC_PUSH_VAR, 0,
                BC_SEND, 0, 0, BC_JUMP, 1, 0, BC_PUSH_TRUE, BC_RETURN_TOP);
    /* & is a message, not inlined control flow (the library has no & on
     * Booleans): its special send, which sends it to anything but a
     * SmallInteger. */
    MethodDesc *baz = method_named(c, "baz:");
    ASSERT_CODE(baz, BC_PUSH_VAR, 0, BC_PUSH_BLOCK, 0, BC_SEND_BIT_AND, BC_RETURN_TOP);
}

static void while_true_loops_with_jump_back_and_answers_nil(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( | i | i := 0. [ i < 10 ] whileTrue: [ i := i + 1 ] ) "
                              "bar = ( ^ [ false ] whileFalse: [ ] ) "
                              "baz: b = ( ^ b whileTrue: [ ] ) )");
    ASSERT_CODE(method_named(c, "foo"), BC_PUSH_0, BC_POP_VAR, 0, BC_PUSH_VAR, 0, BC_PUSH_LITERAL,
                0, BC_SEND_LT, BC_JUMP_IF_FALSE, 9, 0, BC_PUSH_VAR, 0, BC_PUSH_1, BC_SEND_ADD,
                BC_POP_VAR, 0, BC_JUMP_BACK, 17, 0, BC_RETURN_SELF);
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_FALSE, BC_JUMP_IF_TRUE, 3, 0, BC_JUMP_BACK, 7, 0,
                BC_PUSH_NIL, BC_RETURN_TOP);
    /* The receiver must be a literal block too. */
    MethodDesc *baz = method_named(c, "baz:");
    ASSERT_CODE(baz, BC_PUSH_VAR, 0, BC_PUSH_BLOCK, 0, BC_SEND, 1, 1, BC_RETURN_TOP);
}

static void to_do_evaluates_limit_once_and_uses_generic_compare(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: n = ( 1 to: n do: [ :i | self bar: i ] ) "
                              "bar = ( 1 to: self size do: [ :i | ] ) "
                              "baz = ( ^ 1 to: 3 do: [ :i | ] ) )");
    MethodDesc *foo = method_named(c, "foo:");
    /* An argument cannot change, so it is compared directly. */
    ASSERT_CODE(foo, BC_PUSH_1, BC_POP_VAR, 1, BC_PUSH_VAR, 1, BC_PUSH_VAR, 0, BC_SEND_LE,
                BC_JUMP_IF_FALSE, 16, 0, BC_PUSH_SELF, BC_PUSH_VAR, 1, BC_SEND, 0, 1, BC_POP,
                BC_PUSH_VAR, 1, BC_PUSH_1, BC_SEND_ADD, BC_POP_VAR, 1, BC_JUMP_BACK, 24, 0,
                BC_RETURN_SELF);
    assert_int_equal(foo->ntemps, 1);
    assert_string_equal(foo->var_names[1], "i");
    /* Any other limit is evaluated once into a hidden temp. */
    MethodDesc *bar = method_named(c, "bar");
    ASSERT_CODE(bar, BC_PUSH_1, BC_POP_VAR, 0, BC_PUSH_SELF, BC_SEND, 0, 0, BC_POP_VAR, 1,
                BC_PUSH_VAR, 0, BC_PUSH_VAR, 1, BC_SEND_LE, BC_JUMP_IF_FALSE, 9, 0, BC_PUSH_VAR, 0,
                BC_PUSH_1, BC_SEND_ADD, BC_POP_VAR, 0, BC_JUMP_BACK, 17, 0, BC_RETURN_SELF);
    assert_int_equal(bar->ntemps, 2);
    /* In value position the loop answers its receiver, kept under the loop. */
    MethodDesc *baz = method_named(c, "baz");
    ASSERT_CODE(baz, BC_PUSH_1, BC_DUP, BC_POP_VAR, 0, BC_PUSH_VAR, 0, BC_PUSH_LITERAL, 0,
                BC_SEND_LE, BC_JUMP_IF_FALSE, 9, 0, BC_PUSH_VAR, 0, BC_PUSH_1, BC_SEND_ADD,
                BC_POP_VAR, 0, BC_JUMP_BACK, 17, 0, BC_RETURN_TOP);
    assert_int_equal(baz->max_stack, 3);
}

static void to_by_do_with_negative_literal_step_compares_with_ge(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( 10 to: 1 by: -1 do: [ :i | ] ) "
                              "bar = ( 10 downTo: 1 do: [ :i | ] ) "
                              "baz: s = ( 1 to: 10 by: s do: [ :i | ] ) "
                              "qux = ( 1.5 to: 3 do: [ :i | ] ) )");
    ASSERT_CODE(method_named(c, "foo"), BC_PUSH_LITERAL, 0, BC_POP_VAR, 0, BC_PUSH_VAR, 0,
                BC_PUSH_1, BC_SEND_GE, BC_JUMP_IF_FALSE, 10, 0, BC_PUSH_VAR, 0, BC_PUSH_LITERAL, 1,
                BC_SEND_ADD, BC_POP_VAR, 0, BC_JUMP_BACK, 17, 0, BC_RETURN_SELF);
    assert_int_equal(method_named(c, "foo")->lits[1].i, -1);
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_LITERAL, 0, BC_POP_VAR, 0, BC_PUSH_VAR, 0,
                BC_PUSH_1, BC_SEND_GE, BC_JUMP_IF_FALSE, 9, 0, BC_PUSH_VAR, 0, BC_PUSH_1,
                BC_SEND_SUB, BC_POP_VAR, 0, BC_JUMP_BACK, 16, 0, BC_RETURN_SELF);
    /* An unknown step's sign is unknown: ascending compare, as the library. */
    ASSERT_CODE(method_named(c, "baz:"), BC_PUSH_1, BC_POP_VAR, 1, BC_PUSH_VAR, 1, BC_PUSH_LITERAL,
                0, BC_SEND_LE, BC_JUMP_IF_FALSE, 10, 0, BC_PUSH_VAR, 1, BC_PUSH_VAR, 0, BC_SEND_ADD,
                BC_POP_VAR, 1, BC_JUMP_BACK, 18, 0, BC_RETURN_SELF);
    MethodDesc *qux = method_named(c, "qux");
    assert_int_equal(qux->lits[0].kind, LIT_DOUBLE);
    assert_true(code_contains(qux, BC_SEND_LE) && code_contains(qux, BC_SEND_ADD));
}

static void to_do_with_non_block_or_wrong_arity_is_a_normal_send(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: b = ( 1 to: 2 do: b ) bar = ( 1 to: 2 do: [ 3 ] ) )");
    assert_true(code_contains(method_named(c, "foo:"), BC_SEND));
    assert_false(code_contains(method_named(c, "foo:"), BC_JUMP_BACK));
    assert_true(code_contains(method_named(c, "bar"), BC_PUSH_BLOCK));
}

static void if_nil_family_answers_like_the_library(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: x = ( ^ x ifNotNil: [ :v | v + 1 ] ) "
                              "bar: x = ( ^ x ifNil: [ 3 ] ) "
                              "baz: x = ( ^ x ifNil: [ 3 ] ifNotNil: [ :v | v ] ) "
                              "qux: x = ( x ifNotNil: [ :v | v ] ifNil: [ 3 ] ) "
                              "quux: x = ( x ifNotNil: [ :v | self b: v ] ) "
                              "zot: x = ( ^ x ifNotNil: [ 4 ] ) )");
    /* ifNotNil: binds the receiver; a nil receiver is the answer itself. */
    MethodDesc *foo = method_named(c, "foo:");
    ASSERT_CODE(foo, BC_PUSH_VAR, 0, BC_DUP, BC_JUMP_IF_NIL, 6, 0, BC_POP_VAR, 1, BC_PUSH_VAR, 1,
                BC_PUSH_1, BC_SEND_ADD, BC_RETURN_TOP);
    assert_int_equal(foo->max_stack, 2);
    /* ifNil: answers a non-nil receiver. */
    ASSERT_CODE(method_named(c, "bar:"), BC_PUSH_VAR, 0, BC_DUP, BC_JUMP_IF_NOT_NIL, 3, 0, BC_POP,
                BC_PUSH_LITERAL, 0, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "baz:"), BC_PUSH_VAR, 0, BC_STORE_VAR, 1, BC_JUMP_IF_NOT_NIL, 5, 0,
                BC_PUSH_LITERAL, 0, BC_JUMP, 2, 0, BC_PUSH_VAR, 1, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "qux:"), BC_PUSH_VAR, 0, BC_STORE_VAR, 1, BC_JUMP_IF_NIL, 3, 0,
                BC_JUMP, 0, 0, BC_RETURN_SELF);
    ASSERT_CODE(method_named(c, "quux:"), BC_PUSH_VAR, 0, BC_STORE_VAR, 1, BC_JUMP_IF_NIL, 7, 0,
                BC_PUSH_SELF, BC_PUSH_VAR, 1, BC_SEND, 0, 1, BC_POP, BC_RETURN_SELF);
    ASSERT_CODE(method_named(c, "zot:"), BC_PUSH_VAR, 0, BC_DUP, BC_JUMP_IF_NIL, 3, 0, BC_POP,
                BC_PUSH_LITERAL, 0, BC_RETURN_TOP);
}

static void inlined_block_temps_are_reset_when_reused(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok(
        "T = ( foo = ( | a | a := 33. true ifTrue: [ | a | a := 2 ]. "
        "              true ifTrue: [ | a | ^ a ]. ^ a ) "
        "      bar = ( [ true ] whileTrue: [ | t | t := t ] ) "
        "      baz = ( | blk | true ifTrue: [ | a | blk := [ a ] ]. "
        "              true ifTrue: [ | b | b := 1 ]. ^ blk ) )");
    MethodDesc *foo = method_named(c, "foo");
    /* The sibling's `a` reuses slot 1 and starts out nil again. */
    ASSERT_CODE(foo, BC_PUSH_LITERAL, 0, BC_POP_VAR, 0, BC_PUSH_TRUE, BC_JUMP_IF_FALSE, 4, 0,
                BC_PUSH_LITERAL, 1, BC_POP_VAR, 1, BC_PUSH_TRUE, BC_JUMP_IF_FALSE, 6, 0, BC_PUSH_NIL,
                BC_POP_VAR, 1, BC_PUSH_VAR, 1, BC_RETURN_TOP, BC_PUSH_VAR, 0, BC_RETURN_TOP);
    assert_int_equal(foo->ntemps, 2);
    /* A temp of a loop body is reset on every iteration. */
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_TRUE, BC_JUMP_IF_FALSE, 10, 0, BC_PUSH_NIL,
                BC_POP_VAR, 0, BC_PUSH_VAR, 0, BC_POP_VAR, 0, BC_JUMP_BACK, 14, 0, BC_RETURN_SELF);
    /* A slot a closure captured is never handed to a sibling. */
    MethodDesc *baz = method_named(c, "baz");
    assert_int_equal(baz->ntemps, 3);
    MethodDesc *blk = block_literal(baz, 0);
    ASSERT_CODE(blk, BC_PUSH_OUTER, 1, 1, BC_RETURN_TOP);
    assert_true(code_contains(baz, BC_POP_VAR));
    assert_int_equal(baz->code[baz->code_len - 5], BC_POP_VAR);
    assert_int_equal(baz->code[baz->code_len - 4], 2);
}

/* -- Variables ------------------------------------------------------------- */

static void outer_variable_read_uses_context_level(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( | a | a := 1. ^ [ [ a ] ] ) "
                              "bar: x = ( | a | ^ [ x ifTrue: [ a ] ] ) )");
    MethodDesc *foo = method_named(c, "foo");
    ASSERT_CODE(foo, BC_PUSH_1, BC_POP_VAR, 0, BC_PUSH_BLOCK, 0, BC_RETURN_TOP);
    MethodDesc *outer = block_literal(foo, 0);
    ASSERT_CODE(outer, BC_PUSH_BLOCK, 0, BC_RETURN_TOP);
    assert_true(outer->is_block);
    assert_string_equal(outer->selector, "foo");
    ASSERT_CODE(block_literal(outer, 0), BC_PUSH_OUTER, 0, 2, BC_RETURN_TOP);
    /* Inlined blocks add no level. */
    MethodDesc *bar = block_literal(method_named(c, "bar:"), 0);
    ASSERT_CODE(bar, BC_PUSH_OUTER, 0, 1, BC_JUMP_IF_FALSE, 6, 0, BC_PUSH_OUTER, 1, 1, BC_JUMP, 1,
                0, BC_PUSH_NIL, BC_RETURN_TOP);
}

static void outer_variable_write_in_statement_uses_pop_outer(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( | a | [ a := 2 ] value. [ a := 2. 3 ] value. ^ a ) )");
    MethodDesc *foo = method_named(c, "foo");
    ASSERT_CODE(foo, BC_PUSH_BLOCK, 0, BC_SEND_VALUE, BC_POP, BC_PUSH_BLOCK, 1, BC_SEND_VALUE,
                BC_POP, BC_PUSH_VAR, 0, BC_RETURN_TOP);
    ASSERT_CODE(block_literal(foo, 0), BC_PUSH_LITERAL, 0, BC_STORE_OUTER, 0, 1, BC_RETURN_TOP);
    ASSERT_CODE(block_literal(foo, 1), BC_PUSH_LITERAL, 0, BC_POP_OUTER, 0, 1, BC_PUSH_LITERAL, 1,
                BC_RETURN_TOP);
}

static void block_parameters_come_before_temps(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ [ :p :q | | t | t := p. q ] )");
    MethodDesc *b = block_literal(m, 0);
    assert_int_equal(b->nargs, 2);
    assert_int_equal(b->ntemps, 1);
    assert_string_equal(b->var_names[0], "p");
    assert_string_equal(b->var_names[2], "t");
    ASSERT_CODE(b, BC_PUSH_VAR, 0, BC_POP_VAR, 2, BC_PUSH_VAR, 1, BC_RETURN_TOP);
}

static void chained_assignment_stores_each_variable(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( | f | foo = ( | a b | a := b := 1 ) bar = ( ^ f := 0 ) )");
    ASSERT_CODE(method_named(c, "foo"), BC_PUSH_1, BC_STORE_VAR, 1, BC_POP_VAR, 0, BC_RETURN_SELF);
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_0, BC_STORE_FIELD, 0, BC_RETURN_TOP);
}

static void field_index_counts_inherited_fields(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = Base ( | c | foo = ( ^ c ) bar = ( ^ a ) baz = ( c := b ) "
                              "qux = ( ^ [ c ] ) )");
    ASSERT_CODE(method_named(c, "foo"), BC_PUSH_FIELD, 2, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_FIELD, 0, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "baz"), BC_PUSH_FIELD, 1, BC_POP_FIELD, 2, BC_RETURN_SELF);
    ASSERT_CODE(block_literal(method_named(c, "qux"), 0), BC_PUSH_FIELD, 2, BC_RETURN_TOP);
    assert_int_equal(c->ninst_fields, 1);
    assert_string_equal(c->inst_fields[0], "c");
    assert_string_equal(c->super_name, "Base");
}

static void class_side_fields_follow_hidden_class_slots(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = Base ( ---- | mine | foo = ( ^ mine ) bar = ( ^ cf ) "
                              "baz = ( ^ a ) )");
    ASSERT_CODE(method_named(c, "foo"), BC_PUSH_FIELD, 8, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_FIELD, 7, BC_RETURN_TOP);
    /* Instance fields are not visible on the class side. */
    ASSERT_CODE(method_named(c, "baz"), BC_PUSH_GLOBAL, 0, BC_RETURN_TOP);
    ClassDesc *root = compile_ok("R = nil ( | x | foo = ( ^ x ) ---- | y | bar = ( ^ y ) )");
    assert_string_equal(root->super_name, "nil");
    ASSERT_CODE(method_named(root, "foo"), BC_PUSH_FIELD, 0, BC_RETURN_TOP);
    ASSERT_CODE(method_named(root, "bar"), BC_PUSH_FIELD, 7, BC_RETURN_TOP);
}

static void locals_shadow_fields_and_inner_blocks_may_shadow(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( | a | foo: a = ( ^ a ) bar = ( | a | ^ [ :a | a ] ) )");
    ASSERT_CODE(method_named(c, "foo:"), BC_PUSH_VAR, 0, BC_RETURN_TOP);
    ASSERT_CODE(block_literal(method_named(c, "bar"), 0), BC_PUSH_VAR, 0, BC_RETURN_TOP);
}

/* -- Returns --------------------------------------------------------------- */

static void nonlocal_return_only_inside_real_blocks(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: x = ( x ifTrue: [ ^ 1 ]. [ ^ 2 ] value. ^ 3 ) "
                              "bar: x = ( ^ [ x ifTrue: [ ^ self ]. 4 ] ) )");
    MethodDesc *foo = method_named(c, "foo:");
    ASSERT_CODE(foo, BC_PUSH_VAR, 0, BC_JUMP_IF_FALSE, 2, 0, BC_PUSH_1, BC_RETURN_TOP,
                BC_PUSH_BLOCK, 0, BC_SEND_VALUE, BC_POP, BC_PUSH_LITERAL, 1, BC_RETURN_TOP);
    /* A block's last bytecode is RETURN_TOP even after a final `^`. */
    ASSERT_CODE(block_literal(foo, 0), BC_PUSH_LITERAL, 0, BC_RETURN_NONLOCAL, BC_RETURN_TOP);
    assert_int_equal(block_literal(foo, 0)->max_stack, 1);
    MethodDesc *bar = block_literal(method_named(c, "bar:"), 0);
    ASSERT_CODE(bar, BC_PUSH_OUTER, 0, 1, BC_JUMP_IF_FALSE, 2, 0, BC_PUSH_SELF, BC_RETURN_NONLOCAL,
                BC_PUSH_LITERAL, 0, BC_RETURN_TOP);
}

static void method_without_return_answers_self(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( a = ( ) b = ( ^ self ) c = ( self b ) d = ( | t | ) )");
    ASSERT_CODE(method_named(c, "a"), BC_RETURN_SELF);
    ASSERT_CODE(method_named(c, "b"), BC_RETURN_SELF);
    ASSERT_CODE(method_named(c, "c"), BC_PUSH_SELF, BC_SEND, 0, 0, BC_POP, BC_RETURN_SELF);
    assert_int_equal(method_named(c, "d")->ntemps, 1);
}

static void empty_block_answers_nil(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ [ ] -> [ :x | ] -> [ | t | ] )");
    /* literals: block, block, #->, block */
    static const size_t blocks[] = {0, 1, 3};
    for (int i = 0; i < 3; i++)
        ASSERT_CODE(block_literal(m, blocks[i]), BC_PUSH_NIL, BC_RETURN_TOP);
    assert_int_equal(block_literal(m, 1)->nargs, 1);
    assert_int_equal(block_literal(m, 3)->ntemps, 1);
}

static void primitive_method_has_no_code(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo: x = primitive primitive = ( ^ 1 ) )");
    MethodDesc *m = method_named(c, "foo:");
    assert_true(m->is_primitive);
    assert_int_equal(m->code_len, 0);
    assert_int_equal(m->nargs, 1);
    assert_string_equal(m->var_names[0], "x");
    assert_false(method_named(c, "primitive")->is_primitive);
}

/* -- Literals -------------------------------------------------------------- */

static void large_integer_literal_becomes_bigint(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( ^ 123456789012345678901234567890 ) "
                              "bar = ( ^ #(-9223372036854775808 9223372036854775808 -00012 "
                              "9223372036854775807 -99999999999999999999 0) ) )");
    MethodDesc *foo = method_named(c, "foo");
    assert_int_equal(foo->lits[0].kind, LIT_BIGINT);
    assert_string_equal(foo->lits[0].s, "123456789012345678901234567890");
    const Literal *a = &method_named(c, "bar")->lits[0];
    assert_int_equal(a->nelems, 6);
    assert_int_equal(a->elems[0].kind, LIT_INT);
    assert_true(a->elems[0].i == INT64_MIN);
    assert_int_equal(a->elems[1].kind, LIT_BIGINT);
    assert_string_equal(a->elems[1].s, "9223372036854775808");
    assert_int_equal(a->elems[2].kind, LIT_INT);
    assert_int_equal(a->elems[2].i, -12);
    assert_int_equal(a->elems[3].kind, LIT_INT);
    assert_true(a->elems[3].i == INT64_MAX);
    assert_int_equal(a->elems[4].kind, LIT_BIGINT);
    assert_string_equal(a->elems[4].s, "-99999999999999999999");
    assert_true(a->elems[5].kind == LIT_INT && a->elems[5].i == 0);
}

static void negative_number_literals_and_binary_minus(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( a: x = ( ^ x - -2 ) b: x = ( ^ x-1 ) c: x = ( ^ x -1 ) "
                              "d = ( ^ -2.5 abs ) e: x = ( ^ x foo: - 3 ) )");
    MethodDesc *a = method_named(c, "a:");
    ASSERT_CODE(a, BC_PUSH_VAR, 0, BC_PUSH_LITERAL, 0, BC_SEND_SUB, BC_RETURN_TOP);
    assert_int_equal(a->lits[0].i, -2);
    ASSERT_CODE(method_named(c, "b:"), BC_PUSH_VAR, 0, BC_PUSH_1, BC_SEND_SUB, BC_RETURN_TOP);
    ASSERT_CODE(method_named(c, "c:"), BC_PUSH_VAR, 0, BC_PUSH_1, BC_SEND_SUB, BC_RETURN_TOP);
    MethodDesc *d = method_named(c, "d");
    ASSERT_CODE(d, BC_PUSH_LITERAL, 0, BC_SEND_ABS, BC_RETURN_TOP);
    assert_int_equal(d->lits[0].kind, LIT_DOUBLE);
    assert_true(d->lits[0].d == -2.5);
    assert_int_equal(method_named(c, "e:")->lits[0].i, -3);
}

static void literal_array_holds_nested_arrays_symbols_and_constants(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ #(1 -2 3.5 'str' #sym bare at:put: + (4 5) #(6 #()) "
                       "true false nil #'a b') )");
    ASSERT_CODE(m, BC_PUSH_LITERAL, 0, BC_RETURN_TOP);
    const Literal *a = &m->lits[0];
    assert_int_equal(a->kind, LIT_ARRAY);
    assert_int_equal(a->nelems, 14);
    assert_int_equal(a->elems[0].i, 1);
    assert_int_equal(a->elems[1].i, -2);
    assert_true(a->elems[2].kind == LIT_DOUBLE && a->elems[2].d == 3.5);
    assert_true(a->elems[3].kind == LIT_STRING && strcmp(a->elems[3].s, "str") == 0);
    assert_true(a->elems[4].kind == LIT_SYMBOL && strcmp(a->elems[4].s, "sym") == 0);
    assert_true(a->elems[5].kind == LIT_SYMBOL && strcmp(a->elems[5].s, "bare") == 0);
    assert_true(a->elems[6].kind == LIT_SYMBOL && strcmp(a->elems[6].s, "at:put:") == 0);
    assert_true(a->elems[7].kind == LIT_SYMBOL && strcmp(a->elems[7].s, "+") == 0);
    assert_true(a->elems[8].kind == LIT_ARRAY && a->elems[8].nelems == 2 &&
                a->elems[8].elems[1].i == 5);
    assert_true(a->elems[9].kind == LIT_ARRAY && a->elems[9].nelems == 2 &&
                a->elems[9].elems[1].kind == LIT_ARRAY && a->elems[9].elems[1].nelems == 0);
    assert_int_equal(a->elems[10].kind, LIT_TRUE);
    assert_int_equal(a->elems[11].kind, LIT_FALSE);
    assert_int_equal(a->elems[12].kind, LIT_NIL);
    assert_true(a->elems[13].kind == LIT_SYMBOL && strcmp(a->elems[13].s, "a b") == 0);
}

static void symbols_of_every_form_lex_correctly(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ #foo -> #foo: -> #at:put: -> #+ -> #'hello world' "
                                   "-> #~= -> #primitive )");
    static const char *const want[] = {"foo", "foo:", "->", "at:put:", "+", "hello world", "~=",
                                       "primitive"};
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(sym(m, i), want[i]);
}

static void string_escapes_are_decoded(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ 'a\\tb\\\\c\\'d\\0e\\n\\r\\f\\b\nline' )");
    const Literal *s = &m->lits[0];
    assert_int_equal(s->kind, LIT_STRING);
    static const char want[] = "a\tb\\c'd\0e\n\r\f\b\nline";
    assert_int_equal(s->len, sizeof want - 1);
    assert_memory_equal(s->s, want, sizeof want - 1);
}

static void identical_literals_are_stored_once(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( self bar: 'x' baz: 'x'. self bar: 'x' baz: 42. "
                                   "self bar: #x baz: 42.5. self bar: #(1) baz: #(1). ^ 42.5 )");
    /* 'x' #bar:baz: 42 #x 42.5 #(1) #(1): arrays are mutable, so never shared */
    assert_int_equal(m->nlits, 7);
    assert_int_equal(m->lits[0].kind, LIT_STRING);
    assert_int_equal(m->lits[3].kind, LIT_SYMBOL);
    assert_int_equal(m->code[m->code_len - 2], 4);
}

static void too_many_literals_uses_wide_forms(void **state)
{
    (void)state;
    Buf b = {0};
    bprintf(&b, "T = ( foo = ( ");
    for (int i = 0; i < 300; i++)
        bprintf(&b, "self m%d. ", i);
    bprintf(&b, "self x: #s. G. super z. ^ [ 1 ] ) )");
    ClassDesc *c = compile_ok(b.s);
    free(b.s);
    MethodDesc *m = c->inst_methods[0];
    assert_int_equal(m->nlits, 305);
    /* self m255 is the last one-byte send */
    size_t pc = 255 * 5;
    assert_int_equal(m->code[pc + 1], BC_SEND);
    assert_int_equal(m->code[pc + 2], 255);
    pc += 5;
    assert_int_equal(m->code[pc + 1], BC_SEND_W);
    assert_int_equal(m->code[pc + 2], 0);
    assert_int_equal(m->code[pc + 3], 1);
    assert_int_equal(m->code[pc + 4], 0);
    /* literal 300 = #s, 301 = #x:, 302 = #G, 303 = #z, 304 = the block */
    const uint8_t tail[] = {BC_PUSH_SELF,     BC_PUSH_LITERAL_W, 44, 1, BC_SEND_W, 45, 1, 1, BC_POP,
                            BC_PUSH_GLOBAL_W, 46, 1, BC_POP, BC_PUSH_SELF, BC_SUPER_SEND_W, 47, 1, 0,
                            BC_POP, BC_PUSH_BLOCK_W, 48, 1, BC_RETURN_TOP};
    assert_true(m->code_len > sizeof tail);
    assert_memory_equal(m->code + m->code_len - sizeof tail, tail, sizeof tail);
    assert_string_equal(sym(m, 300), "s");
    assert_string_equal(sym(m, 301), "x:");
    assert_string_equal(sym(m, 302), "G");
    assert_int_equal(block_literal(m, 304)->nargs, 0);
}

static void more_literals_than_the_limit_is_an_error(void **state)
{
    (void)state;
    Buf b = {0};
    bprintf(&b, "T = ( foo = ( | t |\n");
    for (int i = 0; i <= VM_COMPILE_MAX_LITERALS; i++)
        bprintf(&b, "t := %d.\n", i + 2);
    bprintf(&b, ") )");
    CompileError e = compile_fails(b.s);
    free(b.s);
    assert_error(e, VM_COMPILE_MAX_LITERALS + 2, 6, "too many literals");
}

/* -- Lines and stack ------------------------------------------------------- */

static void line_table_maps_each_statement_to_its_line(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = (\n"
                              "  foo = (\n"
                              "    self a.\n"
                              "    self b.\n"
                              "\n"
                              "    ^ self\n"
                              "      c: 1\n"
                              "  )\n"
                              "  bar = ( self a\n"
                              "  )\n"
                              ")\n");
    MethodDesc *foo = method_named(c, "foo");
    assert_int_equal(foo->line, 2);
    /* the send is on the line of its keyword, the return on the line of '^' */
    assert_int_equal(foo->nlines, 5);
    static const LineEntry want[] = {{0, 3}, {5, 4}, {10, 6}, {11, 7}, {15, 6}};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(foo->lines[i].bcpc, want[i].bcpc);
        assert_int_equal(foo->lines[i].line, want[i].line);
    }
    /* The implicit return belongs to the closing parenthesis. */
    MethodDesc *bar = method_named(c, "bar");
    assert_int_equal(bar->nlines, 2);
    assert_int_equal(bar->lines[1].bcpc, 5);
    assert_int_equal(bar->lines[1].line, 10);
}

static void max_stack_is_exact_for_nested_sends(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ self a: 1 b: (self c: 2 d: [ :x | x + (x * x) ]) )");
    assert_int_equal(m->max_stack, 5);
    assert_int_equal(block_literal(m, 1)->max_stack, 3);
}

/* -- Class structure ------------------------------------------------------- */

static void separator_splits_instance_and_class_side(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( | i | a = ( ) ------------ | x y | b = ( ) c = primitive )");
    assert_string_equal(c->name, "T");
    assert_string_equal(c->super_name, "Object");
    assert_int_equal(c->ninst_methods, 1);
    assert_int_equal(c->nclass_methods, 2);
    assert_int_equal(c->nclass_fields, 2);
    assert_string_equal(c->class_fields[1], "y");
    assert_string_equal(c->class_methods[1]->selector, "c");
    assert_true(c->class_methods[1]->is_primitive);
}

static void bars_glued_to_operators_are_split(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( foo = ( ^ [:x || t | t := x ] ) bar = ( || ^ 1 ) "
                              "|| x = ( ^ [:y|-1] ) )");
    MethodDesc *b = block_literal(method_named(c, "foo"), 0);
    assert_int_equal(b->nargs, 1);
    assert_int_equal(b->ntemps, 1);
    ASSERT_CODE(method_named(c, "bar"), BC_PUSH_1, BC_RETURN_TOP);
    assert_int_equal(block_literal(method_named(c, "||"), 0)->lits[0].i, -1);
}

static void block_parameters_may_be_written_without_spaces(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo = ( ^ [:a:b:c| a ] )");
    MethodDesc *b = block_literal(m, 0);
    assert_int_equal(b->nargs, 3);
    assert_string_equal(b->var_names[2], "c");
}

/* -- Errors ---------------------------------------------------------------- */

static void unexpected_token_reports_expected_and_found(void **state)
{
    (void)state;
    assert_error(compile_fails("T = ( foo = ( ^ (1 + 2 ] ) )"), 1, 24, "expected ')' but found ']'");
    assert_error(compile_fails("T = (\n  foo = ( 1 2 )\n)"), 2, 13,
                 "expected '.' or ')' but found '2'");
    assert_error(compile_fails("T = ( foo = ( ^ 1. 2 ) )"), 1, 20,
                 "expected ')' after the return statement but found '2'");
    assert_error(compile_fails("T = ( foo = ( ) "), 1, 17, "expected ')' but found end of file");
    assert_error(compile_fails("T ( )"), 1, 3, "expected '=' but found '('");
    assert_error(compile_fails("T = ( ) extra"), 1, 9, "end of file");
    assert_error(compile_fails("T = ( foo = ( ^ ) )"), 1, 17, "expected an expression");
}

static void unterminated_string_reports_line_and_column(void **state)
{
    (void)state;
    assert_error(compile_fails("T = (\n  foo = ( ^ 'abc\n  )\n)"), 2, 13, "unterminated string");
}

static void unterminated_comment_reports_line_and_column(void **state)
{
    (void)state;
    assert_error(compile_fails("T = ( \"ok\"\n   \"never closed )"), 2, 4, "unterminated comment");
}

static void unknown_escape_is_an_error_at_the_backslash(void **state)
{
    (void)state;
    assert_error(compile_fails("T = (\n  run = (\n    '\\a' println ) )"), 3, 6,
                 "unknown escape sequence '\\a'");
}

static void arguments_are_assignable_as_in_som(void **state)
{
    (void)state;
    ClassDesc *c = compile_ok("T = ( dec: n = ( n := n - 1. ^ n ) "
                              "blk = ( ^ [ :y | y := 1 ] ) "
                              "loop = ( 1 to: 3 do: [ :i | i := 7 ] ) "
                              "bound: n = ( n := 5. 1 to: n do: [ :i | ] ) )");
    ASSERT_CODE(method_named(c, "dec:"), BC_PUSH_VAR, 0, BC_PUSH_1, BC_SEND_SUB, BC_POP_VAR, 0,
                BC_PUSH_VAR, 0, BC_RETURN_TOP);
    ASSERT_CODE(block_literal(method_named(c, "blk"), 0), BC_PUSH_1, BC_STORE_VAR, 0,
                BC_RETURN_TOP);
    /* An assigned loop parameter gets a fresh copy of the hidden counter in
     * every iteration, so the assignment cannot derail the loop. */
    MethodDesc *loop = method_named(c, "loop");
    ASSERT_CODE(loop, BC_PUSH_1, BC_POP_VAR, 0, BC_PUSH_VAR, 0, BC_PUSH_LITERAL, 0, BC_SEND_LE,
                BC_JUMP_IF_FALSE, 17, 0, BC_PUSH_VAR, 0, BC_POP_VAR, 1, BC_PUSH_LITERAL, 1,
                BC_POP_VAR, 1, BC_PUSH_VAR, 0, BC_PUSH_1, BC_SEND_ADD, BC_POP_VAR, 0, BC_JUMP_BACK,
                25, 0, BC_RETURN_SELF);
    assert_string_equal(loop->var_names[0], "$counter");
    assert_string_equal(loop->var_names[1], "i");
    /* An assigned argument is no longer a stable bound: it is copied. */
    MethodDesc *bound = method_named(c, "bound:");
    assert_int_equal(bound->ntemps, 2);
    assert_string_equal(bound->var_names[2], "$limit");
}

static void assignment_to_self_or_unknown_name_is_an_error(void **state)
{
    (void)state;
    assert_error(compile_fails("T = ( foo = ( self := 1 ) )"), 1, 15, "cannot assign to 'self'");
    assert_error(compile_fails("T = ( foo = ( super := 1 ) )"), 1, 15, "cannot assign to 'super'");
    assert_error(compile_fails("T = ( foo = ( nil := 1 ) )"), 1, 15, "cannot assign to 'nil'");
    assert_error(compile_fails("T = ( foo = ( Bar := 1 ) )"), 1, 15, "cannot assign to 'Bar'");
    assert_error(compile_fails("T = ( foo = ( unknown := '1' ) )"), 1, 15,
                 "cannot assign to 'unknown'");
}

static void duplicate_variable_names_are_an_error(void **state)
{
    (void)state;
    assert_error(compile_fails("T = (\n    m: arg1 m: arg1 = ( ) )"), 2, 16,
                 "variable 'arg1' is already declared in this method");
    assert_error(compile_fails("T = ( foo: t = ( | t | ) )"), 1, 20,
                 "variable 't' is already declared in this method");
    assert_error(compile_fails("T = ( foo = ( ^ [ :a :a | ] ) )"), 1, 23,
                 "variable 'a' is already declared in this block");
    assert_error(compile_fails("T = ( foo = ( | self | ) )"), 1, 17, "reserved name");
}

static void field_shadowing_inherited_field_is_an_error(void **state)
{
    (void)state;
    assert_error(compile_fails("T = Base ( | a | )"), 1, 14,
                 "field 'a' is already defined in a superclass");
    assert_error(compile_fails("T = Base ( ---- | cf | )"), 1, 19,
                 "field 'cf' is already defined in a superclass");
    assert_error(compile_fails("T = (\n    | a a |\n)"), 2, 9,
                 "field 'a' is already defined in this class");
}

static void missing_superclass_is_reported(void **state)
{
    (void)state;
    assert_error(compile_fails("T = Nope ( )"), 1, 5, "cannot find superclass 'Nope'");
}

static void more_than_255_variables_or_fields_is_an_error(void **state)
{
    (void)state;
    Buf b = {0};
    bprintf(&b, "T = ( foo = ( |");
    for (int i = 0; i < 256; i++)
        bprintf(&b, " t%d", i);
    bprintf(&b, " | ) )");
    CompileError e = compile_fails(b.s);
    assert_true(strstr(e.msg, "too many variables") != NULL);
    b.len = 0;
    bprintf(&b, "T = Base ( |");
    for (int i = 0; i < 254; i++)
        bprintf(&b, " f%d", i);
    bprintf(&b, " | )");
    e = compile_fails(b.s);
    assert_true(strstr(e.msg, "too many fields") != NULL);
    free(b.s);
    /* 253 own + 2 inherited is exactly the limit */
    b = (Buf){0};
    bprintf(&b, "T = Base ( |");
    for (int i = 0; i < 253; i++)
        bprintf(&b, " f%d", i);
    bprintf(&b, " | foo = ( ^ f252 ) )");
    ClassDesc *c = compile_ok(b.s);
    ASSERT_CODE(c->inst_methods[0], BC_PUSH_FIELD, 254, BC_RETURN_TOP);
    free(b.s);
}

static void deep_nesting_is_an_error_not_a_crash(void **state)
{
    (void)state;
    Buf b = {0};
    bprintf(&b, "T = ( foo = ( ^ ");
    for (int i = 0; i < 5000; i++)
        bprintf(&b, "(");
    bprintf(&b, "1");
    for (int i = 0; i < 5000; i++)
        bprintf(&b, ")");
    bprintf(&b, " ) )");
    assert_true(strstr(compile_fails(b.s).msg, "nested too deeply") != NULL);
    b.len = 0;
    bprintf(&b, "T = ( foo = ( ^ 1");
    for (int i = 0; i < 5000; i++)
        bprintf(&b, " + 1");
    bprintf(&b, " ) )");
    assert_true(strstr(compile_fails(b.s).msg, "nested too deeply") != NULL);
    b.len = 0;
    bprintf(&b, "T = ( foo = ( ^ ");
    for (int i = 0; i < 5000; i++)
        bprintf(&b, "#(");
    for (int i = 0; i < 5000; i++)
        bprintf(&b, ")");
    bprintf(&b, " ) )");
    assert_true(strstr(compile_fails(b.s).msg, "nested too deeply") != NULL);
    /* 900 levels are fine */
    b.len = 0;
    bprintf(&b, "T = ( foo = ( ^ 1");
    for (int i = 0; i < 900; i++)
        bprintf(&b, " + 1");
    bprintf(&b, " ) )");
    assert_int_equal(compile_ok(b.s)->inst_methods[0]->max_stack, 2);
    free(b.s);
}

static void jump_beyond_65535_bytes_is_an_error(void **state)
{
    (void)state;
    Buf b = {0};
    bprintf(&b, "T = ( foo: x = ( x ifTrue: [\n");
    for (int i = 0; i < 14000; i++)
        bprintf(&b, "self a.\n");
    bprintf(&b, "] ) )");
    CompileError e = compile_fails(b.s);
    free(b.s);
    assert_true(strstr(e.msg, "too large") != NULL);
    assert_int_equal(e.line, 1);
}

/* -- Disassembly ----------------------------------------------------------- */

static void disassembly_lists_mnemonics_literals_and_blocks(void **state)
{
    (void)state;
    MethodDesc *m = compile_method("foo: x = (\n  ^ x bar: 'hi' with: [ :y | y + 1.5 ]\n)");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    vm_disassemble_desc(out, m, 0);
    fclose(out);
    static const char *const want[] = {"method foo:", "vars: 0 x", "L3", "PUSH_VAR", "'hi'",
                                       "SEND", "#bar:with: 2", "PUSH_BLOCK", "block in foo:",
                                       "SEND_ADD", "1.5", "RETURN_TOP"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(text, want[i]))
            fail_msg("missing '%s' in:\n%s", want[i], text);
    free(text);
}

/* -- Whole libraries ------------------------------------------------------- */

/* Resolves superclasses by compiling their files: the subclass's own
 * directory first, then its parent and the parent's Core/, then the roots. */
typedef struct Known {
    char *name, *dir;
    char **inst, **cls; /* full field lists */
    size_t ninst, ncls;
    bool busy;
} Known;

typedef struct Library {
    char **roots;
    int nroots;
    Known *known;
    int nknown, cap;
} Library;

typedef struct ResolveCtx {
    Library *lib;
    const char *dir;
} ResolveCtx;

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    *len = fread(s, 1, (size_t)n, f);
    s[*len] = '\0';
    fclose(f);
    return s;
}

static bool lib_resolve(const char *super, bool class_side, const char *const **names,
                        size_t *count, void *ctx);

static char **concat_names(const char *const *a, size_t na, char **b, size_t nb, size_t *n)
{
    char **out = malloc((na + nb + 1) * sizeof(char *));
    for (size_t i = 0; i < na; i++)
        out[i] = strdup(a[i]);
    for (size_t i = 0; i < nb; i++)
        out[na + i] = strdup(b[i]);
    *n = na + nb;
    return out;
}

static Known *lib_load(Library *lib, const char *name, const char *dir)
{
    char *cands[3];
    int nc = 0;
    if (asprintf(&cands[nc++], "%s", dir) < 0 || asprintf(&cands[nc++], "%s/..", dir) < 0 ||
        asprintf(&cands[nc++], "%s/../Core", dir) < 0)
        abort();
    char *path = NULL;
    char *found_dir = NULL;
    struct stat st;
    for (int i = 0; i < nc + lib->nroots && !found_dir; i++) {
        const char *d = i < nc ? cands[i] : lib->roots[i - nc];
        free(path);
        if (asprintf(&path, "%s/%s.som", d, name) < 0)
            abort();
        if (stat(path, &st) == 0)
            found_dir = strdup(d);
    }
    for (int i = 0; i < nc; i++)
        free(cands[i]);
    if (!found_dir) {
        free(path);
        return NULL;
    }
    for (int i = 0; i < lib->nknown; i++)
        if (strcmp(lib->known[i].name, name) == 0 && strcmp(lib->known[i].dir, found_dir) == 0) {
            free(path);
            free(found_dir);
            return lib->known[i].busy ? NULL : &lib->known[i];
        }
    if (lib->nknown == lib->cap) {
        lib->cap = lib->cap ? lib->cap * 2 : 64;
        lib->known = realloc(lib->known, (size_t)lib->cap * sizeof(Known));
    }
    int idx = lib->nknown++;
    lib->known[idx] = (Known){.name = strdup(name), .dir = found_dir, .busy = true};
    size_t len = 0;
    char *src = read_file(path, &len);
    CompileError err;
    ResolveCtx rc = {lib, lib->known[idx].dir};
    ClassDesc *c = vm_compile_class(path, src, len, lib_resolve, &rc, &err);
    free(src);
    free(path);
    if (!c)
        return NULL;
    const char *const *inh;
    size_t ninh;
    rc.dir = lib->known[idx].dir;
    if (strcmp(c->super_name, "nil") == 0) {
        inh = NULL;
        ninh = 0;
    } else if (!lib_resolve(c->super_name, false, &inh, &ninh, &rc)) {
        vm_class_desc_free(c);
        return NULL;
    }
    Known *k = &lib->known[idx];
    k->inst = concat_names(inh, ninh, c->inst_fields, c->ninst_fields, &k->ninst);
    lib_resolve(c->super_name, true, &inh, &ninh, &rc);
    k = &lib->known[idx];
    k->cls = concat_names(inh, ninh, c->class_fields, c->nclass_fields, &k->ncls);
    k->busy = false;
    vm_class_desc_free(c);
    return k;
}

static bool lib_resolve(const char *super, bool class_side, const char *const **names,
                        size_t *count, void *ctx)
{
    ResolveCtx *rc = ctx;
    if (strcmp(super, "nil") == 0) {
        *names = hidden_slots;
        *count = class_side ? 7 : 0;
        return true;
    }
    Known *k = lib_load(rc->lib, super, rc->dir);
    if (!k)
        return false;
    *names = (const char *const *)(class_side ? k->cls : k->inst);
    *count = class_side ? k->ncls : k->ninst;
    return true;
}

static int compile_tree(Library *lib, const char *dir, int *nfiles)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int failures = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *path;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0)
            abort();
        struct stat st;
        size_t n = strlen(e->d_name);
        if (stat(path, &st) != 0 ||
            (!S_ISDIR(st.st_mode) && (n < 5 || strcmp(e->d_name + n - 4, ".som") != 0))) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            failures += compile_tree(lib, path, nfiles);
            free(path);
            continue;
        }
        size_t len = 0;
        char *src = read_file(path, &len);
        CompileError err;
        ResolveCtx rc = {lib, dir};
        ClassDesc *c = vm_compile_class(path, src, len, lib_resolve, &rc, &err);
        free(src);
        (*nfiles)++;
        if (!c) {
            fprintf(stderr, "%s:%d:%d: error: %s\n", err.file, err.line, err.col, err.msg);
            failures++;
        }
        vm_class_desc_free(c);
        free(path);
    }
    closedir(d);
    return failures;
}

static void free_library(Library *lib)
{
    for (int i = 0; i < lib->nknown; i++) {
        Known *k = &lib->known[i];
        for (size_t j = 0; j < k->ninst; j++)
            free(k->inst[j]);
        for (size_t j = 0; j < k->ncls; j++)
            free(k->cls[j]);
        free(k->inst);
        free(k->cls);
        free(k->name);
        free(k->dir);
    }
    free(lib->known);
    for (int i = 0; i < lib->nroots; i++)
        free(lib->roots[i]);
    free(lib->roots);
}

static void every_som_file_under_smalltalk_compiles(void **state)
{
    (void)state;
    Library lib = {0};
    lib.roots = malloc(64 * sizeof(char *));
    /* The class library is the fallback for every superclass lookup. */
    lib.roots[lib.nroots++] = strdup(STVM_SMALLTALK_DIR "/core");
    const char *extra = getenv("STVM_EXTRA_SOM_DIRS");
    char *copy = extra ? strdup(extra) : NULL;
    for (char *tok = copy ? strtok(copy, ":") : NULL; tok && lib.nroots < 64; tok = strtok(NULL, ":"))
        lib.roots[lib.nroots++] = strdup(tok);
    free(copy);
    int nfiles = 0, failures = compile_tree(&lib, STVM_SMALLTALK_DIR, &nfiles);
    for (int i = 1; i < lib.nroots; i++)
        failures += compile_tree(&lib, lib.roots[i], &nfiles);
    fprintf(stderr, "  compiled %d .som files, %d failed\n", nfiles, failures);
    free_library(&lib);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_teardown(name, free_compiled)
        T(bytecode_table_lengths_match_operands),
        T(keyword_send_compiles_to_send_with_nargs),
        T(unary_and_binary_sends_bind_by_precedence),
        T(special_selector_sends_use_one_byte_bytecodes),
        T(super_send_uses_super_send_even_for_special_selectors),
        T(globals_are_read_through_symbol_literals),
        T(cascades_are_not_part_of_som),
        T(send_with_more_than_255_arguments_is_an_error),
        T(if_true_with_literal_block_is_inlined_as_jump),
        T(if_true_with_non_block_argument_is_a_normal_send),
        T(if_true_if_false_in_value_position_leaves_one_value),
        T(and_or_are_inlined_with_short_circuit),
        T(while_true_loops_with_jump_back_and_answers_nil),
        T(to_do_evaluates_limit_once_and_uses_generic_compare),
        T(to_by_do_with_negative_literal_step_compares_with_ge),
        T(to_do_with_non_block_or_wrong_arity_is_a_normal_send),
        T(if_nil_family_answers_like_the_library),
        T(inlined_block_temps_are_reset_when_reused),
        T(outer_variable_read_uses_context_level),
        T(outer_variable_write_in_statement_uses_pop_outer),
        T(block_parameters_come_before_temps),
        T(chained_assignment_stores_each_variable),
        T(field_index_counts_inherited_fields),
        T(class_side_fields_follow_hidden_class_slots),
        T(locals_shadow_fields_and_inner_blocks_may_shadow),
        T(nonlocal_return_only_inside_real_blocks),
        T(method_without_return_answers_self),
        T(empty_block_answers_nil),
        T(primitive_method_has_no_code),
        T(large_integer_literal_becomes_bigint),
        T(negative_number_literals_and_binary_minus),
        T(literal_array_holds_nested_arrays_symbols_and_constants),
        T(symbols_of_every_form_lex_correctly),
        T(string_escapes_are_decoded),
        T(identical_literals_are_stored_once),
        T(too_many_literals_uses_wide_forms),
        T(more_literals_than_the_limit_is_an_error),
        T(line_table_maps_each_statement_to_its_line),
        T(max_stack_is_exact_for_nested_sends),
        T(separator_splits_instance_and_class_side),
        T(bars_glued_to_operators_are_split),
        T(block_parameters_may_be_written_without_spaces),
        T(unexpected_token_reports_expected_and_found),
        T(unterminated_string_reports_line_and_column),
        T(unterminated_comment_reports_line_and_column),
        T(unknown_escape_is_an_error_at_the_backslash),
        T(arguments_are_assignable_as_in_som),
        T(assignment_to_self_or_unknown_name_is_an_error),
        T(duplicate_variable_names_are_an_error),
        T(field_shadowing_inherited_field_is_an_error),
        T(missing_superclass_is_reported),
        T(more_than_255_variables_or_fields_is_an_error),
        T(deep_nesting_is_an_error_not_a_crash),
        T(jump_beyond_65535_bytes_is_an_error),
        T(disassembly_lists_mnemonics_literals_and_blocks),
        T(every_som_file_under_smalltalk_compiles),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
