/*
 * tests/probes/test_probe_notes.c — the stvm binary carries exactly the
 * probes profiler/usdt.h documents: every probe of STVM_PROBE_LIST has
 * notes, each with the documented argument count, a semaphore in section
 * .probes shared by all its sites, and a site that is a nop in executable
 * code; no undocumented stvm probe exists; the two method probes'
 * semaphores open one aligned 64-bit word, as compiled code reads them. A build with STVM_PROBES=0 has no stvm notes at all.
 *
 *   test_probe_notes PATH-TO-STVM
 */
#include "profiler/usdt.h"
#include "stapsdt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct Documented {
    const char *name;
    int nargs;
} Documented;

#define STVM_PROBE_ROW(name, nargs, storage) {#name, nargs},
static const Documented documented[] = {STVM_PROBE_LIST(STVM_PROBE_ROW)};
#undef STVM_PROBE_ROW
#define NDOCUMENTED (sizeof documented / sizeof documented[0])

static const char *binary;
static SdtFile elf;

static bool is_stvm(const SdtProbe *p) { return !strcmp(p->provider, STVM_PROBE_PROVIDER); }

static size_t stvm_notes(void)
{
    size_t n = 0;
    for (size_t i = 0; i < elf.nprobes; i++) n += is_stvm(&elf.probes[i]);
    return n;
}

#if STVM_PROBES

static void every_documented_probe_has_notes_with_its_argument_count(void **state)
{
    (void)state;
    for (size_t d = 0; d < NDOCUMENTED; d++) {
        size_t sites = 0;
        for (size_t i = 0; i < elf.nprobes; i++) {
            const SdtProbe *p = &elf.probes[i];
            if (!is_stvm(p) || strcmp(p->name, documented[d].name)) continue;
            sites++;
            if (p->nargs != documented[d].nargs)
                fail_msg("stvm:%s at %#llx has %d arguments (\"%s\"), profiler/usdt.h documents %d", p->name,
                         (unsigned long long)p->pc, p->nargs, p->args, documented[d].nargs);
        }
        if (!sites) fail_msg("stvm:%s is documented in profiler/usdt.h but %s has no note for it", documented[d].name, binary);
    }
}

static void no_stvm_probe_is_undocumented(void **state)
{
    (void)state;
    for (size_t i = 0; i < elf.nprobes; i++) {
        const SdtProbe *p = &elf.probes[i];
        if (!is_stvm(p)) continue;
        bool known = false;
        for (size_t d = 0; d < NDOCUMENTED; d++) known |= !strcmp(p->name, documented[d].name);
        if (!known) fail_msg("stvm:%s is in %s but not in profiler/usdt.h's STVM_PROBE_LIST", p->name, binary);
    }
}

static void every_probe_has_one_semaphore_in_the_probes_section(void **state)
{
    (void)state;
    for (size_t i = 0; i < elf.nprobes; i++) {
        const SdtProbe *p = &elf.probes[i];
        if (!is_stvm(p)) continue;
        if (!p->semaphore) fail_msg("stvm:%s at %#llx has no semaphore", p->name, (unsigned long long)p->pc);
        const SdtSection *s = sdt_section_at(&elf, p->semaphore);
        if (!s || strcmp(s->name, ".probes"))
            fail_msg("stvm:%s's semaphore %#llx lies in %s, not .probes", p->name, (unsigned long long)p->semaphore,
                     s ? s->name : "no section");
        assert_int_equal(p->semaphore % 2, 0); /* a 16-bit counter */
        for (size_t j = 0; j < elf.nprobes; j++) {
            const SdtProbe *q = &elf.probes[j];
            if (!is_stvm(q)) continue;
            bool same_name = !strcmp(p->name, q->name);
            if (same_name != (p->semaphore == q->semaphore))
                fail_msg("stvm:%s and stvm:%s %s a semaphore", p->name, q->name, same_name ? "do not share" : "share");
        }
    }
}

/* The semaphore of the first note of probe name. */
static uint64_t semaphore_of(const char *name)
{
    for (size_t i = 0; i < elf.nprobes; i++)
        if (is_stvm(&elf.probes[i]) && !strcmp(elf.probes[i].name, name)) return elf.probes[i].semaphore;
    fail_msg("no note for stvm:%s", name);
    return 0;
}

static void the_method_semaphores_open_one_aligned_quadword(void **state)
{
    (void)state;
    uint64_t entry = semaphore_of("method__entry"), ret = semaphore_of("method__return");
    if (entry % 8 != 0 || ret != entry + 2)
        fail_msg("method__entry's semaphore is at %#llx and method__return's at %#llx: not the first two 16-bit "
                 "words of an aligned 64-bit word (profiler/usdt.c), which compiled prologues read at once",
                 (unsigned long long)entry, (unsigned long long)ret);
}

static void every_site_is_a_nop_in_executable_code(void **state)
{
    (void)state;
    FILE *f = fopen(binary, "rb");
    assert_non_null(f);
    for (size_t i = 0; i < elf.nprobes; i++) {
        const SdtProbe *p = &elf.probes[i];
        if (!is_stvm(p)) continue;
        const SdtSection *s = sdt_section_at(&elf, p->pc);
        if (!s || !s->exec || !s->offset)
            fail_msg("stvm:%s's site %#llx is not in executable code", p->name, (unsigned long long)p->pc);
        int byte = EOF;
        if (fseek(f, (long)(s->offset + (p->pc - s->addr)), SEEK_SET) == 0) byte = fgetc(f);
        if (byte != 0x90) fail_msg("stvm:%s's site %#llx holds %#x, not a nop (0x90)", p->name, (unsigned long long)p->pc, byte);
    }
    fclose(f);
}

#else

static void a_build_without_probes_has_no_stvm_notes(void **state)
{
    (void)state;
    for (size_t i = 0; i < elf.nprobes; i++)
        for (size_t d = 0; d < NDOCUMENTED; d++)
            if (!strcmp(elf.probes[i].name, documented[d].name))
                fail_msg("a probe named %s:%s is in %s, built without probes", elf.probes[i].provider,
                         elf.probes[i].name, binary);
    assert_int_equal(stvm_notes(), 0);
}

#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_probe_notes PATH-TO-STVM\n");
        return 2;
    }
    binary = argv[1];
    char err[512];
    if (!sdt_read(binary, &elf, err, sizeof err)) {
        fprintf(stderr, "test_probe_notes: %s\n", err);
        return 1;
    }
    printf("%s: %zu stvm probe sites, %zu notes in all\n", binary, stvm_notes(), elf.nprobes);
    const struct CMUnitTest tests[] = {
#if STVM_PROBES
        cmocka_unit_test(every_documented_probe_has_notes_with_its_argument_count),
        cmocka_unit_test(no_stvm_probe_is_undocumented),
        cmocka_unit_test(every_probe_has_one_semaphore_in_the_probes_section),
        cmocka_unit_test(the_method_semaphores_open_one_aligned_quadword),
        cmocka_unit_test(every_site_is_a_nop_in_executable_code),
#else
        cmocka_unit_test(a_build_without_probes_has_no_stvm_notes),
#endif
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    sdt_free(&elf);
    return rc;
}
