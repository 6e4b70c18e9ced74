/*
 * tests/unit/jit/test_disasm.c — the decorated disassembler: a method built
 * by hand with the encoder (map entries, a literal site, a call out of the
 * piece, a branch inside it, a rip-relative header load) is printed and the
 * listing is checked line by line for its mnemonics and decorations, then a
 * method whose header contradicts its code is checked for the trailer.
 *
 * The pieces live in a static 16-aligned arena; nothing runs, so it need not
 * be executable. The "trampoline" the call reaches is another address in the
 * arena, outside the piece, so rel32 always reaches it.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vm/jit/disasm.h"
#include "vm/jit/map.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/x64.h"

#define ARENA_BYTES 4096
#define TRAMPOLINE_AT 2048 /* the fake send trampoline, well past the piece */
#define CODE_ROOM 512      /* most code a test method emits */
#define NIL_IMM 0x1028u    /* what the names callback calls nil */
#define METHOD_IMM 0x2000u /* the heap method the header holds */
#define OTHER_IMM 0x1234u  /* an immediate nobody names */

static _Alignas(JIT_METHOD_ALIGN) uint8_t arena[ARENA_BYTES];

/* -- Names ------------------------------------------------------------------------- */

typedef struct Seen {
    const JitMethod *m;
    int bytecode_calls;
    bool wrong_method; /* bytecode_text got another method than the one printed */
} Seen;

static const char *address_name(const void *addr, char *buf, size_t len, void *ctx)
{
    (void)ctx;
    const uint8_t *p = addr;
    if (p == arena + TRAMPOLINE_AT) return "ceSend";
    if (p > arena + TRAMPOLINE_AT && p < arena + ARENA_BYTES) {
        snprintf(buf, len, "ceSend+%td", p - (arena + TRAMPOLINE_AT));
        return buf;
    }
    return NULL;
}

static const char *bytecode_text(const JitMethod *m, uint32_t bcpc, char *buf, size_t len, void *ctx)
{
    Seen *seen = ctx;
    seen->bytecode_calls++;
    if (m != seen->m) seen->wrong_method = true;
    switch (bcpc) {
    case 3: return "send #foo: (1 arg)";
    case 5: snprintf(buf, len, "jump if false to %u", 9u); return buf;
    default: return NULL;
    }
}

static const char *immediate_name(uint64_t value, char *buf, size_t len, void *ctx)
{
    (void)ctx;
    (void)buf;
    (void)len;
    if (value == NIL_IMM) return "nil";
    if (value == METHOD_IMM) return "Foo>>#bar:";
    return NULL;
}

/* -- Building a piece ------------------------------------------------------------ */

typedef struct Built {
    JitMethod *m;
    uint32_t movabs_nil, call_end, jcc_end, ret, mov_mi; /* offsets from the header */
} Built;

/* Lays out code_bytes of code already emitted at m's code, the map and the
 * literal sites (offsets of immediates) after it, and fills the header. */
static void finish_piece(JitMethod *m, size_t code_bytes, JitMapBuilder *map, const uint32_t *lits,
                         uint32_t lit_count)
{
    assert_true(jit_map_builder_ok(map));
    JitMethodLayout l;
    assert_true(jit_method_layout(&l, code_bytes, jit_map_builder_bytes(map), jit_map_builder_count(map), lit_count));
    assert_true(l.size <= TRAMPOLINE_AT);
    jit_method_apply_layout(m, &l);
    m->size = l.size;
    m->kind = JIT_KIND_METHOD;
    m->nargs = 1;
    m->method = (Oop)METHOD_IMM;
    size_t n = jit_map_encode(map, jit_method_map_bytes(m), jit_map_builder_bytes(map));
    assert_int_equal(n, jit_map_builder_bytes(map));
    for (uint32_t i = 0; i < lit_count; i++) jit_method_set_lit_site(m, i, jit_method_at(m, lits[i]));
}

/*   push rbp; mov rbp, rsp               checked entry, map (48, bc 0, other)
 *   movabs rax, nil                      unchecked entry, literal site
 *   mov rax, [rip -> header.method]
 *   movabs rcx, 0x1234                   not a literal
 *   call ceSend                          map (return address, bc 3, send)
 *   test rax, rax; je done               map (past the je, bc 5, branch)
 *   jmp ceSend+16
 * done:
 *   mov qword [rax + 0x1000], 7          11 bytes: the hex column is cut
 *   mov rsp, rbp; pop rbp; ret
 *   .byte 0x06                           not an x86-64 instruction */
static Built build_method(void)
{
    memset(arena, 0, sizeof arena);
    Built b = { .m = (JitMethod *)arena };
    JitMethod *m = b.m;
    X64Buf buf;
    X64Label done = JIT_X64_LABEL("done");
    JitMapBuilder map;
    jit_map_builder_init(&map);
    jit_x64_buf_init(&buf, jit_method_code(m), CODE_ROOM);
#define HERE() jit_method_offset(m, buf.pc)

    jit_map_add(&map, HERE(), 0, JIT_MAP_OTHER);
    jit_x64_push_r(&buf, JIT_X64_RBP);
    jit_x64_mov_rr(&buf, JIT_X64_RBP, JIT_X64_RSP);
    b.movabs_nil = HERE();
    jit_x64_mov_ri64(&buf, JIT_X64_RAX, NIL_IMM);
    /* mov rax, [rip + disp32]: REX.W 8B /r with ModRM 05, disp from the end of its 7 bytes */
    int32_t disp = (int32_t)offsetof(JitMethod, method) - (int32_t)(HERE() + 7);
    uint8_t load[7] = { 0x48, 0x8b, 0x05 };
    memcpy(load + 3, &disp, sizeof disp);
    jit_x64_data(&buf, load, sizeof load);
    jit_x64_mov_ri64(&buf, JIT_X64_RCX, OTHER_IMM);
    jit_x64_call_rel32(&buf, arena + TRAMPOLINE_AT);
    b.call_end = HERE();
    jit_map_add(&map, b.call_end, 3, JIT_MAP_SEND);
    jit_x64_test_rr(&buf, JIT_X64_RAX, JIT_X64_RAX);
    jit_x64_jcc_label32(&buf, JIT_X64_CC_E, &done);
    b.jcc_end = HERE();
    jit_map_add(&map, b.jcc_end, 5, JIT_MAP_LOCAL);
    jit_x64_jmp_rel32(&buf, arena + TRAMPOLINE_AT + 16);
    jit_x64_label_bind(&buf, &done);
    b.mov_mi = HERE();
    jit_x64_mov_mi32(&buf, jit_x64_mem(JIT_X64_RAX, 0x1000), 7);
    jit_x64_mov_rr(&buf, JIT_X64_RSP, JIT_X64_RBP);
    jit_x64_pop_r(&buf, JIT_X64_RBP);
    b.ret = HERE();
    jit_x64_ret(&buf);
    jit_x64_data(&buf, (const uint8_t[]){ 0x06 }, 1);
#undef HERE

    const char *why = NULL;
    assert_true(jit_x64_finish(&buf, &why));
    uint32_t lit = b.movabs_nil + JIT_X64_MOVABS_IMM_OFFSET;
    finish_piece(m, jit_x64_size(&buf), &map, &lit, 1);
    jit_method_set_entries(m, jit_method_code(m), jit_method_at(m, b.movabs_nil));
    jit_map_builder_release(&map);
    return b;
}

/* -- Reading the listing --------------------------------------------------------- */

/* The listing of m as one malloc'd string. */
static char *listing(const JitMethod *m, const JitDisasmNames *names)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    char err[200] = "";
    bool ok = jit_disasm_print(out, m, names, err, sizeof err);
    assert_int_equal(fclose(out), 0);
    if (!ok) fail_msg("jit_disasm_print: %s", err);
    return text;
}

/* A copy of the first line of text containing needle; fails if none. */
static char *line_with(const char *text, const char *needle)
{
    const char *hit = strstr(text, needle);
    if (!hit) fail_msg("no line with \"%s\" in:\n%s", needle, text);
    const char *start = hit;
    while (start > text && start[-1] != '\n') start--;
    const char *end = strchr(hit, '\n');
    size_t n = end ? (size_t)(end - start) : strlen(start);
    char *line = malloc(n + 1);
    assert_non_null(line);
    memcpy(line, start, n);
    line[n] = '\0';
    return line;
}

/* The instruction line at offset off from the header ("+<off> "). */
static char *line_at(const char *text, uint32_t off)
{
    char needle[24];
    snprintf(needle, sizeof needle, " +%-5u ", (unsigned)off);
    return line_with(text, needle);
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle)) fail_msg("\"%s\" not in \"%s\"", needle, haystack);
}

static void assert_lacks(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle)) fail_msg("\"%s\" unexpectedly in \"%s\"", needle, haystack);
}

/* The decorations of a line: what follows its "  ; " ("" if none). */
static const char *decorations(const char *line)
{
    const char *semi = strstr(line, "  ; ");
    return semi ? semi + 4 : "";
}

static JitDisasmNames all_names(Seen *seen)
{
    return (JitDisasmNames){ .ctx = seen,
                             .address_name = address_name,
                             .bytecode_text = bytecode_text,
                             .immediate_name = immediate_name };
}

/* -- Tests -------------------------------------------------------------------------- */

static void the_header_line_gives_kind_sizes_and_method(void **state)
{
    (void)state;
    Built b = build_method();
    Seen seen = { .m = b.m };
    JitDisasmNames names = all_names(&seen);
    char *text = listing(b.m, &names);
    char *first = line_with(text, "method 0x");
    assert_true(strncmp(text, first, strlen(first)) == 0); /* the very first line */
    char want[160];
    snprintf(want, sizeof want, ": %u bytes, code +48..+%u (%u bytes), 3 map entries, 1 literal site, 1 arg, for Foo>>#bar:",
             (unsigned)b.m->size, (unsigned)b.m->map_offset, (unsigned)(b.m->map_offset - JIT_METHOD_CODE));
    assert_contains(first, want);
    free(first);
    free(text);
}

static void instructions_show_offsets_bytes_and_mnemonics(void **state)
{
    (void)state;
    Built b = build_method();
    Seen seen = { .m = b.m };
    JitDisasmNames names = all_names(&seen);
    char *text = listing(b.m, &names);

    char *push = line_at(text, JIT_METHOD_CODE);
    assert_contains(push, " 55 ");
    assert_contains(push, "push    rbp");
    char addr[32];
    snprintf(addr, sizeof addr, "0x%012" PRIxPTR " ", (uintptr_t)jit_method_code(b.m));
    assert_contains(push, addr);

    char *ret = line_at(text, b.ret);
    assert_contains(ret, " c3 ");
    assert_contains(ret, "ret");

    /* 11 bytes: ten shown, then the ellipsis */
    char *mov = line_at(text, b.mov_mi);
    assert_contains(mov, "48 c7 80 00 10 00 00 07 00 00 …");
    assert_contains(mov, "mov     qword ptr [rax + 0x1000], 7");

    char *data = line_with(text, ".byte");
    assert_contains(data, ".byte   0x06");
    free(push);
    free(ret);
    free(mov);
    free(data);
    free(text);
}

static void movabs_immediates_are_named_and_literal_sites_marked(void **state)
{
    (void)state;
    Built b = build_method();
    Seen seen = { .m = b.m };
    JitDisasmNames names = all_names(&seen);
    char *text = listing(b.m, &names);

    char *nil = line_at(text, b.movabs_nil);
    assert_contains(nil, "movabs  rax, 0x1028");
    assert_string_equal(decorations(nil), "nil; literal");

    char *other = line_with(text, "movabs  rcx, 0x1234");
    assert_string_equal(decorations(other), ""); /* unnamed and not in the table */
    free(nil);
    free(other);
    free(text);
}

static void calls_and_jumps_name_their_targets(void **state)
{
    (void)state;
    Built b = build_method();
    Seen seen = { .m = b.m };
    JitDisasmNames names = all_names(&seen);
    char *text = listing(b.m, &names);

    char *call = line_with(text, "call ");
    assert_string_equal(decorations(call), "ceSend; bc 3 send: send #foo: (1 arg)");

    char *je = line_with(text, "je ");
    char want[64];
    snprintf(want, sizeof want, "-> +%u; bc 5 local: jump if false to 9", (unsigned)b.mov_mi);
    assert_string_equal(decorations(je), want);

    char *jmp = line_with(text, "jmp ");
    assert_string_equal(decorations(jmp), "ceSend+16");

    char *load = line_with(text, "[rip");
    assert_contains(load, "mov     rax, qword ptr [rip - ");
    assert_string_equal(decorations(load), "header.method");
    free(call);
    free(je);
    free(jmp);
    free(load);
    free(text);
}

static void map_entries_sit_on_the_instruction_they_end_or_start(void **state)
{
    (void)state;
    Built b = build_method();
    Seen seen = { .m = b.m };
    JitDisasmNames names = all_names(&seen);
    char *text = listing(b.m, &names);

    /* (48, bc 0): the first instruction's start; bytecode_text knows nothing of bc 0 */
    char *push = line_at(text, JIT_METHOD_CODE);
    assert_string_equal(decorations(push), "bc 0 other");
    /* the send's entry is the call's end, not the test's start */
    char *test = line_at(text, b.call_end);
    assert_contains(test, "test    rax, rax");
    assert_lacks(test, "bc 3");
    assert_int_equal(seen.bytecode_calls, 3);
    assert_false(seen.wrong_method);
    assert_lacks(text, "\n;"); /* no trailer: the header and the code agree */
    free(push);
    free(test);
    free(text);
}

static void entry_points_get_their_own_lines(void **state)
{
    (void)state;
    Built b = build_method();
    char *text = listing(b.m, NULL);

    char *checked = line_with(text, "checked entry:");
    assert_string_equal(checked, "checked entry:");
    const char *after = strstr(text, "checked entry:\n") + strlen("checked entry:\n");
    char *push = line_at(text, JIT_METHOD_CODE);
    assert_true(strncmp(after, push, strlen(push)) == 0);

    const char *un = strstr(text, "unchecked entry:\n");
    assert_non_null(un);
    char *movabs = line_at(text, b.movabs_nil);
    assert_true(strncmp(un + strlen("unchecked entry:\n"), movabs, strlen(movabs)) == 0);
    free(checked);
    free(push);
    free(movabs);
    free(text);
}

static void without_callbacks_only_what_the_piece_knows_is_shown(void **state)
{
    (void)state;
    Built b = build_method();
    JitDisasmNames none = { 0 };
    char *text = listing(b.m, &none);
    char *nil = line_at(text, b.movabs_nil);
    assert_string_equal(decorations(nil), "literal");
    char *call = line_with(text, "call ");
    assert_string_equal(decorations(call), "bc 3 send");
    char *jmp = line_with(text, "jmp ");
    assert_string_equal(decorations(jmp), "");
    char *first = line_with(text, "method 0x");
    assert_lacks(first, "for ");
    assert_lacks(text, "ceSend");
    free(nil);
    free(call);
    free(jmp);
    free(first);
    free(text);
}

static void the_same_method_lists_the_same_way_twice(void **state)
{
    (void)state;
    Built b = build_method();
    Seen seen = { .m = b.m };
    JitDisasmNames names = all_names(&seen);
    char *one = listing(b.m, &names);
    char *two = listing(b.m, &names);
    assert_string_equal(one, two);
    free(one);
    free(two);
}

/*   movabs rax, 1; ret — with a map entry inside the movabs and one past the
 *   code, a literal site on the ret, and the unchecked entry mid-movabs. */
static void contradictions_are_reported_after_the_code(void **state)
{
    (void)state;
    memset(arena, 0, sizeof arena);
    JitMethod *m = (JitMethod *)arena;
    X64Buf buf;
    jit_x64_buf_init(&buf, jit_method_code(m), CODE_ROOM);
    jit_x64_mov_ri64(&buf, JIT_X64_RAX, 1);
    jit_x64_ret(&buf);
    assert_true(jit_x64_finish(&buf, NULL));
    JitMapBuilder map;
    jit_map_builder_init(&map);
    jit_map_add(&map, JIT_METHOD_CODE + 4, 1, JIT_MAP_OTHER);
    jit_map_add(&map, JIT_METHOD_CODE + 40, 2, JIT_MAP_SEND);
    uint32_t lit = JIT_METHOD_CODE + JIT_X64_MOVABS_SIZE; /* the ret */
    finish_piece(m, jit_x64_size(&buf), &map, &lit, 1);
    jit_map_builder_release(&map);
    jit_method_set_entries(m, jit_method_code(m), jit_method_code(m) + 2);

    char *text = listing(m, NULL);
    char *movabs = line_at(text, JIT_METHOD_CODE);
    assert_string_equal(decorations(movabs), "bc 1 other (at +52)");
    assert_contains(text, "\n; map entry bc 2 send at +88 is past the code\n");
    assert_contains(text, "\n; literal site 0 at +58 is not a movabs immediate\n");
    assert_contains(text, "\n; unchecked entry +50 is not at an instruction start\n");
    assert_lacks(text, "unchecked entry:");
    assert_lacks(text, "; checked entry");
    free(movabs);
    free(text);
}

static void a_header_with_impossible_offsets_is_not_disassembled(void **state)
{
    (void)state;
    Built b = build_method();
    b.m->map_offset = b.m->size + 16;
    char *text = listing(b.m, NULL);
    assert_contains(text, "is outside the code area");
    assert_lacks(text, "push");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_header_line_gives_kind_sizes_and_method),
        cmocka_unit_test(instructions_show_offsets_bytes_and_mnemonics),
        cmocka_unit_test(movabs_immediates_are_named_and_literal_sites_marked),
        cmocka_unit_test(calls_and_jumps_name_their_targets),
        cmocka_unit_test(map_entries_sit_on_the_instruction_they_end_or_start),
        cmocka_unit_test(entry_points_get_their_own_lines),
        cmocka_unit_test(without_callbacks_only_what_the_piece_knows_is_shown),
        cmocka_unit_test(the_same_method_lists_the_same_way_twice),
        cmocka_unit_test(contradictions_are_reported_after_the_code),
        cmocka_unit_test(a_header_with_impossible_offsets_is_not_disassembled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
