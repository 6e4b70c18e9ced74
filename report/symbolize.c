/*
 * report/symbolize.c — native addresses of a live process to functions,
 * source lines and mappings, through elfutils' libdwfl.
 *
 * One Dwfl describes the target's modules as /proc/PID/maps lists them.
 * Maps change all the time in a VM (heap growth, new anonymous regions), so
 * a refresh first hashes the maps text and re-reports only when it differs;
 * libdwfl keeps modules reported again unchanged, with their ELF and DWARF
 * already loaded. The address -> location cache is dropped only when the
 * set of modules itself changes.
 *
 * The module table mirrors the Dwfl's modules sorted by start address, so
 * "which file backs this address" is a binary search and no libdwfl call
 * (the unwinder asks it for every word it reads). It is rebuilt after every
 * re-report of /proc/PID/maps; per-module facts (ELF image, .eh_frame_hdr,
 * vanilla or not, build id) are filled in lazily on first use.
 */
#include "report/symbolize.h"

#include "base/error.h"
#include "base/hash.h"
#include "report/addrtable.h"
#include "report/dwlib.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Build ids are 20 bytes (SHA-1) in practice; 64 leaves room for any
 * --build-id style the linker offers. */
#define SYM_BUILD_ID_MAX_BYTES 64

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
    char build_id[2 * SYM_BUILD_ID_MAX_BYTES + 1]; /* "" when none */
} SymModule;

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
    char *good_maps;       /* the last maps text read while the target surely lived */
    size_t good_len;
    uint64_t modules_hash; /* of the module set (name, start, end) */
    SymModule *mods;       /* sorted by start */
    size_t nmods, capmods;

    /* (is_return, address) -> location index, valid for cache_profile only */
    Profile *cache_profile;
    ReportAddrTable cache;

    /* scratch for SymbolizedAddr strings */
    char namebuf[320];

    /* a stack unwinder's state (vmprofd/unwind.c), zero until it sets one */
    SymUnwinder unwinder;
};

/* x86-64 canonical kernel half (4-level paging), as the brief for samples
 * with PERF_SAMPLE_IP in the kernel defines it. */
#define SYM_KERNEL_START 0xffff800000000000ULL

/* libdw's functions, loaded with the first Symbolizer: every other entry
 * point takes a Symbolizer, so it is set wherever it is used. */
static const ReportDwlib *dw;

/* -- Address cache ---------------------------------------------------- */

/* The space of the key is whether the address is a return address: the
 * two look up different instructions. */
static int cache_get(const Symbolizer *s, uint64_t addr, bool is_return)
{
    uint64_t v;
    return report_addrtable_get(&s->cache, is_return, addr, &v) ? (int)v : -1;
}

static void cache_put(Symbolizer *s, uint64_t addr, bool is_return, int location)
{
    /* out of memory: a cache miss costs time, not correctness */
    (void)report_addrtable_put(&s->cache, is_return, addr, (uint64_t)location);
}

/* -- Maps and module reporting ---------------------------------------- */

/* The most of /proc/PID/maps read: the target decides its size (up to
 * vm.max_map_count mappings, 65530 by default, of paths up to 4 KiB each),
 * and ordinary processes have a few hundred lines. Past this the maps are
 * refused (EFBIG): no Symbolizer is made, a refresh keeps the modules known. */
#define SYM_MAX_MAPS_BYTES (64u << 20)

static bool read_maps(pid_t pid, char **out, size_t *outlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (len == cap) {
            if (cap >= SYM_MAX_MAPS_BYTES) {
                free(buf);
                buf = NULL;
                errno = EFBIG;
                break;
            }
            char *n = realloc(buf, cap * 2);
            if (n == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = n;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    if (buf == NULL)
        return false;
    *out = buf;
    *outlen = len;
    return true;
}

static int module_cmp(const void *a, const void *b)
{
    const SymModule *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int collect_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
    (void)userdata;
    (void)start;
    Symbolizer *s = arg;
    Dwarf_Addr lo = 0, hi = 0;
    dw->dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
    if (s->nmods == s->capmods) {
        size_t ncap = s->capmods ? s->capmods * 2 : 64;
        SymModule *n = realloc(s->mods, ncap * sizeof *n);
        if (n == NULL)
            return DWARF_CB_ABORT;
        s->mods = n;
        s->capmods = ncap;
    }
    s->mods[s->nmods++] = (SymModule){
        .mod = mod, .name = name ? name : "", .start = lo, .end = hi, .vanilla = -1};
    return DWARF_CB_OK;
}

/* Rebuilds the sorted module table; when the module set changed, cached
 * answers may name the wrong library and are dropped. */
static void rebuild_modules(Symbolizer *s)
{
    s->nmods = 0;
    dw->dwfl_getmodules(s->dwfl, collect_module, s, 0);
    if (s->nmods > 0) qsort(s->mods, s->nmods, sizeof *s->mods, module_cmp); /* mods may be NULL */
    uint64_t h = BASE_FNV1A_BASIS;
    for (size_t i = 0; i < s->nmods; i++) {
        h = base_fnv1a(h, s->mods[i].name, strlen(s->mods[i].name) + 1);
        h = base_fnv1a(h, &s->mods[i].start, sizeof s->mods[i].start);
        h = base_fnv1a(h, &s->mods[i].end, sizeof s->mods[i].end);
    }
    if (h != s->modules_hash) {
        s->modules_hash = h;
        report_addrtable_clear(&s->cache);
        if (s->unwinder.flush)
            s->unwinder.flush(s->unwinder.state);
    }
}

static int report_copy(Symbolizer *s, const char *maps, size_t len)
{
    FILE *f = fmemopen((void *)maps, len, "r");
    if (f == NULL)
        return errno;
    int rc = dw->dwfl_linux_proc_maps_report(s->dwfl, f);
    fclose(f);
    return rc;
}

/* Whether pid still has its address space. An exiting process's maps
 * read empty once the kernel has torn it down; read during the teardown
 * they are a prefix of the real ones, without an error. Teardown only
 * goes one way, so maps that read non-empty after a read of ours mean
 * that read saw the whole address space. */
static bool address_space_intact(pid_t pid)
{
    char *maps = NULL;
    size_t len = 0;
    bool intact = read_maps(pid, &maps, &len) && len > 0;
    free(maps);
    return intact;
}

/* Reports the modules maps (read a moment ago) describes. libdwfl reads
 * the live maps again, for the vdso's address in auxv. When the target
 * exited around these reads, neither read can be trusted (a CI run once
 * resolved every sample to [unknown] after the last refresh raced the
 * exit): the modules stay as the last read made while it lived had them. */
static bool report_modules(Symbolizer *s, const char *maps, size_t len, char *err, size_t errlen)
{
    dw->dwfl_report_begin(s->dwfl);
    int rc = dw->dwfl_linux_proc_report(s->dwfl, s->pid);
    bool intact = address_space_intact(s->pid);
    if (!intact && s->good_maps) {
        dw->dwfl_report_begin(s->dwfl); /* anew: what the live read reported is not kept */
        rc = report_copy(s, s->good_maps, s->good_len);
        s->maps_hash = base_fnv1a_bytes(s->good_maps, s->good_len);
    } else if (rc != 0 && len > 0) {
        rc = report_copy(s, maps, len);
    }
    if (rc == 0 && dw->dwfl_report_end(s->dwfl, NULL, NULL) != 0)
        rc = -1;
    else if (rc != 0)
        dw->dwfl_report_end(s->dwfl, NULL, NULL);
    rebuild_modules(s);
    if (rc != 0) {
        base_error(err, errlen, "cannot read the modules of pid %d: %s", (int)s->pid,
                rc > 0 ? strerror(rc) : dw->dwfl_errmsg(-1));
        return false;
    }
    if (!intact) {
        if (!s->good_maps)
            base_error(err, errlen, "pid %d exited while its modules were read", (int)s->pid);
        return s->good_maps != NULL;
    }
    char *copy = malloc(len ? len : 1);
    if (copy) {
        memcpy(copy, maps, len);
        free(s->good_maps);
        s->good_maps = copy;
        s->good_len = len;
    }
    return true;
}

/* -- Lifecycle -------------------------------------------------------- */

static void strip_deleted(char *path)
{
    static const char suffix[] = " (deleted)";
    size_t n = strlen(path), k = sizeof suffix - 1;
    if (n > k && strcmp(path + n - k, suffix) == 0)
        path[n - k] = '\0';
}

/* Remembers the vanilla executable by canonical path and by inode: maps
 * names files by the path they were opened with, which may be a symlink. */
static void resolve_vm_exe(Symbolizer *s, const char *vm_exe)
{
    char buf[PATH_MAX];
    struct stat st;
    if (vm_exe != NULL) {
        s->vm_path = strdup(realpath(vm_exe, buf) ? buf : vm_exe);
        s->vm_stat_ok = stat(vm_exe, &st) == 0;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/%d/exe", (int)s->pid);
        ssize_t n = readlink(link, buf, sizeof buf - 1);
        if (n > 0) {
            buf[n] = '\0';
            strip_deleted(buf);
            s->vm_path = strdup(buf);
        }
        /* stat through the magic link reaches the file even if deleted */
        s->vm_stat_ok = stat(link, &st) == 0;
    }
    if (s->vm_stat_ok) {
        s->vm_dev = st.st_dev;
        s->vm_ino = st.st_ino;
    }
}

Symbolizer *report_symbolizer_new(pid_t pid, const char *vm_exe, uint64_t code_zone_start,
                                   uint64_t code_zone_end, char *err, size_t errlen)
{
    if (!dw && !(dw = report_dwlib_get(err, errlen)))
        return NULL;
    Symbolizer *s = calloc(1, sizeof *s);
    if (s == NULL) {
        base_error(err, errlen, "out of memory");
        return NULL;
    }
    s->pid = pid;
    s->zone_start = code_zone_start;
    s->zone_end = code_zone_end > code_zone_start ? code_zone_end : code_zone_start;
    s->callbacks.find_elf = dw->dwfl_linux_proc_find_elf;
    s->callbacks.find_debuginfo = dw->dwfl_standard_find_debuginfo;
    s->callbacks.debuginfo_path = NULL; /* libdwfl's default: .debug, /usr/lib/debug */
    s->dwfl = dw->dwfl_begin(&s->callbacks);
    if (s->dwfl == NULL) {
        base_error(err, errlen, "libdwfl: %s", dw->dwfl_errmsg(-1));
        free(s);
        return NULL;
    }
    char *maps = NULL;
    size_t len = 0;
    if (!read_maps(pid, &maps, &len)) {
        base_error(err, errlen, "cannot read /proc/%d/maps: %s (is the process alive and yours?)", (int)pid,
                strerror(errno));
        report_symbolizer_free(s);
        return NULL;
    }
    resolve_vm_exe(s, vm_exe);
    s->maps_hash = base_fnv1a_bytes(maps, len);
    bool ok = report_modules(s, maps, len, err, errlen);
    free(maps);
    if (!ok) {
        report_symbolizer_free(s);
        return NULL;
    }
    return s;
}

void report_symbolizer_refresh(Symbolizer *s)
{
    char *maps = NULL;
    size_t len = 0;
    if (s == NULL || !read_maps(s->pid, &maps, &len))
        return; /* target gone: what we know still symbolizes its samples */
    report_symbolizer_update(s, maps, len);
    free(maps);
}

void report_symbolizer_update(Symbolizer *s, const char *maps, size_t len)
{
    uint64_t h = base_fnv1a_bytes(maps, len);
    if (h != s->maps_hash && len > 0) {
        s->maps_hash = h;
        report_modules(s, maps, len, NULL, 0);
    }
}

void report_symbolizer_free(Symbolizer *s)
{
    if (s == NULL)
        return;
    if (s->unwinder.release)
        s->unwinder.release(s->unwinder.state);
    if (s->dwfl != NULL)
        dw->dwfl_end(s->dwfl);
    free(s->mods);
    free(s->good_maps);
    report_addrtable_free(&s->cache);
    free(s->vm_path);
    free(s);
}

/* -- Modules ---------------------------------------------------------- */

/* The module covering addr, or NULL. */
static SymModule *module_at(Symbolizer *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nmods;
    while (lo < hi) { /* first module starting above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (s->mods[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    SymModule *m = &s->mods[lo - 1];
    return addr < m->end ? m : NULL;
}

/* Loads m's main ELF (once); false when there is none. */
static bool module_elf(SymModule *m)
{
    if (!m->elf_tried) {
        m->elf_tried = true;
        m->elf = dw->dwfl_module_getelf(m->mod, &m->bias);
        if (m->elf != NULL)
            m->image = dw->elf_rawfile(m->elf, &m->image_len);
    }
    return m->elf != NULL;
}

bool report_symbolize_read_image(Symbolizer *s, uint64_t addr, void *dst, size_t n)
{
    SymModule *m = module_at(s, addr);
    if (m == NULL || !module_elf(m) || m->image == NULL)
        return false;
    uint64_t vaddr = addr - m->bias;
    size_t nph = 0;
    if (dw->elf_getphdrnum(m->elf, &nph) != 0)
        return false;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (dw->gelf_getphdr(m->elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD || (ph.p_flags & PF_W))
            continue; /* writable segments differ from the file once relocated */
        if (vaddr < ph.p_vaddr || ph.p_filesz < n || vaddr - ph.p_vaddr > ph.p_filesz - n)
            continue;
        uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
        if (off > m->image_len || m->image_len - off < n)
            return false;
        memcpy(dst, m->image + off, n);
        return true;
    }
    return false;
}

/* -- For a stack unwinder --------------------------------------------- */

pid_t report_symbolizer_pid(const Symbolizer *s) { return s->pid; }

void report_symbolizer_set_unwinder(Symbolizer *s, const SymUnwinder *u) { s->unwinder = *u; }

void *report_symbolizer_unwinder(const Symbolizer *s) { return s->unwinder.state; }

static size_t eh_field_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr: return 8;
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2: return 2;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4: return 4;
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8: return 8;
    default: return 0;
    }
}

/* Finds m's .eh_frame_hdr (PT_GNU_EH_FRAME) in its file and checks it
 * holds the sorted search table: version 1, then the encoded eh_frame
 * pointer and FDE count, then the table. */
static bool load_eh_table(SymModule *m)
{
    if (m->eh_tried)
        return m->eh_ok;
    m->eh_tried = true;
    if (!module_elf(m) || m->image == NULL)
        return false;
    size_t nph = 0;
    if (dw->elf_getphdrnum(m->elf, &nph) != 0)
        return false;
    GElf_Phdr ph;
    bool found = false;
    for (size_t i = 0; i < nph && !found; i++)
        found = dw->gelf_getphdr(m->elf, (int)i, &ph) != NULL && ph.p_type == PT_GNU_EH_FRAME;
    if (!found || ph.p_offset > m->image_len || m->image_len - ph.p_offset < ph.p_filesz || ph.p_filesz < 4)
        return false;
    const uint8_t *h = (const uint8_t *)m->image + ph.p_offset;
    uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
    if (h[0] != 1 || table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count_enc == DW_EH_PE_omit)
        return false;
    size_t pos = 4;
    if (ptr_enc != DW_EH_PE_omit) {
        size_t n = eh_field_size(ptr_enc);
        if (n == 0)
            return false;
        pos += n;
    }
    size_t cn = eh_field_size(count_enc);
    if (cn == 0 || pos + cn > ph.p_filesz)
        return false;
    uint64_t count = 0;
    if (cn == 2) {
        uint16_t v;
        memcpy(&v, h + pos, 2);
        count = v;
    } else if (cn == 4) {
        uint32_t v;
        memcpy(&v, h + pos, 4);
        count = v;
    } else {
        memcpy(&count, h + pos, 8);
    }
    pos += cn;
    if (count == 0 || count > (ph.p_filesz - pos) / REPORT_EH_TABLE_ENTRY_BYTES)
        return false;
    m->eh_segbase = ph.p_vaddr + m->bias;
    m->eh_table = m->eh_segbase + pos;
    m->eh_fde_count = count;
    m->eh_ok = true;
    return true;
}

bool report_symbolize_eh_table(Symbolizer *s, uint64_t addr, SymEhTable *out)
{
    SymModule *m = module_at(s, addr);
    if (m == NULL || !load_eh_table(m))
        return false;
    *out = (SymEhTable){.module_start = m->start, .module_end = m->end, .segbase = m->eh_segbase,
                        .table = m->eh_table, .fde_count = m->eh_fde_count};
    return true;
}

/* -- Module facts ----------------------------------------------------- */

static bool module_is_vanilla(const Symbolizer *s, SymModule *m)
{
    if (m->vanilla < 0) {
        m->vanilla = 0;
        if (s->vm_path != NULL && strcmp(m->name, s->vm_path) == 0) {
            m->vanilla = 1;
        } else if (s->vm_stat_ok && m->name[0] == '/') {
            struct stat st;
            m->vanilla = stat(m->name, &st) == 0 && st.st_dev == s->vm_dev && st.st_ino == s->vm_ino;
        }
    }
    return m->vanilla == 1;
}

/* File offset and build id, for pprof's Mapping. */
static void module_facts(SymModule *m)
{
    if (m->facts_done)
        return;
    m->facts_done = true;
    m->build_id[0] = '\0';
    if (!module_elf(m))
        return;
    size_t nph = 0;
    if (dw->elf_getphdrnum(m->elf, &nph) == 0) {
        for (size_t i = 0; i < nph; i++) {
            GElf_Phdr ph;
            if (dw->gelf_getphdr(m->elf, (int)i, &ph) != NULL && ph.p_type == PT_LOAD) {
                /* the module's start is this segment's page, mapped from
                 * the page-aligned offset */
                uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
                m->file_offset = ph.p_offset & ~(page - 1);
                break;
            }
        }
    }
    const unsigned char *bits = NULL;
    GElf_Addr vaddr = 0;
    int n = dw->dwfl_module_build_id(m->mod, &bits, &vaddr);
    if (n > 0 && bits != NULL) {
        if (n > SYM_BUILD_ID_MAX_BYTES)
            n = SYM_BUILD_ID_MAX_BYTES;
        static const char hex[] = "0123456789abcdef";
        for (int i = 0; i < n; i++) {
            m->build_id[2 * i] = hex[bits[i] >> 4];
            m->build_id[2 * i + 1] = hex[bits[i] & 15];
        }
        m->build_id[2 * n] = '\0';
    }
}

/* -- Lookup ----------------------------------------------------------- */

typedef struct DwarfFacts {
    const char *name, *file;
    int decl_line, call_line;
    uint64_t low_pc;
} DwarfFacts;

/* The concrete function containing q (DW_TAG_subprogram, never an inlined
 * instance): its name, file and declaration line; and when q sits in code
 * inlined into it, the line of the outermost inlined call — the line of
 * *this* function the sample belongs to. */
static void dwarf_facts(SymModule *m, uint64_t q, DwarfFacts *f)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dw->dwfl_module_addrdie(m->mod, q, &bias);
    if (cu == NULL)
        return;
    Dwarf_Die *scopes = NULL;
    int n = dw->dwarf_getscopes(cu, q - bias, &scopes);
    for (int i = 0; i < n; i++) {
        if (dw->dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
            continue;
        f->name = dw->dwarf_diename(&scopes[i]);
        f->file = dw->dwarf_decl_file(&scopes[i]);
        int line = 0;
        if (dw->dwarf_decl_line(&scopes[i], &line) == 0)
            f->decl_line = line;
        Dwarf_Addr lo = 0;
        if (dw->dwarf_lowpc(&scopes[i], &lo) == 0)
            f->low_pc = lo + bias;
        if (i > 0 && dw->dwarf_tag(&scopes[i - 1]) == DW_TAG_inlined_subroutine) {
            Dwarf_Attribute attr;
            Dwarf_Word w = 0;
            if (dw->dwarf_formudata(dw->dwarf_attr(&scopes[i - 1], DW_AT_call_line, &attr), &w) == 0 && w <= INT_MAX)
                f->call_line = (int)w;
        }
        break;
    }
    free(scopes);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void report_symbolize_lookup(Symbolizer *s, uint64_t addr, bool is_return_address, SymbolizedAddr *out)
{
    memset(out, 0, sizeof *out);
    out->function = "[unknown]";
    out->region = REPORT_REGION_REST;
    if (addr >= SYM_KERNEL_START) {
        out->function = "[kernel]";
        return;
    }
    /* A return address points after the call; the call itself may be the
     * last instruction of the function, or on another line. */
    uint64_t q = is_return_address && addr > 0 ? addr - 1 : addr;
    if (q >= s->zone_start && q < s->zone_end) {
        out->function = "[code zone]";
        out->region = REPORT_REGION_GENERATED;
        out->module = "[code zone]";
        out->module_start = s->zone_start;
        out->module_end = s->zone_end;
        return;
    }
    SymModule *m = module_at(s, q);
    if (m == NULL)
        return;
    module_facts(m);
    out->module = m->name;
    out->module_start = m->start;
    out->module_end = m->end;
    out->module_offset = m->file_offset;
    out->build_id = m->build_id[0] ? m->build_id : NULL;
    out->region = module_is_vanilla(s, m) ? REPORT_REGION_VANILLA : REPORT_REGION_REST;

    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dw->dwfl_module_addrinfo(m->mod, q, &off, &sym, NULL, NULL, NULL);
    DwarfFacts df = {0};
    dwarf_facts(m, q, &df);
    /* a marker without size at a function's first byte (the linker's
     * __start_SECTION) is no name for the function: DWARF's is */
    bool marker = name != NULL && sym.st_size == 0 && GELF_ST_TYPE(sym.st_info) == STT_NOTYPE && off == 0;
    if (name != NULL && name[0] != '\0' && !(marker && df.name != NULL)) {
        out->function = name;
        out->function_start = q - off;
        out->function_size = sym.st_size;
    } else if (df.name != NULL) {
        out->function = df.name;
        out->function_start = df.low_pc;
    } else {
        /* pseudo files ("[vdso]") are already bracketed */
        if (m->name[0] == '[')
            snprintf(s->namebuf, sizeof s->namebuf, "%s", m->name);
        else
            snprintf(s->namebuf, sizeof s->namebuf, "[%s]", base_name(m->name));
        out->function = s->namebuf;
        out->function_start = m->start;
        out->function_size = m->end - m->start;
        return;
    }

    int line = 0;
    const char *line_file = NULL;
    Dwfl_Line *l = dw->dwfl_module_getsrc(m->mod, q);
    if (l != NULL)
        line_file = dw->dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    out->file = df.file ? df.file : line_file;
    out->function_line = df.decl_line;
    out->line = df.call_line > 0 ? df.call_line : (line > 0 ? line : 0);
}

int report_symbolize_vm_mapping(Symbolizer *s, Profile *p)
{
    for (size_t i = 0; i < s->nmods; i++) {
        SymModule *m = &s->mods[i];
        if (!module_is_vanilla(s, m))
            continue;
        module_facts(m);
        ReportMappingInfo mi = {
            .start = m->start,
            .limit = m->end,
            .offset = m->file_offset,
            .file = m->name,
            .build_id = m->build_id[0] ? m->build_id : NULL,
        };
        return report_profile_add_mapping(p, &mi);
    }
    return -1;
}

int report_symbolize(Symbolizer *s, Profile *p, uint64_t addr, bool is_return_address)
{
    if (p != s->cache_profile) {
        report_addrtable_clear(&s->cache);
        s->cache_profile = p;
    }
    int hit = cache_get(s, addr, is_return_address);
    if (hit >= 0)
        return hit;

    SymbolizedAddr a;
    report_symbolize_lookup(s, addr, is_return_address, &a);
    int mapping = -1;
    if (a.module != NULL) {
        ReportMappingInfo mi = {
            .start = a.module_start,
            .limit = a.module_end,
            .offset = a.module_offset,
            .file = a.module,
            .build_id = a.build_id,
        };
        mapping = report_profile_add_mapping(p, &mi);
    }
    ReportFunctionInfo fi = {
        .name = a.function,
        .file = a.file,
        .start_line = a.function_line,
        .region = a.region,
        .start = a.function_start,
        .size = a.function_size,
        .mapping = mapping,
    };
    int fn = report_profile_add_function(p, &fi);
    int loc = report_profile_add_location(p, fn, addr, a.line);
    if (loc >= 0)
        cache_put(s, addr, is_return_address, loc);
    return loc;
}
