/*
 * report/texthead.c — the head of every text report: the CPU report
 * (text.c) and the allocation report (alloctext.c) both start with it, and
 * text.c hands an allocation profile to alloctext.c, so it lives below both.
 */
#include "report/format.h"
#include "report/profile.h"

#include <stdio.h>
#include <time.h>

/* The lines every text report starts with (profile.h): the VM and the
 * date, the warnings, the VM's sizes. */
void report_text_head(FILE *out, const Profile *p)
{
    const ReportHeader *h = &p->header;
    char when[32] = "(date unknown)";
    struct tm tm;
    if (localtime_r(&h->start_wall, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(out, "%s %s\n", h->vm_path ? h->vm_path : "[unknown VM]", when);
    for (size_t i = 0; i < p->nwarnings; i++)
        fprintf(out, "warning: %s\n", p->warnings[i]);
    if (h->native_only)
        ; /* no VM: no VM sizes to show */
    else if (h->have_counters)
        fprintf(out, "eden size: %s  stack pages: %s  code size: %s\n", report_format_thousands(h->start.eden_bytes).s,
                report_format_thousands(h->start.stack_pages).s, report_format_thousands(h->start.code_bytes).s);
    else
        fprintf(out, "eden size, stack pages, code size: not available (the target publishes no counters)\n");
}
