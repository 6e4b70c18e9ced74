/*
 * vm/prims/prims.h — the primitive tables of vm/prims/, each ended by an
 * entry whose class_name is NULL (vm/model/primitive.h says how a
 * primitive is written). vm/boot/boot.c hands them to the loader, which
 * binds `primitive` methods to them (vm_prims_init, vm/loader/loader.h).
 */
#ifndef VM_PRIMS_PRIMS_H
#define VM_PRIMS_PRIMS_H

#include "vm/model/primitive.h"

extern const VmPrimDef vm_prims_integer[];
extern const VmPrimDef vm_prims_double[];
extern const VmPrimDef vm_prims_string[];
extern const VmPrimDef vm_prims_object[];
extern const VmPrimDef vm_prims_array[];
extern const VmPrimDef vm_prims_class[];
extern const VmPrimDef vm_prims_system[];

#endif
