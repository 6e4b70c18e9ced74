/*
 * report/dwlib.c — libdw, opened on first use (why: report/dwlib.h).
 */
#include "report/dwlib.h"

#include <pthread.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The soname the build linked its headers' library by (report/CMakeLists.txt
 * reads it from the libdw the build found). dlsym on its handle also finds
 * the libelf functions: a handle's lookup covers its dependencies. */
#ifndef REPORT_DWLIB_SONAME
#error "REPORT_DWLIB_SONAME must name libdw (report/CMakeLists.txt)"
#endif

_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "a dlsym answer must fit a function pointer");

static ReportDwlib table;
static bool ok;
/* vmprofd serve makes symbolizers in several threads at once */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool load(void);
static void load_once(void) { ok = load(); }
static char failure[512];

static bool load(void)
{
    void *lib = dlopen(REPORT_DWLIB_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(failure, sizeof failure, "cannot load %s (apt-get install libdw1): %s", REPORT_DWLIB_SONAME,
                 dlerror());
        return false;
    }
    /* memcpy from dlsym's void *: POSIX makes it a function's address, ISO C
     * has no cast for it. */
#define REPORT_DWLIB_BIND(name)                                                                                       \
    {                                                                                                                 \
        void *fn = dlsym(lib, #name);                                                                                 \
        if (!fn) {                                                                                                    \
            snprintf(failure, sizeof failure, "%s has no %s: %s", REPORT_DWLIB_SONAME, #name, dlerror());             \
            memset(&table, 0, sizeof table);                                                                          \
            dlclose(lib);                                                                                             \
            return false;                                                                                             \
        }                                                                                                             \
        memcpy(&table.name, &fn, sizeof fn);                                                                          \
    }
    REPORT_DWLIB_FUNCTIONS(REPORT_DWLIB_BIND)
#undef REPORT_DWLIB_BIND
    return true; /* stays loaded: the table and every Dwfl point into it */
}

const ReportDwlib *report_dwlib_get(char *err, size_t errlen)
{
    pthread_once(&once, load_once);
    if (ok) return &table;
    if (err && errlen) snprintf(err, errlen, "%s", failure);
    return NULL;
}
