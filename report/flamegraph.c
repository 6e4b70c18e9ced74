/*
 * report/flamegraph.c — one self-contained interactive SVG of a profile's
 * whole stacks: no external script, font or tool.
 *
 * Layout: an icicle — the root (`main`, or the outermost frame of each
 * stack) on the top row, callees below, each frame as wide as the samples
 * under it; siblings sorted by name so equal profiles give identical files.
 * Stacks merge by function name. Frames narrower than 0.1 px are left out
 * (their samples still count in their callers' width), said in the footer.
 *
 * Interaction (an inline script): hovering shows a frame's name, samples
 * and share in a status line (and a <title> tooltip); clicking a frame
 * zooms so its subtree fills the width (its callers stay, dimmed; "Reset
 * zoom" goes back); "Search" takes a regular expression, paints the
 * matching frames and shows the share of samples under them.
 *
 * Colours by kind (report/framekind.h): JIT'd Smalltalk, PICs and
 * trampolines, interpreted Smalltalk, VM C code, other native code,
 * kernel, unknown; a legend says which is which.
 */
#include "report/framekind.h"
#include "report/mem.h"
#include "report/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FG_WIDTH 1200.0
#define FG_ROW 17.0     /* px per stack level */
#define FG_TOP 70.0     /* title, controls, status */
#define FG_MIN_PX 0.1   /* narrower frames are left out */
#define FG_CHAR_PX 6.6  /* an 11px monospace-ish character, for label cutting */

typedef struct Node {
    const char *name;  /* the function's name (owned by the profile) */
    int kind;          /* ReportFrameKind */
    uint64_t count;    /* samples under this frame */
    int parent, first_child, next_sibling;
} Node;

typedef struct Tree {
    Node *v;
    size_t n, cap;
} Tree;

static int child(Tree *t, int parent, const ReportFunctionInfo *f)
{
    int prev = -1;
    for (int c = t->v[parent].first_child; c >= 0; prev = c, c = t->v[c].next_sibling) {
        int cmp = strcmp(t->v[c].name, f->name);
        if (cmp == 0)
            return c;
        if (cmp > 0)
            break;
    }
    report_mem_reserve(&t->v, &t->cap, t->n + 1, sizeof *t->v);
    int id = (int)t->n++;
    int next = prev < 0 ? t->v[parent].first_child : t->v[prev].next_sibling;
    t->v[id] = (Node){f->name, (int)report_frame_kind(f), 0, parent, -1, next};
    if (prev < 0)
        t->v[parent].first_child = id;
    else
        t->v[prev].next_sibling = id;
    return id;
}

static void build(const Profile *p, Tree *t)
{
    report_mem_reserve(&t->v, &t->cap, 1, sizeof *t->v);
    t->v[0] = (Node){"all", REPORT_FRAME_OTHER, 0, -1, -1, -1};
    t->n = 1;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ReportSample *s = &p->samples[i];
        const int *fr = report_profile_frames(p, s);
        int at = 0;
        t->v[0].count++;
        for (uint32_t k = s->nframes; k-- > 0;) { /* frames are leaf first: walk from the root */
            const ReportFunctionInfo *f = &p->functions[p->locations[fr[k]].function];
            at = child(t, at, f);
            t->v[at].count++;
        }
    }
}

static void xml_text(FILE *out, const char *s, size_t max)
{
    for (size_t i = 0; *s && i < max; s++, i++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, out);
        }
    }
}

typedef struct Emit {
    FILE *out;
    const Tree *t;
    double total;
    uint64_t hidden;
    int max_depth;
} Emit;

static void emit_node(Emit *e, int id, double x, int depth)
{
    const Node *n = &e->t->v[id];
    double w = FG_WIDTH * (double)n->count / e->total;
    if (w < FG_MIN_PX) {
        e->hidden++;
        return;
    }
    if (depth > e->max_depth)
        e->max_depth = depth;
    double y = FG_TOP + depth * FG_ROW;
    fprintf(e->out, "<g class=\"f k%d\" data-x=\"%.6f\" data-w=\"%.6f\" data-d=\"%d\" data-n=\"%llu\"><title>", n->kind,
            x / FG_WIDTH, w / FG_WIDTH, depth, (unsigned long long)n->count);
    xml_text(e->out, n->name, 4096);
    fprintf(e->out, " (%llu samples, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"/>",
            (unsigned long long)n->count, 100.0 * (double)n->count / e->total, x, y, w, FG_ROW - 1);
    size_t fit = w > 2 * FG_CHAR_PX ? (size_t)((w - 4) / FG_CHAR_PX) : 0;
    fprintf(e->out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FG_ROW - 5);
    if (fit > 0) {
        size_t len = strlen(n->name);
        if (len <= fit) {
            xml_text(e->out, n->name, len);
        } else if (fit > 2) {
            xml_text(e->out, n->name, fit - 2);
            fputs("..", e->out);
        }
    }
    fputs("</text></g>\n", e->out);
    double cx = x;
    for (int c = n->first_child; c >= 0; c = e->t->v[c].next_sibling) {
        emit_node(e, c, cx, depth + 1);
        cx += FG_WIDTH * (double)e->t->v[c].count / e->total;
    }
}

/* The script: zoom by rewriting x and width from each frame's fractions,
 * search by a regular expression over the frames' names. */
static const char *const script =
    "<script><![CDATA[\n"
    "var W=" "1200" ",frames=Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
    "var status=document.getElementById('status'),total=+document.getElementById('all').getAttribute('data-n');\n"
    "function nameOf(g){return g.querySelector('title').textContent.replace(/ \\(\\d+ samples, [0-9.]+%\\)$/,'');}\n"
    "function label(g,w){var t=g.querySelector('text'),n=nameOf(g),fit=Math.floor((w-4)/6.6);\n"
    " t.textContent=fit<3?'':(n.length<=fit?n:n.substring(0,fit-2)+'..');}\n"
    "function place(x0,w0,d0){frames.forEach(function(g){var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w'),\n"
    " d=+g.getAttribute('data-d'),r=g.querySelector('rect'),t=g.querySelector('text');\n"
    " var inside=x>=x0-1e-9&&x+w<=x0+w0+1e-9,above=d<d0&&x<=x0+1e-9&&x+w>=x0+w0-1e-9;\n"
    " if(!inside&&!above){g.style.display='none';return;}g.style.display='';\n"
    " var nx=above?0:(x-x0)/w0*W,nw=above?W:w/w0*W;r.setAttribute('x',nx);r.setAttribute('width',nw);\n"
    " t.setAttribute('x',nx+3);label(g,nw);g.classList.toggle('dim',above&&d<d0);});}\n"
    "frames.forEach(function(g){g.addEventListener('mouseover',function(){status.textContent=\n"
    " nameOf(g)+': '+g.getAttribute('data-n')+' samples, '+(100*g.getAttribute('data-n')/total).toFixed(2)+'%';});\n"
    " g.addEventListener('click',function(){place(+g.getAttribute('data-x'),+g.getAttribute('data-w'),\n"
    " +g.getAttribute('data-d'));document.getElementById('reset').style.display='';});});\n"
    "document.getElementById('reset').addEventListener('click',function(){place(0,1,0);this.style.display='none';});\n"
    "document.getElementById('search').addEventListener('click',function(){var q=prompt('Search frames (regular "
    "expression)','');\n"
    " if(q===null)return;var re;try{re=new RegExp(q);}catch(e){status.textContent='bad expression: '+e.message;return;}\n"
    " var spans=[];frames.forEach(function(g){var m=q!==''&&re.test(nameOf(g));g.classList.toggle('hit',m);\n"
    "  if(m)spans.push([+g.getAttribute('data-x'),+g.getAttribute('data-w')]);});\n"
    " spans.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;spans.forEach(function(s){\n"
    "  if(s[0]>=end-1e-12){sum+=s[1];end=s[0]+s[1];}else if(s[0]+s[1]>end){sum+=s[0]+s[1]-end;end=s[0]+s[1];}});\n"
    " status.textContent=q===''?'':'matched '+(100*sum).toFixed(2)+'% of the samples: /'+q+'/';});\n"
    "]]></script>\n";

bool report_write_flamegraph(FILE *out, const Profile *p, const ReportFlameOptions *opt, char *err, size_t errlen)
{
    Tree t = {0};
    build(p, &t);
    Emit e = {out, &t, t.v[0].count ? (double)t.v[0].count : 1.0, 0, 0};

    /* the frames first into memory: the height depends on the depth drawn */
    char *body = NULL;
    size_t body_len = 0;
    FILE *mem = open_memstream(&body, &body_len);
    if (!mem) {
        free(t.v);
        snprintf(err, errlen, "out of memory for the flame graph");
        return false;
    }
    e.out = mem;
    fprintf(mem, "<g id=\"all\" class=\"f k%d\" data-x=\"0\" data-w=\"1\" data-d=\"0\" data-n=\"%llu\"><title>all "
                 "(%llu samples, 100.00%%)</title><rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\"/>"
                 "<text x=\"3\" y=\"%.1f\">all</text></g>\n",
            REPORT_FRAME_OTHER, (unsigned long long)t.v[0].count, (unsigned long long)t.v[0].count, FG_TOP, FG_WIDTH,
            FG_ROW - 1, FG_TOP + FG_ROW - 5);
    double cx = 0;
    for (int c = t.v[0].first_child; c >= 0; c = t.v[c].next_sibling) {
        emit_node(&e, c, cx, 1);
        cx += FG_WIDTH * (double)t.v[c].count / e.total;
    }
    bool ok = fclose(mem) == 0;
    double height = FG_TOP + (e.max_depth + 1) * FG_ROW + 60;

    const char *title = opt && opt->title ? opt->title : "vmprofd flame graph";
    fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans Mono,Menlo,monospace\" font-size=\"11\">\n",
            FG_WIDTH, height, FG_WIDTH, height);
    fputs("<style>g.f rect{stroke:#fff;stroke-width:0.5;cursor:pointer}g.f text{pointer-events:none;fill:#000}"
          "g.f:hover rect{stroke:#000}g.dim rect{opacity:0.45}g.hit rect{fill:#e040fb!important}"
          ".k0 rect{fill:#5cb85c}.k1 rect{fill:#9fd89f}.k2 rect{fill:#5b9bd5}.k3 rect{fill:#f0a04b}"
          ".k4 rect{fill:#c8c8a0}.k5 rect{fill:#e06060}.k6 rect{fill:#dddddd}.k7 rect{fill:#b0b0b0}"
          ".btn{cursor:pointer;fill:#1a5fb4;text-decoration:underline}</style>\n",
          out);
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n<text x=\"600\" y=\"20\" text-anchor=\"middle\" "
          "font-size=\"15\">",
          out);
    xml_text(out, title, 300);
    fputs("</text>\n<text id=\"reset\" class=\"btn\" x=\"10\" y=\"20\" style=\"display:none\">Reset zoom</text>\n"
          "<text id=\"search\" class=\"btn\" x=\"1130\" y=\"20\">Search</text>\n"
          "<text id=\"status\" x=\"10\" y=\"42\"> </text>\n",
          out);
    /* the legend: one swatch per kind */
    double lx = 10;
    for (int k = 0; k < REPORT_FRAME_KIND_COUNT; k++) {
        if (k == REPORT_FRAME_OTHER)
            continue;
        fprintf(out, "<g class=\"k%d\"><rect x=\"%.0f\" y=\"50\" width=\"10\" height=\"10\"/></g>"
                     "<text x=\"%.0f\" y=\"59\">%s</text>\n",
                k, lx, lx + 14, report_frame_kind_name((ReportFrameKind)k));
        lx += 14 + 7.0 * (double)strlen(report_frame_kind_name((ReportFrameKind)k)) + 16;
    }
    if (body)
        fwrite(body, 1, body_len, out);
    free(body);
    fprintf(out, "<text x=\"10\" y=\"%.0f\">%llu samples; root at the top, callees below, width = samples; click a "
                 "frame to zoom%s</text>\n",
            height - 20, (unsigned long long)t.v[0].count,
            e.hidden ? "; frames under 0.1 px are not drawn" : "");
    fputs(script, out);
    fputs("</svg>\n", out);
    free(t.v);
    if (!ok || ferror(out)) {
        snprintf(err, errlen, "cannot write the flame graph: %s", strerror(errno ? errno : EIO));
        return false;
    }
    return true;
}
