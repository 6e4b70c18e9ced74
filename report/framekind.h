/*
 * report/framekind.h — what kind of code a frame is, for colouring and
 * grouping (the flame graph): one classification every renderer shares.
 *
 * Who may call: report/ renderers, tests.
 */
#ifndef REPORT_FRAMEKIND_H
#define REPORT_FRAMEKIND_H

#include "report/report.h"

typedef enum ReportFrameKind {
    REPORT_FRAME_JIT = 0,         /* a JIT'd Smalltalk method or block */
    REPORT_FRAME_STUB = 1,        /* PICs, trampolines, enilopmarts */
    REPORT_FRAME_INTERPRETED = 2, /* a Smalltalk method the interpreter runs */
    REPORT_FRAME_VM = 3,          /* the VM's own C code */
    REPORT_FRAME_NATIVE = 4,      /* other native code: libc, the loader, libraries */
    REPORT_FRAME_KERNEL = 5,
    REPORT_FRAME_UNKNOWN = 6,     /* "[unknown…]", "[code zone…]" */
    REPORT_FRAME_OTHER = 7,       /* the flame graph's root */
    REPORT_FRAME_KIND_COUNT
} ReportFrameKind;

ReportFrameKind report_frame_kind(const ReportFunctionInfo *f);
const char *report_frame_kind_name(ReportFrameKind k);

#endif
