/*
 * gc/weak.h — a table of weak references the collector keeps current.
 *
 * Each entry is (object, tag). The table follows its objects through every
 * move and forgets them when they die, without ever keeping one alive: it is
 * never visited as roots. The allocation profiler (issue 23) puts its
 * sampled objects here so that `--live` can answer, after a full GC, which
 * of them are still alive.
 *
 *   - a scavenge updates each entry whose object was young to its copy
 *     (survivor space or tenured), or removes it when the object was not
 *     copied (dead); old entries are untouched (old objects die only in a
 *     full GC);
 *   - a full GC removes each entry whose object is unmarked and updates
 *     the others to their address after compaction (all of them old, since
 *     a full GC tenures every live young object).
 *
 * Entries are kept in two arrays, young and old, so a scavenge looks at the
 * young entries only: a collection costs time proportional to the entries
 * it may have to change, an allocation nothing. Memory grows on demand (up
 * to GC_WEAK_CAPACITY entries) in gc_weak_add only, so a collection never
 * allocates: the old array always has room for every entry.
 *
 * Who may call: the public part, anyone outside a collection (never from a
 * GcClient hook or an allocation observer that runs during one);
 * the gc/-internal part, gc/scavenge.c, gc/compact.c, gc/verify.c and
 * gc/heap.c.
 */
#ifndef GC_WEAK_H
#define GC_WEAK_H

#include "gc/object.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1M entries (16 MiB at most): the profiler samples one allocation per
 * 512 KiB, so the table fills only after 512 GiB allocated with every sample
 * still alive; it is the profiler's to say what it dropped. */
#define GC_WEAK_CAPACITY ((size_t)1 << 20)

/* Follow obj (a heap object, young or old), remembered with tag; anything
 * else (an immediate, 0, an address outside the heap) is a caller's bug and
 * panics, as does a call during a collection. False
 * when the table holds GC_WEAK_CAPACITY entries (or memory for it ran
 * out); the object is then not followed. The same object may be added
 * more than once (each entry is followed on its own). */
bool gc_weak_add(Oop obj, uint64_t tag);

/* Calls fn for every followed object still alive, with its current
 * address, in no particular order. fn must not allocate, collect or change
 * the table. */
void gc_weak_each(void (*fn)(uint64_t tag, Oop obj, void *ctx), void *ctx);

/* Entries in the table (each one alive as of the last collection). */
size_t gc_weak_count(void);

/* Forgets every entry and gives back the table's memory. */
void gc_weak_clear(void);

/* -- gc/-internal ------------------------------------------------------- */

/* End of a scavenge, before from-space is reused: young entries follow
 * their forwarding pointers (FORWARDED header, new address in slot 0) or
 * are dropped. */
void gc_weak_scavenged(void);

/* Full GC, after marking and planning, while the mark bitmap and the
 * forwarding addresses are still valid (before the bits are cleared):
 * entries whose object is unmarked are dropped, the others get
 * forward(obj). */
void gc_weak_compacting(bool (*marked)(Oop obj), Oop (*forward)(Oop obj));

/* For gc_verify: NULL if every entry satisfies is_object(obj) (the start of
 * an object in a used region) and sits in the array of its generation;
 * otherwise why not, with the entry's object in *bad. */
const char *gc_weak_check(bool (*is_object)(Oop obj, void *ctx), void *ctx, Oop *bad);

#endif
