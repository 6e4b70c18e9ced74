/*
 * gc/remember.c — the remembered set. See gc/remember.h.
 */
#include "gc/remember.h"

#include "gc/space.h"

void gc_remember(Oop obj)
{
    GcSpace *s = &gc_space;
    if (!oop_is_ptr(obj) || !gc_is_old(obj) || (obj_header(obj) & OBJ_GC_REMEMBERED))
        return;
    if (s->remembered_count == s->remembered_capacity) {
        if (!s->remembered_overflowed) {
            s->remembered_overflowed = true;
            gc_stats.remembered_overflows++;
        }
        gc_collect_wanted = true;
        return;
    }
    s->remembered[s->remembered_count++] = obj;
    *obj_header_ptr(obj) |= OBJ_GC_REMEMBERED;
}

void gc_remember_reset(void)
{
    GcSpace *s = &gc_space;
    for (size_t i = 0; i < s->remembered_count; i++)
        *obj_header_ptr(s->remembered[i]) &= ~OBJ_GC_REMEMBERED;
    s->remembered_count = 0;
    s->remembered_overflowed = false;
}

size_t gc_remembered_count(void) { return gc_space.remembered_count; }
