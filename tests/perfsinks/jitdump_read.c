/*
 * tests/perfsinks/jitdump_read.c — a jitdump reader and checker for the tests.
 */
#include "tests/perfsinks/jitdump_read.h"

#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes and offsets from the specification. */
#define FILE_HEADER 40
#define RECORD_HEADER 16
#define LOAD_FIXED (RECORD_HEADER + 40)  /* pid tid vma code_addr code_size code_index */
#define MOVE_SIZE (RECORD_HEADER + 48)   /* pid tid vma old new code_size code_index */
#define DEBUG_FIXED (RECORD_HEADER + 16) /* code_addr nr_entry */
#define DEBUG_ENTRY 16                   /* addr line discrim, then the file name */
#define EM_X86_64_VALUE 62

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t u64_at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A NUL-terminated string starting at p and ending before end, or NULL. */
static const char *string_in(const uint8_t *p, const uint8_t *end)
{
    const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
    return nul ? (const char *)p : NULL;
}

static bool read_record(JdFile *f, JdRecord *r, size_t off, char *err, size_t errlen)
{
    const uint8_t *p = f->data + off, *end;
    memset(r, 0, sizeof *r);
    r->offset = off;
    r->id = u32_at(p);
    r->total_size = u32_at(p + 4);
    r->timestamp = u64_at(p + 8);
    if (r->total_size < RECORD_HEADER || r->total_size > f->size - off)
        return base_error(err, errlen, "record at %zu (type %u): total_size %u does not fit the file (%zu bytes left)", off,
                     r->id, r->total_size, f->size - off);
    end = p + r->total_size;
    switch (r->id) {
    case JD_LOAD: {
        if (r->total_size < LOAD_FIXED + 1)
            return base_error(err, errlen, "LOAD at %zu: %u bytes, less than its fields and a name", off, r->total_size);
        r->pid = u32_at(p + 16);
        r->tid = u32_at(p + 20);
        r->vma = u64_at(p + 24);
        r->code_addr = u64_at(p + 32);
        r->code_size = u64_at(p + 40);
        r->code_index = u64_at(p + 48);
        r->name = string_in(p + LOAD_FIXED, end);
        if (!r->name) return base_error(err, errlen, "LOAD at %zu: name not terminated inside the record", off);
        size_t used = LOAD_FIXED + strlen(r->name) + 1;
        if (used + r->code_size != r->total_size)
            return base_error(err, errlen, "LOAD at %zu (%s): total_size %u != %zu + code_size %llu", off, r->name,
                         r->total_size, used, (unsigned long long)r->code_size);
        r->code = p + used;
        f->loads++;
        break;
    }
    case JD_MOVE:
        if (r->total_size != MOVE_SIZE)
            return base_error(err, errlen, "MOVE at %zu: %u bytes, not %d", off, r->total_size, MOVE_SIZE);
        r->pid = u32_at(p + 16);
        r->tid = u32_at(p + 20);
        r->vma = u64_at(p + 24);
        r->old_code_addr = u64_at(p + 32);
        r->new_code_addr = u64_at(p + 40);
        r->code_size = u64_at(p + 48);
        r->code_index = u64_at(p + 56);
        f->moves++;
        break;
    case JD_DEBUG_INFO: {
        if (r->total_size < DEBUG_FIXED)
            return base_error(err, errlen, "DEBUG_INFO at %zu: %u bytes, less than its fields", off, r->total_size);
        r->code_addr = u64_at(p + 16);
        r->nrows = u64_at(p + 24);
        if (r->nrows > (r->total_size - DEBUG_FIXED) / (DEBUG_ENTRY + 1))
            return base_error(err, errlen, "DEBUG_INFO at %zu: %llu entries cannot fit %u bytes", off,
                         (unsigned long long)r->nrows, r->total_size);
        r->rows = calloc(r->nrows ? r->nrows : 1, sizeof *r->rows);
        const uint8_t *q = p + DEBUG_FIXED;
        for (uint64_t i = 0; i < r->nrows; i++) {
            if (end - q < DEBUG_ENTRY + 1)
                return base_error(err, errlen, "DEBUG_INFO at %zu: entry %llu runs past the record", off,
                             (unsigned long long)i);
            r->rows[i].addr = u64_at(q);
            r->rows[i].line = u32_at(q + 8);
            r->rows[i].discrim = u32_at(q + 12);
            r->rows[i].file = string_in(q + DEBUG_ENTRY, end);
            if (!r->rows[i].file)
                return base_error(err, errlen, "DEBUG_INFO at %zu: entry %llu's file name is not terminated", off,
                             (unsigned long long)i);
            q += DEBUG_ENTRY + strlen(r->rows[i].file) + 1;
        }
        if (q != end)
            return base_error(err, errlen, "DEBUG_INFO at %zu: %td bytes after its %llu entries", off, end - q,
                         (unsigned long long)r->nrows);
        f->debug_infos++;
        break;
    }
    case JD_UNWINDING_INFO: {
        /* three sizes, then .eh_frame and .eh_frame_hdr, padded to 8; the
         * .eh_frame starts with a CIE */
        if (r->total_size < RECORD_HEADER + 24 + 16)
            return base_error(err, errlen, "UNWINDING_INFO at %zu: %u bytes, less than its fields", off, r->total_size);
        uint64_t size = u64_at(p + 16), hdr = u64_at(p + 24), mapped = u64_at(p + 32);
        if (size < 16 + hdr || mapped != size || RECORD_HEADER + 24 + size > r->total_size ||
            r->total_size - (RECORD_HEADER + 24 + size) >= 8)
            return base_error(err, errlen, "UNWINDING_INFO at %zu: sizes %llu/%llu/%llu do not fit its %u bytes", off,
                         (unsigned long long)size, (unsigned long long)hdr, (unsigned long long)mapped, r->total_size);
        const uint8_t *eh = p + RECORD_HEADER + 24;
        if (u32_at(eh + 4) != 0 || eh[8] != 1)
            return base_error(err, errlen, "UNWINDING_INFO at %zu: the .eh_frame does not start with a CIE", off);
        f->unwinding_infos++;
        break;
    }
    case JD_CLOSE:
        if (r->total_size != RECORD_HEADER)
            return base_error(err, errlen, "CLOSE at %zu: %u bytes, not %d", off, r->total_size, RECORD_HEADER);
        f->closes++;
        break;
    default:
        return base_error(err, errlen, "record at %zu: unknown type %u (stvm writes 0-4)", off, r->id);
    }
    return true;
}

bool jd_file_read(const char *path, JdFile *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "rb");
    if (!in) return base_error(err, errlen, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16;
    f->data = malloc(cap);
    for (size_t n; f->data && (n = fread(f->data + f->size, 1, cap - f->size, in)) > 0;) {
        f->size += n;
        if (f->size == cap) f->data = realloc(f->data, cap *= 2);
    }
    fclose(in);
    if (!f->data) return base_error(err, errlen, "out of memory reading %s", path);
    if (f->size < FILE_HEADER) return base_error(err, errlen, "%s: %zu bytes, shorter than the file header", path, f->size);
    f->magic = u32_at(f->data);
    f->version = u32_at(f->data + 4);
    f->header_size = u32_at(f->data + 8);
    f->elf_mach = u32_at(f->data + 12);
    f->pid = u32_at(f->data + 20);
    f->timestamp = u64_at(f->data + 24);
    f->flags = u64_at(f->data + 32);
    if (f->magic != 0x4A695444u) return base_error(err, errlen, "magic 0x%08x, not 0x4A695444 (\"JiTD\")", f->magic);
    if (f->version != 1) return base_error(err, errlen, "version %u, not 1", f->version);
    if (f->header_size != FILE_HEADER) return base_error(err, errlen, "header total_size %u, not 40", f->header_size);
    if (f->elf_mach != EM_X86_64_VALUE) return base_error(err, errlen, "elf_mach %u, not EM_X86_64", f->elf_mach);
    if (f->flags != 0) return base_error(err, errlen, "flags 0x%llx: stvm uses CLOCK_MONOTONIC, not an arch clock",
                                    (unsigned long long)f->flags);
    size_t cap_recs = 0;
    for (size_t off = FILE_HEADER; off < f->size;) {
        if (f->size - off < RECORD_HEADER)
            return base_error(err, errlen, "%zu stray bytes at the end (offset %zu)", f->size - off, off);
        if (f->nrecs == cap_recs) {
            cap_recs = cap_recs ? cap_recs * 2 : 256;
            f->recs = realloc(f->recs, cap_recs * sizeof *f->recs);
        }
        JdRecord *r = &f->recs[f->nrecs++];
        if (!read_record(f, r, off, err, errlen)) return false;
        off += r->total_size;
    }
    return true;
}

const JdRecord *jd_file_load(const JdFile *f, uint64_t code_index)
{
    for (size_t i = 0; i < f->nrecs; i++)
        if (f->recs[i].id == JD_LOAD && f->recs[i].code_index == code_index) return &f->recs[i];
    return NULL;
}

static bool in_zone(const JdCheck *c, uint64_t addr, uint64_t size)
{
    if (!c || (!c->zone_lo && !c->zone_hi)) return true;
    return addr >= c->zone_lo && addr + size <= c->zone_hi && addr + size >= addr;
}

bool jd_file_check(const JdFile *f, const JdCheck *c, char *err, size_t errlen)
{
    uint64_t last_ts = f->timestamp;
    /* where each index's code is now, by index (indexes are checked dense below) */
    uint64_t *now_at = calloc(f->loads + 2, sizeof *now_at);
    bool ok = false;
    uint64_t expect_index = 1;
    for (size_t i = 0; i < f->nrecs; i++) {
        const JdRecord *r = &f->recs[i];
        if (r->timestamp < last_ts) {
            base_error(err, errlen, "record at %zu: timestamp %llu before the previous %llu", r->offset,
                  (unsigned long long)r->timestamp, (unsigned long long)last_ts);
            goto out;
        }
        last_ts = r->timestamp;
        if ((r->id == JD_LOAD || r->id == JD_MOVE) && r->pid != f->pid) {
            base_error(err, errlen, "record at %zu: pid %u, the header says %u", r->offset, r->pid, f->pid);
            goto out;
        }
        switch (r->id) {
        case JD_LOAD:
            if (r->vma != r->code_addr || !r->code_addr || !r->code_size || !r->name[0]) {
                base_error(err, errlen, "LOAD at %zu (%s): vma 0x%llx, code_addr 0x%llx, code_size %llu", r->offset,
                      r->name, (unsigned long long)r->vma, (unsigned long long)r->code_addr,
                      (unsigned long long)r->code_size);
                goto out;
            }
            if (r->code_index != expect_index) {
                base_error(err, errlen, "LOAD at %zu (%s): code_index %llu, expected %llu (unique, counting from 1)",
                      r->offset, r->name, (unsigned long long)r->code_index, (unsigned long long)expect_index);
                goto out;
            }
            if (!in_zone(c, r->code_addr, r->code_size)) {
                base_error(err, errlen, "LOAD at %zu (%s): 0x%llx+%llu lies outside the code zone", r->offset, r->name,
                      (unsigned long long)r->code_addr, (unsigned long long)r->code_size);
                goto out;
            }
            now_at[expect_index++] = r->code_addr;
            break;
        case JD_DEBUG_INFO: {
            const JdRecord *l = i + 1 < f->nrecs ? &f->recs[i + 1] : NULL;
            if (!l || l->id != JD_LOAD || l->code_addr != r->code_addr) {
                base_error(err, errlen, "DEBUG_INFO at %zu (code 0x%llx) is not followed by the LOAD of that code",
                      r->offset, (unsigned long long)r->code_addr);
                goto out;
            }
            if (!r->nrows) {
                base_error(err, errlen, "DEBUG_INFO at %zu (%s) has no entries", r->offset, l->name);
                goto out;
            }
            for (uint64_t k = 0; k < r->nrows; k++) {
                const JdRow *row = &r->rows[k];
                /* the last row may sit one past the code: it closes the line sequence */
                uint64_t end = l->code_addr + l->code_size + (k + 1 == r->nrows);
                if (row->addr < l->code_addr || row->addr >= end || row->line < 1 ||
                    !row->file[0] || (k && row->addr <= r->rows[k - 1].addr)) {
                    base_error(err, errlen,
                          "DEBUG_INFO at %zu (%s): entry %llu (0x%llx line %u '%s') is not in increasing order "
                          "inside 0x%llx+%llu with a line and a file",
                          r->offset, l->name, (unsigned long long)k, (unsigned long long)row->addr, row->line,
                          row->file, (unsigned long long)l->code_addr, (unsigned long long)l->code_size);
                    goto out;
                }
            }
            break;
        }
        case JD_MOVE: {
            const JdRecord *l = r->code_index && r->code_index < expect_index ? jd_file_load(f, r->code_index) : NULL;
            if (!l) {
                base_error(err, errlen, "MOVE at %zu: code_index %llu names no earlier LOAD", r->offset,
                      (unsigned long long)r->code_index);
                goto out;
            }
            if (r->old_code_addr != now_at[r->code_index] || r->code_size != l->code_size ||
                r->vma != r->new_code_addr || r->new_code_addr == r->old_code_addr) {
                base_error(err, errlen,
                      "MOVE at %zu (%s): from 0x%llx (its code is at 0x%llx) to 0x%llx (vma 0x%llx), size %llu "
                      "(loaded with %llu)",
                      r->offset, l->name, (unsigned long long)r->old_code_addr,
                      (unsigned long long)now_at[r->code_index], (unsigned long long)r->new_code_addr,
                      (unsigned long long)r->vma, (unsigned long long)r->code_size,
                      (unsigned long long)l->code_size);
                goto out;
            }
            if (!in_zone(c, r->new_code_addr, r->code_size)) {
                base_error(err, errlen, "MOVE at %zu (%s): to 0x%llx, outside the code zone", r->offset, l->name,
                      (unsigned long long)r->new_code_addr);
                goto out;
            }
            now_at[r->code_index] = r->new_code_addr;
            break;
        }
        case JD_CLOSE:
            if (i + 1 != f->nrecs) {
                base_error(err, errlen, "CLOSE at %zu is not the last record", r->offset);
                goto out;
            }
            break;
        }
    }
    ok = true;
out:
    free(now_at);
    return ok;
}

void jd_file_free(JdFile *f)
{
    for (size_t i = 0; i < f->nrecs; i++) free(f->recs[i].rows);
    free(f->recs);
    free(f->data);
    memset(f, 0, sizeof *f);
}
