/*
 * gc/scavenge.h — the young-generation collector.
 *
 * A Cheney scavenge of eden and the current survivor space into the other
 * survivor space. Roots are the client's roots plus the remembered set.
 * An object that has survived GC_TENURE_AGE scavenges, or that no longer
 * fits the survivor space, is tenured (copied to old space) instead.
 * Afterwards eden is empty, the survivor spaces have swapped roles and the
 * remembered set holds exactly the old objects that still point young.
 *
 * Precondition: the remembered set is complete (no overflow) and old space
 * has at least eden + survivor bytes free — gc/collect.c runs a full GC
 * instead when either fails.
 *
 * Who may call: gc/collect.c.
 */
#ifndef GC_SCAVENGE_H
#define GC_SCAVENGE_H

void gc_scavenge_run(void);

#endif
