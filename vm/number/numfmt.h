/*
 * vm/number/numfmt.h — Double <-> text, without touching the heap.
 *
 * Printing gives the shortest decimal that reads back to the same double
 * (Steele & White / Burger & Dybvig free-format digits, computed exactly
 * with GMP's mpn layer), in the layout of SOM's reference output:
 *
 *   value                      text
 *   ------------------------   ------------------------------
 *   1e-4 <= |d| < 1e16, 0      positional, ".0" when integral   1.0  0.1  -0.0
 *   otherwise                  d[.ddd]e[-]x                     1e100  1.5e-7
 *   NaN, infinities            NaN  inf  -inf
 *
 * Parsing accepts [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
 * and the printed forms of NaN and the infinities, and rounds correctly.
 * Integers have their own text routines in vm/number/bigint.h.
 *
 * Who may call: anyone (pure C, no Oops).
 */
#ifndef VM_NUMFMT_H
#define VM_NUMFMT_H

#include <stdbool.h>
#include <stddef.h>

/* The longest text is 24 characters ("-" + 17 digits + "." + "e-324");
 * with the NUL and some slack: */
#define VM_NUMFMT_DOUBLE_BUFSIZE 32
/* A double needs at most 17 significant digits to round-trip. */
#define VM_NUMFMT_DIGITS_MAX 17

/* Writes d's text and a NUL into buf; answers the length. */
size_t vm_numfmt_double(double d, char buf[VM_NUMFMT_DOUBLE_BUFSIZE]);

/* Shortest round-trip digits of a finite v > 0: writes n ASCII digits
 * (no NUL, no trailing zeros) with v ~= 0.d1d2..dn * 10^(*exp10); answers n. */
int vm_numfmt_shortest_digits(double v, char digits[VM_NUMFMT_DIGITS_MAX], int *exp10);

/* Parses all of s[0..len); false (and *out untouched) on bad syntax. */
bool vm_numfmt_parse_double(const char *s, size_t len, double *out);

#endif
