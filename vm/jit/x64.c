/*
 * jit/x64.c — the x86-64 encoder (see x64.h for the contract).
 *
 * Every instruction is assembled into an Ins on the stack by one of three
 * operand encoders — form_rr (ModRM mod=11), form_mem (any memory operand)
 * and form_o (register in the opcode's low bits) — plus its immediate, then
 * copied into the buffer whole by emit(). Prefix order is the manual's:
 * mandatory prefix (66/F2), REX, opcode, ModRM, SIB, displacement, immediate.
 */
#include "vm/jit/x64.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- Encoding primitives ---------------------------------------------------- */

typedef struct Ins {
    uint8_t b[JIT_X64_MAX_INSN_BYTES];
    unsigned n;
    const char *bad; /* why this instruction cannot be encoded; NULL if it can */
} Ins;

enum {
    REXW = 1,   /* 64-bit operand size */
    BYTE_R = 2, /* ModRM.reg is an 8-bit register: SPL/BPL/SIL/DIL exist only with a REX */
    BYTE_B = 4, /* ModRM.rm is an 8-bit register (mod = 11) */
};

static void fail(Ins *in, const char *why)
{
    if (!in->bad) in->bad = why;
}

static void put8(Ins *in, unsigned v)
{
    if (in->n < sizeof in->b)
        in->b[in->n++] = (uint8_t)v;
    else
        fail(in, "instruction longer than 15 bytes");
}

static void put32(Ins *in, uint32_t v)
{
    for (int i = 0; i < 4; i++) put8(in, (v >> (8 * i)) & 0xff);
}

static void put64(Ins *in, uint64_t v)
{
    for (int i = 0; i < 8; i++) put8(in, (unsigned)(v >> (8 * i)) & 0xff);
}

static void put_imm(Ins *in, int bytes, int64_t imm)
{
    if (bytes == 1) put8(in, (uint8_t)imm);
    else if (bytes == 4) put32(in, (uint32_t)imm);
}

static bool fits8(int64_t v) { return v >= INT8_MIN && v <= INT8_MAX; }
static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* REX = 0100WRXB: W = 64-bit operand, R/X/B = bit 3 of ModRM.reg, SIB.index, ModRM.rm or SIB.base. */
static uint8_t rex(unsigned w, unsigned r, unsigned x, unsigned b)
{
    return (uint8_t)(0x40 | w << 3 | r << 2 | x << 1 | b);
}

static uint8_t modrm(unsigned mod, unsigned reg, unsigned rm)
{
    return (uint8_t)(mod << 6 | (reg & 7) << 3 | (rm & 7));
}

/* scale is the ss field: log2 of the factor. */
static uint8_t sib(unsigned scale, unsigned index, unsigned base)
{
    return (uint8_t)(scale << 6 | (index & 7) << 3 | (base & 7));
}

static bool is_byte_reg_needing_rex(unsigned r) { return r >= 4 && r <= 7; }

/* Prefix, REX (only when one of its bits is needed or force_rex), opcode. r, x
 * and b are the full numbers of what lands in ModRM.reg, SIB.index and
 * ModRM.rm / SIB.base / the opcode's low bits; digits (/0../7) never need REX.R. */
static void head(Ins *in, uint8_t prefix, unsigned flags, uint32_t opcode, unsigned r, unsigned x,
                 unsigned b, bool force_rex)
{
    if (r > 15 || x > 15 || b > 15) fail(in, "register out of range");
    if (prefix) put8(in, prefix);
    unsigned w = (flags & REXW) ? 1 : 0;
    if (w || r > 7 || x > 7 || b > 7 || force_rex) put8(in, rex(w, (r >> 3) & 1, (x >> 3) & 1, (b >> 3) & 1));
    if (opcode > 0xffff) put8(in, opcode >> 16);
    if (opcode > 0xff) put8(in, (opcode >> 8) & 0xff);
    put8(in, opcode & 0xff);
}

/* Register operands: ModRM mod = 11. */
static void form_rr(Ins *in, uint8_t prefix, unsigned flags, uint32_t opcode, unsigned reg, unsigned rm)
{
    bool force = ((flags & BYTE_R) && is_byte_reg_needing_rex(reg)) ||
                 ((flags & BYTE_B) && is_byte_reg_needing_rex(rm));
    head(in, prefix, flags, opcode, reg, 0, rm, force);
    put8(in, modrm(3, reg, rm));
}

/* The memory operand [base + index*scale + disp], for every form that has one.
 *   - rm = 100 means "a SIB byte follows", so RSP and R12 (low bits 100) can be
 *     a base only through a SIB whose index is 100 ("none"; REX.X = 0).
 *   - mod = 00 with rm or SIB base 101 means RIP-relative or "no base", so RBP
 *     and R13 (low bits 101) always carry a displacement, a zero disp8 at least.
 *   - disp8 when the displacement fits, disp32 otherwise. */
static void form_mem(Ins *in, uint8_t prefix, unsigned flags, uint32_t opcode, unsigned reg, X64Mem m)
{
    unsigned base = (unsigned)m.base;
    bool has_index = m.index != JIT_X64_NOREG;
    unsigned index = has_index ? (unsigned)m.index : 0;
    unsigned ss = m.scale == 1 ? 0 : m.scale == 2 ? 1 : m.scale == 4 ? 2 : 3;
    if (base > 15) fail(in, "memory operand without a base register");
    if (has_index && index == JIT_X64_RSP) fail(in, "RSP cannot be an index register");
    if (has_index && index > 15) fail(in, "register out of range");
    if (m.scale != 1 && m.scale != 2 && m.scale != 4 && m.scale != 8) fail(in, "scale must be 1, 2, 4 or 8");

    bool force = (flags & BYTE_R) && is_byte_reg_needing_rex(reg);
    head(in, prefix, flags, opcode, reg, index, base, force);
    unsigned mod = (m.disp == 0 && (base & 7) != 5) ? 0 : fits8(m.disp) ? 1 : 2;
    if (has_index || (base & 7) == 4) {
        put8(in, modrm(mod, reg, 4));
        put8(in, sib(ss, has_index ? index : 4, base));
    } else {
        put8(in, modrm(mod, reg, base));
    }
    if (mod == 1) put8(in, (uint8_t)m.disp);
    else if (mod == 2) put32(in, (uint32_t)m.disp);
}

/* The register is the opcode's low three bits (B8+rd, 50+rd); REX.B extends it. */
static void form_o(Ins *in, unsigned flags, uint8_t opcode, unsigned reg)
{
    head(in, 0, flags, (uint8_t)(opcode + (reg & 7)), 0, 0, reg, false);
}

/* -- The buffer ---------------------------------------------------------------- */

static size_t offset(const X64Buf *b) { return (size_t)(b->pc - b->start); }

static void note_error(X64Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_error(X64Buf *b, const char *fmt, ...)
{
    if (b->error) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->message, sizeof b->message, fmt, ap);
    va_end(ap);
    b->error = b->message;
}

/* Reserve n bytes: false (and overflow, for good) when they do not fit. */
static bool room(X64Buf *b, size_t n)
{
    if (b->overflow || (size_t)(b->end - b->pc) < n) {
        b->overflow = true;
        return false;
    }
    return true;
}

static void settle(X64Buf *b);

/* Copy a finished instruction in; false if it was not written. */
static bool emit(X64Buf *b, const Ins *in)
{
    settle(b);
    if (in->bad) {
        note_error(b, "x64: %s (at code offset %zu)", in->bad, offset(b));
        return false;
    }
    if (!room(b, in->n)) return false;
    memcpy(b->pc, in->b, in->n);
    b->pc += in->n;
    b->after_jump = false;
    return true;
}

void jit_x64_buf_init(X64Buf *b, void *mem, size_t size)
{
    memset(b, 0, sizeof *b);
    b->cold = -1;
    b->start = b->pc = mem;
    /* labels store offsets in int32 fields; a larger buffer is refused, not truncated */
    if (size > INT32_MAX) {
        b->end = b->start;
        note_error(b, "x64: code buffer of %zu bytes is larger than 2 GiB", size);
    } else {
        b->end = b->start + size;
    }
}

size_t jit_x64_size(X64Buf *b)
{
    settle(b); /* an offset taken after the jump must stay true */
    return offset(b);
}

void jit_x64_buf_release(X64Buf *b)
{
    free(b->fixups);
    b->fixups = NULL;
    b->nfixups = b->fixups_cap = 0;
}

bool jit_x64_finish(X64Buf *b, const char **why)
{
    bool ok = false;
    settle(b);
    if (b->in_cold) note_error(b, "x64: the cold section was begun and not ended");
    if (b->error) {
        /* the message was written when the error happened */
    } else if (b->overflow) {
        snprintf(b->message, sizeof b->message, "x64: code buffer overflow: %zu bytes are not enough",
                 (size_t)(b->end - b->start));
    } else if (b->unresolved) {
        int n = 0;
        for (X64Label *l = b->unresolved; l; l = l->next) n++;
        snprintf(b->message, sizeof b->message, "x64: label '%s' is referenced but never bound (%d such label%s)",
                 b->unresolved->name ? b->unresolved->name : "(unnamed)", n, n == 1 ? "" : "s");
    } else {
        b->message[0] = '\0';
        ok = true;
    }
    if (why) *why = ok ? NULL : b->message;
    return ok;
}

void jit_x64_data(X64Buf *b, const void *bytes, size_t n)
{
    settle(b);
    if (!room(b, n)) return;
    memcpy(b->pc, bytes, n);
    b->pc += n;
    b->after_jump = false;
}

/* -- Labels --------------------------------------------------------------------- */

static int32_t load32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static void store32(uint8_t *p, int32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)((uint32_t)v >> (8 * i));
}

void jit_x64_label_init(X64Label *l, const char *name) { *l = JIT_X64_LABEL(name); }

bool jit_x64_label_is_bound(const X64Label *l) { return l->pos >= 0; }

uint8_t *jit_x64_label_address(const X64Buf *b, const X64Label *l)
{
    return l->pos >= 0 ? b->start + l->pos : NULL;
}

/* Whether offset off is in the cold section. */
static bool cold_at(const X64Buf *b, int64_t off) { return b->cold >= 0 && off >= b->cold; }

/* The join must change the rel32 field that ends at offset site. */
static void note_fixup(X64Buf *b, int64_t site)
{
    if (b->nfixups == b->fixups_cap) {
        uint32_t cap = b->fixups_cap ? 2 * b->fixups_cap : 64;
        uint32_t *n = realloc(b->fixups, cap * sizeof *n);
        if (!n) {
            note_error(b, "x64: out of memory for the cold section's fixups");
            return;
        }
        b->fixups = n;
        b->fixups_cap = cap;
    }
    b->fixups[b->nfixups++] = (uint32_t)site;
}

void jit_x64_label_bind(X64Buf *b, X64Label *l)
{
    if (b->pending == l) b->pending = NULL; /* a jump to here: dropped */
    else settle(b);
    b->after_jump = false; /* jumps arrive here: cold code here would leave them stranded */
    if (l->pos >= 0) {
        note_error(b, "x64: label '%s' bound twice", l->name ? l->name : "(unnamed)");
        return;
    }
    l->pos = (int32_t)offset(b);
    if (l->chain < 0) return;
    for (int32_t site = l->chain; site >= 0;) {
        uint8_t *field = b->start + site - JIT_X64_REL32_BYTES;
        int32_t next = load32(field);
        store32(field, l->pos - site);
        if (cold_at(b, site) != cold_at(b, l->pos)) note_fixup(b, site);
        site = next;
    }
    l->chain = -1;
    if (l->prev) l->prev->next = l->next;
    else b->unresolved = l->next;
    if (l->next) l->next->prev = l->prev;
    l->prev = l->next = NULL;
}

/* Finish an instruction whose last field is a rel32 to `label`: the
 * displacement if it is bound, else a link in its chain of references. */
static void rel32_to_label(X64Buf *b, Ins *in, X64Label *l)
{
    settle(b);
    int64_t end = (int64_t)offset(b) + in->n + JIT_X64_REL32_BYTES;
    if (l->pos >= 0) {
        put32(in, (uint32_t)(l->pos - end));
        if (emit(b, in) && cold_at(b, end) != cold_at(b, l->pos)) note_fixup(b, end);
        return;
    }
    put32(in, (uint32_t)l->chain);
    if (!emit(b, in)) return;
    bool was_listed = l->chain >= 0;
    l->chain = (int32_t)end;
    if (!was_listed) {
        l->prev = NULL;
        l->next = b->unresolved;
        if (b->unresolved) b->unresolved->prev = l;
        b->unresolved = l;
    }
}

/* Finish an instruction whose last field is a displacement of `bytes` to an address. */
static void rel_to(X64Buf *b, Ins *in, const void *target, int bytes)
{
    settle(b);
    uintptr_t end = (uintptr_t)b->pc + in->n + (unsigned)bytes;
    int64_t d = (int64_t)((uintptr_t)target - end);
    if (bytes == 1 && !fits8(d)) fail(in, "rel8 target out of range");
    if (bytes == 4 && !fits32(d)) fail(in, "rel32 target out of range");
    /* the cold code moves at the join; an address outside it does not */
    bool moves_along = b->in_cold && (const uint8_t *)target >= b->start + b->cold &&
                       (const uint8_t *)target <= b->end;
    if (bytes == 1 && b->in_cold && !moves_along) fail(in, "rel8 from the cold section to code that stays");
    put_imm(in, bytes, d);
    if (emit(b, in) && bytes == 4 && b->in_cold && !moves_along)
        note_fixup(b, (int64_t)(end - (uintptr_t)b->start));
}

/* -- The cold section and forward jumps ------------------------------------------------ */

static void settle(X64Buf *b)
{
    X64Label *l = b->pending;
    if (!l) return;
    b->pending = NULL;
    jit_x64_jmp_label32(b, l);
}

void jit_x64_jmp_forward(X64Buf *b, X64Label *l)
{
    settle(b);
    if (l->pos >= 0) jit_x64_jmp_label32(b, l);
    else b->pending = l;
}

void jit_x64_cold_init(X64Buf *b, size_t at)
{
    if (b->cold >= 0 || offset(b) > at || (size_t)(b->end - b->start) < at) {
        note_error(b, "x64: the cold section cannot start at offset %zu", at);
        return;
    }
    b->cold = (int32_t)at;
    b->away_pc = b->start + at;
    b->away_end = b->end;
    b->end = b->start + at; /* the main code's bound */
}

static void swap_sections(X64Buf *b)
{
    uint8_t *pc = b->pc, *end = b->end;
    X64Label *pending = b->pending;
    bool after_jump = b->after_jump;
    b->pc = b->away_pc, b->end = b->away_end, b->pending = b->away_pending, b->after_jump = b->away_after_jump;
    b->away_pc = pc, b->away_end = end, b->away_pending = pending, b->away_after_jump = after_jump;
    b->in_cold = !b->in_cold;
}

void jit_x64_cold_begin(X64Buf *b)
{
    if (b->cold_depth >= 32) {
        note_error(b, "x64: cold code nested too deep");
        return;
    }
    int level = b->cold_depth++;
    /* cold code inside cold code stays where it is, and so does cold code
     * that the main code falls into (a send with no fast path before it) */
    if (b->cold < 0 || b->in_cold || !(b->pending || b->after_jump)) return;
    b->swapped |= 1u << level;
    swap_sections(b); /* the main code's pending jump waits for the merge after the cold code */
}

void jit_x64_cold_end(X64Buf *b)
{
    if (b->cold_depth <= 0) {
        note_error(b, "x64: the cold section ended and not begun");
        return;
    }
    uint32_t bit = 1u << --b->cold_depth;
    if (!(b->swapped & bit)) return;
    b->swapped &= ~bit;
    settle(b); /* its jump back is emitted: the merge is bound in the main code */
    swap_sections(b);
}

bool jit_x64_in_cold(const X64Buf *b) { return b->in_cold; }

bool jit_x64_cold_ending(const X64Buf *b)
{
    return b->cold_depth > 0 && (b->swapped & (1u << (b->cold_depth - 1)));
}

size_t jit_x64_here(const X64Buf *b) { return offset(b); }

size_t jit_x64_cold_join(X64Buf *b)
{
    settle(b);
    if (b->cold < 0) return 0;
    if (b->in_cold) {
        note_error(b, "x64: the cold section joined while being emitted into");
        return 0;
    }
    int64_t main_end = (int64_t)offset(b), delta = (int64_t)b->cold - main_end;
    size_t len = (size_t)(b->away_pc - (b->start + b->cold));
    for (uint32_t i = 0; i < b->nfixups; i++) {
        uint8_t *field = b->start + b->fixups[i] - JIT_X64_REL32_BYTES;
        /* a field in the cold code moves down to a target that stays; a
         * field in the main code points at cold code that moves down */
        int64_t d = load32(field) + (cold_at(b, b->fixups[i]) ? delta : -delta);
        store32(field, (int32_t)d);
    }
    for (X64Label *l = b->unresolved; l; l = l->next) {
        /* the chain links offsets just past rel32 fields (walked as they
         * are before the move); those in the cold code move down */
        int32_t site = l->chain;
        if (cold_at(b, site)) l->chain = (int32_t)(site - delta);
        while (site >= 0) {
            uint8_t *field = b->start + site - JIT_X64_REL32_BYTES;
            int32_t next = load32(field);
            if (cold_at(b, next)) store32(field, (int32_t)(next - delta));
            site = next;
        }
    }
    memmove(b->pc, b->start + b->cold, len);
    b->pc += len;
    b->end = b->away_end;
    b->away_pc = b->away_end = NULL;
    b->away_pending = NULL;
    b->cold = -1;
    jit_x64_buf_release(b);
    return (size_t)delta;
}

/* -- Shared shapes ---------------------------------------------------------------- */

static void op_rr(X64Buf *b, uint8_t prefix, unsigned flags, uint32_t opcode, unsigned reg, unsigned rm,
                  int imm_bytes, int64_t imm)
{
    Ins in = { .n = 0 };
    form_rr(&in, prefix, flags, opcode, reg, rm);
    put_imm(&in, imm_bytes, imm);
    emit(b, &in);
}

static void op_mem(X64Buf *b, uint8_t prefix, unsigned flags, uint32_t opcode, unsigned reg, X64Mem m,
                   int imm_bytes, int64_t imm)
{
    Ins in = { .n = 0 };
    form_mem(&in, prefix, flags, opcode, reg, m);
    put_imm(&in, imm_bytes, imm);
    emit(b, &in);
}

static void op_bytes(X64Buf *b, const uint8_t *bytes, unsigned n)
{
    Ins in = { .n = 0 };
    for (unsigned i = 0; i < n; i++) put8(&in, bytes[i]);
    emit(b, &in);
}

static bool cond_ok(X64Buf *b, X64Cond cc)
{
    if ((unsigned)cc <= 15) return true;
    note_error(b, "x64: condition code %d out of range", (int)cc);
    return false;
}

/* The ALU row: op*8+1 is "r/m64 op= r64", op*8+3 "r64 op= r/m64", op*8+5
 * "RAX op= imm32"; 81 /op takes imm32 and 83 /op a sign-extended imm8. */
typedef enum Alu { ALU_ADD = 0, ALU_OR = 1, ALU_AND = 4, ALU_SUB = 5, ALU_XOR = 6, ALU_CMP = 7 } Alu;

static void alu_rr(X64Buf *b, Alu op, X64Reg dst, X64Reg src) { op_rr(b, 0, REXW, op * 8 + 1, src, dst, 0, 0); }
static void alu_rm(X64Buf *b, Alu op, X64Reg dst, X64Mem m) { op_mem(b, 0, REXW, op * 8 + 3, dst, m, 0, 0); }
static void alu_mr(X64Buf *b, Alu op, X64Mem m, X64Reg src) { op_mem(b, 0, REXW, op * 8 + 1, src, m, 0, 0); }

static void alu_ri(X64Buf *b, Alu op, X64Reg dst, int32_t imm)
{
    if (fits8(imm)) {
        op_rr(b, 0, REXW, 0x83, op, dst, 1, imm);
    } else if (dst == JIT_X64_RAX) {
        Ins in = { .n = 0 };
        head(&in, 0, REXW, op * 8 + 5, 0, 0, 0, false);
        put32(&in, (uint32_t)imm);
        emit(b, &in);
    } else {
        op_rr(b, 0, REXW, 0x81, op, dst, 4, imm);
    }
}

static void alu_mi(X64Buf *b, Alu op, X64Mem m, int32_t imm)
{
    if (fits8(imm)) op_mem(b, 0, REXW, 0x83, op, m, 1, imm);
    else op_mem(b, 0, REXW, 0x81, op, m, 4, imm);
}

/* Shift group 2: /4 shl, /5 shr, /7 sar. */
static void shift_ri(X64Buf *b, unsigned digit, X64Reg dst, unsigned count)
{
    if (count > 63) {
        note_error(b, "x64: shift count %u out of range", count);
        return;
    }
    if (count == 1) op_rr(b, 0, REXW, 0xD1, digit, dst, 0, 0);
    else op_rr(b, 0, REXW, 0xC1, digit, dst, 1, count);
}

/* -- Moves ------------------------------------------------------------------------ */

/* REX.W 89 /r */
void jit_x64_mov_rr(X64Buf *b, X64Reg dst, X64Reg src) { op_rr(b, 0, REXW, 0x89, src, dst, 0, 0); }
/* REX.W 8B /r */
void jit_x64_mov_rm(X64Buf *b, X64Reg dst, X64Mem src) { op_mem(b, 0, REXW, 0x8B, dst, src, 0, 0); }
/* REX.W 89 /r */
void jit_x64_mov_mr(X64Buf *b, X64Mem dst, X64Reg src) { op_mem(b, 0, REXW, 0x89, src, dst, 0, 0); }
/* REX.W C7 /0 id */
void jit_x64_mov_ri32(X64Buf *b, X64Reg dst, int32_t imm) { op_rr(b, 0, REXW, 0xC7, 0, dst, 4, imm); }
/* REX.W C7 /0 id */
void jit_x64_mov_mi32(X64Buf *b, X64Mem dst, int32_t imm) { op_mem(b, 0, REXW, 0xC7, 0, dst, 4, imm); }
/* 8B /r (a 32-bit destination clears bits 63..32) */
void jit_x64_mov_rm32(X64Buf *b, X64Reg dst, X64Mem src) { op_mem(b, 0, 0, 0x8B, dst, src, 0, 0); }
/* 89 /r */
void jit_x64_mov_mr32(X64Buf *b, X64Mem dst, X64Reg src) { op_mem(b, 0, 0, 0x89, src, dst, 0, 0); }
/* REX 88 /r */
void jit_x64_mov_mr8(X64Buf *b, X64Mem dst, X64Reg src) { op_mem(b, 0, BYTE_R, 0x88, src, dst, 0, 0); }
/* 0F B6 /r (movzx r32, r/m8: zero-extends to 64) */
void jit_x64_movzx_rm8(X64Buf *b, X64Reg dst, X64Mem src) { op_mem(b, 0, 0, 0x0FB6, dst, src, 0, 0); }
/* 0F B7 /r */
void jit_x64_movzx_rm16(X64Buf *b, X64Reg dst, X64Mem src) { op_mem(b, 0, 0, 0x0FB7, dst, src, 0, 0); }
/* REX 0F B6 /r */
void jit_x64_movzx_rr8(X64Buf *b, X64Reg dst, X64Reg src) { op_rr(b, 0, BYTE_B, 0x0FB6, dst, src, 0, 0); }
/* REX.W 8D /r */
void jit_x64_lea_rm(X64Buf *b, X64Reg dst, X64Mem src) { op_mem(b, 0, REXW, 0x8D, dst, src, 0, 0); }

/* B8+rd id */
void jit_x64_mov_r32i(X64Buf *b, X64Reg dst, uint32_t imm)
{
    Ins in = { .n = 0 };
    form_o(&in, 0, 0xB8, dst);
    put32(&in, imm);
    emit(b, &in);
}

/* REX.W B8+rd io */
void jit_x64_mov_ri64(X64Buf *b, X64Reg dst, uint64_t imm)
{
    Ins in = { .n = 0 };
    form_o(&in, REXW, 0xB8, dst);
    put64(&in, imm);
    emit(b, &in);
}

/* B8+rd id (zero-extends) | REX.W C7 /0 id (sign-extends) | REX.W B8+rd io */
void jit_x64_mov_ri(X64Buf *b, X64Reg dst, int64_t imm)
{
    if (imm >= 0 && imm <= (int64_t)UINT32_MAX) {
        Ins in = { .n = 0 };
        form_o(&in, 0, 0xB8, dst);
        put32(&in, (uint32_t)imm);
        emit(b, &in);
    } else if (fits32(imm)) {
        jit_x64_mov_ri32(b, dst, (int32_t)imm);
    } else {
        jit_x64_mov_ri64(b, dst, (uint64_t)imm);
    }
}

/* REX.W 8D /r with ModRM mod=00 rm=101: [RIP + disp32] */
void jit_x64_lea_rl(X64Buf *b, X64Reg dst, X64Label *label)
{
    Ins in = { .n = 0 };
    head(&in, 0, REXW, 0x8D, dst, 0, 0, false);
    put8(&in, modrm(0, dst, 5));
    rel32_to_label(b, &in, label);
}

/* A 64-bit op with a RIP-relative memory operand at label: ModRM mod = 00, rm = 101. */
static void op_rl(X64Buf *b, uint32_t opcode, X64Reg dst, X64Label *label)
{
    Ins in = { .n = 0 };
    head(&in, 0, REXW, opcode, dst, 0, 0, false);
    put8(&in, modrm(0, dst, 5));
    rel32_to_label(b, &in, label);
}

/* REX.W 03 /r */
void jit_x64_add_rl(X64Buf *b, X64Reg dst, X64Label *label) { op_rl(b, 0x03, dst, label); }
/* REX.W 2B /r */
void jit_x64_sub_rl(X64Buf *b, X64Reg dst, X64Label *label) { op_rl(b, 0x2B, dst, label); }
/* REX.W 3B /r */
void jit_x64_cmp_rl(X64Buf *b, X64Reg dst, X64Label *label) { op_rl(b, 0x3B, dst, label); }

/* FF /1 with ModRM mod = 00, rm = 101: dec dword [rip + label] (6 bytes,
 * the displacement last so readers find the word from the instruction) */
void jit_x64_dec32_l(X64Buf *b, X64Label *label)
{
    Ins in = { .n = 0 };
    head(&in, 0, 0, 0xFF, 1, 0, 0, false);
    put8(&in, modrm(0, 1, 5));
    rel32_to_label(b, &in, label);
}

/* REX.W 0F 40+cc /r */
void jit_x64_cmovcc_rr(X64Buf *b, X64Cond cc, X64Reg dst, X64Reg src)
{
    if (cond_ok(b, cc)) op_rr(b, 0, REXW, 0x0F40 + cc, dst, src, 0, 0);
}

/* REX 0F 90+cc /0 */
void jit_x64_setcc_r(X64Buf *b, X64Cond cc, X64Reg dst)
{
    if (cond_ok(b, cc)) op_rr(b, 0, BYTE_B, 0x0F90 + cc, 0, dst, 0, 0);
}

/* 50+rd (64-bit by default; REX.B for R8..R15) */
void jit_x64_push_r(X64Buf *b, X64Reg src)
{
    Ins in = { .n = 0 };
    form_o(&in, 0, 0x50, src);
    emit(b, &in);
}

/* 58+rd */
void jit_x64_pop_r(X64Buf *b, X64Reg dst)
{
    Ins in = { .n = 0 };
    form_o(&in, 0, 0x58, dst);
    emit(b, &in);
}

/* FF /6: push qword [m] (default operand size 64, no REX.W) */
void jit_x64_push_m(X64Buf *b, X64Mem src) { op_mem(b, 0, 0, 0xFF, 6, src, 0, 0); }

/* 6A ib | 68 id (sign-extended to 64) */
void jit_x64_push_i32(X64Buf *b, int32_t imm)
{
    Ins in = { .n = 0 };
    put8(&in, fits8(imm) ? 0x6A : 0x68);
    put_imm(&in, fits8(imm) ? 1 : 4, imm);
    emit(b, &in);
}

/* -- Integer arithmetic and logic ---------------------------------------------------- */

/* REX.W 01 /r */
void jit_x64_add_rr(X64Buf *b, X64Reg dst, X64Reg src) { alu_rr(b, ALU_ADD, dst, src); }
/* REX.W 83 /0 ib | REX.W 05 id | REX.W 81 /0 id */
void jit_x64_add_ri(X64Buf *b, X64Reg dst, int32_t imm) { alu_ri(b, ALU_ADD, dst, imm); }
/* REX.W 03 /r */
void jit_x64_add_rm(X64Buf *b, X64Reg dst, X64Mem src) { alu_rm(b, ALU_ADD, dst, src); }
/* REX.W 01 /r */
void jit_x64_add_mr(X64Buf *b, X64Mem dst, X64Reg src) { alu_mr(b, ALU_ADD, dst, src); }
/* REX.W 83 /0 ib | REX.W 81 /0 id */
void jit_x64_add_mi(X64Buf *b, X64Mem dst, int32_t imm) { alu_mi(b, ALU_ADD, dst, imm); }

/* REX.W 29 /r */
void jit_x64_sub_rr(X64Buf *b, X64Reg dst, X64Reg src) { alu_rr(b, ALU_SUB, dst, src); }
/* REX.W 83 /5 ib | REX.W 2D id | REX.W 81 /5 id */
void jit_x64_sub_ri(X64Buf *b, X64Reg dst, int32_t imm) { alu_ri(b, ALU_SUB, dst, imm); }
/* REX.W 2B /r */
void jit_x64_sub_rm(X64Buf *b, X64Reg dst, X64Mem src) { alu_rm(b, ALU_SUB, dst, src); }
/* REX.W 29 /r */
void jit_x64_sub_mr(X64Buf *b, X64Mem dst, X64Reg src) { alu_mr(b, ALU_SUB, dst, src); }
/* REX.W 83 /5 ib | REX.W 81 /5 id */
void jit_x64_sub_mi(X64Buf *b, X64Mem dst, int32_t imm) { alu_mi(b, ALU_SUB, dst, imm); }

/* REX.W 21 /r */
void jit_x64_and_rr(X64Buf *b, X64Reg dst, X64Reg src) { alu_rr(b, ALU_AND, dst, src); }
/* REX.W 83 /4 ib | REX.W 25 id | REX.W 81 /4 id */
void jit_x64_and_ri(X64Buf *b, X64Reg dst, int32_t imm) { alu_ri(b, ALU_AND, dst, imm); }
/* REX.W 23 /r */
void jit_x64_and_rm(X64Buf *b, X64Reg dst, X64Mem src) { alu_rm(b, ALU_AND, dst, src); }
/* REX.W 21 /r */
void jit_x64_and_mr(X64Buf *b, X64Mem dst, X64Reg src) { alu_mr(b, ALU_AND, dst, src); }
/* REX.W 83 /4 ib | REX.W 81 /4 id */
void jit_x64_and_mi(X64Buf *b, X64Mem dst, int32_t imm) { alu_mi(b, ALU_AND, dst, imm); }

/* REX.W 09 /r */
void jit_x64_or_rr(X64Buf *b, X64Reg dst, X64Reg src) { alu_rr(b, ALU_OR, dst, src); }
/* REX.W 83 /1 ib | REX.W 0D id | REX.W 81 /1 id */
void jit_x64_or_ri(X64Buf *b, X64Reg dst, int32_t imm) { alu_ri(b, ALU_OR, dst, imm); }
/* REX.W 0B /r */
void jit_x64_or_rm(X64Buf *b, X64Reg dst, X64Mem src) { alu_rm(b, ALU_OR, dst, src); }
/* REX.W 09 /r */
void jit_x64_or_mr(X64Buf *b, X64Mem dst, X64Reg src) { alu_mr(b, ALU_OR, dst, src); }
/* REX.W 83 /1 ib | REX.W 81 /1 id */
void jit_x64_or_mi(X64Buf *b, X64Mem dst, int32_t imm) { alu_mi(b, ALU_OR, dst, imm); }

/* REX.W 31 /r */
void jit_x64_xor_rr(X64Buf *b, X64Reg dst, X64Reg src) { alu_rr(b, ALU_XOR, dst, src); }
/* REX.W 83 /6 ib | REX.W 35 id | REX.W 81 /6 id */
void jit_x64_xor_ri(X64Buf *b, X64Reg dst, int32_t imm) { alu_ri(b, ALU_XOR, dst, imm); }
/* REX.W 33 /r */
void jit_x64_xor_rm(X64Buf *b, X64Reg dst, X64Mem src) { alu_rm(b, ALU_XOR, dst, src); }
/* REX.W 31 /r */
void jit_x64_xor_mr(X64Buf *b, X64Mem dst, X64Reg src) { alu_mr(b, ALU_XOR, dst, src); }
/* REX.W 83 /6 ib | REX.W 81 /6 id */
void jit_x64_xor_mi(X64Buf *b, X64Mem dst, int32_t imm) { alu_mi(b, ALU_XOR, dst, imm); }

/* REX.W 39 /r */
void jit_x64_cmp_rr(X64Buf *b, X64Reg dst, X64Reg src) { alu_rr(b, ALU_CMP, dst, src); }
/* REX.W 83 /7 ib | REX.W 3D id | REX.W 81 /7 id */
void jit_x64_cmp_ri(X64Buf *b, X64Reg dst, int32_t imm) { alu_ri(b, ALU_CMP, dst, imm); }
/* 81 /7 id with a 32-bit operand */
void jit_x64_cmp_r32i(X64Buf *b, X64Reg dst, uint32_t imm) { op_rr(b, 0, 0, 0x81, ALU_CMP, dst, 4, (int32_t)imm); }
/* REX.W 3B /r */
void jit_x64_cmp_rm(X64Buf *b, X64Reg dst, X64Mem src) { alu_rm(b, ALU_CMP, dst, src); }
/* REX.W 39 /r */
void jit_x64_cmp_mr(X64Buf *b, X64Mem dst, X64Reg src) { alu_mr(b, ALU_CMP, dst, src); }
/* REX.W 83 /7 ib | REX.W 81 /7 id */
void jit_x64_cmp_mi(X64Buf *b, X64Mem dst, int32_t imm) { alu_mi(b, ALU_CMP, dst, imm); }

void jit_x64_cmp_m8i(X64Buf *b, X64Mem dst, uint8_t imm) { op_mem(b, 0, 0, 0x80, ALU_CMP, dst, 1, imm); }

/* REX.W 85 /r */
void jit_x64_test_rr(X64Buf *b, X64Reg dst, X64Reg src) { op_rr(b, 0, REXW, 0x85, src, dst, 0, 0); }

/* A8 ib | REX F6 /0 ib (imm 0..127) | REX.W A9 id | REX.W F7 /0 id */
void jit_x64_test_ri(X64Buf *b, X64Reg dst, int32_t imm)
{
    Ins in = { .n = 0 };
    bool low_byte = imm >= 0 && imm <= 127;
    if (dst == JIT_X64_RAX) {
        head(&in, 0, low_byte ? 0 : REXW, low_byte ? 0xA8 : 0xA9, 0, 0, 0, false);
    } else {
        form_rr(&in, 0, low_byte ? BYTE_B : REXW, low_byte ? 0xF6 : 0xF7, 0, dst);
    }
    put_imm(&in, low_byte ? 1 : 4, imm);
    emit(b, &in);
}

/* REX.W 0F AF /r */
void jit_x64_imul_rr(X64Buf *b, X64Reg dst, X64Reg src) { op_rr(b, 0, REXW, 0x0FAF, dst, src, 0, 0); }

/* REX.W 6B /r ib | REX.W 69 /r id */
void jit_x64_imul_rri(X64Buf *b, X64Reg dst, X64Reg src, int32_t imm)
{
    if (fits8(imm)) op_rr(b, 0, REXW, 0x6B, dst, src, 1, imm);
    else op_rr(b, 0, REXW, 0x69, dst, src, 4, imm);
}

/* REX.W F7 /3 */
void jit_x64_neg_r(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xF7, 3, dst, 0, 0); }
/* REX.W F7 /2 */
void jit_x64_not_r(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xF7, 2, dst, 0, 0); }
/* REX.W FF /0 */
void jit_x64_inc_r(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xFF, 0, dst, 0, 0); }
/* REX.W FF /1 */
void jit_x64_dec_r(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xFF, 1, dst, 0, 0); }
/* REX.W FF /0 */
void jit_x64_inc_m(X64Buf *b, X64Mem dst) { op_mem(b, 0, REXW, 0xFF, 0, dst, 0, 0); }
/* REX.W FF /1 */
void jit_x64_dec_m(X64Buf *b, X64Mem dst) { op_mem(b, 0, REXW, 0xFF, 1, dst, 0, 0); }

/* REX.W D1 /7 | REX.W C1 /7 ib */
void jit_x64_sar_ri(X64Buf *b, X64Reg dst, unsigned count) { shift_ri(b, 7, dst, count); }
/* REX.W D1 /4 | REX.W C1 /4 ib */
void jit_x64_shl_ri(X64Buf *b, X64Reg dst, unsigned count) { shift_ri(b, 4, dst, count); }
/* REX.W D1 /5 | REX.W C1 /5 ib */
void jit_x64_shr_ri(X64Buf *b, X64Reg dst, unsigned count) { shift_ri(b, 5, dst, count); }
/* REX.W D1 /0 | REX.W C1 /0 ib */
void jit_x64_rol_ri(X64Buf *b, X64Reg dst, unsigned count) { shift_ri(b, 0, dst, count); }
/* REX.W D1 /1 | REX.W C1 /1 ib */
void jit_x64_ror_ri(X64Buf *b, X64Reg dst, unsigned count) { shift_ri(b, 1, dst, count); }
/* REX.W D3 /7 */
void jit_x64_sar_rcl(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xD3, 7, dst, 0, 0); }
/* REX.W D3 /4 */
void jit_x64_shl_rcl(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xD3, 4, dst, 0, 0); }
/* REX.W D3 /5 */
void jit_x64_shr_rcl(X64Buf *b, X64Reg dst) { op_rr(b, 0, REXW, 0xD3, 5, dst, 0, 0); }

/* REX.W 99 */
void jit_x64_cqo(X64Buf *b) { op_bytes(b, (const uint8_t[]){ 0x48, 0x99 }, 2); }
/* REX.W F7 /7 */
void jit_x64_idiv_r(X64Buf *b, X64Reg divisor) { op_rr(b, 0, REXW, 0xF7, 7, divisor, 0, 0); }

/* REX.W 0F BA /4 ib */
void jit_x64_bt_ri(X64Buf *b, X64Reg base, unsigned bit)
{
    if (bit > 63) {
        note_error(b, "x64: bit index %u out of range", bit);
        return;
    }
    op_rr(b, 0, REXW, 0x0FBA, 4, base, 1, bit);
}

/* REX.W 0F A3 /r */
void jit_x64_bt_rr(X64Buf *b, X64Reg base, X64Reg bit) { op_rr(b, 0, REXW, 0x0FA3, bit, base, 0, 0); }

/* -- Control transfer ------------------------------------------------------------------ */

/* E8 cd */
void jit_x64_call_rel32(X64Buf *b, const void *target)
{
    Ins in = { .n = 0 };
    put8(&in, 0xE8);
    rel_to(b, &in, target, 4);
}

/* FF /2 (64-bit by default) */
void jit_x64_call_r(X64Buf *b, X64Reg target) { op_rr(b, 0, 0, 0xFF, 2, target, 0, 0); }
/* FF /2 */
void jit_x64_call_m(X64Buf *b, X64Mem target) { op_mem(b, 0, 0, 0xFF, 2, target, 0, 0); }

/* E8 cd */
void jit_x64_call_label(X64Buf *b, X64Label *label)
{
    Ins in = { .n = 0 };
    put8(&in, 0xE8);
    rel32_to_label(b, &in, label);
}

/* E9 cd */
void jit_x64_jmp_rel32(X64Buf *b, const void *target)
{
    Ins in = { .n = 0 };
    put8(&in, 0xE9);
    rel_to(b, &in, target, 4);
    b->after_jump = true;
}

/* EB cb */
void jit_x64_jmp_rel8(X64Buf *b, const void *target)
{
    Ins in = { .n = 0 };
    put8(&in, 0xEB);
    rel_to(b, &in, target, 1);
    b->after_jump = true;
}

/* FF /4 */
void jit_x64_jmp_r(X64Buf *b, X64Reg target)
{
    op_rr(b, 0, 0, 0xFF, 4, target, 0, 0);
    b->after_jump = true;
}
/* FF /4 */
void jit_x64_jmp_m(X64Buf *b, X64Mem target)
{
    op_mem(b, 0, 0, 0xFF, 4, target, 0, 0);
    b->after_jump = true;
}

/* E9 cd */
void jit_x64_jmp_label32(X64Buf *b, X64Label *label)
{
    Ins in = { .n = 0 };
    put8(&in, 0xE9);
    rel32_to_label(b, &in, label);
    b->after_jump = true;
}

/* EB cb | E9 cd */
void jit_x64_jmp_label(X64Buf *b, X64Label *label)
{
    settle(b);
    if (label->pos >= 0 && cold_at(b, label->pos) == b->in_cold &&
        fits8((int64_t)label->pos - ((int64_t)offset(b) + 2))) {
        jit_x64_jmp_rel8(b, b->start + label->pos);
        return;
    }
    jit_x64_jmp_label32(b, label);
}

/* 0F 80+cc cd */
void jit_x64_jcc_rel32(X64Buf *b, X64Cond cc, const void *target)
{
    if (!cond_ok(b, cc)) return;
    Ins in = { .n = 0 };
    put8(&in, 0x0F);
    put8(&in, 0x80 + cc);
    rel_to(b, &in, target, 4);
}

/* 70+cc cb */
void jit_x64_jcc_rel8(X64Buf *b, X64Cond cc, const void *target)
{
    if (!cond_ok(b, cc)) return;
    Ins in = { .n = 0 };
    put8(&in, 0x70 + cc);
    rel_to(b, &in, target, 1);
}

/* 0F 80+cc cd */
void jit_x64_jcc_label32(X64Buf *b, X64Cond cc, X64Label *label)
{
    if (!cond_ok(b, cc)) return;
    Ins in = { .n = 0 };
    put8(&in, 0x0F);
    put8(&in, 0x80 + cc);
    rel32_to_label(b, &in, label);
}

/* 70+cc cb | 0F 80+cc cd */
void jit_x64_jcc_label(X64Buf *b, X64Cond cc, X64Label *label)
{
    settle(b);
    if (label->pos >= 0 && cold_at(b, label->pos) == b->in_cold &&
        fits8((int64_t)label->pos - ((int64_t)offset(b) + 2))) {
        jit_x64_jcc_rel8(b, cc, b->start + label->pos);
        return;
    }
    jit_x64_jcc_label32(b, cc, label);
}

/* C3 */
void jit_x64_ret(X64Buf *b)
{
    op_bytes(b, (const uint8_t[]){ 0xC3 }, 1);
    b->after_jump = true;
}
/* CC */
void jit_x64_int3(X64Buf *b) { op_bytes(b, (const uint8_t[]){ 0xCC }, 1); }
/* 0F 0B */
void jit_x64_ud2(X64Buf *b)
{
    op_bytes(b, (const uint8_t[]){ 0x0F, 0x0B }, 2);
    b->after_jump = true;
}

/* 90 | 66 90 | 0F 1F /0 with growing ModRM/SIB/displacement: the Intel SDM's
 * recommended one-instruction NOPs of 1..9 bytes (Vol. 2B, NOP). */
static const uint8_t recommended_nops[9][9] = {
    { 0x90 },
    { 0x66, 0x90 },
    { 0x0F, 0x1F, 0x00 },
    { 0x0F, 0x1F, 0x40, 0x00 },
    { 0x0F, 0x1F, 0x44, 0x00, 0x00 },
    { 0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00 },
    { 0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00 },
    { 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
    { 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
};

void jit_x64_nop(X64Buf *b, size_t bytes)
{
    if (!room(b, bytes)) return; /* all or nothing, like one instruction */
    while (bytes > 0) {
        size_t n = bytes < 9 ? bytes : 9;
        op_bytes(b, recommended_nops[n - 1], (unsigned)n);
        bytes -= n;
    }
}

void jit_x64_datum(X64Buf *b, X64Label *l, const void *bytes, size_t n)
{
    static const uint8_t nop_disp32[] = { 0x0F, 0x1F, 0x80 }; /* nop dword [rax + disp32] */
    static const uint8_t mov_imm64[] = { 0x48, 0xB8 };        /* mov rax, imm64 */
    if (n != 4 && n != 8) {
        note_error(b, "x64: a datum of %zu bytes", n);
        return;
    }
    settle(b); /* the alignment is of the address the datum gets */
    size_t lead = n == 4 ? sizeof nop_disp32 : sizeof mov_imm64;
    jit_x64_nop(b, (size_t)(-(uintptr_t)(b->pc + lead)) & (n - 1));
    jit_x64_data(b, n == 4 ? nop_disp32 : mov_imm64, lead);
    jit_x64_label_bind(b, l);
    jit_x64_data(b, bytes, n);
}

void jit_x64_align(X64Buf *b, size_t alignment)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        note_error(b, "x64: alignment %zu is not a power of two", alignment);
        return;
    }
    jit_x64_nop(b, (size_t)(-(uintptr_t)b->pc) & (alignment - 1));
}

/* -- SSE2 scalar doubles ----------------------------------------------------------------- */

/* F2 0F 10 /r */
void jit_x64_movsd_xm(X64Buf *b, X64Xmm dst, X64Mem src) { op_mem(b, 0xF2, 0, 0x0F10, dst, src, 0, 0); }
/* F2 0F 11 /r */
void jit_x64_movsd_mx(X64Buf *b, X64Mem dst, X64Xmm src) { op_mem(b, 0xF2, 0, 0x0F11, src, dst, 0, 0); }
/* F2 0F 10 /r */
/* 0F 28 /r, movaps: a register copy of a Double is the whole register.
 * movsd xmm, xmm writes only the low half, so it waits for the
 * destination's old value: every copy into xmm0 chained Mandelbrot's
 * independent products into one serial path (the renamer also drops a
 * movaps, never a movsd). */
void jit_x64_movsd_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0, 0, 0x0F28, dst, src, 0, 0); }
/* 66 REX.W 0F 6E /r */
void jit_x64_movq_xr(X64Buf *b, X64Xmm dst, X64Reg src) { op_rr(b, 0x66, REXW, 0x0F6E, dst, src, 0, 0); }
/* 66 REX.W 0F 7E /r */
void jit_x64_movq_rx(X64Buf *b, X64Reg dst, X64Xmm src) { op_rr(b, 0x66, REXW, 0x0F7E, src, dst, 0, 0); }
/* F2 0F 58 /r */
void jit_x64_addsd_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0xF2, 0, 0x0F58, dst, src, 0, 0); }
/* F2 0F 58 /r */
void jit_x64_addsd_xm(X64Buf *b, X64Xmm dst, X64Mem src) { op_mem(b, 0xF2, 0, 0x0F58, dst, src, 0, 0); }
/* F2 0F 5C /r */
void jit_x64_subsd_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0xF2, 0, 0x0F5C, dst, src, 0, 0); }
/* F2 0F 5C /r */
void jit_x64_subsd_xm(X64Buf *b, X64Xmm dst, X64Mem src) { op_mem(b, 0xF2, 0, 0x0F5C, dst, src, 0, 0); }
/* F2 0F 59 /r */
void jit_x64_mulsd_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0xF2, 0, 0x0F59, dst, src, 0, 0); }
/* F2 0F 59 /r */
void jit_x64_mulsd_xm(X64Buf *b, X64Xmm dst, X64Mem src) { op_mem(b, 0xF2, 0, 0x0F59, dst, src, 0, 0); }
/* F2 0F 5E /r */
void jit_x64_divsd_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0xF2, 0, 0x0F5E, dst, src, 0, 0); }
/* F2 0F 5E /r */
void jit_x64_divsd_xm(X64Buf *b, X64Xmm dst, X64Mem src) { op_mem(b, 0xF2, 0, 0x0F5E, dst, src, 0, 0); }
/* F2 0F 51 /r */
void jit_x64_sqrtsd_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0xF2, 0, 0x0F51, dst, src, 0, 0); }
/* 66 0F 2E /r */
void jit_x64_ucomisd_xx(X64Buf *b, X64Xmm a, X64Xmm c) { op_rr(b, 0x66, 0, 0x0F2E, a, c, 0, 0); }
/* 66 0F 2E /r */
void jit_x64_ucomisd_xm(X64Buf *b, X64Xmm a, X64Mem c) { op_mem(b, 0x66, 0, 0x0F2E, a, c, 0, 0); }
/* F2 REX.W 0F 2A /r */
void jit_x64_cvtsi2sd_xr(X64Buf *b, X64Xmm dst, X64Reg src) { op_rr(b, 0xF2, REXW, 0x0F2A, dst, src, 0, 0); }

/* 0F 57 /r; xorps x, x is the zeroing idiom that ends x's dependency chain */
void jit_x64_xorps_xx(X64Buf *b, X64Xmm dst, X64Xmm src) { op_rr(b, 0, 0, 0x0F57, dst, src, 0, 0); }
/* F2 REX.W 0F 2C /r */
void jit_x64_cvttsd2si_rx(X64Buf *b, X64Reg dst, X64Xmm src) { op_rr(b, 0xF2, REXW, 0x0F2C, dst, src, 0, 0); }

/* -- Patchable sites ------------------------------------------------------------------------ */

/* Does the instruction ending at site end in a call, jmp or jcc rel32? */
static bool is_rel32_branch(const uint8_t *site)
{
    uint8_t op = site[-JIT_X64_CALL_REL32_SIZE];
    if (op == 0xE8 || op == 0xE9) return true;
    return (op & 0xF0) == 0x80 && site[-JIT_X64_JCC_REL32_SIZE] == 0x0F;
}

bool jit_x64_read_rel32(const uint8_t *site, uint8_t **target)
{
    if (!is_rel32_branch(site)) return false;
    int32_t d = load32(site - JIT_X64_REL32_BYTES);
    *target = (uint8_t *)(uintptr_t)((uintptr_t)site + (uintptr_t)(intptr_t)d);
    return true;
}

bool jit_x64_patch_rel32(uint8_t *site, const void *target)
{
    if (!is_rel32_branch(site)) return false;
    int64_t d = (int64_t)((uintptr_t)target - (uintptr_t)site);
    if (!fits32(d)) return false;
    store32(site - JIT_X64_REL32_BYTES, (int32_t)d);
    uint8_t *back;
    return jit_x64_read_rel32(site, &back) && back == (const uint8_t *)target;
}

/* REX.W or REX.WB, then B8+rd. */
static bool is_movabs(const uint8_t *site) { return (site[0] & 0xFE) == 0x48 && (site[1] & 0xF8) == 0xB8; }

bool jit_x64_read_imm64(const uint8_t *site, uint64_t *value)
{
    if (!is_movabs(site)) return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | site[JIT_X64_MOVABS_IMM_OFFSET + i];
    *value = v;
    return true;
}

bool jit_x64_patch_imm64(uint8_t *site, uint64_t value)
{
    if (!is_movabs(site)) return false;
    for (int i = 0; i < 8; i++) site[JIT_X64_MOVABS_IMM_OFFSET + i] = (uint8_t)(value >> (8 * i));
    uint64_t back;
    return jit_x64_read_imm64(site, &back) && back == value;
}

/* Optional REX.B (41), then B8+rd. */
static int mov32_imm_offset(const uint8_t *site)
{
    int k = site[0] == 0x41 ? 1 : 0;
    return (site[k] & 0xF8) == 0xB8 ? k + 1 : -1;
}

/* Optional REX.B (41), then 81 with ModRM mod=11 reg=/7. */
static int cmp32_imm_offset(const uint8_t *site)
{
    int k = site[0] == 0x41 ? 1 : 0;
    return site[k] == 0x81 && (site[k + 1] & 0xF8) == 0xF8 ? k + 2 : -1;
}

static bool read_imm32_at(const uint8_t *site, int off, uint32_t *value)
{
    if (off < 0) return false;
    *value = (uint32_t)load32(site + off);
    return true;
}

bool jit_x64_read_mov_imm32(const uint8_t *site, uint32_t *value)
{
    return read_imm32_at(site, mov32_imm_offset(site), value);
}

bool jit_x64_patch_mov_imm32(uint8_t *site, uint32_t value)
{
    int off = mov32_imm_offset(site);
    if (off < 0) return false;
    store32(site + off, (int32_t)value);
    uint32_t back;
    return jit_x64_read_mov_imm32(site, &back) && back == value;
}

bool jit_x64_read_cmp_imm32(const uint8_t *site, uint32_t *value)
{
    return read_imm32_at(site, cmp32_imm_offset(site), value);
}

bool jit_x64_patch_cmp_imm32(uint8_t *site, uint32_t value)
{
    int off = cmp32_imm_offset(site);
    if (off < 0) return false;
    store32(site + off, (int32_t)value);
    uint32_t back;
    return jit_x64_read_cmp_imm32(site, &back) && back == value;
}
