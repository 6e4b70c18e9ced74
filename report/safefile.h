/*
 * report/safefile.h — creating a file in a folder other users may write to
 * (/tmp, /dev/shm, a shared working directory) without letting them
 * redirect, read or plant it.
 *
 * The trap it closes: a user who can write to the folder creates the name
 * first — a symlink to a victim file, or a file of their own — at a name
 * another process will use (perf's /tmp/perf-PID.map for a pid that comes
 * round again). Opening with O_CREAT | O_TRUNC then truncates the victim,
 * or writes our data into a file its planter reads and writes.
 *
 * The rules (issue 22):
 *   - create with O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC: a name that
 *     exists, link or not, is never opened;
 *   - an entry in the way that belongs to us (our effective uid) and that
 *     the caller says is stale (REPORT_SAFEFILE_REPLACE_OWN: a pid-named
 *     file whose pid is ours was left by an earlier process with our pid)
 *     is removed — the entry itself, a symlink is not followed — and the
 *     creation tried again;
 *   - an entry of another user is left alone: REPORT_SAFEFILE_FOREIGN, with
 *     a message naming the path and its owner; the caller runs on without
 *     that output and never writes into it;
 *   - the created file is checked with fstat: a regular file, owned by us,
 *     one link, no mode bit beyond those asked for.
 *
 * report_safefile_temp creates a fresh temporary beside a final path
 * ("PATH.tmp.XXXXXXXXXXXX", random), under the same rules, for a write that
 * ends with rename(2) over PATH: its name cannot be guessed, so it cannot
 * be planted (mkstemp would do the same but always with mode 0600).
 *
 * Who may call: anyone that creates a file where others can write: the
 * VM's perf map and jitdump (profiler/), its snapshot (vm/boot/snapshot.c),
 * vmprofd's outputs. Thread-safe (no state).
 */
#ifndef REPORT_SAFEFILE_H
#define REPORT_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* opts of report_safefile_create */
#define REPORT_SAFEFILE_REPLACE_OWN 1u /* an entry of ours at path is stale: remove it */

/* The answer when another user's entry is in the way (an fd is >= 0). */
#define REPORT_SAFEFILE_FOREIGN (-2)

/* Creates path with access flags (O_WRONLY or O_RDWR, plus O_APPEND if
 * wanted) and mode (less the umask). Answers the open fd; -1 with a
 * message in err when it cannot (errno kept); REPORT_SAFEFILE_FOREIGN with
 * "PATH belongs to uid N (name)…" in err when another user's file or link
 * holds the name. */
int report_safefile_create(const char *path, int flags, mode_t mode, unsigned opts, char *err, size_t errlen);

/* Creates a new temporary for final ("FINAL.tmp." and 12 random hex
 * digits) under the rules above and writes its name to tmp (tmplen bytes);
 * the same answers as report_safefile_create. The caller renames it over
 * final or unlinks it. */
int report_safefile_temp(const char *final, int flags, mode_t mode, char *tmp, size_t tmplen, char *err,
                         size_t errlen);

#endif
