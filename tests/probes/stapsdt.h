/*
 * tests/probes/stapsdt.h — reading a binary's USDT probes: the
 * NT_STAPSDT notes of section .note.stapsdt (the layout <sys/sdt.h> emits,
 * as SystemTap's documentation of SDT notes describes it), with libelf.
 *
 *   note name "stapsdt", type 3, descriptor:
 *     u64 pc          the probe's nop (link-time address)
 *     u64 base        link-time address of section .stapsdt.base
 *     u64 semaphore   link-time address of the 16-bit semaphore, or 0
 *     provider\0 name\0 arguments\0   ("8@%rax -4@$0 8@-16(%rbp)", space separated)
 *
 * Who may call: the probe tests (test_probe_notes, usdt_trace).
 */
#ifndef TESTS_PROBES_STAPSDT_H
#define TESTS_PROBES_STAPSDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct SdtProbe {
    char provider[64];
    char name[64];
    char args[512];
    int nargs;          /* space-separated argument descriptions */
    uint64_t pc;        /* adjusted for a moved .stapsdt.base (prelink), as tools do */
    uint64_t semaphore; /* 0: none */
} SdtProbe;

typedef struct SdtSection {
    char name[64];
    uint64_t addr, size;
    uint64_t offset; /* in the file; 0 for NOBITS */
    bool exec;
} SdtSection;

typedef struct SdtFile {
    SdtProbe *probes;
    size_t nprobes;
    SdtSection *sections;
    size_t nsections;
    uint64_t min_load_vaddr; /* lowest PT_LOAD p_vaddr: the load bias is map start - this (page-rounded) */
    bool pie;                /* ET_DYN */
} SdtFile;

/* Reads path's probes and sections. false with a message in err. */
bool sdt_read(const char *path, SdtFile *out, char *err, size_t errlen);
void sdt_free(SdtFile *f);

/* The section holding link-time address a, or NULL. */
const SdtSection *sdt_section_at(const SdtFile *f, uint64_t a);

/* The value of symbol name in path's symbol tables (.symtab, else
 * .dynsym); false when absent. */
bool sdt_symbol(const char *path, const char *name, uint64_t *value);

#endif
