/*
 * vmprofd/output.h — writing a finished Profile to every output the
 * command line asked for (options.h): text, pprof, folded, flame graph;
 * files or stdout.
 *
 * Who may call: vmprofd/session.c.
 */
#ifndef VMPROFD_OUTPUT_H
#define VMPROFD_OUTPUT_H

#include "report/report.h"
#include "vmprofd/options.h"

/* Before sampling: every output can be written (its folder exists and
 * takes new files, it is not a folder). Prints what is wrong with each one
 * that cannot; false then. */
bool vmprofd_output_check_all(const VmprofdOptions *o);

/* Writes the file outputs (files) and the one on stdout (to_stdout); a
 * regular file whole or not at all (a temporary file beside it, renamed
 * over it). A failure is printed ("vmprofd: cannot write … : No space left
 * on device") and the others are still written. Answers false when any
 * failed. Tells on stderr where each file went unless quiet. */
bool vmprofd_output_write_all(const VmprofdOptions *o, const Profile *p, bool files, bool to_stdout);

#endif
