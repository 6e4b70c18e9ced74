/*
 * vmprofd/pprof_read.h — reads a pprof profile (profile.proto, gzipped or
 * not) back, for `vmprofd diff` and `vmprofd merge` (cmd_diff.c,
 * cmd_merge.c).
 *
 * A profile is validated once, here, so its users may trust it:
 *
 *   - string_table[0] is "" and every string index in the message is in
 *     the table (sample types, period type, default type, mappings,
 *     functions, labels, comments, drop/keep frames);
 *   - at least one sample type; every sample has one value per type;
 *   - mapping, location and function ids are non-zero and unique; every
 *     sample's location ids, every location's mapping id (or 0) and every
 *     line's function id name one that exists;
 *   - some location has a line, i.e. the profile is symbolized, as
 *     vmprofd's are: an unsymbolized one (addresses only) is refused.
 *
 * Input that is not gzip, not a profile, truncated or larger than
 * VMPROFD_PPROF_MAX_BYTES unpacked is refused with a message, never a
 * crash (tests/fuzz/fuzz_pprof_read.c).
 *
 * vmprofd's own profiles (report/pprof.c) label each sample whose leaf is
 * a Smalltalk method with its bytecode range, key "bytecodes", value
 * "FROM->TO" as the text report prints ranges; an allocation sample
 * carries its allocating method as "site" and that method's range.
 *
 * Who may call: vmprofd/ (the diff and merge commands), tests.
 */
#ifndef VMPROFD_PPROF_READ_H
#define VMPROFD_PPROF_READ_H

#include "proto/profile.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 1 GiB unpacked: far above any profile vmprofd writes (a 10-minute
 * Richards run is a few MB), low enough that a gzip bomb fails cleanly. */
#define VMPROFD_PPROF_MAX_BYTES (1u << 30)

/* The sample labels naming the leaf's (or the allocating method's)
 * bytecode range, and an allocation sample's allocating method
 * (report/pprof.c). */
#define VMPROFD_PPROF_RANGE_LABEL "bytecodes"
#define VMPROFD_PPROF_SITE_LABEL "site"

typedef struct PprofIdEntry {
    uint64_t id;
    size_t index; /* into the message's array */
} PprofIdEntry;

typedef struct PprofFile {
    Perftools__Profiles__Profile *m;
    PprofIdEntry *locations, *functions, *mappings; /* sorted by id */
    size_t nlocations, nfunctions, nmappings;
} PprofFile;

/* Unpacks data (gzip or plain profile.proto). false: err says why. */
bool vmprofd_pprof_parse(const uint8_t *data, size_t n, PprofFile *out, char *err, size_t errlen);
/* Reads and parses a file ("-" is not special); err names the file. */
bool vmprofd_pprof_read(const char *path, PprofFile *out, char *err, size_t errlen);
void vmprofd_pprof_free(PprofFile *f);

/* A string by (validated) index. */
const char *vmprofd_pprof_string(const PprofFile *f, int64_t i);
const Perftools__Profiles__Location *vmprofd_pprof_location(const PprofFile *f, uint64_t id);
const Perftools__Profiles__Function *vmprofd_pprof_function(const PprofFile *f, uint64_t id);
/* The index of the sample type named type ("cpu", "alloc_space"), or -1. */
int vmprofd_pprof_value_index(const PprofFile *f, const char *type);
/* "samples/count, cpu/nanoseconds" into buf. */
void vmprofd_pprof_types(const PprofFile *f, char *buf, size_t len);
/* Whether a and b have the same sample types, in the same order. */
bool vmprofd_pprof_same_types(const PprofFile *a, const PprofFile *b);

/* Gzips data into path (created, or truncated). */
bool vmprofd_pprof_write_gzip(const char *path, const uint8_t *data, size_t n, char *err, size_t errlen);

#endif
