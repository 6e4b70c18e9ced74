/*
 * profiler/ehframe.h — DWARF call-frame information (.eh_frame and
 * .eh_frame_hdr, as the x86-64 psABI and LSB describe them) for one piece of
 * machine code, from its unwind pairs (proto/stackabi.h's PROF_UNWIND_*
 * rules): what jitdump's JIT_CODE_UNWINDING_INFO carries, so `perf inject
 * --jit` gives each jitted-*.so an .eh_frame and `perf report` unwinds
 * through JIT'd code as vmprofd does.
 *
 * Layout, as perf's genelf.c places it in the ELF it writes: the code,
 * then .eh_frame at the code's end rounded up to 8 bytes, then
 * .eh_frame_hdr (checked with readelf on perf inject's jitted-*.so). All
 * addresses inside are relative (pc-relative, or to the header), so only
 * the code's size matters, not where it ran.
 *
 * Rules: FRAMELESS: CFA = rsp + 8; PUSHED_BP: CFA = rsp + 16, rbp at
 * CFA - 16; FRAME: CFA = rbp + 16, rbp at CFA - 16; the return address
 * always at CFA - 8, except under CSTATE and SWITCH, whose state is in
 * memory, not in registers: there the return address is undefined, so an
 * unwinder stops instead of guessing.
 *
 * Who may call: profiler/jitdump.c, tests.
 */
#ifndef PROFILER_EHFRAME_H
#define PROFILER_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

/* Builds eh_frame then eh_frame_hdr into buf (cap bytes) for code_size
 * bytes of code whose first byte is at piece offset code_offset; pairs as
 * in ProfCodeLoad.unwind (offsets from the piece's start). Answers the
 * bytes written (0 when cap is too small) and the header's size. */
size_t prof_ehframe_build(uint8_t *buf, size_t cap, uint64_t code_size, uint64_t code_offset, const uint32_t *pairs,
                          uint32_t npairs, size_t *hdr_size);

#endif
