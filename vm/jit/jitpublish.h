/*
 * vm/jit/jitpublish.h — the JIT's code events (profiler/codeevents.h): every
 * piece of machine code the zone gains, moves or loses is announced, so
 * profilers resolve a sample against the zone as it was when it was taken.
 *
 * Call load after a piece is complete (map written), move before or after
 * the bytes move (the event carries both addresses) but in the order the
 * zone moves them, free before the piece is reused.
 *
 * Who may call: vm/jit/runtime.c; vm/boot/boot.c (init); vm/boot/prim_profiler.c (names).
 */
#ifndef VM_JITPUBLISH_H
#define VM_JITPUBLISH_H

#include "vm/jit/jitmethod.h"

#include <stddef.h>

void vm_jit_publish_init(void); /* installs the replay: methods' bytecodes, then the live zone */
void vm_jit_publish_load(const JitMethod *m);
void vm_jit_publish_move(const JitMethod *from, const JitMethod *to);
void vm_jit_publish_free(const JitMethod *m);
/* The name a piece is announced by: "Class>>sel", "[] in Class>>sel",
 * "sel (closed PIC)", "ceSend". Answers buf. */
const char *vm_jit_publish_name(const JitMethod *m, char *buf, size_t len);

#endif
