/*
 * profiler/ehframe.c — .eh_frame and .eh_frame_hdr for one piece of machine
 * code (profiler/ehframe.h).
 */
#include "profiler/ehframe.h"

#include "proto/stackabi.h"

#include <string.h>

/* DWARF numbers (the DWARF 4 standard, the x86-64 psABI's register map). */
enum {
    CFA_ADVANCE_LOC4 = 0x04,
    CFA_OFFSET = 0x80, /* | register, then ULEB offset / data alignment */
    CFA_RESTORE = 0xc0, /* | register */
    CFA_UNDEFINED = 0x07,
    CFA_DEF_CFA = 0x0c,
    CFA_NOP = 0x00,
    REG_RBP = 6,
    REG_RSP = 7,
    REG_RA = 16,
    PE_PCREL_SDATA4 = 0x1b,
    PE_UDATA4 = 0x03,
    PE_DATAREL_SDATA4 = 0x3b,
};

typedef struct Out {
    uint8_t *p, *end;
    size_t n;
} Out;

static void byte(Out *o, uint8_t b)
{
    if (o->p < o->end)
        *o->p++ = b;
    o->n++;
}

static void u32(Out *o, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        byte(o, (uint8_t)(v >> (8 * i)));
}

static void uleb(Out *o, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        byte(o, (uint8_t)(b | (v ? 0x80 : 0)));
    } while (v);
}

static void pad8(Out *o, size_t from)
{
    while ((o->n - from) % 8)
        byte(o, CFA_NOP);
}

/* The whole state for a rule, so no rule depends on the one before. */
static void rule(Out *o, uint32_t r)
{
    switch (r) {
    case PROF_UNWIND_PUSHED_BP:
        byte(o, CFA_DEF_CFA), uleb(o, REG_RSP), uleb(o, 16);
        byte(o, CFA_OFFSET | REG_RBP), uleb(o, 2);
        byte(o, CFA_OFFSET | REG_RA), uleb(o, 1);
        break;
    case PROF_UNWIND_FRAME:
        byte(o, CFA_DEF_CFA), uleb(o, REG_RBP), uleb(o, 16);
        byte(o, CFA_OFFSET | REG_RBP), uleb(o, 2);
        byte(o, CFA_OFFSET | REG_RA), uleb(o, 1);
        break;
    case PROF_UNWIND_CSTATE:
    case PROF_UNWIND_SWITCH:
        byte(o, CFA_DEF_CFA), uleb(o, REG_RSP), uleb(o, 8);
        byte(o, CFA_RESTORE | REG_RBP);
        byte(o, CFA_UNDEFINED), uleb(o, REG_RA);
        break;
    default: /* FRAMELESS */
        byte(o, CFA_DEF_CFA), uleb(o, REG_RSP), uleb(o, 8);
        byte(o, CFA_RESTORE | REG_RBP);
        byte(o, CFA_OFFSET | REG_RA), uleb(o, 1);
        break;
    }
}

static void patch32(uint8_t *buf, size_t cap, size_t at, uint32_t v)
{
    if (at + 4 <= cap)
        memcpy(buf + at, &v, 4);
}

size_t prof_ehframe_build(uint8_t *buf, size_t cap, uint64_t code_size, uint64_t code_offset, const uint32_t *pairs,
                          uint32_t npairs, size_t *hdr_size)
{
    Out o = {buf, buf + cap, 0};
    /* perf places .eh_frame at the code's end rounded up to 8 bytes */
    uint64_t code_span = (code_size + 7) & ~(uint64_t)7;
    /* CIE: augmentation "zR" (FDE addresses pc-relative sdata4), code
     * alignment 1, data alignment -8, return address register 16; the
     * initial state is a frameless one */
    size_t cie = o.n;
    u32(&o, 0); /* length, patched */
    u32(&o, 0); /* CIE id */
    byte(&o, 1);
    byte(&o, 'z'), byte(&o, 'R'), byte(&o, 0);
    uleb(&o, 1);
    byte(&o, 0x78); /* SLEB -8 */
    uleb(&o, REG_RA);
    uleb(&o, 1), byte(&o, PE_PCREL_SDATA4);
    byte(&o, CFA_DEF_CFA), uleb(&o, REG_RSP), uleb(&o, 8);
    byte(&o, CFA_OFFSET | REG_RA), uleb(&o, 1);
    pad8(&o, cie);
    patch32(buf, cap, cie, (uint32_t)(o.n - cie - 4));

    /* FDE over the whole code: the rules at their offsets */
    size_t fde = o.n;
    u32(&o, 0); /* length, patched */
    u32(&o, (uint32_t)(o.n - cie)); /* back to the CIE */
    size_t pc_begin = o.n;
    u32(&o, (uint32_t)(-(int64_t)(code_span + pc_begin))); /* the code, then .eh_frame */
    u32(&o, (uint32_t)code_size);
    uleb(&o, 0); /* no augmentation data */
    uint64_t at = 0;
    for (uint32_t i = 0; i < npairs; i++) {
        uint64_t off = pairs[2 * i] > code_offset ? pairs[2 * i] - code_offset : 0;
        if (off >= code_size)
            break;
        if (off > at) {
            byte(&o, CFA_ADVANCE_LOC4);
            u32(&o, (uint32_t)(off - at));
            at = off;
        }
        rule(&o, pairs[2 * i + 1]);
    }
    pad8(&o, fde);
    patch32(buf, cap, fde, (uint32_t)(o.n - fde - 4));
    u32(&o, 0); /* the terminator */
    size_t eh_frame_size = o.n;

    /* .eh_frame_hdr: the pointer to .eh_frame and a one-entry search table */
    size_t hdr = o.n;
    byte(&o, 1);
    byte(&o, PE_PCREL_SDATA4);
    byte(&o, PE_UDATA4);
    byte(&o, PE_DATAREL_SDATA4);
    u32(&o, (uint32_t)(-(int64_t)(eh_frame_size + 4)));
    u32(&o, 1);
    u32(&o, (uint32_t)(-(int64_t)(code_span + eh_frame_size)));
    u32(&o, (uint32_t)((int64_t)fde - (int64_t)eh_frame_size));
    *hdr_size = o.n - hdr;
    return o.n <= cap ? o.n : 0;
}
