/*
 * vm/jit/sendsite.h — send sites, their inline caches and the PICs they link
 * to (reference 002 §5; vm/jit/DESIGN.md, "Sends").
 *
 * A send site, as the templates emit it (jit_sendsite_emit):
 *
 *   +----------------------+----------------------+
 *   | BF  tag (imm32)      | E8  rel32 -> target  |   mov edi, tag ; call target
 *   +----------------------+----------------------+
 *   ra - 10                ra - 5                 ra = the call's return address,
 *                                                      the mcpc the map records
 *
 * The states of a site and what tag and target hold:
 *
 *   state       tag                                   target
 *   unlinked    selector tag * 256 + nargs (below)    the ceSend trampoline
 *   monomorphic receiver class index                  callee's checked entry
 *   polymorphic (ignored)                             a closed PIC's entry
 *   megamorphic (ignored)                             the selector's open PIC
 *
 * Unlinked tags carry the compiler's selector tag (vm/jit/compile.h: a literal
 * index >= 0, or a negative special tag) and the argument count, so the
 * ceSend routine needs nothing but edi. A checked entry loads the receiver's
 * class index into ecx (jit_sendsite_emit_receiver_class) and compares it
 * with edi: a mismatch jumps to ceMethodAbort, which turns the site into a
 * closed PIC.
 *
 * A closed PIC (JIT_KIND_CLOSED_PIC; its header's method field holds the
 * selector) is one piece per site:
 *
 *   entry:  ecx := receiver class index
 *   case i: 81 F9 class (imm32) | 0F 84 rel32 -> callee's unchecked entry
 *           (12 bytes each, JIT_MAX_PIC_CASES of them; an empty case has
 *           class JIT_SENDSITE_NO_CLASS and jumps to the miss code)
 *   miss:   lea rsi, [header] ; jmp ceClosedPICMiss
 *
 * An open PIC (JIT_KIND_OPEN_PIC) is one piece per selector, shared by every
 * megamorphic site of that selector (reference 002 §5.2): it probes the
 * interpreter's global lookup cache (vm/model/lookup.h) and jumps to the found
 * method's unchecked entry when it is compiled, else to ceOpenPICMiss.
 *
 * Every patch goes through one function per site kind that writes and reads
 * the value back (false when the bytes are not the expected form).
 *
 * Who may call: the template compiler (emit), the VM's linking routines, the
 * code-zone statistics, --jit-verify and compaction (read and write).
 */
#ifndef JIT_SENDSITE_H
#define JIT_SENDSITE_H

#include "gc/object.h"
#include "vm/jit/jitmethod.h"
#include "vm/jit/x64.h"
#include "vm/jit/zone.h"

#include <stdbool.h>
#include <stdint.h>

/* Cog's limit: "8 is too large" (reference 002 §5.1 keeps six cases). */
#define JIT_MAX_PIC_CASES 6
#define JIT_SENDSITE_BYTES (JIT_X64_MOV32_SIZE_LOW + JIT_X64_CALL_REL32_SIZE)
#define JIT_SENDSITE_CASE_BYTES (JIT_X64_CMP32_SIZE_LOW + JIT_X64_JCC_REL32_SIZE)
/* Never a class index (those have OBJ_CLASS_BITS bits). */
#define JIT_SENDSITE_NO_CLASS UINT32_MAX
#define JIT_SENDSITE_MAX_NARGS 255

_Static_assert(JIT_SENDSITE_BYTES == 10, "mov edi, imm32 (5) + call rel32 (5)");
_Static_assert(JIT_SENDSITE_CASE_BYTES == 12, "cmp ecx, imm32 (6) + je rel32 (6)");

static inline uint32_t jit_sendsite_unlinked_tag(int64_t selector_tag, int nargs)
{
    return (uint32_t)((int32_t)selector_tag * 256 + nargs);
}
static inline int64_t jit_sendsite_tag_selector(uint32_t tag) { return (int64_t)((int32_t)tag >> 8); }
static inline int jit_sendsite_tag_nargs(uint32_t tag) { return (int)(tag & 0xff); }

/* -- Sites ------------------------------------------------------------------------ */

typedef struct JitSendSite {
    uint32_t tag;
    uint8_t *target;
} JitSendSite;

void jit_sendsite_emit(X64Buf *b, uint32_t tag, const void *target);
/* ra: the site's return address. */
bool jit_sendsite_read(const uint8_t *ra, JitSendSite *out);
bool jit_sendsite_write(uint8_t *ra, uint32_t tag, const void *target);

/* rax := the JitMethod of the method object in rax, read through its
 * counter slot (-(JitMethod address) once compiled, vm/jit/runtime.h), or to
 * miss while it has none. The one home of that read: open PICs and block
 * value stubs. */
void jit_sendsite_emit_compiled_or(X64Buf *b, X64Label *miss);
/* Jumps to the unchecked entry of the JitMethod in rax; clobbers rcx. */
void jit_sendsite_emit_jump_unchecked(X64Buf *b);
/* ecx := class index of the receiver at [rsp + receiver_disp]; clobbers rax. */
void jit_sendsite_emit_receiver_class(X64Buf *b, int32_t receiver_disp);

/* -- PICs --------------------------------------------------------------------------- */

typedef struct JitPicRuntime {
    const uint8_t *closed_miss; /* dispatch trampoline: fn(_, closed PIC) */
    const uint8_t *open_miss;   /* dispatch trampoline: fn(_, open PIC) */
    const void *lookup_cache;   /* vm/model/lookup.h's vm_lookup_cache */
} JitPicRuntime;

/* A closed PIC for `selector` with no cases, or NULL when the zone is full. */
JitMethod *jit_sendsite_closed_pic_new(JitZone *z, const JitPicRuntime *rt, Oop selector, int nargs);
int jit_sendsite_pic_case_count(const JitMethod *pic);
bool jit_sendsite_pic_case_read(const JitMethod *pic, int i, uint32_t *class_index, uint8_t **target);
/* Case i (0 <= i < JIT_MAX_PIC_CASES) jumps to target for class_index;
 * JIT_SENDSITE_NO_CLASS with target NULL empties it. */
bool jit_sendsite_pic_case_write(JitMethod *pic, int i, uint32_t class_index, const void *target);
/* The open PIC for `selector`, or NULL when the zone is full. */
JitMethod *jit_sendsite_open_pic_new(JitZone *z, const JitPicRuntime *rt, Oop selector, int nargs);

#endif
