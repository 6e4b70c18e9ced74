/*
 * report/mem.h — allocation for report/: every call either succeeds or
 * prints what failed and aborts.
 *
 * Why abort: the Profile API answers plain indices and has no error path
 * for "out of memory" in the middle of interning; a profiler that cannot
 * allocate a few kilobytes cannot write a report either. Callers therefore
 * never check these results.
 *
 * Who may call: report/ only.
 */
#ifndef REPORT_MEM_H
#define REPORT_MEM_H

#include <stddef.h>

void *report_mem_alloc(size_t bytes);                 /* zero-filled */
void *report_mem_array(size_t count, size_t elem);    /* zero-filled, overflow-checked */
char *report_mem_strdup(const char *s);               /* NULL stays NULL */
void *report_mem_dup(const void *p, size_t bytes);    /* NULL or 0 bytes answer NULL */

/* Grows *items (each elem bytes, *cap of them) so that at least need fit;
 * capacity doubles, so n appends cost O(n). */
void report_mem_reserve(void *items, size_t *cap, size_t need, size_t elem);

/* Prints that bytes could not be allocated and aborts: for allocators
 * that answer failure (report/addrtable.h) used where report/ cannot. */
_Noreturn void report_mem_fail(size_t bytes);

#endif
