/*
 * vm/jit/relocate.c — rewriting rel32 branches of pieces that compaction
 * slides, and unlinking the send sites whose callees it frees.
 */
#include "vm/jit/relocate.h"

#include "vm/jit/compile.h"
#include "vm/jit/map.h"
#include "vm/jit/sendsite.h"
#include "vm/jit/x64.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/model/method.h"
#include "vm/model/vm.h"

/* The unlinked tag of the send whose map entry names bcpc of method. */
static uint32_t unlinked_tag_at(Oop method, uint32_t bcpc)
{
    const uint8_t *p = vm_method_bytecodes(method) + bcpc;
    switch (p[0]) {
    case BC_SEND: return jit_sendsite_unlinked_tag(p[1], p[2]);
    case BC_SEND_W: return jit_sendsite_unlinked_tag((int64_t)(p[1] | p[2] << 8), p[3]);
    default:
        if (p[0] >= BC_SEND_ADD && p[0] <= BC_SEND_LAST_SPECIAL)
            return jit_sendsite_unlinked_tag(jit_send_tag_special(p[0]), vm_special_nargs[p[0] - BC_SEND_ADD]);
        return jit_sendsite_unlinked_tag(JIT_SEND_MUST_BE_BOOLEAN, 0); /* a conditional jump's */
    }
}

/* Rewrites the rel32 ending at `end` in piece m (moving by `delta`) so that
 * after the slide it reaches where its target will be. Answers false when
 * the target is being freed. */
static bool relocate_rel32(JitZone *zone, const JitMethod *m, uint8_t *end, ptrdiff_t delta)
{
    uint8_t *t;
    if (!jit_x64_read_rel32(end, &t)) vm_panic("compaction: no rel32 ending at %p", (void *)end);
    if (jit_method_contains(m, t)) return true; /* moves with it */
    uint8_t *nt = jit_zone_forward(zone, t);
    if (!nt) return false;
    if (nt == t && delta == 0) return true;
    if (!jit_x64_patch_rel32(end, nt - delta)) vm_panic("compaction: rel32 at %p not patched", (void *)end);
    return true;
}

/* Only a call or jmp rel32 reaches another piece: the instructions other
 * map entries end are left alone. */
static bool ends_call_or_jmp(const uint8_t *end)
{
    return end[-JIT_X64_CALL_REL32_SIZE] == 0xE8 || end[-JIT_X64_JMP_REL32_SIZE] == 0xE9;
}

static uint64_t relocate_method(JitZone *zone, JitMethod *m, ptrdiff_t delta, const void *send)
{
    uint64_t unlinked = 0;
    JitMapIter it;
    JitMapEntry e;
    jit_map_iter_init(&it, jit_method_map(m));
    while (jit_map_iter_next(&it, &e)) {
        if (e.kind == JIT_MAP_LOCAL) continue; /* inside the method */
        uint8_t *end = jit_method_at(m, e.mcpc);
        if (!ends_call_or_jmp(end)) continue;
        if (relocate_rel32(zone, m, end, delta)) continue;
        /* a send linked to a freed method or PIC: back to unlinked */
        VM_ASSERT(e.kind == JIT_MAP_SEND, "only send sites reach freed code");
        if (!jit_sendsite_write(end, unlinked_tag_at(m->method, e.bcpc), (const uint8_t *)send - delta))
            vm_panic("compaction: send site at %p not unlinked", (void *)end);
        unlinked++;
    }
    return unlinked;
}

static void relocate_pic(JitZone *zone, JitMethod *pic, ptrdiff_t delta)
{
    if (pic->kind == JIT_KIND_CLOSED_PIC) {
        for (int i = 0; i < JIT_MAX_PIC_CASES; i++) {
            uint32_t cls;
            uint8_t *t;
            if (!jit_sendsite_pic_case_read(pic, i, &cls, &t)) vm_panic("compaction: PIC %p case %d", (void *)pic, i);
            if (cls == JIT_SENDSITE_NO_CLASS) {
                jit_sendsite_pic_case_write(pic, i, cls, NULL); /* the miss moves with the PIC */
                continue;
            }
            uint8_t *nt = jit_zone_forward(zone, t);
            if (!nt) {
                jit_sendsite_pic_case_write(pic, i, JIT_SENDSITE_NO_CLASS, NULL);
                continue;
            }
            /* a jcc's rel32 is relative to its own end, which moves by delta */
            if (!jit_sendsite_pic_case_write(pic, i, cls, nt - delta)) vm_panic("compaction: PIC case not patched");
        }
    }
    relocate_rel32(zone, pic, jit_method_at(pic, pic->map_offset), delta); /* the miss jump ends the code */
}

uint64_t jit_relocate_piece(JitZone *zone, JitMethod *m, ptrdiff_t delta, const void *send)
{
    if (jit_method_is_compiled(m)) return relocate_method(zone, m, delta, send);
    relocate_pic(zone, m, delta);
    return 0;
}
