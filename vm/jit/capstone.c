/*
 * vm/jit/capstone.c — Capstone, opened on first use (why: vm/jit/capstone.h).
 */
#include "vm/jit/capstone.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The soname the build linked against (jit/CMakeLists.txt reads it from the
 * library the build found), so the runtime loads the same ABI. */
#ifndef JIT_CAPSTONE_SONAME
#error "JIT_CAPSTONE_SONAME must name the Capstone library (jit/CMakeLists.txt)"
#endif

_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "a dlsym answer must fit a function pointer");

static JitCapstone table;
static bool tried;
static char failure[512];

static bool bind(void *lib, const char *name, void **slot)
{
    *slot = dlsym(lib, name);
    if (*slot) return true;
    snprintf(failure, sizeof failure, "%s has no %s: %s", JIT_CAPSTONE_SONAME, name, dlerror());
    return false;
}

static bool load(void)
{
    void *lib = dlopen(JIT_CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(failure, sizeof failure, "cannot load %s (apt-get install libcapstone4): %s", JIT_CAPSTONE_SONAME,
                 dlerror());
        return false;
    }
    /* dlsym answers void *; POSIX guarantees it converts to a function
     * pointer, which memcpy through a void * slot expresses without a cast
     * ISO C frowns on. */
    struct {
        const char *name;
        void *slot;
    } want[] = {
        {"cs_open", &table.open},         {"cs_option", &table.option}, {"cs_close", &table.close},
        {"cs_strerror", &table.strerror}, {"cs_malloc", &table.malloc}, {"cs_free", &table.free},
        {"cs_disasm_iter", &table.disasm_iter}, {"cs_insn_group", &table.insn_group},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        void *fn;
        if (!bind(lib, want[i].name, &fn)) {
            memset(&table, 0, sizeof table);
            dlclose(lib);
            return false;
        }
        memcpy(want[i].slot, &fn, sizeof fn);
    }
    return true; /* the library stays loaded: the table points into it */
}

const JitCapstone *jit_capstone_get(char *err, size_t errlen)
{
    static bool ok;
    if (!tried) {
        tried = true;
        ok = load();
    }
    if (ok) return &table;
    if (err && errlen) snprintf(err, errlen, "capstone: %s", failure);
    return NULL;
}
