/*
 * tests/unit/jit/test_map.c — mcpc -> bcpc maps: encoding round trips, the
 * two queries against a brute-force reading of the entries, the encoding's
 * exact bytes and size, and the ordering assertion.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/jit/panics.h"

#include "vm/jit/map.h"
#include "vm/jit/jitmethod.h"

#define GUARD 0xA5
#define ROUNDS 300

/* xorshift64*: a seeded generator, so a failing round reproduces. */
static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}
static uint32_t below(uint32_t n) { return (uint32_t)(rng() % n); }

/* A random map as a template JIT would make one: mostly small steps, some
 * large, equal mcpcs and repeated or backward bcpcs now and then. */
static void random_map(JitMapBuilder *b, uint32_t n)
{
    uint32_t mcpc = below(64), bcpc = below(8);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = below(100);
        if (r < 5)
            mcpc += 0; /* shares the previous mcpc */
        else if (r < 10)
            mcpc += 1000 + below(1u << 20);
        else
            mcpc += 1 + below(60);
        r = below(100);
        if (r < 10)
            bcpc += 0;
        else if (r < 15)
            bcpc = bcpc > 20 ? bcpc - below(20) : 0;
        else if (r < 18)
            bcpc += below(1u << 16);
        else
            bcpc += 1 + below(4);
        jit_map_add(b, mcpc, bcpc, (JitMapKind)below(4));
    }
}

/* Encodes into an exact-size buffer with guard bytes on both sides. */
static uint8_t *encode(const JitMapBuilder *b, JitMapView *view)
{
    size_t n = jit_map_builder_bytes(b);
    uint8_t *buf = malloc(n + 32);
    assert_non_null(buf);
    memset(buf, GUARD, n + 32);
    assert_int_equal(jit_map_encode(b, buf + 16, n), n);
    for (size_t i = 0; i < 16; i++) {
        assert_int_equal(buf[i], GUARD);
        assert_int_equal(buf[16 + n + i], GUARD);
    }
    *view = (JitMapView){ buf + 16, jit_map_builder_count(b) };
    return buf;
}

static void assert_entry(const JitMapEntry *got, const JitMapEntry *want)
{
    assert_int_equal(got->mcpc, want->mcpc);
    assert_int_equal(got->bcpc, want->bcpc);
    assert_int_equal(got->kind, want->kind);
}

/* -- Round trips ------------------------------------------------------------------ */

static void random_maps_decode_to_what_was_added(void **state)
{
    (void)state;
    rng_state = 0x9E3779B97F4A7C15ULL;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    for (int round = 0; round < ROUNDS; round++) {
        jit_map_builder_reset(&b);
        random_map(&b, below(200));
        assert_true(jit_map_builder_ok(&b));
        JitMapView view;
        uint8_t *buf = encode(&b, &view);
        JitMapIter it;
        JitMapEntry e;
        size_t bytes = 0;
        jit_map_iter_init(&it, view);
        for (uint32_t i = 0; i < b.count; i++) {
            assert_true(jit_map_iter_next(&it, &e));
            assert_entry(&e, &b.entries[i]);
            bytes += jit_map_entry_bytes(i ? &b.entries[i - 1] : &(JitMapEntry){ 0, 0, 0 }, &b.entries[i]);
        }
        assert_false(jit_map_iter_next(&it, &e));
        assert_ptr_equal(it.p, view.bytes + jit_map_builder_bytes(&b)); /* read exactly what was written */
        assert_int_equal(bytes, jit_map_builder_bytes(&b));
        free(buf);
    }
    jit_map_builder_release(&b);
}

static void extreme_pcs_round_trip(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    jit_map_add(&b, 0, UINT32_MAX, JIT_MAP_OTHER);      /* largest bcpc step up */
    jit_map_add(&b, 0, 0, JIT_MAP_SEND);                /* largest step down */
    jit_map_add(&b, UINT32_MAX, UINT32_MAX, JIT_MAP_BACKJUMP); /* largest mcpc step */
    JitMapView view;
    uint8_t *buf = encode(&b, &view);
    JitMapIter it;
    JitMapEntry e;
    jit_map_iter_init(&it, view);
    for (uint32_t i = 0; i < 3; i++) {
        assert_true(jit_map_iter_next(&it, &e));
        assert_entry(&e, &b.entries[i]);
    }
    assert_true(jit_map_builder_bytes(&b) <= 3 * JIT_MAP_ENTRY_MAX_BYTES);
    free(buf);
    jit_map_builder_release(&b);
}

/* -- Queries ------------------------------------------------------------------------ */

/* What bcpc_at must answer, read straight off the entries. */
static bool brute_bcpc_at(const JitMapBuilder *b, uint32_t mcpc, JitMapEntry *out)
{
    for (uint32_t i = 0; i < b->count; i++)
        if (b->entries[i].mcpc == mcpc) {
            *out = b->entries[i];
            return true;
        }
    bool found = false;
    for (uint32_t i = 0; i < b->count && b->entries[i].mcpc < mcpc; i++) {
        *out = b->entries[i];
        found = true;
    }
    return found;
}

static bool brute_mcpc_for(const JitMapBuilder *b, uint32_t bcpc, JitMapEntry *out)
{
    for (uint32_t i = 0; i < b->count; i++)
        if (b->entries[i].bcpc == bcpc) {
            *out = b->entries[i];
            return true;
        }
    return false;
}

static void queries_agree_with_the_entries_everywhere(void **state)
{
    (void)state;
    rng_state = 0xD1B54A32D192ED03ULL;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    for (int round = 0; round < ROUNDS; round++) {
        jit_map_builder_reset(&b);
        random_map(&b, below(40));
        JitMapView view;
        uint8_t *buf = encode(&b, &view);
        JitMapEntry got, want;
        /* every entry, its neighbours, addresses between entries, before the first and past the last */
        for (uint32_t i = 0; i < b.count; i++) {
            uint32_t m = b.entries[i].mcpc;
            uint32_t probes[] = { m, m - 1, m + 1, m + below(100), m ? m - below(m) : 0 };
            for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
                bool w = brute_bcpc_at(&b, probes[k], &want);
                assert_int_equal(jit_map_bcpc_at(view, probes[k], &got), w);
                if (w) assert_entry(&got, &want);
            }
            uint32_t bc = b.entries[i].bcpc;
            uint32_t bprobes[] = { bc, bc + 1, bc ? bc - 1 : 0 };
            for (size_t k = 0; k < sizeof bprobes / sizeof bprobes[0]; k++) {
                bool w = brute_mcpc_for(&b, bprobes[k], &want);
                assert_int_equal(jit_map_mcpc_for(view, bprobes[k], &got), w);
                if (w) assert_entry(&got, &want);
            }
        }
        assert_int_equal(jit_map_bcpc_at(view, UINT32_MAX, &got), b.count > 0);
        free(buf);
    }
    jit_map_builder_release(&b);
}

/* A send at bcpc 3 returning to mcpc 40, where bytecode 4's code begins;
 * bytecode 7 has a send and an inlined branch (two mcpcs, one bcpc). */
static void return_addresses_and_shared_pcs_answer_as_documented(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    jit_map_add(&b, 30, 1, JIT_MAP_LOCAL);
    jit_map_add(&b, 40, 3, JIT_MAP_SEND);
    jit_map_add(&b, 40, 4, JIT_MAP_OTHER);
    jit_map_add(&b, 70, 7, JIT_MAP_LOCAL);
    jit_map_add(&b, 90, 7, JIT_MAP_SEND);
    jit_map_add(&b, 95, 2, JIT_MAP_BACKJUMP);
    JitMapView view;
    uint8_t *buf = encode(&b, &view);
    JitMapEntry e;

    assert_false(jit_map_bcpc_at(view, 29, &e)); /* the prologue maps to nothing */
    assert_true(jit_map_bcpc_at(view, 30, &e));
    assert_int_equal(e.bcpc, 1);
    assert_true(jit_map_bcpc_at(view, 39, &e)); /* between entries: the last before */
    assert_int_equal(e.bcpc, 1);
    assert_true(jit_map_bcpc_at(view, 40, &e)); /* a return address: the send */
    assert_int_equal(e.bcpc, 3);
    assert_int_equal(e.kind, JIT_MAP_SEND);
    assert_true(jit_map_bcpc_at(view, 41, &e)); /* past it: the bytecode that starts there */
    assert_int_equal(e.bcpc, 4);
    assert_true(jit_map_bcpc_at(view, 1000, &e));
    assert_int_equal(e.bcpc, 2);
    assert_int_equal(e.kind, JIT_MAP_BACKJUMP);

    assert_true(jit_map_mcpc_for(view, 7, &e)); /* the first of two */
    assert_int_equal(e.mcpc, 70);
    assert_int_equal(e.kind, JIT_MAP_LOCAL);
    assert_true(jit_map_mcpc_for(view, 2, &e));
    assert_int_equal(e.mcpc, 95);
    assert_false(jit_map_mcpc_for(view, 5, &e));
    free(buf);
    jit_map_builder_release(&b);
}

static void an_empty_map_answers_nothing(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    assert_int_equal(jit_map_builder_bytes(&b), 0);
    assert_int_equal(jit_map_encode(&b, NULL, 0), 0);
    JitMapView view = { NULL, 0 };
    JitMapEntry e;
    JitMapIter it;
    jit_map_iter_init(&it, view);
    assert_false(jit_map_iter_next(&it, &e));
    assert_false(jit_map_bcpc_at(view, 0, &e));
    assert_false(jit_map_mcpc_for(view, 0, &e));
    jit_map_builder_release(&b);
}

/* -- Encoding ---------------------------------------------------------------------- */

static void encoding_is_the_documented_leb128_bytes(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    jit_map_add(&b, 10, 0, JIT_MAP_SEND);      /* 10<<2|0 = 0x28, zigzag(0) = 0 */
    jit_map_add(&b, 25, 2, JIT_MAP_LOCAL);    /* 15<<2|1 = 0x3d, zigzag(2) = 4 */
    jit_map_add(&b, 25, 1, JIT_MAP_OTHER);     /* 0<<2|3 = 0x03, zigzag(-1) = 1 */
    jit_map_add(&b, 225, 65, JIT_MAP_BACKJUMP); /* 200<<2|2 = 802 = 0xa2 0x06, zigzag(64) = 128 = 0x80 0x01 */
    static const uint8_t want[] = { 0x28, 0x00, 0x3d, 0x04, 0x03, 0x01, 0xa2, 0x06, 0x80, 0x01 };
    assert_int_equal(jit_map_builder_bytes(&b), sizeof want);
    uint8_t got[sizeof want];
    assert_int_equal(jit_map_encode(&b, got, sizeof got), sizeof want);
    assert_memory_equal(got, want, sizeof want);
    jit_map_builder_release(&b);
}

/* The reason for the encoding (map.h): entries a template JIT makes cost two
 * bytes, a quarter of fixed 32-bit pairs; the first one carries the header
 * and prologue in its mcpc and takes one more. */
static void typical_entries_take_two_bytes(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    uint32_t mcpc = 48;
    for (uint32_t bc = 0; bc < 1000; bc += 3) {
        mcpc += 12 + bc % 20; /* templates of 12..31 bytes */
        jit_map_add(&b, mcpc, bc, (JitMapKind)(bc % 4));
    }
    assert_int_equal(jit_map_builder_bytes(&b), 2 * (size_t)jit_map_builder_count(&b) + 1);
    jit_map_builder_release(&b);
}

static void the_builder_keeps_its_storage_across_methods(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    for (uint32_t i = 0; i < 1000; i++) jit_map_add(&b, i * 10, i, JIT_MAP_SEND);
    JitMapEntry *storage = b.entries;
    uint32_t capacity = b.capacity;
    assert_true(capacity >= 1000);
    jit_map_builder_reset(&b);
    assert_int_equal(jit_map_builder_count(&b), 0);
    assert_int_equal(jit_map_builder_bytes(&b), 0);
    jit_map_add(&b, 5, 5, JIT_MAP_SEND); /* a lower mcpc than before: a new method */
    assert_ptr_equal(b.entries, storage);
    assert_int_equal(b.capacity, capacity);
    jit_map_builder_release(&b);
    assert_null(b.entries);
}

/* -- The map stored in a method ------------------------------------------------------ */

/* A zeroed, 16-aligned piece of `size` bytes standing in for one from the zone. */
static JitMethod *method_buffer(uint32_t size)
{
    static _Alignas(JIT_METHOD_ALIGN) uint8_t buf[1024];
    assert_true(size >= sizeof(JitMethod) && size <= sizeof buf);
    memset(buf, 0, sizeof buf);
    JitMethod *m = (JitMethod *)(void *)buf;
    m->size = size;
    return m;
}

static void a_method_layout_holds_code_map_and_literal_sites(void **state)
{
    (void)state;
    JitMapBuilder b;
    jit_map_builder_init(&b);
    jit_map_add(&b, JIT_METHOD_CODE + 10, 0, JIT_MAP_SEND);
    jit_map_add(&b, JIT_METHOD_CODE + 31, 4, JIT_MAP_LOCAL);
    jit_map_add(&b, JIT_METHOD_CODE + 77, 9, JIT_MAP_SEND);
    JitMethodLayout l;
    assert_true(jit_method_layout(&l, 77, jit_map_builder_bytes(&b), jit_map_builder_count(&b), 3));
    assert_int_equal(l.map_offset, JIT_METHOD_CODE + 77);
    assert_int_equal(l.lits_offset, (l.map_offset + jit_map_builder_bytes(&b) + 3) / 4 * 4);
    assert_int_equal(l.size % JIT_METHOD_ALIGN, 0);
    assert_true(l.size >= l.lits_offset + 3 * 4 && l.size < l.lits_offset + 3 * 4 + JIT_METHOD_ALIGN);
    JitMethodLayout huge;
    assert_false(jit_method_layout(&huge, UINT32_MAX, 0, 0, 0)); /* would overflow the offsets */
    assert_int_equal(huge.size, 0);

    JitMethod *m = method_buffer(l.size);
    jit_method_apply_layout(m, &l);
    assert_ptr_equal(jit_method_checked_entry(m), jit_method_code(m));
    assert_int_equal(jit_method_code_bytes(m), 77);
    jit_map_encode(&b, jit_method_map_bytes(m), jit_map_builder_bytes(&b));
    JitMapEntry e;
    assert_true(jit_map_bcpc_at(jit_method_map(m), JIT_METHOD_CODE + 40, &e));
    assert_int_equal(e.bcpc, 4);
    assert_true(jit_map_mcpc_for(jit_method_map(m), 9, &e));
    assert_ptr_equal(jit_method_at(m, e.mcpc), jit_method_code(m) + 77);

    /* three literal sites at odd offsets, as movabs immediates fall */
    uint8_t *code = jit_method_code(m);
    jit_method_set_lit_site(m, 0, code + 3);
    jit_method_set_lit_site(m, 1, code + 21);
    jit_method_set_lit_site(m, 2, code + 50);
    for (uint32_t i = 0; i < 3; i++) jit_method_lit_set(m, i, (Oop)0x1000 * (i + 1));
    assert_ptr_equal(jit_method_lit_site(m, 1), code + 21);
    Oop raw;
    memcpy(&raw, code + 50, sizeof raw);
    assert_int_equal(raw, 0x3000);
    jit_map_builder_release(&b);
}

static void add_0x10(Oop *slot, void *ctx)
{
    (*(int *)ctx)++;
    if (*slot == 0x2000 || *slot == 0x8000) *slot += 0x10;
}

static void the_gc_visits_the_method_oop_and_every_literal_site(void **state)
{
    (void)state;
    JitMethodLayout l;
    assert_true(jit_method_layout(&l, 64, 0, 0, 3));
    JitMethod *m = method_buffer(l.size);
    m->method = 0x8000;
    jit_method_apply_layout(m, &l);
    for (uint32_t i = 0; i < 3; i++) {
        jit_method_set_lit_site(m, i, jit_method_code(m) + 1 + 10 * i); /* misaligned on purpose */
        jit_method_lit_set(m, i, (Oop)0x1000 * (i + 1));
    }
    int visits = 0;
    jit_method_visit_oops(m, add_0x10, &visits);
    assert_int_equal(visits, 4);
    assert_int_equal(m->method, 0x8010);
    assert_int_equal(jit_method_lit_get(m, 0), 0x1000);
    assert_int_equal(jit_method_lit_get(m, 1), 0x2010);
    assert_int_equal(jit_method_lit_get(m, 2), 0x3000);
}

/* -- Broken invariants --------------------------------------------------------------- */


static void add_out_of_order(void)
{
    JitMapBuilder b;
    jit_map_builder_init(&b);
    jit_map_add(&b, 20, 1, JIT_MAP_SEND);
    jit_map_add(&b, 19, 2, JIT_MAP_SEND);
}

static void add_in_order(void)
{
    JitMapBuilder b;
    jit_map_builder_init(&b);
    jit_map_add(&b, 20, 1, JIT_MAP_SEND);
    jit_map_add(&b, 20, 2, JIT_MAP_SEND);
    jit_map_builder_release(&b);
}

static void an_mcpc_going_backwards_panics(void **state)
{
    (void)state;
    assert_true(panics(add_out_of_order));
    assert_false(panics(add_in_order));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_maps_decode_to_what_was_added),
        cmocka_unit_test(extreme_pcs_round_trip),
        cmocka_unit_test(queries_agree_with_the_entries_everywhere),
        cmocka_unit_test(return_addresses_and_shared_pcs_answer_as_documented),
        cmocka_unit_test(an_empty_map_answers_nothing),
        cmocka_unit_test(encoding_is_the_documented_leb128_bytes),
        cmocka_unit_test(typical_entries_take_two_bytes),
        cmocka_unit_test(the_builder_keeps_its_storage_across_methods),
        cmocka_unit_test(a_method_layout_holds_code_map_and_literal_sites),
        cmocka_unit_test(the_gc_visits_the_method_oop_and_every_literal_site),
        cmocka_unit_test(an_mcpc_going_backwards_panics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
