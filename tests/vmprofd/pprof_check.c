/*
 * tests/vmprofd/pprof_check.c — decodes a pprof file vmprofd wrote
 * (gzip + profile.proto, through protoc-c's unpacker) and checks it.
 *
 *   pprof_check FILE FUNCTION...
 *
 * Checks that the profile is well formed (string indices, mapping,
 * location and function ids all resolve; sample values match the sample
 * types; there are samples) and that each FUNCTION is the leaf of some
 * samples and is exactly one Function (a method moved by code compaction
 * too). Prints every leaf function with its share of the samples
 * ("  leaf light  712  25.31%") and each FUNCTION's file and first line
 * ("  function light file ratio.c line 40"), for the calling test to
 * judge, and exits 0 when all checks pass, 1 otherwise.
 */
#include "proto/profile.pb-c.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int failures;

#define CHECK(cond, ...)                                                                                                \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("pprof_check: FAILED: " __VA_ARGS__);                                                                \
            printf("\n");                                                                                              \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static uint8_t *gunzip(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    int r;
    while (buf && (r = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)r;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    gzclose(f);
    *len = n;
    return buf;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
    return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : NULL;
}

static const Perftools__Profiles__Location *location(const Perftools__Profiles__Profile *p, uint64_t id)
{
    for (size_t i = 0; i < p->n_location; i++)
        if (p->location[i]->id == id)
            return p->location[i];
    return NULL;
}

static const Perftools__Profiles__Function *function(const Perftools__Profiles__Profile *p, uint64_t id)
{
    for (size_t i = 0; i < p->n_function; i++)
        if (p->function[i]->id == id)
            return p->function[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pprof_check FILE FUNCTION...\n");
        return 2;
    }
    size_t len = 0;
    uint8_t *bytes = gunzip(argv[1], &len);
    if (!bytes || len == 0) {
        printf("pprof_check: FAILED: %s is not a readable gzip file\n", argv[1]);
        return 1;
    }
    Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, len, bytes);
    free(bytes);
    if (!p) {
        printf("pprof_check: FAILED: %s does not decode as profile.proto\n", argv[1]);
        return 1;
    }
    CHECK(p->n_string_table > 0 && strcmp(p->string_table[0], "") == 0, "string_table[0] must be \"\"");
    CHECK(p->n_sample_type >= 1, "no sample types");
    for (size_t i = 0; i < p->n_sample_type; i++) {
        CHECK(str(p, p->sample_type[i]->type) && str(p, p->sample_type[i]->unit), "sample type %zu has bad strings", i);
        if (str(p, p->sample_type[i]->type) && str(p, p->sample_type[i]->unit))
            printf("  sample_type %s/%s\n", str(p, p->sample_type[i]->type), str(p, p->sample_type[i]->unit));
    }
    CHECK(p->n_mapping >= 1, "no mappings");
    for (size_t i = 0; i < p->n_mapping; i++)
        CHECK(str(p, p->mapping[i]->filename) != NULL, "mapping %zu has a bad filename index", i);
    for (size_t i = 0; i < p->n_function; i++)
        CHECK(str(p, p->function[i]->name) != NULL, "function %zu has a bad name index", i);

    /* Leaf function -> sample count (value[0] is "samples/count"). */
    enum { MAX_LEAVES = 4096 };
    static const char *names[MAX_LEAVES];
    static int64_t counts[MAX_LEAVES];
    size_t nleaves = 0;
    int64_t total = 0;
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        CHECK(s->n_value == p->n_sample_type, "sample %zu has %zu values for %zu types", i, s->n_value,
              p->n_sample_type);
        CHECK(s->n_location_id >= 1, "sample %zu has no locations", i);
        if (s->n_value == 0 || s->n_location_id == 0)
            continue;
        for (size_t k = 0; k < s->n_location_id; k++) {
            const Perftools__Profiles__Location *l = location(p, s->location_id[k]);
            CHECK(l != NULL, "sample %zu names location %llu, which does not exist", i,
                  (unsigned long long)s->location_id[k]);
            if (l && l->mapping_id)
                CHECK(l->mapping_id <= p->n_mapping, "location %llu names mapping %llu of %zu",
                      (unsigned long long)l->id, (unsigned long long)l->mapping_id, p->n_mapping);
            for (size_t j = 0; l && j < l->n_line; j++)
                CHECK(function(p, l->line[j]->function_id) != NULL, "location %llu names a missing function",
                      (unsigned long long)l->id);
        }
        const Perftools__Profiles__Location *leaf = location(p, s->location_id[0]);
        const Perftools__Profiles__Function *f =
            leaf && leaf->n_line > 0 ? function(p, leaf->line[0]->function_id) : NULL;
        const char *name = f ? str(p, f->name) : "(no function)";
        if (!name)
            name = "(bad name)";
        total += s->value[0];
        size_t k = 0;
        while (k < nleaves && strcmp(names[k], name) != 0)
            k++;
        if (k == nleaves && nleaves < MAX_LEAVES)
            names[nleaves++] = name;
        if (k < MAX_LEAVES)
            counts[k] += s->value[0];
    }
    CHECK(total > 0, "the profile has no samples");
    printf("pprof_check: %lld samples, %zu mappings, %zu functions, %zu locations\n", (long long)total, p->n_mapping,
           p->n_function, p->n_location);
    for (size_t k = 0; k < nleaves; k++) {
        double pct = total ? 100.0 * (double)counts[k] / (double)total : 0;
        if (pct >= 0.5)
            printf("  leaf %-40s %6lld  %6.2f%%\n", names[k], (long long)counts[k], pct);
    }
    for (int a = 2; a < argc; a++) {
        bool found = false;
        for (size_t k = 0; k < nleaves; k++)
            found |= strcmp(names[k], argv[a]) == 0;
        CHECK(found, "function %s is not the leaf of any sample", argv[a]);
        size_t copies = 0;
        const Perftools__Profiles__Function *only = NULL;
        for (size_t i = 0; i < p->n_function; i++) {
            const char *n = str(p, p->function[i]->name);
            if (n && strcmp(n, argv[a]) == 0) {
                copies++;
                only = p->function[i];
            }
        }
        CHECK(copies == 1, "function %s is %zu Functions, not one", argv[a], copies);
        if (only) {
            const char *file = str(p, only->filename);
            printf("  function %s file %s line %lld\n", argv[a], file && file[0] ? file : "-",
                   (long long)only->start_line);
        }
    }
    perftools__profiles__profile__free_unpacked(p, NULL);
    if (failures == 0)
        printf("pprof_check: ok\n");
    return failures ? 1 : 0;
}
