/*
 * vm/jit/emit.c — the emit helpers the templates share: map entries, the
 * cold section's begin and end,
 * mapped conditional jumps, jump targets and fused branches, Booleans from
 * flags, which sends are inlined accessors, and the entry checks every
 * compiled method and stub begins with and their exits. vm/jit/compile.c and the
 * double_*.c files call down into it; it calls none of them (declared in
 * vm/jit/compile_int.h).
 */
#include "vm/jit/compile_int.h"

#include "vm/jit/compile.h"
#include "vm/jit/sendsite.h"

#include "vm/bytecode/bytecodes.h"
#include "vm/model/frame.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

/* Where a jump at pc lands, or -1 when it is not a jump. */
long jit_compile_jump_target(const uint8_t *code, size_t pc)
{
    uint8_t op = code[pc];
    size_t next = pc + vm_bytecode_length[op];
    switch (op) {
    case BC_JUMP:
    case BC_JUMP_IF_TRUE:
    case BC_JUMP_IF_FALSE:
    case BC_JUMP_IF_NIL:
    case BC_JUMP_IF_NOT_NIL: return (long)(next + jit_compile_operand_w(code + pc + 1));
    case BC_JUMP_BACK: return (long)next - (long)jit_compile_operand_w(code + pc + 1);
    default: return -1;
    }
}

static uint32_t mcpc(Compiler *c) { return (uint32_t)jit_x64_size(&c->b); }

/* A map entry here; the cold section's go to their own builder until the
 * join appends them (the map is built in mcpc order). */
void jit_compile_map_here(Compiler *c, size_t bcpc, JitMapKind kind)
{
    jit_map_add(jit_x64_in_cold(&c->b) ? &c->cold_map : &c->map, mcpc(c), (uint32_t)bcpc, kind);
}

/* A mark at mcpc for the bytecode being emitted, unless the last entry
 * is at the same place. */
static void map_mark_at(JitMapBuilder *map, size_t mcpc, size_t bcpc)
{
    uint32_t n = jit_map_builder_count(map);
    /* one bytecode per mcpc (jit_map_bcpc_at answers the first); the same one is no news */
    if (n && map->entries[n - 1].mcpc == mcpc) return;
    jit_map_add(map, (uint32_t)mcpc, (uint32_t)bcpc, JIT_MAP_LOCAL); /* no call or jump out ends here */
}

/* The profiler reads the code before an entry as its bytecode's (report/ranges.c), so a
 * piece moved to the cold section gets entries where it starts and ends, and the main
 * code one where the piece left it: the bytecode's send entry, which marked the end of
 * its fast path, is in the cold section now. */
void jit_compile_cold_begin(Compiler *c)
{
    size_t here = jit_x64_here(&c->b); /* the fast path's pending jump is dropped or comes after */
    bool from_main = !jit_x64_in_cold(&c->b);
    jit_x64_cold_begin(&c->b);
    if (!from_main || !jit_x64_in_cold(&c->b)) return;
    map_mark_at(&c->map, here, c->pc);
    uint32_t n = jit_map_builder_count(&c->cold_map);
    if (n && c->cold_map.entries[n - 1].mcpc == mcpc(c) && c->cold_map.entries[n - 1].bcpc != c->pc)
        jit_x64_int3(&c->b); /* the piece before ends here with its own bytecode's entry */
    map_mark_at(&c->cold_map, mcpc(c), c->pc);
}

void jit_compile_cold_end(Compiler *c)
{
    if (jit_x64_cold_ending(&c->b)) map_mark_at(&c->cold_map, mcpc(c), c->pc); /* after its jump back */
    jit_x64_cold_end(&c->b);
}

void jit_compile_jcc_to(Compiler *c, X64Cond cc, X64Label *l, size_t bcpc)
{
    jit_x64_jcc_label32(&c->b, cc, l);
    jit_compile_map_here(c, (uint32_t)bcpc, JIT_MAP_LOCAL);
}

long jit_compile_fused_branch(const Compiler *c, size_t next)
{
    if (next >= c->len || c->target[next]) return -1;
    uint8_t after = c->code[next];
    if (after == BC_JUMP_IF_TRUE || after == BC_JUMP_IF_FALSE) return (long)next;
    if (after != BC_JUMP) return -1;
    long jt = jit_compile_jump_target(c->code, next);
    if (jt <= (long)next || (size_t)jt >= c->len) return -1;
    uint8_t there = c->code[jt];
    return there == BC_JUMP_IF_TRUE || there == BC_JUMP_IF_FALSE ? jt : -1;
}

/* rax := true when cc holds after the compare, else false. */
void jit_compile_set_boolean(Compiler *c, X64Cond cc)
{
    X64Buf *b = &c->b;
    jit_x64_mov_ri(b, RAX, (int64_t)c->rt->false_obj);
    jit_x64_mov_ri(b, RDX, (int64_t)c->rt->true_obj);
    jit_x64_cmovcc_rr(b, cc, RAX, RDX);
}

/* Whether the SEND or SEND_W at pc is an accessor send machine code
 * inlines (emit_inline_accessor in vm/jit/compile.c). */
bool jit_compile_accessor(const Compiler *c, size_t pc, uint32_t *class_index, bool *setter, int *field)
{
    const uint8_t *p = c->code + pc;
    VM_ASSERT(p[0] == BC_SEND || p[0] == BC_SEND_W);
    int nargs = p[0] == BC_SEND ? p[2] : p[3];
    return nargs <= 1 && c->rt->site_accessor && c->rt->site_accessor(p, class_index, setter, field) &&
           *setter == (nargs == 1) && *class_index != CLASS_INDEX_SMALLINT && *class_index != CLASS_INDEX_DOUBLE;
}

/* The checked entry: the receiver's class against the site's tag (edi). */
void jit_compile_checked_entry(X64Buf *b, int nargs, X64Label *abort)
{
    jit_sendsite_emit_receiver_class(b, 8 * (1 + nargs));
    jit_x64_cmp_rr(b, RCX, RDI);
    jit_x64_jcc_label32(b, JIT_X64_CC_NE, abort);
}

/* Out of line: a class miss, and the entry checks' slow path. Their jumps
 * leave the piece, so they get map entries (bcpc 0): compaction finds every
 * rel32 that leaves a piece through its map. */
void jit_compile_entry_exits(X64Buf *b, JitMapBuilder *map, const JitCompileRuntime *rt, X64Label *header,
                            X64Label *abort, X64Label *slow, X64Label *checked)
{
    jit_x64_label_bind(b, abort);
    jit_x64_lea_rl(b, RSI, header);
    jit_x64_jmp_rel32(b, rt->method_abort);
    jit_map_add(map, (uint32_t)jit_x64_size(b), 0, JIT_MAP_OTHER);
    if (slow) {
        jit_x64_label_bind(b, slow);
        jit_x64_lea_rl(b, RSI, checked);
        jit_x64_jmp_rel32(b, rt->entry_slow);
        jit_map_add(map, (uint32_t)jit_x64_size(b), 0, JIT_MAP_OTHER);
    }
}

void jit_compile_cmp_rax_oop(Compiler *c, Oop v)
{
    if (jit_compile_fits_i32((int64_t)v)) { /* nil, true and false lie low in the heap and never move */
        jit_x64_cmp_ri(&c->b, RAX, (int32_t)v);
        return;
    }
    jit_x64_mov_ri(&c->b, R11, (int64_t)v);
    jit_x64_cmp_rr(&c->b, RAX, R11);
}

