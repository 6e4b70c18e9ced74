/*
 * profiler/ownmem.c — the VM reading its own memory for stack walks
 * (ownmem.h).
 */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "profiler/ownmem.h"

#include "proto/stackabi.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static uint64_t c_stack_lo, c_stack_hi; /* the VM thread's own stack */
static pid_t own_pid;

void prof_ownmem_init(void)
{
    own_pid = getpid();
    if (c_stack_hi) return;
    pthread_attr_t at;
    void *lo;
    size_t sz;
    if (pthread_getattr_np(pthread_self(), &at) == 0) {
        if (pthread_attr_getstack(&at, &lo, &sz) == 0) {
            c_stack_lo = (uint64_t)(uintptr_t)lo;
            c_stack_hi = c_stack_lo + sz;
        }
        pthread_attr_destroy(&at);
    }
}

/* Not instrumented: the C stack's words include AddressSanitizer's redzones,
 * which the walk may read (and ignores) like any other word. */
__attribute__((no_sanitize("address"))) static void copy_words(void *dst, uint64_t addr, size_t len)
{
    const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)addr;
    uint64_t *d = dst;
    for (size_t i = 0; i < len / 8; i++)
        d[i] = src[i];
}

bool prof_ownmem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const ProfWalkFacts *f = ctx;
    uint64_t end = addr + len;
    bool safe = (addr >= f->stack_base && end <= f->stack_base + f->page_bytes * f->npages) ||
                (addr >= f->pages_addr && end <= f->pages_addr + (uint64_t)f->page_stride * f->npages) ||
                (addr >= c_stack_lo && end <= c_stack_hi);
    if (safe && addr % 8 == 0 && len % 8 == 0) {
        copy_words(buf, addr, len);
        return true;
    }
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return syscall(SYS_process_vm_readv, own_pid, &local, 1UL, &remote, 1UL, 0UL) == (long)len;
}
