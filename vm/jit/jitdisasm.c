/*
 * vm/jit/jitdisasm.c — `stvm --disassemble 'Class>>selector'`: compiles one
 * method and prints its machine code through vm/jit/disasm.h, with the names
 * only the VM knows: trampolines, methods and PICs in the zone, the
 * bytecode each mapped pc stands for, Oops embedded in the code.
 */
#include "vm/interp/interp.h"
#include "vm/jit/runtime.h"

#include "vm/jit/compile.h"
#include "vm/jit/disasm.h"
#include "vm/bytecode/bytecodes.h"
#include "vm/loader/loader.h"
#include "vm/model/class.h"
#include "vm/model/lookup.h"
#include "vm/model/globals.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"
#include "vm/model/vm.h"

#include <stdio.h>
#include <string.h>

static const char *address_name(const void *addr, char *buf, size_t len, void *ctx)
{
    (void)ctx;
    const char *t = vm_jit_trampoline_name(addr);
    if (t) return t;
    JitMethod *m = jit_zone_find(vm_jit_zone(), addr);
    if (!m || m->kind == JIT_KIND_TRAMPOLINE) return NULL;
    char name[300], sym[256];
    if (m->kind == JIT_KIND_METHOD) {
        vm_method_name(m->method, name, sizeof name);
        const char *entry = addr == jit_method_checked_entry(m)     ? " (checked entry)"
                            : addr == jit_method_unchecked_entry(m) ? " (unchecked entry)"
                                                                    : "";
        snprintf(buf, len, "%s%s", name, entry);
    } else {
        snprintf(buf, len, "%s #%s", jit_method_kind_name((JitMethodKind)m->kind),
                 vm_string_cstr(m->method, sym, sizeof sym));
    }
    return buf;
}

static const char *method_bytecode_text(Oop m, uint32_t bcpc, char *buf, size_t len)
{
    if (bcpc >= vm_method_bytecode_length(m)) return NULL;
    const uint8_t *p = vm_method_bytecodes(m) + bcpc;
    int n = snprintf(buf, len, "%s", vm_bytecode_name[p[0]]);
    char sym[256];
    if (p[0] == BC_SEND || p[0] == BC_SEND_W || p[0] == BC_SUPER_SEND || p[0] == BC_SUPER_SEND_W) {
        unsigned lit = (p[0] == BC_SEND || p[0] == BC_SUPER_SEND) ? p[1] : (unsigned)(p[1] | p[2] << 8);
        snprintf(buf + n, len - (size_t)n, " #%s", vm_string_cstr(vm_method_literals(m)[lit], sym, sizeof sym));
    } else if (p[0] == BC_PUSH_GLOBAL || p[0] == BC_PUSH_GLOBAL_W) {
        unsigned lit = p[0] == BC_PUSH_GLOBAL ? p[1] : (unsigned)(p[1] | p[2] << 8);
        snprintf(buf + n, len - (size_t)n, " %s", vm_string_cstr(vm_method_literals(m)[lit], sym, sizeof sym));
    } else if (p[0] >= BC_SEND_ADD && p[0] <= BC_SEND_LAST_SPECIAL) {
        snprintf(buf + n, len - (size_t)n, " #%s", vm_special_selector[p[0] - BC_SEND_ADD]);
    }
    return buf;
}

static const char *bytecode_text(const JitMethod *jm, uint32_t bcpc, char *buf, size_t len, void *ctx)
{
    (void)ctx;
    return method_bytecode_text(jm->method, bcpc, buf, len);
}

/* "Class>>selector: the bytecode" of an inlined method's bytecode. */
static const char *inlined_text(const JitMethod *jm, uint32_t scope, uint32_t bcpc, char *buf, size_t len, void *ctx)
{
    (void)ctx;
    if (scope >= jit_method_inline_scope_count(jm)) return NULL;
    Oop m = jit_method_inline_scopes(jm)[scope].method;
    char name[300], text[300];
    vm_method_name(m, name, sizeof name);
    const char *t = method_bytecode_text(m, bcpc, text, sizeof text);
    snprintf(buf, len, "%s, %s", name, t ? t : "?");
    return buf;
}

static const char *immediate_name(uint64_t v, char *buf, size_t len, void *ctx)
{
    (void)ctx;
    Oop o = (Oop)v;
    if (o == vm_nil) return "nil";
    if (o == vm_true) return "true";
    if (o == vm_false) return "false";
    if (oop_is_int(o) && o != 0) {
        snprintf(buf, len, "SmallInteger %lld", (long long)oop_int(o));
        return buf;
    }
    const char *named = vm_jit_trampoline_name((const void *)(uintptr_t)v);
    if (named) return named;
    if ((v & 7) || !gc_heap_contains((const void *)(uintptr_t)v)) return NULL;
    char s[256];
    if (vm_is_symbol(o)) {
        snprintf(buf, len, "#%s", vm_string_cstr(o, s, sizeof s));
        return buf;
    }
    if (obj_class_index(o) == CLASS_INDEX_METHOD || obj_class_index(o) == CLASS_INDEX_PRIMITIVE) return vm_method_name(o, buf, len);
    return NULL;
}

static bool disassemble(const char *spec, FILE *out, char *err, size_t errlen, bool after_run)
{
    const char *sep = strstr(spec, ">>");
    char cls_name[256], sel_name[256];
    size_t cl = (size_t)(sep - spec);
    if (!sep || cl == 0 || cl >= sizeof cls_name || !sep[2] || strlen(sep + 2) >= sizeof sel_name) {
        snprintf(err, errlen, "--disassemble needs 'Class>>selector', not '%s'", spec);
        return false;
    }
    memcpy(cls_name, spec, cl);
    cls_name[cl] = 0;
    snprintf(sel_name, sizeof sel_name, "%s", sep + 2);
    bool meta = cl > 6 && !strcmp(cls_name + cl - 6, " class");
    if (meta) cls_name[cl - 6] = 0;
    Oop cls = vm_load_class(cls_name);
    if (!cls) {
        snprintf(err, errlen, "--disassemble: no class %s on the classpath", cls_name);
        return false;
    }
    if (meta) cls = vm_class_of(cls);
    Oop m = vm_lookup(cls, vm_symbol_from_cstr(sel_name));
    if (!m) {
        snprintf(err, errlen, "--disassemble: %s does not understand #%s", spec, sel_name);
        return false;
    }
    /* The interpreter decides on entry which special selectors are still the VM's
     * primitives, and the JIT inlines only those: enter it once (nil isNil) so the
     * code printed is the code a run would get, inline paths included. */
    if (!after_run) vm_interpret(vm_nil, vm_symbol_from_cstr("isNil"), NULL, 0);
    char why[256];
    JitMethod *jm = vm_jit_compile_now(m, why, sizeof why);
    if (!jm) {
        snprintf(err, errlen, "--disassemble: the JIT declines %s: %s", spec, why);
        return false;
    }
    JitDisasmNames names = { .address_name = address_name, .bytecode_text = bytecode_text,
                             .immediate_name = immediate_name, .inlined_text = inlined_text };
    return jit_disasm_print(out, jm, &names, err, errlen);
}

bool vm_jit_disassemble(const char *spec, FILE *out, char *err, size_t errlen)
{
    return disassemble(spec, out, err, errlen, false);
}

bool vm_jit_disassemble_after(const char *spec, FILE *out, char *err, size_t errlen)
{
    return disassemble(spec, out, err, errlen, true);
}
