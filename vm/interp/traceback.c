/*
 * vm/interp/traceback.c — Smalltalk stacks as text (see traceback.h).
 *
 * The walk goes from the innermost frame outwards (vm_stack_walk), the
 * print the other way; frames are folded into runs of one (method, line)
 * as they come, the innermost VM_TRACEBACK_TAIL runs kept, then a ring of
 * the outermost VM_TRACEBACK_HEAD seen so far: what falls out of the ring
 * is only counted. A 200,000-deep recursion is then two or three runs.
 */
#include "vm/interp/traceback.h"

#include "vm/interp/stack.h"
#include "vm/model/class.h"
#include "vm/model/method.h"
#include "vm/model/universe.h"

#include <string.h>

typedef struct Run {
    Oop method;
    int line;
    size_t count;
} Run;

typedef struct Walk {
    bool skipping;                  /* still on top: machinery frames are dropped */
    size_t frames;                  /* every frame walked, dropped ones too */
    Run cur;                        /* the run being extended (count 0: none yet) */
    Run tail[VM_TRACEBACK_TAIL];    /* innermost runs, innermost first */
    size_t ntail;
    Run head[VM_TRACEBACK_HEAD];    /* ring of the outermost runs seen so far */
    size_t nhead, head_next;
    size_t omitted_frames, omitted_runs;
} Walk;

/* The methods that raise an error on someone else's behalf: a traceback
 * ends at the frame that called them. */
static bool is_machinery(Oop method)
{
    static const struct {
        const char *cls, *sel;
    } machinery[] = {
        {"Object", "doesNotUnderstand:arguments:"},
        {"Object", "escapedBlock:"},
        {"Object", "subclassResponsibility"},
        {"Object", "unknownGlobal:"},
        {"Object", "error:"}, /* a primitive in stvm's core; a method elsewhere */
        {"System", "resolve:"},
    };
    if (vm_method_is_block(method)) return false;
    char cls[64], sel[64];
    vm_class_name_cstr(obj_slots(method)[METHOD_HOLDER], cls, sizeof cls);
    vm_string_cstr(obj_slots(method)[METHOD_SIGNATURE], sel, sizeof sel);
    for (size_t i = 0; i < sizeof machinery / sizeof machinery[0]; i++)
        if (!strcmp(cls, machinery[i].cls) && !strcmp(sel, machinery[i].sel)) return true;
    return false;
}

static void push_run(Walk *w, Run r)
{
    if (w->ntail < VM_TRACEBACK_TAIL) {
        w->tail[w->ntail++] = r;
        return;
    }
    if (w->nhead == VM_TRACEBACK_HEAD) {
        Run *old = &w->head[w->head_next]; /* the innermost run of the ring */
        w->omitted_frames += old->count;
        w->omitted_runs++;
    } else {
        w->nhead++;
    }
    w->head[w->head_next] = r;
    w->head_next = (w->head_next + 1) % VM_TRACEBACK_HEAD;
}

static void walk_frame(Oop method, size_t bcpc, void *ctx)
{
    Walk *w = ctx;
    w->frames++;
    if (w->skipping && is_machinery(method)) return;
    w->skipping = false;
    /* bcpc is where the frame resumes, after its send; the send is before it */
    int line = vm_method_line_at(method, bcpc ? bcpc - 1 : 0);
    if (w->cur.count && w->cur.method == method && w->cur.line == line) {
        w->cur.count++;
        return;
    }
    if (w->cur.count) push_run(w, w->cur);
    w->cur = (Run){method, line, 1};
}

static void print_frame(FILE *out, const Run *r)
{
    char cls[256], sel[256], file[512];
    Oop m = r->method;
    const char *f = vm_method_file(m, file, sizeof file);
    fprintf(out, "  %s%s>>%s (%s:%d)\n", vm_method_is_block(m) ? "[] in " : "",
            vm_class_name_cstr(obj_slots(m)[METHOD_HOLDER], cls, sizeof cls),
            vm_string_cstr(obj_slots(m)[METHOD_SIGNATURE], sel, sizeof sel), f, r->line);
}

static void print_run(FILE *out, const Run *r)
{
    size_t shown = r->count < VM_TRACEBACK_REPEATS ? r->count : VM_TRACEBACK_REPEATS;
    for (size_t i = 0; i < shown; i++) print_frame(out, r);
    if (r->count > shown) fprintf(out, "  [Previous line repeated %zu more times]\n", r->count - shown);
}

size_t vm_traceback_print_frames(FILE *out, Oop *fp, size_t bcpc, bool skip_machinery)
{
    Walk w;
    memset(&w, 0, sizeof w);
    w.skipping = skip_machinery;
    if (fp) vm_stack_walk(fp, bcpc, walk_frame, &w);
    if (w.cur.count) push_run(&w, w.cur);
    /* the ring, oldest run first: it starts at head_next once it is full */
    size_t start = w.nhead == VM_TRACEBACK_HEAD ? w.head_next : 0;
    for (size_t i = w.nhead; i-- > 0;) {
        /* ring entries were pushed innermost first; print the outermost first */
        size_t k = (start + i) % VM_TRACEBACK_HEAD;
        print_run(out, &w.head[k]);
    }
    if (w.omitted_runs)
        fprintf(out, "  ... %zu frame%s omitted ...\n", w.omitted_frames, w.omitted_frames == 1 ? "" : "s");
    for (size_t i = w.ntail; i-- > 0;) print_run(out, &w.tail[i]);
    return w.frames;
}

void vm_traceback_report(FILE *out, Oop *fp, size_t bcpc, const char *msg)
{
    fflush(stdout);
    fprintf(out, "%s\n", VM_TRACEBACK_HEADER);
    vm_traceback_print_frames(out, fp, bcpc, true);
    fprintf(out, "error: %s\n", msg);
    fflush(out);
}
