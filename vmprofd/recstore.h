/*
 * vmprofd/recstore.h — the folder `vmprofd record --continuous` writes:
 * its layout, the atomic writing of one interval's profile, the sweep of
 * temporaries a killed recorder left, and the age and size limits.
 *
 *   DIR/                         --dir (shared by several hosts if wanted)
 *   └─ HOST/                     gethostname(); this recorder's only folder
 *      └─ PID-TICKS/             one per process: its pid and start time
 *         │                      (/proc/PID/stat field 22, clock ticks since
 *         │                      boot), so a reused pid gets a new folder
 *         ├─ 20261128T181500.000Z.pb.gz    one interval each, named by its
 *         └─ 20261128T181600.000Z.pb.gz    start (UTC, ms): sorted by name
 *                                          is sorted by time
 *
 * A profile is written to FINAL.tmp.<random> (report/safefile.h) and
 * renamed to its name with RENAME_NOREPLACE: a reader never sees half a
 * file, and no file is ever overwritten (a name that exists gets "-1",
 * "-2" … before ".pb.gz"). A recorder killed while writing leaves its
 * temporary: the next one removes every "*.pb.gz.tmp.XXXXXXXXXXXX" of its
 * host folder when it starts (its own user's; they are nobody else's).
 *
 * Limits (--keep-age, --keep-size) hold for the host folder: after each
 * write the oldest files (by modification time, i.e. by when their
 * interval ended) go first, until none is older than the age and their
 * bytes fit the size; a process folder left empty is removed with its last
 * file. The index of files is kept in memory, read once at open: files
 * added by others meanwhile count from the next start.
 *
 * Thread-safe: every call takes the store's lock (workers write in
 * parallel). Who may call: vmprofd/record.c, tests.
 */
#ifndef VMPROFD_RECSTORE_H
#define VMPROFD_RECSTORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef struct RecFile RecFile;

typedef struct RecStore {
    char host_dir[4096];  /* DIR/HOST */
    char host[256];
    double keep_age_s;    /* 0: no age limit */
    uint64_t keep_bytes;  /* 0: no size limit */
    pthread_mutex_t lock;
    RecFile *files;       /* oldest first, from head */
    size_t head, n, cap;
    uint64_t bytes;       /* of files[head .. n) */
    uint64_t removed;     /* files removed by the limits so far */
} RecStore;

/* Makes DIR/HOST (and DIR) when missing, removes the temporaries an
 * earlier recorder left (their count in *swept), reads the index and
 * applies the limits once. false with why in err. */
bool vmprofd_recstore_open(RecStore *s, const char *dir, double keep_age_s, uint64_t keep_bytes, size_t *swept,
                           char *err, size_t errlen);
void vmprofd_recstore_close(RecStore *s);

/* The folder of a process, made when missing: DIR/HOST/PID-TICKS. */
bool vmprofd_recstore_process_dir(RecStore *s, pid_t pid, uint64_t start_ticks, char *out, size_t outlen, char *err,
                                  size_t errlen);

/* Writes len bytes (a gzipped pprof) as the interval that started at
 * start (CLOCK_REALTIME) in process folder pdir, atomically, then applies
 * the limits. The final path in path (pathlen bytes). false with why. */
bool vmprofd_recstore_write(RecStore *s, const char *pdir, const struct timespec *start, const void *data, size_t len,
                            char *path, size_t pathlen, char *err, size_t errlen);

/* "20261128T181500.000Z" for t (UTC, ms), 21 bytes with the NUL. */
void vmprofd_recstore_stamp(const struct timespec *t, char out[24]);

#endif
