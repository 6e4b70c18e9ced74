/*
 * tests/fuzz/fuzz.h — the one entry every harness in tests/fuzz/ defines.
 *
 * Built with clang and -DSTVM_FUZZ=ON, libFuzzer's own main drives it
 * (scripts/fuzz); in the normal build replay_main.c does, feeding it each
 * file of a corpus so that ctest checks no stored input crashes.
 *
 * A harness must not keep state between inputs that changes what an input
 * does (libFuzzer's replay of a crash must crash again), and must free
 * what it allocates (LeakSanitizer runs after every input).
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
