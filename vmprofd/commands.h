/*
 * vmprofd/commands.h — vmprofd's subcommands: `vmprofd NAME ARGS...` runs
 * the command NAME instead of a profiling session (vmprofd_main.c holds
 * the table; a new command is one entry there and its own file here).
 *
 * Each gets argv from its own name on (argv[0] = "diff") and returns the
 * process's exit status as vmprofd does: 0 ok, 1 failure, 2 bad usage.
 *
 * Who may call: vmprofd_main.c, tests.
 */
#ifndef VMPROFD_COMMANDS_H
#define VMPROFD_COMMANDS_H

/* vmprofd diff BASE NEW: per method and bytecode range (cmd_diff.c) */
int vmprofd_diff_main(int argc, char **argv);
/* vmprofd merge A B ... -o M: one profile of the samples of all (cmd_merge.c) */
int vmprofd_merge_main(int argc, char **argv);

#endif
