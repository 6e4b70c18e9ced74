/*
 * vm/model/universe.c — well-known objects, strings, symbols, globals, class table.
 *
 * The symbol table and the globals are C hash tables whose Oops are GC
 * roots. Symbols are hashed by content (stable across moves); globals by the
 * key symbol's identity hash, which the GC preserves, so neither table needs
 * rehashing after a collection.
 */
#include "vm/model/universe.h"

#include "base/hash.h"
#include "gc/heap.h"
#include "vm/model/globals.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Oop vm_nil, vm_true, vm_false, vm_system;
Oop *vm_class_table;
size_t vm_class_table_size;
static size_t class_table_capacity;

/* -- Strings, arrays, doubles ---------------------------------------------- */

Oop vm_string_new(const char *s, size_t len)
{
    Oop o = gc_alloc_bytes(CLASS_INDEX_STRING, len);
    if (o && len) memcpy(obj_bytes(o), s, len);
    return o;
}

Oop vm_string_from_cstr(const char *s) { return vm_string_new(s, strlen(s)); }

Oop vm_array_new(size_t n) { return gc_alloc(CLASS_INDEX_ARRAY, FMT_POINTERS, n); }

Oop vm_double_new(double d)
{
    Oop imm = oop_float_encode(d);
    if (imm) return imm;
    Oop o = gc_alloc(CLASS_INDEX_DOUBLE, FMT_WORDS, 1);
    if (o) memcpy(obj_slots(o), &d, 8);
    return o;
}

const char *vm_string_cstr(Oop s, char *buf, size_t buflen)
{
    size_t n = obj_byte_length(s);
    if (n >= buflen) n = buflen - 1;
    memcpy(buf, obj_bytes(s), n);
    buf[n] = 0;
    return buf;
}

/* -- Symbols --------------------------------------------------------------- */

static Oop *symtab;
static size_t symtab_cap, symtab_count;

static void symtab_grow(void)
{
    /* 512 slots (one page) hold the core library's ~240 symbols at half
     * load; each page more is a page fault at every start. */
    size_t ncap = symtab_cap ? symtab_cap * 2 : 512;
    Oop *n = calloc(ncap, sizeof(Oop));
    if (!n) vm_out_of_memory("symbol table");
    for (size_t i = 0; i < symtab_cap; i++) {
        Oop s = symtab[i];
        if (!s) continue;
        size_t j = base_fnv1a_bytes((const char *)obj_bytes(s), obj_byte_length(s)) & (ncap - 1);
        while (n[j]) j = (j + 1) & (ncap - 1);
        n[j] = s;
    }
    free(symtab);
    symtab = n;
    symtab_cap = ncap;
}

Oop vm_symbol_intern(const char *s, size_t len)
{
    if (symtab_count * 2 >= symtab_cap) symtab_grow();
    size_t j = base_fnv1a_bytes(s, len) & (symtab_cap - 1);
    for (;;) {
        Oop e = symtab[j];
        if (!e) break;
        if (obj_byte_length(e) == len && memcmp(obj_bytes(e), s, len) == 0) return e;
        j = (j + 1) & (symtab_cap - 1);
    }
    /* Symbols live as long as the VM: allocate them old so they never move
     * in scavenges (the method cache keys on their addresses). */
    size_t slots = (len + 7) / 8;
    Oop sym = gc_alloc_old(CLASS_INDEX_SYMBOL, FMT_BYTES + (unsigned)(slots * 8 - len), slots);
    if (!sym) vm_out_of_memory("symbol");
    memcpy(obj_bytes(sym), s, len);
    symtab[j] = sym;
    symtab_count++;
    return sym;
}

Oop vm_symbol_from_cstr(const char *s) { return vm_symbol_intern(s, strlen(s)); }

bool vm_symbol_adopt(Oop sym)
{
    if (!vm_is_symbol(sym)) return false;
    const char *s = (const char *)obj_bytes(sym);
    size_t len = obj_byte_length(sym);
    if (symtab_count * 2 >= symtab_cap) symtab_grow();
    size_t j = base_fnv1a_bytes(s, len) & (symtab_cap - 1);
    for (Oop e; (e = symtab[j]); j = (j + 1) & (symtab_cap - 1))
        if (obj_byte_length(e) == len && memcmp(obj_bytes(e), s, len) == 0) return false;
    symtab[j] = sym;
    symtab_count++;
    return true;
}

void vm_symbol_each(void (*fn)(Oop sym, void *ctx), void *ctx)
{
    for (size_t i = 0; i < symtab_cap; i++)
        if (symtab[i]) fn(symtab[i], ctx);
}

/* -- Globals --------------------------------------------------------------- */

static Oop *gkeys, *gvals;
static size_t gcap, gcount;

static void globals_grow(void)
{
    size_t ncap = gcap ? gcap * 2 : 256;
    Oop *nk = calloc(ncap, sizeof(Oop)), *nv = calloc(ncap, sizeof(Oop));
    if (!nk || !nv) vm_out_of_memory("globals table");
    for (size_t i = 0; i < gcap; i++) {
        if (!gkeys[i]) continue;
        size_t j = gc_identity_hash(gkeys[i]) & (ncap - 1);
        while (nk[j]) j = (j + 1) & (ncap - 1);
        nk[j] = gkeys[i];
        nv[j] = gvals[i];
    }
    free(gkeys);
    free(gvals);
    gkeys = nk;
    gvals = nv;
    gcap = ncap;
}

static size_t globals_slot(Oop sym)
{
    size_t j = gc_identity_hash(sym) & (gcap - 1);
    while (gkeys[j] && gkeys[j] != sym) j = (j + 1) & (gcap - 1);
    return j;
}

Oop vm_global_get(Oop sym)
{
    if (!gcap) return 0;
    size_t j = globals_slot(sym);
    return gkeys[j] ? gvals[j] : 0;
}

uint64_t vm_globals_epoch = 1;

void vm_global_put(Oop sym, Oop value)
{
    /* machine code caches globals under the epoch's low 32 bits: never 0 */
    if ((uint32_t)++vm_globals_epoch == 0) vm_globals_epoch++;
    if ((gcount + 1) * 2 >= gcap) globals_grow();
    size_t j = globals_slot(sym);
    if (!gkeys[j]) {
        gkeys[j] = sym;
        gcount++;
    }
    gvals[j] = value;
}

void vm_global_each(void (*fn)(Oop key, Oop value, void *ctx), void *ctx)
{
    for (size_t i = 0; i < gcap; i++)
        if (gkeys[i]) fn(gkeys[i], gvals[i], ctx);
}

/* -- Class table ----------------------------------------------------------- */

uint32_t vm_class_table_add(Oop cls)
{
    if (vm_class_table_size == class_table_capacity) {
        size_t ncap = class_table_capacity ? class_table_capacity * 2 : 256;
        if (ncap > OBJ_CLASS_MASK) vm_panic("class table full (%zu classes)", vm_class_table_size);
        Oop *n = realloc(vm_class_table, ncap * sizeof(Oop));
        if (!n) vm_out_of_memory("class table");
        for (size_t i = class_table_capacity; i < ncap; i++) n[i] = vm_nil;
        vm_class_table = n;
        class_table_capacity = ncap;
    }
    vm_class_table[vm_class_table_size] = cls;
    return (uint32_t)vm_class_table_size++;
}

void vm_class_table_reserve(size_t n)
{
    while (vm_class_table_size < n) vm_class_table_add(vm_nil);
}

/* -- Roots ----------------------------------------------------------------- */

void vm_universe_visit_roots(GcVisitFn visit, void *ctx)
{
    visit(&vm_nil, ctx);
    visit(&vm_true, ctx);
    visit(&vm_false, ctx);
    visit(&vm_system, ctx);
    for (size_t i = 0; i < vm_class_table_size; i++) visit(&vm_class_table[i], ctx);
    for (size_t i = 0; i < symtab_cap; i++)
        if (symtab[i]) visit(&symtab[i], ctx);
    for (size_t i = 0; i < gcap; i++)
        if (gkeys[i]) {
            visit(&gkeys[i], ctx);
            visit(&gvals[i], ctx);
        }
}

void vm_universe_reset(void)
{
    free(symtab);
    free(gkeys);
    free(gvals);
    free(vm_class_table);
    symtab = gkeys = gvals = vm_class_table = NULL;
    symtab_cap = symtab_count = gcap = gcount = 0;
    vm_class_table_size = class_table_capacity = 0;
    vm_nil = vm_true = vm_false = vm_system = 0;
}

void vm_universe_fill_nil_slots(void)
{
    for (size_t i = 0; i < class_table_capacity; i++)
        if (!vm_class_table[i]) vm_class_table[i] = vm_nil;
}
