/*
 * report/flamegraph.c — one self-contained interactive SVG of a profile's
 * whole stacks: no external script, font or tool.
 *
 * Layout: an icicle — the root ("all", then `main` or the outermost frame
 * of each stack) on the top row, callees below, each frame as wide as the
 * samples under it (its own plus its callees'); siblings sorted by name
 * (strcmp) so equal profiles give identical files. Stacks merge by
 * function name. Frames narrower than 0.1 px are left out (their samples
 * still count in their callers' width), said in the footer.
 *
 * Each frame is one element, so renderers, tests and scripts read it alike:
 *
 *   <g class="f kK" data-x=X data-w=W data-d=D data-n=N>
 *     <title>NAME (N samples, P%)</title><rect …/><text>LABEL</text></g>
 *
 *   K  ReportFrameKind (report/framekind.h), the colour
 *   X  left edge, W width: fractions of all samples (0..1), to 8 decimals
 *      so rounding never puts a callee's edge past its caller's (at 6, a
 *      last callee could end 1e-6 beyond it)
 *   D  depth, 0 = "all";  N samples under the frame;  P = N / all
 *
 * Names are XML-escaped and made valid UTF-8 (a symbol with stray bytes
 * must not make the whole file unreadable); labels are cut to what fits
 * the frame, on a character boundary, ending in "..".
 *
 * Interaction (an inline script, in a closure: `status` or `name` as
 * globals would be the window's own properties): hovering shows a frame's
 * name, samples and share in the status line (and a <title> tooltip);
 * clicking a frame zooms so its subtree fills the width (its callers stay,
 * dimmed; "Reset zoom", Escape or a click on "all" go back); "Search",
 * Ctrl-F or "/" ask for a regular expression, paint the matching frames and
 * show the share of samples under them (a frame matching inside a matching
 * frame counts once).
 *
 * Colours by kind (report/framekind.h): JIT'd Smalltalk, PICs and
 * trampolines, interpreted Smalltalk, VM C code, other native code,
 * kernel, unknown; a legend says which is which.
 *
 * Differential (ReportFlameOptions.base, `vmprofd diff -o d.svg`): widths
 * as above from the new profile; each frame's fill (an inline style over
 * its kind's) by the change of its share of all samples from the base
 * profile's frame at the same stack path: red grew, blue shrank, the
 * deeper the larger the change (full at FG_DIFF_FULL), grey unchanged.
 * data-b holds the base share (0..1); the title adds "; base B%, +D pp".
 * Frames only in the base have no width here, so they are not drawn.
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
#define FG_CHAR_PX 6.6  /* an 11px monospace character (0.6 em), for label cutting */
/* The title's 900 px (150 px each side for the controls) of 15 px text,
 * as the width write_label would give 11 px text of as many characters. */
#define FG_TITLE_PX ((FG_WIDTH - 2 * 150.0) * 11.0 / 15.0)
/* Differential colours: a change of 20 points of all samples is full red
 * or blue (a method that moves that much is the story of the diff);
 * under 0.05 points is "unchanged" (below one sample in 2000). */
#define FG_DIFF_FULL 0.20
#define FG_DIFF_SAME 0.0005

/* Fill colours by ReportFrameKind: greens for Smalltalk in machine code
 * (the stubs lighter), blue for the interpreter's, warm for C (the VM's
 * orange, others' khaki), red for the kernel, greys for unknown and the
 * root. Magenta (#e040fb) is kept for search hits. */
static const char *const kind_colour[] = {
    [REPORT_FRAME_JIT] = "#5cb85c",    [REPORT_FRAME_STUB] = "#9fd89f",    [REPORT_FRAME_INTERPRETED] = "#5b9bd5",
    [REPORT_FRAME_VM] = "#f0a04b",     [REPORT_FRAME_NATIVE] = "#c8c8a0",  [REPORT_FRAME_KERNEL] = "#e06060",
    [REPORT_FRAME_UNKNOWN] = "#dddddd", [REPORT_FRAME_OTHER] = "#b0b0b0",
};
_Static_assert(sizeof kind_colour / sizeof *kind_colour == REPORT_FRAME_KIND_COUNT, "a colour for every kind");

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
        t->v[0].count += s->weight;
        for (uint32_t k = s->nframes; k-- > 0;) { /* frames are leaf first: walk from the root */
            const ReportFunctionInfo *f = &p->functions[p->locations[fr[k]].function];
            at = child(t, at, f);
            t->v[at].count += s->weight;
        }
    }
}

/* The next character of a UTF-8 string: its byte length, and whether it
 * is one XML may carry. Invalid or overlong sequences, surrogates and
 * U+FFFE/U+FFFF are one bad byte each; C0 controls other than tab are
 * bad too (XML 1.0 forbids them). */
static size_t utf8_next(const unsigned char *s, bool *good)
{
    unsigned c = s[0];
    size_t len = c < 0x80                ? 1
                 : c >= 0xc2 && c <= 0xdf ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0; /* 0x80..0xc1, 0xf5..: never a lead byte */
    *good = len > 0;
    if (len <= 1) {
        *good = *good && (c >= 0x20 || c == '\t');
        return 1;
    }
    uint32_t cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            *good = false;
            return 1;
        }
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff) ||
        cp == 0xfffe || cp == 0xffff) {
        *good = false;
        return 1;
    }
    return len;
}

/* Characters (not bytes) in s, as the label cutting counts them. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    bool good;
    for (const unsigned char *u = (const unsigned char *)s; *u; u += utf8_next(u, &good))
        n++;
    return n;
}

/* At most max characters of s as XML character data (or an attribute
 * value): markup escaped, bad bytes as U+FFFD. */
static void xml_text(FILE *out, const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; *u && i < max; i++) {
        bool good;
        size_t len = utf8_next(u, &good);
        if (!good)
            fputs("\xef\xbf\xbd", out); /* U+FFFD REPLACEMENT CHARACTER */
        else if (*u == '<')
            fputs("&lt;", out);
        else if (*u == '>')
            fputs("&gt;", out);
        else if (*u == '&')
            fputs("&amp;", out);
        else if (*u == '"')
            fputs("&quot;", out);
        else if (*u == '\'')
            fputs("&apos;", out);
        else
            fwrite(u, 1, len, out);
        u += len;
    }
}

/* The label of a frame w px wide: the whole name, or its start and "..",
 * or nothing; the script's label() cuts the same way when it zooms. */
static void write_label(FILE *out, const char *name, double w)
{
    size_t fit = w > 4 ? (size_t)((w - 4) / FG_CHAR_PX) : 0;
    size_t len = utf8_chars(name);
    if (len <= fit) {
        xml_text(out, name, len);
    } else if (fit >= 3) {
        xml_text(out, name, fit - 2);
        fputs("..", out);
    }
}

/* What a width counts: bytes in an allocation profile (report.h). */
static const char *unit_of(const Profile *p)
{
    return p->is_alloc ? "bytes" : "samples";
}

typedef struct Emit {
    FILE *out;
    const Profile *p; /* counts are weights: shown as (weighted) samples */
    const Tree *t;
    double total;
    uint64_t hidden;
    int max_depth;
    const Tree *base; /* differential: the base profile's tree, else NULL */
    double base_total;
} Emit;

/* The child of base node b named like new node n, or -1. */
static int base_child(const Tree *base, int b, const char *name)
{
    if (b < 0)
        return -1;
    for (int c = base->v[b].first_child; c >= 0; c = base->v[c].next_sibling)
        if (strcmp(base->v[c].name, name) == 0)
            return c;
    return -1;
}

/* The fill of a frame whose share went from `was` to `now` (0..1). */
static void diff_fill(FILE *out, double was, double now)
{
    double d = now - was, s = d < 0 ? -d : d;
    if (s < FG_DIFF_SAME) {
        fputs(" style=\"fill:rgb(221,221,221)\"", out);
        return;
    }
    s = s >= FG_DIFF_FULL ? 1.0 : 0.15 + 0.85 * s / FG_DIFF_FULL;
    int c = (int)(235 - 200 * s + 0.5);
    fprintf(out, d > 0 ? " style=\"fill:rgb(255,%d,%d)\"" : " style=\"fill:rgb(%d,%d,255)\"", c, c);
}

static void emit_node(Emit *e, int id, int base_id, double x, int depth)
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
    unsigned long long shown = (unsigned long long)report_profile_rounded(e->p, n->count);
    double share = (double)n->count / e->total;
    double was = e->base && base_id >= 0 ? (double)e->base->v[base_id].count / e->base_total : 0.0;
    fprintf(e->out, "<g class=\"f k%d\" data-x=\"%.8f\" data-w=\"%.8f\" data-d=\"%d\" data-n=\"%llu\"", n->kind,
            x / FG_WIDTH, w / FG_WIDTH, depth, shown);
    if (e->base)
        fprintf(e->out, " data-b=\"%.8f\"", was);
    fputs("><title>", e->out);
    xml_text(e->out, n->name, SIZE_MAX);
    fprintf(e->out, " (%llu %s, %.2f%%", shown, unit_of(e->p), 100.0 * share);
    if (e->base)
        fprintf(e->out, "; base %.2f%%, %+.2f pp", 100.0 * was, 100.0 * (share - was));
    fprintf(e->out, ")</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"", x, y, w, FG_ROW - 1);
    if (e->base)
        diff_fill(e->out, was, share);
    fputs("/>", e->out);
    fprintf(e->out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FG_ROW - 5);
    write_label(e->out, n->name, w);
    fputs("</text></g>\n", e->out);
    double cx = x;
    for (int c = n->first_child; c >= 0; c = e->t->v[c].next_sibling) {
        emit_node(e, c, e->base ? base_child(e->base, base_id, e->t->v[c].name) : -1, cx, depth + 1);
        cx += FG_WIDTH * (double)e->t->v[c].count / e->total;
    }
}

/* The script. Zoom rewrites each frame's x and width from its data-x and
 * data-w fractions; search tests a regular expression against the names
 * (the <title> text without its counts) and sums the union of the hits'
 * spans, so nested hits count once (W and CH are FG_WIDTH and FG_CHAR_PX).
 * Everything lives in a closure: a global `status` would be window.status,
 * a string, and the status line would silently stay blank. */
static const char *const script =
    "<script><![CDATA[\n"
    "(function(){'use strict';\n"
    "var W=1200,CH=6.6,frames=Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
    "var statusEl=document.getElementById('status'),matchedEl=document.getElementById('matched'),\n"
    " resetEl=document.getElementById('reset'),last='',\n"
    " total=+document.getElementById('all').getAttribute('data-n')||1,\n"
    " unit=document.getElementById('all').getAttribute('data-unit')||'samples';\n"
    "function num(g,a){return +g.getAttribute(a);}\n"
    "function nameOf(g){return g.querySelector('title').textContent\n"
    " .replace(/ \\(\\d+ (samples|bytes), [0-9.]+%[^()]*\\)$/,'');}\n"
    "function label(g,w){var t=g.querySelector('text'),n=nameOf(g),fit=w>4?Math.floor((w-4)/CH):0;\n"
    " t.textContent=n.length<=fit?n:fit>=3?n.substring(0,fit-2)+'..':'';}\n"
    "function place(x0,w0,d0){frames.forEach(function(g){var x=num(g,'data-x'),w=num(g,'data-w'),d=num(g,'data-d'),\n"
    "  r=g.querySelector('rect'),t=g.querySelector('text');\n"
    " var inside=x>=x0-1e-9&&x+w<=x0+w0+1e-9&&d>=d0,above=d<d0&&x<=x0+1e-9&&x+w>=x0+w0-1e-9;\n"
    " if(!inside&&!above){g.style.display='none';return;}g.style.display='';\n"
    " var nx=above?0:(x-x0)/w0*W,nw=above?W:w/w0*W;\n"
    " r.setAttribute('x',nx.toFixed(2));r.setAttribute('width',nw.toFixed(2));\n"
    " t.setAttribute('x',(nx+3).toFixed(2));label(g,nw);g.classList.toggle('dim',above);});\n"
    " resetEl.style.display=w0<1||d0>0?'':'none';}\n"
    "function search(q){if(q===undefined){q=prompt('Search frames (a regular expression; empty clears)',last);\n"
    "  if(q===null)return;}\n"
    " var re;try{re=new RegExp(q);}catch(e){matchedEl.textContent='bad expression: '+e.message;return;}\n"
    " last=q;var spans=[];frames.forEach(function(g){var m=q!==''&&re.test(nameOf(g));g.classList.toggle('hit',m);\n"
    "  if(m)spans.push([num(g,'data-x'),num(g,'data-w')]);});\n"
    " spans.sort(function(a,b){return a[0]-b[0];});var sum=0,end=0;spans.forEach(function(s){\n"
    "  var a=Math.max(s[0],end),b=s[0]+s[1];if(b>a){sum+=b-a;end=b;}});\n"
    " matchedEl.textContent=q===''?'':'matched '+(100*Math.min(sum,1)).toFixed(2)+'% of the '+unit+': /'+q+'/';}\n"
    "frames.forEach(function(g){\n"
    " g.addEventListener('mouseover',function(){statusEl.textContent=nameOf(g)+': '+g.getAttribute('data-n')+\n"
    "  ' '+unit+', '+(100*num(g,'data-n')/total).toFixed(2)+'%'+(g.hasAttribute('data-b')?\n"
    "  '; base '+(100*num(g,'data-b')).toFixed(2)+'%':'');});\n"
    " g.addEventListener('mouseout',function(){statusEl.textContent=' ';});\n"
    " g.addEventListener('click',function(){place(num(g,'data-x'),num(g,'data-w'),num(g,'data-d'));});});\n"
    "resetEl.addEventListener('click',function(){place(0,1,0);});\n"
    "document.getElementById('search').addEventListener('click',function(){search();});\n"
    "document.addEventListener('keydown',function(e){\n"
    " if(((e.ctrlKey||e.metaKey)&&(e.key==='f'||e.key==='F'))||(e.key==='/'&&!e.ctrlKey&&!e.metaKey)){\n"
    "  e.preventDefault();search();}\n"
    " else if(e.key==='Escape'){place(0,1,0);search('');}});\n"
    "})();\n"
    "]]></script>\n";

bool report_write_flamegraph(FILE *out, const Profile *p, const ReportFlameOptions *opt, char *err, size_t errlen)
{
    Tree t = {0}, base = {0};
    build(p, &t);
    Emit e = {out, p, &t, t.v[0].count ? (double)t.v[0].count : 1.0, 0, 0, NULL, 1.0};
    if (opt && opt->base) {
        build(opt->base, &base);
        e.base = &base;
        e.base_total = base.v[0].count ? (double)base.v[0].count : 1.0;
    }
    unsigned long long all = (unsigned long long)report_profile_rounded(p, t.v[0].count);

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
    errno = 0;
    clearerr(out);
    fprintf(mem, "<g id=\"all\" class=\"f k%d\" data-x=\"0\" data-w=\"1\" data-d=\"0\" data-n=\"%llu\" "
                 "data-unit=\"%s\"><title>all (%llu %s, 100.00%%)</title><rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\"/>"
                 "<text x=\"3\" y=\"%.1f\">all</text></g>\n",
            REPORT_FRAME_OTHER, all, unit_of(p), all, unit_of(p), FG_TOP, FG_WIDTH,
            FG_ROW - 1, FG_TOP + FG_ROW - 5);
    double cx = 0;
    for (int c = t.v[0].first_child; c >= 0; c = t.v[c].next_sibling) {
        emit_node(&e, c, e.base ? base_child(e.base, 0, t.v[c].name) : -1, cx, 1);
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
          ".btn{cursor:pointer;fill:#1a5fb4;text-decoration:underline}",
          out);
    for (int k = 0; k < REPORT_FRAME_KIND_COUNT; k++)
        fprintf(out, ".k%d rect{fill:%s}", k, kind_colour[k]);
    fputs("</style>\n", out);
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n<text x=\"600\" y=\"20\" text-anchor=\"middle\" "
          "font-size=\"15\">",
          out);
    /* the title line's middle, between "Reset zoom" and "Search", at 15 px */
    write_label(out, title, FG_TITLE_PX);
    fputs("</text>\n<text id=\"reset\" class=\"btn\" x=\"10\" y=\"20\" style=\"display:none\">Reset zoom</text>\n"
          "<text id=\"search\" class=\"btn\" x=\"1190\" y=\"20\" text-anchor=\"end\">Search (Ctrl-F)</text>\n"
          "<text id=\"status\" x=\"10\" y=\"42\"> </text>\n"
          "<text id=\"matched\" x=\"1190\" y=\"42\" text-anchor=\"end\"> </text>\n",
          out);
    /* the legend: one swatch per kind, or what a differential's colours say */
    double lx = 10;
    if (e.base)
        fputs("<rect x=\"10\" y=\"50\" width=\"10\" height=\"10\" style=\"fill:rgb(255,35,35)\"/>"
              "<text x=\"24\" y=\"59\">grew</text><rect x=\"70\" y=\"50\" width=\"10\" height=\"10\" "
              "style=\"fill:rgb(35,35,255)\"/><text x=\"84\" y=\"59\">shrank (share of all samples, from the "
              "base profile to this one)</text>\n",
              out);
    for (int k = 0; k < REPORT_FRAME_KIND_COUNT && !e.base; k++) {
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
    fprintf(out, "<text x=\"10\" y=\"%.0f\">%llu %s; root at the top, callees below, width = %s; click a "
                 "frame to zoom, Ctrl-F to search%s</text>\n",
            height - 20, all, unit_of(p), unit_of(p),
            e.hidden ? "; frames under 0.1 px are not drawn" : "");
    fputs(script, out);
    fputs("</svg>\n", out);
    free(t.v);
    free(base.v);
    if (!ok) {
        snprintf(err, errlen, "out of memory for the flame graph");
        return false;
    }
    /* fflush: a full disk shows here, not in the buffered writes */
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "cannot write the flame graph: %s", strerror(errno ? errno : EIO));
        return false;
    }
    return true;
}
