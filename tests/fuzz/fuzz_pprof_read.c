/*
 * tests/fuzz/fuzz_pprof_read.c — the pprof reader of `vmprofd diff` and
 * `vmprofd merge` (vmprofd/pprof_read.c) on any bytes, gzipped or not;
 * and, when they parse, both commands on them end to end: the input
 * diffed against itself into a table and a differential flame graph,
 * merged with itself, and the merged profile read back, which must parse
 * (merge writes only valid profiles).
 *
 * The commands read files, so an input that parses goes to a private
 * temporary directory, removed before the harness returns.
 */
#include "tests/fuzz/fuzz.h"
#include "vmprofd/commands.h"
#include "vmprofd/pprof_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every accessor on every id the profile names: pprof_read.h promises
 * they resolve after a successful parse. */
static void walk(const PprofFile *f)
{
    const Perftools__Profiles__Profile *m = f->m;
    for (size_t i = 0; i < m->n_sample; i++) {
        const Perftools__Profiles__Sample *s = m->sample[i];
        for (size_t k = 0; k < s->n_location_id; k++) {
            const Perftools__Profiles__Location *l = vmprofd_pprof_location(f, s->location_id[k]);
            if (!l)
                abort();
            for (size_t j = 0; j < l->n_line; j++)
                if (!vmprofd_pprof_function(f, l->line[j]->function_id))
                    abort();
        }
        for (size_t k = 0; k < s->n_label; k++)
            (void)strlen(vmprofd_pprof_string(f, s->label[k]->str));
    }
    char types[256];
    vmprofd_pprof_types(f, types, sizeof types);
}

static void run(char *const *argv, int argc, int (*cmd)(int, char **))
{
    cmd(argc, (char **)argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[600];
    PprofFile f;
    if (!vmprofd_pprof_parse(data, size, &f, err, sizeof err))
        return 0;
    walk(&f);
    vmprofd_pprof_free(&f);

    char dir[] = "/tmp/fuzz_pprof.XXXXXX";
    if (!mkdtemp(dir))
        return 0;
    char in[64], txt[64], svg[64], merged[64];
    snprintf(in, sizeof in, "%s/in.pb", dir);
    snprintf(txt, sizeof txt, "%s/d.txt", dir);
    snprintf(svg, sizeof svg, "%s/d.svg", dir);
    snprintf(merged, sizeof merged, "%s/m.pb.gz", dir);
    FILE *out = fopen(in, "wb");
    if (out) {
        fwrite(data, 1, size, out);
        fclose(out);
        char *diff[] = {"diff", in, in, "-o", txt, "-o", svg, NULL};
        run(diff, 7, vmprofd_diff_main);
        char *index[] = {"diff", "--sample-index", "samples", in, in, "-o", txt, NULL};
        run(index, 7, vmprofd_diff_main);
        char *merge[] = {"merge", in, in, "-o", merged, NULL};
        if (vmprofd_merge_main(5, merge) == 0) {
            if (!vmprofd_pprof_read(merged, &f, err, sizeof err)) {
                fprintf(stderr, "merge wrote a profile its reader refuses: %s\n", err);
                abort();
            }
            walk(&f);
            vmprofd_pprof_free(&f);
        }
    }
    unlink(in);
    unlink(txt);
    unlink(svg);
    unlink(merged);
    rmdir(dir);
    return 0;
}
