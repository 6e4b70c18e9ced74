#!/usr/bin/env bash
# tests/vmprofd/alloc_test.sh — vmprofd --event alloc end to end: a real
# stvm samples its allocations (proto/allocabi.h), vmprofd reads them and
# writes its reports; the programs are tests/vmprofd/som/Alloc*.som.
#
#   alloc_test.sh TEST
#
# Environment (CMakeLists.txt): VMPROFD, STVM, RATIO, FAKE_SEGMENT, SOURCE_DIR.
# The accuracy tests run beside two busy loops, as the CPU ones do: the
# shares must not depend on the machine being idle (the VM samples by
# bytes, so they should not).
set -u

TEST=${1:?usage: alloc_test.sh TEST}
WORK=$(mktemp -d /tmp/vmprofd-alloc.XXXXXX)
STARTED=()
source "$(dirname "$0")/../stop_started.sh"
trap 'stop_started "${STARTED[@]}"; rm -rf "$WORK"' EXIT
SOM="$SOURCE_DIR/tests/vmprofd/som"
# 32 KiB: AllocMethods' 224 MB make ~7000 samples, enough for shares to
# within a percent (a share p of n samples has sd sqrt(p(1-p)/n), 0.5% at
# n = 7000, p = 0.75; weights that vary as the Poisson gaps do add about
# as much again), and few enough that a loaded machine's vmprofd keeps up
# with the VM's ring.
INTERVAL=32K

# what went wrong, with the reports and vmprofd's messages
fail() {
    echo "FAIL: $*"
    tail -n 40 "$WORK"/*.err "$WORK"/*.txt 2>/dev/null
    exit 1
}

skip() { echo "test skipped: $*" && exit 0; }


mode_flag() { [ "$1" = interp ] && echo --no-jit; }

# A method's name in a frame: interpreted ones carry " (interpreted)".
I='( \(interpreted\))?'

# bytes_of FILE REGEX: the bytes of the folded stacks matching REGEX.
bytes_of() {
    awk -v re="$2" '$0 ~ re { s += $NF } END { print s + 0 }' "$1"
}

# within VALUE LO HI
within() {
    awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

# The pprof profile read by the real consumer, when Go is installed.
go_share() { # FILE FUNCTION: its cum% of alloc_space
    go tool pprof -sample_index=alloc_space -top -cum "$1" 2>"$WORK/go.err" |
        awk -v f="$2" '$NF == f || $(NF) ~ f { gsub("%", "", $5); print $5; exit }'
}

# estimate_matches BASE AT_LEAST WHAT: the samples' bytes in BASE.folded
# within 10% of what the VM counted (BASE.txt), which is AT_LEAST bytes
# (WHAT the program allocates).
estimate_matches() {
    local est counted
    est=$(bytes_of "$1.folded" '.')
    counted=$(sed -n 's/.*the VM counted \([0-9,]*\) bytes while sampled.*/\1/p' "$1.txt" | tr -d ,)
    [ -n "$counted" ] || fail "the report does not say what the VM counted"
    echo "estimated $est bytes, the VM counted $counted"
    within "$est" "$(awk -v c="$counted" 'BEGIN { print 0.9 * c }')" "$(awk -v c="$counted" 'BEGIN { print 1.1 * c }')" ||
        fail "estimate $est is not within 10% of the VM's $counted"
    [ "$counted" -ge "$2" ] || fail "the VM counted only $counted bytes for $3"
}

# heavy_three_quarters FOLDED HEAVY_RE LIGHT_RE: the stacks matching
# HEAVY_RE (a method, or a class at the leaf) have 75 +- 3% of the bytes of
# those matching either.
heavy_three_quarters() {
    local heavy light share
    heavy=$(bytes_of "$1" "$2")
    light=$(bytes_of "$1" "$3")
    share=$(awk -v h="$heavy" -v l="$light" 'BEGIN { if (h + l) printf "%.2f", 100 * h / (h + l) }')
    echo "folded: heavy $heavy bytes, light $light bytes: heavy $share% ($2 against $3)"
    within "${share:-0}" 72 78 || fail "$2 has $share% of the bytes it and $3 allocate, not 75 +- 3%"
}

# profile_allocs BASE MODE PROGRAM: vmprofd --event alloc on PROGRAM's
# 1,000,000 rounds, the text report in BASE.txt, folded stacks in BASE.folded.
profile_allocs() {
    "$VMPROFD" --event alloc --alloc-interval $INTERVAL -o "$1.txt" -o "$1.folded" -- \
        "$STVM" $(mode_flag "$2") -cp "$SOM" "$3" 1000000 >"$WORK/run.out" 2>"$WORK/run.err" ||
        fail "vmprofd exited with status $?"
}

# -- Tests ----------------------------------------------------------------------------

# light and heavy allocate the same objects 1:3: 75 +- 3% of alloc_space in
# heavy, under its whole chain of callers, in every rendering.
test_methods() {
    local mode=$1
    busy_loops
    "$VMPROFD" --event alloc --alloc-interval $INTERVAL -o "$WORK/a.txt" -o "$WORK/a.pb.gz" -o "$WORK/a.folded" \
        -o "$WORK/a.svg" -- "$STVM" $(mode_flag "$mode") -cp "$SOM" AllocMethods 1000000 \
        >"$WORK/run.out" 2>"$WORK/run.err" || fail "vmprofd exited with status $?"
    local all share
    heavy_three_quarters "$WORK/a.folded" ";AllocMethods>>heavy$I;" ";AllocMethods>>light$I;"
    # the whole chain above heavy: every stack through it passes run:, outer: and middle
    all=$(bytes_of "$WORK/a.folded" ";AllocMethods>>heavy$I;")
    local chained
    chained=$(bytes_of "$WORK/a.folded" "AllocMethods>>run:$I;.*AllocMethods>>outer:$I;.*AllocMethods>>middle$I;AllocMethods>>heavy$I;.*;\\[Array\\] [0-9]+\$")
    [ "$chained" = "$all" ] || fail "only $chained of heavy's $all bytes have run: > outer: > middle > heavy > ... [Array]"
    # the text report: heavy's row (its share of its region) and a range under it
    grep -qE "^7[2-8]\.[0-9]+%    \(.*\)	AllocMethods>>heavy$I	\(" "$WORK/a.txt" ||
        fail "the text report does not show heavy at 75 +- 3%: $(grep 'AllocMethods>>' "$WORK/a.txt")"
    grep -E -A1 "	AllocMethods>>heavy$I	" "$WORK/a.txt" | grep -qE "^	100.0%	[0-9]+->[0-9]+	" ||
        fail "no bytecode range under heavy"
    grep -q "allocations sampled every 32,768 bytes on average" "$WORK/a.txt" || fail "no interval in the header"
    grep -q 'data-unit="bytes"' "$WORK/a.svg" || fail "the flame graph does not count bytes"
    if command -v go >/dev/null 2>&1; then
        share=$(go_share "$WORK/a.pb.gz" 'AllocMethods>>heavy')
        local lshare
        lshare=$(go_share "$WORK/a.pb.gz" 'AllocMethods>>light')
        echo "go tool pprof -sample_index=alloc_space: heavy $share%, light $lshare% (cum)"
        local hs
        hs=$(awk -v h="${share:-0}" -v l="${lshare:-0}" 'BEGIN { if (h + l) printf "%.2f", 100 * h / (h + l) }')
        within "${hs:-0}" 72 78 || fail "go tool pprof: heavy is $hs% of light + heavy, not 75 +- 3%"
        go tool pprof -sample_index=alloc_objects -top "$WORK/a.pb.gz" >/dev/null 2>&1 ||
            fail "go tool pprof -sample_index=alloc_objects failed"
    else
        echo "skipped: go not installed (go tool pprof check)"
    fi
    echo "ok: $mode"
}

# one method allocates two same-sized classes 1:3: the classes table.
test_classes() {
    local mode=$1
    busy_loops
    profile_allocs "$WORK/c" "$mode" AllocClasses
    heavy_three_quarters "$WORK/c.folded" ';\[AllocPointB\] [0-9]+$' ';\[AllocPointA\] [0-9]+$'
    sed -n '/by class/,/^$/p' "$WORK/c.txt" | grep -qE "^7[2-8]\.[0-9]+%    \(.*\)	AllocPointB	" ||
        fail "the classes table does not show AllocPointB at 75 +- 3%"
    sed -n '/by class/,/^$/p' "$WORK/c.txt" | grep -qE "^2[2-8]\.[0-9]+%    \(.*\)	AllocPointA	" ||
        fail "the classes table does not show AllocPointA at 25 +- 3%"
    grep -qE "	AllocClasses>>make$I	" "$WORK/c.txt" || fail "make is not among the allocating methods"
    echo "ok: $mode"
}

# light: and heavy: take same-sized substrings 1:3; with the JIT
# String>>primSubstringFrom:to:'s machine code allocates them, and must
# leave every sampled one to C: heavy 75 +- 3% of the bytes, the samples
# within 10% of the VM's own counter.
test_strings() {
    local mode=$1
    busy_loops
    profile_allocs "$WORK/s" "$mode" AllocStrings
    heavy_three_quarters "$WORK/s.folded" ";AllocStrings>>heavy:$I;.*\\[String\\] [0-9]+\$" \
        ";AllocStrings>>light:$I;.*\\[String\\] [0-9]+\$"
    # 4,000,000 strings of 40 bytes (48 with the header)
    estimate_matches "$WORK/s" 192000000 "4,000,000 substrings"
    echo "ok: $mode"
}

# the samples' bytes add up to within 10% of the VM's own counter
test_total() {
    local mode=$1
    busy_loops
    profile_allocs "$WORK/t" "$mode" AllocMethods
    # and the VM counted what AllocMethods allocates: 4,000,000 Arrays of 6
    # slots (at least 56 bytes each)
    estimate_matches "$WORK/t" 224000000 "4,000,000 arrays"
    grep -q "samples lost" "$WORK/t.txt" && fail "samples were lost: $(grep 'lost' "$WORK/t.txt")"
    echo "ok: $mode"
}

# --live: AllocKeep keeps one in four of the objects it allocates.
test_live() {
    "$VMPROFD" --event alloc --live --alloc-interval $INTERVAL -o "$WORK/l.txt" -o "$WORK/l.pb.gz" -- \
        "$STVM" -cp "$SOM" AllocKeep 1000000 >"$WORK/run.out" 2>"$WORK/run.err" || fail "vmprofd exited with status $?"
    grep -q "followed none of its" "$WORK/l.txt" && skip "this stvm does not follow sampled objects yet"
    local line pct
    line=$(grep "^live at the end (after a full GC)" "$WORK/l.txt") || fail "no live figures"
    pct=$(echo "$line" | sed -n 's/.*objects (estimated), *\([0-9.]*\)% of the bytes allocated.*/\1/p')
    echo "$line"
    within "${pct:-0}" 20 30 || fail "$pct% of the bytes allocated are live, not about 25%"
    if command -v go >/dev/null 2>&1; then
        go tool pprof -sample_index=inuse_space -top "$WORK/l.pb.gz" >"$WORK/go.out" 2>&1 ||
            fail "go tool pprof -sample_index=inuse_space failed: $(cat "$WORK/go.out")"
        grep -q "AllocKeep>>run:" "$WORK/go.out" || fail "inuse_space does not show AllocKeep>>run:"
    fi
    echo "ok"
}

# attach mode: a running VM is asked, sampled for a second, cancelled, and
# with --live asked what is alive.
test_attach() {
    "$STVM" -cp "$SOM" AllocKeep 1000000 wait >"$WORK/keep.out" 2>&1 &
    local keep=$!
    STARTED+=("$keep")
    "$STVM" -cp "$SOM" AllocMethods 1000000 forever >"$WORK/vm.out" 2>&1 &
    local vm=$!
    STARTED+=("$vm")
    sleep 0.5
    "$VMPROFD" --event alloc --alloc-interval $INTERVAL --pid "$vm" -s 1 -o "$WORK/a.txt" -o "$WORK/a.folded" \
        >"$WORK/run.out" 2>"$WORK/run.err" || fail "vmprofd exited with status $?"
    heavy_three_quarters "$WORK/a.folded" ";AllocMethods>>heavy$I;" ";AllocMethods>>light$I;"
    kill -0 "$vm" 2>/dev/null || fail "the VM did not survive being sampled"
    # cancelled: the VM stopped sampling (its log says so: no new samples)
    sleep 0.2
    "$VMPROFD" --event alloc --alloc-interval $INTERVAL --pid "$vm" -s 0.3 -o "$WORK/b.txt" \
        >"$WORK/run2.out" 2>"$WORK/run2.err" || fail "a second vmprofd exited with status $?"
    grep -q "AllocMethods>>heavy" "$WORK/b.txt" || fail "a second profiler got nothing"
    # --live on a VM that waits, the objects kept in a global
    for _ in $(seq 50); do grep -q kept "$WORK/keep.out" && break; sleep 0.1; done
    "$VMPROFD" --event alloc --live --alloc-interval $INTERVAL --pid "$keep" -s 0.5 -o "$WORK/k.txt" \
        >"$WORK/run3.out" 2>"$WORK/run3.err" || fail "vmprofd --live exited with status $?"
    grep -q "^live at the end (after a full GC)" "$WORK/k.txt" || fail "--live in attach mode: no answer from the VM"
    echo "ok: $(grep '^live at the end' "$WORK/k.txt")"
    # a VM that does not allocate never looks at the request: said, not guessed
    kill -STOP "$keep"
    "$VMPROFD" --event alloc --live --pid "$keep" -s 0.2 -o "$WORK/s.txt" >"$WORK/run4.out" 2>"$WORK/run4.err" ||
        fail "vmprofd --live on a stopped VM exited with status $?"
    kill -CONT "$keep"
    grep -q "never started sampling" "$WORK/s.txt" || fail "a stopped VM: no warning that it never sampled"
    grep -q "did not answer within 5 s" "$WORK/s.txt" || fail "a stopped VM: no warning that it did not answer"
    echo "ok"
}

# what cannot be sampled is refused, exit 1, with what to do
test_refusals() {
    local out
    sleep 5 &
    local sl=$!
    STARTED+=("$sl")
    "$VMPROFD" --event alloc --pid "$sl" -s 0.2 >"$WORK/r.out" 2>"$WORK/r.err"
    [ $? -eq 1 ] || fail "--pid of sleep: not exit status 1"
    grep -q "is not an stvm" "$WORK/r.err" || fail "--pid of sleep: $(cat "$WORK/r.err")"
    "$VMPROFD" --event alloc -- sleep 0.2 >"$WORK/r.out" 2>"$WORK/r.err"
    [ $? -eq 1 ] || fail "-- sleep: not exit status 1"
    grep -q "without publishing an stvm export segment" "$WORK/r.err" || fail "-- sleep: $(cat "$WORK/r.err")"
    "$VMPROFD" --event alloc -- "$STVM" --no-export -cp "$SOM" AllocMethods 100 >"$WORK/r.out" 2>"$WORK/r.err"
    [ $? -eq 1 ] || fail "--no-export: not exit status 1"
    grep -q "run it without --no-export" "$WORK/r.err" || fail "--no-export: $(cat "$WORK/r.err")"
    "$STVM" --no-alloc-log -cp "$SOM" AllocMethods 1000000 forever >/dev/null 2>&1 &
    local off=$!
    STARTED+=("$off")
    sleep 0.3
    "$VMPROFD" --event alloc --pid "$off" -s 0.2 >"$WORK/r.out" 2>"$WORK/r.err"
    [ $? -eq 1 ] || fail "--no-alloc-log: not exit status 1"
    grep -q "allocation log turned off" "$WORK/r.err" || fail "--no-alloc-log: $(cat "$WORK/r.err")"
    # an older stvm: a version-1 segment under a live process
    "$RATIO" 10 >/dev/null 2>&1 &
    local old=$!
    STARTED+=("$old")
    "$FAKE_SEGMENT" "$old" v1 || fail "fake_segment v1 failed"
    "$VMPROFD" --event alloc --pid "$old" -s 0.2 >"$WORK/r.out" 2>"$WORK/r.err"
    local rc=$?
    rm -f "/dev/shm/stvm-$old"
    [ $rc -eq 1 ] || fail "a version-1 segment: not exit status 1"
    grep -q "older than export version 5" "$WORK/r.err" || fail "a version-1 segment: $(cat "$WORK/r.err")"
    echo "ok"
}

case $TEST in
methods_jit) test_methods jit ;;
methods_interp) test_methods interp ;;
classes_jit) test_classes jit ;;
classes_interp) test_classes interp ;;
total_jit) test_total jit ;;
total_interp) test_total interp ;;
strings_jit) test_strings jit ;;
strings_interp) test_strings interp ;;
live) test_live ;;
attach) test_attach ;;
refusals) test_refusals ;;
*) echo "unknown test $TEST"; exit 2 ;;
esac
