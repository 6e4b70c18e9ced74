/*
 * vm/jit/capstone.c — Capstone, opened on first use (why: vm/jit/capstone.h).
 */
#include "vm/jit/capstone.h"

#include "base/error.h"
#include "base/lazylib.h"

/* The soname the build linked against (jit/CMakeLists.txt reads it from the
 * library the build found), so the runtime loads the same ABI. */
#ifndef JIT_CAPSTONE_SONAME
#error "JIT_CAPSTONE_SONAME must name the Capstone library (jit/CMakeLists.txt)"
#endif

static JitCapstone table;
static const BaseLazySymbol symbols[] = {
    {"cs_open", &table.open},         {"cs_option", &table.option}, {"cs_close", &table.close},
    {"cs_strerror", &table.strerror}, {"cs_malloc", &table.malloc}, {"cs_free", &table.free},
    {"cs_disasm_iter", &table.disasm_iter}, {"cs_insn_group", &table.insn_group},
};
static BaseLazyLib lib = BASE_LAZYLIB_INIT(JIT_CAPSTONE_SONAME, "libcapstone4", symbols);

const JitCapstone *jit_capstone_get(char *err, size_t errlen)
{
    char why[512];
    if (base_lazylib_open(&lib, why, sizeof why)) return &table;
    base_error(err, errlen, "capstone: %s", why);
    return NULL;
}
