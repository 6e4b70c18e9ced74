/*
 * vmprofd/vmprofd_main.c — the vmprofd command: a subcommand (the table
 * below), else parse the command line and run one profiling session.
 * Everything else lives in session.c, serve.c, record.c and below.
 */
#include "vmprofd/options.h"
#include "vmprofd/record.h"
#include "vmprofd/serve.h"
#include "vmprofd/session.h"

#include <stdio.h>
#include <string.h>

#define VMPROFD_VERSION "0.1.0"

/* `vmprofd NAME ...`: argv from NAME on. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} subcommands[] = {
    {"serve", vmprofd_serve_main},
    {"record", vmprofd_record_main},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc > 1 && i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    VmprofdOptions o;
    char err[512];
    if (!vmprofd_options_parse(argc, argv, &o, err, sizeof err)) {
        fprintf(stderr, "vmprofd: %s\nTry 'vmprofd --help' for the options.\n", err);
        return 2;
    }
    if (o.help) {
        vmprofd_options_usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("vmprofd %s\n", VMPROFD_VERSION);
        return 0;
    }
    return vmprofd_session_run(&o);
}
