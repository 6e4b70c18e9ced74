/*
 * vm/compiler/bytecode_listing.c — readable listings of compiled methods and their blocks.
 *
 *   method at:put: (args 2, temps 1, max stack 3, line 12)
 *     vars: 0 i, 1 v, 2 t
 *        0  L13  PUSH_VAR          1  v
 *        2       SEND              0 #foo: 1
 *        5  L14  JUMP_IF_FALSE     3  -> 11
 *        8       PUSH_BLOCK        1
 *                block (args 1, temps 0, max stack 1, line 14)
 *                  …
 *
 * Operands come from the bytecode table, so a new bytecode is listed
 * without changes here. Truncated code is reported, never read past.
 */
#include "vm/bytecode/bytecodes.h"
#include "vm/compiler/classdesc.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void print_text(FILE *out, const char *s, size_t len, size_t limit)
{
    for (size_t i = 0; i < len && i < limit; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        case '\'': fputs("\\'", out); break;
        case '\\': fputs("\\\\", out); break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\x%02x", c);
            else
                fputc(c, out);
        }
    }
    if (len > limit)
        fputs("...", out);
}

static void print_literal(FILE *out, const Literal *l)
{
    switch (l->kind) {
    case LIT_INT: fprintf(out, "%" PRId64, l->i); break;
    case LIT_BIGINT: fputs(l->s, out); break;
    case LIT_DOUBLE: {
        char buf[40];
        snprintf(buf, sizeof buf, "%.17g", l->d);
        fputs(buf, out);
        if (isfinite(l->d) && !strpbrk(buf, ".e"))
            fputs(".0", out);
        break;
    }
    case LIT_STRING:
        fputc('\'', out);
        print_text(out, l->s, l->len, 60);
        fputc('\'', out);
        break;
    case LIT_SYMBOL:
        fputc('#', out);
        print_text(out, l->s, l->len, 60);
        break;
    case LIT_ARRAY:
        fputs("#(", out);
        for (size_t i = 0; i < l->nelems; i++) {
            if (i)
                fputc(' ', out);
            if (i == 16) {
                fputs("...", out);
                break;
            }
            print_literal(out, &l->elems[i]);
        }
        fputc(')', out);
        break;
    case LIT_BLOCK: fputs("[block]", out); break;
    case LIT_NIL: fputs("nil", out); break;
    case LIT_TRUE: fputs("true", out); break;
    case LIT_FALSE: fputs("false", out); break;
    }
}

static void print_header(FILE *out, const MethodDesc *m, int indent)
{
    fprintf(out, "%*s%s %s (args %d, temps %d, max stack %d, line %d)\n", indent, "",
            m->is_block ? "block in" : "method", m->selector ? m->selector : "?", m->nargs,
            m->ntemps, m->max_stack, m->line);
    int nvars = m->nargs + m->ntemps;
    if (nvars > 0 && m->var_names) {
        fprintf(out, "%*s  vars:", indent, "");
        for (int i = 0; i < nvars; i++)
            fprintf(out, "%s %d %s", i ? "," : "", i, m->var_names[i] ? m->var_names[i] : "?");
        fputc('\n', out);
    }
}

static const Literal *literal_at(const MethodDesc *m, unsigned idx)
{
    return idx < m->nlits ? &m->lits[idx] : NULL;
}

static void print_literal_operand(FILE *out, const MethodDesc *m, unsigned idx)
{
    const Literal *l = literal_at(m, idx);
    if (l) {
        fputc(' ', out);
        print_literal(out, l);
    } else {
        fputs(" <bad literal index>", out);
    }
}

void vm_disassemble_desc(FILE *out, const MethodDesc *m, int indent)
{
    print_header(out, m, indent);
    if (m->is_primitive) {
        fprintf(out, "%*s  primitive\n", indent, "");
        return;
    }
    size_t li = 0;
    size_t pc = 0;
    while (pc < m->code_len) {
        unsigned op = m->code[pc];
        char line_col[16] = "";
        /* A line is shown where its run starts. */
        while (li < m->nlines && m->lines[li].bcpc < pc)
            li++;
        if (li < m->nlines && m->lines[li].bcpc == pc)
            snprintf(line_col, sizeof line_col, "L%" PRIu32, m->lines[li++].line);
        if (op >= BC_COUNT) {
            fprintf(out, "%*s  %5zu %-5s <bad bytecode %u>\n", indent, "", pc, line_col, op);
            return;
        }
        size_t len = vm_bytecode_length[op];
        if (pc + len > m->code_len) {
            fprintf(out, "%*s  %5zu %-5s %s <truncated>\n", indent, "", pc, line_col,
                    vm_bytecode_name[op]);
            return;
        }
        const uint8_t *c = m->code + pc;
        const char *ops = vm_bytecode_operands[op];
        unsigned a = 0, b = 0;
        if (ops[0] == 'b')
            a = c[1];
        else if (ops[0] == 'w')
            a = (unsigned)c[1] | (unsigned)c[2] << 8;
        if (ops[0] && ops[1] == 'b')
            b = c[ops[0] == 'w' ? 3 : 2];
        fprintf(out, "%*s  %5zu %-5s %-16s", indent, "", pc, line_col, vm_bytecode_name[op]);
        switch (op) {
        case BC_PUSH_VAR:
        case BC_STORE_VAR:
        case BC_POP_VAR:
            fprintf(out, " %u", a);
            if ((int)a < m->nargs + m->ntemps && m->var_names && m->var_names[a])
                fprintf(out, " %s", m->var_names[a]);
            break;
        case BC_PUSH_OUTER:
        case BC_STORE_OUTER:
        case BC_POP_OUTER:
            fprintf(out, " %u level %u", a, b);
            break;
        case BC_PUSH_FIELD:
        case BC_STORE_FIELD:
        case BC_POP_FIELD:
            fprintf(out, " %u", a);
            break;
        case BC_PUSH_LITERAL:
        case BC_PUSH_LITERAL_W:
        case BC_PUSH_GLOBAL:
        case BC_PUSH_GLOBAL_W:
        case BC_PUSH_BLOCK:
        case BC_PUSH_BLOCK_W:
            fprintf(out, " %u", a);
            if (op != BC_PUSH_BLOCK && op != BC_PUSH_BLOCK_W)
                print_literal_operand(out, m, a);
            break;
        case BC_SEND:
        case BC_SEND_W:
        case BC_SUPER_SEND:
        case BC_SUPER_SEND_W:
            fprintf(out, " %u", a);
            print_literal_operand(out, m, a);
            fprintf(out, " %u", b);
            break;
        case BC_JUMP:
        case BC_JUMP_IF_TRUE:
        case BC_JUMP_IF_FALSE:
        case BC_JUMP_IF_NIL:
        case BC_JUMP_IF_NOT_NIL:
            fprintf(out, " %u -> %zu", a, pc + len + a);
            break;
        case BC_JUMP_BACK:
            if (a > pc + len)
                fprintf(out, " %u -> <before start>", a);
            else
                fprintf(out, " %u -> %zu", a, pc + len - a);
            break;
        default:
            if (op >= BC_SEND_ADD && op <= BC_SEND_LAST_SPECIAL)
                fprintf(out, " #%s", vm_special_selector[op - BC_SEND_ADD]);
            else if (ops[0])
                fprintf(out, " %u", a);
            if (ops[0] && ops[1])
                fprintf(out, " %u", b);
            break;
        }
        fputc('\n', out);
        if (op == BC_PUSH_BLOCK || op == BC_PUSH_BLOCK_W) {
            const Literal *l = literal_at(m, a);
            if (l && l->kind == LIT_BLOCK && l->block)
                vm_disassemble_desc(out, l->block, indent + 8);
        }
        pc += len;
    }
}
