/*
 * vmprofd/pprof_read.c — a pprof profile read back and validated
 * (pprof_read.h says what holds after a successful parse).
 */
#include "vmprofd/pprof_read.h"

#include "base/error.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* -- gunzip --------------------------------------------------------------- */

static bool is_gzip(const uint8_t *d, size_t n)
{
    return n >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

/* The whole gzip stream (members one after another, as gzip -c a b makes)
 * into *out (malloc'd). */
static bool gunzip(const uint8_t *in, size_t n, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    if (n > UINT_MAX)
        return base_error(err, errlen, "compressed profile too large (%zu bytes)", n);
    z_stream z = {0};
    /* 15 + 16: gzip only (the caller checked the magic) */
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return base_error(err, errlen, "zlib inflateInit2 failed");
    size_t cap = n * 4 + 4096, len = 0;
    if (cap > VMPROFD_PPROF_MAX_BYTES)
        cap = VMPROFD_PPROF_MAX_BYTES;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        inflateEnd(&z);
        return base_error(err, errlen, "out of memory");
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    for (;;) {
        if (len == cap) {
            if (cap >= VMPROFD_PPROF_MAX_BYTES) {
                free(buf);
                inflateEnd(&z);
                return base_error(err, errlen, "more than %u MiB when unpacked: not a profile vmprofd wrote",
                            VMPROFD_PPROF_MAX_BYTES >> 20);
            }
            size_t ncap = cap * 2 > VMPROFD_PPROF_MAX_BYTES ? VMPROFD_PPROF_MAX_BYTES : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                inflateEnd(&z);
                return base_error(err, errlen, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        z.next_out = buf + len;
        z.avail_out = (uInt)(cap - len);
        int rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
        if (rc == Z_STREAM_END) {
            if (z.avail_in == 0)
                break;
            /* another gzip member follows */
            if (inflateReset(&z) != Z_OK)
                break;
            continue;
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR && z.avail_in == 0) {
            free(buf);
            inflateEnd(&z);
            return base_error(err, errlen, "truncated gzip data");
        }
        if (rc != Z_BUF_ERROR) {
            free(buf);
            const char *why = z.msg ? z.msg : zError(rc);
            char msg[128];
            snprintf(msg, sizeof msg, "%s", why);
            inflateEnd(&z);
            return base_error(err, errlen, "corrupt gzip data (%s)", msg);
        }
    }
    inflateEnd(&z);
    *out = buf;
    *outlen = len;
    return true;
}

/* -- Validation ----------------------------------------------------------- */

static int cmp_id(const void *a, const void *b)
{
    const PprofIdEntry *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* ids[i] = {id of item i, i}, sorted; false on a zero or repeated id. */
static bool index_ids(PprofIdEntry **out, const uint64_t *ids, size_t n, const char *what, char *err, size_t errlen)
{
    PprofIdEntry *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return base_error(err, errlen, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = (PprofIdEntry){ids[i], i};
    qsort(v, n, sizeof *v, cmp_id);
    for (size_t i = 0; i < n; i++) {
        if (v[i].id == 0 || (i > 0 && v[i].id == v[i - 1].id)) {
            uint64_t id = v[i].id;
            free(v);
            return base_error(err, errlen, "not a valid profile: %s id %llu %s", what, (unsigned long long)id,
                        id == 0 ? "(ids start at 1)" : "appears twice");
        }
    }
    *out = v;
    return true;
}

static const PprofIdEntry *find_id(const PprofIdEntry *v, size_t n, uint64_t id)
{
    PprofIdEntry key = {id, 0};
    return n ? bsearch(&key, v, n, sizeof *v, cmp_id) : NULL;
}

static bool str_ok(const Perftools__Profiles__Profile *m, int64_t i)
{
    return i >= 0 && (uint64_t)i < m->n_string_table;
}

#define CHECK_STR(i, what)                                                                                            \
    do {                                                                                                              \
        if (!str_ok(m, (i)))                                                                                          \
            return base_error(err, errlen, "not a valid profile: %s names string %lld of %zu", (what), (long long)(i),     \
                        m->n_string_table);                                                                           \
    } while (0)

/* Field number 0 does not exist in protobuf, but protobuf-c keeps one
 * written with an overlong tag as an unknown field, and packs it again
 * with a short tag it then refuses to read (found by fuzz_pprof_read's
 * merge): refused here, in every message of the profile. */
static bool unknown_fields_ok(const ProtobufCMessage *m)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0)
            return false;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *base = (const char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (!unknown_fields_ok(v[k]))
                    return false;
        } else {
            const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)(base + f->offset);
            if (sub && !unknown_fields_ok(sub))
                return false;
        }
    }
    return true;
}

static bool validate_strings(const Perftools__Profiles__Profile *m, char *err, size_t errlen)
{
    if (m->n_string_table == 0 || m->string_table[0][0] != '\0')
        return base_error(err, errlen, "not a valid profile: its string table does not start with \"\"");
    if (m->n_sample_type == 0)
        return base_error(err, errlen, "not a profile: it has no sample types");
    for (size_t i = 0; i < m->n_sample_type; i++) {
        CHECK_STR(m->sample_type[i]->type, "a sample type");
        CHECK_STR(m->sample_type[i]->unit, "a sample type's unit");
    }
    if (m->period_type) {
        CHECK_STR(m->period_type->type, "the period type");
        CHECK_STR(m->period_type->unit, "the period type's unit");
    }
    CHECK_STR(m->default_sample_type, "the default sample type");
    CHECK_STR(m->drop_frames, "drop_frames");
    CHECK_STR(m->keep_frames, "keep_frames");
    for (size_t i = 0; i < m->n_comment; i++)
        CHECK_STR(m->comment[i], "a comment");
    for (size_t i = 0; i < m->n_mapping; i++) {
        CHECK_STR(m->mapping[i]->filename, "a mapping's file");
        CHECK_STR(m->mapping[i]->build_id, "a mapping's build id");
    }
    for (size_t i = 0; i < m->n_function; i++) {
        const Perftools__Profiles__Function *f = m->function[i];
        CHECK_STR(f->name, "a function's name");
        CHECK_STR(f->system_name, "a function's system name");
        CHECK_STR(f->filename, "a function's file");
    }
    for (size_t i = 0; i < m->n_sample; i++)
        for (size_t l = 0; l < m->sample[i]->n_label; l++) {
            CHECK_STR(m->sample[i]->label[l]->key, "a label's key");
            CHECK_STR(m->sample[i]->label[l]->str, "a label's value");
            CHECK_STR(m->sample[i]->label[l]->num_unit, "a label's unit");
        }
    return true;
}

static bool validate_ids(PprofFile *f, char *err, size_t errlen)
{
    const Perftools__Profiles__Profile *m = f->m;
    size_t most = m->n_location > m->n_function ? m->n_location : m->n_function;
    if (m->n_mapping > most)
        most = m->n_mapping;
    uint64_t *ids = calloc(most ? most : 1, sizeof *ids);
    if (!ids)
        return base_error(err, errlen, "out of memory");
    bool ok = true;
    for (size_t i = 0; i < m->n_mapping; i++)
        ids[i] = m->mapping[i]->id;
    ok = index_ids(&f->mappings, ids, m->n_mapping, "mapping", err, errlen);
    f->nmappings = m->n_mapping;
    for (size_t i = 0; ok && i < m->n_function; i++)
        ids[i] = m->function[i]->id;
    ok = ok && index_ids(&f->functions, ids, m->n_function, "function", err, errlen);
    f->nfunctions = m->n_function;
    for (size_t i = 0; ok && i < m->n_location; i++)
        ids[i] = m->location[i]->id;
    ok = ok && index_ids(&f->locations, ids, m->n_location, "location", err, errlen);
    f->nlocations = m->n_location;
    free(ids);
    if (!ok)
        return false;

    bool symbolized = false;
    for (size_t i = 0; i < m->n_location; i++) {
        const Perftools__Profiles__Location *l = m->location[i];
        if (l->mapping_id && !find_id(f->mappings, f->nmappings, l->mapping_id))
            return base_error(err, errlen, "not a valid profile: location %llu names mapping %llu, which it lacks",
                        (unsigned long long)l->id, (unsigned long long)l->mapping_id);
        for (size_t k = 0; k < l->n_line; k++)
            if (!find_id(f->functions, f->nfunctions, l->line[k]->function_id))
                return base_error(err, errlen, "not a valid profile: location %llu names function %llu, which it lacks",
                            (unsigned long long)l->id, (unsigned long long)l->line[k]->function_id);
        symbolized |= l->n_line > 0;
    }
    for (size_t i = 0; i < m->n_sample; i++) {
        const Perftools__Profiles__Sample *s = m->sample[i];
        if (s->n_value != m->n_sample_type)
            return base_error(err, errlen, "not a valid profile: sample %zu has %zu values for %zu sample types", i + 1,
                        s->n_value, m->n_sample_type);
        for (size_t k = 0; k < s->n_location_id; k++)
            if (!find_id(f->locations, f->nlocations, s->location_id[k]))
                return base_error(err, errlen, "not a valid profile: sample %zu names location %llu, which it lacks", i + 1,
                            (unsigned long long)s->location_id[k]);
    }
    if (m->n_sample > 0 && !symbolized)
        return base_error(err, errlen,
                    "its locations have no functions (an unsymbolized profile, not one vmprofd wrote): "
                    "symbolize it first (go tool pprof -proto BINARY PROFILE > symbolized.pb.gz)");
    return true;
}

/* -- Entry points --------------------------------------------------------- */

bool vmprofd_pprof_parse(const uint8_t *data, size_t n, PprofFile *out, char *err, size_t errlen)
{
    *out = (PprofFile){0};
    uint8_t *unpacked = NULL;
    size_t len = n;
    if (is_gzip(data, n)) {
        if (!gunzip(data, n, &unpacked, &len, err, errlen))
            return false;
        data = unpacked;
    } else if (n == 0) {
        return base_error(err, errlen, "empty file: not a profile");
    }
    out->m = perftools__profiles__profile__unpack(NULL, len, data);
    free(unpacked);
    if (!out->m)
        return base_error(err, errlen, "not a pprof profile (neither gzip nor a valid profile.proto message%s)",
                    unpacked ? ", after gunzip" : "");
    if (!unknown_fields_ok(&out->m->base)) {
        vmprofd_pprof_free(out);
        return base_error(err, errlen, "not a valid profile: a field numbered 0");
    }
    if (!validate_strings(out->m, err, errlen) || !validate_ids(out, err, errlen)) {
        vmprofd_pprof_free(out);
        return false;
    }
    return true;
}

bool vmprofd_pprof_read(const char *path, PprofFile *out, char *err, size_t errlen)
{
    *out = (PprofFile){0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return base_error(err, errlen, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    bool ok = buf != NULL;
    while (ok) {
        if (len == cap) {
            if (cap >= VMPROFD_PPROF_MAX_BYTES) {
                ok = base_error(err, errlen, "%s: larger than %u MiB: not a profile vmprofd wrote", path,
                          VMPROFD_PPROF_MAX_BYTES >> 20);
                break;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                ok = base_error(err, errlen, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                ok = base_error(err, errlen, "cannot read %s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (ok) {
        char why[400];
        ok = vmprofd_pprof_parse(buf, len, out, why, sizeof why);
        if (!ok)
            base_error(err, errlen, "%s: %s", path, why);
    }
    free(buf);
    return ok;
}

void vmprofd_pprof_free(PprofFile *f)
{
    if (f->m)
        perftools__profiles__profile__free_unpacked(f->m, NULL);
    free(f->locations);
    free(f->functions);
    free(f->mappings);
    *f = (PprofFile){0};
}

const char *vmprofd_pprof_string(const PprofFile *f, int64_t i)
{
    return str_ok(f->m, i) ? f->m->string_table[i] : "";
}

const Perftools__Profiles__Location *vmprofd_pprof_location(const PprofFile *f, uint64_t id)
{
    const PprofIdEntry *e = find_id(f->locations, f->nlocations, id);
    return e ? f->m->location[e->index] : NULL;
}

const Perftools__Profiles__Function *vmprofd_pprof_function(const PprofFile *f, uint64_t id)
{
    const PprofIdEntry *e = find_id(f->functions, f->nfunctions, id);
    return e ? f->m->function[e->index] : NULL;
}

int vmprofd_pprof_value_index(const PprofFile *f, const char *type)
{
    for (size_t i = 0; i < f->m->n_sample_type; i++)
        if (strcmp(vmprofd_pprof_string(f, f->m->sample_type[i]->type), type) == 0)
            return (int)i;
    return -1;
}

void vmprofd_pprof_types(const PprofFile *f, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->m->n_sample_type && at < len; i++) {
        int n = snprintf(buf + at, len - at, "%s%s/%s", i ? ", " : "",
                         vmprofd_pprof_string(f, f->m->sample_type[i]->type),
                         vmprofd_pprof_string(f, f->m->sample_type[i]->unit));
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

bool vmprofd_pprof_same_types(const PprofFile *a, const PprofFile *b)
{
    if (a->m->n_sample_type != b->m->n_sample_type)
        return false;
    for (size_t i = 0; i < a->m->n_sample_type; i++) {
        const Perftools__Profiles__ValueType *x = a->m->sample_type[i], *y = b->m->sample_type[i];
        if (strcmp(vmprofd_pprof_string(a, x->type), vmprofd_pprof_string(b, y->type)) != 0 ||
            strcmp(vmprofd_pprof_string(a, x->unit), vmprofd_pprof_string(b, y->unit)) != 0)
            return false;
    }
    return true;
}

bool vmprofd_pprof_write_gzip(const char *path, const uint8_t *data, size_t n, char *err, size_t errlen)
{
    if (n > UINT_MAX / 2)
        return base_error(err, errlen, "profile too large to compress (%zu bytes)", n);
    z_stream z = {0};
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return base_error(err, errlen, "zlib deflateInit2 failed");
    size_t cap = deflateBound(&z, (uLong)n);
    uint8_t *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return base_error(err, errlen, "out of memory");
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t out = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return base_error(err, errlen, "zlib deflate failed (%d)", rc);
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return base_error(err, errlen, "cannot create %s: %s", path, strerror(errno));
    }
    bool ok = fwrite(buf, 1, out, f) == out;
    ok = (fclose(f) == 0) && ok;
    free(buf);
    if (!ok)
        return base_error(err, errlen, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
    return true;
}
