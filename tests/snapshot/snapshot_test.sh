#!/usr/bin/env bash
# tests/snapshot/snapshot_test.sh — snapshots of the booted core library end
# to end (vm/boot/snapshot.h), with explicit files in a scratch directory (the
# default snapshot beside smalltalk/core is every other test's business):
#
#   - `--snapshot FILE` writes one and exits 0 quietly;
#   - booting from it gives the world a boot from source gives: World.som's
#     output (identity hashes included), in every mode (the JIT, --no-jit,
#     --gc-stress --gc-verify --small, whose full GCs slide the mapped old
#     space), and the same code events (--code-log-truth, times and
#     addresses aside);
#   - a corrupt, truncated, foreign, stale or shadowed snapshot, or no
#     snapshot at all, is refused with one warning line saying why, and the
#     program still runs from source with the same output;
#   - a snapshot that cannot be written is an error with exit 1.
#
# Environment (set by CMakeLists.txt): STVM, SOURCE_DIR.

set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/stvm-snapshot-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CORE=$SOURCE_DIR/smalltalk/core
FAILS=0

fail() {
    echo "FAIL: $*"
    FAILS=$((FAILS + 1))
}

# run NAME ARGS…: stvm ARGS, stdout in NAME.out, stderr in NAME.err, status in RC.
run() {
    local name=$1
    shift
    "$STVM" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    RC=$?
}

show() {
    local f
    for f in "$WORK/$1.out" "$WORK/$1.err"; do
        [ -s "$f" ] && { echo "--- $f"; head -20 "$f"; }
    done
}

# expect_ok NAME: exit 0, stderr empty, stdout the boot from source's.
expect_ok() {
    local name=$1
    if [ "$RC" -ne 0 ] || [ -s "$WORK/$name.err" ] || ! cmp -s "$WORK/$name.out" "$WORK/source.out"; then
        fail "$name: expected exit 0, no stderr and the output of a boot from source (exit $RC)"
        show "$name"
    fi
}

# expect_refused NAME REASON: exit 0, the output of a boot from source, and
# stderr exactly one line: the warning naming the snapshot and REASON.
expect_refused() {
    local name=$1 reason=$2
    local lines
    lines=$(wc -l <"$WORK/$name.err")
    if [ "$RC" -ne 0 ] || ! cmp -s "$WORK/$name.out" "$WORK/source.out" || [ "$lines" -ne 1 ] ||
        ! grep -q "^stvm: warning: snapshot .* not used: .*$reason.*; compiling the core library from source$" \
            "$WORK/$name.err"; then
        fail "$name: expected one warning line with '$reason', exit 0 and the boot from source's output (exit $RC)"
        show "$name"
    fi
}

# The reference: a boot from source.
run source --no-snapshot -cp "$HERE" World
[ "$RC" -eq 0 ] && [ -s "$WORK/source.out" ] || { show source; echo "FAIL: World does not run from source"; exit 1; }

# -- The round trip --------------------------------------------------------------

run write --snapshot "$WORK/core.snap"
if [ "$RC" -ne 0 ] || [ -s "$WORK/write.err" ] || [ -s "$WORK/write.out" ] || [ ! -s "$WORK/core.snap" ]; then
    fail "--snapshot FILE without a program: expected exit 0, no output and the file (exit $RC)"
    show write
fi
[ "$(head -c 8 "$WORK/core.snap")" = STVMSNAP ] || fail "the snapshot does not start with its magic"

run restored --from-snapshot "$WORK/core.snap" -cp "$HERE" World
expect_ok restored
run restored-interp --from-snapshot "$WORK/core.snap" --no-jit -cp "$HERE" World
expect_ok restored-interp
run restored-stress --from-snapshot "$WORK/core.snap" --gc-stress --gc-verify --small -cp "$HERE" World
expect_ok restored-stress

# --print-stats says where the core library came from.
run stats-restored --from-snapshot "$WORK/core.snap" --print-stats -cp "$HERE" World
grep -q '^  boot  *[0-9.]* ms (the core library from a snapshot)$' "$WORK/stats-restored.err" ||
    { fail "--print-stats after a restore does not say the boot came from a snapshot"; show stats-restored; }
run stats-source --no-snapshot --print-stats -cp "$HERE" World
grep -q '^  boot  *[0-9.]* ms (the core library compiled from source)$' "$WORK/stats-source.err" ||
    { fail "--print-stats after a boot from source does not say so"; show stats-source; }

# --snapshot with a program: writes, then runs it.
run write-and-run --snapshot "$WORK/core2.snap" -cp "$HERE" World
expect_ok write-and-run
cmp -s "$WORK/core.snap" "$WORK/core2.snap" || [ -s "$WORK/core2.snap" ] || fail "--snapshot FILE PROGRAM wrote no snapshot"

# The code events a profiler sees: the same loads, sizes and names.
run truth-source --no-snapshot --code-log-truth "$WORK/source.truth" -cp "$HERE" World
run truth-restored --from-snapshot "$WORK/core.snap" --code-log-truth "$WORK/restored.truth" -cp "$HERE" World
# L time space start size kind name…, F time start size, M time from to size
EVENTS='$1 == "L" { $4 = "" } $1 == "F" { $3 = "" } $1 == "M" { $3 = ""; $4 = "" } { $2 = ""; print }'
awk "$EVENTS" "$WORK/source.truth" >"$WORK/source.events"
awk "$EVENTS" "$WORK/restored.truth" >"$WORK/restored.events"
if ! grep -q '^L .* Integer>>' "$WORK/source.events"; then
    fail "the code-log truth of a boot from source names no Integer method"
elif ! cmp -s "$WORK/source.events" "$WORK/restored.events"; then
    fail "the code events after a restore differ from a boot from source's (times and addresses aside)"
    diff "$WORK/source.events" "$WORK/restored.events" | head -10
fi

# -- Refusals ----------------------------------------------------------------------

SIZE=$(stat -c %s "$WORK/core.snap")

run missing --from-snapshot "$WORK/nothing-here.snap" -cp "$HERE" World
expect_refused missing "cannot open it: No such file or directory"

: >"$WORK/empty.snap"
run empty --from-snapshot "$WORK/empty.snap" -cp "$HERE" World
expect_refused empty "0 bytes cannot be a snapshot"

head -c "$SIZE" /dev/urandom >"$WORK/noise.snap"
run noise --from-snapshot "$WORK/noise.snap" -cp "$HERE" World
expect_refused noise "not an stvm snapshot (bad magic)"

head -c $((SIZE / 2)) "$WORK/core.snap" >"$WORK/truncated.snap"
run truncated --from-snapshot "$WORK/truncated.snap" -cp "$HERE" World
expect_refused truncated "truncated or extended: $((SIZE / 2)) bytes where it says $SIZE"

# one byte of the heap image flipped (at 4096 + 1000: inside the image)
cp "$WORK/core.snap" "$WORK/flipped.snap"
printf '\xa5' | dd of="$WORK/flipped.snap" bs=1 seek=5096 conv=notrunc status=none
run flipped --from-snapshot "$WORK/flipped.snap" -cp "$HERE" World
expect_refused flipped "checksum mismatch"

# another build: the build id (header bytes 24..55) differs
cp "$WORK/core.snap" "$WORK/foreign.snap"
printf '\x00\x11\x22\x33' | dd of="$WORK/foreign.snap" bs=1 seek=24 conv=notrunc status=none
run foreign --from-snapshot "$WORK/foreign.snap" -cp "$HERE" World
expect_refused foreign "written by another stvm build"

# another format version (header bytes 8..11)
cp "$WORK/core.snap" "$WORK/version.snap"
printf '\x63\x00\x00\x00' | dd of="$WORK/version.snap" bs=1 seek=8 conv=notrunc status=none
run version --from-snapshot "$WORK/version.snap" -cp "$HERE" World
expect_refused version "format version 99"

# a core source edited after the snapshot: a copy of the core library first
# on the classpath is the one the snapshot records
mkdir -p "$WORK/mycore"
cp "$CORE"/*.som "$WORK/mycore/"
run mycore-write --snapshot "$WORK/mycore.snap" -cp "$WORK/mycore"
[ "$RC" -eq 0 ] || { fail "--snapshot with a copy of the core library (exit $RC)"; show mycore-write; }
run mycore-restored --from-snapshot "$WORK/mycore.snap" -cp "$WORK/mycore:$HERE" World
expect_ok mycore-restored
touch -d '2001-01-01 00:00:00' "$WORK/mycore/Integer.som"
run mycore-stale --from-snapshot "$WORK/mycore.snap" -cp "$WORK/mycore:$HERE" World
expect_refused mycore-stale "$WORK/mycore/Integer.som changed since it was written"

# a class of the snapshot shadowed by an earlier classpath directory
run shadowed --from-snapshot "$WORK/core.snap" -cp "$WORK/mycore:$HERE" World
expect_refused shadowed "the classpath has $WORK/mycore/"

# -- Writing fails cleanly ------------------------------------------------------------

: >"$WORK/a-file"
run unwritable --snapshot "$WORK/a-file/core.snap"
if [ "$RC" -ne 1 ] || ! grep -q "^stvm: cannot write the snapshot $WORK/a-file/core.snap: Not a directory$" \
    "$WORK/unwritable.err"; then
    fail "--snapshot into a path that is no directory: expected exit 1 and the reason (exit $RC)"
    show unwritable
fi
ls "$WORK"/a-file.* "$WORK"/core.snap.tmp.* >/dev/null 2>&1 && fail "a temporary snapshot file was left behind"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "snapshot: all checks passed"
