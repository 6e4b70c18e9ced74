/*
 * tests/probes/stapsdt.c — reading NT_STAPSDT notes with libelf. See
 * tests/probes/stapsdt.h.
 */
#include "stapsdt.h"

#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT_STAPSDT 3

static int count_args(const char *s)
{
    int n = 0;
    bool in = false;
    for (; *s; s++) {
        if (*s == ' ') in = false;
        else if (!in) {
            in = true;
            n++;
        }
    }
    return n;
}

/* Copies the NUL-terminated string at *p (not past end) into out; advances
 * *p past it. false when unterminated. */
static bool take_string(const char **p, const char *end, char *out, size_t outlen)
{
    const char *z = memchr(*p, 0, (size_t)(end - *p));
    if (!z) return false;
    snprintf(out, outlen, "%s", *p);
    *p = z + 1;
    return true;
}

static bool read_notes(Elf_Data *data, SdtFile *f, uint64_t base_actual, char *err, size_t errlen)
{
    size_t off = 0, next;
    GElf_Nhdr nh;
    size_t name_off, desc_off;
    size_t cap = 0;
    while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        off = next;
        const char *name = (const char *)data->d_buf + name_off;
        if (nh.n_type != NT_STAPSDT || nh.n_namesz != sizeof "stapsdt" || strcmp(name, "stapsdt") != 0) continue;
        if (nh.n_descsz < 3 * 8 + 3) return base_error(err, errlen, "a stapsdt note is too short (%s%s)", "", "");
        const char *d = (const char *)data->d_buf + desc_off, *end = d + nh.n_descsz;
        uint64_t w[3];
        memcpy(w, d, sizeof w);
        const char *p = d + sizeof w;
        SdtProbe pr = {0};
        if (!take_string(&p, end, pr.provider, sizeof pr.provider) || !take_string(&p, end, pr.name, sizeof pr.name) ||
            !take_string(&p, end, pr.args, sizeof pr.args))
            return base_error(err, errlen, "a stapsdt note has an unterminated string (%s%s)", "", "");
        pr.nargs = count_args(pr.args);
        /* the note records .stapsdt.base where it was linked; a prelinked
         * binary moved it, and its probes with it */
        pr.pc = w[0] + (base_actual && w[1] ? base_actual - w[1] : 0);
        pr.semaphore = w[2];
        if (f->nprobes == cap) {
            cap = cap ? 2 * cap : 32;
            SdtProbe *np = realloc(f->probes, cap * sizeof *np);
            if (!np) return base_error(err, errlen, "out of memory (%s%s)", "", "");
            f->probes = np;
        }
        f->probes[f->nprobes++] = pr;
    }
    return true;
}

bool sdt_read(const char *path, SdtFile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (elf_version(EV_CURRENT) == EV_NONE) return base_error(err, errlen, "libelf: %s%s", elf_errmsg(-1), "");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return base_error(err, errlen, "cannot open %s: %s", path, strerror(errno));
    bool ok = false;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    GElf_Ehdr eh;
    size_t shstrndx, nphdr;
    if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx) != 0 ||
        elf_getphdrnum(e, &nphdr) != 0) {
        base_error(err, errlen, "%s is not an ELF file libelf reads: %s", path, elf_errmsg(-1));
        goto out;
    }
    out->pie = eh.e_type == ET_DYN;
    out->min_load_vaddr = UINT64_MAX;
    for (size_t i = 0; i < nphdr; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < out->min_load_vaddr)
            out->min_load_vaddr = ph.p_vaddr;
    }
    if (out->min_load_vaddr == UINT64_MAX) out->min_load_vaddr = 0;

    uint64_t base_actual = 0;
    Elf_Scn *notes = NULL;
    size_t cap = 0;
    for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh)) continue;
        const char *n = elf_strptr(e, shstrndx, sh.sh_name);
        if (!n) continue;
        if (!strcmp(n, ".stapsdt.base")) base_actual = sh.sh_addr;
        if (!strcmp(n, ".note.stapsdt") && sh.sh_type == SHT_NOTE) notes = s;
        if (!(sh.sh_flags & SHF_ALLOC)) continue;
        if (out->nsections == cap) {
            cap = cap ? 2 * cap : 32;
            SdtSection *ns = realloc(out->sections, cap * sizeof *ns);
            if (!ns) {
                base_error(err, errlen, "out of memory reading %s%s", path, "");
                goto out;
            }
            out->sections = ns;
        }
        SdtSection *sec = &out->sections[out->nsections++];
        snprintf(sec->name, sizeof sec->name, "%s", n);
        sec->addr = sh.sh_addr;
        sec->size = sh.sh_size;
        sec->offset = sh.sh_type == SHT_NOBITS ? 0 : sh.sh_offset;
        sec->exec = (sh.sh_flags & SHF_EXECINSTR) != 0;
    }
    if (notes) {
        Elf_Data *d = elf_getdata(notes, NULL);
        if (d && !read_notes(d, out, base_actual, err, errlen)) goto out;
    }
    ok = true;
out:
    if (e) elf_end(e);
    close(fd);
    if (!ok) sdt_free(out);
    return ok;
}

void sdt_free(SdtFile *f)
{
    free(f->probes);
    free(f->sections);
    memset(f, 0, sizeof *f);
}

const SdtSection *sdt_section_at(const SdtFile *f, uint64_t a)
{
    for (size_t i = 0; i < f->nsections; i++)
        if (a >= f->sections[i].addr && a < f->sections[i].addr + f->sections[i].size) return &f->sections[i];
    return NULL;
}

bool sdt_symbol(const char *path, const char *name, uint64_t *value)
{
    if (elf_version(EV_CURRENT) == EV_NONE) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool found = false;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    for (int pass = 0; e && pass < 2 && !found; pass++) {
        GElf_Word want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        for (Elf_Scn *s = elf_nextscn(e, NULL); s && !found; s = elf_nextscn(e, s)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(s, &sh) || sh.sh_type != want || !sh.sh_entsize) continue;
            Elf_Data *d = elf_getdata(s, NULL);
            size_t n = sh.sh_size / sh.sh_entsize;
            for (size_t i = 0; d && i < n; i++) {
                GElf_Sym sym;
                if (!gelf_getsym(d, (int)i, &sym)) continue;
                const char *sn = elf_strptr(e, sh.sh_link, sym.st_name);
                if (sn && !strcmp(sn, name) && sym.st_shndx != SHN_UNDEF) {
                    *value = sym.st_value;
                    found = true;
                    break;
                }
            }
        }
    }
    if (e) elf_end(e);
    close(fd);
    return found;
}
