/*
 * vm/model/panic.c — the VM's ways out: panics, out of memory, exits.
 *
 * They sit in the model, the lowest part of vm/, because every layer calls
 * them; what the higher layers add (the Smalltalk stack, the exit
 * reports) comes in through vm_set_exit_hooks.
 */
#include "vm/model/vm.h"

#include "base/check.h"
#include "gc/heap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static VmExitHooks hooks;

void vm_set_exit_hooks(const VmExitHooks *h) { hooks = *h; }

noreturn void vm_exit(int status)
{
    fflush(stdout);
    if (hooks.before_exit) hooks.before_exit(status);
    fflush(stderr);
    exit(status);
}

noreturn void vm_out_of_memory(const char *what)
{
    fflush(stdout);
    fprintf(stderr,
            "stvm: out of memory while allocating %s: the heap limit of %zu MiB is reached "
            "(old space in use: %zu MiB). Raise it with --heap-size.\n",
            what, vm_options.heap_bytes >> 20, gc_old_used_bytes() >> 20);
    vm_exit(1);
}

noreturn void vm_panic(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "stvm: panic: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nSmalltalk stack:\n");
    if (hooks.print_backtrace) hooks.print_backtrace(stderr);
    abort();
}

noreturn void vm_assert_fail(const char *file, int line, const char *func, const char *cond, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    base_check_describe(msg, sizeof msg, "assertion", file, line, func, cond, fmt, ap);
    va_end(ap);
    vm_panic("%s", msg);
}
