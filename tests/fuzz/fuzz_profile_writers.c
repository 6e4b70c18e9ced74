/*
 * tests/fuzz/fuzz_profile_writers.c — a Profile built from fuzzed
 * producer calls (report/profile.c), rendered by every writer: pprof
 * (report/pprof.c), folded stacks (report/folded.c), the text report
 * (report/text.c, callers.c) and the flame graph (report/flamegraph.c),
 * all into /dev/null.
 *
 * The input is a little program, one operation after another until the
 * bytes run out (a missing operand reads as zero):
 *
 *   op % 6 = 0  mapping   u64 start, limit, offset; str file; str build_id
 *            1  function  str name; str file; i32 start_line; u8 region;
 *                         u64 start, size; i8 mapping; u8 nmap, then nmap
 *                         (u32 mcpc, u32 bcpc); u32 last_bcpc; u8 nlines,
 *                         then nlines (u32 bcpc, u32 line)
 *            2  location  u32 function (taken as an i16); u64 address; i32 line
 *            3  sample    u64 time; u32 tid; u8 nframes, then nframes i16
 *                         location indices (leaf first)
 *            4  note      str
 *            5  header    str vm_path; str mode; str reason; f64 seconds,
 *                         hz; u64 lost; u32 start_wall; u8 have_counters,
 *                         then 2 × 240 bytes of counters
 *
 * str: u8 length (0xff: NULL), then that many bytes. Indices and regions
 * are passed as they come: the producer API must refuse or clamp what is
 * out of range (report/profile.h says which).
 * The last byte chooses the text report's options. The profile is then
 * also merged twice into another (report_profile_merge) and rendered.
 */
#include "tests/fuzz/fuzz.h"
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_STR 64

typedef struct FuzzIn {
    const uint8_t *p, *end;
} FuzzIn;

static void fuzz_take(FuzzIn *in, void *dst, size_t n)
{
    size_t have = (size_t)(in->end - in->p);
    if (have > n)
        have = n;
    memcpy(dst, in->p, have);
    memset((uint8_t *)dst + have, 0, n - have);
    in->p += have;
}

static uint8_t fuzz_u8(FuzzIn *in)
{
    uint8_t v;
    fuzz_take(in, &v, 1);
    return v;
}

static uint32_t fuzz_u32(FuzzIn *in)
{
    uint32_t v;
    fuzz_take(in, &v, 4);
    return v;
}

static uint64_t fuzz_u64(FuzzIn *in)
{
    uint64_t v;
    fuzz_take(in, &v, 8);
    return v;
}

/* A NUL-terminated copy in buf (FUZZ_MAX_STR + 1 bytes), or NULL. */
static const char *fuzz_str(FuzzIn *in, char *buf)
{
    uint8_t n = fuzz_u8(in);
    if (n == 0xff)
        return NULL;
    if (n > FUZZ_MAX_STR)
        n = FUZZ_MAX_STR;
    fuzz_take(in, buf, n);
    buf[n] = '\0';
    return buf;
}

static void fuzz_function(FuzzIn *in, Profile *p)
{
    char name[FUZZ_MAX_STR + 1], file[FUZZ_MAX_STR + 1];
    ReportFunctionInfo f = {0};
    f.name = fuzz_str(in, name);
    f.file = fuzz_str(in, file);
    f.start_line = (int32_t)fuzz_u32(in);
    f.region = (ReportRegion)fuzz_u8(in);
    f.start = fuzz_u64(in);
    f.size = fuzz_u64(in);
    f.mapping = (int8_t)fuzz_u8(in);
    ReportMapEntry map[255];
    f.nmap = fuzz_u8(in);
    for (size_t i = 0; i < f.nmap; i++) {
        map[i].mcpc = fuzz_u32(in);
        map[i].bcpc = fuzz_u32(in);
    }
    f.map = f.nmap ? map : NULL;
    f.last_bcpc = fuzz_u32(in);
    ReportLineEntry lines[255];
    f.nlines = fuzz_u8(in);
    for (size_t i = 0; i < f.nlines; i++) {
        lines[i].bcpc = fuzz_u32(in);
        lines[i].line = fuzz_u32(in);
    }
    f.lines = f.nlines ? lines : NULL;
    report_profile_add_function(p, &f);
}

static void fuzz_header(FuzzIn *in, Profile *p)
{
    char path[FUZZ_MAX_STR + 1], mode[FUZZ_MAX_STR + 1], reason[FUZZ_MAX_STR + 1];
    ReportHeader h = {0};
    h.vm_path = fuzz_str(in, path);
    h.mode = fuzz_str(in, mode);
    h.mode_reason = fuzz_str(in, reason);
    fuzz_take(in, &h.seconds, sizeof h.seconds);
    fuzz_take(in, &h.requested_hz, sizeof h.requested_hz);
    h.lost_samples = fuzz_u64(in);
    h.start_wall = (time_t)(fuzz_u32(in) % 4000000000u);
    h.have_counters = fuzz_u8(in) & 1;
    if (h.have_counters) {
        fuzz_take(in, &h.start, sizeof h.start);
        fuzz_take(in, &h.end, sizeof h.end);
    }
    report_profile_set_header(p, &h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    FuzzIn in = {data, data + (size ? size - 1 : 0)};
    uint8_t options = size ? data[size - 1] : 0;
    Profile *p = report_profile_new();
    char a[FUZZ_MAX_STR + 1], b[FUZZ_MAX_STR + 1];
    while (in.p < in.end) {
        switch (fuzz_u8(&in) % 6) {
        case 0: {
            ReportMappingInfo m;
            m.start = fuzz_u64(&in);
            m.limit = fuzz_u64(&in);
            m.offset = fuzz_u64(&in);
            m.file = fuzz_str(&in, a);
            m.build_id = fuzz_str(&in, b);
            report_profile_add_mapping(p, &m);
            break;
        }
        case 1:
            fuzz_function(&in, p);
            break;
        case 2: {
            int function = (int16_t)fuzz_u32(&in);
            uint64_t address = fuzz_u64(&in);
            report_profile_add_location(p, function, address, (int32_t)fuzz_u32(&in));
            break;
        }
        case 3: {
            uint64_t time = fuzz_u64(&in);
            uint32_t tid = fuzz_u32(&in);
            int frames[255];
            size_t n = fuzz_u8(&in);
            for (size_t i = 0; i < n; i++)
                frames[i] = (int16_t)(fuzz_u8(&in) | fuzz_u8(&in) << 8);
            if (n)
                report_profile_add_sample(p, time, tid, frames, n);
            break;
        }
        case 4:
            if (fuzz_str(&in, a))
                report_profile_add_note(p, "%s", a);
            break;
        case 5:
            fuzz_header(&in, p);
            break;
        }
    }
    char err[256];
    report_write_pprof("/dev/null", p, err, sizeof err);
    report_write_folded(sink, p, err, sizeof err);
    ReportTextOptions opt = {.lines = options & 1, .range_min_samples = (options >> 1) & 15, .callers = options & 32};
    report_write_text(sink, p, &opt, err, sizeof err);
    report_write_flamegraph(sink, p, NULL, err, sizeof err);
    /* the same profile merged twice, as two processes (report/combine.c,
     * vmprofd serve): its samples labelled pid and cmd in pprof */
    Profile *m = report_profile_new();
    report_profile_merge(m, p, 1, "stvm one");
    report_profile_merge(m, p, 2, NULL);
    if (report_profile_sample_count(m) != 2 * report_profile_sample_count(p))
        __builtin_trap(); /* every stored sample is valid in its copy too */
    report_write_pprof("/dev/null", m, err, sizeof err);
    report_write_text(sink, m, &opt, err, sizeof err);
    report_profile_free(m);
    report_profile_free(p);
    return 0;
}
