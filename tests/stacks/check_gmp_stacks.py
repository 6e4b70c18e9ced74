#!/usr/bin/env python3
"""Checks folded stacks of tests/stacks/som/GmpStacks.som: samples whose leaf
is GMP (assembly without frame pointers, reached from Double>>printString and
Integer>>printString through a polymorphic send site and the framed method
show:) keep their whole Smalltalk stack, and hardly any sample has an
[unknown ...] frame (tests/stacks/CMakeLists.txt).

  check_gmp_stacks.py [--min-samples N] FILE.folded [REPORT.txt]

With the text report, also checks its "stacks partial" notes against the
stacks: every stack that shows Smalltalk frames without the chain from main
says "Smalltalk callers not walked", and the notes count at least those.
Exit 0 when every criterion holds, 1 (with the figures) when one fails."""
import re
import sys

UNKNOWN_MAX_PCT = 0.5      # issue 21 item 6's target
# GMP samples without their whole stack count against the same budget, as a
# share of all samples: with 400 GMP samples (69 under ASan) a share of
# the GMP samples alone would fail on one or two samples in a boot-time
# window. 1a16503 broke 5-40% of them, 1-14% of all samples.
BROKEN_GMP_MAX_PCT = UNKNOWN_MAX_PCT
GMP_MIN = 50               # samples in GMP (measured 400-900; 69 in an ASan build, whose
                           # Smalltalk runs slower while GMP does not): the fixture exercises it
GMP_LEAF = re.compile(r'^(__gmpn_|__gmpz_|\[libgmp)')
NOT_WALKED = 'Smalltalk callers not walked'


def method(frame):
    return frame[:-len(' (interpreted)')] if frame.endswith(' (interpreted)') else frame


def whole(names):
    """main ... run: -> outer: -> show: -> Double|Integer>>printString."""
    for i in range(len(names) - 3):
        if names[i] == 'GmpStacks>>run:' and names[i + 1] == 'GmpStacks>>outer:' and \
                names[i + 2] == 'GmpStacks>>show:' and names[i + 3] in ('Double>>printString', 'Integer>>printString'):
            return 'main' in names[:i]
    return False


def note_counts(report):
    """Samples the report's notes say were not walked: (partial, early, weighted)."""
    partial = early = 0
    weighted = False
    for line in open(report, encoding='utf-8', errors='replace'):
        weighted |= line.startswith('samples weighted by CPU time')
        m = re.match(r'stacks partial: (\d+) of \d+ samples', line)
        if m:
            partial += int(m.group(1))
        m = re.match(r"(\d+) samples taken before the VM's export could be read", line)
        if m:
            early += int(m.group(1))
    return partial, early, weighted


def main():
    args = sys.argv[1:]
    min_samples = 1000
    if args[:1] == ['--min-samples']:
        min_samples = int(args[1])
        args = args[2:]
    stacks = []
    for line in open(args[0], encoding='utf-8', errors='replace'):
        stack, _, count = line.rstrip('\n').rpartition(' ')
        if stack and count.isdigit():
            stacks.append((stack.split(';'), int(count)))
    total = sum(c for _, c in stacks)
    unknown = gmp = gmp_whole = marked = unmarked_partial = 0
    examples = []
    rootless = []
    broken = []
    for frames, c in stacks:
        names = [method(f) for f in frames]
        if any(f.startswith('[unknown') for f in frames):
            unknown += c
            if len(examples) < 5:
                examples.append(';'.join(frames[-8:]) + f' {c}')
        if any(NOT_WALKED in f for f in frames):
            marked += c
        elif any('>>' in f for f in frames) and 'main' not in names:
            unmarked_partial += c  # Smalltalk frames hanging from nothing, unannounced
            if len(rootless) < 5:
                rootless.append(';'.join(frames) + f' {c}')
        if GMP_LEAF.match(frames[-1]):
            gmp += c
            if whole(names):
                gmp_whole += c
            elif len(broken) < 5:
                broken.append(';'.join(frames) + f' {c}')
    pct = lambda x, y: 100.0 * x / y if y else 0.0
    print(f'samples {total}; with an [unknown] frame {unknown} ({pct(unknown, total):.2f}%); in GMP {gmp} '
          f'({pct(gmp, total):.1f}%), whole chain main..run:..show:..printString {pct(gmp_whole, gmp):.2f}%; '
          f'marked not walked {marked}; unmarked rootless {unmarked_partial}')
    ok = True
    if total < min_samples:
        print(f'FAIL: fewer than {min_samples} samples (too few to judge)'); ok = False
    if gmp < GMP_MIN:
        print(f'FAIL: fewer than {GMP_MIN} samples in GMP: the fixture does not exercise it'); ok = False
    if pct(unknown, total) > UNKNOWN_MAX_PCT:
        print(f'FAIL: more than {UNKNOWN_MAX_PCT}% of the samples have an [unknown] frame, e.g.:')
        for e in examples:
            print('  ' + e)
        ok = False
    if pct(gmp - gmp_whole, total) > BROKEN_GMP_MAX_PCT:
        print(f'FAIL: samples in GMP without their whole Smalltalk stack are more than {BROKEN_GMP_MAX_PCT}% of all '
              f'samples, e.g.:')
        for e in broken:
            print('  ' + e)
        ok = False
    if unmarked_partial:
        print('FAIL: stacks with Smalltalk frames but no root, not marked as not walked, e.g.:')
        for e in rootless:
            print('  ' + e)
        ok = False
    if len(args) > 1:
        partial, early, weighted = note_counts(args[1])
        print(f'notes: {partial} samples partial, {early} before the export was read')
        # ptrace: the folded counts are CPU-weighted (a first sample often
        # stands for two periods), the notes count samples taken
        if (partial + early == 0 if weighted else partial + early < marked) and marked:
            print('FAIL: the notes count fewer samples than the stacks marked as not walked'); ok = False
        if pct(partial, total) > UNKNOWN_MAX_PCT:
            print(f'FAIL: the notes say more than {UNKNOWN_MAX_PCT}% of the samples were not walked'); ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
