#!/bin/bash
# truth_check.c judging inlined frames (issue 26) on a truth file and
# resolutions written by hand: the "i" lines vmprofd writes for the
# inlined methods of a piece (report/resolve.h) against the truth's R
# lines (profiler/codetruth.h). The end-to-end runs use it on a real JIT's
# inlining; here it must accept right answers and refuse each kind of
# wrong one, or those runs would prove nothing.
set -u
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/truth" <<'T'
L 100 0 7f0000101000 256 1 Foo>>outer
R 40 50 Bar>>inner
R 50 58 Baz>>leaf
R 58 60 Bar>>inner
L 100 1 600000 12 6 Foo>>outer
M 200 7f0000101000 7f0000105000 256
T
cat >"$WORK/right" <<'T'
150 7 m 0x7f0000101052 found 0x7f0000101000 2 2 Foo>>outer
150 7 i 0x7f0000101052 found 0x7f0000101000 1 1 Baz>>leaf (inlined into Foo>>outer)
150 7 i 0x7f0000101052 found 0x7f0000101000 3 3 Bar>>inner (inlined into Foo>>outer)
160 7 m 0x7f0000101034 found 0x7f0000101000 0 2 Foo>>outer
250 7 m 0x7f0000105044 found 0x7f0000105000 2 2 Foo>>outer
250 7 i 0x7f0000105044 found 0x7f0000105000 1 3 Bar>>inner (inlined into Foo>>outer)
T
"$TRUTH_CHECK" "$WORK/truth" "$WORK/right" 3 >"$WORK/out" || { cat "$WORK/out"; echo "FAIL: right answers refused"; exit 1; }
grep -q "3 inlined ranges; 2 samples in them named their innermost method right" "$WORK/out" ||
    { cat "$WORK/out"; echo "FAIL: the inlined frames were not judged"; exit 1; }
# one wrong answer of each kind: no "i" line where the truth has inlined
# code, one where it has none, the wrong method (in a moved piece)
cat >"$WORK/wrong" <<'T'
150 7 m 0x7f0000101052 found 0x7f0000101000 2 2 Foo>>outer
160 7 m 0x7f0000101034 found 0x7f0000101000 0 2 Foo>>outer
160 7 i 0x7f0000101034 found 0x7f0000101000 0 2 Bar>>inner (inlined into Foo>>outer)
250 7 m 0x7f0000105044 found 0x7f0000105000 2 2 Foo>>outer
250 7 i 0x7f0000105044 found 0x7f0000105000 1 3 Baz>>leaf (inlined into Foo>>outer)
T
if "$TRUTH_CHECK" "$WORK/truth" "$WORK/wrong" 1 >"$WORK/out"; then
    cat "$WORK/out"; echo "FAIL: wrong inlined frames accepted"; exit 1
fi
for want in "no inlined frame where the truth has Baz>>leaf" \
    "vmprofd says Bar>>inner (inlined into Foo>>outer), truth says no inlined method" \
    "vmprofd says Baz>>leaf (inlined into Foo>>outer), truth says Bar>>inner (inlined into Foo>>outer)"; do
    grep -qF "$want" "$WORK/out" || { cat "$WORK/out"; echo "FAIL: not said: $want"; exit 1; }
done
echo "ok: right inlined frames accepted, three kinds of wrong ones refused"
