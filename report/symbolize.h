/*
 * report/symbolize.h — native addresses of a live process to functions,
 * files and lines (elfutils libdwfl over /proc/PID/maps), and user-stack
 * unwinding from sampled registers + a copy of the stack (libunwind, with
 * frame pointers as the fallback, in vmprofd/unwind.h).
 *
 * Resolved addresses are interned straight into a report Profile: the
 * answer is a location index for report_profile_add_sample. Region: the
 * VM executable's own code is REPORT_REGION_VANILLA, the machine-code zone
 * (when the VM exports one) REPORT_REGION_GENERATED, everything else
 * REPORT_REGION_REST. An address no module covers still gets a location
 * (function "[unknown]" in region rest), never an error.
 *
 * The module table (the target's modules sorted by start, rebuilt when
 * /proc/PID/maps changes; each module's ELF image, .eh_frame_hdr and build
 * id loaded on first use) also serves a stack unwinder: the last section.
 *
 * Who may call: vmprofd/ (another process, any pid) and stvm's in-VM
 * profiler (its own pid), tests.
 */
#ifndef REPORT_SYMBOLIZE_H
#define REPORT_SYMBOLIZE_H

#include "report/report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Symbolizer Symbolizer;

/* Attaches to pid's address space description (it does not stop it).
 * vm_exe: path of the executable whose code is "vanilla" (NULL = the
 * target's /proc/PID/exe). code_zone_*: generated-code range, or 0, 0. */
Symbolizer *report_symbolizer_new(pid_t pid, const char *vm_exe, uint64_t code_zone_start,
                                   uint64_t code_zone_end, char *err, size_t errlen);
/* Re-reads the maps (libraries loaded since). Cheap when nothing changed. */
void report_symbolizer_refresh(Symbolizer *s);
/* The refresh after its read: maps is the text of /proc/PID/maps as read
 * a moment ago. libdwfl reads the live maps again (for the vdso); should
 * the target have exited in between, the copy describes it. */
void report_symbolizer_update(Symbolizer *s, const char *maps, size_t len);
void report_symbolizer_free(Symbolizer *s);

/* addr -> location index in p. is_return_address: addr came from an
 * unwound caller frame, so look up addr-1 (the call instruction).
 * Answers are cached per address for one Profile: passing a different
 * Profile pointer than the previous call starts a fresh cache. */
int report_symbolize(Symbolizer *s, Profile *p, uint64_t addr, bool is_return_address);

/* Interns the VM executable's mapping into p (as report_symbolize would)
 * and answers its index, or -1 when no module is the VM. Called first, it
 * makes the executable the profile's first mapping: pprof takes the first
 * mapping for the main binary. */
int report_symbolize_vm_mapping(Symbolizer *s, Profile *p);

/* What report_symbolize resolves an address to, without a Profile (for
 * diagnostics and tests). Strings belong to the Symbolizer and stay valid
 * until the next lookup, refresh or free. */
typedef struct SymbolizedAddr {
    const char *function;    /* "vm_interp_run", "[libc.so.6]", "[unknown]", "[kernel]", "[code zone]" */
    const char *file;        /* source file of the function (DWARF), or NULL */
    int line;                /* source line of the address within it, 0 when unknown */
    int function_line;       /* line the function is declared on, 0 when unknown */
    ReportRegion region;
    uint64_t function_start; /* 0 when unknown */
    uint64_t function_size;
    const char *module;      /* mapped file ("/usr/lib/.../libc.so.6", "[code zone]"), or NULL */
    uint64_t module_start, module_end, module_offset;
    const char *build_id;    /* hex, or NULL */
} SymbolizedAddr;

void report_symbolize_lookup(Symbolizer *s, uint64_t addr, bool is_return_address, SymbolizedAddr *out);

/* -- For a native stack unwinder (vmprofd/unwind.c) ------------------------ */

pid_t report_symbolizer_pid(const Symbolizer *s);

/* Copies n bytes at target address addr out of the file of the module that
 * covers it, when they lie in a read-only, file-backed part of a PT_LOAD
 * segment (code, unwind tables: bytes relocation leaves alone); false
 * otherwise, and the caller reads the live process instead. */
bool report_symbolize_read_image(Symbolizer *s, uint64_t addr, void *dst, size_t n);

/* The binary-search table of .eh_frame_hdr (PT_GNU_EH_FRAME) of the module
 * covering addr, in target addresses, as libunwind's
 * UNW_INFO_FORMAT_REMOTE_TABLE takes it: fde_count entries of
 * REPORT_EH_TABLE_ENTRY_BYTES, each (initial location, FDE address) as a
 * datarel sdata4, the only encoding libunwind's table search reads. false
 * when no module covers addr or it has no such table (checked once per
 * module). */
#define REPORT_EH_TABLE_ENTRY_BYTES 8
typedef struct SymEhTable {
    uint64_t module_start, module_end; /* the module's address range */
    uint64_t segbase;                  /* address of .eh_frame_hdr */
    uint64_t table;                    /* address of its search table */
    uint64_t fde_count;
} SymEhTable;
bool report_symbolize_eh_table(Symbolizer *s, uint64_t addr, SymEhTable *out);

/* An unwinder's state for one target, kept with its Symbolizer: flush runs
 * whenever the set of modules changes (unwind tables it cached may be
 * stale), release once, at report_symbolizer_free. Hooks, not calls:
 * report/ does not link vmprofd/. */
typedef struct SymUnwinder {
    void *state;
    void (*flush)(void *state);
    void (*release)(void *state);
} SymUnwinder;
void report_symbolizer_set_unwinder(Symbolizer *s, const SymUnwinder *u);
/* The state set with report_symbolizer_set_unwinder, or NULL. */
void *report_symbolizer_unwinder(const Symbolizer *s);

#endif
