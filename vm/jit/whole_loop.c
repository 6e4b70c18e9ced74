/*
 * vm/jit/whole_loop.c — an innermost loop, a method or block whose
 * bytecodes up to its first return run forward (a body), or an inlined
 * callee's body, compiled whole (issue 26; vm/jit/DESIGN.md, "Whole loops
 * and bodies").
 *
 * The templates compile one bytecode at a time: a value crosses every
 * getter, setter and temp in memory, boxed, and each send tests its
 * receiver's class again. Here one iteration (getters, setters, stores into
 * fields and Array slots, SmallInteger and Double arithmetic and compares,
 * Boolean sends, ifs) becomes a list of values, each computed once in a
 * register: a field is read once per iteration and object, a Double decoded
 * once, a receiver's class tested once. Nothing is written until the
 * iteration's end (the commit), so every guard that fails — a class, a
 * Double or SmallInteger that is not one, an index out of bounds, an
 * overflow, a value that needs a box or a barrier — fails before anything
 * changed, and the iteration runs again in the plain code compiled after
 * this one, from the loop's head (a body from its start, an inlined callee
 * in its templates), as if this code had never run: no deopt metadata, no
 * frame to rebuild. The plain code's back jump goes to its own head, so the
 * rest of that run of the loop stays there; the next time control falls
 * into the loop, this code runs again.
 *
 * Reads see memory as it was when the iteration began, and the iteration's
 * own stores through the values they stored; a read of a field some other
 * object's setter stored first tests that the two objects differ. An if
 * runs the arm taken; what the arms leave apart is moved into one register
 * at each arm's end.
 */
#include "vm/jit/whole_loop.h"

#include <stdlib.h>
#include <string.h>

/* -- Planning: one iteration's bytecodes into values ------------------------------- */

typedef struct Plan {
    const Compiler *c;
    JitWholeLoop *L;
    int stack[32];
    int sp;
    int temp_val[VM_COMPILE_MAX_VARS + 1];
    bool read_first[VM_COMPILE_MAX_VARS + 1];
    int arg_node[VM_COMPILE_MAX_VARS + 8];
    int self_node;
    bool exited; /* the loop's exit test is planned */
    bool array_stored; /* an at:put: is planned: no at: after it (it would read memory) */
    bool inlined;      /* an inlined callee's body: c is a copy describing the callee */
    int store_floor;   /* the stores before it are not replaced (an if's arm is being planned) */
    int nifs;
    /* values carried in registers (a second planning, from the first's
     * findings): temp t's type + 1, or 0; fields of objects read from a
     * temp, an argument or self (kind, v) */
    uint8_t temp_phi[VM_COMPILE_MAX_VARS + 1];
    int nfield_phis;
    struct {
        uint8_t kind;
        int64_t v;
        int field;
        int node; /* its WN_PHI once made */
    } field_phi[8];
} Plan;

static int add(Plan *p, WKind kind, WType type, int a, int b, size_t pc)
{
    JitWholeLoop *L = p->L;
    if (L->n >= WL_NODES_MAX) return -1;
    WNode *n = &L->node[L->n];
    *n = (WNode){ .kind = (uint8_t)kind, .type = (uint8_t)type, .a = a, .b = b, .s = -1, .next = -1, .ifk = -1, .pc = pc, .reg = -1,
                  .last = -1, .klass = -1, .unboxed = -1 };
    return L->n++;
}

static bool push(Plan *p, int id)
{
    if (id < 0 || p->sp >= (int)(sizeof p->stack / sizeof p->stack[0])) return false;
    p->stack[p->sp++] = id;
    return true;
}

static int pop(Plan *p) { return p->sp > 0 ? p->stack[--p->sp] : -1; }

static bool int_known(const WNode *n) { return n->type == WT_INT || n->is_int; }

/* A value a temp, a field or a slot can hold (not a condition). */
static bool storable(const WNode *n) { return n->type == WT_OOP || n->type == WT_INT || n->type == WT_DBL; }

/* n as a SmallInteger operand: tested once. */
static int as_int(Plan *p, int id, size_t pc)
{
    WNode *n = &p->L->node[id];
    if (int_known(n)) return id;
    if (n->type != WT_OOP) return -1;
    if (add(p, WN_IS_INT, WT_NONE, id, -1, pc) < 0) return -1;
    p->L->node[id].is_int = true;
    return id;
}

/* n as a Double operand: decoded once. */
static int as_double(Plan *p, int id, size_t pc)
{
    WNode *n = &p->L->node[id];
    if (n->type == WT_DBL) return id;
    if (n->type != WT_OOP || n->is_int) return -1; /* mixed SmallInteger and Double: left to the plain code */
    if (n->unboxed >= 0) return n->unboxed;
    int u = add(p, WN_UNBOX, WT_DBL, id, -1, pc);
    if (u >= 0) p->L->node[id].unboxed = u;
    return u;
}

/* Bail unless object id is of class k (once per value). */
static bool guard_class(Plan *p, int id, uint32_t k, size_t pc)
{
    WNode *n = &p->L->node[id];
    if (n->type != WT_OOP || n->is_int || n->kind == WN_CONST) return false;
    if (n->klass == (int64_t)k) return true;
    if (n->klass >= 0) return false; /* another class: it would always bail */
    int g = add(p, WN_CLASS, WT_NONE, id, -1, pc);
    if (g < 0) return false;
    p->L->node[g].v = k;
    p->L->node[id].klass = k;
    return true;
}

static bool guard_distinct(Plan *p, int a, int b, size_t pc)
{
    for (int i = 0; i < p->L->n; i++) {
        const WNode *g = &p->L->node[i];
        if (!g->hidden && g->kind == WN_DISTINCT && ((g->a == a && g->b == b) || (g->a == b && g->b == a))) return true;
    }
    return add(p, WN_DISTINCT, WT_NONE, a, b, pc) >= 0;
}

static int constant(Plan *p, Oop v, size_t pc);

/* Value id as read again: a constant is made anew where it is used (an
 * immediate, or a register only from there), not kept in a register. */
static int reread(Plan *p, int id, size_t pc)
{
    if (!p->L->body) return id; /* (a loop's constants are loaded once, before it) */
    return id >= 0 && p->L->node[id].kind == WN_CONST ? constant(p, (Oop)p->L->node[id].v, pc) : id;
}

/* Field f of object obj as this point of the iteration sees it. */
static int read_field(Plan *p, int obj, int f, size_t pc)
{
    JitWholeLoop *L = p->L;
    for (int s = L->nfield_stores - 1; s >= 0; s--)
        if (L->store[s].obj == obj && L->store[s].field == f) return reread(p, L->store[s].value, pc);
    for (int s = 0; s < L->nfield_stores; s++)
        if (L->store[s].field == f && !guard_distinct(p, obj, L->store[s].obj, pc)) return -1;
    for (int i = 0; i < L->n; i++)
        if (!L->node[i].hidden && L->node[i].kind == WN_FIELD && L->node[i].a == obj && L->node[i].v == f) return i;
    for (int k = 0; k < p->nfield_phis; k++) {
        if (p->field_phi[k].kind != L->node[obj].kind || p->field_phi[k].v != L->node[obj].v ||
            p->field_phi[k].field != f)
            continue;
        if (p->field_phi[k].node < 0) {
            int id = add(p, WN_PHI, WT_DBL, obj, -1, pc);
            if (id < 0) return -1;
            L->node[id].v = f;
            p->field_phi[k].node = id;
        }
        return p->field_phi[k].node;
    }
    int id = add(p, WN_FIELD, WT_OOP, obj, -1, pc);
    if (id >= 0) L->node[id].v = f;
    return id;
}

/* Records the store of value into field f of obj. When the iteration's last
 * store of that field was into obj too, it is replaced: only the last value
 * reaches memory, and the one before need not live until the commit. */
static bool put_field(Plan *p, int obj, int f, int value, size_t pc)
{
    JitWholeLoop *L = p->L;
    for (int k = L->nfield_stores - 1; k >= p->store_floor; k--) { /* (an arm keeps what came before the if) */
        if (L->store[k].field != f || L->store[k].index >= 0) continue;
        if (L->store[k].obj != obj) break;
        L->store[k].value = value;
        L->store[k].pc = pc;
        return true;
    }
    if (L->nfield_stores >= WL_STORES_MAX / 2) return false;
    L->store[L->nfield_stores++] = (WStore){ .obj = obj, .value = value, .field = f, .index = -1, .pc = pc };
    return true;
}

static int constant(Plan *p, Oop v, size_t pc)
{
    int id = add(p, WN_CONST, oop_is_int(v) ? WT_INT : WT_OOP, -1, -1, pc);
    if (id >= 0) p->L->node[id].v = (int64_t)v;
    return id;
}

/* Temp t as the iteration began (read from the frame, or carried). */
static int iteration_temp(Plan *p, int t, size_t pc)
{
    if (p->inlined) return constant(p, p->c->rt->nil, pc); /* a callee's temps begin nil */
    for (int i = 0; i < p->L->n && p->temp_phi[t]; i++) /* (one carried value, before the loop: good in every arm) */
        if (p->L->node[i].kind == WN_PHI && p->L->node[i].a < 0 && p->L->node[i].v == t) return i;
    int id = p->temp_phi[t] ? add(p, WN_PHI, (WType)(p->temp_phi[t] - 1), -1, -1, pc) : add(p, WN_TEMP, WT_OOP, -1, -1, pc);
    if (id < 0) return -1;
    p->L->node[id].v = t;
    p->read_first[t] = true;
    return id;
}

/* Temp t at this point of the iteration. */
static int temp_read(Plan *p, int t, size_t pc)
{
    if (p->temp_val[t] < 0) p->temp_val[t] = iteration_temp(p, t, pc);
    return reread(p, p->temp_val[t], pc);
}

static bool likely_double(const Plan *p, int id, size_t pc)
{
    const WNode *n = &p->L->node[id];
    if (n->kind == WN_TEMP && !p->inlined) { /* (the method's temps, not an inlined callee's) */
        SimEntry e = { SIM_TEMP, n->v };
        if (jit_double_likely(p->c, &e)) return true;
    }
    return p->c->rt->site_saw_double && p->c->rt->site_saw_double(p->c->code + pc);
}

/* A SmallInteger constant as node id's second operand: an immediate in
 * its instruction (v, the tagged value), no register. */
static void immediate_operand(JitWholeLoop *L, int id)
{
    WNode *n = &L->node[id];
    const WNode *y = &L->node[n->b];
    if (y->kind != WN_CONST || !oop_is_int((Oop)y->v) || !jit_compile_fits_i32(y->v) || !jit_compile_fits_i32(y->v - 1))
        return;
    n->v = y->v;
    n->b = -1;
}

/* Node kind of r and a as Doubles (dbl) or SmallIntegers, each decoded or
 * tested once; a SmallInteger constant second operand an immediate. */
static int binary(Plan *p, bool dbl, WKind kind, WType type, int r, int a, size_t pc)
{
    int x = dbl ? as_double(p, r, pc) : as_int(p, r, pc), y = dbl ? as_double(p, a, pc) : as_int(p, a, pc);
    if (x < 0 || y < 0) return -1;
    int id = add(p, kind, type, x, y, pc);
    if (id >= 0 && !dbl) immediate_operand(p->L, id);
    return id;
}

static bool arith(Plan *p, uint8_t op, size_t pc)
{
    int a = pop(p), r = pop(p);
    if (a < 0 || r < 0) return false;
    const WNode *nr = &p->L->node[r], *na = &p->L->node[a];
    bool dbl = nr->type == WT_DBL || na->type == WT_DBL;
    bool ints = int_known(nr) && int_known(na);
    if (!dbl && !ints) { /* neither known: the hints say Double, or both are tested SmallIntegers */
        if (likely_double(p, r, pc) || likely_double(p, a, pc)) dbl = true;
        else ints = true;
    }
    if (dbl ? !jit_double_inline(p->c, op) : !jit_int_inline(p->c, op)) return false;
    int id = dbl ? binary(p, true, WN_DARITH, WT_DBL, r, a, pc) : binary(p, false, WN_IARITH, WT_INT, r, a, pc);
    if (id >= 0) p->L->node[id].op = op;
    return push(p, id);
}

/* Whether the loop may leave here: before anything is assigned or stored
 * (the frame then holds the iteration's start, which the code after the
 * loop sees). */
static bool may_exit(const Plan *p)
{
    if (p->L->body) return false;
    for (int s = 0; s < p->L->n; s++)
        if (p->L->node[s].kind == WN_UNBOX) return false; /* (only SmallInteger work before it) */
    for (int t = 0; t <= VM_COMPILE_MAX_VARS; t++) { /* nothing assigned yet */
        const WNode *v = p->temp_val[t] >= 0 ? &p->L->node[p->temp_val[t]] : NULL;
        if (v && !((v->kind == WN_TEMP || (v->kind == WN_PHI && v->a < 0)) && v->v == t)) return false;
    }
    return p->L->nfield_stores == 0;
}

/* The compare and conditional jump that leave the loop (its exit test,
 * before anything is stored). */
static bool exit_test(Plan *p, uint8_t op, size_t pc)
{
    const uint8_t *code = p->c->code;
    size_t j = pc + 1;
    if (p->L->body || p->c->target[j] || (code[j] != BC_JUMP_IF_FALSE && code[j] != BC_JUMP_IF_TRUE)) return false;
    if (jit_compile_jump_target(code, j) != (long)p->L->exit || !jit_int_inline(p->c, op) || !may_exit(p)) return false;
    int a = pop(p), r = pop(p);
    if (a < 0 || r < 0 || p->sp != 0) return false;
    int x = as_int(p, r, pc), y = as_int(p, a, pc);
    if (x < 0 || y < 0) return false;
    int id = add(p, WN_EXIT, WT_NONE, x, y, pc);
    if (id < 0) return false;
    immediate_operand(p->L, id);
    X64Cond cc = jit_compile_compare_cond(op);
    /* the node leaves when its condition holds: the jump's */
    p->L->node[id].op = (uint8_t)(code[j] == BC_JUMP_IF_FALSE ? jit_x64_cc_negate(cc) : cc);
    p->exited = true;
    return true;
}

static bool is_compare(uint8_t op)
{
    return op == BC_SEND_LT || op == BC_SEND_GT || op == BC_SEND_LE || op == BC_SEND_GE || op == BC_SEND_EQ ||
           op == BC_SEND_NE;
}

/* Whether the compare at pc would compare SmallIntegers (its operands on
 * top of the stack): the fused exit test takes only those. */
static bool compares_ints(const Plan *p, size_t pc)
{
    if (p->sp < 2) return false;
    int a = p->stack[p->sp - 1], r = p->stack[p->sp - 2];
    const WNode *nr = &p->L->node[r], *na = &p->L->node[a];
    if (nr->type != WT_OOP && nr->type != WT_INT) return false;
    if (na->type != WT_OOP && na->type != WT_INT) return false;
    return (int_known(nr) && int_known(na)) || !(likely_double(p, r, pc) || likely_double(p, a, pc));
}

/* A compare whose answer only a conditional jump takes: a flag. */
static bool compare(Plan *p, uint8_t op, size_t pc)
{
    bool ints = compares_ints(p, pc);
    int a = pop(p), r = pop(p);
    if (a < 0 || r < 0) return false;
    if (ints ? !jit_int_inline(p->c, op) : op == BC_SEND_EQ || op == BC_SEND_NE || !jit_double_inline(p->c, op))
        return false;
    int id = binary(p, !ints, ints ? WN_ICMP : WN_DCMP, WT_FLAG, r, a, pc);
    if (id >= 0) p->L->node[id].op = ints ? (uint8_t)jit_compile_compare_cond(op) : op;
    return push(p, id);
}

/* Whether the conditional jump at pc leaves the loop: to its exit, or to
 * the `push false; jump if false` (`push true; jump if true`) an and: (or:)
 * in a whileTrue: (whileFalse:) condition jumps to. */
static bool jumps_out(const Plan *p, size_t pc)
{
    const uint8_t *code = p->c->code;
    long t = jit_compile_jump_target(code, pc);
    if (t == (long)p->L->exit) return true;
    if (t < 0 || (size_t)t + 1 >= p->L->back) return false;
    uint8_t push = code[pc] == BC_JUMP_IF_FALSE ? BC_PUSH_FALSE : BC_PUSH_TRUE;
    return code[t] == push && code[t + 1] == code[pc] && jit_compile_jump_target(code, (size_t)t + 1) == (long)p->L->exit;
}

/* Condition value v as a flag: a compare's, or a Boolean's (bail unless
 * it is one). */
static int as_flag(Plan *p, int v, size_t pc)
{
    const WNode *n = &p->L->node[v];
    if (n->type == WT_FLAG) return v;
    if (n->type != WT_OOP || n->is_int) return -1;
    return add(p, WN_TRUTH, WT_FLAG, v, -1, pc);
}

/* The node for what an if's two arms left apart: flag s picks a (1) or b.
 * A constant is an immediate of the select (op 1: a's, 2: b's, in v). */
static int merge(Plan *p, int s, int a, int b, size_t pc)
{
    if (a == b) return a;
    const WNode *x = &p->L->node[a], *y = &p->L->node[b];
    if (x->kind == WN_CONST && y->kind == WN_CONST && x->v == y->v) return a;
    if (!storable(x) || !storable(y) || (x->type == WT_DBL) != (y->type == WT_DBL)) return -1;
    WType t = x->type == WT_DBL ? WT_DBL : int_known(x) && int_known(y) ? WT_INT : WT_OOP;
    int id = add(p, WN_SELECT, t, a, b, pc);
    if (id < 0) return -1;
    WNode *n = &p->L->node[id];
    n->s = s;
    if (!p->L->body) { /* (a loop's constants are loaded once, before it) */
    } else if (t != WT_DBL && x->kind == WN_CONST && jit_compile_fits_i32(x->v)) {
        n->op = 1, n->v = x->v, n->a = -1;
    } else if (t != WT_DBL && y->kind == WN_CONST && jit_compile_fits_i32(y->v)) {
        n->op = 2, n->v = y->v, n->b = -1;
    }
    return id;
}

/* The temp's value as the iteration began: the one a read made, or a new read. */
static int start_value(Plan *p, int t, size_t pc)
{
    for (int i = 0; i < p->L->n; i++) {
        const WNode *n = &p->L->node[i];
        if (((n->kind == WN_TEMP && !n->hidden) || (n->kind == WN_PHI && n->a < 0)) && n->v == t) return i;
    }
    return iteration_temp(p, t, pc);
}

static bool plan_bytecode(Plan *p, size_t pc);

/* Field f of obj as it was before the if (the stores before it are the
 * first s0): the merged stores added so far hide nothing the arms did not
 * store, but they are not yet what the if leaves. */
static int read_field_before(Plan *p, int obj, int f, int s0, size_t pc)
{
    JitWholeLoop *L = p->L;
    int n = L->nfield_stores;
    static WStore merged[WL_STORES_MAX];
    memcpy(merged, L->store + s0, (size_t)(n - s0) * sizeof *merged);
    L->nfield_stores = s0;
    int v = read_field(p, obj, f, pc);
    memcpy(L->store + s0, merged, (size_t)(n - s0) * sizeof *merged);
    L->nfield_stores = n;
    return v;
}

/* An arm of an if: bytecodes lo .. hi without jumps, exits or Array stores. */
static bool plan_arm(Plan *p, size_t lo, size_t hi)
{
    const Compiler *c = p->c;
    int stores = p->L->nfield_stores;
    size_t pc = lo;
    for (; pc < hi; pc += vm_bytecode_length[c->code[pc]]) {
        uint8_t op = c->code[pc];
        if ((op == BC_SEND || op == BC_SEND_W) && jit_inline_site_at(c, pc)) return false;
        if (is_compare(op) ? !compare(p, op, pc) : !plan_bytecode(p, pc)) return false;
    }
    for (int k = stores; k < p->L->nfield_stores; k++)
        if (p->L->store[k].index >= 0) return false; /* (its index may differ between the arms) */
    return pc == hi;
}

/* What an arm's planning may learn of the nodes before it, and the nodes it
 * makes: the code after the if must not rely on either (the arm may not
 * have run), so arm_end forgets them. */
static struct {
    bool is_int[WL_NODES_MAX];
    int64_t klass[WL_NODES_MAX];
    int unboxed[WL_NODES_MAX];
    int n, self_node, arg_node[VM_COMPILE_MAX_VARS + 8];
} arm_facts;

static void arm_begin(Plan *p)
{
    const JitWholeLoop *L = p->L;
    arm_facts.n = L->n;
    for (int i = 0; i < L->n; i++) {
        arm_facts.is_int[i] = L->node[i].is_int;
        arm_facts.klass[i] = L->node[i].klass;
        arm_facts.unboxed[i] = L->node[i].unboxed;
    }
    arm_facts.self_node = p->self_node;
    memcpy(arm_facts.arg_node, p->arg_node, sizeof arm_facts.arg_node);
}

static void arm_end(Plan *p, int first)
{
    JitWholeLoop *L = p->L;
    for (int i = 0; i < arm_facts.n; i++) {
        L->node[i].is_int = arm_facts.is_int[i];
        L->node[i].klass = arm_facts.klass[i];
        L->node[i].unboxed = arm_facts.unboxed[i];
    }
    for (int i = first; i < L->n; i++) L->node[i].hidden = L->node[i].kind != WN_PHI; /* (a carried value is good anywhere) */
    p->self_node = arm_facts.self_node;
    memcpy(p->arg_node, arm_facts.arg_node, sizeof arm_facts.arg_node);
}

/* Whether value x (of temp t after an arm; before, its value before the
 * if) is an assignment the arm made, not the temp's start read. */
static bool assigned(const Plan *p, int t, int x, int before)
{
    if (x == before || x < 0) return false;
    const WNode *n = &p->L->node[x];
    return !((n->kind == WN_TEMP || (n->kind == WN_PHI && n->a < 0)) && n->v == t);
}

typedef struct ArmState {
    int temp_val[VM_COMPILE_MAX_VARS + 1];
    int stack[32];
    int sp;
} ArmState;

static void save_arm(const Plan *p, ArmState *a)
{
    memcpy(a->temp_val, p->temp_val, sizeof a->temp_val);
    memcpy(a->stack, p->stack, sizeof a->stack);
    a->sp = p->sp;
}

/* An if whose jump at pc (its condition popped into flag) skips to t: the
 * arms are planned one after the other, both computed in every iteration
 * (a test that fails in the arm not taken only sends the iteration to the
 * plain code), and what they leave apart is selected by the flag. */
static bool plan_if(Plan *p, size_t pc, int flag, size_t t, size_t *next)
{
    const Compiler *c = p->c;
    size_t lo = pc + vm_bytecode_length[c->code[pc]], then_end = t, join = t;
    for (size_t q = lo; q < t; q += vm_bytecode_length[c->code[q]]) { /* an else: the then arm ends with a jump over it */
        if (q + vm_bytecode_length[c->code[q]] != t || c->code[q] != BC_JUMP) continue;
        long j = jit_compile_jump_target(c->code, q);
        if (j <= (long)t || j > (long)p->L->back) return false;
        then_end = q;
        join = (size_t)j;
    }
    static ArmState before, then_arm; /* (the compiler runs on the VM's one thread) */
    static WStore then_stores[WL_STORES_MAX], else_stores[WL_STORES_MAX];
    JitWholeLoop *L = p->L;
    int s0 = L->nfield_stores, floor = p->store_floor;
    /* the jump is taken when the flag is 1 for JUMP_IF_TRUE: then the else arm runs */
    bool then_on_1 = c->code[pc] == BC_JUMP_IF_FALSE;
    if (p->nifs >= WL_IFS_MAX) return false;
    int ifk = p->nifs++, mark_if = add(p, WN_IF, WT_NONE, flag, -1, pc);
    if (mark_if < 0) return false;
    L->node[mark_if].v = ifk;
    L->node[mark_if].op = then_on_1;
    p->store_floor = s0;
    save_arm(p, &before);
    arm_begin(p);
    if (!plan_arm(p, lo, then_end)) return false;
    arm_end(p, mark_if + 1);
    save_arm(p, &then_arm);
    int mark_else = add(p, WN_ELSE, WT_NONE, -1, -1, t);
    if (mark_else < 0) return false;
    L->node[mark_else].v = ifk;
    int nthen = L->nfield_stores - s0;
    memcpy(then_stores, L->store + s0, (size_t)nthen * sizeof *then_stores);
    L->nfield_stores = s0; /* the else arm reads the fields as they were */
    memcpy(p->temp_val, before.temp_val, sizeof p->temp_val);
    memcpy(p->stack, before.stack, sizeof p->stack);
    p->sp = before.sp;
    arm_begin(p);
    if (!plan_arm(p, t, join) || p->sp != then_arm.sp) return false;
    arm_end(p, mark_else + 1);
    int mark_join = add(p, WN_JOIN, WT_NONE, -1, -1, join);
    if (mark_join < 0) return false;
    L->node[mark_join].v = ifk;
    int nelse = L->nfield_stores - s0;
    memcpy(else_stores, L->store + s0, (size_t)nelse * sizeof *else_stores);
    L->nfield_stores = s0;
    p->store_floor = floor;
    for (int k = 0; k < p->sp; k++) {
        int a = then_on_1 ? then_arm.stack[k] : p->stack[k], b = then_on_1 ? p->stack[k] : then_arm.stack[k];
        if ((p->stack[k] = merge(p, flag, a, b, join)) < 0) return false;
    }
    for (int v = 0; v <= VM_COMPILE_MAX_VARS; v++) {
        int x = then_arm.temp_val[v], y = p->temp_val[v];
        if (!assigned(p, v, x, before.temp_val[v]) && !assigned(p, v, y, before.temp_val[v])) {
            p->temp_val[v] = before.temp_val[v]; /* (only read in an arm: read again after it) */
            continue;
        }
        if (x == y) continue;
        if (x < 0) x = start_value(p, v, join);
        if (y < 0) y = start_value(p, v, join);
        if (x < 0 || y < 0) return false;
        if ((p->temp_val[v] = merge(p, flag, then_on_1 ? x : y, then_on_1 ? y : x, join)) < 0) return false;
    }
    /* a field either arm stores gets, in one store, what its arm left in
     * it: the value stored last, or the one it had before the if */
    for (int k = 0; k < nthen + nelse; k++) {
        const WStore *st = k < nthen ? &then_stores[k] : &else_stores[k - nthen];
        bool done = false; /* (merged at an earlier k) */
        for (int j = 0; j < k; j++) {
            const WStore *o = j < nthen ? &then_stores[j] : &else_stores[j - nthen];
            done |= o->obj == st->obj && o->field == st->field;
        }
        if (done) continue;
        int x = -1, y = -1;
        for (int j = 0; j < nthen; j++)
            if (then_stores[j].obj == st->obj && then_stores[j].field == st->field) x = then_stores[j].value;
        for (int j = 0; j < nelse; j++)
            if (else_stores[j].obj == st->obj && else_stores[j].field == st->field) y = else_stores[j].value;
        int old = x < 0 || y < 0 ? read_field_before(p, st->obj, st->field, s0, join) : -1;
        if (x < 0) x = old;
        if (y < 0) y = old;
        int m = x < 0 || y < 0 ? -1 : merge(p, flag, then_on_1 ? x : y, then_on_1 ? y : x, join);
        if (m < 0 || !put_field(p, st->obj, st->field, m, join)) return false;
    }
    /* a select of what the arms computed (not of a value read after the
     * join) is a move at the end of each arm: the path not taken moves
     * nothing, and the flag is not needed after the test */
    for (int i = mark_join + 1; i < L->n; i++) {
        WNode *n = &L->node[i];
        if (n->kind != WN_SELECT || n->s != flag || (n->op != 1 && n->a > mark_join) || (n->op != 2 && n->b > mark_join))
            continue;
        n->ifk = ifk;
        n->s = -1;
    }
    *next = join;
    return true;
}

/* A conditional jump in the loop: an exit, or an if. */
static bool branch(Plan *p, size_t pc, size_t *next)
{
    const Compiler *c = p->c;
    int v = pop(p);
    if (v < 0) return false;
    const WNode *n = &p->L->node[v];
    bool on_true = c->code[pc] == BC_JUMP_IF_TRUE;
    *next = pc + vm_bytecode_length[c->code[pc]];
    if (!p->L->body && jumps_out(p, pc)) {
        if (!may_exit(p)) return false;
        bool stacked = false;
        for (int k = 0; k < p->sp; k++) stacked |= p->stack[k] == v;
        if ((n->kind == WN_ICMP || n->kind == WN_DCMP) && v == p->L->n - 1 && !stacked) {
            /* the compare just planned, for this jump alone: its flags are the test */
            WNode *f = &p->L->node[v];
            if (f->kind == WN_ICMP) f->op = (uint8_t)(on_true ? f->op : jit_x64_cc_negate((X64Cond)f->op));
            else f->v = on_true;
            f->kind = f->kind == WN_ICMP ? WN_EXIT : WN_DEXIT;
            f->type = WT_NONE;
            p->exited = true;
            return true;
        }
        int id = n->type == WT_FLAG                ? add(p, WN_FEXIT, WT_NONE, v, -1, pc)
                 : n->type == WT_OOP && !n->is_int ? add(p, WN_BEXIT, WT_NONE, v, -1, pc)
                                                   : -1;
        if (id < 0) return false;
        p->L->node[id].v = on_true;
        p->exited = true;
        return true;
    }
    long t = jit_compile_jump_target(c->code, pc);
    int flag = as_flag(p, v, pc);
    if (t <= (long)pc || t > (long)p->L->back || flag < 0) return false;
    return plan_if(p, pc, flag, (size_t)t, next);
}

/* The jump at pc over the `push false` (`push true`) of an and: (or:) in a
 * whileTrue: (whileFalse:) condition, to the jump that leaves the loop on
 * the second condition: that push is only reached from the first
 * condition's jump, which branch() made an exit. */
static bool and_skip(Plan *p, size_t pc, size_t *next)
{
    const uint8_t *code = p->c->code;
    long y = jit_compile_jump_target(code, pc);
    size_t x = pc + vm_bytecode_length[BC_JUMP];
    if (y != (long)x + 1 || (code[x] != BC_PUSH_FALSE && code[x] != BC_PUSH_TRUE)) return false;
    if (code[x + 1] != (code[x] == BC_PUSH_FALSE ? BC_JUMP_IF_FALSE : BC_JUMP_IF_TRUE) ||
        jit_compile_jump_target(code, x + 1) != (long)p->L->exit)
        return false;
    *next = (size_t)y;
    return true;
}

/* A Boolean send (&& || and: or:) whose answers, for a true and a false
 * receiver, are true, false or the argument when it is a Boolean (the
 * templates' rule: anything else, and a tracer on the probes, sends). */
static bool bool_send(Plan *p, int k, size_t pc)
{
    const JitCompileRuntime *rt = p->c->rt;
    int a = pop(p), r = pop(p);
    if (a < 0 || r < 0) return false;
    uint8_t on[2] = { rt->bool_answers[k][0], rt->bool_answers[k][1] };
    if (on[0] == JIT_BOOL_SEND || on[1] == JIT_BOOL_SEND) return false;
    int flag = as_flag(p, r, pc);
    if (flag < 0) return false;
    if (on[0] == JIT_BOOL_ARG || on[1] == JIT_BOOL_ARG) {
        if (p->L->node[a].type == WT_FLAG) /* a compare's answer as a Boolean */
            a = merge(p, a, constant(p, rt->true_obj, pc), constant(p, rt->false_obj, pc), pc);
        else if (a >= 0 && add(p, WN_TRUTH, WT_FLAG, a, -1, pc) < 0) /* (a test: bail unless a Boolean) */
            return false;
        if (a < 0) return false;
    }
    int v[2];
    for (int i = 0; i < 2; i++)
        v[i] = on[i] == JIT_BOOL_ARG ? a : constant(p, on[i] == JIT_BOOL_TRUE ? rt->true_obj : rt->false_obj, pc);
    p->L->uses_accessors = true;
    return push(p, merge(p, flag, v[0], v[1], pc));
}

static bool plain_send(Plan *p, size_t pc)
{
    const Compiler *c = p->c;
    const uint8_t *q = c->code + pc;
    int nargs = q[0] == BC_SEND ? q[2] : q[3];
    int bk = jit_compile_bool_send_in(c, c->method, q);
    if (bk >= 0) return bool_send(p, bk, pc);
    if (p->inlined) return false; /* (an inlined callee has no other sends) */
    uint32_t klass;
    bool setter;
    int field;
    if (jit_compile_accessor(c, pc, &klass, &setter, &field)) {
        p->L->uses_accessors = true;
        if (!setter && nargs == 0) {
            int r = pop(p);
            if (r < 0 || !guard_class(p, r, klass, pc)) return false;
            return push(p, read_field(p, r, field, pc));
        }
        if (!setter || nargs != 1) return false;
        int v = pop(p), r = pop(p);
        if (v < 0 || r < 0 || !guard_class(p, r, klass, pc)) return false;
        JitWholeLoop *L = p->L;
        if (!storable(&L->node[v])) return false;
        return put_field(p, r, field, v, pc) && push(p, r); /* a setter answers its receiver */
    }
    JitDoubleSend k = jit_double_send_kind(c, pc);
    if (k == JIT_DOUBLE_SEND_SQRT) {
        int r = pop(p);
        int x = r < 0 ? -1 : as_double(p, r, pc);
        return x >= 0 && push(p, add(p, WN_SQRT, WT_DBL, x, -1, pc));
    }
    if (k == JIT_DOUBLE_SEND_DIVIDE) {
        int a = pop(p), r = pop(p);
        int x = r < 0 ? -1 : as_double(p, r, pc), y = a < 0 ? -1 : as_double(p, a, pc);
        if (x < 0 || y < 0) return false;
        int id = add(p, WN_DARITH, WT_DBL, x, y, pc);
        if (id >= 0) p->L->node[id].op = JIT_DOUBLE_OP_DIVIDE;
        return push(p, id);
    }
    return false;
}

static int push_literal(Plan *p, unsigned lit, size_t pc)
{
    Oop v = obj_slots(p->c->method)[METHOD_FIXED_SLOTS + lit];
    if (oop_is_int(v)) return constant(p, v, pc);
    if (oop_is_float(v) || (oop_is_ptr(v) && obj_class_index(v) == CLASS_INDEX_DOUBLE)) {
        int id = add(p, WN_DCONST, WT_DBL, -1, -1, pc); /* a Double never changes: its value, read now */
        if (id >= 0) p->L->node[id].d = oop_double(v);
        return id;
    }
    return -1;
}

/* Array r's slot i (kind WN_AT: its value; WN_INDEX: the 0-based index),
 * its slot count found once. */
static int array_slot(Plan *p, WKind kind, int r, int i, size_t pc)
{
    if (i < 0 || r < 0 || p->L->node[r].type != WT_OOP || p->L->node[r].is_int) return -1;
    int x = as_int(p, i, pc);
    if (x < 0) return -1;
    int size = -1;
    for (int k = 0; k < p->L->n && size < 0; k++)
        if (!p->L->node[k].hidden && p->L->node[k].kind == WN_SIZE && p->L->node[k].a == r) size = k;
    if (size < 0) size = add(p, WN_SIZE, WT_OOP, r, -1, pc);
    int id = size < 0 ? -1 : add(p, kind, WT_OOP, r, x, pc);
    if (id >= 0) p->L->node[id].s = size;
    return id;
}

/* The method `level` blocks out of c's, or 0 when one is not known. */
Oop jit_whole_outer_method(const Compiler *c, int level)
{
    Oop m = c->method;
    for (int l = level; l > 0; l--) {
        if (!oop_is_ptr(m) || m == c->rt->nil) return 0;
        m = obj_slots(m)[METHOD_OUTER];
    }
    return oop_is_ptr(m) && m != c->rt->nil ? m : 0;
}

static bool plan_bytecode(Plan *p, size_t pc)
{
    const Compiler *c = p->c;
    const uint8_t *q = c->code + pc;
    switch (q[0]) {
    case BC_DUP: return p->sp > 0 && push(p, p->stack[p->sp - 1]);
    case BC_POP: return pop(p) >= 0;
    case BC_PUSH_SELF:
        if (p->self_node < 0) p->self_node = add(p, WN_SELF, WT_OOP, -1, -1, pc);
        return push(p, p->self_node);
    case BC_PUSH_NIL: return push(p, constant(p, c->rt->nil, pc));
    case BC_PUSH_TRUE: return push(p, constant(p, c->rt->true_obj, pc));
    case BC_PUSH_FALSE: return push(p, constant(p, c->rt->false_obj, pc));
    case BC_PUSH_0: return push(p, constant(p, oop_from_int(0), pc));
    case BC_PUSH_1: return push(p, constant(p, oop_from_int(1), pc));
    case BC_PUSH_LITERAL: return push(p, push_literal(p, q[1], pc));
    case BC_PUSH_LITERAL_W: return push(p, push_literal(p, jit_compile_operand_w(q + 1), pc));
    case BC_PUSH_FIELD:
        if (p->self_node < 0) p->self_node = add(p, WN_SELF, WT_OOP, -1, -1, pc);
        return p->self_node >= 0 && push(p, read_field(p, p->self_node, q[1], pc));
    case BC_PUSH_ARG:
        if (p->arg_node[q[1]] < 0) {
            int id = add(p, WN_ARG, WT_OOP, -1, -1, pc);
            if (id < 0) return false;
            p->L->node[id].v = q[1];
            p->arg_node[q[1]] = id;
        }
        return push(p, p->arg_node[q[1]]);
    case BC_PUSH_TEMP: return push(p, temp_read(p, q[1], pc));
    case BC_PUSH_OUTER: {
        if (!jit_whole_outer_method(c, q[2])) return false;
        for (int i = 0; i < p->L->n; i++)
            if (!p->L->node[i].hidden && p->L->node[i].kind == WN_OUTER && p->L->node[i].v == q[1] &&
                p->L->node[i].op == q[2])
                return push(p, i);
        int id = add(p, WN_OUTER, WT_OOP, -1, -1, pc);
        if (id < 0) return false;
        p->L->node[id].v = q[1];
        p->L->node[id].op = q[2];
        return push(p, id);
    }
    case BC_STORE_TEMP:
    case BC_POP_TEMP:
        if (!p->sp || !storable(&p->L->node[p->stack[p->sp - 1]])) return false;
        p->temp_val[q[1]] = p->stack[p->sp - 1];
        if (q[0] == BC_POP_TEMP) p->sp--;
        return true;
    case BC_STORE_FIELD:
    case BC_POP_FIELD: {
        if (p->self_node < 0) p->self_node = add(p, WN_SELF, WT_OOP, -1, -1, pc);
        if (!p->sp || p->self_node < 0) return false;
        int v = p->stack[p->sp - 1];
        JitWholeLoop *L = p->L;
        if (!storable(&L->node[v]) || !put_field(p, p->self_node, q[1], v, pc)) return false;
        if (q[0] == BC_POP_FIELD) p->sp--;
        return true;
    }
    case BC_SEND_ABS: {
        int r = pop(p);
        if (r < 0 || !jit_int_inline(c, q[0]) || likely_double(p, r, pc)) return false;
        int x = as_int(p, r, pc);
        return x >= 0 && push(p, add(p, WN_IABS, WT_INT, x, -1, pc));
    }
    case BC_SEND_ADD:
    case BC_SEND_SUB:
    case BC_SEND_MUL: return arith(p, q[0], pc);
    case BC_SEND_AT: {
        if (!c->rt->array_at_inline || !*c->rt->array_at_inline || p->array_stored) return false;
        int i = pop(p), r = pop(p);
        return push(p, array_slot(p, WN_AT, r, i, pc));
    }
    case BC_SEND_AT_PUT: {
        if (!c->rt->array_at_put_inline || !*c->rt->array_at_put_inline) return false;
        int v = pop(p), i = pop(p), r = pop(p);
        int x = v < 0 ? -1 : array_slot(p, WN_INDEX, r, i, pc);
        JitWholeLoop *L = p->L;
        if (x < 0 || !storable(&L->node[v]) || L->nfield_stores >= WL_STORES_MAX / 2) return false;
        L->store[L->nfield_stores++] = (WStore){ .obj = r, .value = v, .field = -1, .index = x, .pc = pc };
        p->array_stored = true;
        return push(p, v); /* at:put: answers the value */
    }
    case BC_SEND:
    case BC_SEND_W: return plain_send(p, pc);
    default: return false;
    }
}

/* Whether a block the method makes reads or writes variable var of the
 * method's frame (any level: a guess that errs towards yes). */
static bool blocks_use_var(Oop method, int var, int depth)
{
    const uint8_t *code = vm_method_bytecodes(method);
    size_t len = vm_method_bytecode_length(method);
    for (size_t pc = 0; pc < len; pc += vm_bytecode_length[code[pc]]) {
        uint8_t op = code[pc];
        if (depth > 0 && (op == BC_PUSH_OUTER || op == BC_STORE_OUTER || op == BC_POP_OUTER) && code[pc + 1] == var)
            return true;
        if (op == BC_PUSH_BLOCK || op == BC_PUSH_BLOCK_W) {
            if (depth > 8) return true;
            size_t lit = op == BC_PUSH_BLOCK ? code[pc + 1] : (size_t)jit_compile_operand_w(code + pc + 1);
            if (blocks_use_var(obj_slots(method)[METHOD_FIXED_SLOTS + lit], var, depth + 1)) return true;
        }
    }
    return false;
}

/* Whether temp t's value at the iteration's end is needed: the next
 * iteration reads it before storing it, code outside the loop reads it, or
 * a block may. */
static bool temp_live_out(const Plan *p, int t)
{
    const Compiler *c = p->c;
    if (p->read_first[t] && !p->L->body) return true;
    for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]])
        if ((pc < p->L->head || pc > p->L->back) && c->code[pc] == BC_PUSH_TEMP && c->code[pc + 1] == t) return true;
    return c->makes_blocks && blocks_use_var(c->method, c->nargs + t, 0);
}

/* rdx and r11 are the scratch registers of the guards and decodings;
 * rbp, rsp, r14 and r15 are the frame's and the interpreter's (machine code
 * calls nothing here, and the trampolines keep the C ABI's registers). */
static const X64Reg wl_gprs[] = { JIT_X64_RAX, JIT_X64_RCX, JIT_X64_RSI, JIT_X64_RDI, JIT_X64_R8,
                                  JIT_X64_R9,  JIT_X64_R10, JIT_X64_RBX, JIT_X64_R12, JIT_X64_R13 };
#define WL_NGPRS ((int)(sizeof wl_gprs / sizeof wl_gprs[0]))

static bool pure_load(uint8_t kind)
{
    return kind == WN_TEMP || kind == WN_ARG || kind == WN_SELF || kind == WN_CONST || kind == WN_DCONST ||
           kind == WN_FIELD || kind == WN_OUTER;
}

/* Which values are the same in every iteration: loads of what the loop
 * never stores (temps it does not assign, arguments, self, constants,
 * fields no setter in it writes, of such objects), and what is computed
 * or tested from them alone. */
static void find_invariants(const Plan *p, JitWholeLoop *L)
{
    bool field_stored[256] = { false }, array_stored = false;
    for (int k = 0; k < L->nfield_stores; k++) {
        if (L->store[k].index >= 0) array_stored = true;
        else field_stored[L->store[k].field & 255] = true;
    }
    for (int i = 0; i < L->n; i++) {
        WNode *n = &L->node[i];
        if (n->kind == WN_TEMP) {
            n->invariant = p->temp_val[n->v] == i; /* never assigned in the loop */
            continue;
        }
        bool a = n->a < 0 || L->node[n->a].invariant, b = n->b < 0 || L->node[n->b].invariant,
             s = n->s < 0 || L->node[n->s].invariant;
        switch ((WKind)n->kind) {
        case WN_ARG:
        case WN_OUTER: /* (no outer store is planned, no call made) */
        case WN_SELF:
        case WN_CONST:
        case WN_DCONST: n->invariant = true; break;
        case WN_FIELD: n->invariant = a && !field_stored[n->v & 255]; break;
        case WN_AT: n->invariant = a && b && s && !array_stored; break;
        case WN_SELECT: n->invariant = n->ifk < 0 && a && b && s; break; /* (an if's moves make it in the loop) */
        case WN_EXIT:
        case WN_FEXIT:
        case WN_BEXIT:
        case WN_DEXIT:
        case WN_IF:
        case WN_ELSE:
        case WN_JOIN:
        case WN_PHI: n->invariant = false; break;
        default: n->invariant = a && b && s; break;
        }
    }
}

typedef struct Regs {
    bool gpr[WL_NGPRS], xmm[16];
} Regs;

static void release(Regs *r, const WNode *n)
{
    if (n->reg < 0) return;
    if (n->type == WT_DBL) r->xmm[n->reg] = false;
    else
        for (int k = 0; k < WL_NGPRS; k++)
            if ((int)wl_gprs[k] == n->reg) r->gpr[k] = false;
}

static bool take(Regs *r, WNode *n)
{
    if (n->type == WT_DBL) {
        for (int x = 0; x < 16; x++)
            if (!r->xmm[x]) return r->xmm[x] = true, n->reg = x, true;
        return false;
    }
    for (int k = 0; k < WL_NGPRS; k++)
        if (!r->gpr[k]) return r->gpr[k] = true, n->reg = (int)wl_gprs[k], true;
    return false;
}


/* One pass of the allocation over the invariant nodes (before the loop)
 * or the others: registers in program order, each freed at its value's
 * last use in this pass; an invariant value a later pass uses stays. */

/* The carried SmallInteger or object whose next value node i is, when
 * nothing reads the carried value after i: i is computed into its
 * register, and the commit moves nothing. -1: none. */
static int carried_into(const JitWholeLoop *L, int i)
{
    const WNode *n = &L->node[i];
    if (n->type != WT_OOP && n->type != WT_INT) return -1;
    for (int p = 0; p < L->n; p++) {
        const WNode *ph = &L->node[p];
        if (ph->kind != WN_PHI || ph->next != i || ph->type == WT_DBL || ph->reg < 0) continue;
        bool later = false;
        for (int j = i + 1; j < L->n && !later; j++) later = L->node[j].a == p || L->node[j].b == p || L->node[j].s == p;
        if (!later) return p;
    }
    return -1;
}

static bool allocate_pass(JitWholeLoop *L, Regs *r, bool invariant, const int *last)
{
    for (int i = 0; i < L->n; i++) {
        WNode *n = &L->node[i];
        if (jit_whole_before_loop(n) != invariant) continue;
        n->reg = -1;
        n->consumes = n->a >= 0 && last[n->a] == i && n->a != n->b && n->a != n->s;
        if (n->type != WT_NONE && !(pure_load(n->kind) && n->last < 0) && !n->fused) {
            const WNode *a = n->a >= 0 ? &L->node[n->a] : NULL, *b = n->b >= 0 ? &L->node[n->b] : NULL;
            bool commutes = n->kind == WN_DARITH && (n->op == BC_SEND_ADD || n->op == BC_SEND_MUL);
            bool reuse = n->kind == WN_DARITH || n->kind == WN_SQRT || n->kind == WN_IARITH || n->kind == WN_IABS;
            int carried = invariant ? -1 : carried_into(L, i);
            if (carried >= 0) n->reg = L->node[carried].reg;
            else if (reuse && last[n->a] == i) n->reg = a->reg;
            else if (commutes && last[n->b] == i) n->reg = b->reg;
            else if (!take(r, n)) return false;
            (void)b;
        }
        int ops[3] = { n->a, n->b, n->s };
        for (int k = 0; k < 3; k++) {
            if (ops[k] < 0 || (k >= 1 && ops[k] == ops[0]) || (k == 2 && ops[2] == ops[1])) continue;
            const WNode *o = &L->node[ops[k]];
            if (last[ops[k]] != i || (o->reg == n->reg && (o->type == WT_DBL) == (n->type == WT_DBL))) continue;
            release(r, o);
        }
        if (n->reg >= 0 && n->last < 0) release(r, n); /* an answer nothing uses (a setter's, popped) */
    }
    return true;
}

/* False when some value finds no register free (the loop then stays plain). */
static bool allocate(JitWholeLoop *L)
{
    static int last_inv[WL_NODES_MAX], last_var[WL_NODES_MAX];
    for (int i = 0; i < L->n; i++) last_inv[i] = last_var[i] = -1;
    for (int i = 0; i < L->n; i++) {
        const WNode *n = &L->node[i];
        int ops[3] = { n->a, n->b, n->s };
        for (int k = 0; k < 3; k++) {
            if (ops[k] < 0) continue;
            L->node[ops[k]].last = i;
            /* an invariant value a variant node uses lives through the loop */
            if (n->invariant) last_inv[ops[k]] = last_inv[ops[k]] == WL_COMMIT ? WL_COMMIT : i;
            else if (L->node[ops[k]].invariant) last_inv[ops[k]] = WL_COMMIT;
            else last_var[ops[k]] = i;
        }
    }
    for (int k = 0; k < L->nstores; k++) {
        int v = L->store[k].value, o = L->store[k].obj;
        if (!jit_whole_stored_immediate(&L->node[v]) || o == -2) { /* (a body's answer is pushed from a register) */
            L->node[v].last = WL_COMMIT;
            (L->node[v].invariant ? last_inv : last_var)[v] = WL_COMMIT;
        }
        if (o >= 0) {
            L->node[o].last = WL_COMMIT;
            (L->node[o].invariant ? last_inv : last_var)[o] = WL_COMMIT;
        }
        int x = L->store[k].index;
        if (x >= 0) {
            L->node[x].last = WL_COMMIT;
            (L->node[x].invariant ? last_inv : last_var)[x] = WL_COMMIT;
        }
    }
    for (int i = 0; i < L->n; i++) {
        const WNode *n = &L->node[i];
        if (n->kind != WN_PHI) continue;
        last_inv[i] = last_var[i] = WL_COMMIT;
        L->node[i].last = WL_COMMIT;
        L->node[n->next].last = WL_COMMIT;
        (L->node[n->next].invariant ? last_inv : last_var)[n->next] = WL_COMMIT;
    }
    for (int i = 1; i < L->n; i++) {
        WNode *f = &L->node[i - 1];
        f->fused = L->node[i].kind == WN_IF && L->node[i].a == i - 1 && (f->kind == WN_ICMP || f->kind == WN_DCMP) &&
                   f->last == i && !f->invariant;
    }
    /* the commit encodes a stored Double in its register: never one the
     * next iteration reads again */
    for (int k = 0; k < L->nstores; k++)
        if (L->node[L->store[k].value].type == WT_DBL && jit_whole_before_loop(&L->node[L->store[k].value])) return false;
    Regs r;
    memset(&r, 0, sizeof r);
    return allocate_pass(L, &r, true, last_inv) && allocate_pass(L, &r, false, last_var);
}

/* One iteration's bytecodes into L's nodes, with p's hints of the values
 * carried in registers (the rest of p zeroed). */
static bool plan_body(const Compiler *c, JitWholeLoop *L, Plan *p)
{
    L->n = L->nstores = L->nfield_stores = 0;
    L->uses_accessors = false;
    p->c = c;
    p->L = L;
    p->sp = 0;
    p->exited = false;
    p->array_stored = false;
    p->store_floor = 0;
    p->nifs = 0;
    p->self_node = -1;
    for (size_t i = 0; i < sizeof p->temp_val / sizeof p->temp_val[0]; i++) p->temp_val[i] = -1;
    for (size_t i = 0; i < sizeof p->arg_node / sizeof p->arg_node[0]; i++) p->arg_node[i] = -1;
    memset(p->read_first, 0, sizeof p->read_first);
    for (int k = 0; k < p->nfield_phis; k++) p->field_phi[k].node = -1;
    size_t back = L->back;
    for (size_t pc = L->head; pc < back;) {
        uint8_t op = c->code[pc];
        if ((op == BC_SEND || op == BC_SEND_W) && jit_inline_site_at(c, pc)) return false;
        if (is_compare(op) && !L->body && (c->code[pc + 1] == BC_JUMP_IF_FALSE || c->code[pc + 1] == BC_JUMP_IF_TRUE) &&
            jit_compile_jump_target(c->code, pc + 1) == (long)L->exit && compares_ints(p, pc)) {
            if (!exit_test(p, op, pc)) return false;
            pc += 1 + vm_bytecode_length[c->code[pc + 1]];
            continue;
        }
        bool ok;
        size_t next = pc + vm_bytecode_length[op];
        if (is_compare(op)) ok = compare(p, op, pc);
        else if (op == BC_JUMP_IF_FALSE || op == BC_JUMP_IF_TRUE) ok = branch(p, pc, &next);
        else if (op == BC_JUMP) ok = !L->body && and_skip(p, pc, &next);
        else ok = plan_bytecode(p, pc);
        if (!ok) return false;
        pc = next;
    }
    if (L->body) {
        if (p->exited || p->sp != (c->code[back] == BC_RETURN_TOP ? 1 : 0)) return false;
        L->answer = p->sp ? p->stack[0] : -1;
        if (L->answer >= 0 && !storable(&L->node[L->answer])) return false;
    } else if (!p->exited || p->sp != 0) {
        return false;
    }
    /* a body of getters and one store: the templates' code is as good */
    bool computes = L->nfield_stores >= 2;
    for (int i = 0; i < L->n; i++)
        computes |= L->node[i].kind == WN_DARITH || L->node[i].kind == WN_SQRT || L->node[i].kind == WN_SELECT;
    if (!computes && L->body && !p->inlined) return false;
    L->nstores = L->nfield_stores;
    for (int t = 0; t < c->ntemps && t <= VM_COMPILE_MAX_VARS && !p->inlined; t++) {
        int v = p->temp_val[t];
        if (v < 0 || ((L->node[v].kind == WN_TEMP || L->node[v].kind == WN_PHI) && L->node[v].a < 0 &&
                      L->node[v].v == t) || !temp_live_out(p, t))
            continue;
        if (L->nstores >= WL_STORES_MAX) return false;
        L->store[L->nstores++] = (WStore){ .obj = -1, .value = v, .field = t, .index = -1, .pc = back };
    }
    if (L->body && L->answer >= 0) {
        const WNode *a = &L->node[L->answer];
        if (a->type == WT_OOP && !a->is_int && a->kind != WN_CONST && !pure_load(a->kind) && a->kind != WN_AT &&
            a->kind != WN_SELECT)
            return false;
        if (L->nstores >= WL_STORES_MAX) return false;
        L->store[L->nstores++] = (WStore){ .obj = -2, .value = L->answer, .index = -1, .pc = back }; /* pushed after the commit */
    }
    find_invariants(p, L);
    if (L->body) /* no loop: nothing to hoist */
        for (int i = 0; i < L->n; i++) L->node[i].invariant = false;
    return true;
}

/* Each carried value's next one (what the iteration stored last into its
 * temp or field), and the tests that make a carried field safe: every
 * other object whose same field the loop writes must not be the carrier
 * (its store would change what the register holds). False when a plan
 * does not carry as the first foresaw. */
static bool link_phis(Plan *p, JitWholeLoop *L)
{
    for (int i = 0; i < L->n; i++) {
        WNode *n = &L->node[i];
        if (n->kind != WN_PHI) continue;
        if (n->a < 0) {
            n->next = p->temp_val[n->v];
        } else {
            for (int k = 0; k < L->nfield_stores; k++)
                if (L->store[k].obj == n->a && L->store[k].field == n->v) n->next = L->store[k].value;
            for (int k = 0; k < L->nfield_stores; k++)
                if (L->store[k].field == n->v && L->store[k].obj != n->a &&
                    !guard_distinct(p, n->a, L->store[k].obj, L->store[k].pc))
                    return false;
        }
        /* moved into the register before the commit encodes the stores in place */
        if (n->next < 0 || n->next == i || L->node[n->next].kind == WN_PHI) return false;
        if (L->node[n->next].type != n->type && !(n->type == WT_INT && int_known(&L->node[n->next]))) return false;
    }
    for (int k = 0; k < L->nstores; k++) /* the commit moves the carried values first */
        if (L->node[L->store[k].value].kind == WN_PHI || (L->store[k].obj >= 0 && L->node[L->store[k].obj].kind == WN_PHI))
            return false;
    /* the tests just added read values the first pass's invariants missed */
    find_invariants(p, L);
    return true;
}

/* The loop whose JUMP_BACK is at back, planned into L; false when it is
 * not one this file compiles. */
static bool plan_loop(const Compiler *c, size_t back, JitWholeLoop *L)
{
    long head = jit_compile_jump_target(c->code, back);
    if (head < 0 || (size_t)head >= back) return false;
    L->body = L->inlined = false;
    L->n = L->nstores = L->nfield_stores = 0;
    L->uses_accessors = false;
    L->head = (size_t)head;
    L->back = back;
    L->exit = back + vm_bytecode_length[BC_JUMP_BACK];
    /* nothing enters but the fall-through into the head and the back jump
     * (the jumps inside are the plan's: exits and ifs) */
    for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]]) {
        long t = jit_compile_jump_target(c->code, pc);
        if (t > (long)L->head && t <= (long)back && (pc < L->head || pc > back)) return false;
        if (t == (long)L->head && pc != back) return false;
    }
    static Plan first, second; /* (a few KB each; the compiler runs on the VM's one thread) */
    memset(&first, 0, sizeof first);
    if (!plan_body(c, L, &first)) return false;
    /* a second plan carries values from one iteration to the next in
     * registers: the temps the first found read before they are assigned,
     * and Double fields of objects the loop does not change that it reads
     * and writes (NBody's iBody vx) */
    memset(&second, 0, sizeof second);
    bool carries = false;
    for (int t = 0; t <= VM_COMPILE_MAX_VARS; t++) {
        int v = first.temp_val[t];
        if (!first.read_first[t] || v < 0 || L->node[v].kind == WN_TEMP) continue;
        const WNode *n = &L->node[v];
        second.temp_phi[t] = (uint8_t)(1 + (n->type == WT_DBL ? WT_DBL : int_known(n) ? WT_INT : WT_OOP));
        carries = true;
    }
    for (int k = 0; k < L->nfield_stores; k++) {
        const WStore *st = &L->store[k];
        const WNode *o = &L->node[st->obj];
        bool read = false, doubles = true, known = false;
        for (int i = 0; i < L->n; i++)
            read |= L->node[i].kind == WN_FIELD && L->node[i].a == st->obj && L->node[i].v == st->field;
        for (int j = 0; j < L->nfield_stores; j++)
            if (L->store[j].obj == st->obj && L->store[j].field == st->field)
                doubles &= L->node[L->store[j].value].type == WT_DBL;
        for (int j = 0; j < second.nfield_phis; j++)
            known |= second.field_phi[j].kind == o->kind && second.field_phi[j].v == o->v &&
                     second.field_phi[j].field == st->field;
        if (!read || !doubles || known || !o->invariant || second.nfield_phis >= 8 ||
            !(o->kind == WN_TEMP || o->kind == WN_ARG || o->kind == WN_SELF))
            continue;
        second.field_phi[second.nfield_phis].kind = o->kind;
        second.field_phi[second.nfield_phis].v = o->v;
        second.field_phi[second.nfield_phis].field = st->field;
        second.field_phi[second.nfield_phis].node = -1;
        second.nfield_phis++;
        carries = true;
    }
    if (carries && plan_body(c, L, &second) && link_phis(&second, L) && allocate(L)) return true;
    memset(&first, 0, sizeof first);
    return plan_body(c, L, &first) && allocate(L);
}

/* A method or block without jumps whose bytecodes up to its first return
 * plan as a body; false otherwise. */
/* The first return of c's bytecodes when all before it run forward (ifs,
 * whose shape the plan checks); 0 otherwise. */
static size_t body_end(const Compiler *c)
{
    size_t ret = 0;
    for (; ret < c->len; ret += vm_bytecode_length[c->code[ret]]) {
        uint8_t op = c->code[ret];
        if (op == BC_RETURN_TOP || op == BC_RETURN_SELF) break;
        long t = jit_compile_jump_target(c->code, ret);
        if ((t >= 0 && t <= (long)ret) || op == BC_RETURN_NONLOCAL) return 0;
    }
    return ret < c->len ? ret : 0;
}

/* The callee of inline site s planned as a body (plan_body reads c, a copy
 * of the compiler that describes the callee). */
static bool plan_inlined(const Compiler *c, const JitInlineSite *s, JitWholeLoop *L)
{
    static Compiler sub; /* (the compiler runs on the VM's one thread) */
    const uint8_t *q = c->code + s->pc;
    sub = *c;
    sub.method = s->method;
    sub.code = vm_method_bytecodes(s->method);
    sub.len = vm_method_bytecode_length(s->method);
    sub.nargs = q[0] == BC_SEND ? q[2] : q[3];
    sub.ntemps = vm_method_ntemps(s->method);
    sub.makes_blocks = false;
    sub.ninline_sites = 0;
    size_t ret = body_end(&sub);
    if (!ret) return false;
    L->body = L->inlined = true;
    L->nargs = sub.nargs;
    L->site = s->pc;
    L->head = 0;
    L->back = L->exit = ret;
    static Plan plan;
    memset(&plan, 0, sizeof plan);
    plan.inlined = true;
    return plan_body(&sub, L, &plan) && allocate(L);
}

static bool plan_whole_body(Compiler *c, JitWholeLoop *L)
{
    size_t ret = body_end(c);
    if (!ret) return false;
    L->body = true;
    L->inlined = false;
    L->head = 0;
    L->back = ret;
    L->exit = ret;
    static Plan plan;
    memset(&plan, 0, sizeof plan);
    if (!plan_body(c, L, &plan) || !allocate(L)) return false;
    c->target[ret] = true; /* the plain code there starts from the real stack: the answer pushed */
    return true;
}

/* Whether bytecodes lo .. hi hold a Double operation a plan could make:
 * the plan needs one, and most methods have none (a compile checks this
 * before it plans anything). */
static bool may_compute(const Compiler *c, size_t lo, size_t hi)
{
    for (size_t pc = lo; pc < hi; pc += vm_bytecode_length[c->code[pc]]) {
        uint8_t op = c->code[pc];
        if ((op == BC_SEND_ADD || op == BC_SEND_SUB || op == BC_SEND_MUL) && jit_double_inline(c, op)) return true;
        if ((op == BC_SEND || op == BC_SEND_W) && jit_double_send_kind(c, pc) != JIT_DOUBLE_SEND_NONE) return true;
    }
    return false;
}

/* Whether loop lo .. hi holds only bytecodes a plan of SmallInteger work
 * could take (its sends are looked at when planned). */
static bool may_plan_ints(const Compiler *c, size_t lo, size_t hi)
{
    for (size_t pc = lo; pc < hi; pc += vm_bytecode_length[c->code[pc]]) {
        switch (c->code[pc]) {
        case BC_DUP:
        case BC_POP:
        case BC_PUSH_OUTER:
        case BC_PUSH_FIELD:
        case BC_PUSH_SELF:
        case BC_PUSH_NIL:
        case BC_PUSH_TRUE:
        case BC_PUSH_FALSE:
        case BC_PUSH_0:
        case BC_PUSH_1:
        case BC_PUSH_LITERAL:
        case BC_PUSH_LITERAL_W:
        case BC_PUSH_ARG:
        case BC_PUSH_TEMP:
        case BC_STORE_TEMP:
        case BC_POP_TEMP:
        case BC_SEND:
        case BC_SEND_W:
        case BC_SEND_ADD:
        case BC_SEND_SUB:
        case BC_SEND_MUL:
        case BC_SEND_LT:
        case BC_SEND_GT:
        case BC_SEND_LE:
        case BC_SEND_GE:
        case BC_SEND_AT:
        case BC_SEND_AT_PUT:
        case BC_SEND_ABS:
        case BC_STORE_FIELD:
        case BC_POP_FIELD:
        case BC_SEND_EQ:
        case BC_SEND_NE:
        case BC_JUMP:
        case BC_JUMP_IF_FALSE:
        case BC_JUMP_IF_TRUE: break;
        default: return false;
        }
    }
    return true;
}

/* Whether the method's bytecodes up to its first return could plan as a
 * body of SmallInteger work with ifs or two stores into fields. */
static bool may_plan_int_body(const Compiler *c)
{
    size_t ret = 0;
    int ifs = 0, stores = 0;
    for (; ret < c->len && c->code[ret] != BC_RETURN_TOP && c->code[ret] != BC_RETURN_SELF;
         ret += vm_bytecode_length[c->code[ret]]) {
        ifs += c->code[ret] == BC_JUMP_IF_FALSE || c->code[ret] == BC_JUMP_IF_TRUE;
        stores += c->code[ret] == BC_POP_FIELD || c->code[ret] == BC_STORE_FIELD;
    }
    return ret < c->len && (ifs || stores >= 2) && may_plan_ints(c, 0, ret);
}

/* Keeps the plan in scratch: false when out of C memory. */
static bool keep(Compiler *c, const JitWholeLoop *scratch)
{
    if (!c->whole_loops && !(c->whole_loops = malloc((WL_LOOPS_MAX + JIT_INLINE_SITES_MAX) * sizeof *c->whole_loops)))
        return false;
    c->whole_loops[c->nwhole_loops++] = *scratch;
    return true;
}

void jit_whole_loop_plan(Compiler *c)
{
    static JitWholeLoop scratch; /* (the compiler runs on the VM's one thread) */
    c->whole_loops = NULL;
    c->nwhole_loops = 0;
    if (!c->rt->whole_loops) return;
    if ((may_compute(c, 0, c->len) || may_plan_int_body(c)) && plan_whole_body(c, &scratch)) {
        if (!keep(c, &scratch)) return;
    } else {
        for (size_t pc = 0; pc < c->len; pc += vm_bytecode_length[c->code[pc]]) {
            if (c->code[pc] != BC_JUMP_BACK || c->nwhole_loops >= WL_LOOPS_MAX) continue;
            long head = jit_compile_jump_target(c->code, pc);
            if (head < 0 || (size_t)head >= pc ||
                !(may_compute(c, (size_t)head, pc) || may_plan_ints(c, (size_t)head, pc)))
                continue;
            scratch.nstores = 0;
            if (plan_loop(c, pc, &scratch) && !keep(c, &scratch)) return;
        }
    }
    /* inlined callees, but not where a Double region keeps temps in xmm
     * registers and r8 (the whole code uses them all) */
    for (uint32_t i = 0; i < c->ninline_sites; i++)
        if (!c->region_of[c->inline_sites[i].pc] && plan_inlined(c, &c->inline_sites[i], &scratch) && !keep(c, &scratch))
            return;
}

size_t jit_whole_loop_bound(const Compiler *c)
{
    size_t bound = 0;
    for (int k = 0; k < c->nwhole_loops; k++) {
        const JitWholeLoop *L = &c->whole_loops[k];
        /* an unboxing (with its cold paths) is the largest node; a store
         * encodes, stores, and its cold path */
        bound += 256 + 16 + 160 * (size_t)L->n + 96 * (size_t)L->nstores;
    }
    return bound;
}

size_t jit_whole_loop_map_entries(const Compiler *c)
{
    size_t n = 0;
    for (int k = 0; k < c->nwhole_loops; k++) n += 4 + 2 * (size_t)(c->whole_loops[k].n + c->whole_loops[k].nstores);
    return n;
}

const JitWholeLoop *jit_whole_loop_at(const Compiler *c, size_t head)
{
    for (int k = 0; k < c->nwhole_loops; k++)
        if (!c->whole_loops[k].inlined && c->whole_loops[k].head == head) return &c->whole_loops[k];
    return NULL;
}

const JitWholeLoop *jit_whole_inline_at(const Compiler *c, size_t site)
{
    for (int k = 0; k < c->nwhole_loops; k++)
        if (c->whole_loops[k].inlined && c->whole_loops[k].site == site) return &c->whole_loops[k];
    return NULL;
}
