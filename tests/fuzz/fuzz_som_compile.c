/*
 * tests/fuzz/fuzz_som_compile.c — the SOM compiler (vm/compiler/lexer.c,
 * vm/compiler/parser.c, vm/compiler/codegen.c) on arbitrary bytes as a class file, then the
 * disassembler (vm/compiler/bytecode_listing.c) over every method it produced.
 *
 * The compiler is heap-free (vm/compiler/classdesc.h): it needs no booted universe,
 * only a field resolver, so the input reaches it as from vm/loader/loader.c
 * without the VM around it (which the clang fuzz build cannot compile:
 * see the top CMakeLists.txt). The resolver below plays a small class
 * library: Base has fields, Nope does not exist, every other superclass
 * has none, and every metaclass has the VM's hidden slots, whose names
 * start with '$' as the loader's do.
 */
#include "tests/fuzz/fuzz.h"
#include "vm/compiler/classdesc.h"

#include <stdio.h>
#include <string.h>

static const char *const fuzz_hidden[] = {"$h0", "$h1", "$h2", "$h3", "$h4", "$h5", "$h6"};
static const char *const fuzz_base_fields[] = {"a", "b"};
static const char *const fuzz_base_class_fields[] = {"$h0", "$h1", "$h2", "$h3", "$h4", "$h5", "$h6", "cf"};

static bool fuzz_resolve(const char *super, bool class_side, const char *const **names, size_t *count, void *ctx)
{
    (void)ctx;
    if (strcmp(super, "Nope") == 0)
        return false;
    if (strcmp(super, "Base") == 0) {
        *names = class_side ? fuzz_base_class_fields : fuzz_base_fields;
        *count = class_side ? 8 : 2;
        return true;
    }
    *names = fuzz_hidden;
    *count = class_side ? 7 : 0;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    CompileError err;
    ClassDesc *c = vm_compile_class("Fuzz.som", (const char *)data, size, fuzz_resolve, NULL, &err);
    if (!c) {
        /* the message is printed as "file:line:col: error: msg" */
        if (sink)
            fprintf(sink, "%s:%d:%d: error: %s\n", err.file, err.line, err.col, err.msg);
        return 0;
    }
    if (sink) {
        for (size_t i = 0; i < c->ninst_methods; i++)
            vm_disassemble_desc(sink, c->inst_methods[i], 0);
        for (size_t i = 0; i < c->nclass_methods; i++)
            vm_disassemble_desc(sink, c->class_methods[i], 0);
    }
    vm_class_desc_free(c);
    return 0;
}
