/* Unit tests for the heap verifier (gc/verify.c). */
#include "gc_test.h"

#include "vm/model/method.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static char msg[512];

static void expect_broken(const char *fragment)
{
    msg[0] = 0;
    assert_false(gc_verify(msg, sizeof msg));
    if (!strstr(msg, fragment))
        fail_msg("verifier said \"%s\", expected it to mention \"%s\"", msg, fragment);
}

static void verify_accepts_a_sound_heap(void **state)
{
    (void)state;
    Oop old = new_old_array(3);
    gc_store(old, 0, new_array(300));
    gc_store(old, 1, new_string("x"));
    tc.roots[0] = old;
    tc.roots[1] = gc_alloc_method(CLASS_INDEX_METHOD, METHOD_FIXED_SLOTS, 3);
    assert_heap_sound();
    scavenge();
    assert_heap_sound();
    assert_true(gc_collect(true));
    assert_heap_sound();
}

static void verify_detects_a_bogus_pointer_in_a_slot(void **state)
{
    (void)state;
    Oop a = new_array(4);
    Oop b = new_array(2);
    obj_slots(a)[2] = b + 8; /* inside b, not its start */
    char where[64];
    snprintf(where, sizeof where, "eden object %#lx (class %d, 4 slots) slot 2", (unsigned long)a, CLASS_INDEX_ARRAY);
    expect_broken(where);
    expect_broken("not the start of an object");
    obj_slots(a)[2] = (Oop)0x1000; /* outside the heap */
    expect_broken("slot 2 holds 0x1000");
    obj_slots(a)[2] = (Oop)6; /* misaligned, not an immediate */
    expect_broken("neither an immediate nor an aligned address");
    obj_slots(a)[2] = b;
    assert_heap_sound();
}

static void verify_detects_a_pointer_into_unused_eden(void **state)
{
    (void)state;
    Oop a = new_array(1);
    obj_slots(a)[0] = gc_eden_top + 64;
    expect_broken("not the start of an object");
}

static void verify_detects_a_missing_write_barrier(void **state)
{
    (void)state;
    Oop old = new_old_array(1);
    tc.roots[0] = old;
    scavenge(); /* drops the new object's remembered entry */
    obj_slots(old)[0] = new_array(1); /* raw store: no barrier */
    expect_broken("not remembered");
}

static void verify_detects_a_zero_class_index(void **state)
{
    (void)state;
    Oop a = new_array(1);
    *obj_header_ptr(a) &= ~OBJ_CLASS_MASK;
    char where[64];
    snprintf(where, sizeof where, "object %#lx has class index 0", (unsigned long)a);
    expect_broken(where);
}

static void verify_detects_a_forwarded_bit_outside_a_collection(void **state)
{
    (void)state;
    Oop a = new_old_array(1);
    *obj_header_ptr(a) |= OBJ_GC_FORWARDED;
    expect_broken("FORWARDED");
}

static void verify_detects_an_undefined_format(void **state)
{
    (void)state;
    Oop a = new_array(1);
    *obj_header_ptr(a) |= (uint64_t)3 << OBJ_FORMAT_SHIFT;
    expect_broken("undefined format 3");
}

static void verify_detects_a_remembered_bit_without_an_entry(void **state)
{
    (void)state;
    Oop old = new_old_array(0);
    *obj_header_ptr(old) |= OBJ_GC_REMEMBERED;
    expect_broken("REMEMBERED bit");
}

static void verify_detects_an_object_running_past_its_space(void **state)
{
    (void)state;
    Oop a = new_array(1);
    *obj_header_ptr(a) = (obj_header(a) & ~((uint64_t)0xff << OBJ_SLOTS_SHIFT)) | ((uint64_t)200 << OBJ_SLOTS_SHIFT);
    expect_broken("runs past the end");
}

static void verify_detects_a_broken_method_header(void **state)
{
    (void)state;
    Oop m = gc_alloc_method(CLASS_INDEX_METHOD, 3, 8);
    obj_slots(m)[0] = oop_from_int(9); /* more pointer slots than it has */
    expect_broken("method");
}

static void verify_leaves_the_heap_usable_after_a_failure(void **state)
{
    (void)state;
    Oop a = new_array(1);
    tc.roots[0] = a;
    obj_slots(a)[0] = (Oop)0x1000;
    expect_broken("slot 0");
    obj_slots(a)[0] = nil_obj;
    /* The verifier's bits are cleared: a full GC marks from a clean bitmap. */
    assert_true(gc_collect(true));
    assert_heap_sound();
}

static void broken_heap_aborts_a_collection_under_gc_verify(void **state)
{
    (void)state;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], 2);
        Oop a = new_array(3);
        tc.roots[0] = a;
        obj_slots(a)[1] = a + 16;
        gc_collect(false);
        _exit(0);
    }
    close(pipefd[1]);
    char out[1024] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(pipefd[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    if (!strstr(out, "stvm: gc-verify: before scavenge: eden object"))
        fail_msg("stderr was: %s", out);
    assert_non_null(strstr(out, "slot 1"));
}

static void verify_checks_roots_during_a_collection(void **state)
{
    (void)state;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], 2);
        tc.roots[5] = new_array(2) + 8;
        gc_collect(true);
        _exit(0);
    }
    close(pipefd[1]);
    char out[1024] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(pipefd[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    if (!strstr(out, "stvm: gc-verify: before full GC: root 5"))
        fail_msg("stderr was: %s", out);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_small_heap, teardown_heap)
    const struct CMUnitTest tests[] = {
        T(verify_accepts_a_sound_heap),
        T(verify_detects_a_bogus_pointer_in_a_slot),
        T(verify_detects_a_pointer_into_unused_eden),
        T(verify_detects_a_missing_write_barrier),
        T(verify_detects_a_zero_class_index),
        T(verify_detects_a_forwarded_bit_outside_a_collection),
        T(verify_detects_an_undefined_format),
        T(verify_detects_a_remembered_bit_without_an_entry),
        T(verify_detects_an_object_running_past_its_space),
        T(verify_detects_a_broken_method_header),
        T(verify_leaves_the_heap_usable_after_a_failure),
        T(broken_heap_aborts_a_collection_under_gc_verify),
        T(verify_checks_roots_during_a_collection),
    };
    return cmocka_run_group_tests_name("gc_verify", tests, NULL, NULL);
}
