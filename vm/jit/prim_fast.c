/*
 * vm/jit/prim_fast.c — machine-code fast paths of a few primitives, run at
 * the start of their stubs (vm/jit/prim_entry.c) before the call into C.
 *
 * Why: a primitive's stub reaches C through a trampoline that switches to
 * the C stack and rt_primitive's one indirect call, shared by every
 * primitive; with String>>= and String>>length, the work is a few loads.
 * vmprofd put 54 % of Json's samples and 17 % of DeltaBlue's in p_equal,
 * p_length and rt_primitive (docs/performance.md, "Primitives in machine
 * code"). Each fast path answers exactly what the C primitive answers for
 * the cases it takes and jumps to the C path for the rest (comparing
 * strings of 255 words or more, a tracer on the method probes, which must see the
 * primitive fire). It runs without a frame and leaves rsp alone, as the
 * stub's call does, so stack walkers see the stub as before.
 */
#include "vm/jit/compile.h"

#include "vm/jit/compile_int.h"

#include "vm/model/universe.h"

#include <string.h>

JitPrimFast jit_prim_fast_kind(const char *class_name, bool class_side, const char *selector)
{
    if (class_side || strcmp(class_name, "String") != 0) return JIT_PRIM_FAST_NONE;
    if (strcmp(selector, "length") == 0) return JIT_PRIM_FAST_STRING_LENGTH;
    if (strcmp(selector, "=") == 0) return JIT_PRIM_FAST_STRING_EQUAL;
    if (strcmp(selector, "primSubstringFrom:to:") == 0) return JIT_PRIM_FAST_STRING_SUBSTRING;
    return JIT_PRIM_FAST_NONE;
}

/* To slow while a tracer holds the method probes (the C path fires them). */
static void probes_or(X64Buf *b, const JitCompileRuntime *rt, X64Label *slow)
{
    if (!rt->method_probe_semaphores) return;
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)rt->method_probe_semaphores);
    jit_x64_cmp_mi(b, jit_x64_mem(R11, 0), 0);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, slow);
}

/* dst := the word count of the byte object whose header is in hdr (kept
 * unless it is dst);
 * to slow when it overflows the header's byte (255 words or more). */
static void words_or(X64Buf *b, X64Reg dst, X64Reg hdr, X64Label *slow)
{
    if (dst != hdr) jit_x64_mov_rr(b, dst, hdr);
    jit_x64_shr_ri(b, dst, OBJ_SLOTS_SHIFT);
    jit_x64_cmp_ri(b, dst, OBJ_SLOTS_OVERFLOW);
    jit_x64_jcc_label32(b, JIT_X64_CC_E, slow);
}

/* rcx := the byte length of the byte object at rax: its words * 8 - the
 * format's pad (a long string's word count in the overflow word before its
 * header, as Json's input is). Clobbers rdx. */
static void byte_length(X64Buf *b)
{
    X64Label counted = JIT_X64_LABEL("word count");
    jit_x64_mov_rm(b, RDX, jit_x64_mem(RAX, 0));
    jit_x64_mov_rr(b, RCX, RDX);
    jit_x64_shr_ri(b, RCX, OBJ_SLOTS_SHIFT);
    jit_x64_cmp_ri(b, RCX, OBJ_SLOTS_OVERFLOW);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &counted);
    jit_x64_mov_rm(b, RCX, jit_x64_mem(RAX, -8));
    jit_x64_shl_ri(b, RCX, 8);
    jit_x64_shr_ri(b, RCX, 8);
    jit_x64_label_bind(b, &counted);
    jit_x64_shl_ri(b, RCX, 3);
    jit_x64_shr_ri(b, RDX, OBJ_FORMAT_SHIFT);
    jit_x64_and_ri(b, RDX, 7);
    jit_x64_sub_rr(b, RCX, RDX);
}

static void emit_string_length(X64Buf *b)
{
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8));
    byte_length(b);
    jit_x64_lea_rm(b, RAX, jit_x64_mem_index(RCX, RCX, 1, 1)); /* tagged */
    jit_x64_ret(b);
}

/* String>>=: an argument that is no String or Symbol answers false; else
 * identical or equal lengths and bytes. Two byte objects have equal lengths
 * exactly when their word counts and pads agree; the last word is compared
 * with its pad bytes (the high ones) shifted out. */
static void emit_string_equal(X64Buf *b, const JitCompileRuntime *rt, X64Label *slow)
{
    X64Label yes = JIT_X64_LABEL("equal"), no = JIT_X64_LABEL("not equal"), text = JIT_X64_LABEL("text"),
             head = JIT_X64_LABEL("next word"), last = JIT_X64_LABEL("last word");
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 16)); /* the receiver */
    jit_x64_mov_rm(b, RCX, jit_x64_mem(RSP, 8));  /* the argument */
    jit_x64_test_ri(b, RCX, 7);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &no);
    jit_x64_mov_rm(b, RDX, jit_x64_mem(RCX, 0));
    jit_x64_mov_rr(b, RSI, RDX);
    jit_x64_and_ri(b, RSI, (int32_t)OBJ_CLASS_MASK);
    jit_x64_cmp_ri(b, RSI, CLASS_INDEX_STRING);
    jit_x64_jcc_label32(b, JIT_X64_CC_E, &text);
    jit_x64_cmp_ri(b, RSI, CLASS_INDEX_SYMBOL);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &no);
    jit_x64_label_bind(b, &text);
    /* identity only now: an instance of a String subclass is no text, so
     * not equal even to itself (the C primitive's answer) */
    jit_x64_cmp_rr(b, RAX, RCX);
    jit_x64_jcc_label32(b, JIT_X64_CC_E, &yes);
    jit_x64_mov_rm(b, RSI, jit_x64_mem(RAX, 0));
    jit_x64_mov_rr(b, R11, RSI);
    jit_x64_xor_rr(b, R11, RDX);
    jit_x64_test_ri(b, R11, (int32_t)(7u << OBJ_FORMAT_SHIFT));
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &no); /* pads differ */
    jit_x64_shr_ri(b, R11, OBJ_SLOTS_SHIFT);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &no); /* word counts differ (one may overflow: then it is longer) */
    words_or(b, RSI, RSI, slow);                /* both overflow: the C path counts */
    jit_x64_test_rr(b, RSI, RSI);
    jit_x64_jcc_label32(b, JIT_X64_CC_E, &yes); /* both empty */
    jit_x64_shr_ri(b, RDX, OBJ_FORMAT_SHIFT);
    jit_x64_and_ri(b, RDX, 7);
    jit_x64_lea_rm(b, R8, jit_x64_mem(RSI, -1)); /* the last word's index */
    jit_x64_xor_rr(b, R9, R9);
    jit_x64_label_bind(b, &head);
    jit_x64_cmp_rr(b, R9, R8);
    jit_x64_jcc_label32(b, JIT_X64_CC_AE, &last);
    jit_x64_mov_rm(b, R11, jit_x64_mem_index(RAX, R9, 8, 8));
    jit_x64_cmp_rm(b, R11, jit_x64_mem_index(RCX, R9, 8, 8));
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &no);
    jit_x64_inc_r(b, R9);
    jit_x64_jmp_label(b, &head);
    jit_x64_label_bind(b, &last);
    jit_x64_mov_rm(b, R11, jit_x64_mem_index(RAX, R8, 8, 8));
    jit_x64_xor_rm(b, R11, jit_x64_mem_index(RCX, R8, 8, 8));
    jit_x64_mov_rr(b, RCX, RDX);
    jit_x64_shl_ri(b, RCX, 3);
    jit_x64_shl_rcl(b, R11);
    jit_x64_test_rr(b, R11, R11); /* a shift by 0 sets no flags */
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &no);
    jit_x64_label_bind(b, &yes);
    jit_x64_mov_ri(b, RAX, (int64_t)rt->true_obj);
    jit_x64_ret(b);
    jit_x64_label_bind(b, &no);
    jit_x64_mov_ri(b, RAX, (int64_t)rt->false_obj);
    jit_x64_ret(b);
}

/* The longest substring made here (32 words): longer ones, rare, are
 * copied by the C primitive's memcpy. */
#define SUBSTRING_FAST_MAX_BYTES 256

/* String>>primSubstringFrom:to: (String>>charAt: makes one-character
 * ones): the bounds as the C primitive checks them, failing in C (which
 * reports them); a new String in eden as gc_alloc_fast makes one, to slow
 * when eden is past its soft limit (which a watching tracer or the
 * allocation sampler sets, gc/heap.h: the C path then allocates where they
 * see it). */
static void emit_string_substring(X64Buf *b, const JitCompileRuntime *rt, X64Label *slow)
{
    X64Label zero = JIT_X64_LABEL("zero a word"), copy = JIT_X64_LABEL("copy a byte"),
             copied = JIT_X64_LABEL("copied");
    jit_x64_mov_rm(b, RSI, jit_x64_mem(RSP, 16)); /* from */
    jit_x64_mov_rm(b, R9, jit_x64_mem(RSP, 8));   /* to */
    jit_x64_mov_rr(b, R11, RSI);
    jit_x64_and_rr(b, R11, R9);
    jit_x64_test_ri(b, R11, 1);
    jit_x64_jcc_label32(b, JIT_X64_CC_E, slow);
    jit_x64_sar_ri(b, RSI, 1);
    jit_x64_sar_ri(b, R9, 1);
    jit_x64_cmp_ri(b, RSI, 1);
    jit_x64_jcc_label32(b, JIT_X64_CC_L, slow); /* from < 1 */
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 24)); /* the receiver */
    byte_length(b);
    jit_x64_cmp_rr(b, R9, RCX);
    jit_x64_jcc_label32(b, JIT_X64_CC_G, slow); /* to > length */
    jit_x64_sub_rr(b, R9, RSI);
    jit_x64_inc_r(b, R9); /* r9 := n, the bytes */
    jit_x64_jcc_label32(b, JIT_X64_CC_L, slow); /* to < from - 1 */
    jit_x64_cmp_ri(b, R9, SUBSTRING_FAST_MAX_BYTES);
    jit_x64_jcc_label32(b, JIT_X64_CC_A, slow);
    /* r10 := words (at least one of storage), r8 := the object's bytes */
    jit_x64_lea_rm(b, R10, jit_x64_mem(R9, 7));
    jit_x64_shr_ri(b, R10, 3);
    jit_x64_mov_rr(b, RDX, R10); /* the header's word count */
    jit_x64_cmp_ri(b, R10, 1);
    jit_x64_mov_ri(b, R11, 1);
    jit_x64_cmovcc_rr(b, JIT_X64_CC_B, R10, R11);
    jit_x64_lea_rm(b, R8, jit_x64_mem(R10, 1));
    jit_x64_shl_ri(b, R8, 3);
    /* rdi := eden's top, to slow past the soft limit */
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)rt->eden_top);
    jit_x64_mov_rm(b, RDI, jit_x64_mem(R11, 0));
    jit_x64_lea_rm(b, RCX, jit_x64_mem_index(RDI, R8, 1, 0));
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)rt->eden_limit);
    jit_x64_cmp_rm(b, RCX, jit_x64_mem(R11, 0));
    jit_x64_jcc_label32(b, JIT_X64_CC_A, slow);
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)rt->eden_top);
    jit_x64_mov_mr(b, jit_x64_mem(R11, 0), RCX);
    jit_x64_mov_ri(b, R11, (int64_t)(uintptr_t)rt->bytes_allocated);
    jit_x64_add_mr(b, jit_x64_mem(R11, 0), R8);
    /* the header: class, format FMT_BYTES + pad (words * 8 - n), words */
    jit_x64_mov_rr(b, RCX, RDX);
    jit_x64_shl_ri(b, RCX, 3);
    jit_x64_sub_rr(b, RCX, R9);
    jit_x64_add_ri(b, RCX, FMT_BYTES);
    jit_x64_shl_ri(b, RCX, OBJ_FORMAT_SHIFT);
    jit_x64_shl_ri(b, RDX, OBJ_SLOTS_SHIFT);
    jit_x64_or_rr(b, RCX, RDX);
    jit_x64_or_ri(b, RCX, CLASS_INDEX_STRING);
    jit_x64_mov_mr(b, jit_x64_mem(RDI, 0), RCX);
    /* the storage zeroed (its pad bytes stay 0), then the bytes copied */
    jit_x64_xor_rr(b, RCX, RCX);
    jit_x64_label_bind(b, &zero);
    jit_x64_mov_mi32(b, jit_x64_mem_index(RDI, R10, 8, 0), 0);
    jit_x64_dec_r(b, R10);
    jit_x64_jcc_label(b, JIT_X64_CC_NE, &zero);
    jit_x64_lea_rm(b, RSI, jit_x64_mem_index(RAX, RSI, 1, 8 - 1)); /* the first byte */
    jit_x64_label_bind(b, &copy);
    jit_x64_cmp_rr(b, RCX, R9);
    jit_x64_jcc_label(b, JIT_X64_CC_AE, &copied);
    jit_x64_movzx_rm8(b, RDX, jit_x64_mem_index(RSI, RCX, 1, 0));
    jit_x64_mov_mr8(b, jit_x64_mem_index(RDI, RCX, 1, 8), RDX);
    jit_x64_inc_r(b, RCX);
    jit_x64_jmp_label(b, &copy);
    jit_x64_label_bind(b, &copied);
    jit_x64_mov_rr(b, RAX, RDI);
    jit_x64_ret(b);
}

void jit_prim_fast_emit(X64Buf *b, const JitCompileRuntime *rt, JitPrimFast kind, X64Label *slow)
{
    if (kind == JIT_PRIM_FAST_NONE) return;
    probes_or(b, rt, slow);
    switch (kind) {
    case JIT_PRIM_FAST_STRING_LENGTH: emit_string_length(b); break;
    case JIT_PRIM_FAST_STRING_EQUAL: emit_string_equal(b, rt, slow); break;
    case JIT_PRIM_FAST_STRING_SUBSTRING: emit_string_substring(b, rt, slow); break;
    case JIT_PRIM_FAST_NONE: break;
    }
}
