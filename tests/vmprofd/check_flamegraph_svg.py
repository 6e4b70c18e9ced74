#!/usr/bin/env python3
"""Judges vmprofd's flame graph of a Richards run against the folded stacks
and the text report vmprofd wrote from the same samples.

  check_flamegraph_svg.py OUT.svg OUT.folded REPORT.txt [--png SHOT.png]
                          [--selftest DUMP.xml]

OUT.svg must parse as XML; every frame's count must equal the samples of
its stack prefix in OUT.folded, its width and place must follow from the
counts (siblings sorted by name, side by side under their caller), every
prefix wide enough to draw (0.1 px) must be drawn, and the frame's colour
class must be its kind. Richards' methods must be there, as JIT'd
Smalltalk. REPORT.txt's **Callers** section, between the tables and
**Memory**, must give exactly the callers the folded stacks give (nearest
different caller of each sample's leaf). SHOT.png (headless Chromium's
screenshot) must show frames: big, many colours, thousands of pixels in
the colours of JIT'd Smalltalk and of VM C code. DUMP.xml (Chromium's
--dump-dom of the SVG with flamegraph_selftest.js appended) must show the
hover, zoom, reset, search, Ctrl-F and Escape doing what the numbers say.
"""
import html
import json
import re
import struct
import sys
import xml.dom.minidom
import zlib

WIDTH = 1200.0
# framekind.h: the class k<N> of each kind
JIT, STUB, INTERPRETED, VM, NATIVE, KERNEL, UNKNOWN, ROOT = range(8)
COLOURS = {JIT: (0x5c, 0xb8, 0x5c), VM: (0xf0, 0xa0, 0x4b)}

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def sanitize(name):
    """As folded.c writes a name."""
    return re.sub(r'[\n\r]', ' ', name.replace(';', ':'))


def read_svg(path):
    doc = xml.dom.minidom.parse(path)
    frames = []
    for g in doc.getElementsByTagName('g'):
        cls = g.getAttribute('class')
        if not cls.startswith('f '):
            continue
        title = g.getElementsByTagName('title')[0].firstChild.data
        m = re.match(r'^(.*) \((\d+) samples, ([0-9.]+)%\)$', title, re.S)
        frames.append({'name': m.group(1), 'n': int(g.getAttribute('data-n')), 'title_n': int(m.group(2)),
                       'pct': float(m.group(3)), 'kind': int(cls.split()[1][1:]),
                       'x': float(g.getAttribute('data-x')), 'w': float(g.getAttribute('data-w')),
                       'd': int(g.getAttribute('data-d'))})
    return doc, frames


def read_folded(path):
    stacks = []
    for line in open(path, encoding='utf-8', errors='replace'):
        line = line.rstrip('\n')
        if line:
            text, n = line.rsplit(' ', 1)
            stacks.append((text.split(';'), int(n)))
    return stacks


def expected_kind(name):
    """framekind.c's rules, from the name alone (this run: stvm with its JIT)."""
    if name.startswith('[unknown') or name.startswith('[code zone'):
        return UNKNOWN
    if name == '[kernel]' or name.startswith('[k]'):
        return KERNEL
    if name.endswith(' (interpreted)'):
        return INTERPRETED
    if name.endswith(' (closed PIC)') or name.endswith(' (open PIC)'):
        return STUB
    if '>>' in name:
        return JIT
    if name in ('main', 'vm_run', 'vm_interpret', 'interpret'):
        return VM
    if name.startswith('__libc_start'):
        return NATIVE
    return None  # C names: VM or native by region, which the SVG does not carry


def check_frames(frames, stacks):
    total = sum(n for _, n in stacks)
    root = frames[0]
    if root['name'] != 'all' or root['d'] != 0 or root['n'] != total:
        fail(f'the root is {root["name"]} with {root["n"]} samples, not all with {total} (the folded stacks)')
    # samples per stack prefix, by the folded (sanitized) names
    prefix = {}
    for names, n in stacks:
        for i in range(1, len(names) + 1):
            key = tuple(names[:i])
            prefix[key] = prefix.get(key, 0) + n
    # each frame's path, from document order (preorder)
    path, drawn, children = [], {}, {}
    for i, f in enumerate(frames):
        if i == 0:
            continue
        del path[f['d'] - 1:]
        path.append(f)
        key = tuple(sanitize(p['name']) for p in path)
        drawn[key] = drawn.get(key, 0) + f['n']
        parent = path[-2] if len(path) > 1 else root
        children.setdefault(id(parent), (parent, []))[1].append(f)
        if f['n'] != f['title_n']:
            fail(f'{f["name"]}: data-n {f["n"]} but its title says {f["title_n"]}')
        if abs(f['w'] - f['n'] / total) > 2e-6:
            fail(f'{f["name"]}: width {f["w"]} for {f["n"]} of {total} samples')
        if abs(f['pct'] - 100.0 * f['n'] / total) > 0.006:
            fail(f'{f["name"]}: {f["pct"]}% in its title for {f["n"]} of {total} samples')
        want = expected_kind(f['name'])
        if want is not None and f['kind'] != want:
            fail(f'{f["name"]} is drawn as kind k{f["kind"]}, not k{want}')
    for key, n in drawn.items():
        if prefix.get(key) != n:
            fail(f'{";".join(key)}: {n} samples in the flame graph, {prefix.get(key)} in the folded stacks')
            break
    missing = [k for k, n in prefix.items() if n / total * WIDTH >= 0.11 and k not in drawn]
    if missing:
        fail(f'{len(missing)} stacks wide enough to draw are not drawn, e.g. {";".join(missing[0])}')
    # siblings: sorted by name, side by side from their caller's left edge
    for parent, kids in children.values():
        names = [k['name'].encode() for k in kids]
        if names != sorted(names):
            fail(f'the callees of {parent["name"]} are not sorted by name')
        # exact places from the counts (data-x and data-w are rounded to 1e-6)
        left = parent.get('left', 0)
        for k in kids:
            k['left'] = left
            if abs(k['x'] - left / total) > 1e-6:
                fail(f'{k["name"]} starts at {k["x"]}, not at {left / total} beside its siblings')
                break
            left += k['n']
        if sum(k['n'] for k in kids) > parent['n']:
            fail(f'the callees of {parent["name"]} have more samples than it')
    return total


def check_richards(frames):
    names = {f['name'] for f in frames}
    for want in ('main', 'Richards>>benchmark', 'RichardsScheduler>>schedule'):
        if want not in names:
            fail(f'no frame {want}')
    tasks = sorted(n for n in names if re.match(r'Richards\w*Task>>run:$', n))
    if len(tasks) < 2:
        fail(f'fewer than 2 task run: methods among the frames: {tasks}')
    bench = sorted((f for f in frames if f['name'] == 'Richards>>benchmark'), key=lambda f: -f['n'])
    if bench and bench[0]['kind'] != JIT:
        fail(f'Richards>>benchmark is kind k{bench[0]["kind"]}, not JIT\'d Smalltalk')
    print(f'flame graph: {len(frames)} frames, deepest {max(f["d"] for f in frames)}; '
          f'Richards>>benchmark {bench[0]["n"] if bench else 0} samples; task methods {tasks}')


def check_callers(report, stacks):
    text = open(report, encoding='utf-8', errors='replace').read()
    start, memory = text.find('**Callers**'), text.find('**Memory**')
    tables = text.find('% of generated vm code')
    if start < 0 or memory < 0 or not tables < start < memory:
        fail('no **Callers** section between the tables and **Memory**')
        return
    # what the folded stacks say
    leaves, callers = {}, {}
    for names, n in stacks:
        leaf = names[-1]
        leaves[leaf] = leaves.get(leaf, 0) + n
        caller = next((c for c in reversed(names[:-1]) if c != leaf), sanitize('(no caller)'))
        callers.setdefault(leaf, {})
        callers[leaf][caller] = callers[leaf].get(caller, 0) + n
    top = sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0].encode()))[:10]
    # what the report says
    blocks, cur = [], None
    for line in text[start:memory].splitlines()[1:]:
        if not line:
            continue
        if line.startswith('\t'):
            pct, name, n = line[1:].split('\t')
            cur[2].append((pct.strip(), sanitize(name), int(n.strip('()'))))
        else:
            name, n = line.rsplit('\t', 1)
            cur = (sanitize(name), int(re.match(r'\((\d+) samples\)', n).group(1)), [])
            blocks.append(cur)
    # Ties are broken by name, and the folded names may differ from the
    # report's (';' as ':'): compare counts where the order decides, names
    # and counts elsewhere.
    if [b[1] for b in blocks] != [n for _, n in top]:
        fail(f'the callers section lists {[(b[0], b[1]) for b in blocks]}, the folded stacks give {top}')
    for name, n, rows in blocks:
        if leaves.get(name) != n:
            fail(f'the callers section gives {name} {n} samples, the folded stacks {leaves.get(name)}')
        want = callers.get(name, {})
        shown = [r for r in rows if r[1] != '...others...']
        others = sum(r[2] for r in rows if r[1] == '...others...')
        counts = sorted(want.values(), reverse=True)
        if [r[2] for r in shown] != counts[:len(shown)] or (len(want) > 11 and len(shown) != 10) or \
                (len(want) <= 11 and len(shown) != len(want)) or others != sum(counts[len(shown):]) or \
                any(want.get(r[1]) != r[2] for r in shown):
            fail(f'callers of {name}: report {[(r[1], r[2]) for r in rows]}, folded stacks {want}')
        for pct, caller, c in rows:
            if abs(float(pct.rstrip('%')) - 100.0 * c / n) > 0.006:
                fail(f'callers of {name}: {caller} {pct} for {c} of {n}')
    sched = next((b for b in blocks if b[0] == 'RichardsScheduler>>schedule'), None)
    print(f'callers section: {len(blocks)} functions' +
          (f'; RichardsScheduler>>schedule called by {sched[2][0][1]} {sched[2][0][0]}' if sched else ''))


def png_pixels(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG')
    pos, idat, w, h, ctype = 8, b'', 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if depth != 8 or interlace:
                raise ValueError('only 8-bit, non-interlaced PNGs')
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    counts, prev = {}, bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # the five PNG filters
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for i in range(0, stride, bpp):
            px = bytes(line[i:i + 3])
            counts[px] = counts.get(px, 0) + 1
        prev = line
    return w, h, counts


def check_png(path):
    size = len(open(path, 'rb').read())
    w, h, counts = png_pixels(path)
    jit, vm = counts.get(bytes(COLOURS[JIT]), 0), counts.get(bytes(COLOURS[VM]), 0)
    print(f'screenshot: {w}x{h}, {size} bytes, {len(counts)} colours; {jit} pixels of JIT\'d Smalltalk, '
          f'{vm} of VM C code')
    if size < 10000:
        fail(f'the screenshot is only {size} bytes: nothing drawn')
    if len(counts) < 20:
        fail(f'the screenshot has only {len(counts)} colours')
    if jit < 2000 or vm < 2000:
        fail('the screenshot does not show the frames (too few pixels of their colours)')


def union(spans):
    total, end = 0.0, 0.0
    for x, w in sorted(spans):
        a, b = max(x, end), x + w
        if b > a:
            total, end = total + b - a, b
    return total


def check_selftest(path, frames, total):
    dump = open(path, encoding='utf-8', errors='replace').read()
    # the last element: the self-test appends it when it is done
    m = re.findall(r'<desc id="selftest">([^<]*)</desc>', dump)
    if not m:
        fail('the self-test left no result: the page script did not run')
        return
    r = json.loads(html.unescape(m[-1]))
    print('self-test: ' + json.dumps(r, sort_keys=True))
    if r['errors']:
        fail(f'the flame graph\'s script threw: {r["errors"]}')
        return
    if r['frames'] != len(frames) or not r['found']:
        fail(f'Chromium sees {r["frames"]} frames (the file has {len(frames)}), Richards>>benchmark and '
             f'RichardsScheduler>>schedule found: {r["found"]}')
        return
    bench = max((f for f in frames if f['name'] == 'Richards>>benchmark'), key=lambda f: f['n'])
    child = max((f for f in frames if f['name'] == 'RichardsScheduler>>schedule' and f['d'] == bench['d'] + 1 and
                 bench['x'] <= f['x'] < bench['x'] + bench['w']), key=lambda f: f['n'])
    want = f'Richards>>benchmark: {bench["n"]} samples, {100.0 * bench["n"] / total:.2f}%'
    if r['hover'] != want:
        fail(f'hovering Richards>>benchmark shows {r["hover"]!r}, not {want!r}')
    if r['hoverOut'].strip():
        fail(f'the status line keeps {r["hoverOut"]!r} after the mouse leaves')
    # zoom: the frame fills the width, its callees scale with it, the frames
    # neither inside it nor its callers disappear, its callers are dimmed
    eps = 1e-9
    inside = [f for f in frames if f['d'] >= bench['d'] and f['x'] >= bench['x'] - eps and
              f['x'] + f['w'] <= bench['x'] + bench['w'] + eps]
    above = [f for f in frames if f['d'] < bench['d'] and f['x'] <= bench['x'] + eps and
             f['x'] + f['w'] >= bench['x'] + bench['w'] - eps]
    if abs(r['zoomWidth'] - WIDTH) > 0.01:
        fail(f'zoomed, Richards>>benchmark is {r["zoomWidth"]} px wide, not {WIDTH}')
    want_child = child['n'] / bench['n'] * WIDTH
    if abs(r['zoomChildWidth'] - want_child) > 0.01:
        fail(f'zoomed, RichardsScheduler>>schedule is {r["zoomChildWidth"]} px, not {want_child:.2f}')
    if r['zoomHidden'] != len(frames) - len(inside) - len(above):
        fail(f'zoomed, {r["zoomHidden"]} frames hidden, not {len(frames) - len(inside) - len(above)}')
    if r['zoomDimmed'] != len(above) or len(above) != bench['d']:
        fail(f'zoomed, {r["zoomDimmed"]} frames dimmed, not its {bench["d"]} callers')
    if r['zoomLabel'] != 'Richards>>benchmark' or not r['resetShownWhenZoomed']:
        fail(f'zoomed: label {r["zoomLabel"]!r}, reset shown {r["resetShownWhenZoomed"]}')
    if abs(r['resetWidth'] - bench['w'] * WIDTH) > 0.01 or r['resetHidden'] or r['resetDimmed'] or \
            r['resetShownAfterReset']:
        fail(f'after Reset zoom: width {r["resetWidth"]} (want {bench["w"] * WIDTH:.2f}), '
             f'{r["resetHidden"]} hidden, {r["resetDimmed"]} dimmed, reset shown {r["resetShownAfterReset"]}')
    # search: the share under the matching frames, nested ones once
    for key, hits_key, regex in (('search', 'searchHits', r'Richards'), ('ctrlF', 'ctrlFHits', r'^main$')):
        hits = [f for f in frames if re.search(regex, f['name'])]
        want = f'matched {100.0 * min(union((f["x"], f["w"]) for f in hits), 1.0):.2f}% of the samples: /{regex}/'
        if r[key] != want or r[hits_key] != len(hits):
            fail(f'search /{regex}/ shows {r[key]!r} with {r[hits_key]} frames painted, not {want!r} with '
                 f'{len(hits)}')
    if r['escape'].strip() or r['escapeHits']:
        fail(f'Escape leaves {r["escape"]!r} and {r["escapeHits"]} painted frames')


def main():
    args = sys.argv[1:]
    png = selftest = None
    if '--png' in args:
        i = args.index('--png')
        png = args[i + 1]
        del args[i:i + 2]
    if '--selftest' in args:
        i = args.index('--selftest')
        selftest = args[i + 1]
        del args[i:i + 2]
    svg, folded, report = args
    try:
        _, frames = read_svg(svg)
    except Exception as e:
        fail(f'{svg} is not well-formed XML: {e}')
        return 1
    stacks = read_folded(folded)
    total = check_frames(frames, stacks)
    check_richards(frames)
    check_callers(report, stacks)
    if png:
        check_png(png)
    if selftest:
        check_selftest(selftest, frames, total)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
