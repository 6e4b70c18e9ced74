/*
 * vm/interp/walkfacts.h — what a profiler must know to walk stvm's stacks at a
 * sample (proto/stackabi.h's ProfWalkFacts): where the interpreter's
 * code is, where the stack pages and their descriptors are, the frame,
 * context and method layouts, and where machine code saves its state.
 *
 * Who may call: vm/boot/boot.c (published in the export), the in-VM sampler.
 */
#ifndef VM_WALKFACTS_H
#define VM_WALKFACTS_H

#include "proto/stackabi.h"

/* Fills f from the booted VM (stack pages made, JIT initialised or not). */
void vm_walk_facts(ProfWalkFacts *f);

#endif
