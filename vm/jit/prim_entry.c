/*
 * vm/jit/prim_entry.c — the compiled entries of methods that have no
 * bytecodes to compile: a primitive's stub (jit_compile_primitive) and the
 * block evaluation stub (jit_compile_block_value), declared in
 * vm/jit/compile.h. Each is a piece (vm/jit/piece.h): header, checked
 * entry, the body at the unchecked entry, the entry's exits.
 */
#include "vm/jit/compile.h"

#include "vm/jit/compile_int.h"

#include "vm/jit/piece.h"
#include "vm/jit/sendsite.h"
#include "vm/model/method.h"
#include "vm/model/vm.h"

/* A stub: the piece and its map; the caller emits the body at the
 * unchecked entry into s->p.b and s->map. */
typedef struct Stub {
    JitPiece p;
    int nargs;
    JitMapBuilder map;
    X64Label abort, checked, unchecked;
} Stub;

static bool stub_begin(Stub *s, JitZone *z, Oop method, size_t code_bound)
{
    s->nargs = vm_method_nargs(method);
    if (!jit_piece_begin(&s->p, z, JIT_KIND_METHOD, code_bound + 2 * JIT_MAP_ENTRY_MAX_BYTES, method, s->nargs))
        return false;
    jit_map_builder_init(&s->map);
    s->abort = JIT_X64_LABEL("class miss");
    s->checked = JIT_X64_LABEL("checked entry");
    s->unchecked = JIT_X64_LABEL("unchecked entry");
    jit_x64_label_bind(&s->p.b, &s->checked);
    jit_compile_checked_entry(&s->p.b, s->nargs, &s->abort);
    jit_x64_label_bind(&s->p.b, &s->unchecked);
    return true;
}

/* The class-miss exit, then the map after the code and the entries in the
 * header. Stubs are small and fixed: a failure here is a bug in this file. */
static JitMethod *stub_end(Stub *s, JitZone *z, const JitCompileRuntime *rt)
{
    X64Buf *b = &s->p.b;
    jit_compile_entry_exits(b, &s->map, rt, &s->p.header, &s->abort, NULL, NULL);
    JitMethod *m = jit_piece_end(&s->p, z, &s->map, NULL, 0, "vm/jit/prim_entry.c");
    jit_method_set_entries(m, jit_x64_label_address(b, &s->checked), jit_x64_label_address(b, &s->unchecked));
    jit_map_builder_release(&s->map);
    return m;
}
JitMethod *jit_compile_primitive(JitZone *z, const JitCompileRuntime *rt, Oop method, int index, JitPrimFast fast)
{
    Stub s;
    if (!stub_begin(&s, z, method, fast == JIT_PRIM_FAST_NONE ? 128 : 512)) return NULL;
    X64Label slow = JIT_X64_LABEL("primitive in C");
    jit_prim_fast_emit(&s.p.b, rt, fast, &slow);
    jit_x64_label_bind(&s.p.b, &slow);
    jit_x64_mov_r32i(&s.p.b, RDI, (uint32_t)index);
    jit_x64_mov_r32i(&s.p.b, RSI, (uint32_t)s.nargs);
    jit_x64_lea_rl(&s.p.b, RDX, &s.p.header);
    jit_x64_call_rel32(&s.p.b, rt->primitive);
    jit_map_add(&s.map, (uint32_t)jit_x64_size(&s.p.b), 0, JIT_MAP_OTHER);
    jit_x64_ret(&s.p.b);
    return stub_end(&s, z, rt);
}

JitMethod *jit_compile_block_value(JitZone *z, const JitCompileRuntime *rt, Oop method)
{
    Stub s;
    if (!stub_begin(&s, z, method, 192)) return NULL;
    X64Buf *b = &s.p.b;
    int nargs = s.nargs;
    X64Label miss = JIT_X64_LABEL("block not compiled");
    /* closure -> block method -> its JitMethod */
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RSP, 8 * (1 + nargs)));
    jit_x64_mov_rm(b, RAX, jit_x64_mem(RAX, (int32_t)(8 + 8 * BLOCK_METHOD)));
    jit_sendsite_emit_compiled_or(b, &miss);
    jit_x64_movzx_rm8(b, RCX, jit_x64_mem(RAX, offsetof(JitMethod, nargs)));
    jit_x64_cmp_ri(b, RCX, nargs);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, &miss); /* the interpreter reports the wrong count */
    jit_sendsite_emit_jump_unchecked(b);
    jit_x64_label_bind(b, &miss);
    jit_x64_lea_rl(b, RSI, &s.p.header);
    jit_x64_jmp_rel32(b, rt->block_value_miss);
    jit_map_add(&s.map, (uint32_t)jit_x64_size(b), 0, JIT_MAP_OTHER);
    return stub_end(&s, z, rt);
}
