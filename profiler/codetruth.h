/*
 * profiler/codetruth.h — a test mode: every code event, with the time the
 * export's log gives it, written as a line of text to a file, independently
 * of the shared-memory ring (stvm --code-log-truth FILE). Tests compare a
 * profiler's resolutions against it.
 *
 *   L <time_ns> <space> <start hex> <size> <kind> <name…>      a load
 *   M <time_ns> <from hex> <to hex> <size>                      a move
 *   F <time_ns> <start hex> <size>                              a free
 *   R <start hex> <end hex> <name…>     after an L: a range of code inlined
 *                                       into it (offsets from the piece's
 *                                       start), the innermost method there
 *
 * space and kind are the numbers of ProfCodeSpace and ProfCodeKind
 * (proto/export.h); the name runs to the end of the line. Lines are in
 * event order; the code alive when the file opens comes first, as loads.
 *
 * Who may call: vm/boot/boot.c. Single thread: the VM thread.
 */
#ifndef PROFILER_CODETRUTH_H
#define PROFILER_CODETRUTH_H

#include <stdbool.h>
#include <stddef.h>

/* Creates path and registers the sink; false with a reason. */
bool prof_code_truth_open(const char *path, char *err, size_t errlen);

#endif
