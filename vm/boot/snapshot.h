/*
 * vm/boot/snapshot.h — the booted core library saved to a file and restored, so
 * a start does not parse and compile smalltalk/core (Cog's image, reduced
 * to what a boot makes: no running process is saved).
 *
 * A snapshot is taken at the end of a boot from source, before the program
 * loads: old space (gc/image.h; young space is empty then) and the C tables
 * that hold its roots — nil, true, false, system, the class table, the
 * symbol table, the globals, the methods registered for profilers — plus,
 * per core class, its source file's name, size and modification time.
 * Restoring it gives the world that boot made: the same objects with the
 * same identity hashes, the same class indices, the same globals; the
 * methods are announced to the code event sinks (the export, the code-log
 * truth, later perf map / jitdump replays) in the order the compiler
 * announced them, after the sinks are open, as a boot from source does.
 *
 * A snapshot is used only if it is exactly right for this run: magic,
 * format version, header size, file size, the build id of this stvm
 * (vm/boot/buildid.h: object layouts, class indices and primitive numbers are a
 * build's own), a checksum over the whole file, and every core class's
 * source: the classpath search of this run must find the same file (no
 * earlier classpath directory has a class of that name) with the same size
 * and modification time. Then every object and every root is checked and
 * relocated (gc/image.h). Anything else is refused with a reason, and the
 * VM boots from source.
 *
 * File layout, little-endian (x86-64), every section 8-byte aligned:
 *
 *   offset  bytes  field
 *   +0        8    magic "STVMSNAP"
 *   +8        4    format version (VM_SNAPSHOT_VERSION)
 *   +12       4    header bytes (sizeof(VmSnapshotHeader))
 *   +16       4    build id bytes (of the writer)
 *   +20       4    identity-hash generator state
 *   +24      32    build id, zero padded
 *   +56       8    file bytes, header included
 *   +64       8    checksum of the whole file with this field 0, taken
 *                  part by part (vm/boot/snapshot.c, snapshot_sum)
 *   +72       8    image base: the writer's old_start
 *   +80       8    image bytes
 *   +88      32    nil, true, false, system (at the writer's addresses)
 *   +120      8    class table entries
 *   +128      8    symbols
 *   +136      8    globals
 *   +144      8    registered methods
 *   +152      8    sources
 *   +160           zeros
 *   +4096          the image (VM_SNAPSHOT_IMAGE_OFFSET, a page: it is
 *                  mapped as old space), zeros to the next page
 *   then           class table: Oop[] | symbols: Oop[] |
 *                  globals: (key, value)[] | methods: Oop[] | sources
 *
 *   a source: u64 mtime seconds, u64 mtime nanoseconds, u64 file bytes,
 *             u32 class name bytes, u32 path bytes, the name, the path,
 *             zeros to the next multiple of 8.
 *
 * The image stays mapped from the file for the life of the VM (its pages
 * are copied only when written), so a snapshot must be replaced, never
 * rewritten in place while a VM runs from it: vm_snapshot_write writes a
 * new file and renames it over the old one, which running VMs keep.
 *
 * Who may call: vm/boot/boot.c (open, restore, publish, write), tests.
 */
#ifndef VM_SNAPSHOT_H
#define VM_SNAPSHOT_H

#include "gc/object.h"
#include "vm/boot/buildid.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_SNAPSHOT_MAGIC "STVMSNAP"
/* Bump when the layout above or what a boot leaves in the tables changes. */
#define VM_SNAPSHOT_VERSION 1u
/* The image's file offset: a page, so it can be mapped as old space. */
#define VM_SNAPSHOT_IMAGE_OFFSET 4096u

typedef struct VmSnapshotHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t build_id_bytes;
    uint32_t hash_state;
    uint8_t build_id[VM_BUILD_ID_MAX];
    uint64_t file_bytes;
    uint64_t checksum;
    uint64_t image_base;
    uint64_t image_bytes;
    uint64_t nil, true_, false_, system;
    uint64_t classes;
    uint64_t symbols;
    uint64_t globals;
    uint64_t methods;
    uint64_t sources;
} VmSnapshotHeader;

_Static_assert(VM_BUILD_ID_MAX == 32, "the layout has 32 bytes of build id");
_Static_assert(offsetof(VmSnapshotHeader, version) == 8, "layout");
_Static_assert(offsetof(VmSnapshotHeader, hash_state) == 20, "layout");
_Static_assert(offsetof(VmSnapshotHeader, build_id) == 24, "layout");
_Static_assert(offsetof(VmSnapshotHeader, file_bytes) == 56, "layout");
_Static_assert(offsetof(VmSnapshotHeader, checksum) == 64, "layout");
_Static_assert(offsetof(VmSnapshotHeader, image_base) == 72, "layout");
_Static_assert(offsetof(VmSnapshotHeader, nil) == 88, "layout");
_Static_assert(offsetof(VmSnapshotHeader, classes) == 120, "layout");
_Static_assert(offsetof(VmSnapshotHeader, sources) == 152, "layout");
_Static_assert(sizeof(VmSnapshotHeader) == 160, "layout");

/* Why a snapshot was not restored. */
typedef enum VmSnapshotRefusal {
    VM_SNAPSHOT_OK = 0,
    VM_SNAPSHOT_MISSING, /* no such file */
    VM_SNAPSHOT_STALE,   /* another build, another version, or a core source changed or is shadowed */
    VM_SNAPSHOT_CORRUPT, /* unreadable, truncated, bad magic, checksum or contents */
} VmSnapshotRefusal;

/* An open snapshot: the file mapped read-only, its header, its sections. */
typedef struct VmSnapshot {
    int fd;
    const uint8_t *file;
    size_t size;
    VmSnapshotHeader h;
    const Oop *classes, *symbols, *globals, *methods; /* in the file, at the writer's addresses */
    const uint8_t *sources;
    uint64_t head_sum; /* the checksum of the first page (the rest: restore) */
    bool restored;     /* then close leaves the file mapped */
} VmSnapshot;

/* Opens the snapshot at path and checks everything that does not need the
 * heap: header, build id, size, sections, and that each core
 * source is the file this run's classpath search would find, unchanged.
 * VM_SNAPSHOT_OK, or the refusal with a one-line reason in why (s is then
 * closed). */
VmSnapshotRefusal vm_snapshot_open(VmSnapshot *s, const char *path, char *const *classpath, size_t nclasspath,
                                   char *why, size_t whylen);

/* Where the writer's old space began: the heap's GcConfig.old_start_hint. */
uintptr_t vm_snapshot_old_start(const VmSnapshot *s);

/* Maps the image as old space of a heap fresh from gc_heap_init (nothing
 * allocated yet), checks the file's checksum, checks and relocates it, and fills nil/true/false/system,
 * the class table, the symbols and the globals, and registers the methods.
 * Refused, the heap and the tables are as empty as before. */
VmSnapshotRefusal vm_snapshot_restore(VmSnapshot *s, char *why, size_t whylen);

/* Closes the file; unmaps it unless it was restored (old space keeps its
 * own mapping either way). */
void vm_snapshot_close(VmSnapshot *s);

/* After a restore, once the code event sinks are open: announces the
 * restored methods (what the loader does as it compiles). */
void vm_snapshot_publish(void);

/* Writes the booted world (young space empty: call right after the core
 * library is loaded) to path, through a temporary file renamed into place,
 * so readers never see half a snapshot. only_from: when not NULL, write
 * only if every core class came from that directory (answers true without
 * writing otherwise). false with a reason in err. */
bool vm_snapshot_write(const char *path, const char *only_from, char *err, size_t errlen);

/* The checksum function: of len bytes, seeded with the checksum of what
 * precedes them (0 at the start). */
uint64_t vm_snapshot_checksum(const uint8_t *bytes, size_t len, uint64_t seed);

#endif
