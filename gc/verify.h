/*
 * gc/verify.h — the heap verifier behind --gc-verify.
 *
 * gc_verify (heap.h) walks eden, the current survivor space and old space
 * and checks, stopping at the first broken invariant:
 *   - every header is sane: class index neither 0 nor SmallInteger's,
 *     a defined format, no FORWARDED or MARKED bit, REMEMBERED only on
 *     old objects, young ages below GC_TENURE_AGE, overflow words paired
 *     with a 255-slot header, the object inside its space, a method's
 *     slot 0 a SmallInteger naming at most its slot count;
 *   - every pointer slot holds an immediate, 0 or the start of an object
 *     in a used region;
 *   - every old object holding a young pointer is remembered (unless the
 *     remembered set overflowed: a full GC is then pending), and the
 *     remembered set holds exactly the objects flagged REMEMBERED;
 *   - every weak table entry (gc/weak.h) is the start of an object of its
 *     generation.
 *
 * Who may call: gc/collect.c (gc_verify_or_die); anyone (gc_verify).
 */
#ifndef GC_VERIFY_H
#define GC_VERIFY_H

/* gc_verify plus the client's roots; on failure prints
 * "stvm: gc-verify: <when>: <what>" to stderr and aborts. Only inside a
 * collection, where visiting the roots is allowed. */
void gc_verify_or_die(const char *when);

#endif
