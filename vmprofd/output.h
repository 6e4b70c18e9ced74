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

/* Writes each output; a failure is printed ("vmprofd: cannot write
 * out.txt: No space left on device") and the others are still written.
 * Answers false when any failed. Tells on stderr where each file went
 * unless quiet. */
bool vmprofd_output_write_all(const VmprofdOptions *o, const Profile *p);

#endif
