/*
 * tests/unit/jit/test_zone.c — the machine-code zone: configuration, layout,
 * bump allocation until full, the young-referrers reserve, lookup, freeing,
 * and LRU compaction with its callbacks and statistics.
 *
 * Methods here carry their test id as a SmallInteger in the method Oop
 * field and a byte pattern derived from it in their code, so a test can
 * tell after a compaction that every survivor kept its bytes and its place
 * in address order.
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

#include "vm/jit/zone.h"

#define SMALL_ZONE ((size_t)64 << 10)
#define TRAMP_BYTES ((size_t)4 << 10)
#define MAX_IDS 4096

static JitZone zone;

static int setup_small(void **state)
{
    (void)state;
    char err[256];
    JitZoneConfig cfg = { .zone_bytes = SMALL_ZONE, .trampoline_bytes = TRAMP_BYTES };
    assert_true(jit_zone_init(&zone, &cfg, err, sizeof err));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    jit_zone_release(&zone);
    return 0;
}

static uint8_t pattern(intptr_t id, size_t k) { return (uint8_t)(id * 31 + k * 7 + 1); }
static intptr_t id_of(const JitMethod *m) { return oop_int(m->method); }

static JitMethod *new_piece(JitMethodKind kind, intptr_t id, size_t bytes)
{
    JitMethod *m = jit_zone_alloc(&zone, kind, bytes);
    if (!m) return NULL;
    m->method = oop_from_int(id);
    for (size_t k = JIT_METHOD_CODE; k < m->size; k++) ((uint8_t *)m)[k] = pattern(id, k);
    return m;
}

static JitMethod *new_method(intptr_t id, size_t bytes) { return new_piece(JIT_KIND_METHOD, id, bytes); }

static void assert_pattern(const JitMethod *m, intptr_t id)
{
    assert_int_equal(id_of(m), id);
    for (size_t k = JIT_METHOD_CODE; k < m->size; k++) assert_int_equal(((const uint8_t *)m)[k], pattern(id, k));
}

/* Fills the method area with methods of `bytes`; answers how many fit. */
static int fill(JitMethod **ms, size_t bytes)
{
    int n = 0;
    while ((ms[n] = new_method(n, bytes)) != NULL) n++;
    return n;
}


/* -- A recording owner ------------------------------------------------------------ */

typedef struct Moved {
    JitMethod *old, *new_m;
    intptr_t id;
} Moved;

typedef struct Owner {
    intptr_t freed[MAX_IDS];
    int nfreed;
    Moved moved[MAX_IDS];
    int nmoved;
    int before_slide_calls;
    bool refuse_all;
    bool free_following_pic; /* on_free also frees the CLOSED_PIC right after m */
} Owner;

static bool owner_can_free(const JitMethod *m, void *ctx)
{
    (void)m;
    return !((Owner *)ctx)->refuse_all;
}

static void owner_on_free(JitMethod *m, void *ctx)
{
    Owner *o = ctx;
    assert_int_not_equal(m->kind, JIT_KIND_FREE);
    assert_pattern(m, id_of(m)); /* intact while the owner unlinks it */
    o->freed[o->nfreed++] = id_of(m);
    if (o->free_following_pic) {
        JitMethod *next = (JitMethod *)(void *)jit_method_end(m);
        if ((uint8_t *)next < jit_zone_free_start(&zone) && next->kind == JIT_KIND_CLOSED_PIC)
            jit_zone_free(&zone, next);
    }
}

static void owner_on_move(JitMethod *m, JitMethod *new_m, void *ctx)
{
    Owner *o = ctx;
    assert_true(new_m < m);
    assert_pattern(m, id_of(m)); /* nothing has moved yet */
    assert_ptr_equal(jit_zone_forward(&zone, m), new_m);
    assert_ptr_equal(jit_zone_forward(&zone, jit_method_end(m) - 1), jit_method_at(new_m, m->size - 1));
    o->moved[o->nmoved++] = (Moved){ m, new_m, id_of(m) };
}

static void owner_before_slide(void *ctx)
{
    Owner *o = ctx;
    o->before_slide_calls++;
    /* everything is still where it was */
    for (int i = 0; i < o->nmoved; i++) assert_pattern(o->moved[i].old, o->moved[i].id);
    usleep(2000); /* so the timing statistics have something to measure */
}

static JitZoneRelocate relocate_for(Owner *o)
{
    memset(o, 0, sizeof *o);
    return (JitZoneRelocate){ .ctx = o,
                              .can_free = owner_can_free,
                              .on_free = owner_on_free,
                              .on_move = owner_on_move,
                              .before_slide = owner_before_slide };
}

/* -- Configuration and layout ------------------------------------------------------- */

static void sizes_out_of_range_are_refused_with_a_clear_message(void **state)
{
    (void)state;
    JitZone z;
    char err[256];
    JitZoneConfig tiny = { .zone_bytes = 1000 };
    assert_false(jit_zone_init(&z, &tiny, err, sizeof err));
    assert_non_null(strstr(err, "out of range"));
    assert_non_null(strstr(err, "--code-size"));
    JitZoneConfig huge = { .zone_bytes = JIT_ZONE_MAX_BYTES + 1 };
    assert_false(jit_zone_init(&z, &huge, err, sizeof err));
    assert_non_null(strstr(err, "out of range"));
    JitZoneConfig crowded = { .zone_bytes = SMALL_ZONE, .trampoline_bytes = SMALL_ZONE - JIT_ZONE_MIN_METHOD_BYTES + 1 };
    assert_false(jit_zone_init(&z, &crowded, err, sizeof err));
    assert_non_null(strstr(err, "raise --code-size"));
    JitZoneConfig absurd = { .zone_bytes = SMALL_ZONE, .trampoline_bytes = SIZE_MAX - 4 };
    assert_false(jit_zone_init(&z, &absurd, err, sizeof err));
    JitZoneConfig just = { .zone_bytes = SMALL_ZONE, .trampoline_bytes = SMALL_ZONE - JIT_ZONE_MIN_METHOD_BYTES };
    assert_true(jit_zone_init(&z, &just, err, sizeof err));
    jit_zone_release(&z);
}

static void the_default_zone_is_one_mebibyte_and_sizes_round_to_pages(void **state)
{
    (void)state;
    JitZone z;
    char err[256];
    JitZoneConfig dflt = { 0 };
    assert_true(jit_zone_init(&z, &dflt, err, sizeof err));
    assert_int_equal(jit_zone_end(&z) - jit_zone_base(&z), 1 << 20);
    jit_zone_release(&z);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    JitZoneConfig odd = { .zone_bytes = SMALL_ZONE + 1, .trampoline_bytes = 100 };
    assert_true(jit_zone_init(&z, &odd, err, sizeof err));
    assert_int_equal(jit_zone_end(&z) - jit_zone_base(&z), SMALL_ZONE + page);
    assert_int_equal(jit_zone_methods_base(&z) - jit_zone_base(&z), 112); /* 100 rounded to 16 */
    jit_zone_release(&z);
}

static void regions_follow_the_documented_layout(void **state)
{
    (void)state;
    uint8_t *base = jit_zone_base(&zone);
    assert_int_equal((uintptr_t)base % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
    assert_ptr_equal(jit_zone_methods_base(&zone), base + TRAMP_BYTES);
    assert_ptr_equal(jit_zone_free_start(&zone), base + TRAMP_BYTES);
    assert_ptr_equal(jit_zone_young_base(&zone), jit_zone_end(&zone));
    assert_ptr_equal(jit_zone_end(&zone), base + SMALL_ZONE);

    JitMethod *t = new_piece(JIT_KIND_TRAMPOLINE, 1, 100);
    JitMethod *m = new_method(2, 100);
    assert_ptr_equal(t, base);
    assert_ptr_equal(m, base + TRAMP_BYTES);
    assert_int_equal(t->size, 112);
    assert_int_equal(t->kind, JIT_KIND_TRAMPOLINE);
    assert_ptr_equal(jit_zone_free_start(&zone), (uint8_t *)m + 112);
    assert_true(jit_zone_contains(&zone, m) && !jit_zone_contains(&zone, jit_zone_end(&zone)));

    /* alloc zeroes the header but size, kind and tick; a new piece is the newest used */
    JitMethod *m2 = jit_zone_alloc(&zone, JIT_KIND_BLOCK, 1);
    assert_int_equal(m2->size, sizeof(JitMethod));
    assert_int_equal(m2->kind, JIT_KIND_BLOCK);
    assert_true(m2->tick > m->tick && m->tick > t->tick);
    assert_int_equal(m2->flags | m2->nargs | m2->method | m2->map_offset | m2->lits_offset | m2->checked_entry, 0);
}

static void every_piece_is_16_aligned_and_rounded(void **state)
{
    (void)state;
    for (size_t bytes = 0; bytes < 300; bytes += 7) {
        JitMethod *m = jit_zone_alloc(&zone, (JitMethodKind)(JIT_KIND_METHOD + bytes % 4), bytes);
        assert_non_null(m);
        assert_int_equal((uintptr_t)m % JIT_METHOD_ALIGN, 0);
        assert_int_equal(m->size % JIT_METHOD_ALIGN, 0);
        assert_true(m->size >= bytes && m->size < (bytes > 48 ? bytes : 48) + 16);
        assert_int_equal((uintptr_t)jit_method_code(m) % JIT_METHOD_ALIGN, 0);
    }
}

static void the_zone_is_executable(void **state)
{
    (void)state;
    JitMethod *m = jit_zone_alloc(&zone, JIT_KIND_METHOD, JIT_METHOD_CODE + 16);
    static const uint8_t mov_eax_42_ret[] = { 0xB8, 0x2A, 0x00, 0x00, 0x00, 0xC3 };
    memcpy(jit_method_code(m), mov_eax_42_ret, sizeof mov_eax_42_ret);
    int (*fn)(void) = (int (*)(void))(uintptr_t)jit_method_code(m);
    assert_int_equal(fn(), 42);
}

static void a_zone_near_the_vm_code_is_within_rel32_reach(void **state)
{
    (void)state;
    JitZone z;
    char err[256];
    uintptr_t text = (uintptr_t)&jit_zone_init;
    JitZoneConfig cfg = { .zone_bytes = JIT_ZONE_DEFAULT_BYTES, .near = (const void *)text };
    assert_true(jit_zone_init(&z, &cfg, err, sizeof err));
    uintptr_t lo = (uintptr_t)jit_zone_base(&z), hi = (uintptr_t)jit_zone_end(&z);
    assert_true((lo > text ? lo - text : text - lo) <= JIT_ZONE_NEAR_REACH);
    assert_true((hi > text ? hi - text : text - hi) <= JIT_ZONE_NEAR_REACH);
    jit_zone_release(&z);
}

/* -- Allocation until full ---------------------------------------------------------------- */

static void allocation_until_full_returns_null_and_keeps_the_reserve(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    int n = fill(ms, 200); /* 208 bytes + an 8-byte slot each */
    size_t area = SMALL_ZONE - TRAMP_BYTES;
    assert_int_equal(n, area / (208 + 8));
    assert_null(jit_zone_alloc(&zone, JIT_KIND_METHOD, 200));
    assert_null(jit_zone_alloc(&zone, JIT_KIND_CLOSED_PIC, 200));
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.methods_live, n);
    assert_int_equal(s.bytes_in_use, (size_t)n * 208);
    assert_int_equal(s.bytes_young_reserve, (size_t)n * 8);
    assert_int_equal(s.bytes_free, area - (size_t)n * 216);
    assert_true(s.bytes_free < 208 + 8);
    assert_true(jit_zone_free_start(&zone) + s.bytes_young_reserve <= jit_zone_end(&zone));
    for (int i = 0; i < n; i++) assert_pattern(ms[i], i); /* no piece overwrote another */

    /* the trampoline area fills on its own */
    int t = 0;
    while (jit_zone_alloc(&zone, JIT_KIND_TRAMPOLINE, 1000)) t++;
    assert_int_equal(t, TRAMP_BYTES / 1008);
    assert_non_null(jit_zone_alloc(&zone, JIT_KIND_TRAMPOLINE, TRAMP_BYTES - (size_t)t * 1008));
    assert_null(jit_zone_alloc(&zone, JIT_KIND_TRAMPOLINE, 1));
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.bytes_trampolines, TRAMP_BYTES);
    assert_int_equal(s.methods_allocated, (uint64_t)n + (uint64_t)t + 1);
    assert_null(jit_zone_alloc(&zone, JIT_KIND_METHOD, SIZE_MAX)); /* absurd sizes are just "full" */
}

static void young_referrers_grow_down_and_allocation_fails_before_it_meets_them(void **state)
{
    (void)state;
    JitMethod *ms[10];
    for (int i = 0; i < 10; i++) ms[i] = new_method(i, 64);
    for (int i = 0; i < 10; i += 3) jit_zone_young_add(&zone, ms[i]); /* 0 3 6 9 */
    jit_zone_young_add(&zone, ms[3]);                                  /* idempotent */
    assert_int_equal(jit_zone_young_count(&zone), 4);
    for (uint32_t i = 0; i < 4; i++) {
        assert_ptr_equal(jit_zone_young_at(&zone, i), ms[3 * i]);
        JitMethod **slot = (JitMethod **)(void *)jit_zone_end(&zone) - 1 - i; /* slot i is 8*(i+1) below the end */
        assert_ptr_equal(*slot, ms[3 * i]);
        assert_true(ms[3 * i]->flags & JIT_METHOD_F_YOUNG_REFERRER);
    }
    assert_false(ms[1]->flags & JIT_METHOD_F_YOUNG_REFERRER);
    assert_ptr_equal(jit_zone_young_base(&zone), jit_zone_end(&zone) - 32);

    /* An allocation that fits between free and the list's current base still
     * fails: the other six methods may join the list during a scavenge. */
    size_t gap = (size_t)(jit_zone_young_base(&zone) - jit_zone_free_start(&zone));
    assert_null(jit_zone_alloc(&zone, JIT_KIND_METHOD, gap - 8 * 4));
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.bytes_free, gap - 6 * 8);
    size_t fits = (s.bytes_free - 8) & ~(size_t)15; /* the piece plus its own slot */
    assert_null(jit_zone_alloc(&zone, JIT_KIND_METHOD, fits + 1));
    JitMethod *last = jit_zone_alloc(&zone, JIT_KIND_METHOD, fits);
    assert_non_null(last);
    assert_null(jit_zone_alloc(&zone, JIT_KIND_METHOD, 1));

    /* every method may now join the list, and it reaches down to free without crossing it */
    for (int i = 0; i < 10; i++) jit_zone_young_add(&zone, ms[i]);
    jit_zone_young_add(&zone, last);
    assert_int_equal(jit_zone_young_count(&zone), 11);
    assert_true(jit_zone_young_base(&zone) >= jit_zone_free_start(&zone));
    assert_true(jit_zone_young_base(&zone) - jit_zone_free_start(&zone) < 16);
    for (int i = 0; i < 10; i++) assert_pattern(ms[i], i);
}

static bool keep_even(JitMethod *m, void *ctx)
{
    (*(int *)ctx)++;
    return id_of(m) % 2 == 0;
}

static void young_referrers_prune_and_clear_keep_flags_and_order(void **state)
{
    (void)state;
    JitMethod *ms[8];
    for (int i = 0; i < 8; i++) {
        ms[i] = new_method(i, 64);
        jit_zone_young_add(&zone, ms[i]); /* in allocation order */
    }
    int asked = 0;
    jit_zone_young_prune(&zone, keep_even, &asked);
    assert_int_equal(asked, 8);
    assert_int_equal(jit_zone_young_count(&zone), 4);
    for (uint32_t i = 0; i < 4; i++) assert_ptr_equal(jit_zone_young_at(&zone, i), ms[2 * i]);
    for (int i = 0; i < 8; i++) assert_int_equal(!!(ms[i]->flags & JIT_METHOD_F_YOUNG_REFERRER), i % 2 == 0);
    jit_zone_young_add(&zone, ms[1]); /* rebuild after a prune: back at the end */
    assert_ptr_equal(jit_zone_young_at(&zone, 4), ms[1]);
    jit_zone_young_clear(&zone);
    assert_int_equal(jit_zone_young_count(&zone), 0);
    assert_ptr_equal(jit_zone_young_base(&zone), jit_zone_end(&zone));
    for (int i = 0; i < 8; i++) assert_false(ms[i]->flags & JIT_METHOD_F_YOUNG_REFERRER);
}

/* -- Lookup, walking, freeing ---------------------------------------------------------------- */

static void lookup_finds_the_piece_containing_an_address(void **state)
{
    (void)state;
    JitMethod *t0 = new_piece(JIT_KIND_TRAMPOLINE, 100, 64);
    JitMethod *t1 = new_piece(JIT_KIND_TRAMPOLINE, 101, 200);
    JitMethod *ms[50];
    for (int i = 0; i < 50; i++) ms[i] = new_method(i, 48 + (size_t)(i * 37) % 500);
    for (int i = 0; i < 50; i++) {
        uint8_t *p = (uint8_t *)ms[i];
        assert_ptr_equal(jit_zone_find(&zone, p), ms[i]);
        assert_ptr_equal(jit_zone_find(&zone, p + JIT_METHOD_CODE - 1), ms[i]); /* last header byte */
        if (ms[i]->size > JIT_METHOD_CODE) assert_ptr_equal(jit_zone_find(&zone, p + JIT_METHOD_CODE), ms[i]);
        assert_ptr_equal(jit_zone_find(&zone, p + ms[i]->size - 1), ms[i]);
        assert_ptr_equal(jit_zone_find(&zone, p + ms[i]->size), i < 49 ? ms[i + 1] : NULL);
    }
    assert_ptr_equal(jit_zone_find(&zone, (uint8_t *)t0 + 63), t0);
    assert_ptr_equal(jit_zone_find(&zone, (uint8_t *)t1 + 100), t1);
    assert_null(jit_zone_find(&zone, (uint8_t *)t1 + 208));                  /* unused trampoline space */
    assert_null(jit_zone_find(&zone, jit_zone_free_start(&zone) + 100));     /* unused method space */
    assert_null(jit_zone_find(&zone, jit_zone_end(&zone) - 1));              /* young list */
    assert_null(jit_zone_find(&zone, jit_zone_end(&zone) + 1000));           /* outside */
    assert_null(jit_zone_find(&zone, (const void *)(uintptr_t)&jit_zone_find)); /* C code */
    jit_zone_free(&zone, ms[20]);
    assert_null(jit_zone_find(&zone, (uint8_t *)ms[20] + 50)); /* a hole */
    assert_ptr_equal(jit_zone_find(&zone, (uint8_t *)ms[21] + 50), ms[21]);
}

static void walking_visits_live_pieces_in_address_order_trampolines_first(void **state)
{
    (void)state;
    JitMethod *ms[20];
    for (int i = 0; i < 10; i++) ms[i] = new_method(i, 80);
    JitMethod *t = new_piece(JIT_KIND_TRAMPOLINE, 99, 80); /* made later, still walked first */
    for (int i = 10; i < 20; i++) ms[i] = new_method(i, 80);
    jit_zone_free(&zone, ms[0]);
    jit_zone_free(&zone, ms[5]);
    jit_zone_free(&zone, ms[6]);
    jit_zone_free(&zone, ms[19]);
    JitMethod *m = jit_zone_first(&zone);
    assert_ptr_equal(m, t);
    int expect = 1;
    while ((m = jit_zone_next(&zone, m)) != NULL) {
        while (expect == 5 || expect == 6) expect++;
        assert_ptr_equal(m, ms[expect]);
        expect++;
    }
    assert_int_equal(expect, 19);
}

static void freeing_marks_a_hole_that_traps_and_leaves_the_young_list(void **state)
{
    (void)state;
    JitMethod *a = new_method(1, 300), *b = new_method(2, 300), *c = new_method(3, 300);
    jit_zone_young_add(&zone, a);
    jit_zone_young_add(&zone, b);
    jit_zone_young_add(&zone, c);
    uint8_t *free_before = jit_zone_free_start(&zone);
    jit_zone_free(&zone, b);
    assert_int_equal(b->kind, JIT_KIND_FREE);
    assert_int_equal(b->size, 304); /* the walk still steps over it */
    assert_int_equal(b->method, 0); /* no longer a GC root */
    for (size_t k = JIT_METHOD_CODE; k < b->size; k++) assert_int_equal(((uint8_t *)b)[k], JIT_ZONE_FILL_BYTE);
    assert_ptr_equal(jit_zone_free_start(&zone), free_before); /* holes are not reused directly */
    assert_int_equal(jit_zone_young_count(&zone), 2);
    assert_ptr_equal(jit_zone_young_at(&zone, 0), a);
    assert_ptr_equal(jit_zone_young_at(&zone, 1), c);
    assert_pattern(a, 1);
    assert_pattern(c, 3);
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.methods_freed, 1);
    assert_int_equal(s.methods_live, 2);
    assert_int_equal(s.bytes_in_holes, 304);
    assert_int_equal(s.bytes_in_use, 608);
    assert_int_equal(s.bytes_young_reserve, 3 * 8); /* the hole keeps its slot until compaction */
}

static void shrinking_gives_back_the_tail_of_the_newest_piece(void **state)
{
    (void)state;
    JitMethod *a = new_method(1, 100);
    JitMethod *b = new_method(2, 1000);
    jit_zone_shrink(&zone, b, 200);
    assert_int_equal(b->size, 208);
    assert_ptr_equal(jit_zone_free_start(&zone), (uint8_t *)b + 208);
    for (size_t k = 208; k < 1008; k++) assert_int_equal(((uint8_t *)b)[k], JIT_ZONE_FILL_BYTE);
    JitMethod *c = new_method(3, 64);
    assert_ptr_equal(c, (uint8_t *)b + 208);
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.bytes_in_use, a->size + 208 + c->size);
    JitMethod *t = new_piece(JIT_KIND_TRAMPOLINE, 4, 500);
    jit_zone_shrink(&zone, t, 0);
    assert_int_equal(t->size, sizeof(JitMethod));
    assert_ptr_equal(new_piece(JIT_KIND_TRAMPOLINE, 5, 64), (uint8_t *)t + sizeof(JitMethod));
}

/* -- Compaction ------------------------------------------------------------------------------- */

/* How many of the oldest methods compaction must evict, all of `bytes`, for
 * a quarter of the area to be free. */
static int victims_needed(int live, size_t bytes)
{
    size_t area = SMALL_ZONE - TRAMP_BYTES, slot = jit_method_round(bytes) + 8;
    int k = 0;
    while (area - (size_t)(live - k) * slot < area / 4) k++;
    return k;
}

static void compaction_frees_the_least_recently_used_first(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    int n = fill(ms, 256);
    for (int i = n - 1; i >= 0; i--)
        if (i % 3 == 0) jit_zone_touch(&zone, ms[i]);
    int k = victims_needed(n, 256);
    assert_true(k > 0 && k < n - n / 3);
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    jit_zone_compact(&zone, &cb);
    assert_int_equal(o.nfreed, k);
    int expect = 0;
    for (int j = 0; j < k; j++) {
        while (expect % 3 == 0) expect++;
        assert_int_equal(o.freed[j], expect++); /* untouched, oldest first */
    }
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_true(s.bytes_free + s.bytes_young_reserve >= (SMALL_ZONE - TRAMP_BYTES) / 4);
    assert_int_equal(s.methods_live, n - k);
    assert_int_equal(s.methods_evicted, k);
    assert_int_equal(s.bytes_in_holes, 0);
}

static void when_untouched_methods_are_not_enough_the_earliest_touched_go_next(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    int n = fill(ms, 256);
    /* touch all but 10, in an order unrelated to addresses: i*7 mod n */
    int touched_order[MAX_IDS], nt = 0;
    for (int j = 0; j < n; j++) {
        int i = (int)((size_t)j * 7 % (size_t)n);
        if (i >= 10) {
            jit_zone_touch(&zone, ms[i]);
            touched_order[nt++] = i;
        }
    }
    int k = victims_needed(n, 256);
    assert_true(k > 10);
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    jit_zone_compact(&zone, &cb);
    assert_int_equal(o.nfreed, k);
    for (int j = 0; j < 10; j++) assert_int_equal(o.freed[j], j);
    for (int j = 10; j < k; j++) assert_int_equal(o.freed[j], touched_order[j - 10]);
}

static void survivors_keep_their_bytes_order_and_headers_and_move_as_reported(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS], *old[MAX_IDS];
    static uint64_t ticks[MAX_IDS];
    JitMethod *t = new_piece(JIT_KIND_TRAMPOLINE, 5000, 300);
    int n = 0;
    while ((ms[n] = new_method(n, 48 + (size_t)(n * 53) % 400)) != NULL) n++;
    for (int i = 0; i < n; i++) {
        old[i] = ms[i];
        if (i % 2 == 0) jit_zone_touch(&zone, ms[i]);
        ticks[i] = ms[i]->tick;
        ms[i]->nargs = (uint8_t)(i % 5);
    }
    for (int i = 0; i < n; i += 7) jit_zone_young_add(&zone, ms[i]);
    uint8_t *old_free = jit_zone_free_start(&zone);
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    jit_zone_compact(&zone, &cb);

    /* the expected plan: survivors packed from the methods base in id order */
    static bool freed[MAX_IDS];
    memset(freed, 0, sizeof freed);
    for (int j = 0; j < o.nfreed; j++) {
        freed[o.freed[j]] = true;
        assert_int_equal(o.freed[j] % 2, 1); /* only untouched ones */
    }
    uint8_t *to = jit_zone_methods_base(&zone);
    int nmoved = 0;
    JitMethod *walk = jit_zone_first(&zone);
    assert_ptr_equal(walk, t);
    assert_pattern(t, 5000);
    for (int i = 0; i < n; i++) {
        if (freed[i]) continue;
        JitMethod *m = (JitMethod *)(void *)to;
        walk = jit_zone_next(&zone, walk);
        assert_ptr_equal(walk, m);
        assert_pattern(m, i);
        assert_int_equal(m->tick, ticks[i]);
        assert_int_equal(m->nargs, i % 5);
        assert_int_equal(m->kind, JIT_KIND_METHOD);
        if (m != old[i]) {
            /* reported once, in address order, with both addresses */
            assert_true(nmoved < o.nmoved);
            assert_ptr_equal(o.moved[nmoved].old, old[i]);
            assert_ptr_equal(o.moved[nmoved].new_m, m);
            assert_int_equal(o.moved[nmoved].id, i);
            nmoved++;
        }
        /* lookup answers the new place for every part of it */
        assert_ptr_equal(jit_zone_find(&zone, m), m);
        assert_ptr_equal(jit_zone_find(&zone, jit_method_end(m) - 1), m);
        assert_int_equal(!!(m->flags & JIT_METHOD_F_YOUNG_REFERRER), i % 7 == 0);
        to += m->size;
    }
    assert_null(jit_zone_next(&zone, walk));
    assert_int_equal(nmoved, o.nmoved);
    assert_int_equal(o.before_slide_calls, 1);
    assert_ptr_equal(jit_zone_free_start(&zone), to);
    for (uint8_t *p = to; p < old_free; p++)
        assert_int_equal(*p, JIT_ZONE_FILL_BYTE);
    assert_null(jit_zone_find(&zone, to));

    /* young referrers: the survivors among them, at their new addresses, in their old order */
    uint32_t y = 0;
    for (int i = 0; i < n; i += 7) {
        if (freed[i]) continue;
        JitMethod *m = jit_zone_young_at(&zone, y++);
        assert_int_equal(id_of(m), i);
        assert_ptr_equal(jit_zone_find(&zone, m), m);
    }
    assert_int_equal(jit_zone_young_count(&zone), y);

    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.methods_moved, nmoved);
    assert_int_equal(s.methods_freed, o.nfreed);

    /* and the zone allocates on from the new free start */
    JitMethod *fresh = new_method(9999, 100);
    assert_ptr_equal(fresh, to);
}

/* What forwarding must answer, checked by the first on_move call. */
static struct {
    JitMethod *trampoline, *evicted, *first_mover;
    bool checked;
    int calls;
} probe;

static void probe_on_move(JitMethod *m, JitMethod *new_m, void *ctx)
{
    (void)ctx;
    if (probe.calls++ == 0) {
        assert_ptr_equal(m, probe.first_mover);
        assert_ptr_equal(new_m, probe.evicted); /* it takes the first hole's place */
        assert_ptr_equal(jit_zone_forward(&zone, (uint8_t *)m + 60), (uint8_t *)new_m + 60);
        assert_null(jit_zone_forward(&zone, (uint8_t *)probe.evicted + 10));
        uint8_t *t = (uint8_t *)probe.trampoline + 10;
        assert_ptr_equal(jit_zone_forward(&zone, t), t);
        const void *c_code = (const void *)(uintptr_t)&jit_zone_forward;
        assert_ptr_equal(jit_zone_forward(&zone, c_code), c_code);
        probe.checked = true;
    }
}

static void forwarding_answers_moved_freed_and_fixed_addresses(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    JitMethod *t = new_piece(JIT_KIND_TRAMPOLINE, 1, 64);
    int n = fill(ms, 500);
    jit_zone_touch(&zone, ms[0]); /* ms[0] is now the newest: ms[1..k] are evicted */
    int k = victims_needed(n, 500);
    memset(&probe, 0, sizeof probe);
    probe.trampoline = t;
    probe.evicted = ms[1];
    probe.first_mover = ms[k + 1];
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    cb.on_move = probe_on_move;
    jit_zone_compact(&zone, &cb);
    assert_true(probe.checked);
    assert_int_equal(o.nfreed, k);
    assert_int_equal(o.freed[0], 1);
    assert_int_equal(probe.calls, n - 1 - k); /* everything after the first hole moved */
}

static void compaction_with_enough_holes_evicts_nothing(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    int n = fill(ms, 128);
    for (int i = 0; i < n; i += 2) jit_zone_free(&zone, ms[i]);
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    size_t free_after = jit_zone_compact(&zone, &cb);
    assert_int_equal(o.nfreed, 0);
    assert_int_equal(o.nmoved, n / 2); /* every odd one slides down (ms[1] onto ms[0]'s place) */
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.bytes_free, free_after);
    assert_int_equal(s.methods_evicted, 0);
    assert_int_equal(s.methods_freed, (n + 1) / 2);
    assert_int_equal(s.bytes_young_reserve, (size_t)(n / 2) * 8); /* the holes' slots came back */
}

static void freeing_only_the_newest_moves_nothing(void **state)
{
    (void)state;
    JitMethod *ms[4];
    for (int i = 0; i < 4; i++) ms[i] = new_method(i, 1000);
    jit_zone_free(&zone, ms[3]);
    jit_zone_free(&zone, ms[2]);
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    jit_zone_compact(&zone, &cb);
    assert_int_equal(o.nmoved, 0);
    assert_int_equal(o.before_slide_calls, 1); /* always: sites of freed code must unlink */
    assert_ptr_equal(jit_zone_free_start(&zone), jit_method_end(ms[1]));
    assert_pattern(ms[0], 0);
    assert_pattern(ms[1], 1);
}

static void an_owner_can_keep_methods_and_free_their_pics(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    int n = 0;
    for (;;) { /* method, its closed PIC, method, PIC, ... */
        JitMethod *m = new_method(n, 300);
        if (!m) break;
        ms[n++] = m;
        JitMethod *pic = new_piece(JIT_KIND_CLOSED_PIC, n, 100);
        if (!pic) break;
        ms[n++] = pic;
    }
    for (int i = 1; i < n; i += 2) jit_zone_touch(&zone, ms[i]); /* PICs are the newest */
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    o.free_following_pic = true;
    jit_zone_compact(&zone, &cb);
    assert_true(o.nfreed > 0);
    for (int j = 0; j < o.nfreed; j++) assert_int_equal(o.freed[j] % 2, 0); /* on_free saw methods only */
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.methods_evicted, o.nfreed);
    assert_true(s.methods_freed >= 2 * (uint64_t)o.nfreed - 1); /* and the PICs went with them */
    for (JitMethod *m = jit_zone_first(&zone); m; m = jit_zone_next(&zone, m))
        if (m->kind == JIT_KIND_CLOSED_PIC) {
            JitMethod *prev = jit_zone_find(&zone, (uint8_t *)m - 1);
            assert_non_null(prev);
            assert_int_equal(id_of(prev) + 1, id_of(m)); /* each surviving PIC still follows its method */
        }

    /* an owner that refuses everything keeps everything */
    jit_zone_release(&zone);
    setup_small(NULL);
    int m2 = fill(ms, 256);
    cb = relocate_for(&o);
    o.refuse_all = true;
    size_t left = jit_zone_compact(&zone, &cb);
    assert_int_equal(o.nfreed, 0);
    assert_true(left < 256 + 8);
    for (int i = 0; i < m2; i++) assert_pattern(ms[i], i);
}

static void statistics_count_compactions_and_their_time(void **state)
{
    (void)state;
    static JitMethod *ms[MAX_IDS];
    Owner o;
    JitZoneRelocate cb = relocate_for(&o);
    uint64_t freed = 0, moved = 0;
    for (int round = 0; round < 3; round++) {
        fill(ms, 256);
        for (int i = 0; i < 20; i++) jit_zone_touch(&zone, ms[i]);
        cb = relocate_for(&o);
        jit_zone_compact(&zone, &cb);
        freed += (uint64_t)o.nfreed;
        moved += (uint64_t)o.nmoved;
    }
    JitZoneStats s;
    jit_zone_stats(&zone, &s);
    assert_int_equal(s.compactions, 3);
    assert_int_equal(s.methods_evicted, freed);
    assert_int_equal(s.methods_freed, freed);
    assert_int_equal(s.methods_moved, moved);
    assert_true(moved > 0);
    assert_true(s.compaction_usecs_max >= 2000); /* before_slide sleeps 2 ms */
    assert_true(s.compaction_usecs_total >= s.compaction_usecs_max);
    assert_true(s.compaction_usecs_total >= 3 * 2000);
    assert_int_equal(s.bytes_in_use + s.bytes_young_reserve + s.bytes_free, SMALL_ZONE - TRAMP_BYTES);
}

/* -- Broken invariants ------------------------------------------------------------------------ */

static void double_free(void)
{
    setup_small(NULL);
    JitMethod *m = new_method(1, 100);
    jit_zone_free(&zone, m);
    jit_zone_free(&zone, m);
}

static void free_interior(void)
{
    setup_small(NULL);
    JitMethod *m = new_method(1, 100);
    jit_zone_free(&zone, (JitMethod *)(void *)((uint8_t *)m + 16));
}

static void free_trampoline(void)
{
    setup_small(NULL);
    jit_zone_free(&zone, new_piece(JIT_KIND_TRAMPOLINE, 1, 100));
}

static void shrink_older(void)
{
    setup_small(NULL);
    JitMethod *m = new_method(1, 100);
    new_method(2, 100);
    jit_zone_shrink(&zone, m, 48);
}

static void alloc_in_on_free_cb(JitMethod *m, void *ctx)
{
    (void)m;
    (void)ctx;
    jit_zone_alloc(&zone, JIT_KIND_METHOD, 100);
}
static void nop_move(JitMethod *m, JitMethod *n, void *ctx)
{
    (void)m;
    (void)n;
    (void)ctx;
}

static void alloc_in_on_free(void)
{
    static JitMethod *ms[MAX_IDS];
    setup_small(NULL);
    fill(ms, 256);
    JitZoneRelocate cb = { .on_free = alloc_in_on_free_cb, .on_move = nop_move };
    jit_zone_compact(&zone, &cb);
}

static void forward_outside_compaction(void)
{
    setup_small(NULL);
    jit_zone_forward(&zone, new_method(1, 100));
}

static void misuse_panics(void **state)
{
    (void)state;
    assert_true(panics(double_free));
    assert_true(panics(free_interior));
    assert_true(panics(free_trampoline));
    assert_true(panics(shrink_older));
    assert_true(panics(alloc_in_on_free));
    assert_true(panics(forward_outside_compaction));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_out_of_range_are_refused_with_a_clear_message),
        cmocka_unit_test(the_default_zone_is_one_mebibyte_and_sizes_round_to_pages),
        cmocka_unit_test(a_zone_near_the_vm_code_is_within_rel32_reach),
        T(regions_follow_the_documented_layout),
        T(every_piece_is_16_aligned_and_rounded),
        T(the_zone_is_executable),
        T(allocation_until_full_returns_null_and_keeps_the_reserve),
        T(young_referrers_grow_down_and_allocation_fails_before_it_meets_them),
        T(young_referrers_prune_and_clear_keep_flags_and_order),
        T(lookup_finds_the_piece_containing_an_address),
        T(walking_visits_live_pieces_in_address_order_trampolines_first),
        T(freeing_marks_a_hole_that_traps_and_leaves_the_young_list),
        T(shrinking_gives_back_the_tail_of_the_newest_piece),
        T(compaction_frees_the_least_recently_used_first),
        T(when_untouched_methods_are_not_enough_the_earliest_touched_go_next),
        T(survivors_keep_their_bytes_order_and_headers_and_move_as_reported),
        T(forwarding_answers_moved_freed_and_fixed_addresses),
        T(compaction_with_enough_holes_evicts_nothing),
        T(freeing_only_the_newest_moves_nothing),
        T(an_owner_can_keep_methods_and_free_their_pics),
        T(statistics_count_compactions_and_their_time),
        cmocka_unit_test(misuse_panics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
