/*
 * gc/remember.h — the remembered set ("root table"): old objects that may
 * hold pointers to young ones.
 *
 * Invariants between collections:
 *   - an object is in the set iff its header has OBJ_GC_REMEMBERED;
 *   - unless remembered_overflowed, every old object holding a young
 *     pointer is in the set (the write barrier, gc_store, keeps it so).
 * The set has a fixed capacity (GcConfig.remembered_capacity). When it is
 * full, the next object is not recorded: the set is then incomplete, so
 * remembered_overflows counts the event, gc_collect_wanted is raised and
 * gc_collect(false) runs a full GC, which needs no remembered set and
 * empties it (a full GC leaves young space empty).
 *
 * Who may call: gc/ only (gc_remember itself is public, in heap.h).
 */
#ifndef GC_REMEMBER_H
#define GC_REMEMBER_H

/* Empties the set and clears every member's OBJ_GC_REMEMBERED bit. */
void gc_remember_reset(void);

#endif
