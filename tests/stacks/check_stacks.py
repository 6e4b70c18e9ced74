#!/usr/bin/env python3
"""Checks folded stacks of tests/stacks/som/Stacks.som against its known
call structure (tests/stacks/CMakeLists.txt says what each figure means).

  check_stacks.py FILE.folded

Exit 0 when every criterion holds, 1 (with the figures) when one fails."""
import re
import sys

# Code only Stacks>>leaf: calls: a sample in it must show leaf: as an ancestor.
# Without the JIT, Integer>>hashcode and Stacks>>frameless run frameless too
# (vm/interp/sendcache.h: their samples are leaf:'s own), and the hashcode site,
# seeing four classes, refills its send-site cache entry (vm_sendcache_fill).
CALLED_BY_LEAF = re.compile(r'^(Integer>>&|hashcode \(closed PIC\)|hashcode \(open PIC\)|Integer>>hashcode|'
                            r'Object>>hashcode|String>>hashcode|p_hashcode|Stacks>>frameless|cePrimitive|rt_primitive|'
                            r'vm_sendcache_fill)'
                            r'( \(interpreted\))?$')


def method(frame):
    return frame[:-len(' (interpreted)')] if frame.endswith(' (interpreted)') else frame


def main():
    stacks = []
    for line in open(sys.argv[1], encoding='utf-8', errors='replace'):
        line = line.rstrip('\n')
        if ' ' not in line:
            continue
        stack, _, count = line.rpartition(' ')
        if not count.isdigit():
            continue
        stacks.append((stack.split(';'), int(count)))
    total = sum(c for _, c in stacks)
    called = called_ok = under_leaf = whole = a = b = unknown = 0
    for frames, c in stacks:
        names = [method(f) for f in frames]
        if any(f.startswith('[unknown') for f in frames):
            unknown += c
        if 'Stacks>>leaf:' in names:
            i = names.index('Stacks>>leaf:')
            under_leaf += c
            if i >= 3 and names[i - 1] in ('Stacks>>middleA', 'Stacks>>middleB') and names[i - 2] == 'Stacks>>outer' \
                    and names[i - 3] == 'Stacks>>run:' and 'main' in names[:names.index('Stacks>>run:')]:
                whole += c
            if names[i - 1] == 'Stacks>>middleA':
                a += c
            elif names[i - 1] == 'Stacks>>middleB':
                b += c
        leafmost = [f for f in frames if CALLED_BY_LEAF.match(f)]
        if leafmost:
            called += c
            if 'Stacks>>leaf:' in names[:frames.index(leafmost[0])]:
                called_ok += c
    pct = lambda x, y: 100.0 * x / y if y else 0.0
    print(f'samples {total}; under leaf: {under_leaf}; whole chain main..run:..leaf: {pct(whole, under_leaf):.2f}%; '
          f'in code leaf: calls {called}, with leaf: as ancestor {pct(called_ok, called):.2f}%; '
          f'middleA {pct(a, a + b):.2f}% (expect 25); with [unknown] frames {pct(unknown, total):.2f}%')
    ok = True
    if under_leaf < 1000:
        print('FAIL: fewer than 1000 samples under leaf: (too few to judge)'); ok = False
    if pct(whole, under_leaf) < 95:
        print('FAIL: fewer than 95% of the samples under leaf: show the whole chain from main and run:'); ok = False
    if called < 100 or pct(called_ok, called) < 95:
        print('FAIL: fewer than 95% of the samples in code leaf: calls show leaf: as an ancestor'); ok = False
    # 3 points, or 3.5 standard deviations of a share of a + b samples
    # (weighted samples under load can be fewer than 3000); 3, as the other
    # accuracy tests allow: with two busy loops beside it, runs of the same
    # build spread from 22.8% to 26.9% (six runs; the draw alone, 0.6 points)
    tol = max(3.0, 3.5 * 100.0 * (0.25 * 0.75 / max(a + b, 1)) ** 0.5)
    if abs(pct(a, a + b) - 25.0) > tol:
        print(f'FAIL: the 1:3 split between middleA and middleB is not 25% +- {tol:.1f} points'); ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
