/*
 * gc/state.c — the one definition of the heap's shared state (gc/space.h,
 * gc/heap.h).
 *
 * Its own file because every collector file reads it: defined in heap.c,
 * remember.c's use of it made heap.c and remember.c call into each other
 * (heap.c allocates and remembers old objects; remember.c reads the
 * spaces and counts overflows), a circle at the level of symbols that the
 * include rule of scripts/check-layers cannot see. Here, both call down.
 */
#include "gc/space.h"

GcSpace gc_space;
GcStats gc_stats;
uintptr_t gc_old_start;
volatile bool gc_collect_wanted;
uintptr_t gc_eden_top;
uintptr_t gc_eden_soft_limit;
