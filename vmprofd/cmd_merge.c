/*
 * vmprofd/cmd_merge.c — `vmprofd merge A B ... -o M.pb.gz`: the samples of
 * several profiles with the same sample types as one profile, as
 * `go tool pprof` would show them together.
 *
 * The profiles are concatenated, not re-interned: profile k's strings,
 * mappings, functions and locations keep their own entries, their indices
 * and ids moved past those of the profiles before it (each string table
 * starts with "", so index 0 of any of them still reads ""). pprof's
 * readers merge equal functions by name for display, so the output reads
 * like one profile; it is a little larger than a re-interned one.
 * Time: the earliest start; duration: the sum (what was profiled, not the
 * wall time spanned).
 */
#include "vmprofd/options.h"
#include "vmprofd/commands.h"
#include "vmprofd/pprof_read.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void merge_usage(FILE *out)
{
    fputs("usage: vmprofd merge PROFILE PROFILE... -o MERGED.pb.gz\n"
          "\n"
          "Writes one pprof profile holding the samples of all the PROFILEs (pprof\n"
          "files vmprofd wrote, gzipped or not): each function's samples add up, so\n"
          "several runs or several processes read as one. The profiles must have the\n"
          "same sample types (cpu with cpu, alloc with alloc).\n"
          "\n"
          "  -o, --output FILE   where to write it: gzipped, or plain profile.proto\n"
          "                      when FILE ends in .pb (required)\n"
          "  -h, --help          this text\n"
          "\n"
          "Exit status: 0 written, 1 a profile unreadable or not mergeable, or the\n"
          "output not writable, 2 bad usage.\n",
          out);
}

static uint64_t max_id(const PprofIdEntry *v, size_t n)
{
    return n ? v[n - 1].id : 0;
}

typedef struct Offsets {
    uint64_t string, mapping, location, function;
} Offsets;

/* Moves profile f's string indices and ids past o (pprof_read.h: all were
 * validated, so every index and id below is one of f's own). */
static void shift(PprofFile *f, const Offsets *o)
{
    Perftools__Profiles__Profile *m = f->m;
    int64_t so = (int64_t)o->string;
    for (size_t i = 0; i < m->n_mapping; i++) {
        m->mapping[i]->id += o->mapping;
        m->mapping[i]->filename += so;
        m->mapping[i]->build_id += so;
    }
    for (size_t i = 0; i < m->n_function; i++) {
        Perftools__Profiles__Function *fn = m->function[i];
        fn->id += o->function;
        fn->name += so;
        fn->system_name += so;
        fn->filename += so;
    }
    for (size_t i = 0; i < m->n_location; i++) {
        Perftools__Profiles__Location *l = m->location[i];
        l->id += o->location;
        if (l->mapping_id)
            l->mapping_id += o->mapping;
        for (size_t k = 0; k < l->n_line; k++)
            l->line[k]->function_id += o->function;
    }
    for (size_t i = 0; i < m->n_sample; i++) {
        Perftools__Profiles__Sample *s = m->sample[i];
        for (size_t k = 0; k < s->n_location_id; k++)
            s->location_id[k] += o->location;
        for (size_t k = 0; k < s->n_label; k++) {
            s->label[k]->key += so;
            s->label[k]->str += so;
            s->label[k]->num_unit += so;
        }
    }
    for (size_t i = 0; i < m->n_comment; i++)
        m->comment[i] += so;
}

static bool add_ok(uint64_t *acc, uint64_t n)
{
    return !__builtin_add_overflow(*acc, n, acc) && *acc <= INT64_MAX;
}

/* The pointer arrays of the inputs' repeated fields, end to end. */
#define CONCAT(field, count)                                                                                          \
    do {                                                                                                              \
        size_t total = 0;                                                                                             \
        for (size_t k = 0; k < n; k++)                                                                                \
            total += in[k].m->count;                                                                                  \
        out->field = calloc(total ? total : 1, sizeof *out->field);                                                  \
        if (!out->field)                                                                                              \
            return false;                                                                                             \
        for (size_t k = 0, at = 0; k < n; k++)                                                                        \
            for (size_t i = 0; i < in[k].m->count; i++)                                                               \
                out->field[at++] = in[k].m->field[i];                                                                 \
        out->count = total;                                                                                           \
    } while (0)

static bool concat(Perftools__Profiles__Profile *out, PprofFile *in, size_t n)
{
    CONCAT(string_table, n_string_table);
    CONCAT(mapping, n_mapping);
    CONCAT(function, n_function);
    CONCAT(location, n_location);
    CONCAT(sample, n_sample);
    CONCAT(comment, n_comment);
    return true;
}

static void concat_free(Perftools__Profiles__Profile *out)
{
    free(out->string_table);
    free(out->mapping);
    free(out->function);
    free(out->location);
    free(out->sample);
    free(out->comment);
}

/* One comment more: "merged by vmprofd from N profiles". */
static bool add_comment(Perftools__Profiles__Profile *out, char *text)
{
    char **st = realloc(out->string_table, (out->n_string_table + 1) * sizeof *st);
    if (!st)
        return false;
    out->string_table = st;
    st[out->n_string_table] = text;
    int64_t *c = realloc(out->comment, (out->n_comment + 1) * sizeof *c);
    if (!c)
        return false;
    out->comment = c;
    c[out->n_comment++] = (int64_t)out->n_string_table++;
    return true;
}

static int merge(char **paths, size_t n, const char *output)
{
    PprofFile *in = calloc(n, sizeof *in);
    if (!in) {
        fprintf(stderr, "vmprofd merge: out of memory\n");
        return 1;
    }
    int status = 1;
    char err[600];
    Perftools__Profiles__Profile out;
    perftools__profiles__profile__init(&out);
    char *note = NULL;
    uint8_t *packed = NULL;
    for (size_t k = 0; k < n; k++) {
        if (!vmprofd_pprof_read(paths[k], &in[k], err, sizeof err)) {
            fprintf(stderr, "vmprofd merge: %s\n", err);
            goto done;
        }
        if (!vmprofd_pprof_same_types(&in[0], &in[k])) {
            char a[256], b[256];
            vmprofd_pprof_types(&in[0], a, sizeof a);
            vmprofd_pprof_types(&in[k], b, sizeof b);
            fprintf(stderr,
                    "vmprofd merge: %s has sample types %s, %s has %s: only profiles of one kind merge (cpu with "
                    "cpu, alloc with alloc)\n",
                    paths[0], a, paths[k], b);
            goto done;
        }
    }
    Offsets o = {0};
    int64_t start = 0, duration = 0;
    for (size_t k = 0; k < n; k++) {
        Offsets next = o;
        if (!add_ok(&next.string, in[k].m->n_string_table) ||
            !add_ok(&next.mapping, max_id(in[k].mappings, in[k].nmappings)) ||
            !add_ok(&next.location, max_id(in[k].locations, in[k].nlocations)) ||
            !add_ok(&next.function, max_id(in[k].functions, in[k].nfunctions))) {
            fprintf(stderr, "vmprofd merge: %s: its ids are too large to merge with the profiles before it\n",
                    paths[k]);
            goto done;
        }
        shift(&in[k], &o);
        o = next;
        const Perftools__Profiles__Profile *m = in[k].m;
        if (m->time_nanos > 0 && (start == 0 || m->time_nanos < start))
            start = m->time_nanos;
        if (m->duration_nanos > 0 && __builtin_add_overflow(duration, m->duration_nanos, &duration))
            duration = INT64_MAX;
        if (m->period != in[0].m->period)
            fprintf(stderr, "vmprofd merge: note: %s was sampled with period %lld, %s with %lld: values add up as "
                            "they are\n",
                    paths[k], (long long)m->period, paths[0], (long long)in[0].m->period);
    }
    const Perftools__Profiles__Profile *first = in[0].m;
    out.n_sample_type = first->n_sample_type;
    out.sample_type = first->sample_type;
    out.period_type = first->period_type;
    out.period = first->period;
    out.default_sample_type = first->default_sample_type;
    out.drop_frames = first->drop_frames;
    out.keep_frames = first->keep_frames;
    out.time_nanos = start;
    out.duration_nanos = duration;
    size_t need = 64;
    for (size_t k = 0; k < n; k++)
        need += strlen(paths[k]) + 2;
    note = malloc(need);
    if (!note || !concat(&out, in, n)) {
        fprintf(stderr, "vmprofd merge: out of memory\n");
        goto done;
    }
    size_t at = (size_t)snprintf(note, need, "merged by vmprofd from %zu profiles:", n);
    for (size_t k = 0; k < n; k++)
        at += (size_t)snprintf(note + at, need - at, " %s", paths[k]);
    if (!add_comment(&out, note)) {
        fprintf(stderr, "vmprofd merge: out of memory\n");
        goto done;
    }
    size_t len = perftools__profiles__profile__get_packed_size(&out);
    packed = malloc(len ? len : 1);
    if (!packed) {
        fprintf(stderr, "vmprofd merge: out of memory (%zu bytes)\n", len);
        goto done;
    }
    perftools__profiles__profile__pack(&out, packed);
    size_t olen = strlen(output);
    bool plain = olen >= 3 && strcmp(output + olen - 3, ".pb") == 0;
    if (plain) {
        FILE *f = fopen(output, "wb");
        bool ok = f && fwrite(packed, 1, len, f) == len;
        if (f && fclose(f) != 0)
            ok = false;
        if (!ok) {
            fprintf(stderr, "vmprofd merge: cannot write %s\n", output);
            goto done;
        }
    } else if (!vmprofd_pprof_write_gzip(output, packed, len, err, sizeof err)) {
        fprintf(stderr, "vmprofd merge: %s\n", err);
        goto done;
    }
    status = 0;
done:
    free(packed);
    concat_free(&out);
    free(note);
    for (size_t k = 0; k < n; k++)
        vmprofd_pprof_free(&in[k]);
    free(in);
    return status;
}

int vmprofd_merge_main(int argc, char **argv)
{
    const char *output = NULL;
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t n = 0;
    bool only_files = false;
    int status = -1;
    for (int i = 1; i < argc && status < 0; i++) {
        const char *a = argv[i];
        if (only_files || a[0] != '-' || strcmp(a, "-") == 0) {
            paths[n++] = argv[i];
        } else if (strcmp(a, "--") == 0) {
            only_files = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            merge_usage(stdout);
            status = 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                status = vmprofd_options_usage_error("merge", "-o needs a file name", NULL);
            else
                output = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else {
            status = vmprofd_options_usage_error("merge", "unknown option ", a);
        }
    }
    if (status < 0) {
        if (n < 2)
            status = vmprofd_options_usage_error("merge", "give at least two profiles to merge", NULL);
        else if (!output || !*output)
            status = vmprofd_options_usage_error("merge", "say where to write the merged profile: -o MERGED.pb.gz", NULL);
        else
            status = merge(paths, n, output);
    }
    free(paths);
    return status;
}
