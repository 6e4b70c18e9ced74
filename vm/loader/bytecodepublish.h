/*
 * vm/loader/bytecodepublish.h — the methods' bytecodes as code events
 * (profiler/codeevents.h, kind PROF_CODE_BYTECODES), so a profiler can turn
 * the interpreter's ip (r15, vm/interp/interp.h) in a sample into a method and a
 * bytecode pc, as it does machine-code pcs with the JIT's maps.
 *
 * Every method the loader makes is registered (a strong GC root: methods
 * live as long as their classes anyway); the loads are announced once its
 * class is complete (names need the class). Methods live in old space, so
 * only a full GC moves them: after one, every method whose bytecodes moved
 * is announced as a move, in ascending old address, the order in which the
 * sliding compactor frees their destinations.
 *
 * Who may call: vm/loader/loader.c and vm/boot/snapshot.c (add, flush, the list),
 * vm/boot/boot.c (GC hooks), vm/jit/jitpublish.c (replay).
 */
#ifndef VM_BYTECODEPUBLISH_H
#define VM_BYTECODEPUBLISH_H

#include "gc/heap.h"
#include "profiler/codeevents.h"

void vm_bytecode_publish_add(Oop method);
/* Announces the loads of the methods added since the last flush. */
void vm_bytecode_publish_flush(void);
void vm_bytecode_publish_visit_roots(GcVisitFn visit, void *ctx);
/* The registered methods in registration order (vm/boot/snapshot.c saves them
 * and registers them again in that order). */
size_t vm_bytecode_publish_count(void);
Oop vm_bytecode_publish_method(size_t i);
void vm_bytecode_publish_after_full_gc(void);
/* Re-announces every method's load to one late sink. */
void vm_bytecode_publish_replay(const ProfCodeSink *to);

#endif
