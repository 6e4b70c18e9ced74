/*
 * report/dwlib.c — libdw, opened on first use (why: report/dwlib.h).
 */
#include "report/dwlib.h"

#include "base/lazylib.h"

/* The soname the build linked its headers' library by (report/CMakeLists.txt
 * reads it from the libdw the build found). dlsym on its handle also finds
 * the libelf functions: a handle's lookup covers its dependencies. */
#ifndef REPORT_DWLIB_SONAME
#error "REPORT_DWLIB_SONAME must name libdw (report/CMakeLists.txt)"
#endif

static ReportDwlib table;
static const BaseLazySymbol symbols[] = {
#define REPORT_DWLIB_SYMBOL(name) {#name, &table.name},
    REPORT_DWLIB_FUNCTIONS(REPORT_DWLIB_SYMBOL)
#undef REPORT_DWLIB_SYMBOL
};
/* vmprofd serve makes symbolizers in several threads at once: the binder
 * opens the library once for all of them */
static BaseLazyLib lib = BASE_LAZYLIB_INIT(REPORT_DWLIB_SONAME, "libdw1", symbols);

const ReportDwlib *report_dwlib_get(char *err, size_t errlen)
{
    return base_lazylib_open(&lib, err, errlen) ? &table : NULL;
}
