/*
 * vmprofd/vmprofd_main.c — the vmprofd command: a subcommand when the first
 * argument names one (the table below), else parse the command line and
 * run one profiling session. Everything else lives in session.c, the
 * commands' own files (commands.h, serve.c, record.c) and below.
 */
#include "vmprofd/commands.h"
#include "vmprofd/options.h"
#include "vmprofd/record.h"
#include "vmprofd/serve.h"
#include "vmprofd/session.h"
#include "vmprofd/target.h"

#include <stdio.h>
#include <string.h>

#define VMPROFD_VERSION "0.1.0"

typedef struct Command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *args, *summary; /* one line of --help */
} Command;

static const Command commands[] = {
    {"diff", vmprofd_diff_main, "BASE NEW", "changes by method and bytecode range"},
    {"merge", vmprofd_merge_main, "A B ... -o M.pb.gz", "the samples of several profiles in one"},
    {"serve", vmprofd_serve_main, "[--listen ADDR]", "pprof over HTTP for the host's stvms"},
    {"record", vmprofd_record_main, "--continuous --dir D", "every stvm profiled, a file per interval"},
};

static void usage(FILE *out)
{
    vmprofd_options_usage(out);
    fputs("\nCommands (vmprofd COMMAND --help for each):\n", out);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  vmprofd %-6s %-20s %s\n", commands[i].name, commands[i].args, commands[i].summary);
}

int main(int argc, char **argv)
{
    vmprofd_target_raise_fd_limit();
    if (argc > 1)
        for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
            if (strcmp(argv[1], commands[i].name) == 0)
                return commands[i].run(argc - 1, argv + 1);

    VmprofdOptions o;
    char err[512];
    if (!vmprofd_options_parse(argc, argv, &o, err, sizeof err)) {
        fprintf(stderr, "vmprofd: %s\nTry 'vmprofd --help' for the options.\n", err);
        return 2;
    }
    if (o.help) {
        usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("vmprofd %s\n", VMPROFD_VERSION);
        return 0;
    }
    return vmprofd_session_run(&o);
}
