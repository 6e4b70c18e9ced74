/*
 * vm/boot/buildid.c — the running stvm's build id. See vm/boot/buildid.h.
 */
#define _GNU_SOURCE
#include "vm/boot/buildid.h"

#include <elf.h>
#include <link.h>
#include <string.h>

typedef struct Found {
    uint8_t *id;
    size_t len;
} Found;

/* Note entries: Elf64_Nhdr, name padded to 4, descriptor padded to 4. */
static size_t note_build_id(const uint8_t *p, size_t size, uint8_t *out)
{
    const uint8_t *end = p + size;
    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        size_t name = (n->n_namesz + 3u) & ~(size_t)3, desc = (n->n_descsz + 3u) & ~(size_t)3;
        const uint8_t *q = p + sizeof *n;
        if ((size_t)(end - q) < name + desc) break;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(q, "GNU", 4) == 0 && n->n_descsz) {
            size_t len = n->n_descsz < VM_BUILD_ID_MAX ? n->n_descsz : VM_BUILD_ID_MAX;
            memcpy(out, q + name, len);
            return len;
        }
        p = q + name + desc;
    }
    return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    Found *f = ctx;
    /* the first object dl_iterate_phdr reports is the executable itself */
    for (ElfW(Half) i = 0; i < info->dlpi_phnum && !f->len; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            f->len = note_build_id((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, f->id);
    }
    return 1; /* stop after the executable */
}

size_t vm_build_id(uint8_t id[VM_BUILD_ID_MAX])
{
    Found f = {id, 0};
    dl_iterate_phdr(visit, &f);
    return f.len;
}
