/*
 * vm/jit/disasm.h — decorated disassembly of one JitMethod: Capstone's reading
 * of the code bytes, annotated with what the JIT knows about them — which
 * bytecode a pc stands for (the mcpc -> bcpc map), what a call or jump
 * reaches, which immediates are Oops and which of those the GC visits.
 *
 * The listing of tests/unit/jit/test_disasm.c's method, some lines left out
 * (addresses are the only part that changes from run to run):
 *
 *   method 0x7f0000001000: 128 bytes, code +48..+115 (67 bytes), 3 map entries, 1 literal site, 1 arg, for Foo>>#bar:
 *   checked entry:
 *     0x7f0000001030 +48    55                                 push    rbp                       ; bc 0 other
 *     0x7f0000001031 +49    48 89 e5                           mov     rbp, rsp
 *   unchecked entry:
 *     0x7f0000001034 +52    48 b8 28 10 00 00 00 00 00 00      movabs  rax, 0x1028               ; nil; literal
 *     0x7f000000103e +62    48 8b 05 c3 ff ff ff               mov     rax, qword ptr [rip - 0x3d]  ; header.method
 *     0x7f000000104f +79    e8 ac 07 00 00                     call    0x7f0000001800            ; ceSend; bc 3 send: send #foo: (1 arg)
 *     0x7f0000001054 +84    48 85 c0                           test    rax, rax
 *     0x7f0000001057 +87    0f 84 05 00 00 00                  je      0x7f0000001062            ; -> +98; bc 5 branch: jump if false to 9
 *     0x7f0000001062 +98    48 c7 80 00 10 00 00 07 00 00 …    mov     qword ptr [rax + 0x1000], 7
 *     0x7f0000001072 +114   06                                 .byte   0x06
 *
 *   - Offsets are from the header's first byte, as every offset in
 *     vm/jit/jitmethod.h and every mcpc in vm/jit/map.h.
 *   - Up to JIT_DISASM_MAX_HEX_BYTES bytes are shown, then "…".
 *   - A map entry is shown on the instruction that ends at its mcpc (for a
 *     send: the call whose return address it is); an entry at the first
 *     code byte on the first instruction; one that falls inside an
 *     instruction says "(at +N)". Several entries on one instruction are
 *     shown in map order.
 *   - A call, jmp or jcc target inside the piece reads "-> +off", outside
 *     it is named by address_name; a rip-relative operand inside the header
 *     is named by field ("header.method"), elsewhere in the piece "-> +off",
 *     outside it by address_name.
 *   - The 8-byte immediate of a movabs is named by immediate_name and says
 *     "literal" when its offset is in the literal-site table.
 *   - Bytes Capstone cannot decode are shown one per line as ".byte".
 *   - Lines starting with ';' after the code report what the header
 *     contradicts: map entries past the code, literal sites that are not a
 *     movabs immediate ("; literal site 0 at +58 is not a movabs
 *     immediate"), entry points not at an instruction start; before the
 *     code, a literal table outside the piece (then ignored) and a map
 *     offset outside the piece (then nothing is disassembled). The listing is a
 *     debugging aid, so it reports rather than panics (an encoded map is
 *     still trusted, as vm/jit/map.h says).
 *
 * Who may call: anything holding a JitMethod that wants to read it — tests,
 * the VM's JIT glue when it traces compilations, a debugger session. It
 * only reads the piece; the zone must not be compacted while it runs.
 */
#ifndef JIT_DISASM_H
#define JIT_DISASM_H

#include "vm/jit/jitmethod.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bytes of an instruction shown in hex before "…": a movabs, the longest
 * form the JIT emits that it patches (JIT_X64_MOVABS_SIZE), fits whole. */
#define JIT_DISASM_MAX_HEX_BYTES 10

/* What the JIT's owner knows about addresses and values; each callback may
 * be NULL, and each may answer NULL for "nothing to say". An answer is
 * written to buf (len bytes) or is a string that outlives the call. */
typedef struct JitDisasmNames {
    void *ctx;
    /* Names the code at addr (a trampoline, a method, a PIC, a C runtime routine), or NULL. */
    const char *(*address_name)(const void *addr, char *buf, size_t len, void *ctx);
    /* One line describing bytecode bcpc of m's heap method (e.g. "send #foo: (1 arg)"), or NULL. */
    const char *(*bytecode_text)(const JitMethod *m, uint32_t bcpc, char *buf, size_t len, void *ctx);
    /* Names an 8-byte immediate that may be an object pointer (nil, a literal, a selector), or NULL. */
    const char *(*immediate_name)(uint64_t value, char *buf, size_t len, void *ctx);
    /* The same as bytecode_text for bytecode bcpc of inlined scope `scope`
     * of m (vm/jit/jitmethod.h), naming the inlined method; NULL: such
     * entries are shown as "inlined scope N". */
    const char *(*inlined_text)(const JitMethod *m, uint32_t scope, uint32_t bcpc, char *buf, size_t len, void *ctx);
} JitDisasmNames;

/* Prints m to out: a header line (kind, address, size, code bytes, map
 * entries, literal sites, nargs and, when immediate_name knows it, the
 * method Oop), then one line per instruction of the code bytes
 * [JIT_METHOD_CODE, map_offset) with address, offset from the header, hex
 * bytes, mnemonic and operands and, after a ';', the decorations described
 * above; "checked entry:" / "unchecked entry:" lines precede the
 * instructions at those offsets. names may be NULL. Answers false with a
 * message in err (if err) when Capstone cannot be opened; nothing is printed
 * then. */
bool jit_disasm_print(FILE *out, const JitMethod *m, const JitDisasmNames *names, char *err, size_t errlen);

#endif
