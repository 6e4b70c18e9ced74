/*
 * vm/doublesites.c — the table of vm/doublesites.h.
 */
#include "vm/doublesites.h"

const uint8_t *vm_double_sites[VM_DOUBLE_SITES];
