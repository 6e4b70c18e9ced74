/*
 * profiler/perfmap.h — the perf map: a text file naming the VM's machine
 * code for perf (perf report, perf top, perf script), which reads
 * /tmp/perf-PID.map for addresses of PID that no mapped file explains.
 *
 * The format (perf's tools/perf/Documentation/jit-interface.txt): one line
 * per piece of code,
 *
 *     START SIZE name
 *
 * START and SIZE in hexadecimal without 0x, the name the rest of the line.
 * This sink writes, for each piece the JIT loads (methods, blocks, PICs,
 * trampolines; not bytecodes, which the CPU never runs), the range of its
 * instructions — the first instruction after the 48-byte JitMethod header
 * up to the map that follows the code — and the code event's name:
 *
 *     561bd7d00190 71 ceSend
 *     561bd7d011f0 d9 RichardsPacket class>>link:identity:kind:
 *     561bd7d02180 6f new (closed PIC)
 *
 * A piece holding methods the JIT inlined (profiler/codeevents.h) is
 * written as consecutive, non-overlapping lines, in address order: its own
 * method's parts and, for each inlined range, "B>>sel (inlined into
 * A>>sel)" (the innermost method there). The format is flat and perf keeps
 * one line for an address when lines overlap, without saying which, so
 * nested lines (A over the whole piece, B inside) would name either; cut
 * in parts, every address has exactly one name, and perf report's rows
 * match the text report's "inlined into" rows:
 *
 *     561bd7d03000 40 Bench>>outer
 *     561bd7d03040 22 Bench>>inner (inlined into Bench>>outer)
 *     561bd7d03062 31 Bench>>outer
 *
 * Invariants and limits:
 *   - Append-only: the format has no way to retract a line. A piece that
 *     compaction moves gets a second line at its new address; the line at
 *     the old address stays, and so do the lines of freed code. When later
 *     code reuses an address, the file holds two names for it and perf
 *     keeps one of them without knowing which is current. The jitdump
 *     (profiler/jitdump.h) is the accurate record: it has timestamps and
 *     move records. Use the map for a quick look or for runs without
 *     compaction (a zone large enough: --code-size).
 *   - Each line is written with one write(2) as its event happens, so perf
 *     top sees code while the VM runs and a crash loses no line.
 *
 * Who may call: vm/main.c (open, then prof_code_sink_add and
 * prof_code_replay with the sink it answers); tests. Single thread.
 */
#ifndef PROFILER_PERFMAP_H
#define PROFILER_PERFMAP_H

#include "profiler/codeevents.h"

#include <stddef.h>

/* perf's own path for a process's map */
#define PROF_PERFMAP_PATH_FMT "/tmp/perf-%d.map"

/* Creates the map at `path`, or at /tmp/perf-PID.map when path is NULL, and
 * answers the sink to register; the file is closed at exit. A file or link
 * of ours at that path is stale and replaced; one of another user is left
 * alone (report/safefile.h): a warning on stderr, and the sink answered
 * writes nothing (prof_perfmap_path answers ""). NULL with a message in err
 * when the file cannot be created. Opening again closes the previous map
 * first. */
const ProfCodeSink *prof_perfmap_open(const char *path, char *err, size_t errlen);
/* Closes the map (also registered with atexit); the sink then ignores events. */
void prof_perfmap_close(void);
/* The map's path, "" when none is open. */
const char *prof_perfmap_path(void);

#endif
