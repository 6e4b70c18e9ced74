/*
 * vm/model/method.c — what a compiled method says about itself: its line
 * table decoded, its name, the file it came from (vm/model/method.h draws
 * the layout; vm/loader/loader.c writes the line table).
 */
#include "vm/model/method.h"

#include "vm/model/class.h"
#include "vm/model/universe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t vm_method_lines(Oop m, uint32_t *pairs, size_t cap)
{
    Oop t = obj_slots(m)[METHOD_LINES];
    if (!oop_is_ptr(t) || t == vm_nil) return 0;
    const uint8_t *p = obj_bytes(t), *end = p + obj_byte_length(t);
    uint64_t pc = 0;
    int64_t line = 0;
    size_t n = 0;
    while (p < end) {
        uint64_t vals[2];
        for (int k = 0; k < 2; k++) {
            uint64_t v = 0;
            int shift = 0;
            uint8_t b;
            do {
                b = *p++;
                v |= (uint64_t)(b & 0x7f) << shift;
                shift += 7;
            } while ((b & 0x80) && p < end);
            vals[k] = v;
        }
        pc += vals[0];
        line += (int64_t)(vals[1] >> 1) ^ -(int64_t)(vals[1] & 1);
        if (n < cap) {
            pairs[2 * n] = (uint32_t)pc;
            pairs[2 * n + 1] = (uint32_t)line;
        }
        n++;
    }
    return n;
}

int vm_method_line_at(Oop m, size_t bcpc)
{
    uint32_t small[64], *pairs = small;
    size_t n = vm_method_lines(m, small, 32);
    if (n > 32) {
        pairs = malloc(n * 2 * sizeof *pairs);
        if (!pairs) return 0;
        vm_method_lines(m, pairs, n);
    }
    int found = 0;
    for (size_t i = 0; i < n && pairs[2 * i] <= bcpc; i++) found = (int)pairs[2 * i + 1];
    if (pairs != small) free(pairs);
    return found;
}

const char *vm_method_source_path(Oop method, char *buf, size_t len)
{
    Oop holder = obj_slots(method)[METHOD_HOLDER];
    if (!oop_is_ptr(holder) || holder == vm_nil) return NULL;
    Oop f = obj_slots(holder)[CLASS_FILE];
    return vm_is_string(f) ? vm_string_cstr(f, buf, len) : NULL;
}

static bool is_block_method(Oop o)
{
    return oop_is_ptr(o) && o && o != vm_nil && obj_class_index(o) == CLASS_INDEX_METHOD && vm_method_is_block(o);
}

/* Counts the blocks under method m (its block literals, depth first) into
 * *count, noting in *found the 1-based position of `block` among them. */
static void number_blocks(Oop m, Oop block, int *count, int *found)
{
    size_t nlits = vm_method_pointer_slots(m) - METHOD_FIXED_SLOTS;
    for (size_t i = 0; i < nlits; i++) {
        Oop lit = vm_method_literals(m)[i];
        if (!is_block_method(lit)) continue;
        ++*count;
        if (lit == block) *found = *count;
        number_blocks(lit, block, count, found);
    }
}

const char *vm_method_name(Oop m, char *buf, size_t len)
{
    char cls[256], sel[256], nth[24] = "";
    Oop holder = obj_slots(m)[METHOD_HOLDER];
    /* a class-side method's holder is a metaclass ("Foo class"), an instance of Metaclass */
    bool named = vm_is_class(holder) || (oop_is_ptr(holder) && holder && holder != vm_nil &&
                                         obj_class_index(holder) == CLASS_INDEX_METACLASS);
    if (vm_method_is_block(m)) {
        /* a method with several blocks numbers them (literal order, depth
         * first), so profiles keep them apart: "[] in Foo>>bar #2" */
        Oop home = m;
        for (int depth = 0; is_block_method(home) && depth < 1000; depth++) home = obj_slots(home)[METHOD_OUTER];
        int count = 0, found = 0;
        if (oop_is_ptr(home) && home && home != vm_nil) number_blocks(home, m, &count, &found);
        if (count > 1 && found) snprintf(nth, sizeof nth, " #%d", found);
    }
    snprintf(buf, len, "%s%s>>%s%s", vm_method_is_block(m) ? "[] in " : "",
             named ? vm_class_name_cstr(holder, cls, sizeof cls) : "?",
             vm_string_cstr(obj_slots(m)[METHOD_SIGNATURE], sel, sizeof sel), nth);
    return buf;
}

const char *vm_method_file(Oop method, char *buf, size_t len)
{
    Oop holder = obj_slots(method)[METHOD_HOLDER];
    if (!oop_is_ptr(holder) || holder == vm_nil) return "?";
    Oop f = obj_slots(holder)[CLASS_FILE];
    if (!vm_is_string(f)) return "?";
    vm_string_cstr(f, buf, len);
    const char *slash = strrchr(buf, '/');
    return slash ? slash + 1 : buf;
}
