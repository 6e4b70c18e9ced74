/*
 * tests/unit/jit/test_x64.c — the x86-64 encoder against expected bytes and
 * against Capstone's disassembly.
 *
 * The round-trip tests emit one instruction at a time into a fresh buffer,
 * decode it with Capstone at its real address, and compare "mnemonic
 * operands" with the text the emitter was asked for, written out here in
 * Capstone's Intel syntax (hex above 9, signed immediates except for
 * and/or/xor which it prints as unsigned 64-bit), and the decoded length
 * with the emitted length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <capstone/capstone.h>

#include "vm/jit/x64.h"
#include "vm/jit/x64_regs.h"

static csh cs;
static int failures; /* mismatches in the current test; each prints itself */
static long checked;  /* instructions compared with Capstone, for the summary */

static const char *const N64[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                     "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15" };
static const char *const N32[16] = { "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
                                     "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d" };
static const char *const N8[16] = { "al",  "cl",  "dl",   "bl",   "spl",  "bpl",  "sil",  "dil",
                                    "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b" };
static const char *const NXMM[16] = { "xmm0", "xmm1", "xmm2",  "xmm3",  "xmm4",  "xmm5",  "xmm6",  "xmm7",
                                     "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15" };
static const char *const CC[16] = { "o", "no", "b", "ae", "e", "ne", "be", "a",
                                    "s", "ns", "p", "np", "l", "ge", "le", "g" };

static const int32_t DISPS[] = { 0, 1, -1, 8, 9, 10, 127, 128, -128, -129, 0x12345, INT32_MAX, INT32_MIN };
static const int32_t IMMS[] = { 0, 1, -1, 9, 10, 127, 128, -128, -129, 255, 0x12345, INT32_MAX, INT32_MIN };
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* -- Expected text in Capstone's spelling ------------------------------------- */

static char *tmp(void)
{
    static char pool[16][192];
    static unsigned next;
    return pool[next++ % 16];
}

static const char *S(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *S(const char *fmt, ...)
{
    char *s = tmp();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, 192, fmt, ap);
    va_end(ap);
    return s;
}

static const char *num(uint64_t v)
{
    return v > 9 ? S("0x%llx", (unsigned long long)v) : S("%llu", (unsigned long long)v);
}

static const char *imm_s(int64_t v) { return v < 0 ? S("-%s", num(-(uint64_t)v)) : num((uint64_t)v); }
static const char *imm_u(int64_t v) { return num((uint64_t)v); }

/* "qword ptr [base + index*scale + disp]"; size "" for lea. */
static const char *mem_text(X64Mem m, const char *size)
{
    char *s = tmp();
    int n = snprintf(s, 192, "%s%s[%s", size, *size ? " ptr " : "", N64[m.base]);
    if (m.index != JIT_X64_NOREG) {
        n += snprintf(s + n, 192 - n, " + %s", N64[m.index]);
        if (m.scale > 1) n += snprintf(s + n, 192 - n, "*%u", m.scale);
    }
    if (m.disp) n += snprintf(s + n, 192 - n, " %c %s", m.disp < 0 ? '-' : '+', num(m.disp < 0 ? -(uint64_t)(int64_t)m.disp : (uint64_t)m.disp));
    snprintf(s + n, 192 - n, "]");
    return s;
}

/* -- Checking --------------------------------------------------------------------- */

static const char *hex(const uint8_t *p, size_t n)
{
    char *s = tmp();
    s[0] = '\0';
    for (size_t i = 0; i < n && i < 60; i++) snprintf(s + strlen(s), 192 - strlen(s), "%s%02x", i ? " " : "", p[i]);
    return s;
}

static void mismatch(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mismatch(const char *file, int line, const char *fmt, ...)
{
    if (++failures > 20) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s:%d: %s\n", file, line, msg);
}

/* The buffer must hold exactly one instruction that decodes to `want`. */
static void expect_one(X64Buf *b, const char *want, const char *file, int line)
{
    const char *why;
    if (!jit_x64_finish(b, &why)) {
        mismatch(file, line, "want '%s': %s", want, why);
        return;
    }
    size_t n = jit_x64_size(b);
    cs_insn *insn;
    size_t count = cs_disasm(cs, b->start, n, (uint64_t)(uintptr_t)b->start, 0, &insn);
    checked++;
    if (count != 1) {
        mismatch(file, line, "want '%s': %zu instructions decoded from %s", want, count, hex(b->start, n));
        if (count) cs_free(insn, count);
        return;
    }
    char got[256];
    snprintf(got, sizeof got, "%s%s%s", insn->mnemonic, insn->op_str[0] ? " " : "", insn->op_str);
    if (strcmp(got, want) != 0 || insn->size != n)
        mismatch(file, line, "want '%s', got '%s' (%u of %zu bytes: %s)", want, got, insn->size, n, hex(b->start, n));
    cs_free(insn, count);
}

/* Emit `stmt` (which uses `b`) into a fresh buffer at `mem` and check its one instruction. */
#define ASM_AT(mem, want, stmt)                                                                         \
    do {                                                                                                \
        X64Buf buf_, *b = &buf_;                                                                        \
        jit_x64_buf_init(b, (mem), JIT_X64_MAX_INSN_BYTES);                                             \
        stmt;                                                                                           \
        expect_one(b, (want), __FILE__, __LINE__);                                                      \
    } while (0)

static uint8_t scratch[JIT_X64_MAX_INSN_BYTES];
#define ASM(want, stmt) ASM_AT(scratch, want, stmt)

/* Emit `stmt` and compare its bytes with the hex string `want`. */
#define BYTES(want, stmt)                                                                               \
    do {                                                                                                \
        uint8_t mem_[64];                                                                               \
        X64Buf buf_, *b = &buf_;                                                                        \
        jit_x64_buf_init(b, mem_, sizeof mem_);                                                         \
        stmt;                                                                                           \
        const char *why_;                                                                               \
        if (!jit_x64_finish(b, &why_)) mismatch(__FILE__, __LINE__, "%s: %s", #stmt, why_);             \
        else if (strcmp(hex(b->start, jit_x64_size(b)), (want)) != 0)                                   \
            mismatch(__FILE__, __LINE__, "%s: want %s, got %s", #stmt, (want),                          \
                     hex(b->start, jit_x64_size(b)));                                                   \
    } while (0)

#define NO_FAILURES() assert_int_equal(failures, 0)

static int setup(void **state)
{
    (void)state;
    failures = 0;
    return 0;
}

/* Every base register with every displacement, then every base and index
 * (RSP cannot be one) with every scale. */
static X64Mem mems[16 * COUNT(DISPS) + 16 * 15 * 4 * 3];
static size_t n_mems;

static void make_mems(void)
{
    n_mems = 0;
    for (int base = 0; base < 16; base++)
        for (size_t d = 0; d < COUNT(DISPS); d++) mems[n_mems++] = jit_x64_mem((X64Reg)base, DISPS[d]);
    static const int32_t idisp[] = { 0, 0x10, -200 };
    for (int base = 0; base < 16; base++)
        for (int index = 0; index < 16; index++) {
            if (index == JIT_X64_RSP) continue;
            for (unsigned scale = 1; scale <= 8; scale *= 2)
                for (size_t d = 0; d < COUNT(idisp); d++)
                    mems[n_mems++] = jit_x64_mem_index((X64Reg)base, (X64Reg)index, scale, idisp[d]);
        }
}

static int group_setup(void **state)
{
    (void)state;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) return -1;
    make_mems();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cs_close(&cs);
    printf("%ld single instructions checked against Capstone\n", checked);
    return 0;
}

/* -- Byte-for-byte encodings --------------------------------------------------------- */

#define M jit_x64_mem
#define MI jit_x64_mem_index

static void memory_operands_encode_the_special_bases_and_displacements(void **state)
{
    (void)state;
    BYTES("48 8b 03", jit_x64_mov_rm(b, RAX, M(RBX, 0)));
    BYTES("48 8b 44 24 10", jit_x64_mov_rm(b, RAX, M(RSP, 0x10)));   /* RSP base: SIB */
    BYTES("48 8b 04 24", jit_x64_mov_rm(b, RAX, M(RSP, 0)));
    BYTES("49 8b 04 24", jit_x64_mov_rm(b, RAX, M(R12, 0)));         /* R12 base: SIB too */
    BYTES("49 8b 44 24 08", jit_x64_mov_rm(b, RAX, M(R12, 8)));
    BYTES("48 8b 45 00", jit_x64_mov_rm(b, RAX, M(RBP, 0)));         /* RBP base: disp8 0 */
    BYTES("49 8b 45 00", jit_x64_mov_rm(b, RAX, M(R13, 0)));         /* R13 base: disp8 0 */
    BYTES("4d 8b 6d 00", jit_x64_mov_rm(b, R13, M(R13, 0)));
    BYTES("48 8b 43 7f", jit_x64_mov_rm(b, RAX, M(RBX, 127)));       /* disp8 boundaries */
    BYTES("48 8b 83 80 00 00 00", jit_x64_mov_rm(b, RAX, M(RBX, 128)));
    BYTES("48 8b 43 80", jit_x64_mov_rm(b, RAX, M(RBX, -128)));
    BYTES("48 8b 83 7f ff ff ff", jit_x64_mov_rm(b, RAX, M(RBX, -129)));
    BYTES("48 8b 84 24 80 00 00 00", jit_x64_mov_rm(b, RAX, M(RSP, 128)));
    BYTES("48 8b 85 7f ff ff ff", jit_x64_mov_rm(b, RAX, M(RBP, -129)));
    BYTES("4d 8b 38", jit_x64_mov_rm(b, R15, M(R8, 0)));             /* REX.R and REX.B */
    BYTES("4d 89 51 10", jit_x64_mov_mr(b, M(R9, 16), R10));
    BYTES("4a 8b 04 e3", jit_x64_mov_rm(b, RAX, MI(RBX, R12, 8, 0))); /* R12 index: REX.X */
    BYTES("49 8b 44 0d 00", jit_x64_mov_rm(b, RAX, MI(R13, RCX, 1, 0))); /* R13 base + index: disp8 0 */
    BYTES("48 8b 44 8d 00", jit_x64_mov_rm(b, RAX, MI(RBP, RCX, 4, 0)));
    BYTES("48 8b 84 6c 00 01 00 00", jit_x64_mov_rm(b, RAX, MI(RSP, RBP, 2, 0x100)));
    BYTES("48 8d 04 24", jit_x64_lea_rm(b, RAX, M(RSP, 0)));
    BYTES("4c 8d 64 24 f8", jit_x64_lea_rm(b, R12, M(RSP, -8)));
    NO_FAILURES();
}

static void immediates_choose_imm8_when_it_fits(void **state)
{
    (void)state;
    BYTES("48 83 c0 01", jit_x64_add_ri(b, RAX, 1));
    BYTES("48 83 c0 7f", jit_x64_add_ri(b, RAX, 127));
    BYTES("48 05 80 00 00 00", jit_x64_add_ri(b, RAX, 128));   /* RAX short form */
    BYTES("48 81 c1 80 00 00 00", jit_x64_add_ri(b, RCX, 128));
    BYTES("48 83 c1 80", jit_x64_add_ri(b, RCX, -128));
    BYTES("48 81 e9 7f ff ff ff", jit_x64_sub_ri(b, RCX, -129));
    BYTES("49 83 fb 00", jit_x64_cmp_ri(b, R11, 0));
    BYTES("48 25 ff ff 3f 00", jit_x64_and_ri(b, RAX, 0x3fffff));
    BYTES("49 83 04 24 01", jit_x64_add_mi(b, M(R12, 0), 1));
    BYTES("48 81 7d f8 00 10 00 00", jit_x64_cmp_mi(b, M(RBP, -8), 0x1000));
    BYTES("41 80 3b 00", jit_x64_cmp_m8i(b, M(R11, 0), 0));
    BYTES("80 7f 07 ff", jit_x64_cmp_m8i(b, M(RDI, 7), 0xff));
    BYTES("48 83 65 00 f8", jit_x64_and_mi(b, M(RBP, 0), -8));
    BYTES("48 6b c3 0a", jit_x64_imul_rri(b, RAX, RBX, 10));
    BYTES("48 69 c3 e8 03 00 00", jit_x64_imul_rri(b, RAX, RBX, 1000));
    BYTES("6a 01", jit_x64_push_i32(b, 1));
    BYTES("68 00 10 00 00", jit_x64_push_i32(b, 0x1000));
    BYTES("ff 75 d8", jit_x64_push_m(b, jit_x64_mem(RBP, -40)));
    BYTES("41 ff 73 08", jit_x64_push_m(b, jit_x64_mem(R11, 8)));
    BYTES("ff 34 24", jit_x64_push_m(b, jit_x64_mem(RSP, 0)));
    BYTES("a8 01", jit_x64_test_ri(b, RAX, 1));                /* low byte: same flags */
    BYTES("40 f6 c6 01", jit_x64_test_ri(b, RSI, 1));          /* SIL needs a REX */
    BYTES("41 f6 c0 7f", jit_x64_test_ri(b, R8, 127));
    BYTES("48 a9 80 00 00 00", jit_x64_test_ri(b, RAX, 128));
    BYTES("48 f7 c3 ff ff ff ff", jit_x64_test_ri(b, RBX, -1));
    NO_FAILURES();
}

static void moves_of_constants_pick_the_documented_forms(void **state)
{
    (void)state;
    BYTES("48 b8 88 77 66 55 44 33 22 11", jit_x64_mov_ri64(b, RAX, 0x1122334455667788ull));
    BYTES("49 bf 01 00 00 00 00 00 00 00", jit_x64_mov_ri64(b, R15, 1)); /* movabs even when small */
    BYTES("48 c7 c0 ff ff ff ff", jit_x64_mov_ri32(b, RAX, -1));
    BYTES("41 b9 05 00 00 00", jit_x64_mov_ri(b, R9, 5));
    BYTES("b8 ff ff ff ff", jit_x64_mov_ri(b, RAX, 0xffffffffll));
    BYTES("48 c7 c2 00 00 00 80", jit_x64_mov_ri(b, RDX, INT32_MIN));
    BYTES("48 ba 00 00 00 00 01 00 00 00", jit_x64_mov_ri(b, RDX, 0x100000000ll));
    BYTES("48 c7 44 24 08 07 00 00 00", jit_x64_mov_mi32(b, M(RSP, 8), 7));
    NO_FAILURES();
}

static void the_other_forms_encode_as_the_manual_says(void **state)
{
    (void)state;
    BYTES("48 89 d8", jit_x64_mov_rr(b, RAX, RBX));
    BYTES("4c 89 c7", jit_x64_mov_rr(b, RDI, R8));
    BYTES("48 ff 43 08", jit_x64_inc_m(b, M(RBX, 8)));
    BYTES("49 ff 4d 00", jit_x64_dec_m(b, M(R13, 0)));
    BYTES("41 54", jit_x64_push_r(b, R12));
    BYTES("5d", jit_x64_pop_r(b, RBP));
    BYTES("40 0f 94 c6", jit_x64_setcc_r(b, JIT_X64_CC_E, RSI));
    BYTES("0f 94 c0", jit_x64_setcc_r(b, JIT_X64_CC_E, RAX));
    BYTES("41 0f 9c c0", jit_x64_setcc_r(b, JIT_X64_CC_L, R8));
    BYTES("40 88 30", jit_x64_mov_mr8(b, M(RAX, 0), RSI));
    BYTES("88 00", jit_x64_mov_mr8(b, M(RAX, 0), RAX));
    BYTES("0f b6 47 07", jit_x64_movzx_rm8(b, RAX, M(RDI, 7)));
    BYTES("40 0f b6 c7", jit_x64_movzx_rr8(b, RAX, RDI));
    BYTES("8b 43 04", jit_x64_mov_rm32(b, RAX, M(RBX, 4)));
    BYTES("48 d1 e0", jit_x64_shl_ri(b, RAX, 1));
    BYTES("49 c1 f9 03", jit_x64_sar_ri(b, R9, 3));
    BYTES("48 d3 ea", jit_x64_shr_rcl(b, RDX));
    BYTES("4d 0f af c7", jit_x64_imul_rr(b, R8, R15));
    BYTES("48 99", jit_x64_cqo(b));
    BYTES("48 f7 f9", jit_x64_idiv_r(b, RCX));
    BYTES("48 0f ba e0 05", jit_x64_bt_ri(b, RAX, 5));
    BYTES("48 0f 4f c3", jit_x64_cmovcc_rr(b, JIT_X64_CC_G, RAX, RBX));
    BYTES("ff d0", jit_x64_call_r(b, RAX));
    BYTES("41 ff d4", jit_x64_call_r(b, R12));
    BYTES("41 ff 24 24", jit_x64_jmp_m(b, M(R12, 0)));
    BYTES("ff 60 08", jit_x64_jmp_m(b, M(RAX, 8)));
    BYTES("f2 0f 10 44 24 08", jit_x64_movsd_xm(b, JIT_X64_XMM0, M(RSP, 8)));
    BYTES("f2 45 0f 11 4d 00", jit_x64_movsd_mx(b, M(R13, 0), JIT_X64_XMM9));
    BYTES("f2 44 0f 58 f9", jit_x64_addsd_xx(b, JIT_X64_XMM15, JIT_X64_XMM1));
    BYTES("66 48 0f 6e c0", jit_x64_movq_xr(b, JIT_X64_XMM0, RAX));
    BYTES("66 49 0f 7e c8", jit_x64_movq_rx(b, R8, JIT_X64_XMM1));
    BYTES("f2 49 0f 2a ca", jit_x64_cvtsi2sd_xr(b, JIT_X64_XMM1, R10));
    BYTES("f2 49 0f 2c c0", jit_x64_cvttsd2si_rx(b, RAX, JIT_X64_XMM8));
    BYTES("66 0f 2e c1", jit_x64_ucomisd_xx(b, JIT_X64_XMM0, JIT_X64_XMM1));
    BYTES("c3", jit_x64_ret(b));
    BYTES("cc", jit_x64_int3(b));
    BYTES("0f 0b", jit_x64_ud2(b));
    BYTES("66 0f 1f 84 00 00 00 00 00 0f 1f 00", jit_x64_nop(b, 12));
    NO_FAILURES();
}

/* -- Capstone round trips ------------------------------------------------------------- */

typedef struct RRForm {
    void (*emit)(X64Buf *, X64Reg, X64Reg);
    const char *mnemonic;
    const char *const *dst, *const *src;
} RRForm;

static void every_register_register_form_round_trips(void **state)
{
    (void)state;
    static const RRForm forms[] = {
        { jit_x64_mov_rr, "mov", N64, N64 },   { jit_x64_add_rr, "add", N64, N64 },
        { jit_x64_sub_rr, "sub", N64, N64 },   { jit_x64_and_rr, "and", N64, N64 },
        { jit_x64_or_rr, "or", N64, N64 },     { jit_x64_xor_rr, "xor", N64, N64 },
        { jit_x64_cmp_rr, "cmp", N64, N64 },   { jit_x64_test_rr, "test", N64, N64 },
        { jit_x64_imul_rr, "imul", N64, N64 }, { jit_x64_bt_rr, "bt", N64, N64 },
        { jit_x64_movzx_rr8, "movzx", N32, N8 },
    };
    for (size_t f = 0; f < COUNT(forms); f++)
        for (int d = 0; d < 16; d++)
            for (int s = 0; s < 16; s++)
                ASM(S("%s %s, %s", forms[f].mnemonic, forms[f].dst[d], forms[f].src[s]),
                    forms[f].emit(b, (X64Reg)d, (X64Reg)s));
    for (int cc = 0; cc < 16; cc++)
        for (int d = 0; d < 16; d++)
            for (int s = 0; s < 16; s++)
                ASM(S("cmov%s %s, %s", CC[cc], N64[d], N64[s]),
                    jit_x64_cmovcc_rr(b, (X64Cond)cc, (X64Reg)d, (X64Reg)s));
    NO_FAILURES();
}

typedef struct RForm {
    void (*emit)(X64Buf *, X64Reg);
    const char *format; /* one %s: the register */
} RForm;

static void every_single_register_form_round_trips(void **state)
{
    (void)state;
    static const RForm forms[] = {
        { jit_x64_neg_r, "neg %s" },       { jit_x64_not_r, "not %s" },       { jit_x64_inc_r, "inc %s" },
        { jit_x64_dec_r, "dec %s" },       { jit_x64_idiv_r, "idiv %s" },     { jit_x64_push_r, "push %s" },
        { jit_x64_pop_r, "pop %s" },       { jit_x64_call_r, "call %s" },     { jit_x64_jmp_r, "jmp %s" },
        { jit_x64_sar_rcl, "sar %s, cl" }, { jit_x64_shl_rcl, "shl %s, cl" }, { jit_x64_shr_rcl, "shr %s, cl" },
    };
    for (size_t f = 0; f < COUNT(forms); f++)
        for (int r = 0; r < 16; r++) ASM(S(forms[f].format, N64[r]), forms[f].emit(b, (X64Reg)r));
    for (int cc = 0; cc < 16; cc++)
        for (int r = 0; r < 16; r++) ASM(S("set%s %s", CC[cc], N8[r]), jit_x64_setcc_r(b, (X64Cond)cc, (X64Reg)r));
    for (int r = 0; r < 16; r++)
        for (unsigned n = 0; n < 64; n++) {
            ASM(S("shl %s, %s", N64[r], num(n)), jit_x64_shl_ri(b, (X64Reg)r, n));
            ASM(S("shr %s, %s", N64[r], num(n)), jit_x64_shr_ri(b, (X64Reg)r, n));
            ASM(S("sar %s, %s", N64[r], num(n)), jit_x64_sar_ri(b, (X64Reg)r, n));
            ASM(S("rol %s, %s", N64[r], num(n)), jit_x64_rol_ri(b, (X64Reg)r, n));
            ASM(S("ror %s, %s", N64[r], num(n)), jit_x64_ror_ri(b, (X64Reg)r, n));
            ASM(S("bt %s, %s", N64[r], num(n)), jit_x64_bt_ri(b, (X64Reg)r, n));
        }
    ASM("cqo", jit_x64_cqo(b));
    ASM("ret", jit_x64_ret(b));
    ASM("int3", jit_x64_int3(b));
    ASM("ud2", jit_x64_ud2(b));
    NO_FAILURES();
}

typedef struct RIForm {
    void (*emit)(X64Buf *, X64Reg, int32_t);
    const char *mnemonic;
    bool unsigned_imm; /* Capstone prints and/or/xor immediates as unsigned 64-bit */
} RIForm;

static void every_register_immediate_form_round_trips(void **state)
{
    (void)state;
    static const RIForm forms[] = {
        { jit_x64_add_ri, "add", false }, { jit_x64_sub_ri, "sub", false }, { jit_x64_and_ri, "and", true },
        { jit_x64_or_ri, "or", true },    { jit_x64_xor_ri, "xor", true },  { jit_x64_cmp_ri, "cmp", false },
        { jit_x64_mov_ri32, "mov", false },
    };
    for (int r = 0; r < 16; r++)
        for (size_t i = 0; i < COUNT(IMMS); i++) {
            int32_t v = IMMS[i];
            for (size_t f = 0; f < COUNT(forms); f++)
                ASM(S("%s %s, %s", forms[f].mnemonic, N64[r], forms[f].unsigned_imm ? imm_u(v) : imm_s(v)),
                    forms[f].emit(b, (X64Reg)r, v));
            if (v >= 0 && v <= 127) ASM(S("test %s, %s", N8[r], num(v)), jit_x64_test_ri(b, (X64Reg)r, v));
            else ASM(S("test %s, %s", N64[r], imm_s(v)), jit_x64_test_ri(b, (X64Reg)r, v));
            for (int s = 0; s < 16; s++)
                ASM(S("imul %s, %s, %s", N64[r], N64[s], imm_s(v)), jit_x64_imul_rri(b, (X64Reg)r, (X64Reg)s, v));
        }
    for (size_t i = 0; i < COUNT(IMMS); i++) ASM(S("push %s", imm_s(IMMS[i])), jit_x64_push_i32(b, IMMS[i]));

    static const uint64_t wide[] = { 0, 1, 10, 0x7fffffff, 0x80000000u, 0xffffffffu, 0x100000000ull,
                                     0x1122334455667788ull, 0xfffffffffffffff8ull, 0x8000000000000000ull };
    for (int r = 0; r < 16; r++)
        for (size_t i = 0; i < COUNT(wide); i++) {
            uint64_t v = wide[i];
            int64_t sv = (int64_t)v;
            ASM(S("movabs %s, %s", N64[r], num(v)), jit_x64_mov_ri64(b, (X64Reg)r, v));
            const char *want = v <= 0xffffffffu       ? S("mov %s, %s", N32[r], num(v))
                               : sv >= INT32_MIN && sv < 0 ? S("mov %s, %s", N64[r], imm_s(sv))
                                                           : S("movabs %s, %s", N64[r], num(v));
            ASM(want, jit_x64_mov_ri(b, (X64Reg)r, sv));
        }
    NO_FAILURES();
}

typedef struct RMForm {
    void (*emit)(X64Buf *, X64Reg, X64Mem);
    const char *mnemonic;
    const char *const *reg;
    const char *size;
} RMForm;

typedef struct MRForm {
    void (*emit)(X64Buf *, X64Mem, X64Reg);
    const char *mnemonic;
    const char *const *reg;
    const char *size;
} MRForm;

/* Each memory operand with every register the first time round (base-only
 * operands), then with registers in rotation (indexed operands). */
#define FOR_MEM_AND_REG(m, r)                                                                           \
    for (size_t mi_ = 0; mi_ < n_mems; mi_++)                                                           \
        for (int r = mems[mi_].index == JIT_X64_NOREG ? 0 : (int)(mi_ % 16),                            \
                 rend_ = mems[mi_].index == JIT_X64_NOREG ? 16 : r + 1;                                 \
             r < rend_; r++)                                                                            \
            for (X64Mem m = mems[mi_], *once_ = &m; once_; once_ = NULL)

static void every_register_memory_form_round_trips(void **state)
{
    (void)state;
    static const RMForm loads[] = {
        { jit_x64_mov_rm, "mov", N64, "qword" },        { jit_x64_add_rm, "add", N64, "qword" },
        { jit_x64_sub_rm, "sub", N64, "qword" },        { jit_x64_and_rm, "and", N64, "qword" },
        { jit_x64_or_rm, "or", N64, "qword" },          { jit_x64_xor_rm, "xor", N64, "qword" },
        { jit_x64_cmp_rm, "cmp", N64, "qword" },        { jit_x64_lea_rm, "lea", N64, "" },
        { jit_x64_mov_rm32, "mov", N32, "dword" },      { jit_x64_movzx_rm8, "movzx", N32, "byte" },
        { jit_x64_movzx_rm16, "movzx", N32, "word" },
    };
    static const MRForm stores[] = {
        { jit_x64_mov_mr, "mov", N64, "qword" },   { jit_x64_add_mr, "add", N64, "qword" },
        { jit_x64_sub_mr, "sub", N64, "qword" },   { jit_x64_and_mr, "and", N64, "qword" },
        { jit_x64_or_mr, "or", N64, "qword" },     { jit_x64_xor_mr, "xor", N64, "qword" },
        { jit_x64_cmp_mr, "cmp", N64, "qword" },   { jit_x64_mov_mr32, "mov", N32, "dword" },
        { jit_x64_mov_mr8, "mov", N8, "byte" },
    };
    FOR_MEM_AND_REG(m, r)
    {
        for (size_t f = 0; f < COUNT(loads); f++)
            ASM(S("%s %s, %s", loads[f].mnemonic, loads[f].reg[r], mem_text(m, loads[f].size)),
                loads[f].emit(b, (X64Reg)r, m));
        for (size_t f = 0; f < COUNT(stores); f++)
            ASM(S("%s %s, %s", stores[f].mnemonic, mem_text(m, stores[f].size), stores[f].reg[r]),
                stores[f].emit(b, m, (X64Reg)r));
    }
    NO_FAILURES();
}

typedef struct MIForm {
    void (*emit)(X64Buf *, X64Mem, int32_t);
    const char *mnemonic;
    bool unsigned_imm;
} MIForm;

typedef struct MForm {
    void (*emit)(X64Buf *, X64Mem);
    const char *mnemonic;
} MForm;

static void every_memory_immediate_and_memory_only_form_round_trips(void **state)
{
    (void)state;
    static const MIForm forms[] = {
        { jit_x64_add_mi, "add", false }, { jit_x64_sub_mi, "sub", false }, { jit_x64_and_mi, "and", true },
        { jit_x64_or_mi, "or", true },    { jit_x64_xor_mi, "xor", true },  { jit_x64_cmp_mi, "cmp", false },
        { jit_x64_mov_mi32, "mov", false },
    };
    static const MForm mforms[] = {
        { jit_x64_inc_m, "inc" }, { jit_x64_dec_m, "dec" }, { jit_x64_call_m, "call" }, { jit_x64_jmp_m, "jmp" },
    };
    for (size_t mi = 0; mi < n_mems; mi++) {
        X64Mem m = mems[mi];
        for (size_t f = 0; f < COUNT(forms); f++) {
            int32_t v = IMMS[(mi + f) % COUNT(IMMS)];
            ASM(S("%s %s, %s", forms[f].mnemonic, mem_text(m, "qword"), forms[f].unsigned_imm ? imm_u(v) : imm_s(v)),
                forms[f].emit(b, m, v));
        }
        for (size_t f = 0; f < COUNT(mforms); f++)
            ASM(S("%s %s", mforms[f].mnemonic, mem_text(m, "qword")), mforms[f].emit(b, m));
    }
    /* every immediate against a few operands, including the special bases */
    for (size_t i = 0; i < COUNT(IMMS); i++)
        for (int base = 0; base < 16; base++)
            for (size_t f = 0; f < COUNT(forms); f++) {
                X64Mem m = jit_x64_mem((X64Reg)base, DISPS[(i + base) % COUNT(DISPS)]);
                int32_t v = IMMS[i];
                ASM(S("%s %s, %s", forms[f].mnemonic, mem_text(m, "qword"), forms[f].unsigned_imm ? imm_u(v) : imm_s(v)),
                    forms[f].emit(b, m, v));
            }
    NO_FAILURES();
}

typedef struct XXForm {
    void (*emit)(X64Buf *, X64Xmm, X64Xmm);
    const char *mnemonic;
} XXForm;

typedef struct XMForm {
    void (*emit)(X64Buf *, X64Xmm, X64Mem);
    const char *mnemonic;
} XMForm;

static void every_sse2_form_round_trips(void **state)
{
    (void)state;
    static const XXForm xx[] = {
        { jit_x64_movsd_xx, "movaps" }, { jit_x64_addsd_xx, "addsd" }, { jit_x64_subsd_xx, "subsd" },
        { jit_x64_mulsd_xx, "mulsd" }, { jit_x64_divsd_xx, "divsd" }, { jit_x64_sqrtsd_xx, "sqrtsd" },
        { jit_x64_ucomisd_xx, "ucomisd" }, { jit_x64_xorps_xx, "xorps" },
    };
    static const XMForm xm[] = {
        { jit_x64_movsd_xm, "movsd" }, { jit_x64_addsd_xm, "addsd" }, { jit_x64_subsd_xm, "subsd" },
        { jit_x64_mulsd_xm, "mulsd" }, { jit_x64_divsd_xm, "divsd" }, { jit_x64_ucomisd_xm, "ucomisd" },
    };
    for (int d = 0; d < 16; d++)
        for (int s = 0; s < 16; s++) {
            for (size_t f = 0; f < COUNT(xx); f++)
                ASM(S("%s %s, %s", xx[f].mnemonic, NXMM[d], NXMM[s]), xx[f].emit(b, (X64Xmm)d, (X64Xmm)s));
            ASM(S("movq %s, %s", NXMM[d], N64[s]), jit_x64_movq_xr(b, (X64Xmm)d, (X64Reg)s));
            ASM(S("movq %s, %s", N64[d], NXMM[s]), jit_x64_movq_rx(b, (X64Reg)d, (X64Xmm)s));
            ASM(S("cvtsi2sd %s, %s", NXMM[d], N64[s]), jit_x64_cvtsi2sd_xr(b, (X64Xmm)d, (X64Reg)s));
            ASM(S("cvttsd2si %s, %s", N64[d], NXMM[s]), jit_x64_cvttsd2si_rx(b, (X64Reg)d, (X64Xmm)s));
        }
    FOR_MEM_AND_REG(m, x)
    {
        for (size_t f = 0; f < COUNT(xm); f++)
            ASM(S("%s %s, %s", xm[f].mnemonic, NXMM[x], mem_text(m, "qword")), xm[f].emit(b, (X64Xmm)x, m));
        ASM(S("movsd %s, %s", mem_text(m, "qword"), NXMM[x]), jit_x64_movsd_mx(b, m, (X64Xmm)x));
    }
    NO_FAILURES();
}

/* Direct branches to addresses: decoded targets are absolute in Capstone's text. */
static void direct_branches_reach_their_targets(void **state)
{
    (void)state;
    static const int64_t deltas[] = { 0, 2, 5, 6, -1, 127, 129, -126, -128, 0x1000, -0x1000, 0x7ffffff0ll, -0x7ffffff0ll };
    static uint8_t mem[64];
    for (size_t i = 0; i < COUNT(deltas); i++) {
        uintptr_t target = (uintptr_t)mem + (uintptr_t)deltas[i];
        const void *t = (const void *)target;
        char at[32]; /* not from the rotating pool: it must outlive many S() calls */
        snprintf(at, sizeof at, "%s", num(target));
        ASM_AT(mem, S("call %s", at), jit_x64_call_rel32(b, t));
        ASM_AT(mem, S("jmp %s", at), jit_x64_jmp_rel32(b, t));
        for (int cc = 0; cc < 16; cc++) ASM_AT(mem, S("j%s %s", CC[cc], at), jit_x64_jcc_rel32(b, (X64Cond)cc, t));
        int64_t rel8 = deltas[i] - 2;
        if (rel8 >= -128 && rel8 <= 127) {
            ASM_AT(mem, S("jmp %s", at), jit_x64_jmp_rel8(b, t));
            for (int cc = 0; cc < 16; cc++) ASM_AT(mem, S("j%s %s", CC[cc], at), jit_x64_jcc_rel8(b, (X64Cond)cc, t));
        } else {
            X64Buf b;
            jit_x64_buf_init(&b, mem, sizeof mem);
            jit_x64_jmp_rel8(&b, t);
            jit_x64_jcc_rel8(&b, JIT_X64_CC_E, t);
            assert_false(jit_x64_finish(&b, NULL));
            assert_int_equal(jit_x64_size(&b), 0);
        }
    }
    NO_FAILURES();
}

static void nops_and_alignment_pad_with_whole_nops(void **state)
{
    (void)state;
    static uint8_t mem[256] __attribute__((aligned(64)));
    for (size_t n = 0; n <= 40; n++) {
        X64Buf b;
        jit_x64_buf_init(&b, mem, sizeof mem);
        jit_x64_nop(&b, n);
        assert_true(jit_x64_finish(&b, NULL));
        assert_int_equal(jit_x64_size(&b), n);
        cs_insn *insn;
        size_t count = cs_disasm(cs, mem, n, 0, 0, &insn);
        size_t total = 0;
        for (size_t i = 0; i < count; i++) {
            assert_string_equal(insn[i].mnemonic, "nop");
            total += insn[i].size;
        }
        assert_int_equal(total, n);
        assert_int_equal(count, (n + 8) / 9); /* as few instructions as the 9-byte limit allows */
        if (count) cs_free(insn, count);
    }
    for (size_t start = 0; start < 40; start++) {
        X64Buf b;
        jit_x64_buf_init(&b, mem, sizeof mem);
        jit_x64_nop(&b, start);
        jit_x64_align(&b, 16);
        assert_int_equal((uintptr_t)b.pc % 16, 0);
        assert_true(jit_x64_size(&b) >= start && jit_x64_size(&b) < start + 16);
        jit_x64_align(&b, 16); /* already aligned: nothing */
        assert_int_equal(jit_x64_size(&b), (start + 15) / 16 * 16);
        assert_true(jit_x64_finish(&b, NULL));
    }
}

/* -- Labels ------------------------------------------------------------------------------ */

typedef struct Decoded {
    char mnemonic[32];
    char op_str[160];
    uint64_t address;
    uint16_t size;
} Decoded;

/* Decode the whole buffer; returns the instruction count and fails the test if
 * the bytes do not decode end to end. */
static size_t decode_all(X64Buf *b, Decoded *out, size_t max)
{
    cs_insn *insn;
    size_t n = jit_x64_size(b);
    size_t count = cs_disasm(cs, b->start, n, (uint64_t)(uintptr_t)b->start, 0, &insn);
    size_t total = 0;
    assert_true(count <= max);
    for (size_t i = 0; i < count; i++) {
        snprintf(out[i].mnemonic, sizeof out[i].mnemonic, "%s", insn[i].mnemonic);
        snprintf(out[i].op_str, sizeof out[i].op_str, "%s", insn[i].op_str);
        out[i].address = insn[i].address;
        out[i].size = insn[i].size;
        total += insn[i].size;
    }
    if (count) cs_free(insn, count);
    assert_int_equal(total, n);
    return count;
}

static const Decoded *at(const Decoded *d, size_t n, const uint8_t *addr)
{
    for (size_t i = 0; i < n; i++)
        if (d[i].address == (uint64_t)(uintptr_t)addr) return &d[i];
    fail_msg("no instruction at %p", (const void *)addr);
    return NULL;
}

static void forward_and_backward_branches_reach_their_labels(void **state)
{
    (void)state;
    static uint8_t mem[1024];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    X64Label top = JIT_X64_LABEL("top"), fwd = JIT_X64_LABEL("fwd"), far = JIT_X64_LABEL("far");
    uint8_t *sites[40];
    size_t n_sites = 0;

    jit_x64_label_bind(&b, &top);
    /* forward references of every kind, all to the same unbound label */
    sites[n_sites++] = b.pc, jit_x64_jmp_label(&b, &fwd);
    for (int cc = 0; cc < 16; cc++) sites[n_sites++] = b.pc, jit_x64_jcc_label(&b, (X64Cond)cc, &fwd);
    sites[n_sites++] = b.pc, jit_x64_call_label(&b, &fwd);
    uint8_t *lea_site = b.pc;
    jit_x64_lea_rl(&b, JIT_X64_R11, &fwd);
    jit_x64_mov_rr(&b, RAX, RBX);
    assert_false(jit_x64_label_is_bound(&fwd));
    assert_null(jit_x64_label_address(&b, &fwd));
    jit_x64_label_bind(&b, &fwd);
    assert_ptr_equal(jit_x64_label_address(&b, &fwd), b.pc);
    /* backward references: near ones get rel8 */
    uint8_t *back_sites[17];
    back_sites[0] = b.pc, jit_x64_jmp_label(&b, &top);
    for (int cc = 0; cc < 16; cc++) back_sites[cc + 1] = b.pc, jit_x64_jcc_label(&b, (X64Cond)cc, &fwd);
    /* a forward reference that ends up far away still reaches */
    uint8_t *far_site = b.pc;
    jit_x64_jcc_label(&b, JIT_X64_CC_NE, &far);
    jit_x64_nop(&b, 300);
    jit_x64_label_bind(&b, &far);
    uint8_t *far_back = b.pc;
    jit_x64_jmp_label(&b, &top); /* too far for rel8 */
    jit_x64_ret(&b);
    const char *why;
    assert_true(jit_x64_finish(&b, &why));

    static Decoded d[200];
    size_t n = decode_all(&b, d, COUNT(d));
    uint64_t fwd_at = (uint64_t)(uintptr_t)jit_x64_label_address(&b, &fwd);
    uint64_t top_at = (uint64_t)(uintptr_t)mem;
    for (size_t i = 0; i < n_sites; i++) {
        const Decoded *x = at(d, n, sites[i]);
        assert_string_equal(x->op_str, num(fwd_at));
        assert_true(x->size >= 5); /* unbound when emitted: rel32 */
    }
    assert_string_equal(at(d, n, sites[0])->mnemonic, "jmp");
    for (int cc = 0; cc < 16; cc++) assert_string_equal(at(d, n, sites[cc + 1])->mnemonic, S("j%s", CC[cc]));
    assert_string_equal(at(d, n, sites[17])->mnemonic, "call");
    const Decoded *lea = at(d, n, lea_site);
    assert_string_equal(lea->op_str, S("r11, [rip + %s]", num(fwd_at - (lea->address + lea->size))));

    assert_string_equal(at(d, n, back_sites[0])->op_str, num(top_at));
    assert_int_equal(at(d, n, back_sites[0])->size, 2);
    for (int cc = 0; cc < 16; cc++) {
        const Decoded *x = at(d, n, back_sites[cc + 1]);
        assert_string_equal(x->mnemonic, S("j%s", CC[cc]));
        assert_string_equal(x->op_str, num(fwd_at));
        assert_int_equal(x->size, 2);
    }
    assert_string_equal(at(d, n, far_site)->op_str, num((uint64_t)(uintptr_t)jit_x64_label_address(&b, &far)));
    assert_int_equal(at(d, n, far_site)->size, 6);
    assert_string_equal(at(d, n, far_back)->op_str, num(top_at));
    assert_int_equal(at(d, n, far_back)->size, 5);
}

static void rel8_is_chosen_exactly_when_the_bound_target_is_in_range(void **state)
{
    (void)state;
    static uint8_t mem[512];
    /* a backward jump at offset k to a label at 0 has rel8 = -(k + 2) */
    for (size_t k = 120; k <= 132; k++) {
        X64Buf b;
        jit_x64_buf_init(&b, mem, sizeof mem);
        X64Label l = JIT_X64_LABEL("l");
        jit_x64_label_bind(&b, &l);
        jit_x64_nop(&b, k);
        jit_x64_jmp_label(&b, &l);
        assert_int_equal(jit_x64_size(&b) - k, k + 2 <= 128 ? 2 : 5);
        size_t before = jit_x64_size(&b);
        jit_x64_jcc_label(&b, JIT_X64_CC_E, &l);
        assert_int_equal(jit_x64_size(&b) - before, before + 2 <= 128 ? 2 : 6);
        before = jit_x64_size(&b);
        jit_x64_jmp_label32(&b, &l); /* patchable form: always rel32 */
        jit_x64_jcc_label32(&b, JIT_X64_CC_E, &l);
        assert_int_equal(jit_x64_size(&b) - before, 11);
        assert_true(jit_x64_finish(&b, NULL));
        static Decoded d[40];
        size_t n = decode_all(&b, d, COUNT(d));
        for (size_t i = 0; i < n; i++)
            if (strcmp(d[i].mnemonic, "nop") != 0) assert_string_equal(d[i].op_str, num((uint64_t)(uintptr_t)mem));
    }
    /* a label bound ahead of its reference by exactly the rel8 reach */
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    X64Label l = JIT_X64_LABEL("ahead");
    jit_x64_jmp_label(&b, &l); /* unbound: rel32 even though it will be near */
    assert_int_equal(jit_x64_size(&b), 5);
    jit_x64_label_bind(&b, &l);
    assert_true(jit_x64_finish(&b, NULL));
    assert_int_equal(mem[0], 0xE9);
    assert_int_equal(mem[1] | mem[2] | mem[3] | mem[4], 0);
}

static void an_unbound_label_fails_finish_with_its_name(void **state)
{
    (void)state;
    static uint8_t mem[128];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    X64Label bound = JIT_X64_LABEL("bound"), slow = JIT_X64_LABEL("slowPath"), other;
    jit_x64_label_init(&other, "other");
    jit_x64_jcc_label(&b, JIT_X64_CC_O, &slow);
    jit_x64_jmp_label(&b, &bound);
    jit_x64_call_label(&b, &slow);
    jit_x64_lea_rl(&b, RAX, &other);
    jit_x64_label_bind(&b, &bound);
    const char *why = NULL;
    assert_false(jit_x64_finish(&b, &why));
    assert_non_null(strstr(why, "never bound"));
    assert_non_null(strstr(why, "(2 such labels)"));
    assert_true(strstr(why, "slowPath") || strstr(why, "other"));
    jit_x64_label_bind(&b, &other);
    assert_false(jit_x64_finish(&b, &why));
    assert_non_null(strstr(why, "'slowPath'"));
    assert_non_null(strstr(why, "(1 such label)"));
    jit_x64_label_bind(&b, &slow);
    assert_true(jit_x64_finish(&b, &why));
    assert_null(why);
    /* a label that is never referenced need not be bound */
    X64Label unused = JIT_X64_LABEL("unused");
    (void)unused;
    assert_true(jit_x64_finish(&b, NULL));
}

static void forms_that_cannot_be_encoded_are_refused_and_reported(void **state)
{
    (void)state;
    static uint8_t mem[64];
    X64Buf b;
#define REFUSED(stmt, text)                                                                               \
    do {                                                                                                  \
        jit_x64_buf_init(&b, mem, sizeof mem);                                                            \
        jit_x64_ret(&b);                                                                                  \
        stmt;                                                                                             \
        const char *why_;                                                                                 \
        assert_false(jit_x64_finish(&b, &why_));                                                          \
        if (!strstr(why_, text)) fail_msg("%s: message '%s' lacks '%s'", #stmt, why_, text);              \
        assert_int_equal(jit_x64_size(&b), 1); /* nothing of the refused form */                          \
        jit_x64_ret(&b);                       /* the buffer goes on; the error stays */                  \
        assert_false(jit_x64_finish(&b, NULL));                                                           \
    } while (0)
    REFUSED(jit_x64_mov_rm(&b, RAX, MI(RBX, RSP, 1, 0)), "RSP cannot be an index");
    REFUSED(jit_x64_lea_rm(&b, RAX, MI(RBX, RCX, 3, 0)), "scale");
    REFUSED(jit_x64_mov_rm(&b, RAX, M(JIT_X64_NOREG, 0)), "without a base");
    REFUSED(jit_x64_mov_rr(&b, JIT_X64_NOREG, RAX), "register out of range");
    REFUSED(jit_x64_movsd_xx(&b, (X64Xmm)16, JIT_X64_XMM0), "register out of range");
    REFUSED(jit_x64_jmp_rel8(&b, (void *)((uintptr_t)mem + 200)), "rel8 target out of range");
    REFUSED(jit_x64_jcc_rel8(&b, JIT_X64_CC_E, (void *)((uintptr_t)mem - 200)), "rel8 target out of range");
    REFUSED(jit_x64_call_rel32(&b, (void *)((uintptr_t)mem + 0x100000000ull)), "rel32 target out of range");
    REFUSED(jit_x64_jcc_rel32(&b, (X64Cond)16, mem), "condition code");
    REFUSED(jit_x64_shl_ri(&b, RAX, 64), "shift count 64");
    REFUSED(jit_x64_bt_ri(&b, RAX, 64), "bit index 64");
    REFUSED(jit_x64_align(&b, 12), "not a power of two");
    X64Label twice = JIT_X64_LABEL("twice");
    REFUSED((jit_x64_label_bind(&b, &twice), jit_x64_label_bind(&b, &twice)), "label 'twice' bound twice");
#undef REFUSED
}

/* -- Patchable sites ---------------------------------------------------------------------------- */

static void rel32_sites_patch_and_read_back(void **state)
{
    (void)state;
    static uint8_t mem[256];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    jit_x64_call_rel32(&b, mem + 100);
    uint8_t *call_site = b.pc;
    jit_x64_jmp_rel32(&b, mem + 100);
    uint8_t *jmp_site = b.pc;
    jit_x64_jcc_rel32(&b, JIT_X64_CC_LE, mem + 100);
    uint8_t *jcc_site = b.pc;
    jit_x64_mov_rr(&b, RAX, RBX);
    uint8_t *not_a_site = b.pc;
    jit_x64_mov_rm(&b, RAX, M(RBX, 0x1000)); /* 48 8b 83 disp32: 0x83 where a jcc has 0x8x */
    uint8_t *looks_like_jcc = b.pc;
    assert_true(jit_x64_finish(&b, NULL));
    assert_int_equal(call_site - mem, JIT_X64_CALL_REL32_SIZE);
    assert_int_equal(jmp_site - call_site, JIT_X64_JMP_REL32_SIZE);
    assert_int_equal(jcc_site - jmp_site, JIT_X64_JCC_REL32_SIZE);

    uint8_t *sites[] = { call_site, jmp_site, jcc_site };
    const char *mnemonics[] = { "call", "jmp", "jle" };
    for (size_t i = 0; i < COUNT(sites); i++) {
        uint8_t *t;
        assert_true(jit_x64_read_rel32(sites[i], &t));
        assert_ptr_equal(t, mem + 100);
        static const intptr_t moves[] = { 0, -1, 0x7ffffff0, -0x7ffffff0 };
        for (size_t k = 0; k < COUNT(moves); k++) {
            uint8_t *target = (uint8_t *)((uintptr_t)sites[i] + (uintptr_t)moves[k]);
            assert_true(jit_x64_patch_rel32(sites[i], target));
            assert_true(jit_x64_read_rel32(sites[i], &t));
            assert_ptr_equal(t, target);
            /* Capstone agrees */
            cs_insn *insn;
            uint8_t *start = sites[i] - (i == 2 ? JIT_X64_JCC_REL32_SIZE : JIT_X64_CALL_REL32_SIZE);
            size_t count = cs_disasm(cs, start, sites[i] - start, (uint64_t)(uintptr_t)start, 1, &insn);
            assert_int_equal(count, 1);
            assert_string_equal(insn->mnemonic, mnemonics[i]);
            assert_string_equal(insn->op_str, num((uint64_t)(uintptr_t)target));
            cs_free(insn, count);
        }
        /* a target beyond rel32 reach is refused and the site keeps its old target */
        uint8_t before[JIT_X64_REL32_BYTES];
        memcpy(before, sites[i] - JIT_X64_REL32_BYTES, JIT_X64_REL32_BYTES);
        assert_false(jit_x64_patch_rel32(sites[i], (void *)((uintptr_t)sites[i] + 0x80000000ull)));
        assert_memory_equal(before, sites[i] - JIT_X64_REL32_BYTES, JIT_X64_REL32_BYTES);
    }
    /* a site that is not a call/jmp/jcc rel32 fails to read back and is not written */
    uint8_t before[8];
    uint8_t *t = NULL;
    memcpy(before, not_a_site - 8, 8);
    assert_false(jit_x64_read_rel32(not_a_site, &t));
    assert_false(jit_x64_patch_rel32(not_a_site, mem));
    assert_memory_equal(before, not_a_site - 8, 8);
    memcpy(before, looks_like_jcc - 8, 8);
    assert_false(jit_x64_read_rel32(looks_like_jcc, &t));
    assert_false(jit_x64_patch_rel32(looks_like_jcc, mem));
    assert_memory_equal(before, looks_like_jcc - 8, 8);
    assert_null(t);
}

static void movabs_sites_patch_and_read_back(void **state)
{
    (void)state;
    static uint8_t mem[64];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    uint8_t *site_rax = b.pc;
    jit_x64_mov_ri64(&b, RAX, 0x1111);
    uint8_t *site_r13 = b.pc;
    jit_x64_mov_ri64(&b, R13, 0x2222);
    uint8_t *not_a_site = b.pc;
    jit_x64_mov_ri32(&b, RAX, 5);
    assert_true(jit_x64_finish(&b, NULL));
    assert_int_equal(site_r13 - site_rax, JIT_X64_MOVABS_SIZE);
    uint64_t v;
    assert_true(jit_x64_read_imm64(site_rax, &v));
    assert_int_equal(v, 0x1111);
    assert_true(jit_x64_read_imm64(site_r13, &v));
    assert_int_equal(v, 0x2222);
    static const uint64_t values[] = { 0, 1, 0xdeadbeefcafebabeull, UINT64_MAX, 0x8000000000000000ull };
    for (size_t i = 0; i < COUNT(values); i++) {
        assert_true(jit_x64_patch_imm64(site_r13, values[i]));
        assert_true(jit_x64_read_imm64(site_r13, &v));
        assert_int_equal(v, values[i]);
        assert_int_equal(site_r13[JIT_X64_MOVABS_IMM_OFFSET], values[i] & 0xff);
        cs_insn *insn;
        size_t count = cs_disasm(cs, site_r13, JIT_X64_MOVABS_SIZE, 0, 1, &insn);
        assert_int_equal(count, 1);
        assert_string_equal(insn->op_str, S("r13, %s", num(values[i])));
        cs_free(insn, count);
    }
    /* the neighbour is untouched */
    assert_true(jit_x64_read_imm64(site_rax, &v));
    assert_int_equal(v, 0x1111);
    /* not a movabs: the read fails and the patch writes nothing */
    uint8_t before[7];
    memcpy(before, not_a_site, sizeof before);
    assert_false(jit_x64_read_imm64(not_a_site, &v));
    assert_false(jit_x64_patch_imm64(not_a_site, 42));
    assert_memory_equal(before, not_a_site, sizeof before);
}

/* -- Overflow ------------------------------------------------------------------------------------ */

static void overflow_is_sticky_and_nothing_is_written_past_the_end(void **state)
{
    (void)state;
    for (size_t size = 0; size <= 24; size++) {
        /* malloc'd at exactly `size` bytes so the sanitizers see any write past it */
        uint8_t *mem = malloc(size ? size : 1);
        assert_non_null(mem);
        X64Buf b;
        jit_x64_buf_init(&b, mem, size);
        size_t i = 0;
        while (!b.overflow) {
            switch (i++ % 4) {
            case 0: jit_x64_mov_rm(&b, R12, MI(R13, R12, 8, 0x1000)); break; /* 8 bytes */
            case 1: jit_x64_ret(&b); break;
            case 2: jit_x64_mov_ri64(&b, RAX, 7); break;
            case 3: jit_x64_add_ri(&b, RCX, 1); break;
            }
        }
        size_t used = jit_x64_size(&b);
        assert_true(used <= size);
        /* sticky: even a one-byte instruction that would fit is not written */
        jit_x64_ret(&b);
        jit_x64_nop(&b, 1);
        jit_x64_data(&b, "x", 1);
        assert_true(b.overflow);
        assert_int_equal(jit_x64_size(&b), used);
        const char *why;
        assert_false(jit_x64_finish(&b, &why));
        assert_non_null(strstr(why, "overflow"));
        /* only whole instructions were written */
        size_t total = 0;
        cs_insn *insn;
        size_t count = cs_disasm(cs, mem, used, 0, 0, &insn);
        for (size_t k = 0; k < count; k++) total += insn[k].size;
        if (count) cs_free(insn, count);
        assert_int_equal(total, used);
        free(mem);
    }
    /* an instruction that fits exactly is not an overflow */
    uint8_t exact[JIT_X64_MOVABS_SIZE + 1];
    exact[JIT_X64_MOVABS_SIZE] = 0xA5;
    X64Buf b;
    jit_x64_buf_init(&b, exact, JIT_X64_MOVABS_SIZE);
    jit_x64_mov_ri64(&b, R9, UINT64_MAX);
    assert_false(b.overflow);
    assert_true(jit_x64_finish(&b, NULL));
    jit_x64_int3(&b);
    assert_true(b.overflow);
    assert_int_equal(exact[JIT_X64_MOVABS_SIZE], 0xA5);
    /* a label referenced after the overflow does not corrupt anything either */
    X64Label l = JIT_X64_LABEL("late");
    jit_x64_jmp_label(&b, &l);
    jit_x64_label_bind(&b, &l);
    assert_int_equal(exact[JIT_X64_MOVABS_SIZE], 0xA5);
    assert_false(jit_x64_finish(&b, NULL));
}

/* -- The cold section ------------------------------------------------------------------ */

/* The decoded instruction n-th from the buffer's start. */
static const Decoded *nth(const Decoded *d, size_t n, size_t i)
{
    assert_true(i < n);
    return &d[i];
}

static void cold_code_moves_after_the_main_code_and_every_jump_still_lands(void **state)
{
    (void)state;
    static uint8_t mem[1024];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    jit_x64_cold_init(&b, 512);
    X64Label top = JIT_X64_LABEL("top"), slow = JIT_X64_LABEL("slow"), done = JIT_X64_LABEL("done"),
             late = JIT_X64_LABEL("bound after the join");
    jit_x64_label_bind(&b, &top);
    jit_x64_test_ri(&b, RAX, 1);                         /* 0: test al, 1 (2 bytes) */
    jit_x64_jcc_label(&b, JIT_X64_CC_Z, &slow);          /* 2: jz slow (cold, rel32) */
    jit_x64_mov_ri(&b, RCX, 7);                          /* 8: the fast path */
    jit_x64_jmp_forward(&b, &done);                      /* dropped: done is bound next in the main code */
    jit_x64_cold_begin(&b);
    assert_true(jit_x64_in_cold(&b));
    assert_int_equal(jit_x64_size(&b), 512);
    jit_x64_label_bind(&b, &slow);
    jit_x64_call_rel32(&b, mem + 2);                     /* an address that stays */
    jit_x64_jcc_label(&b, JIT_X64_CC_NE, &top);          /* back to the main code: rel32, not rel8 */
    jit_x64_jcc_label(&b, JIT_X64_CC_O, &late);          /* to a label bound after the join */
    jit_x64_jmp_forward(&b, &done);                      /* emitted: done is in the main code */
    jit_x64_cold_end(&b);
    assert_false(jit_x64_in_cold(&b));
    jit_x64_label_bind(&b, &done);
    assert_int_equal(jit_x64_size(&b), 13);              /* no jump over the cold code */
    jit_x64_ret(&b);                                     /* 13 */
    size_t moved = jit_x64_cold_join(&b);
    assert_int_equal(moved, 512 - 14);
    uint8_t *cold = mem + 14;
    jit_x64_label_bind(&b, &late);
    jit_x64_int3(&b);
    assert_true(jit_x64_finish(&b, NULL));

    static Decoded d[40];
    size_t n = decode_all(&b, d, COUNT(d));
    assert_string_equal(nth(d, n, 1)->mnemonic, "je");
    assert_string_equal(nth(d, n, 1)->op_str, num((uint64_t)(uintptr_t)cold));
    assert_string_equal(nth(d, n, 2)->mnemonic, "mov");
    assert_string_equal(nth(d, n, 3)->mnemonic, "ret");
    assert_string_equal(nth(d, n, 4)->mnemonic, "call");
    assert_int_equal(nth(d, n, 4)->address, (uint64_t)(uintptr_t)cold);
    assert_string_equal(nth(d, n, 4)->op_str, num((uint64_t)(uintptr_t)(mem + 2)));
    assert_string_equal(nth(d, n, 5)->mnemonic, "jne");
    assert_string_equal(nth(d, n, 5)->op_str, num((uint64_t)(uintptr_t)mem));
    assert_string_equal(nth(d, n, 6)->mnemonic, "jo");
    assert_string_equal(nth(d, n, 6)->op_str, num((uint64_t)(uintptr_t)jit_x64_label_address(&b, &late)));
    assert_string_equal(nth(d, n, 7)->mnemonic, "jmp");
    assert_string_equal(nth(d, n, 7)->op_str, num((uint64_t)(uintptr_t)(mem + 13)));
    assert_string_equal(nth(d, n, 8)->mnemonic, "int3");
}

static void without_a_cold_section_the_cold_code_stays_in_line(void **state)
{
    (void)state;
    static uint8_t mem[256];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    X64Label slow = JIT_X64_LABEL("slow"), done = JIT_X64_LABEL("done");
    jit_x64_jcc_label(&b, JIT_X64_CC_Z, &slow); /* 0: 6 bytes */
    jit_x64_jmp_forward(&b, &done);             /* 6: emitted, the cold code follows it */
    jit_x64_cold_begin(&b);
    assert_false(jit_x64_in_cold(&b));
    jit_x64_label_bind(&b, &slow);              /* 11 */
    jit_x64_int3(&b);
    jit_x64_jmp_forward(&b, &done);             /* dropped: done is bound next */
    jit_x64_cold_end(&b);
    jit_x64_label_bind(&b, &done);
    jit_x64_ret(&b);
    assert_int_equal(jit_x64_cold_join(&b), 0);
    assert_true(jit_x64_finish(&b, NULL));
    assert_int_equal(jit_x64_size(&b), 13);
    static Decoded d[8];
    size_t n = decode_all(&b, d, COUNT(d));
    assert_int_equal(n, 4);
    assert_string_equal(d[1].mnemonic, "jmp");
    assert_string_equal(d[1].op_str, num((uint64_t)(uintptr_t)(mem + 12)));
    assert_string_equal(d[0].op_str, num((uint64_t)(uintptr_t)(mem + 11)));

    /* code that falls into the cold code keeps it in line even with a cold section */
    jit_x64_buf_init(&b, mem, sizeof mem);
    jit_x64_cold_init(&b, 128);
    jit_x64_nop(&b, 1);
    jit_x64_cold_begin(&b);
    assert_false(jit_x64_in_cold(&b));
    jit_x64_int3(&b);
    jit_x64_cold_begin(&b); /* nested: begun in the main code, so still in line */
    assert_false(jit_x64_in_cold(&b));
    jit_x64_cold_end(&b);
    jit_x64_cold_end(&b);
    assert_int_equal(jit_x64_size(&b), 2);
    assert_int_equal(jit_x64_cold_join(&b), 128 - 2);
    assert_true(jit_x64_finish(&b, NULL));

    /* a forward jump is dropped only when its label is the next thing bound */
    jit_x64_buf_init(&b, mem, sizeof mem);
    X64Label l = JIT_X64_LABEL("l"), other = JIT_X64_LABEL("other");
    jit_x64_jmp_forward(&b, &l);
    jit_x64_label_bind(&b, &other);
    jit_x64_label_bind(&b, &l);
    assert_int_equal(jit_x64_size(&b), 5);
    jit_x64_jmp_forward(&b, &l); /* bound already: a plain backward jump */
    assert_int_equal(jit_x64_size(&b), 10);
    assert_true(jit_x64_finish(&b, NULL));
    /* and a begin without an end is reported */
    jit_x64_buf_init(&b, mem, sizeof mem);
    jit_x64_cold_init(&b, 64);
    X64Label x = JIT_X64_LABEL("x"), y = JIT_X64_LABEL("y");
    jit_x64_jmp_forward(&b, &x);
    jit_x64_jmp_label(&b, &y);
    jit_x64_cold_begin(&b);
    assert_false(jit_x64_finish(&b, NULL));
}

static void rip_relative_add_and_sub_read_their_label(void **state)
{
    (void)state;
    static uint8_t mem[64];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    X64Label k = JIT_X64_LABEL("constant");
    jit_x64_add_rl(&b, JIT_X64_RDI, &k);
    jit_x64_sub_rl(&b, JIT_X64_R11, &k);
    jit_x64_ret(&b);
    jit_x64_label_bind(&b, &k);
    uint8_t *at_k = b.pc;
    assert_true(jit_x64_finish(&b, NULL));
    static Decoded d[8];
    size_t n = decode_all(&b, d, COUNT(d));
    assert_int_equal(n, 3);
    assert_string_equal(d[0].mnemonic, "add");
    assert_string_equal(d[0].op_str, S("rdi, qword ptr [rip + %s]", num((uint64_t)(uintptr_t)at_k - (d[0].address + d[0].size))));
    assert_string_equal(d[1].mnemonic, "sub");
    assert_string_equal(d[1].op_str, S("r11, qword ptr [rip + %s]", num((uint64_t)(uintptr_t)at_k - (d[1].address + d[1].size))));
}

static void data_is_copied_whole(void **state)
{
    (void)state;
    uint8_t mem[16];
    X64Buf b;
    jit_x64_buf_init(&b, mem, sizeof mem);
    jit_x64_data(&b, "\x01\x02\x03", 3);
    jit_x64_ret(&b);
    assert_true(jit_x64_finish(&b, NULL));
    assert_memory_equal(mem, "\x01\x02\x03\xc3", 4);
    jit_x64_data(&b, "0123456789abcdef", 16);
    assert_true(b.overflow);
    assert_int_equal(jit_x64_size(&b), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(memory_operands_encode_the_special_bases_and_displacements, setup),
        cmocka_unit_test_setup(immediates_choose_imm8_when_it_fits, setup),
        cmocka_unit_test_setup(moves_of_constants_pick_the_documented_forms, setup),
        cmocka_unit_test_setup(the_other_forms_encode_as_the_manual_says, setup),
        cmocka_unit_test_setup(every_register_register_form_round_trips, setup),
        cmocka_unit_test_setup(every_single_register_form_round_trips, setup),
        cmocka_unit_test_setup(every_register_immediate_form_round_trips, setup),
        cmocka_unit_test_setup(every_register_memory_form_round_trips, setup),
        cmocka_unit_test_setup(every_memory_immediate_and_memory_only_form_round_trips, setup),
        cmocka_unit_test_setup(every_sse2_form_round_trips, setup),
        cmocka_unit_test_setup(direct_branches_reach_their_targets, setup),
        cmocka_unit_test_setup(nops_and_alignment_pad_with_whole_nops, setup),
        cmocka_unit_test_setup(forward_and_backward_branches_reach_their_labels, setup),
        cmocka_unit_test_setup(rel8_is_chosen_exactly_when_the_bound_target_is_in_range, setup),
        cmocka_unit_test_setup(an_unbound_label_fails_finish_with_its_name, setup),
        cmocka_unit_test_setup(forms_that_cannot_be_encoded_are_refused_and_reported, setup),
        cmocka_unit_test_setup(rel32_sites_patch_and_read_back, setup),
        cmocka_unit_test_setup(movabs_sites_patch_and_read_back, setup),
        cmocka_unit_test_setup(overflow_is_sticky_and_nothing_is_written_past_the_end, setup),
        cmocka_unit_test_setup(data_is_copied_whole, setup),
        cmocka_unit_test_setup(cold_code_moves_after_the_main_code_and_every_jump_still_lands, setup),
        cmocka_unit_test_setup(without_a_cold_section_the_cold_code_stays_in_line, setup),
        cmocka_unit_test_setup(rip_relative_add_and_sub_read_their_label, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
