/*
 * tests/fuzz/fuzz_codelog.c — the replay of the export's code event log
 * (report/codelog_reader.c) into a code map (report/codemap.c), then lookups in
 * the map.
 *
 * The input is up to FUZZ_CODELOG_MAX_POLLS snapshots of the log region,
 * separated by FUZZ_CODELOG_SEPARATOR: the reader opens on the first and
 * polls once per snapshot, its read function serving the snapshot of that
 * poll, so the writer may move on (or corrupt things) between polls as
 * the VM does. The region is as big as the first control block says
 * (ring_offset + ring_size, up to 2 MiB) or as the snapshot if larger;
 * bytes past a snapshot read as zeros, so a seed needs only the bytes the
 * writer wrote and a 64 KiB ring is no 64 KiB input.
 *
 * After the polls, the map resolves addresses taken from the last
 * snapshot's bytes, at times spread over what the log said.
 */
#include "tests/fuzz/fuzz.h"
#include "report/codelog_reader.h"
#include "report/codemap.h"

#include <string.h>

#define FUZZ_CODELOG_MAX_POLLS 4
#define FUZZ_CODELOG_SEPARATOR "\nPOLL!!\n"
#define FUZZ_CODELOG_MAX_REGION (2u << 20)

typedef struct FuzzRegion {
    const uint8_t *bytes;
    size_t len;       /* of this snapshot */
    uint64_t size;    /* of the region */
} FuzzRegion;

static bool fuzz_read(void *ctx, uint64_t offset, void *buf, size_t len)
{
    const FuzzRegion *r = ctx;
    if (offset > r->size || len > r->size - offset)
        return false; /* the contract: never past region_size */
    uint8_t *out = buf;
    size_t have = offset < r->len ? r->len - (size_t)offset : 0;
    if (have > len)
        have = len;
    if (have)
        memcpy(out, r->bytes + offset, have);
    memset(out + have, 0, len - have);
    return true;
}

/* Finds needle in [p, p + n) without memmem (not C17). */
static const uint8_t *fuzz_find(const uint8_t *p, size_t n, const char *needle, size_t k)
{
    for (size_t i = 0; n >= k && i <= n - k; i++)
        if (p[i] == (uint8_t)needle[0] && memcmp(p + i, needle, k) == 0)
            return p + i;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const size_t seplen = sizeof FUZZ_CODELOG_SEPARATOR - 1;
    const uint8_t *snap[FUZZ_CODELOG_MAX_POLLS];
    size_t snaplen[FUZZ_CODELOG_MAX_POLLS];
    int nsnap = 0;
    const uint8_t *p = data, *end = data + size;
    while (nsnap < FUZZ_CODELOG_MAX_POLLS) {
        const uint8_t *sep = fuzz_find(p, (size_t)(end - p), FUZZ_CODELOG_SEPARATOR, seplen);
        snap[nsnap] = p;
        snaplen[nsnap++] = sep ? (size_t)(sep - p) : (size_t)(end - p);
        if (!sep)
            break;
        p = sep + seplen;
    }

    FuzzRegion region = {snap[0], snaplen[0], snaplen[0]};
    if (snaplen[0] >= sizeof(ProfCodeLogControl)) {
        ProfCodeLogControl c;
        memcpy(&c, snap[0], sizeof c);
        if (c.ring_offset <= FUZZ_CODELOG_MAX_REGION && c.ring_size <= FUZZ_CODELOG_MAX_REGION - c.ring_offset &&
            c.ring_offset + c.ring_size > region.size)
            region.size = c.ring_offset + c.ring_size;
    }
    ReportCodeLog log;
    char msg[512];
    if (!report_codelog_open(&log, region.size, fuzz_read, &region, msg, sizeof msg)) {
        report_codelog_close(&log);
        return 0;
    }
    ReportCodeMap *map = report_codemap_new();
    for (int i = 0; i < nsnap; i++) {
        region.bytes = snap[i];
        region.len = snaplen[i];
        report_codelog_poll(&log, map, msg, sizeof msg);
    }
    /* addresses: 8-byte words of the last snapshot (starts of pieces are
     * in its LOAD records), at the times of the last good record and
     * around it */
    const uint8_t *last = snap[nsnap - 1];
    size_t lastlen = snaplen[nsnap - 1];
    uint64_t times[] = {0, log.last_time / 2, log.last_time, log.last_time + 1, UINT64_MAX};
    for (size_t off = 0; off + 8 <= lastlen && off < 1024; off += 8) {
        uint64_t addr;
        memcpy(&addr, last + off, sizeof addr);
        for (size_t t = 0; t < sizeof times / sizeof times[0]; t++) {
            for (int space = 0; space < PROF_CODE_SPACE_COUNT; space++) {
                ReportCodeHit hit;
                if (report_codemap_resolve(map, times[t], addr, (ProfCodeSpace)space, &hit) == REPORT_CODE_FOUND) {
                    report_codemap_last_bcpc(hit.piece);
                    report_codemap_first_line(hit.piece);
                    ReportInlineFrame chain[REPORT_INLINE_MAX_DEPTH];
                    if (space == PROF_CODE_SPACE_MACHINE)
                        report_codemap_inline_chain(hit.piece, addr - hit.start, chain, REPORT_INLINE_MAX_DEPTH);
                }
            }
        }
    }
    report_codemap_stats(map);
    report_codemap_span_count(map);
    report_codemap_free(map);
    report_codelog_close(&log);
    return 0;
}
