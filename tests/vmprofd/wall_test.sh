#!/usr/bin/env bash
# tests/vmprofd/wall_test.sh — vmprofd --event wall end to end: every
# thread sampled at the wall-clock rate, running or not, off-CPU samples
# ending in "[off-CPU: SYSCALL]", and the target's behaviour unchanged.
#
#   wall_test.sh half|pipe|stvm|perf_refused
#
#   half          wall_target.c alternates 20 ms busy and 20 ms asleep: about
#                 half its samples off-CPU, in clock_nanosleep, under nap()
#   pipe          a thread blocked in read() on a pipe: [off-CPU: read]
#   stvm          stvm blocked writing to a full pipe: [off-CPU: write] above
#                 its Smalltalk frames, and all its output arrives
#   perf_refused  --mode perf with --event wall: a usage error (exit 2)
#
# Environment (tests/vmprofd/CMakeLists.txt): VMPROFD, WALL_TARGET, PPROF_CHECK, STVM,
# SOURCE_DIR. The accuracy cases run beside two busy loops: runnable time
# counts as on-CPU, and the shares must hold on a busy machine.

set -u

TEST=${1:?usage: wall_test.sh TEST}
WORK=$(mktemp -d /tmp/vmprofd-wall.XXXXXX)
STARTED=()
source "$(dirname "$0")/../stop_started.sh"

cleanup() {
    stop_started "${STARTED[@]}"
    rm -rf "$WORK"
}
trap cleanup EXIT


fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*.err "$WORK"/*.out "$WORK"/*.folded; do
        [ -s "$f" ] && { echo "--- $f"; head -30 "$f" | cut -c1-400; }
    done
    exit 1
}

# count FOLDED AWK-CONDITION: the samples of the stacks ($1: the stack, $2:
# its count) that match.
count() {
    awk -v FS=' ' -v cond="$2" '
        { n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack) }
        cond == "all" || stack ~ cond { s += n }
        END { print s + 0 }' "$1"
}

# -- Cases --------------------------------------------------------------------

test_half() {
    busy_loops
    "$VMPROFD" -q --event wall --folded "$WORK/h.folded" -o "$WORK/h.txt" -- "$WALL_TARGET" half 3 \
        >"$WORK/target.out" 2>"$WORK/vmprofd.err"
    local rc=$?
    [ "$rc" -eq 0 ] || fail "vmprofd (and wall_target) exited with status $rc"
    grep -q "^wall_target: half ok" "$WORK/target.out" || fail "wall_target did not say ok: $(cat "$WORK/target.out")"
    local busy_ms sleep_ms
    busy_ms=$(sed -n 's/.*busy_ms=\([0-9]*\).*/\1/p' "$WORK/target.out")
    sleep_ms=$(sed -n 's/.*sleep_ms=\([0-9]*\).*/\1/p' "$WORK/target.out")
    local all off nanosleep nap_off busy_on
    all=$(count "$WORK/h.folded" all)
    off=$(count "$WORK/h.folded" ';\[off-CPU: [^]]*\]$')
    nanosleep=$(count "$WORK/h.folded" ';\[off-CPU: (clock_)?nanosleep\]$')
    nap_off=$(count "$WORK/h.folded" ';nap;.*\[off-CPU: (clock_)?nanosleep\]$')
    busy_on=$(count "$WORK/h.folded" ';busy(;|$)')
    # 100 Hz by default for 3 s: 300 ticks; ticks vmprofd could not take in
    # time are lost, not moved, so fewer is possible on a loaded machine,
    # but more than 450 would be a CPU-time rate (1400 Hz) or a second thread.
    [ "$all" -ge 120 ] && [ "$all" -le 450 ] || fail "$all samples in 3 s at the wall-clock default of 100 Hz"
    # nanosleep's off-CPU samples are named, and walked down through nap()
    [ "$nanosleep" -ge $((off * 9 / 10)) ] || fail "of $off off-CPU samples only $nanosleep in [off-CPU: (clock_)nanosleep]"
    [ "$nap_off" -ge $((nanosleep * 8 / 10)) ] || fail "of $nanosleep nanosleep samples only $nap_off have nap() below"
    # on-CPU: busy(), or nap() runnable after its timer fired (a loaded
    # machine makes a woken thread wait for a CPU)
    local nap_on
    nap_on=$(count "$WORK/h.folded" ';nap(;[^[]*)?$')
    [ $((busy_on + nap_on)) -ge $(((all - off) * 9 / 10)) ] && [ "$busy_on" -ge $(((all - off) / 2)) ] ||
        fail "of $((all - off)) on-CPU samples $busy_on are in busy() and $nap_on in nap()"
    # The truth is the program's own clock: the share of its wall time it
    # spent asleep, 20 ms per nap() (the rest of a nap, the wake-up delay, is
    # runnable: on-CPU); the samples must give it within 8 points, or 3.5
    # standard deviations of a draw this size.
    local share expect tol cycles
    cycles=$(sed -n 's/.*cycles=\([0-9]*\).*/\1/p' "$WORK/target.out")
    share=$(awk -v o="$off" -v a="$all" 'BEGIN { printf "%.1f", 100 * o / a }')
    expect=$(awk -v c="$cycles" -v b="$busy_ms" -v s="$sleep_ms" 'BEGIN { printf "%.1f", 100 * c * 20 / (b + s) }')
    awk -v e="$expect" 'BEGIN { exit !(e >= 40 && e <= 65) }' ||
        fail "by its own clock wall_target slept $expect% of the time: not about half"
    tol=$(awk -v n="$all" 'BEGIN { t = 3.5 * 100 * sqrt(0.25 / n); printf "%.1f", (t > 8 ? t : 8) }')
    awk -v g="$share" -v e="$expect" -v t="$tol" 'BEGIN { exit !(g >= e - t && g <= e + t) }' ||
        fail "off-CPU share $share% ($off of $all samples); the program slept $expect% (+- $tol)"
    # the text report's share line, and the header's mode
    grep -q "^off-CPU: [0-9.]* % of $all wall-clock samples (clock_nanosleep\|^off-CPU: [0-9.]* % of $all wall-clock samples (nanosleep" \
        "$WORK/h.txt" || fail "the text report lacks its off-CPU line: $(grep off-CPU "$WORK/h.txt")"
    grep -q "sampled with ptrace (wall-clock" "$WORK/h.txt" || fail "the text report does not say it is wall-clock"
    echo "ok: $share% off-CPU ($off of $all samples, $nanosleep in nanosleep), program's clock $expect%" \
        "(busy $busy_ms ms, nap $sleep_ms ms in $cycles cycles; on-CPU samples in nap $nap_on)"
}

test_pipe() {
    busy_loops
    "$VMPROFD" -q --event wall --folded "$WORK/p.folded" --pprof "$WORK/p.pb.gz" --flamegraph "$WORK/p.svg" -- \
        "$WALL_TARGET" pipe 2 \
        >"$WORK/target.out" 2>"$WORK/vmprofd.err"
    local rc=$?
    [ "$rc" -eq 3 ] || fail "vmprofd exited with status $rc, not wall_target's 3"
    [ "$(cat "$WORK/target.out")" = "wall_target: pipe ok read 6 bytes: hello" ] ||
        fail "wall_target's output changed: $(cat "$WORK/target.out")"
    local all read reader
    all=$(count "$WORK/p.folded" all)
    read=$(count "$WORK/p.folded" ';\[off-CPU: read\]$')
    reader=$(count "$WORK/p.folded" '(reader|start_thread);.*read;\[off-CPU: read\]$')
    # two threads, one blocked in read() all along: about half the samples
    [ "$all" -ge 80 ] || fail "only $all samples of two threads in 2 s at 100 Hz"
    [ "$read" -ge $((all * 35 / 100)) ] && [ "$read" -le $((all * 65 / 100)) ] ||
        fail "$read of $all samples in [off-CPU: read]; the reader thread waits the whole run"
    [ "$reader" -ge $((read * 9 / 10)) ] || fail "of $read read samples only $reader are under the reader thread"
    # the same in pprof (a function of that name, values of wall-clock time)
    # and in the flame graph
    "$PPROF_CHECK" "$WORK/p.pb.gz" "[off-CPU: read]" >"$WORK/check.out" 2>&1 || fail "pprof_check: $(cat "$WORK/check.out")"
    grep -q "^  sample_type wall/nanoseconds$" "$WORK/check.out" || fail "pprof's values are not wall/nanoseconds"
    local leaf
    leaf=$(awk '$1 == "leaf" && $2 == "[off-CPU:" && $3 == "read]" { print $4 }' "$WORK/check.out")
    [ "$leaf" = "$read" ] || fail "pprof has ${leaf:-no} samples in [off-CPU: read], the folded stacks $read"
    # (one frame per distinct stack below it: their counts add up)
    local svg
    svg=$(grep -o '\[off-CPU: read\] ([0-9]* samples' "$WORK/p.svg" | awk '{ s += substr($3, 2) } END { print s + 0 }')
    [ "${svg:-0}" = "$read" ] || fail "the flame graph's [off-CPU: read] frames hold ${svg:-no} samples, not $read"
    echo "ok: $read of $all samples in [off-CPU: read]"
}

test_stvm() {
    [ -x "$STVM" ] || fail "no stvm at $STVM"
    busy_loops
    # stvm prints 20000 lines into a pipe whose reader waits 1.5 s first:
    # once the pipe is full stvm blocks in write() under its println.
    "$VMPROFD" -q --event wall --folded "$WORK/s.folded" -o "$WORK/s.txt" -- \
        "$STVM" -cp "$SOURCE_DIR/tests/vmprofd/som" WallPrinter 20000 2>"$WORK/vmprofd.err" |
        { sleep 1.5; cat; } >"$WORK/stvm.out"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || fail "vmprofd (and stvm) exited with status $rc"
    # every line arrived, in order: no write was cut short by our stops
    local lines
    lines=$(grep -c "^wall: line [0-9]* of a printer that outruns its reader$" "$WORK/stvm.out")
    [ "$lines" -eq 20000 ] || fail "stvm printed $lines lines, not 20000"
    [ "$(sed -n '20000p' "$WORK/stvm.out")" = "wall: line 20000 of a printer that outruns its reader" ] ||
        fail "line 20000 is '$(sed -n '20000p' "$WORK/stvm.out")'"
    [ "$(tail -1 "$WORK/stvm.out")" = "wall: done" ] || fail "stvm's last line is '$(tail -1 "$WORK/stvm.out")'"
    local all write st
    all=$(count "$WORK/s.folded" all)
    write=$(count "$WORK/s.folded" ';\[off-CPU: write\]$')
    st=$(count "$WORK/s.folded" ';WallPrinter>>printLine:;.*\[off-CPU: write\]$')
    # blocked ~1.5 s of a run of ~1.6 s or more: most samples
    [ "$write" -ge 75 ] || fail "only $write samples in [off-CPU: write] ($all in all) while stvm waited 1.5 s"
    [ "$st" -ge $((write * 9 / 10)) ] ||
        fail "of $write samples in [off-CPU: write] only $st have WallPrinter>>printLine: below"
    grep -q "stacks partial" "$WORK/s.txt" && fail "stacks partial: $(grep 'stacks partial' "$WORK/s.txt")"
    echo "ok: $write of $all samples in [off-CPU: write], $st under WallPrinter>>printLine:"
}

test_perf_refused() {
    "$VMPROFD" --event wall --mode perf -- /bin/true >"$WORK/v.out" 2>"$WORK/v.err"
    local rc=$?
    [ "$rc" -eq 2 ] || fail "--event wall --mode perf exited with status $rc, not 2"
    grep -q "^vmprofd: --event wall needs the ptrace sampler" "$WORK/v.err" ||
        fail "no clear message: $(cat "$WORK/v.err")"
    [ -s "$WORK/v.out" ] && fail "/bin/true ran (or something was written): $(cat "$WORK/v.out")"
    "$VMPROFD" --help >"$WORK/h.out" 2>&1 || fail "--help exited $?"
    grep -q "wall-clock" "$WORK/h.out" && grep -q "default 100" "$WORK/h.out" ||
        fail "--help does not document --event wall's default rate"
    echo "ok"
}

case "$TEST" in
half) test_half ;;
pipe) test_pipe ;;
stvm) test_stvm ;;
perf_refused) test_perf_refused ;;
*)
    echo "unknown test $TEST" >&2
    exit 2
    ;;
esac
