/* Unit tests for the weak reference table (gc/weak.c): entries follow their
 * objects through scavenges, tenuring and compacting full GCs, vanish with
 * them, and never keep them alive. Every collection here also runs the
 * verifier (gc_test.h turns --gc-verify on), which checks every entry. */
#include "gc_test.h"

#include "gc/weak.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Objects carry their id in slot 0 (a SmallInteger) and are added with the
 * id as tag, so an entry that follows the wrong object shows. */
static Oop new_young(intptr_t id, size_t slots)
{
    Oop o = new_array(slots);
    obj_slots(o)[0] = oop_from_int(id);
    return o;
}

static Oop new_old(intptr_t id, size_t slots)
{
    Oop o = new_old_array(slots);
    obj_slots(o)[0] = oop_from_int(id);
    return o;
}

static void add(Oop o, uint64_t tag) { assert_true(gc_weak_add(o, tag)); }

#define MAX_SEEN 4096

typedef struct Seen {
    size_t n;
    uint64_t tag[MAX_SEEN];
    Oop obj[MAX_SEEN];
} Seen;

static void collect_entry(uint64_t tag, Oop obj, void *ctx)
{
    Seen *s = ctx;
    assert_true(s->n < MAX_SEEN);
    s->tag[s->n] = tag;
    s->obj[s->n] = obj;
    s->n++;
}

static Seen seen;

static void snapshot(void)
{
    seen.n = 0;
    gc_weak_each(collect_entry, &seen);
    assert_int_equal(seen.n, gc_weak_count());
}

/* The address the table gives for tag, or 0 when it has no such entry
 * (also checks the entry's object carries the tag as its id). */
static Oop lookup(uint64_t tag)
{
    snapshot();
    Oop found = 0;
    for (size_t i = 0; i < seen.n; i++)
        if (seen.tag[i] == tag) {
            assert_true(found == 0);
            found = seen.obj[i];
        }
    if (found)
        assert_int_equal(oop_int(obj_at(found, 0)), (intptr_t)tag);
    return found;
}

static void full_gc(void)
{
    uint64_t full = gc_stats.full_gcs;
    assert_true(gc_collect(true));
    assert_int_equal(gc_stats.full_gcs, full + 1);
}

/* -- Following ---------------------------------------------------------- */

static void entries_follow_young_objects_through_scavenges(void **state)
{
    (void)state;
    new_young(99, 3); /* garbage first, so nothing stays where it was */
    tc.roots[0] = new_young(1, 2);
    tc.roots[1] = new_young(2, 400); /* an overflow word before its header */
    add(tc.roots[0], 1);
    add(tc.roots[1], 2);
    assert_int_equal(gc_weak_count(), 2);
    for (int i = 1; i < GC_TENURE_AGE; i++) {
        Oop before = tc.roots[0];
        scavenge();
        assert_true(tc.roots[0] != before);
        assert_true(gc_is_young(tc.roots[0]));
        assert_true(lookup(1) == tc.roots[0]);
        assert_true(lookup(2) == tc.roots[1]);
        assert_int_equal(gc_weak_count(), 2);
    }
}

static void entries_follow_objects_when_tenured(void **state)
{
    (void)state;
    tc.roots[0] = new_young(7, 1);
    add(tc.roots[0], 7);
    for (int i = 0; i < GC_TENURE_AGE; i++)
        scavenge();
    assert_true(gc_is_old(tc.roots[0]));
    assert_true(lookup(7) == tc.roots[0]);
    /* Further scavenges leave the (now old) entry alone and correct. */
    scavenge();
    scavenge();
    assert_true(lookup(7) == tc.roots[0]);
    assert_int_equal(gc_weak_count(), 1);
}

static void entries_follow_objects_moved_by_compaction(void **state)
{
    (void)state;
    for (int i = 0; i < 20; i++)
        new_old(1000 + i, 4); /* old garbage below the followed objects */
    tc.roots[0] = new_old(1, 3);
    new_old(1100, 50);
    tc.roots[1] = new_old(2, 300); /* overflow word */
    tc.roots[2] = new_young(3, 2); /* tenured by the full GC */
    Oop old0 = tc.roots[0], old1 = tc.roots[1];
    add(tc.roots[0], 1);
    add(tc.roots[1], 2);
    add(tc.roots[2], 3);
    full_gc();
    assert_true(tc.roots[0] != old0);
    assert_true(tc.roots[1] != old1);
    assert_true(gc_is_old(tc.roots[2]));
    assert_true(lookup(1) == tc.roots[0]);
    assert_true(lookup(2) == tc.roots[1]);
    assert_true(lookup(3) == tc.roots[2]);
    assert_int_equal(gc_weak_count(), 3);
    /* And again, once more garbage lies below them. */
    tc.roots[3] = new_old(4, 2);
    add(tc.roots[3], 4);
    tc.roots[0] = 0;
    full_gc();
    assert_int_equal(gc_weak_count(), 3);
    assert_true(lookup(1) == 0);
    assert_true(lookup(2) == tc.roots[1]);
    assert_true(lookup(3) == tc.roots[2]);
    assert_true(lookup(4) == tc.roots[3]);
}

static void one_object_added_twice_is_followed_twice(void **state)
{
    (void)state;
    tc.roots[0] = new_young(5, 1);
    add(tc.roots[0], 5);
    add(tc.roots[0], 5);
    scavenge();
    full_gc();
    snapshot();
    assert_int_equal(seen.n, 2);
    assert_true(seen.obj[0] == tc.roots[0] && seen.obj[1] == tc.roots[0]);
}

/* -- Death -------------------------------------------------------------- */

static void dead_young_object_is_removed_by_a_scavenge(void **state)
{
    (void)state;
    tc.roots[0] = new_young(1, 1);
    Oop dead = new_young(2, 1);
    add(tc.roots[0], 1);
    add(dead, 2);
    add(tc.roots[0], 3); /* dies later, see below: tag 3 on object 1 */
    scavenge();
    assert_int_equal(gc_weak_count(), 2);
    assert_true(lookup(2) == 0);
    assert_true(lookup(1) == tc.roots[0]);
    /* Dies in its survivor space. */
    tc.roots[0] = 0;
    scavenge();
    assert_int_equal(gc_weak_count(), 0);
}

static void dead_old_object_is_removed_by_a_full_gc_only(void **state)
{
    (void)state;
    tc.roots[0] = new_old(1, 1);
    Oop dead = new_old(2, 1);
    add(tc.roots[0], 1);
    add(dead, 2);
    /* A scavenge cannot know an old object died: the entry stays, valid. */
    scavenge();
    assert_true(lookup(2) == dead);
    full_gc();
    assert_int_equal(gc_weak_count(), 1);
    assert_true(lookup(2) == 0);
    assert_true(lookup(1) == tc.roots[0]);
}

static void dead_young_object_is_removed_by_a_full_gc(void **state)
{
    (void)state;
    tc.roots[0] = new_young(1, 1);
    add(new_young(2, 1), 2);
    add(tc.roots[0], 1);
    full_gc();
    assert_int_equal(gc_weak_count(), 1);
    assert_true(lookup(1) == tc.roots[0]);
}

/* -- Weakness ----------------------------------------------------------- */

static void the_table_keeps_no_young_object_alive(void **state)
{
    (void)state;
    size_t before = count_objects();
    uint64_t freed = gc_stats.bytes_freed;
    for (int i = 0; i < 10; i++)
        add(new_young(i, 3), (uint64_t)i);
    scavenge();
    assert_int_equal(count_objects(), before);
    assert_int_equal(gc_stats.bytes_freed - freed, 10 * 32);
    assert_int_equal(gc_weak_count(), 0);
}

static void the_table_keeps_no_old_object_alive(void **state)
{
    (void)state;
    full_gc();
    size_t used = gc_old_used_bytes();
    for (int i = 0; i < 10; i++)
        add(new_old(i, 3), (uint64_t)i);
    add(new_young(10, 3), 10);
    full_gc();
    assert_int_equal(gc_old_used_bytes(), used);
    assert_int_equal(gc_weak_count(), 0);
}

/* -- Capacity and clearing --------------------------------------------- */

/* Counts entries by which root they point at; fails on any other. */
static void count_at_roots(uint64_t tag, Oop obj, void *ctx)
{
    size_t *at = ctx;
    if (tag < 1 || tag > 2 || obj != tc.roots[tag - 1])
        fail_msg("entry with tag %lu points at %#lx, not at root %lu", (unsigned long)tag, (unsigned long)obj,
                 (unsigned long)tag - 1);
    at[tag - 1]++;
}

static void a_full_table_answers_false(void **state)
{
    (void)state;
    tc.roots[0] = new_young(1, 1);
    tc.roots[1] = new_old(2, 1);
    for (size_t i = 0; i < GC_WEAK_CAPACITY; i++)
        if (!gc_weak_add(tc.roots[i & 1], (i & 1) + 1))
            fail_msg("gc_weak_add failed at entry %zu of %zu", i, GC_WEAK_CAPACITY);
    assert_int_equal(gc_weak_count(), GC_WEAK_CAPACITY);
    assert_false(gc_weak_add(tc.roots[0], 1));
    assert_false(gc_weak_add(tc.roots[1], 2));
    assert_int_equal(gc_weak_count(), GC_WEAK_CAPACITY);
    /* Half a million young entries tenure into the old array, which must
     * already have room for them (a collection never allocates). */
    for (int i = 0; i < GC_TENURE_AGE; i++)
        scavenge();
    assert_true(gc_is_old(tc.roots[0]));
    assert_int_equal(gc_weak_count(), GC_WEAK_CAPACITY);
    size_t at_root[2] = {0, 0};
    gc_weak_each(count_at_roots, at_root);
    assert_int_equal(at_root[0], GC_WEAK_CAPACITY / 2);
    assert_int_equal(at_root[1], GC_WEAK_CAPACITY / 2);
    /* Dropping the young object's half makes room again. */
    tc.roots[0] = 0;
    full_gc();
    assert_int_equal(gc_weak_count(), GC_WEAK_CAPACITY / 2);
    assert_true(gc_weak_add(tc.roots[1], 2));
}

static void clear_forgets_every_entry(void **state)
{
    (void)state;
    tc.roots[0] = new_young(1, 1);
    tc.roots[1] = new_old(2, 1);
    add(tc.roots[0], 1);
    add(tc.roots[1], 2);
    gc_weak_clear();
    assert_int_equal(gc_weak_count(), 0);
    snapshot();
    assert_int_equal(seen.n, 0);
    scavenge();
    full_gc();
    assert_int_equal(gc_weak_count(), 0);
    /* Usable again after clearing. */
    add(tc.roots[1], 2);
    scavenge();
    assert_true(lookup(2) == tc.roots[1]);
}

/* A non-object is a caller's bug: the VM stops with a message (in a child,
 * as gc_panic aborts). */
static void adding_a_non_object_panics(void **state)
{
    (void)state;
    Oop bad[] = {oop_from_int(3), 0, (Oop)8, (Oop)&tc};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stderr))
                _exit(2);
            gc_weak_add(bad[i], 1);
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
    }
    assert_int_equal(gc_weak_count(), 0);
}

/* -- Against a model, under --gc-stress --------------------------------- */

/* A rooted old holder keeps some objects alive (stores through the write
 * barrier); every object made is added. After each collection: every held
 * object is in the table at its current address, every entry's object
 * carries its tag, an entry for an object not held is old and was made
 * since the last full GC (young ones die in the scavenge), and after a
 * full GC the table holds exactly the held objects. */
#define HOLD 64
#define ROUNDS 3000

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static void check_against_holder(Oop holder, bool full, const uint8_t *dead_since_full)
{
    snapshot();
    size_t held = 0;
    for (size_t j = 0; j < HOLD; j++) {
        Oop o = obj_at(holder, j);
        if (o == nil_obj)
            continue;
        held++;
        intptr_t id = oop_int(obj_at(o, 0));
        assert_true(lookup(id) == o);
    }
    snapshot();
    for (size_t i = 0; i < seen.n; i++) {
        Oop o = seen.obj[i];
        assert_int_equal(oop_int(obj_at(o, 0)), (intptr_t)seen.tag[i]);
        bool is_held = false;
        for (size_t j = 0; j < HOLD; j++)
            is_held |= obj_at(holder, j) == o;
        if (!is_held) {
            assert_false(full);
            assert_true(gc_is_old(o));
            assert_true(dead_since_full[seen.tag[i]]);
        }
    }
    if (full)
        assert_int_equal(seen.n, held);
}

static void random_mutator_under_gc_stress(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 0, true);
    uint8_t *dropped = calloc(ROUNDS * 4 + 1, 1); /* id -> released while old since the last full GC */
    assert_non_null(dropped);
    Oop holder = new_old_array(HOLD);
    tc.roots[0] = holder;
    intptr_t next_id = 1;
    uint64_t fulls = 0, scavenges = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 4; k++) {
            intptr_t id = next_id++;
            uint32_t r = rnd(100);
            Oop o = r < 90 ? new_young(id, 1 + rnd(4)) : r < 97 ? new_young(id, 300) : new_old(id, 2);
            add(o, (uint64_t)id);
            if (rnd(2)) {
                size_t j = rnd(HOLD);
                holder = tc.roots[0];
                Oop prev = obj_at(holder, j);
                if (prev != nil_obj && gc_is_old(prev))
                    dropped[oop_int(obj_at(prev, 0))] = 1;
                gc_store(holder, j, o);
            } else if (gc_is_old(o)) {
                dropped[id] = 1;
            }
        }
        if (!gc_wants_collect() && rnd(4))
            continue;
        uint64_t f = gc_stats.full_gcs;
        assert_true(gc_collect(false));
        bool full = gc_stats.full_gcs != f;
        if (full) {
            fulls++;
            memset(dropped, 0, ROUNDS * 4 + 1);
        } else {
            scavenges++;
        }
        check_against_holder(tc.roots[0], full, dropped);
    }
    assert_true(fulls >= 10);
    assert_true(scavenges >= 100);
    free(dropped);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small_heap, teardown_heap)
    const struct CMUnitTest tests[] = {
        T(entries_follow_young_objects_through_scavenges),
        T(entries_follow_objects_when_tenured),
        T(entries_follow_objects_moved_by_compaction),
        T(one_object_added_twice_is_followed_twice),
        T(dead_young_object_is_removed_by_a_scavenge),
        T(dead_old_object_is_removed_by_a_full_gc_only),
        T(dead_young_object_is_removed_by_a_full_gc),
        T(the_table_keeps_no_young_object_alive),
        T(the_table_keeps_no_old_object_alive),
        T(a_full_table_answers_false),
        T(clear_forgets_every_entry),
        T(adding_a_non_object_panics),
        T(random_mutator_under_gc_stress),
    };
    return cmocka_run_group_tests_name("gc_weak", tests, NULL, NULL);
}
