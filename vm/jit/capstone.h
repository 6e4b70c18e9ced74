/*
 * vm/jit/capstone.h — Capstone, opened on first use.
 *
 * stvm needs Capstone only to print a listing (--disassemble, the in-VM
 * tools), yet linking it costs every start: libcapstone.so.4 carries ~77k
 * relative relocations, and applying them touched ~400 of its pages — about
 * 14 ms of a 17 ms `stvm --version` on the 2-core CI machine class
 * (scripts/bench-startup). So the library is dlopen-ed the first time a
 * listing is asked for, and its functions are called through this table.
 *
 * Each member has the type of the function of the same name in
 * <capstone/capstone.h>, so a header change is a compile error here, not a
 * wrong call. Callers: vm/jit/disasm.c only (base/lazylib.c loads it).
 */
#ifndef JIT_CAPSTONE_H
#define JIT_CAPSTONE_H

#include <capstone/capstone.h>

#include <stddef.h>

typedef struct JitCapstone {
    __typeof__(cs_open) *open;
    __typeof__(cs_option) *option;
    __typeof__(cs_close) *close;
    __typeof__(cs_strerror) *strerror;
    __typeof__(cs_malloc) *malloc;
    __typeof__(cs_free) *free;
    __typeof__(cs_disasm_iter) *disasm_iter;
    __typeof__(cs_insn_group) *insn_group;
} JitCapstone;

/* The library's functions, loading it on the first call; NULL with a
 * message in err (the soname tried and dlerror's reason) when it cannot be
 * loaded or lacks one of them. A failure is remembered: later calls fail
 * at once with the same message. */
const JitCapstone *jit_capstone_get(char *err, size_t errlen);

#endif
