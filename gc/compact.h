/*
 * gc/compact.h — the full collector: mark, then slide old space down and
 * tenure every live young object behind it.
 *
 *   1. empty the remembered set (a full GC needs none);
 *   2. mark everything reachable, young and old (gc/mark.c);
 *   3. compute forwarding addresses from the bitmap: old objects slide
 *      down in address order from old_start, live young objects follow
 *      them (eden first, then the survivor space), also in address order;
 *   4. rewrite every root and every pointer slot of every live object,
 *      and the weak table's entries (gc/weak.h: dropped when unmarked);
 *   5. slide the old objects, then copy the young ones.
 *
 * Afterwards young space is empty, the remembered set is empty and old
 * space holds exactly the live objects, in their old relative order — so
 * the first objects ever allocated in old space (nil, true, false) never
 * move. It needs no headroom: it fails only when the live data alone does
 * not fit old space, which it reports as out of memory and exits.
 *
 * Who may call: gc/collect.c.
 */
#ifndef GC_COMPACT_H
#define GC_COMPACT_H

void gc_compact_run(void);

#endif
