/*
 * vm/jit/piece.c — one piece of machine code in the zone, begun and ended
 * (vm/jit/piece.h).
 */
#include "vm/jit/piece.h"

#include "vm/model/vm.h"

#include <string.h>

bool jit_piece_begin(JitPiece *p, JitZone *z, JitMethodKind kind, size_t bound, Oop method, int nargs)
{
    p->m = jit_zone_alloc(z, kind, JIT_METHOD_CODE + bound);
    if (!p->m) return false;
    p->m->method = method;
    p->m->nargs = (uint8_t)nargs;
    JitMethod copy = *p->m;
    jit_x64_buf_init(&p->b, p->m, p->m->size);
    p->header = JIT_X64_LABEL("header");
    jit_x64_label_bind(&p->b, &p->header);
    jit_x64_data(&p->b, &copy, JIT_METHOD_CODE);
    return true;
}

JitMethod *jit_piece_end(JitPiece *p, JitZone *z, const JitMapBuilder *map, const uint32_t *unwind, uint32_t nunwind,
                         const char *who)
{
    const char *why = NULL;
    if (!jit_x64_finish(&p->b, &why)) vm_panic("%s generated bad code: %s", who, why ? why : "?");
    JitMethodLayout l;
    if ((map && !jit_map_builder_ok(map)) ||
        !jit_method_layout_unwind(&l, jit_x64_size(&p->b) - JIT_METHOD_CODE, map ? jit_map_builder_bytes(map) : 0,
                                  map ? jit_map_builder_count(map) : 0, 0, nunwind) ||
        l.size > p->m->size)
        vm_panic("%s: a piece's map does not fit it", who);
    jit_method_apply_layout(p->m, &l);
    if (map) jit_map_encode(map, jit_method_map_bytes(p->m), p->m->size - l.map_offset);
    if (nunwind) memcpy(jit_method_unwind(p->m), unwind, nunwind * 2 * sizeof *unwind);
    jit_zone_shrink(z, p->m, l.size);
    return p->m;
}
