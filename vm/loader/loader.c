/*
 * vm/loader/loader.c — classpath search and ClassDesc -> heap objects.
 *
 * Class objects, metaclasses, methods and their literals are allocated in
 * old space: they live as long as the program, and the method cache keys on
 * their addresses, which then change only in a full GC.
 */
#include "vm/loader/loader.h"

#include "gc/heap.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/compiler/classdesc.h"
#include "vm/loader/bytecodepublish.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/counter.h"
#include "vm/model/globals.h"
#include "vm/model/method.h"
#include "vm/model/primitive.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"
#include "vm/number/bigint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

VmPrimEntry *vm_prim_table;
size_t vm_prim_count;

/* Class names whose instances have a fixed class index (gc/object.h). */
static const struct {
    const char *name;
    uint32_t index;
} known_classes[] = {
    {"Integer", CLASS_INDEX_SMALLINT}, {"Double", CLASS_INDEX_DOUBLE},   {"String", CLASS_INDEX_STRING},
    {"Symbol", CLASS_INDEX_SYMBOL},    {"Array", CLASS_INDEX_ARRAY},     {"Method", CLASS_INDEX_METHOD},
    {"Primitive", CLASS_INDEX_PRIMITIVE}, {"Block1", CLASS_INDEX_BLOCK1}, {"Block2", CLASS_INDEX_BLOCK2},
    {"Block3", CLASS_INDEX_BLOCK3},    {"Nil", CLASS_INDEX_NIL},         {"True", CLASS_INDEX_TRUE},
    {"False", CLASS_INDEX_FALSE},      {"System", CLASS_INDEX_SYSTEM},   {"Object", CLASS_INDEX_OBJECT},
    {"Class", CLASS_INDEX_CLASS},      {"Metaclass", CLASS_INDEX_METACLASS},
};

/* -- Primitive table ------------------------------------------------------- */

static const struct {
    const char *class_name;
    bool class_side;
    const char *selector;
    VmSpecialPrim special;
} special_prims[] = {
    {"Block", false, "value", SP_BLOCK_VALUE},
    {"Block1", false, "value", SP_BLOCK_VALUE},
    {"Block2", false, "value:", SP_BLOCK_VALUE},
    {"Block3", false, "value:with:", SP_BLOCK_VALUE},
    {"Block", false, "restart", SP_BLOCK_RESTART},
    {"Object", false, "perform:", SP_PERFORM},
    {"Object", false, "perform:withArguments:", SP_PERFORM_WITH_ARGS},
    {"Object", false, "perform:inSuperclass:", SP_PERFORM_IN_SUPER},
    {"Object", false, "perform:withArguments:inSuperclass:", SP_PERFORM_WITH_ARGS_IN_SUPER},
    {"Method", false, "invokeOn:with:", SP_INVOKE_ON_WITH},
    {"Primitive", false, "invokeOn:with:", SP_INVOKE_ON_WITH},
    {"System", false, "printStackTrace", SP_PRINT_STACK_TRACE},
    {"System", false, "fullGC", SP_FULL_GC},
    {"Object", false, "error:", SP_ERROR},
};

static size_t prim_cap;

static void prim_reserve(size_t cap)
{
    if (cap <= prim_cap) return;
    vm_prim_table = realloc(vm_prim_table, cap * sizeof *vm_prim_table);
    if (!vm_prim_table) vm_out_of_memory("primitive table");
    prim_cap = cap;
}

static void prim_add(const char *cls, bool side, const char *sel, void *fn, VmSpecialPrim sp)
{
    if (vm_prim_count == prim_cap) prim_reserve(prim_cap ? prim_cap * 2 : 256);
    vm_prim_table[vm_prim_count++] = (VmPrimEntry){cls, sel, side, fn, sp};
}

void vm_prims_init(const VmPrimDef *const *tables, size_t ntables)
{
    if (vm_prim_count) return;
    /* sized once: growing by doubling copied it into fresh pages twice
     * (a page fault each, at every start) */
    size_t want = 2 + sizeof special_prims / sizeof special_prims[0];
    for (size_t t = 0; t < ntables; t++)
        for (const VmPrimDef *d = tables[t]; d->class_name; d++) want++;
    prim_reserve(want);
    prim_add("", false, "", NULL, SP_MISSING); /* index 0 = no primitive */
    prim_add("", false, "", NULL, SP_MISSING); /* index 1 = missing primitive */
    for (size_t i = 0; i < sizeof special_prims / sizeof special_prims[0]; i++)
        prim_add(special_prims[i].class_name, special_prims[i].class_side, special_prims[i].selector, NULL,
                 special_prims[i].special);
    for (size_t t = 0; t < ntables; t++)
        for (const VmPrimDef *d = tables[t]; d->class_name; d++)
            prim_add(d->class_name, d->class_side, d->selector, (void *)d->fn, SP_NONE);
}

static intptr_t prim_index(const char *cls, bool side, const char *sel)
{
    for (size_t i = 2; i < vm_prim_count; i++) {
        VmPrimEntry *e = &vm_prim_table[i];
        if (e->class_side == side && strcmp(e->class_name, cls) == 0 && strcmp(e->selector, sel) == 0)
            return (intptr_t)i;
    }
    return 1;
}

/* -- Literals -------------------------------------------------------------- */

static Oop old_string(const char *s, size_t len, uint32_t class_index)
{
    size_t slots = (len + 7) / 8;
    Oop o = gc_alloc_old(class_index, FMT_BYTES + (unsigned)(slots * 8 - len), slots);
    if (!o) vm_out_of_memory("literal");
    if (len) memcpy(obj_bytes(o), s, len);
    return o;
}

static Oop make_method(const MethodDesc *m, Oop holder, Oop outer, const char *class_name, bool class_side);

static Oop make_literal(const Literal *l, Oop holder, Oop outer, const char *cname, bool side)
{
    bool valid = true;
    switch (l->kind) {
    case LIT_INT:
        if (oop_int_fits(l->i)) return oop_from_int(l->i);
        {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", (long long)l->i);
            Oop v = vm_int_from_decimal(buf, strlen(buf), &valid);
            if (!v) vm_out_of_memory("integer literal");
            return v;
        }
    case LIT_BIGINT: {
        Oop v = vm_int_from_decimal(l->s, strlen(l->s), &valid);
        if (!v) vm_out_of_memory("integer literal");
        return v;
    }
    case LIT_DOUBLE: {
        Oop o = oop_float_encode(l->d);
        if (o) return o;
        o = gc_alloc_old(CLASS_INDEX_DOUBLE, FMT_WORDS, 1);
        if (!o) vm_out_of_memory("literal");
        memcpy(obj_slots(o), &l->d, 8);
        return o;
    }
    case LIT_STRING: return old_string(l->s, l->len, CLASS_INDEX_STRING);
    case LIT_SYMBOL: return vm_symbol_intern(l->s, l->len);
    case LIT_NIL: return vm_nil;
    case LIT_TRUE: return vm_true;
    case LIT_FALSE: return vm_false;
    case LIT_ARRAY: {
        Oop a = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, l->nelems);
        if (!a) vm_out_of_memory("literal array");
        for (size_t i = 0; i < l->nelems; i++) gc_store(a, i, make_literal(&l->elems[i], holder, outer, cname, side));
        return a;
    }
    case LIT_BLOCK: return make_method(l->block, holder, outer, cname, side);
    }
    vm_panic("unknown literal kind %d", (int)l->kind);
}

/* Line table: LEB128 (bcpc delta, zig-zag line delta) pairs. */
static Oop make_line_table(const MethodDesc *m)
{
    if (!m->nlines) return vm_nil;
    uint8_t *buf = malloc(m->nlines * 20 + 1);
    if (!buf) vm_out_of_memory("line table");
    size_t n = 0;
    uint32_t pc = 0;
    int64_t line = 0;
    for (size_t i = 0; i < m->nlines; i++) {
        uint64_t vals[2] = {m->lines[i].bcpc - pc, 0};
        int64_t d = (int64_t)m->lines[i].line - line;
        vals[1] = ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
        pc = m->lines[i].bcpc;
        line = m->lines[i].line;
        for (int k = 0; k < 2; k++) {
            uint64_t v = vals[k];
            do {
                uint8_t b = v & 0x7f;
                v >>= 7;
                buf[n++] = (uint8_t)(b | (v ? 0x80 : 0));
            } while (v);
        }
    }
    Oop t = old_string((const char *)buf, n, CLASS_INDEX_BYTES);
    free(buf);
    return t;
}

/* Rewrites the compiler's generic variable bytecodes into forms that
 * address the frame directly (vm/bytecode/bytecodes.h, "quickened forms"): the
 * interpreter then needs no args-or-temps test per access. */
static void quicken(uint8_t *code, size_t len, int nargs)
{
    for (size_t pc = 0; pc < len; pc += vm_bytecode_length[code[pc]]) {
        uint8_t op = code[pc];
        if (op != BC_PUSH_VAR && op != BC_STORE_VAR && op != BC_POP_VAR) continue;
        int v = code[pc + 1];
        int k = op == BC_PUSH_VAR ? 0 : op == BC_STORE_VAR ? 1 : 2;
        if (v < nargs) {
            code[pc] = (uint8_t)(BC_PUSH_ARG + k);
            code[pc + 1] = (uint8_t)(1 + nargs - v); /* fp[1+nargs-v], at most 256 */
        } else {
            code[pc] = (uint8_t)(BC_PUSH_TEMP + k);
            code[pc + 1] = (uint8_t)(v - nargs);
        }
    }
}

static Oop make_method(const MethodDesc *m, Oop holder, Oop outer, const char *class_name, bool class_side)
{
    size_t ptr_slots = METHOD_FIXED_SLOTS + m->nlits;
    if (!VM_MHDR_FITS(SLOTS, ptr_slots)) vm_panic("method %s has too many literals", m->selector);
    bool prim = m->is_primitive;
    /* Every block ends in RETURN_TOP, even after a final `^ expr`: the
     * interpreter resumes there when escapedBlock: answers (vm/interp/interp.c). */
    size_t code_len = m->code_len;
    bool add_return = m->is_block && (code_len == 0 || m->code[code_len - 1] != BC_RETURN_TOP);
    if (add_return) code_len++;
    /* Methods are allocated old: the method cache keys on their addresses. */
    size_t code_slots = (code_len + 7) / 8;
    Oop meth = gc_alloc_old(prim ? CLASS_INDEX_PRIMITIVE : CLASS_INDEX_METHOD,
                            FMT_METHOD + (unsigned)(code_slots * 8 - code_len), ptr_slots + code_slots);
    if (!meth) vm_out_of_memory("method");
    obj_slots(meth)[METHOD_HEADER] =
        oop_from_int(vm_method_make_header(ptr_slots, m->nargs, m->ntemps, m->max_stack, m->is_block));
    for (size_t i = 1; i < ptr_slots; i++) obj_slots(meth)[i] = vm_nil;
    gc_store(meth, METHOD_SIGNATURE, vm_symbol_from_cstr(m->selector));
    gc_store(meth, METHOD_HOLDER, holder);
    gc_store(meth, METHOD_LINES, make_line_table(m));
    obj_slots(meth)[METHOD_PRIMITIVE] = oop_from_int(prim ? prim_index(class_name, class_side, m->selector) : 0);
    gc_store(meth, METHOD_OUTER, outer);
    vm_counter_set(meth, 0);
    for (size_t i = 0; i < m->nlits; i++)
        gc_store(meth, METHOD_FIXED_SLOTS + i, make_literal(&m->lits[i], holder, meth, class_name, class_side));
    if (m->code_len) memcpy(vm_method_bytecodes(meth), m->code, m->code_len);
    if (add_return) vm_method_bytecodes(meth)[code_len - 1] = BC_RETURN_TOP;
    quicken(vm_method_bytecodes(meth), m->code_len, m->nargs);
    vm_bytecode_publish_add(meth);
    return meth;
}

/* -- Classes --------------------------------------------------------------- */

static Oop symbol_array(char *const *names, size_t n, Oop inherited)
{
    size_t ni = inherited != vm_nil ? obj_num_slots(inherited) : 0;
    Oop a = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, ni + n);
    if (!a) vm_out_of_memory("class fields");
    for (size_t i = 0; i < ni; i++) gc_store(a, i, obj_slots(inherited)[i]);
    for (size_t i = 0; i < n; i++) gc_store(a, ni + i, vm_symbol_from_cstr(names[i]));
    return a;
}

static uint32_t known_index(const char *name)
{
    for (size_t i = 0; i < sizeof known_classes / sizeof known_classes[0]; i++)
        if (strcmp(known_classes[i].name, name) == 0) return known_classes[i].index;
    return 0;
}

/* Field-name resolver for the compiler: the superclass's full field list. */
typedef struct ResolverState {
    const char **names; /* the answer of the latest call */
    size_t cap;
    char **owned;       /* every name string handed out, freed after compiling */
    size_t nowned, owned_cap;
} ResolverState;

static void resolver_free(ResolverState *st)
{
    for (size_t i = 0; i < st->nowned; i++) free(st->owned[i]);
    free(st->owned);
    free(st->names);
}

static bool resolve_fields(const char *super_name, bool class_side, const char *const **names, size_t *count,
                           void *ctx)
{
    ResolverState *st = ctx;
    static const char *hidden[] = {CLASS_HIDDEN_FIELD_NAMES};
    size_t nh = class_side ? CLASS_FIXED_SLOTS : 0;
    Oop fields = vm_nil;
    if (strcmp(super_name, "nil") != 0) {
        Oop super = vm_load_class(super_name);
        if (!super) return false;
        Oop holder = class_side ? vm_class_of(super) : super;
        fields = obj_slots(holder)[CLASS_FIELDS];
    }
    size_t nf = fields != vm_nil ? obj_num_slots(fields) : 0;
    if (nh + nf > st->cap) {
        st->cap = nh + nf + 16;
        st->names = realloc(st->names, st->cap * sizeof(char *));
        if (!st->names) vm_out_of_memory("field names");
    }
    for (size_t i = 0; i < nh; i++) st->names[i] = hidden[i];
    for (size_t i = 0; i < nf; i++) {
        Oop s = obj_slots(fields)[i];
        size_t len = obj_byte_length(s);
        char *c = malloc(len + 1);
        if (!c) vm_out_of_memory("field names");
        memcpy(c, obj_bytes(s), len);
        c[len] = 0;
        if (st->nowned == st->owned_cap) {
            st->owned_cap = st->owned_cap ? st->owned_cap * 2 : 32;
            st->owned = realloc(st->owned, st->owned_cap * sizeof(char *));
            if (!st->owned) vm_out_of_memory("field names");
        }
        st->owned[st->nowned++] = c;
        st->names[nh + i] = c;
    }
    *names = st->names;
    *count = nh + nf;
    return true;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) vm_out_of_memory("source file");
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    fclose(f);
    *len = n;
    return buf;
}

static Oop root_metaclass_super_fixup; /* "Object class" waiting for Class to load */

static Oop install_class(ClassDesc *cd)
{
    Oop super = vm_nil;
    if (strcmp(cd->super_name, "nil") != 0) {
        super = vm_load_class(cd->super_name);
        if (!super) {
            fflush(stdout);
            fprintf(stderr, "%s: error: superclass %s of %s not found on the classpath\n", cd->file, cd->super_name,
                    cd->name);
            vm_exit(1);
        }
    }
    Oop super_meta = super != vm_nil ? vm_class_of(super) : vm_nil;
    if (super == vm_nil) {
        Oop class_class = vm_global_get(vm_symbol_from_cstr("Class"));
        super_meta = class_class ? class_class : vm_nil;
    }

    /* metaclass: its single instance is the class object */
    Oop meta = gc_alloc_old(CLASS_INDEX_METACLASS, FMT_POINTERS, CLASS_FIXED_SLOTS);
    if (!meta) vm_out_of_memory("metaclass");
    uint32_t meta_index = vm_class_table_add(meta);
    Oop inherited_class_fields = super != vm_nil ? obj_slots(super_meta)[CLASS_FIELDS] : vm_nil;
    Oop class_fields = symbol_array(cd->class_fields, cd->nclass_fields, inherited_class_fields);
    size_t nclass_fields = obj_num_slots(class_fields);

    Oop cls = gc_alloc_old(meta_index, FMT_POINTERS, CLASS_FIXED_SLOTS + nclass_fields);
    if (!cls) vm_out_of_memory("class");
    uint32_t index = known_index(cd->name);
    if (index) {
        vm_class_table[index] = cls;
        if (index == CLASS_INDEX_SMALLINT) {
            vm_class_table[CLASS_INDEX_LARGE_POS] = cls;
            vm_class_table[CLASS_INDEX_LARGE_NEG] = cls;
        }
    } else {
        index = vm_class_table_add(cls);
    }

    char metaname[600];
    snprintf(metaname, sizeof metaname, "%s class", cd->name);
    gc_store(meta, CLASS_SUPERCLASS, super_meta);
    gc_store(meta, CLASS_NAME, vm_symbol_from_cstr(metaname));
    gc_store(meta, CLASS_FIELDS, class_fields);
    obj_slots(meta)[CLASS_INSTANCE_INDEX] = oop_from_int(meta_index);
    obj_slots(meta)[CLASS_INSTANCE_FIELDS] = oop_from_int((intptr_t)(CLASS_FIXED_SLOTS + nclass_fields));
    gc_store(meta, CLASS_FILE, vm_nil);

    Oop inherited = super != vm_nil ? obj_slots(super)[CLASS_FIELDS] : vm_nil;
    Oop fields = symbol_array(cd->inst_fields, cd->ninst_fields, inherited);
    gc_store(cls, CLASS_SUPERCLASS, super);
    gc_store(cls, CLASS_NAME, vm_symbol_from_cstr(cd->name));
    gc_store(cls, CLASS_FIELDS, fields);
    obj_slots(cls)[CLASS_INSTANCE_INDEX] = oop_from_int(index);
    obj_slots(cls)[CLASS_INSTANCE_FIELDS] = oop_from_int((intptr_t)obj_num_slots(fields));
    Oop file = old_string(cd->file, strlen(cd->file), CLASS_INDEX_STRING);
    gc_store(cls, CLASS_FILE, file);
    gc_store(meta, CLASS_FILE, file);

    /* Register before compiling methods' literals: a method may name its own class. */
    vm_global_put(vm_symbol_from_cstr(cd->name), cls);

    Oop methods = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, cd->ninst_methods);
    if (!methods) vm_out_of_memory("methods");
    for (size_t i = 0; i < cd->ninst_methods; i++)
        gc_store(methods, i, make_method(cd->inst_methods[i], cls, vm_nil, cd->name, false));
    gc_store(cls, CLASS_METHODS, methods);
    Oop cmethods = gc_alloc_old(CLASS_INDEX_ARRAY, FMT_POINTERS, cd->nclass_methods);
    if (!cmethods) vm_out_of_memory("methods");
    for (size_t i = 0; i < cd->nclass_methods; i++)
        gc_store(cmethods, i, make_method(cd->class_methods[i], meta, vm_nil, cd->name, true));
    gc_store(meta, CLASS_METHODS, cmethods);

    if (super == vm_nil && super_meta == vm_nil) root_metaclass_super_fixup = meta;
    if (strcmp(cd->name, "Class") == 0 && root_metaclass_super_fixup) {
        gc_store(root_metaclass_super_fixup, CLASS_SUPERCLASS, cls);
        root_metaclass_super_fixup = 0;
    }
    vm_bytecode_publish_flush();
    return cls;
}

static Oop load_from_file(const char *path, const char *name)
{
    size_t len;
    char *src = read_file(path, &len);
    if (!src) return 0;
    ResolverState st = {0};
    CompileError err;
    memset(&err, 0, sizeof err);
    ClassDesc *cd = vm_compile_class(path, src, len, resolve_fields, &st, &err);
    free(src);
    resolver_free(&st); /* the compiler copied what it kept */
    if (!cd) {
        fflush(stdout);
        fprintf(stderr, "%s:%d:%d: error: %s\n", err.file[0] ? err.file : path, err.line, err.col, err.msg);
        vm_exit(1);
    }
    if (strcmp(cd->name, name) != 0) {
        fflush(stdout);
        fprintf(stderr, "%s:1:1: error: file defines class '%s', but its name says '%s'\n", path, cd->name, name);
        vm_exit(1);
    }
    Oop cls = install_class(cd);
    vm_class_desc_free(cd);
    vm_lookup_cache_flush();
    return cls;
}

Oop vm_load_class(const char *name)
{
    Oop sym = vm_symbol_from_cstr(name);
    Oop existing = vm_global_get(sym);
    if (existing && vm_is_class(existing)) return existing;
    if (strchr(name, '/') || strlen(name) > 400) return 0;
    for (size_t i = 0; i < vm_options.nclasspath; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.som", vm_options.classpath[i], name);
        Oop cls = load_from_file(path, name);
        if (cls) return cls;
    }
    return 0;
}

bool vm_load_core(char *err, size_t errlen)
{
    static const char *core[] = {"Object", "Class", "Metaclass", "Nil",   "Boolean", "True",
                                 "False",  "Integer", "Double", "String", "Symbol",  "Array",
                                 "Block",  "Block1", "Block2", "Block3", "Method",  "Primitive",
                                 "System"};
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++) {
        if (!vm_load_class(core[i])) {
            snprintf(err, errlen, "core class %s not found on the classpath (is smalltalk/core in -cp?)", core[i]);
            return false;
        }
    }
    return true;
}
