/*
 * jit/x64.h — the x86-64 instruction encoder the JIT's templates emit through.
 *
 * Its job: turn "add rax, [r12 + 16]" into bytes in a caller-provided code
 * buffer, resolve jumps to labels, and read and patch the few instruction
 * forms the JIT rewrites after emission (send sites, literal loads).
 *
 * Invariants:
 *   - Nothing is ever written outside [start, end) of an X64Buf. Each
 *     instruction is assembled apart and copied whole or not at all, so a
 *     buffer that overflows holds only complete instructions; the overflow
 *     flag is sticky and the buffer's owner checks it (jit_x64_finish).
 *   - A form that cannot be encoded (RSP as an index, scale 3, a rel8 or
 *     rel32 target out of range, a label bound twice, a shift count over 63)
 *     is not emitted; the first such error sticks in the buffer and
 *     jit_x64_finish reports it. Templates never see half-encoded code.
 *   - RSP/R12 as a base need a SIB byte and RBP/R13 as a base need a
 *     displacement: one function in x64.c encodes every memory operand, so
 *     no form can get this wrong on its own. disp8 is used when it fits.
 *   - Templates never compute displacements: they jump to X64Labels. A label
 *     is bound once; references before the binding are chained through their
 *     own rel32 fields and resolved by jit_x64_label_bind. A label that is
 *     referenced while unbound must stay alive until it is bound or the
 *     buffer is finished (declare it in the function that binds it).
 *   - The buffer's memory is where the code will run: rel32 targets given as
 *     addresses (trampolines, C helpers) are relative to the buffer's pc.
 *
 * Names: jit_x64_<mnemonic>_<operands>, where r = 64-bit register, m = memory
 * operand (X64Mem), i/i32/i64 = immediate, x = XMM register, l = label,
 * cl = the count register; operands in Intel order (destination first).
 * "_ri" forms take an int32 sign-extended to 64 bits and choose imm8 when it
 * fits. Each emitter's comment gives its encoding as the Intel manual does.
 *
 * Who may call: vm/jit/ only.
 */
#ifndef JIT_X64_H
#define JIT_X64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* -- Operands -------------------------------------------------------------- */

/* Values are the hardware register numbers (ModRM/SIB/REX encodings). */
typedef enum X64Reg {
    JIT_X64_RAX, JIT_X64_RCX, JIT_X64_RDX, JIT_X64_RBX,
    JIT_X64_RSP, JIT_X64_RBP, JIT_X64_RSI, JIT_X64_RDI,
    JIT_X64_R8, JIT_X64_R9, JIT_X64_R10, JIT_X64_R11,
    JIT_X64_R12, JIT_X64_R13, JIT_X64_R14, JIT_X64_R15,
    JIT_X64_NOREG /* "no index" in X64Mem; never a valid operand */
} X64Reg;

typedef enum X64Xmm {
    JIT_X64_XMM0, JIT_X64_XMM1, JIT_X64_XMM2, JIT_X64_XMM3,
    JIT_X64_XMM4, JIT_X64_XMM5, JIT_X64_XMM6, JIT_X64_XMM7,
    JIT_X64_XMM8, JIT_X64_XMM9, JIT_X64_XMM10, JIT_X64_XMM11,
    JIT_X64_XMM12, JIT_X64_XMM13, JIT_X64_XMM14, JIT_X64_XMM15
} X64Xmm;

/* The condition codes in their encoding order (the low nibble of Jcc, SETcc
 * and CMOVcc); a condition and its negation differ in bit 0. */
typedef enum X64Cond {
    JIT_X64_CC_O, JIT_X64_CC_NO, JIT_X64_CC_B, JIT_X64_CC_AE,
    JIT_X64_CC_E, JIT_X64_CC_NE, JIT_X64_CC_BE, JIT_X64_CC_A,
    JIT_X64_CC_S, JIT_X64_CC_NS, JIT_X64_CC_P, JIT_X64_CC_NP,
    JIT_X64_CC_L, JIT_X64_CC_GE, JIT_X64_CC_LE, JIT_X64_CC_G,
    JIT_X64_CC_C = JIT_X64_CC_B, JIT_X64_CC_NC = JIT_X64_CC_AE,
    JIT_X64_CC_Z = JIT_X64_CC_E, JIT_X64_CC_NZ = JIT_X64_CC_NE
} X64Cond;

static inline X64Cond jit_x64_cc_negate(X64Cond cc) { return (X64Cond)(cc ^ 1); }

/* A memory operand [base + index*scale + disp]; build it with the two
 * constructors below. scale is 1, 2, 4 or 8; RSP cannot be an index. */
typedef struct X64Mem {
    X64Reg base;
    X64Reg index; /* JIT_X64_NOREG: none */
    uint8_t scale;
    int32_t disp;
} X64Mem;

static inline X64Mem jit_x64_mem(X64Reg base, int32_t disp)
{
    return (X64Mem){ .base = base, .index = JIT_X64_NOREG, .scale = 1, .disp = disp };
}

static inline X64Mem jit_x64_mem_index(X64Reg base, X64Reg index, unsigned scale, int32_t disp)
{
    return (X64Mem){ .base = base, .index = index, .scale = (uint8_t)scale, .disp = disp };
}

/* -- Buffer and labels ----------------------------------------------------- */

#define JIT_X64_MAX_INSN_BYTES 15 /* the architectural limit on one instruction */

/* A jump target. While unbound, `chain` is the buffer offset just past the
 * newest rel32 field that refers to it (-1: none); that field holds the
 * offset of the one before, and so on. */
typedef struct X64Label {
    const char *name;   /* for jit_x64_finish's message; may be NULL */
    int32_t pos;        /* offset from the buffer's start once bound, else -1 */
    int32_t chain;      /* see above */
    struct X64Label *prev, *next; /* in the buffer's list of labels with unresolved references */
} X64Label;

#define JIT_X64_LABEL(label_name) ((X64Label){ .name = (label_name), .pos = -1, .chain = -1 })

typedef struct X64Buf {
    uint8_t *start, *pc, *end; /* emitted code is [start, pc); pc <= end always */
    bool overflow;             /* sticky: an instruction did not fit */
    const char *error;         /* sticky: the first form that could not be encoded */
    X64Label *unresolved;      /* labels referenced before being bound */
    X64Label *pending;         /* a jit_x64_jmp_forward not emitted yet */
    /* The cold section (jit_x64_cold_init), -1: none. While it exists the
     * section not being emitted into keeps its pc, end and pending jump in
     * away_*; fixups are the offsets just past the rel32 fields that the
     * join must change: jumps between the sections, and calls and jumps from
     * the cold one to addresses outside the buffer. */
    int32_t cold;
    bool in_cold;
    int cold_depth;    /* begin/end nesting */
    uint32_t swapped;  /* bit i: the begin at depth i moved to the cold section */
    bool after_jump, away_after_jump; /* the last instruction was an unconditional jump */
    uint8_t *away_pc, *away_end;
    X64Label *away_pending;
    uint32_t *fixups;
    uint32_t nfixups, fixups_cap;
    char message[160]; /* jit_x64_finish's explanation */
} X64Buf;

/* Emit into [mem, mem + size). size must be below 2 GiB (labels keep int32 offsets). */
void jit_x64_buf_init(X64Buf *buf, void *mem, size_t size);
size_t jit_x64_size(X64Buf *buf); /* bytes emitted so far (a pending forward jump is emitted first) */
/* True when the code is complete: no overflow, no encoding error, every
 * referenced label bound. Otherwise false with *why (if why) explaining. */
bool jit_x64_finish(X64Buf *buf, const char **why);
/* Copy raw bytes (tables, headers inside the code); all or nothing. */
void jit_x64_data(X64Buf *buf, const void *bytes, size_t n);
/* A 4- or 8-byte datum in a method's code, aligned to its size and bound to
 * label l, as the operand of an instruction that is never run (a nop with
 * a disp32, a mov of an imm64), so the code still decodes instruction by
 * instruction for the tools that disassemble it (perf, jitdump readers). */
void jit_x64_datum(X64Buf *buf, X64Label *l, const void *bytes, size_t n);
/* Frees what the buffer allocated (the cold section's fixups); the code stays. */
void jit_x64_buf_release(X64Buf *buf);

/* The cold section: code that rarely runs (slow paths, boxed operands) is
 * emitted where it belongs in the template, between jit_x64_cold_begin and
 * jit_x64_cold_end, but laid out after the rest, so that the fast path
 * falls through instead of jumping over it: a taken jump ends the
 * processor's fetch block, and hot code gets denser.
 *
 * jit_x64_cold_init(buf, at) makes the section start at offset `at` (the
 * main code must stay below it; its bound) and jit_x64_cold_join moves it
 * to just after the main code, fixing every displacement that crosses
 * between the two or leaves the cold one for an address, and every chain
 * of a still unbound label. It answers by how much the cold code moved
 * down: offsets the caller recorded in the cold section (map entries,
 * literal sites) are that much lower afterwards. Labels bound in the cold
 * section must not be used after the join.
 *
 * Without jit_x64_cold_init, begin and end do nothing and the cold code
 * stays in line, so a template is written once for both: the code before
 * jit_x64_cold_begin must not fall through into the cold code (it ends in
 * a jump), and the cold code must end in a jump too (jit_x64_jmp_forward
 * to the label bound right after jit_x64_cold_end costs nothing in line).
 * Begin and end nest: cold code inside cold code is laid out in line there,
 * and so is cold code the main code falls into (its last instruction is no
 * unconditional jump). */
void jit_x64_cold_init(X64Buf *buf, size_t at);
void jit_x64_cold_begin(X64Buf *buf);
void jit_x64_cold_end(X64Buf *buf);
bool jit_x64_in_cold(const X64Buf *buf);
/* Whether the next jit_x64_cold_end goes back to the main code. */
bool jit_x64_cold_ending(const X64Buf *buf);
/* Where the next instruction goes, a pending forward jump left pending
 * (jit_x64_size emits it first). */
size_t jit_x64_here(const X64Buf *buf);
size_t jit_x64_cold_join(X64Buf *buf);

void jit_x64_label_init(X64Label *label, const char *name);
/* Bind at the current pc and resolve every earlier reference. */
void jit_x64_label_bind(X64Buf *buf, X64Label *label);
bool jit_x64_label_is_bound(const X64Label *label);
uint8_t *jit_x64_label_address(const X64Buf *buf, const X64Label *label); /* NULL if unbound */

/* -- Moves ------------------------------------------------------------------- */

void jit_x64_mov_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_mov_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_mov_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_mov_ri64(X64Buf *buf, X64Reg dst, uint64_t imm); /* always movabs: patchable */
void jit_x64_mov_ri32(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_mov_ri(X64Buf *buf, X64Reg dst, int64_t imm);    /* shortest of the three */
void jit_x64_mov_mi32(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_mov_r32i(X64Buf *buf, X64Reg dst, uint32_t imm); /* always B8+rd id: patchable (send-site tags) */
void jit_x64_mov_rm32(X64Buf *buf, X64Reg dst, X64Mem src);   /* zero-extends */
void jit_x64_mov_mr32(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_mov_mr8(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_movzx_rm8(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_movzx_rm16(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_movzx_rr8(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_lea_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_lea_rl(X64Buf *buf, X64Reg dst, X64Label *label); /* RIP-relative */
void jit_x64_add_rl(X64Buf *buf, X64Reg dst, X64Label *label);  /* dst += [rip + label], 64 bits */
void jit_x64_sub_rl(X64Buf *buf, X64Reg dst, X64Label *label);  /* dst -= [rip + label], 64 bits */
void jit_x64_cmp_rl(X64Buf *buf, X64Reg dst, X64Label *label);  /* cmp dst, [rip + label], 64 bits */
void jit_x64_dec32_l(X64Buf *buf, X64Label *label);              /* dec dword [rip + label]: FF 0D rel32 */
void jit_x64_cmovcc_rr(X64Buf *buf, X64Cond cc, X64Reg dst, X64Reg src);
void jit_x64_setcc_r(X64Buf *buf, X64Cond cc, X64Reg dst);     /* low byte only */
void jit_x64_push_r(X64Buf *buf, X64Reg src);
void jit_x64_pop_r(X64Buf *buf, X64Reg dst);
void jit_x64_push_i32(X64Buf *buf, int32_t imm);
void jit_x64_push_m(X64Buf *buf, X64Mem src);      /* qword */

/* -- Integer arithmetic and logic ------------------------------------------- */

void jit_x64_add_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_add_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_add_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_add_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_add_mi(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_sub_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_sub_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_sub_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_sub_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_sub_mi(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_and_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_and_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_and_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_and_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_and_mi(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_or_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_or_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_or_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_or_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_or_mi(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_xor_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_xor_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_xor_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_xor_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_xor_mi(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_cmp_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_cmp_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_cmp_r32i(X64Buf *buf, X64Reg dst, uint32_t imm); /* always 81 /7 id, 32-bit: patchable (PIC cases) */
void jit_x64_cmp_rm(X64Buf *buf, X64Reg dst, X64Mem src);
void jit_x64_cmp_mr(X64Buf *buf, X64Mem dst, X64Reg src);
void jit_x64_cmp_mi(X64Buf *buf, X64Mem dst, int32_t imm);
void jit_x64_cmp_m8i(X64Buf *buf, X64Mem dst, uint8_t imm); /* the byte at dst */
void jit_x64_test_rr(X64Buf *buf, X64Reg dst, X64Reg src);
/* imm in 0..127 tests the low byte only: the flags are the same (SF is 0 and
 * ZF, PF come from the low byte either way) and the tag test "test al, 1"
 * is 2 bytes instead of 6. */
void jit_x64_test_ri(X64Buf *buf, X64Reg dst, int32_t imm);
void jit_x64_imul_rr(X64Buf *buf, X64Reg dst, X64Reg src);
void jit_x64_imul_rri(X64Buf *buf, X64Reg dst, X64Reg src, int32_t imm);
void jit_x64_neg_r(X64Buf *buf, X64Reg dst);
void jit_x64_not_r(X64Buf *buf, X64Reg dst);
void jit_x64_inc_r(X64Buf *buf, X64Reg dst);
void jit_x64_dec_r(X64Buf *buf, X64Reg dst);
void jit_x64_inc_m(X64Buf *buf, X64Mem dst); /* qword: counters */
void jit_x64_dec_m(X64Buf *buf, X64Mem dst);
void jit_x64_sar_ri(X64Buf *buf, X64Reg dst, unsigned count);
void jit_x64_shl_ri(X64Buf *buf, X64Reg dst, unsigned count);
void jit_x64_shr_ri(X64Buf *buf, X64Reg dst, unsigned count);
void jit_x64_rol_ri(X64Buf *buf, X64Reg dst, unsigned count);
void jit_x64_ror_ri(X64Buf *buf, X64Reg dst, unsigned count);
void jit_x64_sar_rcl(X64Buf *buf, X64Reg dst);
void jit_x64_shl_rcl(X64Buf *buf, X64Reg dst);
void jit_x64_shr_rcl(X64Buf *buf, X64Reg dst);
void jit_x64_cqo(X64Buf *buf);
void jit_x64_idiv_r(X64Buf *buf, X64Reg divisor);
void jit_x64_bt_ri(X64Buf *buf, X64Reg base, unsigned bit);
void jit_x64_bt_rr(X64Buf *buf, X64Reg base, X64Reg bit);

/* -- Control transfer --------------------------------------------------------- */

void jit_x64_call_rel32(X64Buf *buf, const void *target);
void jit_x64_call_r(X64Buf *buf, X64Reg target);
void jit_x64_call_m(X64Buf *buf, X64Mem target);
void jit_x64_call_label(X64Buf *buf, X64Label *label);
void jit_x64_jmp_rel32(X64Buf *buf, const void *target);
void jit_x64_jmp_rel8(X64Buf *buf, const void *target);
void jit_x64_jmp_r(X64Buf *buf, X64Reg target);
void jit_x64_jmp_m(X64Buf *buf, X64Mem target);
void jit_x64_jmp_label(X64Buf *buf, X64Label *label);   /* rel8 if bound and in range */
void jit_x64_jmp_label32(X64Buf *buf, X64Label *label); /* always rel32: patchable */
/* A jump to a label not bound yet, dropped when the label is bound next
 * (nothing emitted, no size asked for and no other label bound in
 * between): a fast path's jump to the merge its slow path left for the cold
 * section. Not patchable. */
void jit_x64_jmp_forward(X64Buf *buf, X64Label *label);
void jit_x64_jcc_rel32(X64Buf *buf, X64Cond cc, const void *target);
void jit_x64_jcc_rel8(X64Buf *buf, X64Cond cc, const void *target);
void jit_x64_jcc_label(X64Buf *buf, X64Cond cc, X64Label *label);
void jit_x64_jcc_label32(X64Buf *buf, X64Cond cc, X64Label *label);
void jit_x64_ret(X64Buf *buf);
void jit_x64_int3(X64Buf *buf);
void jit_x64_ud2(X64Buf *buf);
void jit_x64_nop(X64Buf *buf, size_t bytes); /* Intel's recommended multi-byte NOPs */
void jit_x64_align(X64Buf *buf, size_t alignment); /* pad pc to a power-of-two address boundary */

/* -- SSE2 scalar doubles ------------------------------------------------------ */

void jit_x64_movsd_xm(X64Buf *buf, X64Xmm dst, X64Mem src);
void jit_x64_movsd_mx(X64Buf *buf, X64Mem dst, X64Xmm src);
void jit_x64_movsd_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_movq_xr(X64Buf *buf, X64Xmm dst, X64Reg src);
void jit_x64_movq_rx(X64Buf *buf, X64Reg dst, X64Xmm src);
void jit_x64_addsd_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_addsd_xm(X64Buf *buf, X64Xmm dst, X64Mem src);
void jit_x64_subsd_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_subsd_xm(X64Buf *buf, X64Xmm dst, X64Mem src);
void jit_x64_mulsd_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_mulsd_xm(X64Buf *buf, X64Xmm dst, X64Mem src);
void jit_x64_divsd_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_divsd_xm(X64Buf *buf, X64Xmm dst, X64Mem src);
void jit_x64_sqrtsd_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_ucomisd_xx(X64Buf *buf, X64Xmm a, X64Xmm b);
void jit_x64_ucomisd_xm(X64Buf *buf, X64Xmm a, X64Mem b);
void jit_x64_cvtsi2sd_xr(X64Buf *buf, X64Xmm dst, X64Reg src);
void jit_x64_xorps_xx(X64Buf *buf, X64Xmm dst, X64Xmm src);
void jit_x64_cvttsd2si_rx(X64Buf *buf, X64Reg dst, X64Xmm src);

/* -- Patchable sites -----------------------------------------------------------
 *
 *   movabs r64, imm64 — the literal-load site; `site` is its first byte:
 *   +-----------+-------+-------------------------------+
 *   | REX.W(+B) | B8+rd | imm64, little-endian          |
 *   +-----------+-------+-------------------------------+
 *   0           1       2 = JIT_X64_MOVABS_IMM_OFFSET   10 = JIT_X64_MOVABS_SIZE
 *
 *   call/jmp/jcc rel32 — send sites, PIC exits; `site` is the address just
 *   past the instruction (a call's return address, what the mcpc maps hold):
 *   +---------------------------+---------------------------------+
 *   | E8 | E9 | 0F 80+cc        | rel32 = target - site           |
 *   +---------------------------+---------------------------------+
 *                                site - JIT_X64_REL32_BYTES        site
 *
 * Each patch refuses a site that does not decode as its form, writes, reads
 * the value back through the read function and answers whether it matches.
 * The form check reads opcode bytes only: it catches a site pointer that is
 * off, not every impostor (the ModRM of "sub rax, imm32" is E8), so callers
 * still patch only addresses they recorded when emitting.
 */

#define JIT_X64_MOVABS_IMM_OFFSET 2
#define JIT_X64_MOVABS_SIZE 10
#define JIT_X64_REL32_BYTES 4
#define JIT_X64_CALL_REL32_SIZE 5
#define JIT_X64_JMP_REL32_SIZE 5
#define JIT_X64_JCC_REL32_SIZE 6

_Static_assert(JIT_X64_MOVABS_SIZE == JIT_X64_MOVABS_IMM_OFFSET + 8, "movabs: REX, opcode, imm64");
_Static_assert(JIT_X64_CALL_REL32_SIZE == 1 + JIT_X64_REL32_BYTES, "call rel32: E8 cd");
_Static_assert(JIT_X64_JMP_REL32_SIZE == 1 + JIT_X64_REL32_BYTES, "jmp rel32: E9 cd");
_Static_assert(JIT_X64_JCC_REL32_SIZE == 2 + JIT_X64_REL32_BYTES, "jcc rel32: 0F 8x cd");

/*
 *   mov r32, imm32 (B8+rd id, REX.B for r8..r15) and cmp r32, imm32
 *   (81 /7 id): the send-site tag and the PIC case class; `site` is the
 *   instruction's first byte, the imm32 its last four.
 */
bool jit_x64_read_rel32(const uint8_t *site, uint8_t **target);
bool jit_x64_patch_rel32(uint8_t *site, const void *target);
bool jit_x64_read_imm64(const uint8_t *site, uint64_t *value);
bool jit_x64_patch_imm64(uint8_t *site, uint64_t value);
bool jit_x64_read_mov_imm32(const uint8_t *site, uint32_t *value);
bool jit_x64_patch_mov_imm32(uint8_t *site, uint32_t value);
bool jit_x64_read_cmp_imm32(const uint8_t *site, uint32_t *value);
bool jit_x64_patch_cmp_imm32(uint8_t *site, uint32_t value);
#define JIT_X64_MOV32_SIZE_LOW 5 /* mov r32, imm32 for rax..rdi */
#define JIT_X64_CMP32_SIZE_LOW 6 /* cmp r32, imm32 for rax..rdi (not the short eax form) */

#endif
