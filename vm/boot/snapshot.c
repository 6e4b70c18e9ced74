/*
 * vm/boot/snapshot.c — the booted core library saved and restored. See
 * vm/boot/snapshot.h for what is saved, the checks and the file layout.
 */
#include "vm/boot/snapshot.h"

#include "base/error.h"

#include "gc/image.h"
#include "vm/loader/bytecodepublish.h"
#include "vm/model/class.h"
#include "vm/model/globals.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"
#include "report/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest file read: the core library's snapshot is ~50 KB; a size past
 * this is a wrong file, not a snapshot to allocate for. */
#define SNAP_MAX_FILE_BYTES ((uint64_t)256 << 20)

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }
static uint64_t page_up(uint64_t n) { return (n + VM_SNAPSHOT_IMAGE_OFFSET - 1) & ~(uint64_t)(VM_SNAPSHOT_IMAGE_OFFSET - 1); }

/* -- Checksum ------------------------------------------------------------ */

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* Four independent lanes of multiply-rotate over 8-byte words, so the
 * multiplies overlap: ~50 KB cost microseconds. Each step is a bijection
 * of its lane for a fixed input word, so any change confined to one word
 * always changes the answer. The constants are the 64-bit primes of
 * xxHash (odd multipliers with well-mixed bits); nothing else of it. */
uint64_t vm_snapshot_checksum(const uint8_t *p, size_t len, uint64_t seed)
{
    const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full;
    uint64_t h[4] = {P1 ^ seed, P2 ^ seed, ~P1 ^ seed, ~P2 ^ seed};
    size_t i = 0;
    for (; len - i >= 32; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);
            h[k] = rotl(h[k] ^ w, 31) * P1;
        }
    for (; i < len; i++) h[0] = rotl(h[0] ^ p[i], 31) * P1;
    uint64_t r = len;
    for (int k = 0; k < 4; k++) r = rotl(r ^ h[k], 27) * P2;
    return r ^ (r >> 29);
}

/* The file's checksum, taken in the order of its parts and chained, so a
 * reader can sum each part where it maps it: the header (its checksum
 * field 0) and the rest of the first page, the image's pages (in old space,
 * where they are read anyway: a page's first touch is what a start pays
 * for), then the tables and sources. */
static uint64_t sum_head(const uint8_t *page0)
{
    VmSnapshotHeader zeroed;
    memcpy(&zeroed, page0, sizeof zeroed);
    zeroed.checksum = 0;
    uint64_t sum = vm_snapshot_checksum((const uint8_t *)&zeroed, sizeof zeroed, 0);
    return vm_snapshot_checksum(page0 + sizeof zeroed, VM_SNAPSHOT_IMAGE_OFFSET - sizeof zeroed, sum);
}

static uint64_t snapshot_sum(uint64_t head, const uint8_t *image, size_t image_pages, const uint8_t *tables,
                             size_t tables_len)
{
    return vm_snapshot_checksum(tables, tables_len, vm_snapshot_checksum(image, image_pages, head));
}

/* -- Sources --------------------------------------------------------------- */

typedef struct SourceHead {
    uint64_t mtime_sec, mtime_nsec, bytes;
    uint32_t name_bytes, path_bytes;
} SourceHead;
_Static_assert(sizeof(SourceHead) == 32, "a source entry's fixed part is 32 bytes (vm/boot/snapshot.h)");

/* A core class: each class once (the table also maps the large-integer
 * indices to Integer), its metaclass never. */
static bool is_core_class(size_t index, Oop c)
{
    return vm_is_class(c) && oop_int(obj_slots(c)[CLASS_INSTANCE_INDEX]) == (intptr_t)index &&
           vm_is_symbol(vm_class_name(c)) && vm_is_string(obj_slots(c)[CLASS_FILE]);
}

static bool same_file(const struct stat *st, const SourceHead *h)
{
    return (uint64_t)st->st_mtim.tv_sec == h->mtime_sec && (uint64_t)st->st_mtim.tv_nsec == h->mtime_nsec &&
           (uint64_t)st->st_size == h->bytes;
}

/* Is `path` what this run's classpath search finds for class `name`, and
 * unchanged? The search takes the first directory holding name.som. */
static VmSnapshotRefusal check_source(const SourceHead *h, const char *name, const char *path, char *const *cp,
                                      size_t ncp, char *why, size_t whylen)
{
    size_t nl = strlen(name), pl = strlen(path);
    if (pl < nl + 5 || strcmp(path + pl - 4, ".som") != 0 || path[pl - nl - 5] != '/' ||
        strncmp(path + pl - nl - 4, name, nl) != 0) {
        base_error(why, whylen, "class %s has the source path '%s', which does not name it", name, path);
        return VM_SNAPSHOT_CORRUPT;
    }
    size_t dl = pl - nl - 5;
    for (size_t i = 0; i < ncp; i++) {
        struct stat st;
        if (strlen(cp[i]) == dl && strncmp(cp[i], path, dl) == 0) {
            if (stat(path, &st) != 0 || !same_file(&st, h)) {
                base_error(why, whylen, "%s changed since it was written", path);
                return VM_SNAPSHOT_STALE;
            }
            return VM_SNAPSHOT_OK;
        }
        char other[1100];
        snprintf(other, sizeof other, "%s/%s.som", cp[i], name);
        if (stat(other, &st) == 0) {
            base_error(why, whylen, "the classpath has %s before %s", other, path);
            return VM_SNAPSHOT_STALE;
        }
    }
    base_error(why, whylen, "%s is not on the classpath", path);
    return VM_SNAPSHOT_STALE;
}

/* -- Writing --------------------------------------------------------------- */

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} Buf;

static void put(Buf *b, const void *src, size_t len)
{
    if (b->oom) return;
    size_t need = pad8(b->n + len);
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < need) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (src) memcpy(b->p + b->n, src, len);
    memset(b->p + b->n + (src ? len : 0), 0, need - b->n - (src ? len : 0)); /* NULL src: zeros */
    b->n = need;
}

static void put_oop(Buf *b, Oop o) { put(b, &o, sizeof o); }

static void put_symbol(Oop sym, void *ctx)
{
    put_oop(ctx, sym);
}

static void put_global(Oop key, Oop value, void *ctx)
{
    put_oop(ctx, key);
    put_oop(ctx, value);
}

static void count_symbol(Oop sym, void *ctx)
{
    (void)sym;
    ++*(uint64_t *)ctx;
}

static void count_global(Oop key, Oop value, void *ctx)
{
    (void)key;
    (void)value;
    ++*(uint64_t *)ctx;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Is path a file directly in dir? */
static bool in_dir(const char *path, const char *dir)
{
    size_t dl = strlen(dir);
    return strncmp(path, dir, dl) == 0 && path[dl] == '/' && path[dl + 1] && !strchr(path + dl + 1, '/');
}

/* Sources of the core classes into b; false with err when one cannot be
 * stat-ed; *foreign when one lies outside only_from. */
static bool put_sources(Buf *b, uint64_t *count, const char *only_from, bool *foreign, char *err, size_t errlen)
{
    for (size_t i = 0; i < vm_class_table_size; i++) {
        Oop c = vm_class_table[i];
        if (!is_core_class(i, c)) continue;
        char name[512], path[1100];
        vm_string_cstr(vm_class_name(c), name, sizeof name);
        vm_string_cstr(obj_slots(c)[CLASS_FILE], path, sizeof path);
        struct stat st;
        if (stat(path, &st) != 0) {
            base_error(err, errlen, "cannot read %s, the source of class %s: %s", path, name, strerror(errno));
            return false;
        }
        if (only_from && !in_dir(path, only_from)) *foreign = true;
        size_t nl = strlen(name), pl = strlen(path);
        uint8_t entry[sizeof(SourceHead) + sizeof name + sizeof path];
        SourceHead sh = {(uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec, (uint64_t)st.st_size,
                         (uint32_t)nl, (uint32_t)pl};
        memcpy(entry, &sh, sizeof sh);
        memcpy(entry + sizeof sh, name, nl);
        memcpy(entry + sizeof sh + nl, path, pl);
        put(b, entry, sizeof sh + nl + pl);
        ++*count;
    }
    return true;
}

bool vm_snapshot_write(const char *path, const char *only_from, char *err, size_t errlen)
{
    if (!gc_image_young_empty()) {
        base_error(err, errlen, "cannot write a snapshot: young space is not empty after the boot");
        return false;
    }
    VmSnapshotHeader h = {.version = VM_SNAPSHOT_VERSION, .header_bytes = sizeof h};
    memcpy(h.magic, VM_SNAPSHOT_MAGIC, sizeof h.magic);
    h.build_id_bytes = (uint32_t)vm_build_id(h.build_id);
    if (!h.build_id_bytes) {
        base_error(err, errlen, "cannot write a snapshot: this stvm has no build id (link it with -Wl,--build-id)");
        return false;
    }
    h.hash_state = gc_image_hash_state();
    h.image_base = gc_image_old_base();
    h.image_bytes = gc_image_old_bytes();
    h.nil = vm_nil;
    h.true_ = vm_true;
    h.false_ = vm_false;
    h.system = vm_system;
    h.classes = vm_class_table_size;
    vm_symbol_each(count_symbol, &h.symbols);
    vm_global_each(count_global, &h.globals);
    h.methods = vm_bytecode_publish_count();

    Buf b = {0};
    put(&b, &h, sizeof h);
    put(&b, NULL, VM_SNAPSHOT_IMAGE_OFFSET - sizeof h);
    put(&b, NULL, page_up(h.image_bytes)); /* zeros past the image: old space's free part */
    if (!b.oom) gc_image_copy_out(b.p + VM_SNAPSHOT_IMAGE_OFFSET, h.image_bytes);
    for (size_t i = 0; i < vm_class_table_size; i++) put_oop(&b, vm_class_table[i]);
    vm_symbol_each(put_symbol, &b);
    vm_global_each(put_global, &b);
    for (size_t i = 0; i < h.methods; i++) put_oop(&b, vm_bytecode_publish_method(i));
    bool foreign = false;
    if (!put_sources(&b, &h.sources, only_from, &foreign, err, errlen)) {
        free(b.p);
        return false;
    }
    if (foreign) { /* a program's own core class: this world is not the default's */
        free(b.p);
        return true;
    }
    if (b.oom) {
        free(b.p);
        base_error(err, errlen, "cannot write a snapshot: out of memory");
        return false;
    }
    h.file_bytes = b.n;
    memcpy(b.p, &h, sizeof h);
    size_t tables_at = VM_SNAPSHOT_IMAGE_OFFSET + page_up(h.image_bytes);
    h.checksum = snapshot_sum(sum_head(b.p), b.p + VM_SNAPSHOT_IMAGE_OFFSET, page_up(h.image_bytes), b.p + tables_at,
                              b.n - tables_at);
    memcpy(b.p + offsetof(VmSnapshotHeader, checksum), &h.checksum, sizeof h.checksum);

    /* A temporary of a random name, renamed over path when whole: a name
     * such as path.tmp.PID could be planted, as a link to a victim, by
     * anyone who can write to path's folder (report/safefile.h). */
    char tmp[1200], terr[1400];
    int fd = report_safefile_temp(path, O_WRONLY, 0644, tmp, sizeof tmp, terr, sizeof terr);
    if (fd < 0) {
        base_error(err, errlen, "cannot write the snapshot %s: %s", path, strerror(errno));
        free(b.p);
        return false;
    }
    bool ok = write_all(fd, b.p, b.n);
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        base_error(err, errlen, "cannot write the snapshot %s: %s", path, strerror(e));
    }
    free(b.p);
    return ok;
}

/* -- Restoring ------------------------------------------------------------- */

/* Section extents from the header's counts; false if they do not add up to
 * the file exactly. */
static bool lay_out(VmSnapshot *s)
{
    const VmSnapshotHeader *h = &s->h;
    uint64_t size = s->size, at = VM_SNAPSHOT_IMAGE_OFFSET, n;
    uint64_t counts[] = {h->classes, h->symbols, h->globals, h->methods};
    if (size < at || h->image_bytes % 8 || h->image_bytes > size - at || page_up(h->image_bytes) > size - at)
        return false;
    at += page_up(h->image_bytes);
    const Oop **dst[] = {&s->classes, &s->symbols, &s->globals, &s->methods};
    for (int k = 0; k < 4; k++) {
        n = counts[k] * (k == 2 ? 2 : 1);
        if (counts[k] > size || n > (size - at) / 8) return false;
        *dst[k] = (const Oop *)(s->file + at);
        at += n * 8;
    }
    s->sources = s->file + at;
    return true;
}

static VmSnapshotRefusal check_sources(const VmSnapshot *s, char *const *cp, size_t ncp, char *why, size_t whylen)
{
    const uint8_t *p = s->sources, *end = s->file + s->size;
    for (uint64_t i = 0; i < s->h.sources; i++) {
        SourceHead sh;
        if ((size_t)(end - p) < sizeof sh) goto bad;
        memcpy(&sh, p, sizeof sh);
        p += sizeof sh;
        if (sh.name_bytes == 0 || sh.name_bytes > 500 || sh.path_bytes == 0 || sh.path_bytes > 1000 ||
            (size_t)(end - p) < pad8((size_t)sh.name_bytes + sh.path_bytes))
            goto bad;
        char name[512], path[1100];
        memcpy(name, p, sh.name_bytes);
        name[sh.name_bytes] = 0;
        memcpy(path, p + sh.name_bytes, sh.path_bytes);
        path[sh.path_bytes] = 0;
        p += pad8((size_t)sh.name_bytes + sh.path_bytes);
        if (strlen(name) != sh.name_bytes || strlen(path) != sh.path_bytes) goto bad;
        VmSnapshotRefusal r = check_source(&sh, name, path, cp, ncp, why, whylen);
        if (r != VM_SNAPSHOT_OK) return r;
    }
    if (p == end) return VM_SNAPSHOT_OK;
bad:
    base_error(why, whylen, "its table of sources is malformed");
    return VM_SNAPSHOT_CORRUPT;
}

VmSnapshotRefusal vm_snapshot_open(VmSnapshot *s, const char *path, char *const *classpath, size_t nclasspath,
                                   char *why, size_t whylen)
{
    memset(s, 0, sizeof *s);
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        base_error(why, whylen, "cannot open it: %s", strerror(errno));
        return errno == ENOENT ? VM_SNAPSHOT_MISSING : VM_SNAPSHOT_CORRUPT;
    }
    struct stat st;
    VmSnapshotRefusal r = VM_SNAPSHOT_CORRUPT;
    if (fstat(s->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        base_error(why, whylen, "not a regular file");
        goto fail;
    }
    if ((uint64_t)st.st_size < sizeof s->h || (uint64_t)st.st_size > SNAP_MAX_FILE_BYTES) {
        base_error(why, whylen, "%lld bytes cannot be a snapshot (truncated?)", (long long)st.st_size);
        goto fail;
    }
    s->size = (size_t)st.st_size;
    /* Mapped, not read: the bytes are the page cache's, read in place. */
    void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (m == MAP_FAILED) {
        base_error(why, whylen, "cannot map it: %s", strerror(errno));
        goto fail;
    }
    s->file = m;
    memcpy(&s->h, s->file, sizeof s->h);
    const VmSnapshotHeader *h = &s->h;
    if (memcmp(h->magic, VM_SNAPSHOT_MAGIC, sizeof h->magic) != 0) {
        base_error(why, whylen, "not an stvm snapshot (bad magic)");
        goto fail;
    }
    if (h->version != VM_SNAPSHOT_VERSION || h->header_bytes != sizeof *h) {
        base_error(why, whylen, "format version %u (header %u bytes); this stvm reads version %u", h->version,
            h->header_bytes, VM_SNAPSHOT_VERSION);
        r = VM_SNAPSHOT_STALE;
        goto fail;
    }
    uint8_t id[VM_BUILD_ID_MAX] = {0};
    size_t idlen = vm_build_id(id);
    if (!idlen || h->build_id_bytes != idlen || memcmp(h->build_id, id, idlen) != 0) {
        base_error(why, whylen, "written by another stvm build");
        r = VM_SNAPSHOT_STALE;
        goto fail;
    }
    if (h->file_bytes != s->size) {
        base_error(why, whylen, "truncated or extended: %zu bytes where it says %llu", s->size,
            (unsigned long long)h->file_bytes);
        goto fail;
    }
    if (!lay_out(s)) {
        base_error(why, whylen, "its sections do not add up to its size");
        goto fail;
    }
    if ((r = check_sources(s, classpath, nclasspath, why, whylen)) != VM_SNAPSHOT_OK) goto fail;
    s->head_sum = sum_head(s->file); /* the rest once the image is mapped (vm_snapshot_restore) */
    return VM_SNAPSHOT_OK;
fail:
    vm_snapshot_close(s);
    return r;
}

uintptr_t vm_snapshot_old_start(const VmSnapshot *s) { return s->file ? (uintptr_t)s->h.image_base : 0; }

static bool has_class(Oop o, uint32_t a, uint32_t b)
{
    return oop_is_ptr(o) && o && (obj_class_index(o) == a || obj_class_index(o) == b);
}

/* The i-th Oop of a table, relocated; false if it does not point at an
 * object of the image (or a non-pointer). */
static bool root(const Oop *table, uint64_t i, Oop *out)
{
    Oop v;
    memcpy(&v, &table[i], sizeof v);
    if (!gc_image_relocate(&v)) return false;
    *out = v;
    return true;
}

/* Every root points at an object of its kind: checked before any table
 * changes, so a refusal leaves the VM's tables empty. */
static bool roots_ok(const VmSnapshot *s)
{
    const VmSnapshotHeader *h = &s->h;
    Oop wk[4] = {h->nil, h->true_, h->false_, h->system}, v;
    static const uint32_t wk_class[4] = {CLASS_INDEX_NIL, CLASS_INDEX_TRUE, CLASS_INDEX_FALSE, CLASS_INDEX_SYSTEM};
    /* nil, true, false, system: the first four objects (of no slots, 16
     * bytes each), where compaction never moves them, as a boot puts them */
    for (int k = 0; k < 4; k++)
        if (!root(wk, (uint64_t)k, &v) || !has_class(v, wk_class[k], wk_class[k]) ||
            v != (Oop)(gc_image_old_base() + 16u * (unsigned)k))
            return false;
    if (h->classes < CLASS_INDEX_FIRST_FREE || h->classes > OBJ_CLASS_MASK) return false;
    for (uint64_t i = 0; i < h->classes; i++)
        if (!root(s->classes, i, &v) || !oop_is_ptr(v) || !v) return false;
    for (uint64_t i = 0; i < h->symbols; i++)
        if (!root(s->symbols, i, &v) || !has_class(v, CLASS_INDEX_SYMBOL, CLASS_INDEX_SYMBOL)) return false;
    for (uint64_t i = 0; i < 2 * h->globals; i++)
        if (!root(s->globals, i, &v) || (i % 2 == 0 && !has_class(v, CLASS_INDEX_SYMBOL, CLASS_INDEX_SYMBOL)))
            return false;
    for (uint64_t i = 0; i < h->methods; i++)
        if (!root(s->methods, i, &v) || !has_class(v, CLASS_INDEX_METHOD, CLASS_INDEX_PRIMITIVE) || !obj_is_method(v))
            return false;
    return true;
}

VmSnapshotRefusal vm_snapshot_restore(VmSnapshot *s, char *why, size_t whylen)
{
    const VmSnapshotHeader *h = &s->h;
    char gcwhy[256];
    const uint8_t *image = gc_image_map_raw(s->fd, VM_SNAPSHOT_IMAGE_OFFSET, h->image_bytes, gcwhy, sizeof gcwhy);
    if (!image) {
        base_error(why, whylen, "%s", gcwhy);
        return VM_SNAPSHOT_CORRUPT;
    }
    size_t tables_at = VM_SNAPSHOT_IMAGE_OFFSET + page_up(h->image_bytes);
    if (snapshot_sum(s->head_sum, image, page_up(h->image_bytes), s->file + tables_at, s->size - tables_at) !=
        h->checksum) {
        gc_image_discard();
        base_error(why, whylen, "checksum mismatch (corrupt)");
        return VM_SNAPSHOT_CORRUPT;
    }
    if (!gc_image_adopt(h->image_bytes, h->image_base, h->classes, gcwhy, sizeof gcwhy)) {
        base_error(why, whylen, "%s", gcwhy);
        return VM_SNAPSHOT_CORRUPT;
    }
    if (!roots_ok(s)) {
        gc_image_discard();
        base_error(why, whylen, "its roots do not point at objects of their kinds");
        return VM_SNAPSHOT_CORRUPT;
    }
    /* roots_ok checked every root: root() cannot fail below */
    Oop v = 0, wk[4] = {h->nil, h->true_, h->false_, h->system};
    root(wk, 0, &vm_nil);
    root(wk, 1, &vm_true);
    root(wk, 2, &vm_false);
    root(wk, 3, &vm_system);
    for (uint64_t i = 0; i < h->classes; i++) {
        root(s->classes, i, &v);
        vm_class_table_add(v);
    }
    for (uint64_t i = 0; i < h->symbols; i++) {
        root(s->symbols, i, &v);
        if (!vm_symbol_adopt(v)) { /* two symbols of one name */
            vm_universe_reset();
            gc_image_discard();
            base_error(why, whylen, "its symbol table names a symbol twice");
            return VM_SNAPSHOT_CORRUPT;
        }
    }
    for (uint64_t i = 0; i < 2 * h->globals; i += 2) {
        Oop key = 0;
        root(s->globals, i, &key);
        root(s->globals, i + 1, &v);
        vm_global_put(key, v);
    }
    gc_image_set_hash_state(h->hash_state);
    for (uint64_t i = 0; i < h->methods; i++) {
        root(s->methods, i, &v);
        vm_bytecode_publish_add(v);
    }
    gc_image_finish();
    s->restored = true;
    return VM_SNAPSHOT_OK;
}

void vm_snapshot_close(VmSnapshot *s)
{
    /* A refused file is unmapped; a restored one stays mapped (its ~50 KB
     * of address space): munmap cost ~0.5 ms here, a TLB shootdown across
     * the VM's CPUs (scripts/bench-startup). */
    if (s->file && !s->restored) munmap((void *)s->file, s->size);
    if (s->fd >= 0) close(s->fd);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

void vm_snapshot_publish(void) { vm_bytecode_publish_flush(); }
