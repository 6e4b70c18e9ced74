/*
 * vm/jit/verify.h — decoding the send sites and PICs of the code zone and
 * checking them (--jit-verify), and telling what state a site is in (the
 * code-zone statistics).
 *
 * A check that fails calls vm_panic with what it found and `when` (e.g.
 * "after linking"). `send` is the ceSend trampoline: an unlinked site's
 * target.
 *
 * Who may call: the VM's JIT runtime (after every link, compile and
 * compaction under --jit-verify; --code-zone-stats).
 */
#ifndef JIT_VERIFY_H
#define JIT_VERIFY_H

#include "vm/jit/jitmethod.h"
#include "vm/jit/zone.h"

#include <stdint.h>

typedef enum JitSiteState {
    JIT_SITE_UNLINKED,
    JIT_SITE_MONO,
    JIT_SITE_POLY,
    JIT_SITE_MEGA,
    JIT_SITE_BAD, /* does not decode, or links to no valid entry */
} JitSiteState;

/* The state of the send site returning to ra and, for a PIC, the PIC. */
JitSiteState jit_verify_site_state(JitZone *zone, const void *send, const uint8_t *ra, JitMethod **pic);
const char *jit_verify_state_name(JitSiteState s);

void jit_verify_site(JitZone *zone, const void *send, const uint8_t *ra, const char *when);
/* The map of a method or block (in order, in range, answering both ways),
 * its send sites, and that its heap method points back to it. */
void jit_verify_method(JitZone *zone, const void *send, const JitMethod *m, const char *when);
void jit_verify_zone(JitZone *zone, const void *send, const char *when);
/* At a deopt of an inlined body of method m at bcpc: that the words it
 * materialises above the arguments (temps and operand stack) are what the
 * bytecodes' own stack effects give at bcpc; panics otherwise. */
void jit_verify_deopt(Oop m, size_t bcpc, int words);

#endif
