/* Unit tests for the collect driver (gc/collect.c) against a model: random
 * graph mutations through the write barrier, random scavenges and full
 * GCs (each verified by --gc-verify), and after every collection the heap
 * reachable from the roots is compared with a shadow model of the graph. */
#include "gc_test.h"

#include <stdio.h>
#include <stdlib.h>

/* Objects carry their model id in slot 0; slots 1..MODEL_EDGES are the
 * edges the model tracks; further slots hold SmallIntegers derived from
 * the id. Strings are leaves whose bytes spell their id. */
#define MODEL_EDGES 4
#define MAX_IDS 400000
#define NO_EDGE (-1)
#define MODEL_ROOTS 16

typedef struct ModelObject {
    int32_t edge[MODEL_EDGES];
    uint32_t slots;
    bool is_string;
} ModelObject;

static ModelObject *model;
static int32_t root_id[MODEL_ROOTS];
static int32_t next_id;
static Oop *seen; /* id -> address found by the current check */
static uint64_t rng = 0x243F6A8885A308D3u; /* pi's fraction: any nonzero seed */

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static Oop make_object(void)
{
    int32_t id = next_id++;
    assert_true(id < MAX_IDS);
    ModelObject *m = &model[id];
    for (int j = 0; j < MODEL_EDGES; j++)
        m->edge[j] = NO_EDGE;
    uint32_t r = rnd(100);
    if (r < 15) {
        char text[24];
        int n = snprintf(text, sizeof text, "str%d", id);
        m->is_string = true;
        Oop s = gc_alloc_bytes(CLASS_INDEX_STRING, (size_t)n);
        memcpy(obj_bytes(s), text, (size_t)n);
        return s;
    }
    /* Mostly small, some past 255 slots, a few large enough for old space. */
    m->slots = r < 93 ? 1 + MODEL_EDGES + rnd(3) : r < 98 ? 300 : 1500;
    Oop o = gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, m->slots);
    assert_true(o != 0);
    obj_slots(o)[0] = oop_from_int(id);
    for (uint32_t j = 1 + MODEL_EDGES; j < m->slots; j++)
        obj_slots(o)[j] = oop_from_int(id * 7 + (intptr_t)j);
    return o;
}

static int32_t id_of(Oop o)
{
    if (obj_is_bytes(o)) {
        char text[24] = "";
        memcpy(text, obj_bytes(o), obj_byte_length(o) < 23 ? obj_byte_length(o) : 23);
        return (int32_t)atoi(text + 3);
    }
    return (int32_t)oop_int(obj_at(o, 0));
}

/* A random object reachable from a random root, with its id; 0 if the
 * walk found none. */
static Oop pick_reachable(int32_t *id_out)
{
    uint32_t r = rnd(MODEL_ROOTS);
    if (root_id[r] == NO_EDGE)
        return 0;
    Oop o = tc.roots[r];
    int32_t id = root_id[r];
    for (uint32_t steps = rnd(24); steps > 0 && !model[id].is_string; steps--) {
        int j = (int)rnd(MODEL_EDGES);
        if (model[id].edge[j] == NO_EDGE)
            break;
        id = model[id].edge[j];
        o = obj_at(o, 1 + (size_t)j);
    }
    *id_out = id;
    return o;
}

static void check_object(Oop o, int32_t id, Oop *stack, size_t *sp)
{
    if (seen[id]) {
        assert_true(seen[id] == o); /* one object, one address */
        return;
    }
    seen[id] = o;
    assert_int_equal(id_of(o), id);
    const ModelObject *m = &model[id];
    if (m->is_string) {
        char text[24];
        int n = snprintf(text, sizeof text, "str%d", id);
        assert_int_equal(obj_byte_length(o), n);
        return;
    }
    assert_int_equal(obj_num_slots(o), m->slots);
    for (uint32_t j = 1 + MODEL_EDGES; j < m->slots; j++)
        assert_int_equal(oop_int(obj_at(o, j)), id * 7 + (intptr_t)j);
    for (int j = 0; j < MODEL_EDGES; j++) {
        Oop v = obj_at(o, 1 + (size_t)j);
        if (m->edge[j] == NO_EDGE) {
            assert_true(v == nil_obj);
        } else {
            assert_int_equal(id_of(v), m->edge[j]);
            stack[(*sp)++] = v;
        }
    }
}

/* Walks down from a random root to an object with an empty edge and
 * returns it with that edge's index in *edge_out; 0 if none was found. */
static Oop pick_empty_edge(int32_t *id_out, int *edge_out)
{
    uint32_t r = rnd(MODEL_ROOTS);
    if (root_id[r] == NO_EDGE)
        return 0;
    Oop o = tc.roots[r];
    int32_t id = root_id[r];
    for (int steps = 0; steps < 64 && !model[id].is_string; steps++) {
        int j = (int)rnd(MODEL_EDGES);
        if (model[id].edge[j] == NO_EDGE) {
            *id_out = id;
            *edge_out = j;
            return o;
        }
        id = model[id].edge[j];
        o = obj_at(o, 1 + (size_t)j);
    }
    return 0;
}

/* Depth-first over everything reachable, comparing with the model. */
static void check_heap_against_model(void)
{
    memset(seen, 0, (size_t)next_id * sizeof *seen);
    Oop *stack = malloc(((size_t)next_id * MODEL_EDGES + MODEL_ROOTS) * sizeof *stack);
    size_t sp = 0;
    for (int r = 0; r < MODEL_ROOTS; r++) {
        if (root_id[r] == NO_EDGE) {
            assert_true(tc.roots[r] == nil_obj);
            continue;
        }
        check_object(tc.roots[r], root_id[r], stack, &sp);
        while (sp > 0) {
            Oop o = stack[--sp];
            check_object(o, id_of(o), stack, &sp);
        }
    }
    free(stack);
}

static void run_model(uint32_t ops, uint32_t scavenge_every, uint32_t full_every)
{
    model = calloc(MAX_IDS, sizeof *model);
    seen = calloc(MAX_IDS, sizeof *seen);
    next_id = 0;
    for (int r = 0; r < MODEL_ROOTS; r++) {
        root_id[r] = NO_EDGE;
        tc.roots[r] = nil_obj;
    }
    for (uint32_t op = 0; op < ops; op++) {
        uint32_t what = rnd(1000);
        int32_t aid, bid;
        if (what < 2) { /* new object into a root */
            uint32_t r = rnd(MODEL_ROOTS);
            root_id[r] = next_id;
            tc.roots[r] = make_object();
        } else if (what < 810) { /* new object into an empty edge */
            int j;
            Oop a = pick_empty_edge(&aid, &j);
            if (a) {
                int32_t id = next_id;
                Oop b = make_object();
                gc_store(a, 1 + (size_t)j, b);
                model[aid].edge[j] = id;
            }
        } else if (what < 960) { /* link two reachable objects */
            Oop a = pick_reachable(&aid);
            Oop b = pick_reachable(&bid);
            if (a && b && !model[aid].is_string) {
                int j = (int)rnd(MODEL_EDGES);
                gc_store(a, 1 + (size_t)j, b);
                model[aid].edge[j] = bid;
            }
        } else if (what < 999) { /* cut an edge */
            Oop a = pick_reachable(&aid);
            if (a && !model[aid].is_string) {
                int j = (int)rnd(MODEL_EDGES);
                gc_store(a, 1 + (size_t)j, nil_obj);
                model[aid].edge[j] = NO_EDGE;
            }
        } else { /* drop a root */
            uint32_t r = rnd(MODEL_ROOTS);
            root_id[r] = NO_EDGE;
            tc.roots[r] = nil_obj;
        }
        bool full = rnd(full_every) == 0;
        if (full || rnd(scavenge_every) == 0 || gc_wants_collect()) {
            assert_true(gc_collect(full));
            check_heap_against_model();
        }
    }
    check_heap_against_model();
    free(model);
    free(seen);
}

static void random_mutations_survive_scavenges_and_full_gcs(void **state)
{
    (void)state;
    run_model(60000, 40, 800);
    assert_true(gc_stats.scavenges > 100);
    assert_true(gc_stats.full_gcs > 10);
    assert_true(gc_stats.objects_tenured > 0);
}

static void random_mutations_survive_a_tiny_remembered_set(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 8, false);
    run_model(40000, 30, 5000);
    assert_true(gc_stats.remembered_overflows > 0);
}

static void random_mutations_survive_gc_stress(void **state)
{
    (void)state;
    gc_heap_release();
    start_heap(TEST_HEAP_BYTES, TEST_EDEN_BYTES, 0, true);
    run_model(4000, 1000000, 1000000);
    assert_true(gc_stats.scavenges + gc_stats.full_gcs >= 4000);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small_heap, teardown_heap)
    const struct CMUnitTest tests[] = {
        T(random_mutations_survive_scavenges_and_full_gcs),
        T(random_mutations_survive_a_tiny_remembered_set),
        T(random_mutations_survive_gc_stress),
    };
    return cmocka_run_group_tests_name("gc_collect", tests, NULL, NULL);
}
