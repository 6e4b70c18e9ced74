/*
 * vmprofd/vmprofd_main.c — the vmprofd command: parse the command line,
 * run one profiling session. Everything else lives in session.c and below.
 */
#include "vmprofd/options.h"
#include "vmprofd/session.h"

#include <stdio.h>

#define VMPROFD_VERSION "0.1.0"

int main(int argc, char **argv)
{
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
