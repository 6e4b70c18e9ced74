/*
 * vm/loader/loader.h — finding class files on the classpath and turning compiled
 * ClassDescs into class, metaclass and method objects.
 *
 * Loading allocates in old space and never collects. A compile error is
 * fatal (printed as file:line:col: error: …, exit 1), as in other SOM VMs.
 */
#ifndef VM_LOADER_H
#define VM_LOADER_H

#include "gc/object.h"
#include "vm/model/primitive.h"

#include <stdbool.h>

/* Loads class `name` from the classpath (and its superclasses first).
 * Answers the class, or 0 when no file defines it. Already-loaded classes
 * are answered from the globals. */
Oop vm_load_class(const char *name);
/* Loads the core classes the VM needs by name. */
bool vm_load_core(char *err, size_t errlen);

/* Primitive table: index -> entry, filled at boot. */
typedef enum VmSpecialPrim {
    SP_NONE = 0,
    SP_BLOCK_VALUE,
    SP_BLOCK_RESTART,
    SP_PERFORM,
    SP_PERFORM_WITH_ARGS,
    SP_PERFORM_IN_SUPER,
    SP_PERFORM_WITH_ARGS_IN_SUPER,
    SP_INVOKE_ON_WITH,
    SP_PRINT_STACK_TRACE,
    SP_FULL_GC,
    SP_ERROR, /* Object>>error: (vm/interp/traceback.h) */
    SP_MISSING, /* declared `primitive` but this VM has no such primitive */
} VmSpecialPrim;

typedef struct VmPrimEntry {
    const char *class_name;
    const char *selector;
    bool class_side;
    void *fn;            /* VmPrimFn when special == SP_NONE */
    VmSpecialPrim special;
} VmPrimEntry;

extern VmPrimEntry *vm_prim_table;
extern size_t vm_prim_count;
/* Binds the primitives: the tables (vm/model/primitive.h), after the
 * interpreter's own (block evaluation, perform:, …). Boot calls it once. */
void vm_prims_init(const VmPrimDef *const *tables, size_t ntables);

#endif
