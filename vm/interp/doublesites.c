/*
 * vm/interp/doublesites.c — the table of vm/interp/doublesites.h.
 */
#include "vm/interp/doublesites.h"

const uint8_t *vm_double_sites[VM_DOUBLE_SITES];
