/*
 * vm/interp/traceback.h — how stvm prints a Smalltalk stack, for runtime
 * errors (one layout for every kind, as Python prints its tracebacks), for
 * System>>printStackTrace and for panics.
 *
 * A runtime error is, on stderr only (stdout is flushed first, so output the
 * program printed comes before it):
 *
 *   Traceback (most recent call last):
 *     System>>initialize: (System.som:21)
 *     Foo>>run (Foo.som:4)
 *     [] in Foo>>run (Foo.som:5)
 *   error: Foo does not understand #bar
 *
 * Frames go outermost first, each as [[] in ]Class>>selector (File.som:line)
 * with the line of the send it is suspended at. The error machinery's own
 * frames on top of the stack (Object>>doesNotUnderstand:arguments:,
 * >>escapedBlock:, >>subclassResponsibility, >>unknownGlobal:,
 * System>>resolve:; Object>>error: is a primitive and has none) are left
 * out. A frame repeated more than VM_TRACEBACK_REPEATS times in a row
 * (recursion) prints VM_TRACEBACK_REPEATS times and then
 * "  [Previous line repeated N more times]"; when more than
 * VM_TRACEBACK_HEAD + VM_TRACEBACK_TAIL such runs remain, the outermost
 * VM_TRACEBACK_HEAD and innermost VM_TRACEBACK_TAIL are printed with
 * "  ... N frames omitted ..." between them. The printer keeps only those
 * runs, so any depth prints in constant memory.
 *
 * Nothing here allocates in the heap or collects. Who may call: the
 * interpreter (vm/interp/interp.c), with its registers written back.
 */
#ifndef VM_TRACEBACK_H
#define VM_TRACEBACK_H

#include "gc/object.h"

#include <stddef.h>
#include <stdio.h>

#define VM_TRACEBACK_HEADER "Traceback (most recent call last):"
#define VM_TRACEBACK_REPEATS 3 /* as Python's traceback module */
#define VM_TRACEBACK_HEAD 5    /* runs shown from the outermost end of a long stack */
#define VM_TRACEBACK_TAIL 20   /* runs shown from the innermost end, where the error is */

/* Prints the frames from fp (suspended at bytecode pc bcpc_after, just past
 * its current send) down to the first frame. skip_machinery: leave out the
 * error machinery's frames on top. Answers the number of frames walked. */
size_t vm_traceback_print_frames(FILE *out, Oop *fp, size_t bcpc_after, bool skip_machinery);

/* The whole report of a runtime error: header, frames, "error: " msg. */
void vm_traceback_report(FILE *out, Oop *fp, size_t bcpc_after, const char *msg);

#endif
