/*
 * profiler/publish.c — creating and updating stvm's export segment.
 */
#define _GNU_SOURCE
#include "profiler/publish.h"

#include "gc/heap.h"
#include "profiler/allocsampler.h"
#include "profiler/codelog_writer.h"
#include "proto/identity.h"

#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static ProfCounters private_counters;
static ProfCounters *counters = &private_counters;
static ProfExportHeader *header;
static size_t segment_size;
static char shm_name[64];
static char shm_path[PROF_EXPORT_PATH_MAX];
static ProfCodeLog code_log;
static ProfWalkFacts walk_facts;
static bool have_walk_facts;
static ProfCodeSink code_log_sink;
static bool code_log_open;

/* The segment's start, then the log region page-aligned after the counters. */
#define LOG_ALIGN 4096u

static void warn_stderr(const char *msg) { fprintf(stderr, "stvm: warning: %s\n", msg); }

static void open_code_log(const ProfPublishInit *init, char *err, size_t errlen)
{
    uint64_t ring = init->code_log_bytes ? init->code_log_bytes : PROF_CODE_LOG_DEFAULT_RING;
    char why[256];
    if (!prof_codelog_init(&code_log, (char *)header + header->code_log_offset, header->code_log_size, ring,
                           init->code_zone_start, init->code_zone_end, why, sizeof why)) {
        if (err) snprintf(err, errlen, "no code event log in the profiler export: %s", why);
        header->code_log_offset = header->code_log_size = 0;
        return;
    }
    code_log.warn = warn_stderr;
    prof_codelog_sink(&code_log, &code_log_sink);
    if (!prof_code_sink_add(&code_log_sink)) {
        if (err) snprintf(err, errlen, "no code event log in the profiler export: too many code event sinks");
        header->code_log_offset = header->code_log_size = 0;
        return;
    }
    code_log_open = true;
    /* The first checkpoint: whatever code exists already (the trampolines),
     * replayed by the VM; its loads carry the replay's time. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    prof_codelog_checkpoint_begin(&code_log, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    prof_code_replay(&code_log_sink);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    prof_codelog_checkpoint_end(&code_log, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

static void unlink_at_exit(void) { prof_publish_close(); }

/* Creates the segment's object, new and ours, and answers its descriptor;
 * -1 with a warning in err when another user's file is in the way or the
 * object cannot be made. shm_open adds O_NOFOLLOW; O_EXCL makes a new
 * object, so no reader can still map an old one under this name, and a
 * file planted by another user is never written into. A file of our own
 * user with our pid is stale (its maker had our pid and is gone): removed. */
static int create_segment(char *err, size_t errlen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = shm_open(shm_name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0) {
            struct stat st;
            /* what we asked for: a plain file of ours, mode 0600, one name */
            if (fchmod(fd, 0600) == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                (st.st_mode & 07777) == 0600 && st.st_nlink == 1)
                return fd;
            close(fd);
            shm_unlink(shm_name);
            if (err) snprintf(err, errlen, "the profiler export %s is not the private file stvm made; not used "
                              "(profilers will see native symbols only)", shm_path);
            return -1;
        }
        if (errno != EEXIST) break;
        struct stat st;
        if (lstat(shm_path, &st) != 0) continue; /* gone meanwhile: try again */
        if (st.st_uid != geteuid()) {
            struct passwd *pw = getpwuid(st.st_uid);
            if (err) snprintf(err, errlen, "%s (%s) belongs to user %s (uid %u), not to us: no profiler export; "
                              "profilers will see native symbols only (remove it as that user or root)",
                              shm_path, S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISREG(st.st_mode) ? "a file" : "not a file",
                              pw ? pw->pw_name : "?", (unsigned)st.st_uid);
            return -1;
        }
        /* ours and named for our pid: an earlier process's, stale */
        shm_unlink(shm_name);
    }
    if (err) snprintf(err, errlen, "cannot create the profiler export %s: %s (profilers will see native symbols only)",
                      shm_path, strerror(errno));
    return -1;
}

/* A VM ended by a signal must not leave its segment behind: unlink, then
 * die of the same signal (SIGKILL cannot be caught; profilers check that
 * the pid is alive). */
static void unlink_on_signal(int sig)
{
    if (shm_name[0]) shm_unlink(shm_name);
    signal(sig, SIG_DFL);
    raise(sig);
}

ProfCounters *prof_publish_open(const ProfPublishInit *init, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    counters = &private_counters;
    if (init->walk) {
        walk_facts = *init->walk;
        have_walk_facts = true;
    }
    if (init->enabled) {
        pid_t pid = getpid();
        snprintf(shm_name, sizeof shm_name, PROF_EXPORT_NAME_FMT, (int)pid);
        snprintf(shm_path, sizeof shm_path, PROF_EXPORT_PATH_FMT, (int)pid);
        long page = sysconf(_SC_PAGESIZE);
        uint64_t ring = init->code_log_bytes ? init->code_log_bytes : PROF_CODE_LOG_DEFAULT_RING;
        size_t walk_offset = (sizeof(ProfExportHeader) + sizeof(ProfCounters) + 63) / 64 * 64;
        size_t log_offset = (walk_offset + sizeof(ProfWalkFacts) + LOG_ALIGN - 1) / LOG_ALIGN * LOG_ALIGN;
        size_t code_end = log_offset + prof_codelog_region_bytes(ring);
        uint64_t alloc_ring = init->alloc_log_bytes ? init->alloc_log_bytes : PROF_ALLOC_LOG_DEFAULT_RING;
        size_t alloc_offset = init->no_alloc_log ? 0 : (code_end + LOG_ALIGN - 1) / LOG_ALIGN * LOG_ALIGN;
        size_t need = alloc_offset ? alloc_offset + prof_alloclog_region_bytes(alloc_ring) : code_end;
        segment_size = (need + (size_t)page - 1) / (size_t)page * (size_t)page;
        prof_segment_sweep(0); /* dead VMs' segments: SIGKILL leaves them */
        int fd = create_segment(err, errlen);
        void *mem = MAP_FAILED;
        /* a file size limit (ulimit -f) under the segment's size is EFBIG
         * here, and no export, not a death by SIGXFSZ */
        struct sigaction ignore, old_xfsz;
        memset(&ignore, 0, sizeof ignore);
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGXFSZ, &ignore, &old_xfsz);
        if (fd >= 0 && ftruncate(fd, (off_t)segment_size) == 0)
            mem = mmap(NULL, segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int saved = errno;
        sigaction(SIGXFSZ, &old_xfsz, NULL);
        if (fd >= 0) close(fd);
        if (mem == MAP_FAILED) {
            if (fd >= 0) {
                shm_unlink(shm_name);
                if (err) snprintf(err, errlen, "cannot create the profiler export %s: %s (profilers will see native symbols only)",
                                  shm_path, strerror(saved));
            }
            shm_name[0] = 0;
        } else {
            header = mem;
            /* a fresh object reads as zeros; clearing the ring would only make its pages resident */
            memset(header, 0, log_offset);
            header->version = PROF_EXPORT_VERSION;
            header->header_size = sizeof(ProfExportHeader);
            header->segment_size = segment_size;
            header->pid = (int32_t)pid;
            header->vm_tid = (int32_t)gettid();
            header->start_monotonic_ns = init->start_monotonic_ns;
            ProfIdentity me;
            if (prof_identity_of(0, &me)) {
                header->start_ticks = me.start_ticks;
                memcpy(header->boot_id, me.boot_id, sizeof header->boot_id);
            }
            header->counters_offset = sizeof(ProfExportHeader);
            header->counters_size = sizeof(ProfCounters);
            header->code_log_offset = log_offset;
            header->code_log_size = (alloc_offset ? alloc_offset : segment_size) - log_offset;
            header->code_zone_start = init->code_zone_start;
            header->code_zone_end = init->code_zone_end;
            if (init->walk) {
                memcpy((char *)mem + walk_offset, init->walk, sizeof(ProfWalkFacts));
                header->walk_offset = walk_offset;
                header->walk_size = sizeof(ProfWalkFacts);
            }
            ssize_t n = readlink("/proc/self/exe", header->vm_path, sizeof header->vm_path - 1);
            header->vm_path[n > 0 ? n : 0] = 0;
            counters = (ProfCounters *)((char *)mem + header->counters_offset);
            open_code_log(init, err, errlen);
            if (alloc_offset) {
                header->alloc_log_offset = alloc_offset;
                header->alloc_log_size = segment_size - alloc_offset;
                char why[256];
                if (!prof_allocsampler_open_export((char *)mem + alloc_offset, segment_size - alloc_offset, alloc_ring,
                                                   why, sizeof why)) {
                    if (err && !err[0]) snprintf(err, errlen, "no allocation sample log in the profiler export: %s", why);
                    header->alloc_log_offset = header->alloc_log_size = 0;
                }
            }
            if (!header->alloc_log_offset) prof_allocsampler_no_export();
            atexit(unlink_at_exit);
            /* every end the VM can see: SIGPIPE is `stvm … | head -1`, SIGABRT a failed assertion */
            static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGABRT};
            for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
                struct sigaction sa;
                memset(&sa, 0, sizeof sa);
                sa.sa_handler = unlink_on_signal;
                sigemptyset(&sa.sa_mask);
                struct sigaction old;
                /* keep a handler (or SIG_IGN) someone else installed */
                if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) sigaction(sigs[i], &sa, NULL);
            }
        }
    }
    if (!header) prof_allocsampler_no_export();
    counters->eden_bytes = init->eden_bytes;
    counters->stack_pages = init->stack_pages;
    counters->code_bytes = init->code_bytes;
    prof_publish_gc();
    if (header) {
        /* the magic last: a reader that sees it sees a complete header */
        __atomic_store_n(&header->magic, PROF_EXPORT_MAGIC, __ATOMIC_RELEASE);
    }
    return counters;
}

void prof_publish_gc(void)
{
    ProfCounters *c = counters;
    __atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    c->old_bytes = gc_old_used_bytes();
    c->old_free_bytes = gc_old_free_bytes();
    c->scavenges = gc_stats.scavenges;
    c->scavenge_usecs = gc_stats.scavenge_usecs;
    c->full_gcs = gc_stats.full_gcs;
    c->full_usecs = gc_stats.full_usecs;
    c->tenures = gc_stats.tenures;
    c->objects_tenured = gc_stats.objects_tenured;
    c->root_table_overflows = gc_stats.remembered_overflows;
    c->bytes_allocated = gc_stats.bytes_allocated;
    c->bytes_freed = gc_stats.bytes_freed;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
}

void prof_publish_read_counters(ProfCounters *out)
{
    prof_publish_gc(); /* the old space's sizes now, not as of the last collection */
    *out = *counters;
}

const ProfWalkFacts *prof_publish_walk_facts(void) { return have_walk_facts ? &walk_facts : NULL; }

void prof_publish_interp_ip(const void *interp_fn, unsigned perf_reg)
{
    if (code_log_open) prof_codelog_set_interp(&code_log, (uint64_t)(uintptr_t)interp_fn, perf_reg);
}

void prof_publish_close(void)
{
    /* Unlink only: the VM may still count into the mapping until exit. */
    if (!header || !shm_name[0]) return;
    shm_unlink(shm_name);
    shm_name[0] = 0;
}
