/*
 * report/symbolize_internal.h — what symbolize.c and unwind.c share: the
 * Symbolizer itself and its table of the target's modules.
 *
 * The module table mirrors the Dwfl's modules sorted by start address, so
 * the unwinder's memory accessor can find "which file backs this address"
 * with a binary search and no libdwfl call. It is rebuilt after every
 * re-report of /proc/PID/maps; per-module facts (ELF image, eh_frame_hdr,
 * vanilla or not, build id) are filled in lazily on first use.
 *
 * Who may call: report/symbolize.c and vmprofd/unwind.c only.
 */
#ifndef REPORT_SYMBOLIZE_INTERNAL_H
#define REPORT_SYMBOLIZE_INTERNAL_H

#include "report/symbolize.h"

#include <elfutils/libdwfl.h>
#include <sys/types.h>

struct unw_addr_space; /* libunwind's, kept opaque so symbolize.c needs no libunwind header */

/* Build ids are 20 bytes (SHA-1) in practice; 64 leaves room for any
 * --build-id style the linker offers. */
#define REPORT_BUILD_ID_MAX_BYTES 64

typedef struct SymModule {
    Dwfl_Module *mod;
    const char *name; /* owned by the Dwfl: the path /proc/PID/maps shows */
    uint64_t start, end;

    /* Lazily: the main ELF file and its bytes (read-only segments of the
     * target are served from here instead of a syscall). */
    bool elf_tried;
    Elf *elf;
    GElf_Addr bias;
    const char *image;
    size_t image_len;

    /* Lazily: .eh_frame_hdr's binary-search table for libunwind. */
    bool eh_tried, eh_ok;
    uint64_t eh_segbase, eh_table, eh_fde_count;

    /* Lazily: -1 unknown, 0 no, 1 the VM executable. */
    int vanilla;
    bool facts_done;
    uint64_t file_offset;
    char build_id[2 * REPORT_BUILD_ID_MAX_BYTES + 1]; /* "" when none */
} SymModule;

typedef struct SymCacheSlot {
    uint64_t addr;
    int32_t location;
    uint8_t is_return;
    uint8_t used;
} SymCacheSlot;

struct Symbolizer {
    pid_t pid;
    Dwfl_Callbacks callbacks; /* must outlive dwfl */
    Dwfl *dwfl;

    char *vm_path;  /* canonical path of the vanilla executable */
    bool vm_stat_ok;
    dev_t vm_dev;
    ino_t vm_ino;
    uint64_t zone_start, zone_end;

    uint64_t maps_hash;    /* of /proc/PID/maps' bytes at the last report */
    uint64_t modules_hash; /* of the module set (name, start, end) */
    SymModule *mods;       /* sorted by start */
    size_t nmods, capmods;

    /* address -> location index, valid for cache_profile only */
    Profile *cache_profile;
    SymCacheSlot *slots;
    size_t cap, count;

    /* scratch for SymbolizedAddr strings */
    char namebuf[320];

    /* vmprofd/unwind.c's libunwind address space, created on first unwind,
     * with the hooks symbolize.c calls when the modules change (forget
     * cached unwind tables) and at free; NULL until then. Hooks, not calls:
     * report/ does not link vmprofd/. */
    struct unw_addr_space *unwind_as;
    void (*unwind_flush)(Symbolizer *s);
    void (*unwind_release)(Symbolizer *s);
};

/* The module covering addr, or NULL. */
SymModule *report_symbolize_module_at(Symbolizer *s, uint64_t addr);
/* Loads m's main ELF (once); false when there is none. */
bool report_symbolize_module_elf(SymModule *m);
/* Copies n bytes at target address addr out of m's file image when addr
 * lies in a read-only, file-backed part of a PT_LOAD segment. */
bool report_symbolize_read_image(SymModule *m, uint64_t addr, void *dst, size_t n);


#endif
