/* report/format.c — number formatting for the text report (see format.h). */
#include "report/format.h"

#include <stdio.h>
#include <string.h>

ReportNum report_format_pct(uint64_t part, uint64_t whole)
{
    ReportNum r;
    if (whole == 0) {
        snprintf(r.s, sizeof r.s, "%*s", REPORT_PCT_WIDTH, "0.00%");
        return r;
    }
    /* Integer arithmetic, so 1 of 3 prints 33.33% on every libc and a
     * share that rounds to 100.00 prints as exactly 100% does. 128 bits:
     * part * 20000 must not wrap for any 64-bit count. */
    unsigned __int128 hundredths = ((unsigned __int128)part * 20000u + whole) / ((unsigned __int128)whole * 2u);
    if (hundredths >= 10000) {
        snprintf(r.s, sizeof r.s, "100.0%%");
        return r;
    }
    unsigned h = (unsigned)hundredths;
    char tmp[16];
    snprintf(tmp, sizeof tmp, "%u.%02u%%", h / 100, h % 100);
    snprintf(r.s, sizeof r.s, "%*s", REPORT_PCT_WIDTH, tmp);
    return r;
}

ReportNum report_format_thousands(uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    ReportNum r;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            r.s[o++] = ',';
        r.s[o++] = digits[i];
    }
    r.s[o] = '\0';
    return r;
}

ReportNum report_format_signed(int64_t v)
{
    /* Magnitude in unsigned arithmetic: -INT64_MIN does not fit int64_t. */
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    ReportNum digits = report_format_thousands(mag);
    ReportNum r;
    r.s[0] = v < 0 ? '-' : '+';
    memcpy(r.s + 1, digits.s, strlen(digits.s) + 1);
    return r;
}
