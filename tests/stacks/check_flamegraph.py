#!/usr/bin/env python3
"""Checks vmprofd's flame graph of tests/stacks/som/Stacks.som.

  check_flamegraph.py FILE.svg [SCREENSHOT.png]

The SVG must parse as XML and hold the program's frames (run: -> outer ->
middleA / middleB -> leaf:, with leaf: under both) with sample counts that
add up (a frame is never wider than its caller); the screenshot, taken by
headless Chromium, must show frames in the colours of JIT'd Smalltalk and of
VM C code (so the SVG really rendered, not an empty page)."""
import re
import struct
import sys
import xml.dom.minidom
import zlib


def frames(svg):
    doc = xml.dom.minidom.parse(svg)
    out = []
    for g in doc.getElementsByTagName('g'):
        cls = g.getAttribute('class')
        if not cls.startswith('f '):
            continue
        title = g.getElementsByTagName('title')[0].firstChild.data
        name = re.sub(r' \(\d+ samples, [0-9.]+%\)$', '', title)
        out.append((name, int(g.getAttribute('data-d')), float(g.getAttribute('data-x')),
                    float(g.getAttribute('data-w')), int(g.getAttribute('data-n')), cls))
    return out


def png_pixels(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    pos, idat, w, h, ctype = 8, b'', 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
            assert depth == 8, 'only 8-bit PNGs'
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    counts = {}
    for line in rows:
        for i in range(0, stride, bpp):
            px = line[i:i + 3]
            counts[px] = counts.get(px, 0) + 1
    return counts


def main():
    fs = frames(sys.argv[1])
    names = [f[0] for f in fs]
    ok = True
    for want in ('main', 'interpret', 'Stacks>>run:', 'Stacks>>outer', 'Stacks>>middleA', 'Stacks>>middleB',
                 'Stacks>>leaf:'):
        if want not in names:
            print(f'FAIL: no frame {want} in the flame graph'); ok = False
    leafs = [f for f in fs if f[0] == 'Stacks>>leaf:']
    if len(leafs) < 2:
        print('FAIL: Stacks>>leaf: is not drawn under both middleA and middleB'); ok = False
    total = max(f[4] for f in fs)
    a = sum(f[4] for f in fs if f[0] == 'Stacks>>middleA')
    b = sum(f[4] for f in fs if f[0] == 'Stacks>>middleB')
    print(f'flame graph: {len(fs)} frames drawn, {total} samples; middleA {100.0 * a / max(a + b, 1):.1f}% of the middles')
    # a callee lies within its caller and is never wider
    by_depth = {}
    for f in fs:
        by_depth.setdefault(f[1], []).append(f)
    for f in fs:
        if f[1] == 0:
            continue
        parents = [p for p in by_depth.get(f[1] - 1, []) if p[2] <= f[2] + 1e-6 and f[2] + f[3] <= p[2] + p[3] + 1e-6]
        if not parents or parents[0][4] < f[4]:
            print(f'FAIL: frame {f[0]} at depth {f[1]} does not lie within a caller at least as wide'); ok = False
            break
    if len(sys.argv) > 2:
        counts = png_pixels(sys.argv[2])
        jit = counts.get(bytes((0x5c, 0xb8, 0x5c)), 0)
        vmc = counts.get(bytes((0xf0, 0xa0, 0x4b)), 0)
        print(f'screenshot: {len(counts)} colours; {jit} pixels of JIT\'d Smalltalk, {vmc} of VM C code')
        if jit < 2000 or vmc < 2000:
            print('FAIL: the screenshot does not show the frames (too few pixels of their colours)'); ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
