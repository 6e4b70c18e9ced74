/*
 * report/index.h — an open-addressing hash index from keys to item
 * numbers, the interning behind Profile (mappings, functions, locations)
 * and the renderers (strings, stacks, rows).
 *
 * The index stores only (hash, item) pairs; the items live in the
 * caller's own array and the caller's eq() decides equality. So one index
 * type serves every table, and growing it never touches the items.
 *
 * Invariants: capacity is a power of two and at most 3/4 full (linear
 * probing stays short); item numbers are >= 0; there is no deletion.
 *
 * Who may call: report/ only.
 */
#ifndef REPORT_INDEX_H
#define REPORT_INDEX_H

#include "base/hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ReportIndexSlot {
    uint64_t hash;
    int item; /* -1: empty */
} ReportIndexSlot;

typedef struct ReportIndex {
    ReportIndexSlot *slots;
    size_t cap;   /* power of two, or 0 before the first insert */
    size_t count;
} ReportIndex;

/* Answers whether item (an index into the caller's array) equals the key in ctx. */
typedef bool (*ReportIndexEq)(const void *ctx, int item);

void report_index_free(ReportIndex *ix);
/* base_fnv1a (base/hash.h) of s and its NUL, continuing from h; NULL
 * hashes like "" plus a marker. */
uint64_t report_index_hash_str(uint64_t h, const char *s);
/* The item whose hash is hash and for which eq(ctx, item) holds, or -1. */
int report_index_find(const ReportIndex *ix, uint64_t hash, ReportIndexEq eq, const void *ctx);
/* Adds item under hash; the caller has checked it is not present. */
void report_index_insert(ReportIndex *ix, uint64_t hash, int item);

#endif
