/* report/mem.c — allocation that never answers NULL (see mem.h for why). */
#include "report/mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void report_mem_fail(size_t bytes)
{
    fprintf(stderr, "report: out of memory allocating %zu bytes\n", bytes);
    abort();
}

void *report_mem_alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p)
        report_mem_fail(bytes);
    return p;
}

void *report_mem_array(size_t count, size_t elem)
{
    if (elem && count > SIZE_MAX / elem)
        report_mem_fail(SIZE_MAX);
    return report_mem_alloc(count * elem);
}

char *report_mem_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = report_mem_alloc(n);
    memcpy(d, s, n);
    return d;
}

void *report_mem_dup(const void *p, size_t bytes)
{
    if (!p || bytes == 0)
        return NULL;
    void *d = report_mem_alloc(bytes);
    memcpy(d, p, bytes);
    return d;
}

void report_mem_reserve(void *items, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 16; /* 16: most tables in a small profile never grow */
    while (n < need) {
        if (n > SIZE_MAX / 2)
            report_mem_fail(SIZE_MAX);
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem)
        report_mem_fail(SIZE_MAX);
    void **slot = items;
    void *p = realloc(*slot, n * elem);
    if (!p)
        report_mem_fail(n * elem);
    memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
    *slot = p;
    *cap = n;
}
