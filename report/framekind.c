/*
 * report/framekind.c — a frame's kind from its function (framekind.h).
 *
 * Names first, region second: "[unknown…]"/"[code zone…]", "[kernel]" and
 * "[off-CPU: …]" are pseudo-functions the resolver makes in any region, and an
 * interpreted method is named "Class>>sel (interpreted)" while its pc lies
 * in the VM's own interpret() (vanilla).
 */
#include "report/framekind.h"

#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

ReportFrameKind report_frame_kind(const ReportFunctionInfo *f)
{
    const char *n = f->name ? f->name : "";
    if (strncmp(n, "[unknown", 8) == 0 || strncmp(n, "[code zone", 10) == 0)
        return REPORT_FRAME_UNKNOWN;
    /* "[off-CPU: read]" (wall-clock samples): time the thread spent
     * waiting in the kernel */
    if (strcmp(n, "[kernel]") == 0 || strncmp(n, "[k]", 3) == 0 || strncmp(n, "[off-CPU", 8) == 0)
        return REPORT_FRAME_KERNEL;
    if (ends_with(n, " (interpreted)"))
        return REPORT_FRAME_INTERPRETED;
    if (f->region == REPORT_REGION_GENERATED) {
        /* PICs are named by their selector, which may itself hold ">>"
         * (">>> (closed PIC)"), so their suffix decides before the ">>" of
         * "Class>>sel" and "[] in Class>>sel"; trampolines ("ceSend…",
         * "ceReturnToInterpreter") have neither (vm/jit/jitpublish.c names them). */
        if (ends_with(n, " (closed PIC)") || ends_with(n, " (open PIC)"))
            return REPORT_FRAME_STUB;
        return strstr(n, ">>") ? REPORT_FRAME_JIT : REPORT_FRAME_STUB;
    }
    if (f->region == REPORT_REGION_VANILLA)
        return REPORT_FRAME_VM;
    return REPORT_FRAME_NATIVE;
}

const char *report_frame_kind_name(ReportFrameKind k)
{
    static const char *const names[REPORT_FRAME_KIND_COUNT] = {
        "JIT'd Smalltalk", "PIC / trampoline", "interpreted Smalltalk", "VM C code",
        "other native", "kernel", "unknown", "all",
    };
    return (unsigned)k < REPORT_FRAME_KIND_COUNT ? names[k] : "?";
}
