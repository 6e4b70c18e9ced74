/*
 * vm/boot/buildid.h — the running stvm's GNU build id (the linker's
 * NT_GNU_BUILD_ID note, a hash of the whole executable), read from its own
 * program headers in memory: no file is opened.
 *
 * A snapshot (vm/boot/snapshot.h) records the build id of the stvm that wrote it
 * and is refused by any other build: heap layouts, class indices and
 * primitive numbers may differ between builds.
 *
 * Who may call: vm/boot/snapshot.c.
 */
#ifndef VM_BUILDID_H
#define VM_BUILDID_H

#include <stddef.h>
#include <stdint.h>

/* Build ids are 20 bytes (SHA-1) with the default --build-id; longer styles
 * are cut to this many bytes. */
#define VM_BUILD_ID_MAX 32

/* Copies the build id into id (up to VM_BUILD_ID_MAX bytes) and answers its
 * length; 0 when the executable has none (linked without --build-id). */
size_t vm_build_id(uint8_t id[VM_BUILD_ID_MAX]);

#endif
