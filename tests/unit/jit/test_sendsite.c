/*
 * tests/unit/jit/test_sendsite.c — send sites and PICs (vm/jit/sendsite.h):
 * the site bytes read and patched in a buffer, and closed and open PICs
 * generated into a code zone and run through vm/jit/enter.h's enilopmart on a
 * fake stack page, as a send would reach them.
 *
 * Every callee is a tiny piece answering a constant (`mov eax, K; ret`), so
 * the answer says which way a PIC went. The PIC miss routines are C
 * functions behind dispatch trampolines: they record the PIC they were given
 * (rsi) and the receiver they found on the stack (jit_cstate.st_sp), and
 * send machine code on to a piece answering MISS_K.
 *
 * A site's state is read back from what it links to (vm/jit/verify.h), as
 * --jit-verify and --code-zone-stats do.
 *
 * Receivers are a SmallInteger and old-space objects of made-up class
 * indices; the open PIC probes vm/model/lookup.h's real vm_lookup_cache, filled by
 * hand the way vm_lookup_cached hashes. No test depends on where the heap or
 * the zone is mapped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "gc/heap.h"
#include "vm/jit/compile.h"
#include "vm/jit/enter.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/verify.h"
#include "vm/jit/x64.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/model/class.h"
#include "vm/model/counter.h"
#include "vm/model/lookup.h"
#include "vm/model/frame.h"
#include "vm/model/method.h"

#define ZONE_BYTES ((size_t)256 << 10)
#define TRAMP_BYTES ((size_t)4 << 10)
#define PAGE_WORDS (VM_STACK_PAGE_BYTES / sizeof(Oop))
#define ANSWER_CODE_BYTES 32

static JitZone zone;
static JitEnter jit;
static JitPicRuntime pic_rt;
static Oop nil;
static Oop *page, *interp_fp;
static Oop selector, other_selector; /* any old objects: PICs only compare them */

static Oop I(intptr_t v) { return oop_from_int(v); }

/* What a miss target answers: no callee answers it. */
#define MISS_K I(999999)

/* -- Tiny callees ----------------------------------------------------------------------- */

static void piece_finish(JitMethod *m, X64Buf *b)
{
    const char *why = NULL;
    if (!jit_x64_finish(b, &why)) fail_msg("bad test code: %s", why ? why : "?");
    JitMethodLayout l;
    assert_true(jit_method_layout(&l, jit_x64_size(b), 0, 0, 0));
    jit_method_apply_layout(m, &l);
    jit_zone_shrink(&zone, m, l.size);
}

/* A piece of `kind` whose first code byte is `mov eax, k; ret`. */
static uint8_t *answering(JitMethodKind kind, Oop k)
{
    JitMethod *m = jit_zone_alloc(&zone, kind, JIT_METHOD_CODE + ANSWER_CODE_BYTES);
    assert_non_null(m);
    X64Buf b;
    jit_x64_buf_init(&b, jit_method_code(m), ANSWER_CODE_BYTES);
    assert_true(k <= INT32_MAX); /* mov eax zero-extends */
    jit_x64_mov_r32i(&b, JIT_X64_RAX, (uint32_t)k);
    jit_x64_ret(&b);
    piece_finish(m, &b);
    return jit_method_code(m);
}

/* A compiled "method" whose checked entry answers `wrong` and whose
 * unchecked entry, past it, answers k: the open PIC must take the latter. */
static JitMethod *compiled_answering(Oop k, Oop wrong)
{
    assert_true(k <= INT32_MAX && wrong <= INT32_MAX); /* mov eax zero-extends */
    JitMethod *m = jit_zone_alloc(&zone, JIT_KIND_METHOD, JIT_METHOD_CODE + ANSWER_CODE_BYTES);
    assert_non_null(m);
    X64Buf b;
    jit_x64_buf_init(&b, jit_method_code(m), ANSWER_CODE_BYTES);
    jit_x64_mov_r32i(&b, JIT_X64_RAX, (uint32_t)wrong);
    jit_x64_ret(&b);
    jit_x64_int3(&b);
    size_t unchecked = jit_x64_size(&b);
    jit_x64_mov_r32i(&b, JIT_X64_RAX, (uint32_t)k);
    jit_x64_ret(&b);
    piece_finish(m, &b);
    jit_method_set_entries(m, jit_method_code(m), jit_method_code(m) + unchecked);
    assert_int_equal(m->unchecked_entry, JIT_METHOD_CODE + unchecked);
    return m;
}

/* -- The fake runtime -------------------------------------------------------------------- */

static struct {
    int closed_misses, open_misses;
    const JitMethod *pic;    /* rsi of the latest miss */
    uint32_t class_index;    /* the receiver's class the latest miss found */
    Oop rcvr, last_arg;
    uint8_t *ret;            /* return address on top at the miss */
} seen;

static uint8_t *miss_target;

static uint32_t class_of(Oop o) { return oop_is_int(o) ? CLASS_INDEX_SMALLINT : obj_class_index(o); }

static void record_miss(const JitMethod *pic)
{
    Oop *sp = jit_cstate.st_sp;
    int nargs = pic->nargs;
    seen.pic = pic;
    seen.ret = (uint8_t *)sp[0];
    seen.rcvr = sp[1 + nargs];
    seen.last_arg = nargs > 0 ? sp[1] : 0;
    seen.class_index = class_of(seen.rcvr);
}

static uint64_t rt_closed_miss(uint64_t unused, const JitMethod *pic)
{
    (void)unused;
    seen.closed_misses++;
    record_miss(pic);
    return (uint64_t)(uintptr_t)miss_target;
}

static uint64_t rt_open_miss(uint64_t unused, const JitMethod *pic)
{
    (void)unused;
    seen.open_misses++;
    record_miss(pic);
    return (uint64_t)(uintptr_t)miss_target;
}

static void visit_no_roots(GcVisitFn visit, void *ctx, void *client)
{
    (void)visit, (void)ctx, (void)client;
}

static int setup(void **state)
{
    (void)state;
    char err[256];
    GcConfig gcc = { .heap_bytes = (size_t)64 << 20, .eden_bytes = (size_t)64 << 10 };
    assert_true(gc_heap_init(&gcc, err, sizeof err));
    GcClient client = { .visit_roots = visit_no_roots };
    gc_set_client(&client);
    nil = gc_alloc_old(CLASS_INDEX_NIL, FMT_POINTERS, 0);
    gc_set_fill(nil);
    selector = gc_alloc_old(CLASS_INDEX_OBJECT, FMT_POINTERS, 0);
    assert_true(selector != 0);
    /* the two selectors must not share cache entries for one class (the
     * hash XORs selector >> 3 into the class's bits) */
    do {
        other_selector = gc_alloc_old(CLASS_INDEX_OBJECT, FMT_POINTERS, 0);
        assert_true(other_selector != 0);
    } while ((((selector ^ other_selector) >> 3) & (VM_LOOKUP_CACHE_SIZE - 1)) == 0);
    JitZoneConfig zc = { .zone_bytes = ZONE_BYTES, .trampoline_bytes = TRAMP_BYTES };
    assert_true(jit_zone_init(&zone, &zc, err, sizeof err));
    assert_true(jit_enter_init(&jit, &zone, err, sizeof err));
    pic_rt = (JitPicRuntime){
        .closed_miss = jit_enter_dispatch_trampoline(&zone, (const void *)rt_closed_miss, 2),
        .open_miss = jit_enter_dispatch_trampoline(&zone, (const void *)rt_open_miss, 2),
        .lookup_cache = vm_lookup_cache,
    };
    assert_non_null(pic_rt.closed_miss);
    assert_non_null(pic_rt.open_miss);
    miss_target = answering(JIT_KIND_TRAMPOLINE, MISS_K);
    void *p = mmap(NULL, VM_STACK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    page = p;
    interp_fp = page + PAGE_WORDS - 8;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    munmap(page, VM_STACK_PAGE_BYTES);
    jit_zone_release(&zone);
    gc_heap_release();
    return 0;
}

static int reset(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    memset(vm_lookup_cache, 0, sizeof vm_lookup_cache);
    return 0;
}

/* -- Running a PIC ------------------------------------------------------------------------ */

/* Pushes receiver and args like a send (arg 0 deepest), enters `entry` with
 * ceReturnToInterpreter as the return address, answers rax. */
static Oop run(const uint8_t *entry, Oop rcvr, int nargs, ...)
{
    Oop *sp = interp_fp - 6;
    *sp = rcvr;
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) *--sp = va_arg(ap, Oop);
    va_end(ap);
    JitRegs regs = { .sp = sp, .fp = interp_fp };
    assert_int_equal(jit.enter(&regs, (void *)entry), JIT_STATUS_RETURNED);
    assert_ptr_equal(regs.sp, sp);
    assert_ptr_equal(regs.fp, interp_fp);
    return regs.result;
}

static Oop run1(const JitMethod *pic, Oop rcvr) { return run(jit_method_code(pic), rcvr, 1, I(77)); }

static Oop object_of_class(uint32_t class_index)
{
    Oop o = gc_alloc_old(class_index, FMT_POINTERS, 0);
    assert_true(o != 0);
    assert_int_equal(obj_class_index(o), class_index);
    return o;
}

static JitMethod *closed_pic(int nargs)
{
    JitMethod *pic = jit_sendsite_closed_pic_new(&zone, &pic_rt, selector, nargs);
    assert_non_null(pic);
    return pic;
}

/* The miss just seen came from `pic` with receiver rcvr and nothing else. */
static void assert_missed(int *counter, int before, const JitMethod *pic, Oop rcvr)
{
    assert_int_equal(*counter, before + 1);
    assert_ptr_equal(seen.pic, pic);
    assert_int_equal(seen.rcvr, rcvr);
    assert_int_equal(seen.class_index, class_of(rcvr));
    assert_ptr_equal(seen.ret, jit.return_to_interpreter); /* the send's return address is still on top */
}

/* Expects `pic` to miss for rcvr (arg I(77)): the miss routine saw it all. */
static void closed_misses(const JitMethod *pic, Oop rcvr)
{
    int before = seen.closed_misses;
    assert_int_equal(run1(pic, rcvr), MISS_K);
    assert_missed(&seen.closed_misses, before, pic, rcvr);
    assert_int_equal(seen.last_arg, I(77));
}

static void hits(const JitMethod *pic, Oop rcvr, Oop k)
{
    int closed = seen.closed_misses, open = seen.open_misses;
    assert_int_equal(run1(pic, rcvr), k);
    assert_int_equal(seen.closed_misses, closed);
    assert_int_equal(seen.open_misses, open);
}

/* -- Send sites --------------------------------------------------------------------------- */

static void site_reads_back_what_was_emitted_and_written(void **state)
{
    (void)state;
    _Alignas(16) uint8_t buf[128];
    memset(buf, 0xCC, sizeof buf);
    X64Buf b;
    jit_x64_buf_init(&b, buf, sizeof buf);
    jit_x64_mov_r32i(&b, JIT_X64_RAX, 0x12345678); /* something before the site */
    size_t start = jit_x64_size(&b);
    uint32_t tag = jit_sendsite_unlinked_tag(3, 2);
    jit_sendsite_emit(&b, tag, buf + 100);
    const char *why = NULL;
    assert_true(jit_x64_finish(&b, &why));
    assert_int_equal(jit_x64_size(&b) - start, JIT_SENDSITE_BYTES);
    uint8_t *ra = buf + start + JIT_SENDSITE_BYTES;
    assert_int_equal(ra[-10], 0xBF); /* mov edi, imm32 */
    assert_int_equal(ra[-5], 0xE8);  /* call rel32 */

    JitSendSite s;
    assert_true(jit_sendsite_read(ra, &s));
    assert_int_equal(s.tag, tag);
    assert_ptr_equal(s.target, buf + 100);

    /* monomorphic: a class index and a checked entry */
    assert_true(jit_sendsite_write(ra, CLASS_INDEX_FIRST_FREE + 5, buf + 3));
    assert_true(jit_sendsite_read(ra, &s));
    assert_int_equal(s.tag, CLASS_INDEX_FIRST_FREE + 5);
    assert_ptr_equal(s.target, buf + 3);
    /* a backward target, the site itself, and back to unlinked */
    assert_true(jit_sendsite_write(ra, 0xFFFFFFFFu, ra - JIT_SENDSITE_BYTES));
    assert_true(jit_sendsite_read(ra, &s));
    assert_int_equal(s.tag, 0xFFFFFFFFu);
    assert_ptr_equal(s.target, ra - JIT_SENDSITE_BYTES);
    assert_true(jit_sendsite_write(ra, tag, buf + 100));
    assert_true(jit_sendsite_read(ra, &s));
    assert_int_equal(s.tag, tag);
    assert_ptr_equal(s.target, buf + 100);
    /* only the ten site bytes changed */
    assert_int_equal(buf[0], 0xB8);
    for (size_t i = start + JIT_SENDSITE_BYTES; i < sizeof buf; i++) assert_int_equal(buf[i], 0xCC);
}

/* An emitted site reached from machine code calls its target with the tag in edi. */
static uint64_t rt_tag_seen;
static uint64_t rt_record_tag(uint64_t tag)
{
    rt_tag_seen = tag;
    return (uint64_t)(uintptr_t)miss_target;
}

static void site_calls_its_target_with_the_tag_in_edi(void **state)
{
    (void)state;
    uint8_t *tramp = jit_enter_dispatch_trampoline(&zone, (const void *)rt_record_tag, 1);
    assert_non_null(tramp);
    /* a caller: the site, then return what the callee answered */
    JitMethod *m = jit_zone_alloc(&zone, JIT_KIND_METHOD, JIT_METHOD_CODE + 64);
    assert_non_null(m);
    X64Buf b;
    jit_x64_buf_init(&b, jit_method_code(m), 64);
    uint32_t tag = jit_sendsite_unlinked_tag(jit_send_tag_special(BC_SEND_ADD), 1);
    jit_sendsite_emit(&b, tag, tramp);
    uint8_t *ra = jit_method_code(m) + jit_x64_size(&b);
    jit_x64_ret(&b);
    piece_finish(m, &b);
    rt_tag_seen = 0;
    assert_int_equal(run(jit_method_code(m), I(1), 1, I(2)), MISS_K);
    assert_int_equal(rt_tag_seen, tag);

    /* relinked to a callee directly */
    uint8_t *callee = answering(JIT_KIND_METHOD, I(5));
    assert_true(jit_sendsite_write(ra, CLASS_INDEX_SMALLINT, callee));
    rt_tag_seen = 0;
    assert_int_equal(run(jit_method_code(m), I(1), 1, I(2)), I(5));
    assert_int_equal(rt_tag_seen, 0);
}

static void site_functions_refuse_what_is_not_a_site(void **state)
{
    (void)state;
    _Alignas(16) uint8_t buf[64], copy[64];
    JitSendSite s;

    /* mov edi, imm32; jmp rel32: the right length, not a call */
    memset(buf, 0xCC, sizeof buf);
    X64Buf b;
    jit_x64_buf_init(&b, buf, sizeof buf);
    jit_x64_mov_r32i(&b, JIT_X64_RDI, 7);
    jit_x64_jmp_rel32(&b, buf + 40);
    assert_int_equal(jit_x64_size(&b), JIT_SENDSITE_BYTES);
    memcpy(copy, buf, sizeof buf);
    assert_false(jit_sendsite_read(buf + JIT_SENDSITE_BYTES, &s));
    assert_false(jit_sendsite_write(buf + JIT_SENDSITE_BYTES, 9, buf + 50));
    assert_memory_equal(buf, copy, sizeof buf);

    /* five NOP bytes, then a call: no mov before it */
    jit_x64_buf_init(&b, buf, sizeof buf);
    jit_x64_nop(&b, 5);
    jit_x64_call_rel32(&b, buf + 40);
    assert_int_equal(jit_x64_size(&b), JIT_SENDSITE_BYTES);
    memcpy(copy, buf, sizeof buf);
    assert_false(jit_sendsite_read(buf + JIT_SENDSITE_BYTES, &s));
    assert_false(jit_sendsite_write(buf + JIT_SENDSITE_BYTES, 9, buf + 50));
    assert_memory_equal(buf, copy, sizeof buf);

    /* a real site, asked one byte off */
    jit_x64_buf_init(&b, buf, sizeof buf);
    jit_x64_nop(&b, 1);
    jit_sendsite_emit(&b, 0x11223344u, buf + 40);
    memcpy(copy, buf, sizeof buf);
    assert_false(jit_sendsite_read(buf + JIT_SENDSITE_BYTES, &s));
    assert_false(jit_sendsite_write(buf + JIT_SENDSITE_BYTES, 9, buf + 50));
    assert_false(jit_sendsite_read(buf + JIT_SENDSITE_BYTES + 2, &s));
    assert_memory_equal(buf, copy, sizeof buf);

    /* a target beyond rel32's reach is refused and the call left alone */
    uint8_t *ra = buf + 1 + JIT_SENDSITE_BYTES;
    assert_true(jit_sendsite_read(ra, &s));
    assert_ptr_equal(s.target, buf + 40);
    assert_false(jit_sendsite_write(ra, 9, (const void *)((uintptr_t)ra + ((uintptr_t)1 << 40))));
    assert_true(jit_sendsite_read(ra, &s));
    assert_ptr_equal(s.target, buf + 40);
}

static void unlinked_tags_round_trip(void **state)
{
    (void)state;
    static const int64_t tags[] = {
        0, 1, 2, 127, 128, 255, 256, 65535, 65536, ((int64_t)1 << 23) - 1, /* literal indices */
        JIT_SEND_MUST_BE_BOOLEAN, JIT_SEND_SPECIAL_BASE, -3, -100, -((int64_t)1 << 23),
    };
    _Alignas(16) uint8_t buf[16];
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
        for (int nargs = 0; nargs <= JIT_SENDSITE_MAX_NARGS; nargs++) {
            uint32_t tag = jit_sendsite_unlinked_tag(tags[t], nargs);
            if (jit_sendsite_tag_selector(tag) != tags[t] || jit_sendsite_tag_nargs(tag) != nargs)
                fail_msg("tag %lld nargs %d -> 0x%08x -> %lld, %d", (long long)tags[t], nargs, tag,
                         (long long)jit_sendsite_tag_selector(tag), jit_sendsite_tag_nargs(tag));
            /* and through the site's bytes */
            X64Buf b;
            jit_x64_buf_init(&b, buf, sizeof buf);
            jit_sendsite_emit(&b, tag, buf);
            JitSendSite s;
            assert_true(jit_sendsite_read(buf + JIT_SENDSITE_BYTES, &s));
            assert_int_equal(jit_sendsite_tag_selector(s.tag), tags[t]);
            assert_int_equal(jit_sendsite_tag_nargs(s.tag), nargs);
        }
    }
    /* every special send's tag */
    for (int bc = BC_SEND_ADD; bc <= BC_SEND_LAST_SPECIAL; bc++) {
        uint32_t tag = jit_sendsite_unlinked_tag(jit_send_tag_special(bc), 1);
        assert_true(jit_send_tag_is_special(jit_sendsite_tag_selector(tag)));
        assert_int_equal(jit_send_tag_bytecode(jit_sendsite_tag_selector(tag)), bc);
        assert_int_equal(jit_sendsite_tag_nargs(tag), 1);
    }
}

/* -- Closed PICs --------------------------------------------------------------------------- */

static void empty_closed_pic_misses_with_itself_in_rsi(void **state)
{
    (void)state;
    JitMethod *pic = closed_pic(1);
    assert_int_equal(pic->kind, JIT_KIND_CLOSED_PIC);
    assert_int_equal(pic->method, selector);
    assert_int_equal(pic->nargs, 1);
    assert_int_equal(pic->size % JIT_METHOD_ALIGN, 0);
    assert_int_equal(jit_sendsite_pic_case_count(pic), 0);
    uint8_t *miss = NULL;
    for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
        uint32_t cls;
        uint8_t *target;
        assert_true(jit_sendsite_pic_case_read(pic, i, &cls, &target));
        assert_int_equal(cls, JIT_SENDSITE_NO_CLASS);
        assert_true(jit_method_contains(pic, target));
        if (i == 0) miss = target;
        assert_ptr_equal(target, miss); /* every empty case jumps to the one miss code */
    }
    closed_misses(pic, I(3));
    closed_misses(pic, object_of_class(CLASS_INDEX_FIRST_FREE));
    assert_int_equal(seen.closed_misses, 2);
    assert_int_equal(seen.open_misses, 0);
}

static void closed_pic_with_one_case_hits_its_class_only(void **state)
{
    (void)state;
    JitMethod *pic = closed_pic(1);
    Oop a = object_of_class(CLASS_INDEX_FIRST_FREE + 1), b = object_of_class(CLASS_INDEX_FIRST_FREE + 2);
    uint8_t *target_a = answering(JIT_KIND_METHOD, I(101));
    assert_true(jit_sendsite_pic_case_write(pic, 0, CLASS_INDEX_FIRST_FREE + 1, target_a));
    assert_int_equal(jit_sendsite_pic_case_count(pic), 1);
    uint32_t cls;
    uint8_t *target;
    assert_true(jit_sendsite_pic_case_read(pic, 0, &cls, &target));
    assert_int_equal(cls, CLASS_INDEX_FIRST_FREE + 1);
    assert_ptr_equal(target, target_a);

    hits(pic, a, I(101));
    hits(pic, object_of_class(CLASS_INDEX_FIRST_FREE + 1), I(101)); /* any instance */
    closed_misses(pic, b);
    closed_misses(pic, I(4));
    hits(pic, a, I(101));
}

static void closed_pic_dispatches_six_classes_and_misses_a_seventh(void **state)
{
    (void)state;
    JitMethod *pic = closed_pic(1);
    /* SmallInteger; neighbouring indices; one differing in bit 8 only; the
     * largest index; one whose header has format bits right above the index */
    uint32_t classes[JIT_MAX_PIC_CASES] = {
        CLASS_INDEX_SMALLINT, CLASS_INDEX_FIRST_FREE, CLASS_INDEX_FIRST_FREE + 1,
        CLASS_INDEX_FIRST_FREE + 256, (uint32_t)OBJ_CLASS_MASK, CLASS_INDEX_ARRAY,
    };
    Oop rcvrs[JIT_MAX_PIC_CASES] = { I(-5) };
    for (int i = 1; i < JIT_MAX_PIC_CASES - 1; i++) rcvrs[i] = object_of_class(classes[i]);
    rcvrs[5] = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_WORDS, 1);
    assert_true(rcvrs[5] != 0);
    assert_int_equal(obj_class_index(rcvrs[5]), CLASS_INDEX_ARRAY);
    assert_true((obj_header(rcvrs[5]) & 0xFFFFFFFFu) > OBJ_CLASS_MASK); /* the PIC must mask */

    uint8_t *targets[JIT_MAX_PIC_CASES];
    for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
        targets[i] = answering(JIT_KIND_METHOD, I(200 + i));
        assert_true(jit_sendsite_pic_case_write(pic, i, classes[i], targets[i]));
        assert_int_equal(jit_sendsite_pic_case_count(pic), i + 1);
        /* the classes so far hit, the rest miss */
        for (int j = 0; j < JIT_MAX_PIC_CASES; j++) {
            if (j <= i)
                hits(pic, rcvrs[j], I(200 + j));
            else
                closed_misses(pic, rcvrs[j]);
        }
    }
    assert_int_equal(jit_sendsite_pic_case_count(pic), JIT_MAX_PIC_CASES);
    for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
        uint32_t cls;
        uint8_t *target;
        assert_true(jit_sendsite_pic_case_read(pic, i, &cls, &target));
        assert_int_equal(cls, classes[i]);
        assert_ptr_equal(target, targets[i]);
    }
    /* a seventh class: no case left for it */
    closed_misses(pic, object_of_class(CLASS_INDEX_FIRST_FREE + 2));
    closed_misses(pic, object_of_class(CLASS_INDEX_FIRST_FREE + 257));
    closed_misses(pic, object_of_class((uint32_t)OBJ_CLASS_MASK - 1));
    assert_false(jit_sendsite_pic_case_write(pic, JIT_MAX_PIC_CASES, CLASS_INDEX_FIRST_FREE + 2, targets[0]));
    for (int j = 0; j < JIT_MAX_PIC_CASES; j++) hits(pic, rcvrs[j], I(200 + j));
}

static void emptied_case_misses_again_and_can_be_refilled(void **state)
{
    (void)state;
    JitMethod *pic = closed_pic(1);
    Oop rcvrs[JIT_MAX_PIC_CASES];
    for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
        rcvrs[i] = object_of_class(CLASS_INDEX_FIRST_FREE + 10 + (uint32_t)i);
        assert_true(jit_sendsite_pic_case_write(pic, i, CLASS_INDEX_FIRST_FREE + 10 + (uint32_t)i,
                                                answering(JIT_KIND_METHOD, I(300 + i))));
    }
    uint32_t cls;
    uint8_t *target, *miss;
    /* where an empty case jumps: read one from a fresh PIC's layout */
    JitMethod *fresh = closed_pic(1);
    assert_true(jit_sendsite_pic_case_read(fresh, 0, &cls, &miss));
    ptrdiff_t miss_offset = miss - (uint8_t *)fresh;

    /* the last case */
    assert_true(jit_sendsite_pic_case_write(pic, 5, JIT_SENDSITE_NO_CLASS, NULL));
    assert_true(jit_sendsite_pic_case_read(pic, 5, &cls, &target));
    assert_int_equal(cls, JIT_SENDSITE_NO_CLASS);
    assert_ptr_equal(target, (uint8_t *)pic + miss_offset);
    assert_int_equal(jit_sendsite_pic_case_count(pic), 5);
    closed_misses(pic, rcvrs[5]);
    for (int j = 0; j < 5; j++) hits(pic, rcvrs[j], I(300 + j));

    /* a middle case: its class misses, the others still hit */
    assert_true(jit_sendsite_pic_case_write(pic, 2, JIT_SENDSITE_NO_CLASS, NULL));
    assert_true(jit_sendsite_pic_case_read(pic, 2, &cls, &target));
    assert_int_equal(cls, JIT_SENDSITE_NO_CLASS);
    assert_ptr_equal(target, (uint8_t *)pic + miss_offset);
    closed_misses(pic, rcvrs[2]);
    for (int j = 0; j < 5; j++)
        if (j != 2) hits(pic, rcvrs[j], I(300 + j));

    /* refilled with another class and callee */
    Oop other = object_of_class(CLASS_INDEX_FIRST_FREE + 99);
    assert_true(jit_sendsite_pic_case_write(pic, 2, CLASS_INDEX_FIRST_FREE + 99, answering(JIT_KIND_METHOD, I(399))));
    hits(pic, other, I(399));
    closed_misses(pic, rcvrs[2]);
    hits(pic, rcvrs[1], I(301));
    hits(pic, rcvrs[3], I(303));
}

/* The receiver is found above the arguments for any nargs. */
static void closed_pic_finds_the_receiver_under_its_arguments(void **state)
{
    (void)state;
    Oop a = object_of_class(CLASS_INDEX_FIRST_FREE + 40), b = object_of_class(CLASS_INDEX_FIRST_FREE + 41);
    JitMethod *pic0 = jit_sendsite_closed_pic_new(&zone, &pic_rt, selector, 0);
    JitMethod *pic3 = jit_sendsite_closed_pic_new(&zone, &pic_rt, selector, 3);
    assert_non_null(pic0);
    assert_non_null(pic3);
    assert_true(jit_sendsite_pic_case_write(pic0, 0, CLASS_INDEX_FIRST_FREE + 40, answering(JIT_KIND_METHOD, I(40))));
    assert_true(jit_sendsite_pic_case_write(pic3, 0, CLASS_INDEX_FIRST_FREE + 40, answering(JIT_KIND_METHOD, I(43))));
    /* the arguments are of the other class: only the receiver may decide */
    assert_int_equal(run(jit_method_code(pic0), a, 0), I(40));
    assert_int_equal(run(jit_method_code(pic3), a, 3, b, b, b), I(43));
    assert_int_equal(seen.closed_misses, 0);
    assert_int_equal(run(jit_method_code(pic0), b, 0), MISS_K);
    assert_missed(&seen.closed_misses, 0, pic0, b);
    assert_int_equal(run(jit_method_code(pic3), b, 3, a, a, I(9)), MISS_K);
    assert_missed(&seen.closed_misses, 1, pic3, b);
    assert_int_equal(seen.last_arg, I(9));
}

static void case_functions_refuse_bad_indices_and_other_pieces(void **state)
{
    (void)state;
    JitMethod *pic = closed_pic(1);
    uint8_t *t = answering(JIT_KIND_METHOD, I(1));
    uint32_t cls;
    uint8_t *target;
    assert_false(jit_sendsite_pic_case_write(pic, -1, CLASS_INDEX_FIRST_FREE, t));
    assert_false(jit_sendsite_pic_case_write(pic, JIT_MAX_PIC_CASES, CLASS_INDEX_FIRST_FREE, t));
    assert_false(jit_sendsite_pic_case_read(pic, -1, &cls, &target));
    assert_false(jit_sendsite_pic_case_read(pic, JIT_MAX_PIC_CASES, &cls, &target));
    assert_int_equal(jit_sendsite_pic_case_count(pic), 0);
    JitMethod *open = jit_sendsite_open_pic_new(&zone, &pic_rt, selector, 1);
    assert_non_null(open);
    assert_false(jit_sendsite_pic_case_write(open, 0, CLASS_INDEX_FIRST_FREE, t));
    assert_false(jit_sendsite_pic_case_read(open, 0, &cls, &target));
    assert_int_equal(jit_sendsite_pic_case_count(open), 0);
    closed_misses(pic, I(1));
}

/* -- Open PICs ------------------------------------------------------------------------------ */

/* vm/model/lookup.h's vm_lookup_cached hash. */
static VmCacheEntry *cache_entry(Oop sel, uint32_t class_index)
{
    size_t h = ((sel >> 3) ^ (class_index * VM_LOOKUP_HASH_MULTIPLIER)) & (VM_LOOKUP_CACHE_SIZE - 1);
    return &vm_lookup_cache[h];
}

/* A heap method (as far as the open PIC reads one) whose counter says "compiled to jm". */
static Oop method_compiled_to(const JitMethod *jm)
{
    Oop m = gc_alloc_old(CLASS_INDEX_METHOD, FMT_POINTERS, METHOD_FIXED_SLOTS);
    assert_true(m != 0);
    obj_slots(m)[METHOD_HEADER] = oop_from_int(vm_method_make_header(METHOD_FIXED_SLOTS, 1, 0, 4, false));
    vm_counter_set(m, jm ? vm_counter_of_code(jm) : 0);
    return m;
}

static void cache_put(Oop sel, uint32_t class_index, Oop method)
{
    VmCacheEntry *e = cache_entry(sel, class_index);
    e->selector = sel;
    e->class_index = class_index;
    e->method = method;
}

static JitMethod *open_pic(Oop sel, int nargs)
{
    JitMethod *pic = jit_sendsite_open_pic_new(&zone, &pic_rt, sel, nargs);
    assert_non_null(pic);
    assert_int_equal(pic->kind, JIT_KIND_OPEN_PIC);
    assert_int_equal(pic->method, sel);
    assert_int_equal(pic->nargs, nargs);
    return pic;
}

static void open_misses(const JitMethod *pic, Oop rcvr)
{
    int before = seen.open_misses;
    assert_int_equal(run1(pic, rcvr), MISS_K);
    assert_missed(&seen.open_misses, before, pic, rcvr);
    assert_int_equal(seen.last_arg, I(77));
    assert_int_equal(seen.closed_misses, 0);
}

static void open_pic_jumps_to_the_cached_methods_unchecked_entry(void **state)
{
    (void)state;
    JitMethod *pic = open_pic(selector, 1);
    uint32_t ca = CLASS_INDEX_FIRST_FREE + 60, cb = CLASS_INDEX_FIRST_FREE + 61;
    Oop a = object_of_class(ca), b = object_of_class(cb);
    cache_put(selector, ca, method_compiled_to(compiled_answering(I(601), I(50601))));
    cache_put(selector, cb, method_compiled_to(compiled_answering(I(602), I(50602))));
    cache_put(selector, CLASS_INDEX_SMALLINT, method_compiled_to(compiled_answering(I(603), I(50603))));
    cache_put(selector, (uint32_t)OBJ_CLASS_MASK, method_compiled_to(compiled_answering(I(604), I(50604))));
    Oop w = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_WORDS, 1); /* format bits above the index */
    assert_true(w != 0);
    cache_put(selector, CLASS_INDEX_ARRAY, method_compiled_to(compiled_answering(I(605), I(50605))));
    hits(pic, a, I(601));
    hits(pic, b, I(602));
    hits(pic, I(12), I(603));
    hits(pic, object_of_class((uint32_t)OBJ_CLASS_MASK), I(604));
    hits(pic, w, I(605));
    assert_int_equal(seen.open_misses, 0);

    /* the cache changes under the PIC: it follows */
    cache_put(selector, ca, method_compiled_to(compiled_answering(I(611), I(50611))));
    hits(pic, a, I(611));
    hits(pic, b, I(602));
}

static void open_pic_misses_classes_and_selectors_not_in_the_cache(void **state)
{
    (void)state;
    JitMethod *pic = open_pic(selector, 1);
    uint32_t ca = CLASS_INDEX_FIRST_FREE + 70;
    Oop a = object_of_class(ca);
    open_misses(pic, a); /* empty cache */
    open_misses(pic, I(1));

    cache_put(selector, ca, method_compiled_to(compiled_answering(I(701), I(50701))));
    hits(pic, a, I(701));
    open_misses(pic, object_of_class(CLASS_INDEX_FIRST_FREE + 71));
    open_misses(pic, I(1));

    /* another class that hashes to a's entry: the class check, not the slot, decides */
    uint32_t twin = 0;
    for (uint32_t c = CLASS_INDEX_FIRST_FREE + 72; c < OBJ_CLASS_MASK && !twin; c++)
        if (cache_entry(selector, c) == cache_entry(selector, ca)) twin = c;
    assert_true(twin != 0);
    open_misses(pic, object_of_class(twin));
    hits(pic, a, I(701));

    /* the same class under another selector: another PIC's business */
    JitMethod *other = open_pic(other_selector, 1);
    open_misses(other, a);
    cache_put(other_selector, ca, method_compiled_to(compiled_answering(I(702), I(50702))));
    hits(other, a, I(702));
    hits(pic, a, I(701));

    /* an entry holding a's class and another selector at a's slot */
    VmCacheEntry *e = cache_entry(selector, ca);
    e->selector = other_selector;
    open_misses(pic, a);
    e->selector = selector;
    hits(pic, a, I(701));
}

static void open_pic_misses_methods_not_compiled(void **state)
{
    (void)state;
    JitMethod *pic = open_pic(selector, 1);
    uint32_t ca = CLASS_INDEX_FIRST_FREE + 80;
    Oop a = object_of_class(ca);
    JitMethod *jm = compiled_answering(I(801), I(50801));
    Oop m = method_compiled_to(NULL);
    cache_put(selector, ca, m);
    static const intptr_t not_compiled[] = { 0, 1, 5, 1000, OOP_INT_MAX, -1 }; /* counts, and -1 */
    for (size_t i = 0; i < sizeof not_compiled / sizeof not_compiled[0]; i++) {
        vm_counter_set(m, not_compiled[i]);
        open_misses(pic, a);
    }
    vm_counter_set(m, vm_counter_of_code(jm));
    hits(pic, a, I(801));
    vm_counter_set(m, 0); /* decompiled */
    open_misses(pic, a);
}

static void open_pic_finds_the_receiver_under_its_arguments(void **state)
{
    (void)state;
    uint32_t ca = CLASS_INDEX_FIRST_FREE + 90, cb = CLASS_INDEX_FIRST_FREE + 91;
    Oop a = object_of_class(ca), b = object_of_class(cb);
    JitMethod *pic0 = open_pic(other_selector, 0);
    JitMethod *pic2 = open_pic(selector, 2);
    cache_put(other_selector, ca, method_compiled_to(compiled_answering(I(900), I(50900))));
    cache_put(selector, ca, method_compiled_to(compiled_answering(I(902), I(50902))));
    assert_int_equal(run(jit_method_code(pic0), a, 0), I(900));
    assert_int_equal(run(jit_method_code(pic2), a, 2, b, b), I(902));
    assert_int_equal(seen.open_misses, 0);
    assert_int_equal(run(jit_method_code(pic0), b, 0), MISS_K);
    assert_missed(&seen.open_misses, 0, pic0, b);
    assert_int_equal(run(jit_method_code(pic2), b, 2, a, I(8)), MISS_K);
    assert_missed(&seen.open_misses, 1, pic2, b);
    assert_int_equal(seen.last_arg, I(8));
}

/* -- A site's state, read back (vm/jit/verify.h) ------------------------------------------- */

static void site_state_follows_what_the_site_links_to(void **state)
{
    (void)state;
    uint8_t *send = answering(JIT_KIND_TRAMPOLINE, MISS_K); /* stands for ceSend */
    JitMethod *caller = jit_zone_alloc(&zone, JIT_KIND_METHOD, JIT_METHOD_CODE + ANSWER_CODE_BYTES);
    assert_non_null(caller);
    X64Buf b;
    jit_x64_buf_init(&b, jit_method_code(caller), ANSWER_CODE_BYTES);
    jit_sendsite_emit(&b, jit_sendsite_unlinked_tag(0, 1), send);
    jit_x64_ret(&b);
    piece_finish(caller, &b);
    uint8_t *ra = jit_method_code(caller) + JIT_SENDSITE_BYTES;
    JitMethod *to = NULL;
    assert_int_equal(jit_verify_site_state(&zone, send, ra, &to), JIT_SITE_UNLINKED);

    JitMethod *callee = compiled_answering(I(1), I(2));
    assert_true(jit_sendsite_write(ra, CLASS_INDEX_FIRST_FREE, jit_method_checked_entry(callee)));
    assert_int_equal(jit_verify_site_state(&zone, send, ra, &to), JIT_SITE_MONO);
    assert_ptr_equal(to, callee);
    /* a site reaches a method at its checked entry only */
    assert_true(jit_sendsite_write(ra, CLASS_INDEX_FIRST_FREE, jit_method_unchecked_entry(callee)));
    assert_int_equal(jit_verify_site_state(&zone, send, ra, &to), JIT_SITE_BAD);

    JitMethod *closed = closed_pic(1);
    assert_true(jit_sendsite_write(ra, 0, jit_method_code(closed)));
    assert_int_equal(jit_verify_site_state(&zone, send, ra, &to), JIT_SITE_POLY);
    assert_ptr_equal(to, closed);

    JitMethod *open = jit_sendsite_open_pic_new(&zone, &pic_rt, selector, 1);
    assert_non_null(open);
    assert_true(jit_sendsite_write(ra, 0, jit_method_code(open)));
    assert_int_equal(jit_verify_site_state(&zone, send, ra, &to), JIT_SITE_MEGA);
    assert_ptr_equal(to, open);
    assert_string_equal(jit_verify_state_name(JIT_SITE_MEGA), "megamorphic");
    /* and a PIC at its first byte only */
    assert_true(jit_sendsite_write(ra, 0, jit_method_code(closed) + 1));
    assert_int_equal(jit_verify_site_state(&zone, send, ra, &to), JIT_SITE_BAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(site_reads_back_what_was_emitted_and_written, reset),
        cmocka_unit_test_setup(site_calls_its_target_with_the_tag_in_edi, reset),
        cmocka_unit_test_setup(site_functions_refuse_what_is_not_a_site, reset),
        cmocka_unit_test_setup(unlinked_tags_round_trip, reset),
        cmocka_unit_test_setup(empty_closed_pic_misses_with_itself_in_rsi, reset),
        cmocka_unit_test_setup(closed_pic_with_one_case_hits_its_class_only, reset),
        cmocka_unit_test_setup(closed_pic_dispatches_six_classes_and_misses_a_seventh, reset),
        cmocka_unit_test_setup(emptied_case_misses_again_and_can_be_refilled, reset),
        cmocka_unit_test_setup(closed_pic_finds_the_receiver_under_its_arguments, reset),
        cmocka_unit_test_setup(case_functions_refuse_bad_indices_and_other_pieces, reset),
        cmocka_unit_test_setup(open_pic_jumps_to_the_cached_methods_unchecked_entry, reset),
        cmocka_unit_test_setup(open_pic_misses_classes_and_selectors_not_in_the_cache, reset),
        cmocka_unit_test_setup(open_pic_misses_methods_not_compiled, reset),
        cmocka_unit_test_setup(open_pic_finds_the_receiver_under_its_arguments, reset),
        cmocka_unit_test_setup(site_state_follows_what_the_site_links_to, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
