/*
 * vm/jit/disasm.c — decorated disassembly of one JitMethod through Capstone
 * (the listing is drawn in vm/jit/disasm.h).
 *
 * One pass over the code with cs_disasm_iter, the map read alongside it (both
 * are in mcpc order), each line assembled in a fixed buffer and written
 * whole. Nothing here writes to the piece.
 */
#include "vm/jit/disasm.h"

#include "vm/jit/capstone.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

/* One printed line; longer ones are cut (a callback's text can be long). */
#define LINE_BYTES 1024
/* Room for one callback's answer. */
#define NAME_BYTES 256
/* Visible width of the hex column: JIT_DISASM_MAX_HEX_BYTES as "xx " and " …". */
#define HEX_COLUMN (3 * JIT_DISASM_MAX_HEX_BYTES - 1 + 2)
/* Width the mnemonic and operands are padded to before the decorations: a
 * call or jump to a user-space address ("call    0x7f0000001800", 22) and
 * most register and memory forms fit, so decorations mostly line up; a
 * longer operand pushes its own line's decorations right. */
#define TEXT_COLUMN 32
#define MNEMONIC_COLUMN 7

/* -- Lines -------------------------------------------------------------------- */

typedef struct Line {
    char s[LINE_BYTES];
    size_t n; /* < LINE_BYTES; stops growing once the line is full */
} Line;

static void line_vput(Line *l, const char *fmt, va_list ap)
{
    if (l->n >= sizeof l->s - 1) return;
    int k = vsnprintf(l->s + l->n, sizeof l->s - l->n, fmt, ap);
    if (k > 0) l->n += (size_t)k < sizeof l->s - l->n ? (size_t)k : sizeof l->s - 1 - l->n;
}

static void __attribute__((format(printf, 2, 3))) line_put(Line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    line_vput(l, fmt, ap);
    va_end(ap);
}

/* Adds one decoration, "; "-separated from the ones before. */
static void __attribute__((format(printf, 2, 3))) deco_put(Line *d, const char *fmt, ...)
{
    if (d->n) line_put(d, "; ");
    va_list ap;
    va_start(ap, fmt);
    line_vput(d, fmt, ap);
    va_end(ap);
}

static void line_pad(Line *l, size_t from, size_t width)
{
    for (size_t used = l->n - from; used < width; used++) line_put(l, " ");
}

/* -- The listing's state ------------------------------------------------------ */

typedef struct Listing {
    FILE *out;
    const JitMethod *m;
    const JitDisasmNames *names; /* never NULL: an all-NULL table stands in */
    const JitCapstone *C;        /* Capstone, loaded on first use */
    csh cs;
    uint32_t code_end;           /* map_offset */
    const uint32_t *lits;        /* NULL when the table does not fit the piece */
    bool *lit_seen;              /* per literal site: matched a movabs immediate (NULL: not tracked) */
    JitMapIter map;
    JitMapEntry next;            /* the first map entry not yet shown */
    bool has_next;
    bool checked_seen, unchecked_seen;
} Listing;

static const char *const map_kind_names[] = {
    [JIT_MAP_SEND] = "send", [JIT_MAP_LOCAL] = "local", [JIT_MAP_BACKJUMP] = "backjump", [JIT_MAP_OTHER] = "other"
};
_Static_assert(sizeof map_kind_names / sizeof map_kind_names[0] == JIT_MAP_KIND_MASK + 1, "a name per map kind");

/* Header fields a rip-relative operand may read (prologues load `method`). */
static const struct {
    uint32_t offset, bytes;
    const char *name;
} header_fields[] = {
    { offsetof(JitMethod, size), sizeof(uint32_t), "size" },
    { offsetof(JitMethod, kind), sizeof(uint8_t), "kind" },
    { offsetof(JitMethod, nargs), sizeof(uint8_t), "nargs" },
    { offsetof(JitMethod, flags), sizeof(uint16_t), "flags" },
    { offsetof(JitMethod, method), sizeof(Oop), "method" },
    { offsetof(JitMethod, tick), sizeof(uint64_t), "tick" },
    { offsetof(JitMethod, checked_entry), sizeof(uint32_t), "checked_entry" },
    { offsetof(JitMethod, unchecked_entry), sizeof(uint32_t), "unchecked_entry" },
    { offsetof(JitMethod, map_offset), sizeof(uint32_t), "map_offset" },
    { offsetof(JitMethod, map_count), sizeof(uint32_t), "map_count" },
    { offsetof(JitMethod, lits_offset), sizeof(uint32_t), "lits_offset" },
    { offsetof(JitMethod, lit_count), sizeof(uint32_t), "lit_count" },
};

static const char *address_name(const Listing *L, uint64_t addr, char *buf)
{
    if (!L->names->address_name) return NULL;
    return L->names->address_name((const void *)(uintptr_t)addr, buf, NAME_BYTES, L->names->ctx);
}

static const char *immediate_name(const Listing *L, uint64_t value, char *buf)
{
    if (!L->names->immediate_name) return NULL;
    return L->names->immediate_name(value, buf, NAME_BYTES, L->names->ctx);
}

static bool in_piece(const Listing *L, uint64_t addr)
{
    return jit_method_contains(L->m, (const void *)(uintptr_t)addr);
}

static uint32_t offset_of(const Listing *L, uint64_t addr) { return (uint32_t)(addr - (uintptr_t)L->m); }

/* -- Decorations -------------------------------------------------------------- */

/* Map entries up to end, the instruction being [start, end). */
static void describe_map(Listing *L, uint32_t start, uint32_t end, Line *d)
{
    while (L->has_next && L->next.mcpc <= end) {
        JitMapEntry e = L->next;
        char buf[NAME_BYTES];
        int32_t scope = jit_method_inline_scope_at(L->m, e.mcpc);
        const char *text = NULL;
        if (scope >= 0) {
            text = L->names->inlined_text
                       ? L->names->inlined_text(L->m, (uint32_t)scope, e.bcpc, buf, sizeof buf, L->names->ctx)
                       : NULL;
            deco_put(d, "inlined (scope %" PRId32 ") bc %" PRIu32 " %s", scope, e.bcpc,
                     map_kind_names[e.kind & JIT_MAP_KIND_MASK]);
        } else {
            text = L->names->bytecode_text ? L->names->bytecode_text(L->m, e.bcpc, buf, sizeof buf, L->names->ctx)
                                           : NULL;
            deco_put(d, "bc %" PRIu32 " %s", e.bcpc, map_kind_names[e.kind & JIT_MAP_KIND_MASK]);
        }
        if (text) line_put(d, ": %s", text);
        if (e.mcpc != end && e.mcpc != start) line_put(d, " (at +%" PRIu32 ")", e.mcpc);
        L->has_next = jit_map_iter_next(&L->map, &L->next);
    }
}

/* Where a call, jmp or jcc with an immediate target goes. */
static void describe_target(const Listing *L, const cs_insn *insn, Line *d)
{
    const cs_x86 *x = &insn->detail->x86;
    if (!L->C->insn_group(L->cs, insn, CS_GRP_CALL) && !L->C->insn_group(L->cs, insn, CS_GRP_JUMP)) return;
    if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM) return;
    uint64_t target = (uint64_t)x->operands[0].imm;
    char buf[NAME_BYTES];
    if (in_piece(L, target)) {
        deco_put(d, "-> +%" PRIu32, offset_of(L, target));
    } else {
        const char *name = address_name(L, target, buf);
        if (name) deco_put(d, "%s", name);
    }
}

/* What a rip-relative operand reads: a header field, a place in the piece,
 * or something named outside it. */
static void describe_rip(const Listing *L, const cs_insn *insn, Line *d)
{
    const cs_x86 *x = &insn->detail->x86;
    for (uint8_t i = 0; i < x->op_count; i++) {
        if (x->operands[i].type != X86_OP_MEM || x->operands[i].mem.base != X86_REG_RIP) continue;
        uint64_t addr = insn->address + insn->size + (uint64_t)x->operands[i].mem.disp;
        if (!in_piece(L, addr)) {
            char buf[NAME_BYTES];
            const char *name = address_name(L, addr, buf);
            if (name) deco_put(d, "%s", name);
            continue;
        }
        uint32_t off = offset_of(L, addr);
        if (off >= JIT_METHOD_CODE) {
            deco_put(d, "-> +%" PRIu32, off);
            continue;
        }
        for (size_t f = 0; f < sizeof header_fields / sizeof header_fields[0]; f++) {
            uint32_t at = header_fields[f].offset;
            if (off < at || off >= at + header_fields[f].bytes) continue;
            if (off == at)
                deco_put(d, "header.%s", header_fields[f].name);
            else
                deco_put(d, "header.%s+%" PRIu32, header_fields[f].name, off - at);
        }
    }
}

/* The 8-byte immediate of a movabs: its name and whether the GC visits it. */
static void describe_imm64(const Listing *L, const cs_insn *insn, uint32_t start, Line *d)
{
    const cs_x86 *x = &insn->detail->x86;
    if (x->encoding.imm_size != 8) return;
    for (uint8_t i = 0; i < x->op_count; i++) {
        if (x->operands[i].type != X86_OP_IMM) continue;
        char buf[NAME_BYTES];
        const char *name = immediate_name(L, (uint64_t)x->operands[i].imm, buf);
        if (name) deco_put(d, "%s", name);
    }
    if (!L->lits) return;
    uint32_t imm = start + x->encoding.imm_offset;
    for (uint32_t i = 0; i < L->m->lit_count; i++) {
        if (L->lits[i] != imm) continue;
        deco_put(d, "literal");
        if (L->lit_seen) L->lit_seen[i] = true;
    }
}

/* -- Lines of the listing ----------------------------------------------------- */

static void print_entries(Listing *L, uint32_t off)
{
    if (off == L->m->checked_entry) {
        fputs("checked entry:\n", L->out);
        L->checked_seen = true;
    }
    if (off == L->m->unchecked_entry) {
        fputs("unchecked entry:\n", L->out);
        L->unchecked_seen = true;
    }
}

/* Address, offset and hex bytes: the part every instruction line shares. */
static void put_location(Line *l, const uint8_t *code, size_t n, uint32_t off)
{
    line_put(l, "  0x%012" PRIxPTR " +%-5" PRIu32 " ", (uintptr_t)code, off);
    size_t from = l->n, shown = n < JIT_DISASM_MAX_HEX_BYTES ? n : JIT_DISASM_MAX_HEX_BYTES;
    for (size_t i = 0; i < shown; i++) line_put(l, i ? " %02x" : "%02x", code[i]);
    size_t visible = l->n - from;
    if (n > shown) {
        line_put(l, " …");
        visible += 2;
    }
    for (; visible < HEX_COLUMN; visible++) line_put(l, " ");
    line_put(l, "    ");
}

static void print_line(const Listing *L, Line *l, size_t text_from, const Line *d)
{
    if (d->n) {
        line_pad(l, text_from, TEXT_COLUMN);
        line_put(l, "  ; %s", d->s);
    }
    while (l->n && l->s[l->n - 1] == ' ') l->n--;
    l->s[l->n] = '\0';
    fprintf(L->out, "%s\n", l->s);
}

static void print_insn(Listing *L, const cs_insn *insn)
{
    uint32_t start = offset_of(L, insn->address), end = start + insn->size;
    Line l = { .n = 0 }, d = { .n = 0 };
    print_entries(L, start);
    put_location(&l, jit_method_at(L->m, start), insn->size, start);
    size_t text_from = l.n;
    if (insn->op_str[0])
        line_put(&l, "%-*s %s", MNEMONIC_COLUMN, insn->mnemonic, insn->op_str);
    else
        line_put(&l, "%s", insn->mnemonic);
    describe_imm64(L, insn, start, &d);
    describe_target(L, insn, &d);
    describe_rip(L, insn, &d);
    describe_map(L, start, end, &d);
    print_line(L, &l, text_from, &d);
}

/* A byte Capstone cannot decode (data in the code, a broken template). */
static void print_byte(Listing *L, uint32_t off)
{
    Line l = { .n = 0 }, d = { .n = 0 };
    print_entries(L, off);
    put_location(&l, jit_method_at(L->m, off), 1, off);
    size_t text_from = l.n;
    line_put(&l, "%-*s 0x%02x", MNEMONIC_COLUMN, ".byte", *jit_method_at(L->m, off));
    describe_map(L, off, off + 1, &d);
    print_line(L, &l, text_from, &d);
}

static void print_header(const Listing *L)
{
    const JitMethod *m = L->m;
    Line l = { .n = 0 };
    line_put(&l, "%s 0x%012" PRIxPTR ": %" PRIu32 " bytes, code +%u..+%" PRIu32 " (%" PRIu32 " bytes)",
             jit_method_kind_name((JitMethodKind)m->kind), (uintptr_t)m, m->size, (unsigned)JIT_METHOD_CODE,
             m->map_offset, m->map_offset >= JIT_METHOD_CODE ? m->map_offset - JIT_METHOD_CODE : 0);
    line_put(&l, ", %" PRIu32 " map %s, %" PRIu32 " literal site%s, %u arg%s", m->map_count,
             m->map_count == 1 ? "entry" : "entries", m->lit_count, m->lit_count == 1 ? "" : "s", m->nargs,
             m->nargs == 1 ? "" : "s");
    char buf[NAME_BYTES];
    const char *name = m->method ? immediate_name(L, (uint64_t)m->method, buf) : NULL;
    if (name) line_put(&l, ", for %s", name);
    fprintf(L->out, "%s\n", l.s);
}

/* What the code contradicts, after the last instruction. */
static void print_trailer(Listing *L)
{
    for (; L->has_next; L->has_next = jit_map_iter_next(&L->map, &L->next))
        fprintf(L->out, "; map entry bc %" PRIu32 " %s at +%" PRIu32 " is past the code\n", L->next.bcpc,
                map_kind_names[L->next.kind & JIT_MAP_KIND_MASK], L->next.mcpc);
    for (uint32_t i = 0; L->lit_seen && i < L->m->lit_count; i++)
        if (!L->lit_seen[i])
            fprintf(L->out, "; literal site %" PRIu32 " at +%" PRIu32 " is not a movabs immediate\n", i, L->lits[i]);
    if (!L->checked_seen)
        fprintf(L->out, "; checked entry +%" PRIu32 " is not at an instruction start\n", L->m->checked_entry);
    if (!L->unchecked_seen)
        fprintf(L->out, "; unchecked entry +%" PRIu32 " is not at an instruction start\n", L->m->unchecked_entry);
}

/* -- The listing ---------------------------------------------------------------- */

static bool open_capstone(Listing *L, char *err, size_t errlen)
{
    if (!(L->C = jit_capstone_get(err, errlen))) return false;
    cs_err e = L->C->open(CS_ARCH_X86, CS_MODE_64, &L->cs);
    if (e == CS_ERR_OK) {
        e = L->C->option(L->cs, CS_OPT_DETAIL, CS_OPT_ON);
        if (e == CS_ERR_OK) return true;
        L->C->close(&L->cs);
    }
    if (err && errlen) snprintf(err, errlen, "capstone: cannot open an x86-64 disassembler: %s", L->C->strerror(e));
    return false;
}

bool jit_disasm_print(FILE *out, const JitMethod *m, const JitDisasmNames *names, char *err, size_t errlen)
{
    static const JitDisasmNames no_names = { 0 };
    Listing L = { .out = out, .m = m, .names = names ? names : &no_names };
    if (!open_capstone(&L, err, errlen)) return false;
    cs_insn *insn = L.C->malloc(L.cs);
    if (!insn) {
        if (err && errlen) snprintf(err, errlen, "capstone: out of memory for an instruction");
        L.C->close(&L.cs);
        return false;
    }

    print_header(&L);
    if (m->map_offset < JIT_METHOD_CODE || m->map_offset > m->size) {
        fprintf(out, "; map offset +%" PRIu32 " is outside the code area +%u..+%" PRIu32 ": not disassembled\n",
                m->map_offset, (unsigned)JIT_METHOD_CODE, m->size);
        L.C->free(insn, 1);
        L.C->close(&L.cs);
        return true;
    }
    L.code_end = m->map_offset;
    uint64_t lits_end = (uint64_t)m->lits_offset + (uint64_t)m->lit_count * sizeof(uint32_t);
    if (m->lit_count && (m->lits_offset < m->map_offset || m->lits_offset % JIT_METHOD_LIT_ALIGN || lits_end > m->size)) {
        fprintf(out, "; literal table +%" PRIu32 "..+%" PRIu64 " is outside the piece: ignored\n", m->lits_offset,
                lits_end);
    } else if (m->lit_count) {
        L.lits = jit_method_lits(m);
        L.lit_seen = calloc(m->lit_count, sizeof *L.lit_seen); /* NULL: the trailer skips its check */
    }
    jit_map_iter_init(&L.map, jit_method_map(m));
    L.has_next = jit_map_iter_next(&L.map, &L.next);

    const uint8_t *code = jit_method_code(m);
    size_t left = L.code_end - JIT_METHOD_CODE;
    uint64_t addr = (uintptr_t)code;
    while (left) {
        if (L.C->disasm_iter(L.cs, &code, &left, &addr, insn)) {
            print_insn(&L, insn);
        } else {
            print_byte(&L, jit_method_offset(m, code));
            code++;
            left--;
            addr++;
        }
    }
    print_trailer(&L);

    free(L.lit_seen);
    L.C->free(insn, 1);
    L.C->close(&L.cs);
    return true;
}
