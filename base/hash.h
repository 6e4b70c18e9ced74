/*
 * base/hash.h — the hashes of the tree: FNV-1a over bytes and Knuth's
 * multiplicative hash of a word.
 *
 * FNV-1a (64 bits, the published offset basis and prime) keys every table
 * of strings and byte runs: the symbol table, String and number hashcodes,
 * the compiler's literal pool, report/'s indexes, the symbolizer's change
 * detection. Not for adversarial input: anything may call it.
 *
 * base_hash_word spreads a 32-bit word (an address's low bits, a class index)
 * by Knuth's multiplier, 2^32 divided by the golden ratio (TAOCP vol. 3,
 * 6.4); the caller takes the high bits it needs (base_hash_word_top) or
 * masks the product. The JIT emits the same product (jit/sendsite.c), so the
 * multiplier is a constant here, not hidden in a function.
 */
#ifndef BASE_HASH_H
#define BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define BASE_FNV1A_BASIS 14695981039346656037ull /* 0xcbf29ce484222325 */
#define BASE_FNV1A_PRIME 1099511628211ull        /* 0x100000001b3 */

#define BASE_HASH_KNUTH_MULTIPLIER 2654435761u

/* FNV-1a over n bytes at p, continuing from h (start with BASE_FNV1A_BASIS). */
static inline uint64_t base_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= BASE_FNV1A_PRIME;
    }
    return h;
}

/* FNV-1a of n bytes from the offset basis. */
static inline uint64_t base_fnv1a_bytes(const void *p, size_t n) { return base_fnv1a(BASE_FNV1A_BASIS, p, n); }

/* Knuth's multiplicative hash of w, all 32 bits of the product. */
static inline uint32_t base_hash_word(uint32_t w) { return w * BASE_HASH_KNUTH_MULTIPLIER; }

/* The top bits of base_hash_word(w), the well-mixed ones: an index in
 * [0, 2^bits), for 1 <= bits <= 32. */
static inline uint32_t base_hash_word_top(uint32_t w, unsigned bits) { return base_hash_word(w) >> (32 - bits); }

/* base_hash_word_top of a pointer's low 32 bits (object and code addresses
 * differ there). */
static inline uint32_t base_hash_ptr_top(const void *p, unsigned bits)
{
    return base_hash_word_top((uint32_t)(uintptr_t)p, bits);
}

#endif
