/*
 * vm/jit/sendsite.c — send sites and PICs (the bytes are drawn in
 * vm/jit/sendsite.h).
 */
#include "vm/jit/sendsite.h"

#include "vm/jit/piece.h"
#include "vm/jit/x64_regs.h"
#include "vm/model/class.h"
#include "vm/model/counter.h"
#include "vm/model/lookup.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>

_Static_assert(sizeof(VmCacheEntry) == 24, "the open PIC indexes the lookup cache by 3 * 8 bytes");
_Static_assert(offsetof(VmCacheEntry, selector) == 0, "open PIC: selector at 0");
_Static_assert(offsetof(VmCacheEntry, class_index) == 8, "open PIC: class index at 8");
_Static_assert(offsetof(VmCacheEntry, method) == 16, "open PIC: method at 16");
_Static_assert(OBJ_CLASS_SHIFT == 0 && OBJ_CLASS_BITS <= 31, "the class index is the header's low bits");
_Static_assert(offsetof(JitMethod, unchecked_entry) == 28, "open PIC reads the unchecked entry offset at 28");

/* -- Sites ------------------------------------------------------------------------ */

void jit_sendsite_emit(X64Buf *b, uint32_t tag, const void *target)
{
    jit_x64_mov_r32i(b, RDI, tag);
    jit_x64_call_rel32(b, target);
}

/* Exactly mov edi, imm32 (BF) then call rel32 (E8). */
static bool is_site(const uint8_t *ra)
{
    return ra[-JIT_X64_CALL_REL32_SIZE] == 0xE8 && ra[-JIT_SENDSITE_BYTES] == 0xBF;
}

bool jit_sendsite_read(const uint8_t *ra, JitSendSite *out)
{
    return is_site(ra) && jit_x64_read_rel32(ra, &out->target) &&
           jit_x64_read_mov_imm32(ra - JIT_SENDSITE_BYTES, &out->tag);
}

bool jit_sendsite_write(uint8_t *ra, uint32_t tag, const void *target)
{
    if (!is_site(ra)) return false;
    /* the target first: when it is out of reach nothing has changed */
    if (!jit_x64_patch_rel32(ra, target) || !jit_x64_patch_mov_imm32(ra - JIT_SENDSITE_BYTES, tag)) return false;
    JitSendSite back;
    return jit_sendsite_read(ra, &back) && back.tag == tag && back.target == (const uint8_t *)target;
}

void jit_sendsite_emit_compiled_or(X64Buf *b, X64Label *miss)
{
    /* the method's counter slot: -(JitMethod address) once compiled (vm/model/counter.h) */
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RAX, (int32_t)(8 + 8 * METHOD_COUNTER)));
    jit_x64_sar_ri(b, RAX, 1);
    jit_x64_cmp_ri(b, RAX, VM_COUNTER_CODE_MAX);
    jit_x64_jcc_label32(b, JIT_X64_CC_G, miss);
    jit_x64_neg_r(b, RAX);
}

void jit_sendsite_emit_jump_unchecked(X64Buf *b)
{
    jit_x64_mov_rm32(b, RCX, jit_x64_mem(RAX, offsetof(JitMethod, unchecked_entry)));
    jit_x64_add_rr(b, RAX, RCX);
    jit_x64_jmp_r(b, RAX);
}

void jit_sendsite_emit_receiver_class(X64Buf *b, int32_t receiver_disp)
{
    X64Label done = JIT_X64_LABEL("class known"), object = JIT_X64_LABEL("an object");
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, receiver_disp));
    jit_x64_mov_r32i(b, RCX, CLASS_INDEX_SMALLINT);
    jit_x64_test_ri(b, RAX, 7);
    jit_x64_jcc_label(b, JIT_X64_CC_Z, &object);
    /* an immediate: a SmallInteger, or a Double (gc/object.h's tags) */
    jit_x64_test_ri(b, RAX, 1);
    jit_x64_jcc_label(b, JIT_X64_CC_NZ, &done);
    jit_x64_mov_r32i(b, RCX, CLASS_INDEX_DOUBLE);
    jit_x64_jmp_label(b, &done);
    jit_x64_label_bind(b, &object);
    jit_x64_mov_rm32(b, RCX, jit_x64_mem(RAX, 0));
    jit_x64_and_ri(b, RCX, (int32_t)OBJ_CLASS_MASK);
    jit_x64_label_bind(b, &done);
}

/* -- Pieces ------------------------------------------------------------------------- */

/* Bytes of a PIC's code: generous bounds, the piece is shrunk to fit. */
#define CLOSED_PIC_CODE_BOUND (64 + JIT_MAX_PIC_CASES * JIT_SENDSITE_CASE_BYTES + 32)
#define OPEN_PIC_CODE_BOUND 192

static int32_t receiver_disp(int nargs) { return 8 * (1 + nargs); } /* above the return address */

/* Offset of case 0 from the header: the receiver-class prelude's length,
 * which depends only on nargs. */
static uint32_t case0_offset(int nargs)
{
    /* assembled once per argument count: reading a PIC's cases asks for it
     * at every case, and tier-up's relink reads every case of every closed
     * PIC (2,100 instructions a case when assembled each time: 21M of
     * DeltaBlue's short run, callgrind) */
    static uint32_t known[256];
    VM_ASSERT(nargs >= 0 && nargs < 256);
    if (known[nargs]) return known[nargs];
    uint8_t scratch[64];
    X64Buf b;
    jit_x64_buf_init(&b, scratch, sizeof scratch);
    jit_sendsite_emit_receiver_class(&b, receiver_disp(nargs));
    const char *why = NULL;
    if (!jit_x64_finish(&b, &why)) vm_panic("receiver-class prelude: %s", why ? why : "?");
    return known[nargs] = JIT_METHOD_CODE + (uint32_t)jit_x64_size(&b);
}

static uint8_t *case_at(const JitMethod *pic, int i)
{
    return jit_method_at(pic, case0_offset(pic->nargs) + (uint32_t)i * JIT_SENDSITE_CASE_BYTES);
}

static uint8_t *pic_miss(const JitMethod *pic) { return case_at(pic, JIT_MAX_PIC_CASES); }

/* -- Closed PICs ---------------------------------------------------------------------- */

JitMethod *jit_sendsite_closed_pic_new(JitZone *z, const JitPicRuntime *rt, Oop selector, int nargs)
{
    JitPiece p;
    if (!jit_piece_begin(&p, z, JIT_KIND_CLOSED_PIC, CLOSED_PIC_CODE_BOUND, selector, nargs)) return NULL;
    X64Label miss = JIT_X64_LABEL("miss");
    jit_sendsite_emit_receiver_class(&p.b, receiver_disp(nargs));
    VM_ASSERT(jit_x64_size(&p.b) == case0_offset(nargs));
    for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
        jit_x64_cmp_r32i(&p.b, RCX, JIT_SENDSITE_NO_CLASS);
        jit_x64_jcc_label32(&p.b, JIT_X64_CC_E, &miss);
    }
    jit_x64_label_bind(&p.b, &miss);
    jit_x64_lea_rl(&p.b, RSI, &p.header);
    jit_x64_jmp_rel32(&p.b, rt->closed_miss);
    return jit_piece_end(&p, z, NULL, NULL, 0, "vm/jit/sendsite.c");
}

/* Cases fill from 0 up; compaction may empty one in the middle (its callee
 * was freed), and the next new class then takes that hole: the count is
 * of the cases before the first empty one. */
int jit_sendsite_pic_case_count(const JitMethod *pic)
{
    int n = 0;
    uint32_t cls;
    uint8_t *target;
    while (n < JIT_MAX_PIC_CASES && jit_sendsite_pic_case_read(pic, n, &cls, &target) && cls != JIT_SENDSITE_NO_CLASS)
        n++;
    return n;
}

bool jit_sendsite_pic_case_read(const JitMethod *pic, int i, uint32_t *class_index, uint8_t **target)
{
    if (pic->kind != JIT_KIND_CLOSED_PIC || i < 0 || i >= JIT_MAX_PIC_CASES) return false;
    uint8_t *c = case_at(pic, i);
    return jit_x64_read_cmp_imm32(c, class_index) && c[JIT_X64_CMP32_SIZE_LOW] == 0x0F &&
           jit_x64_read_rel32(c + JIT_SENDSITE_CASE_BYTES, target);
}

bool jit_sendsite_pic_case_write(JitMethod *pic, int i, uint32_t class_index, const void *target)
{
    if (pic->kind != JIT_KIND_CLOSED_PIC || i < 0 || i >= JIT_MAX_PIC_CASES) return false;
    if (!target) target = pic_miss(pic);
    uint8_t *c = case_at(pic, i);
    if (!jit_x64_patch_cmp_imm32(c, class_index) || !jit_x64_patch_rel32(c + JIT_SENDSITE_CASE_BYTES, target))
        return false;
    uint32_t cls;
    uint8_t *back;
    return jit_sendsite_pic_case_read(pic, i, &cls, &back) && cls == class_index && back == (const uint8_t *)target;
}

/* -- Open PICs ------------------------------------------------------------------------ */

JitMethod *jit_sendsite_open_pic_new(JitZone *z, const JitPicRuntime *rt, Oop selector, int nargs)
{
    JitPiece p;
    if (!jit_piece_begin(&p, z, JIT_KIND_OPEN_PIC, OPEN_PIC_CODE_BOUND, selector, nargs)) return NULL;
    X64Buf *b = &p.b;
    X64Label miss = JIT_X64_LABEL("miss");
    jit_sendsite_emit_receiver_class(b, receiver_disp(nargs));
    /* vm_lookup_hash (vm/model/lookup.h): ((selector >> 3) ^ class_index * multiplier) & (size - 1).
     * Only the low bits survive the mask, and they do not depend on the
     * product's width, so a 64-bit imul with the sign-extended constant agrees. */
    jit_x64_lea_rl(b, RAX, &p.header);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RAX, offsetof(JitMethod, method)));
    jit_x64_mov_rr(b, RDX, RAX);
    jit_x64_shr_ri(b, RDX, 3);
    jit_x64_imul_rri(b, R11, RCX, (int32_t)VM_LOOKUP_HASH_MULTIPLIER);
    jit_x64_xor_rr(b, R11, RDX);
    jit_x64_and_ri(b, R11, VM_LOOKUP_CACHE_SIZE - 1);
    jit_x64_lea_rm(b, R11, jit_x64_mem_index(R11, R11, 2, 0)); /* * 3 */
    jit_x64_mov_ri64(b, RDX, (uint64_t)(uintptr_t)rt->lookup_cache);
    jit_x64_lea_rm(b, RDX, jit_x64_mem_index(RDX, R11, 8, 0));
    jit_x64_cmp_rm(b, RAX, jit_x64_mem(RDX, offsetof(VmCacheEntry, selector)));
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &miss);
    jit_x64_cmp_rm(b, RCX, jit_x64_mem(RDX, offsetof(VmCacheEntry, class_index)));
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &miss);
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RDX, offsetof(VmCacheEntry, method)));
    jit_sendsite_emit_compiled_or(b, &miss);
    jit_sendsite_emit_jump_unchecked(b);
    jit_x64_label_bind(b, &miss);
    jit_x64_lea_rl(b, RSI, &p.header);
    jit_x64_jmp_rel32(b, rt->open_miss);
    return jit_piece_end(&p, z, NULL, NULL, 0, "vm/jit/sendsite.c");
}
