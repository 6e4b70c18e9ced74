/*
 * gc/verify.c — heap verifier. See gc/verify.h.
 *
 * Two walks: the first checks headers and records every object start in
 * the mark bitmap (one bit per header word), the second checks each
 * pointer slot against those bits. The bits are cleared before returning.
 */
#include "gc/verify.h"

#include "gc/mark.h"
#include "gc/space.h"
#include "gc/weak.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct Region {
    uintptr_t lo, hi;
    const char *name;
} Region;

typedef struct Verifier {
    Region region[3];
    char *msg;
    size_t msglen;
    bool failed;
    size_t flagged; /* objects with OBJ_GC_REMEMBERED */
} Verifier;

static bool fail(Verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(Verifier *v, const char *fmt, ...)
{
    if (!v->failed && v->msg && v->msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->msg, v->msglen, fmt, ap);
        va_end(ap);
    }
    v->failed = true;
    return false;
}

static const Region *region_of(const Verifier *v, uintptr_t a)
{
    for (int i = 0; i < 3; i++)
        if (a >= v->region[i].lo && a < v->region[i].hi)
            return &v->region[i];
    return NULL;
}

static bool is_object_start(const Verifier *v, Oop p) { return region_of(v, p) && gc_mark_test(p); }

static bool format_defined(uint32_t f) { return f == FMT_POINTERS || f == FMT_WORDS || f >= FMT_BYTES; }

/* -- Pass 1: headers ---------------------------------------------------- */

static bool check_header(Verifier *v, const Region *r, Oop o, uintptr_t mem)
{
    uint64_t h = obj_header(o);
    uint32_t ci = obj_class_index(o), f = obj_format(o);
    bool young = r->lo < gc_old_start;
    if (ci == CLASS_INDEX_FREE || ci == CLASS_INDEX_SMALLINT)
        return fail(v, "%s object %#lx has class index %u (header %#lx)", r->name, (unsigned long)o, ci,
                    (unsigned long)h);
    if (!format_defined(f))
        return fail(v, "%s object %#lx (class %u) has undefined format %u (header %#lx)", r->name, (unsigned long)o,
                    ci, f, (unsigned long)h);
    if (h & OBJ_GC_FORWARDED)
        return fail(v, "%s object %#lx (class %u) has the FORWARDED bit outside a collection", r->name,
                    (unsigned long)o, ci);
    if (h & OBJ_GC_MARKED)
        return fail(v, "%s object %#lx (class %u) has the MARKED bit outside a collection", r->name,
                    (unsigned long)o, ci);
    if (h & OBJ_GC_REMEMBERED) {
        if (young)
            return fail(v, "%s object %#lx (class %u) is young but has the REMEMBERED bit", r->name,
                        (unsigned long)o, ci);
        v->flagged++;
    }
    if (young && obj_age(o) >= GC_TENURE_AGE)
        return fail(v, "%s object %#lx (class %u) has age %u, at or past the tenure age %d", r->name,
                    (unsigned long)o, ci, obj_age(o), GC_TENURE_AGE);
    size_t n = obj_num_slots(o);
    if (obj_total_bytes(o) > r->hi - mem)
        return fail(v, "%s object %#lx (class %u, %zu slots) runs past the end of its space at %#lx", r->name,
                    (unsigned long)o, ci, n, (unsigned long)r->hi);
    if (f >= FMT_METHOD) {
        Oop mh = obj_slots(o)[0];
        if (n == 0 || !oop_is_int(mh) || METHOD_POINTER_SLOTS(mh) > n)
            return fail(v, "%s method %#lx (class %u, %zu slots) has slot 0 = %#lx, not a header naming at most %zu pointer slots",
                        r->name, (unsigned long)o, ci, n, (unsigned long)mh, n);
    } else if (f >= FMT_BYTES && (f & 7) > n * 8) {
        return fail(v, "%s object %#lx (class %u) has %u unused bytes in %zu slots", r->name, (unsigned long)o, ci,
                    f & 7, n);
    }
    return true;
}

static bool check_headers(Verifier *v, const Region *r)
{
    for (uintptr_t a = r->lo; a < r->hi;) {
        uint64_t w = *(uint64_t *)a;
        Oop o = a;
        if ((w >> 56) == OBJ_SLOTS_OVERFLOW) {
            if (r->hi - a < 24)
                return fail(v, "%s space: overflow word %#lx at %#lx runs past the end at %#lx", r->name,
                            (unsigned long)w, (unsigned long)a, (unsigned long)r->hi);
            o = a + 8;
            if ((obj_header(o) >> OBJ_SLOTS_SHIFT) != OBJ_SLOTS_OVERFLOW)
                return fail(v, "%s space: overflow word at %#lx is followed by header %#lx whose slot count is not 255",
                            r->name, (unsigned long)a, (unsigned long)obj_header(o));
            if ((w & (((uint64_t)1 << 56) - 1)) < OBJ_SLOTS_OVERFLOW)
                return fail(v, "%s object %#lx: overflow word counts %lu slots, fewer than 255", r->name,
                            (unsigned long)o, (unsigned long)(w & (((uint64_t)1 << 56) - 1)));
        }
        if (!check_header(v, r, o, a))
            return false;
        gc_mark_set(o);
        a += obj_total_bytes(o);
    }
    return true;
}

/* -- Pass 2: pointers --------------------------------------------------- */

/* Why val cannot be in a pointer slot, or NULL if it can. */
static const char *bad_value(const Verifier *v, Oop val)
{
    if (oop_is_int(val) || oop_is_float(val) || val == 0)
        return NULL;
    if ((val & 7) != 0)
        return "neither an immediate nor an aligned address";
    if (!is_object_start(v, val))
        return "not the start of an object in eden, survivor or old space";
    return NULL;
}

static bool check_slots(Verifier *v, const Region *r)
{
    bool old = r->lo >= gc_old_start;
    for (uintptr_t a = r->lo; a < r->hi;) {
        Oop o = gc_space_oop_at(a);
        size_t n = obj_pointer_slots(o);
        const Oop *slot = obj_slots(o);
        for (size_t i = 0; i < n; i++) {
            const char *why = bad_value(v, slot[i]);
            if (!why && old && gc_is_young(slot[i]) && !(obj_header(o) & OBJ_GC_REMEMBERED) &&
                !gc_space.remembered_overflowed)
                why = "a young object, but the holder is not remembered (missing write barrier?)";
            if (why)
                return fail(v, "%s object %#lx (class %u, %zu slots) slot %zu holds %#lx: %s", r->name,
                            (unsigned long)o, obj_class_index(o), obj_num_slots(o), i, (unsigned long)slot[i], why);
        }
        a += obj_total_bytes(o);
    }
    return true;
}

static bool check_remembered(Verifier *v)
{
    const GcSpace *s = &gc_space;
    for (size_t i = 0; i < s->remembered_count; i++) {
        Oop o = s->remembered[i];
        if (o < gc_old_start || !is_object_start(v, o))
            return fail(v, "remembered set entry %zu is %#lx, not an old object", i, (unsigned long)o);
        if (!(obj_header(o) & OBJ_GC_REMEMBERED))
            return fail(v, "remembered set entry %zu, %#lx (class %u), lacks the REMEMBERED bit", i,
                        (unsigned long)o, obj_class_index(o));
    }
    if (v->flagged != s->remembered_count)
        return fail(v, "%zu objects have the REMEMBERED bit but the remembered set holds %zu", v->flagged,
                    s->remembered_count);
    return true;
}

static bool weak_is_object(Oop o, void *ctx) { return is_object_start(ctx, o); }

static bool check_weak(Verifier *v)
{
    Oop bad;
    const char *why = gc_weak_check(weak_is_object, v, &bad);
    if (why)
        return fail(v, "weak table entry %#lx: %s", (unsigned long)bad, why);
    return true;
}

typedef struct RootCheck {
    Verifier *v;
    size_t index;
} RootCheck;

static void check_root(Oop *slot, void *ctx)
{
    RootCheck *rc = ctx;
    const char *why = rc->v->failed ? NULL : bad_value(rc->v, *slot);
    if (why)
        fail(rc->v, "root %zu (at %p) holds %#lx: %s", rc->index, (void *)slot, (unsigned long)*slot, why);
    rc->index++;
}

static bool verify(char *msg, size_t msglen, bool roots)
{
    const GcSpace *s = &gc_space;
    if (!s->base) {
        if (msg && msglen)
            snprintf(msg, msglen, "no heap");
        return false;
    }
    Verifier v = {
        .region = {{s->eden_start, gc_eden_top, "eden"},
                   {gc_space_surv_start(), s->surv_top, "survivor"},
                   {gc_old_start, s->old_top, "old"}},
        .msg = msg,
        .msglen = msglen,
    };
    bool ok = true;
    int walked = 0;
    for (; ok && walked < 3; walked++)
        ok = check_headers(&v, &v.region[walked]);
    for (int i = 0; ok && i < 3; i++)
        ok = check_slots(&v, &v.region[i]);
    ok = ok && check_remembered(&v);
    ok = ok && check_weak(&v);
    if (ok && roots && s->client.visit_roots) {
        RootCheck rc = {&v, 0};
        s->client.visit_roots(check_root, &rc, s->client.client);
        ok = !v.failed;
    }
    for (int i = 0; i < walked; i++)
        gc_mark_clear_range(v.region[i].lo, v.region[i].hi);
    return ok;
}

bool gc_verify(char *msg, size_t msglen) { return verify(msg, msglen, false); }

void gc_verify_or_die(const char *when)
{
    char msg[512];
    if (!verify(msg, sizeof msg, true)) {
        fprintf(stderr, "stvm: gc-verify: %s: %s\n", when, msg);
        fflush(stderr);
        abort();
    }
}
