/*
 * tests/unit/vmprofd/victim.c — the process test_symbolize profiles.
 *
 * It prints the addresses of its known functions (and of libc's
 * nanosleep) on one line of stdout, then, by argv[1]:
 *   spin       victim_a -> victim_b -> victim_c, which spins forever
 *   spin-nofp  victim_a -> victim_b -> victim_c_nofp, a leaf built without
 *              a frame pointer (only DWARF unwinding finds victim_b)
 *   idle       reads commands on stdin: "load" dlopens libm and prints the
 *              address of cos; EOF exits.
 * Built -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls, so
 * every call stays a real call with a frame.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

volatile unsigned long victim_counter;
volatile int victim_spinning = 1; /* never cleared: it only keeps the loops returnable */

/* The local lives in the frame: GCC skips the frame-pointer setup of a
 * leaf that needs no stack, even with -fno-omit-frame-pointer. */
__attribute__((noinline, noipa)) void victim_c(void)
{
    volatile unsigned long local = 0;
    while (victim_spinning) {
        local++;
        victim_counter = local;
    }
}

__attribute__((noinline, noipa, optimize("omit-frame-pointer"))) void victim_c_nofp(void)
{
    while (victim_spinning)
        victim_counter += 3;
}

__attribute__((noinline, noipa)) void victim_b(int nofp)
{
    if (nofp)
        victim_c_nofp();
    else
        victim_c();
    victim_counter++;
}

__attribute__((noinline, noipa)) void victim_a(int nofp)
{
    victim_b(nofp);
    victim_counter++;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "idle";
    printf("a=%p b=%p c=%p cnofp=%p nanosleep=%p main=%p\n", (void *)victim_a, (void *)victim_b,
           (void *)victim_c, (void *)victim_c_nofp, (void *)nanosleep, (void *)main);
    fflush(stdout);
    if (strcmp(mode, "spin") == 0)
        victim_a(0);
    if (strcmp(mode, "spin-nofp") == 0)
        victim_a(1);
    char line[64];
    while (fgets(line, sizeof line, stdin) != NULL) {
        if (strncmp(line, "load", 4) == 0) {
            void *h = dlopen("libm.so.6", RTLD_NOW);
            printf("cos=%p\n", h ? dlsym(h, "cos") : NULL);
            fflush(stdout);
        }
    }
    return 0;
}
