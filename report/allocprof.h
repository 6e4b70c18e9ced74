/*
 * report/allocprof.h — an allocation profile from the VM's sampled
 * allocations (report/alloclog_reader.h): every sample's whole stack is
 * resolved as a CPU sample's is (report/resolve.h, against the code as it
 * was at the sample's time), the object's class becomes its leaf frame
 * ("[Array]", kind REPORT_FUNCTION_CLASS), and it weighs the bytes it
 * stands for, with its estimated objects and, when the VM answered a LIVE
 * request, what of it is still alive (report.h, "Allocation profiles").
 *
 * The entry point takes the records and a code timeline, not a vmprofd
 * session, so stvm's in-VM profiler can build the same profile.
 *
 * Who may call: vmprofd/, stvm's in-VM profiler, tests.
 */
#ifndef REPORT_ALLOCPROF_H
#define REPORT_ALLOCPROF_H

#include "report/alloclog_reader.h"
#include "report/report.h"
#include "report/resolve.h"

/* Adds log's samples to p and makes p an allocation profile: interval (the
 * VM's, else interval_asked when it never started), the VM's counted bytes,
 * what was lost (report_profile_set_alloc). live: --live asked for what
 * stays alive (log->have_live says whether the VM answered). sym and code
 * as for report_resolve_samples. */
void report_alloc_build(Profile *p, const ReportAllocLog *log, bool live, uint64_t interval_asked, Symbolizer *sym,
                        ResolveCode *code);

/* The estimate of everything allocated while sampled: the samples'
 * weights added up. */
uint64_t report_alloc_estimated_bytes(const ReportAllocLog *log);

#endif
