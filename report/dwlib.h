/*
 * report/dwlib.h — elfutils' libdw (and the libelf it brings), opened on
 * first use.
 *
 * stvm links report/ for the in-VM profiler's report, which symbolizes its
 * own native code; most runs never make one. Linked, libdw and its
 * dependencies (libelf, libz, liblzma, libbz2) were loaded and relocated at
 * every start, ~1.2 ms on the 2-core CI machine class — a third of what a
 * start may cost (scripts/bench-startup). So report/symbolize.c, the only
 * user, calls libdw through this table, which dlopen-s the library when the
 * first Symbolizer is made (the .eh_frame_hdr lookup vmprofd/unwind.c asks
 * of report/symbolize.h included). vmprofd links libdw anyway
 * (vmprofd/CMakeLists.txt); its dlopen then finds the library already
 * loaded.
 *
 * Each member has the type of the function of the same name in the elfutils
 * headers, so a header change is a compile error here, not a wrong call.
 * The first call may come from any thread (base/lazylib.c loads once).
 */
#ifndef REPORT_DWLIB_H
#define REPORT_DWLIB_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <stddef.h>

/* X(name): every libdw, libdwfl, libelf and gelf function symbolize.c calls. */
#define REPORT_DWLIB_FUNCTIONS(X)                                                                                     \
    X(dwfl_begin) X(dwfl_end) X(dwfl_errmsg) X(dwfl_report_begin) X(dwfl_report_end) X(dwfl_linux_proc_report)        \
    X(dwfl_linux_proc_maps_report) X(dwfl_linux_proc_find_elf) X(dwfl_standard_find_debuginfo) X(dwfl_getmodules)     \
    X(dwfl_module_info) X(dwfl_module_getelf) X(dwfl_module_build_id) X(dwfl_module_addrdie)                          \
    X(dwfl_module_addrinfo) X(dwfl_module_getsrc) X(dwfl_lineinfo) X(dwarf_getscopes) X(dwarf_tag) X(dwarf_diename)   \
    X(dwarf_decl_file) X(dwarf_decl_line) X(dwarf_lowpc) X(dwarf_formudata) X(dwarf_attr) X(elf_rawfile)              \
    X(elf_getphdrnum) X(gelf_getphdr)

typedef struct ReportDwlib {
#define REPORT_DWLIB_MEMBER(name) __typeof__(name) *name;
    REPORT_DWLIB_FUNCTIONS(REPORT_DWLIB_MEMBER)
#undef REPORT_DWLIB_MEMBER
} ReportDwlib;

/* The functions, loading the library on the first call; NULL with a message
 * in err (the soname tried and dlerror's reason) when it cannot be loaded
 * or lacks one of them. A failure is remembered and repeated. */
const ReportDwlib *report_dwlib_get(char *err, size_t errlen);

#endif
