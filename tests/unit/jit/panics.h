/*
 * tests/unit/jit/panics.h — shared by the jit unit tests: does a broken
 * invariant really stop the VM? Include after cmocka.h.
 */
#ifndef TESTS_UNIT_JIT_PANICS_H
#define TESTS_UNIT_JIT_PANICS_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn in a child and answers whether it died of abort (vm_panic). */
static bool panics(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(2);
        fn();
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

#endif
