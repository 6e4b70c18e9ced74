#!/usr/bin/env bash
# tests/probes/probes_test.sh — stvm's USDT probes seen by real tracers.
#
#   probes_test.sh TEST
#
#   raised-nojit, raised-jit   ProbeWorkload under usdt_trace with every semaphore raised
#                              (the guarded code runs as under a tracer): the same output as
#                              an untraced run, and exact counts — 1000 ProbeThings
#                              allocated, 1000 activations of ProbeThing>>touch: entered and
#                              returned (compiled after the second in the JIT run), as many
#                              returns as entries overall, scavenges, one rt__start/rt__end
#   attach-nojit, attach-jit   the same, but the semaphores are raised only when the
#                              workload's full GC fires gc__start, halfway through its loop
#                              (as a tracer attaching to a running VM): under the JIT the
#                              loop's block is machine code by then; exactly the second half
#                              of the ProbeThings and touch: activations are seen
#   raised-compaction          DeltaBlue in the smallest code zone with every semaphore
#                              raised and --jit-verify: methods are compiled (the interpreter
#                              runs them while the method probes are traced), the zone is
#                              compacted, the output is unchanged, and jit__compile and
#                              code__compact fire
#   bpftrace-nojit, -jit       the counts of the raised-* tests through bpftrace
#   booleans-nojit, -jit       ProbeBooleans: && of two Booleans, which machine code (and an
#                              inlined body of both:and:) answers in line, is a send under a
#                              tracer: N method__entry for &&, N - N/2 when it attaches midway
#   recipes                    every tools/bpftrace script on ProbeWorkload
#
# Environment (set by CMakeLists.txt): STVM, USDT_TRACE, SOURCE_DIR.
# Exit 0 = pass, 1 = fail, 77 = cannot run here (the reason is printed).

set -u

TEST=${1:?usage: probes_test.sh TEST}
WORK=$(mktemp -d /tmp/probes-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

N=1000 # ProbeThings the workload makes
CP="$SOURCE_DIR/tests/probes"
# 64 KiB of eden: the workload's garbage fills it dozens of times
WORKLOAD=(--eden-size 64K -cp "$CP" ProbeWorkload "$N")
EXPECTED_SUM=501500 # sum of i + 1 for i = 1..1000

fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*; do
        [ -s "$f" ] && { echo "--- $f"; head -40 "$f"; }
    done
    exit 1
}

skip() {
    echo "test skipped: $*"
    exit 77
}

# count FILE SPEC: the count usdt_trace reported for SPEC.
count() {
    awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print "missing" }' "$1"
}

# expect_count FILE SPEC WANT
expect_count() {
    local got
    got=$(count "$1" "$2")
    [ "$got" = "$3" ] || fail "$2 counted $got times, expected $3"
}

# expect_at_least FILE SPEC MIN
expect_at_least() {
    local got
    got=$(count "$1" "$2")
    [[ $got =~ ^[0-9]+$ ]] && ((got >= $3)) || fail "$2 counted $got times, expected at least $3"
}

# -- Semaphores raised by usdt_trace ---------------------------------------------------

raised() {
    local mode=$1
    "$STVM" "$mode" "${WORKLOAD[@]}" >"$WORK/plain.out" 2>"$WORK/plain.err" || fail "untraced run failed"
    grep -qx "$EXPECTED_SUM" "$WORK/plain.out" || fail "untraced run printed no $EXPECTED_SUM"
    "$USDT_TRACE" --raise all --report "$WORK/counts" \
        --count object__alloc/0=ProbeThing \
        --count method__entry/1=touch: --count method__return/1=touch: \
        --count method__entry/0=ProbeThing \
        --count method__entry --count method__return \
        --count egc__start --count egc__finish \
        --count rt__init --count rt__start --count rt__end --count thread__create --count process__transfer \
        -- "$STVM" "$mode" "${WORKLOAD[@]}" >"$WORK/traced.out" 2>"$WORK/traced.err"
    local rc=$?
    ((rc == 125)) && fail "usdt_trace could not trace: $(tail -1 "$WORK/traced.err")"
    ((rc == 0)) || fail "the traced run exited with status $rc"
    cmp -s "$WORK/plain.out" "$WORK/traced.out" || fail "the output differs with the semaphores raised"
    expect_count "$WORK/counts" object__alloc/0=ProbeThing "$N"
    expect_count "$WORK/counts" method__entry/1=touch: "$N"
    expect_count "$WORK/counts" method__return/1=touch: "$N"
    expect_count "$WORK/counts" method__entry/0=ProbeThing $((2 * N)) # set: and touch:
    local entries returns
    entries=$(count "$WORK/counts" method__entry)
    returns=$(count "$WORK/counts" method__return)
    [ "$entries" = "$returns" ] || fail "$entries method entries but $returns returns"
    expect_at_least "$WORK/counts" egc__start 10
    [ "$(count "$WORK/counts" egc__start)" = "$(count "$WORK/counts" egc__finish)" ] ||
        fail "egc__start and egc__finish counts differ"
    for p in rt__init rt__start rt__end thread__create; do expect_count "$WORK/counts" $p 1; done
    expect_count "$WORK/counts" process__transfer 2
    echo "ok: $mode, semaphores raised: output unchanged; $(tr '\n' ';' <"$WORK/counts")"
}

attach() {
    local mode=$1 half=$((N / 2))
    "$STVM" "$mode" "${WORKLOAD[@]}" >"$WORK/plain.out" 2>"$WORK/plain.err" || fail "untraced run failed"
    "$USDT_TRACE" --raise all --raise-on gc__start --report "$WORK/counts" \
        --count object__alloc/0=ProbeThing \
        --count method__entry/1=touch: --count method__return/1=touch: --count gc__start \
        -- "$STVM" "$mode" "${WORKLOAD[@]}" >"$WORK/traced.out" 2>"$WORK/traced.err"
    local rc=$?
    ((rc == 125)) && fail "usdt_trace could not trace: $(tail -1 "$WORK/traced.err")"
    ((rc == 0)) || fail "the traced run exited with status $rc"
    cmp -s "$WORK/plain.out" "$WORK/traced.out" || fail "the output differs when a tracer attaches midway"
    expect_count "$WORK/counts" object__alloc/0=ProbeThing $((N - half))
    expect_count "$WORK/counts" method__entry/1=touch: $((N - half))
    expect_count "$WORK/counts" method__return/1=touch: $((N - half))
    expect_at_least "$WORK/counts" gc__start 1
    echo "ok: $mode, attached at the full GC: the second half seen; $(tr '\n' ';' <"$WORK/counts")"
}

# Only object__alloc raised: method probes stay down, so the loop runs as
# machine code, whose inline Double boxing must step aside for the probe.
alloc_jit() {
    "$STVM" --jit "${WORKLOAD[@]}" >"$WORK/plain.out" 2>"$WORK/plain.err" || fail "untraced run failed"
    "$USDT_TRACE" --raise object__alloc --report "$WORK/counts" \
        --count object__alloc/0=Double --count object__alloc/0=ProbeThing \
        -- "$STVM" --jit "${WORKLOAD[@]}" >"$WORK/traced.out" 2>"$WORK/traced.err"
    local rc=$?
    ((rc == 125)) && fail "usdt_trace could not trace: $(tail -1 "$WORK/traced.err")"
    ((rc == 0)) || fail "the traced run exited with status $rc"
    cmp -s "$WORK/plain.out" "$WORK/traced.out" || fail "the output differs with object__alloc raised"
    expect_count "$WORK/counts" object__alloc/0=ProbeThing "$N"
    expect_at_least "$WORK/counts" object__alloc/0=Double "$N"
    echo "ok: --jit, object__alloc alone: every ProbeThing and Double seen; $(tr '\n' ';' <"$WORK/counts")"
}

# Boolean sends that machine code answers in line (baseline code, and an
# inlined body of both:and:) are sends under a tracer: every && fires
# method__entry, from the start or from an attach at the full GC.
booleans() {
    local mode=$1 n=1000
    if [ "$mode" = --jit ]; then # the case this is for: both:and: inlined
        "$STVM" --jit --code-zone-stats -cp "$CP" ProbeBooleans "$n" >"$WORK/plain.out" 2>"$WORK/stats.err" ||
            fail "untraced run failed"
        grep -q "sends inlined [1-9]" "$WORK/stats.err" || fail "both:and: was not inlined: $(grep inlined "$WORK/stats.err")"
    fi
    "$USDT_TRACE" --raise all --report "$WORK/counts" --count "method__entry/1=&&" \
        --count method__entry/1=both:and: -- "$STVM" "$mode" -cp "$CP" ProbeBooleans "$n" >"$WORK/traced.out" \
        2>"$WORK/traced.err"
    local rc=$?
    ((rc == 125)) && fail "usdt_trace could not trace: $(tail -1 "$WORK/traced.err")"
    ((rc == 0)) || fail "the traced run exited with status $rc"
    grep -qx "$n" "$WORK/traced.out" || fail "the traced run did not count $n"
    expect_count "$WORK/counts" "method__entry/1=&&" "$n"
    expect_count "$WORK/counts" method__entry/1=both:and: "$n"
    "$USDT_TRACE" --raise all --raise-on gc__start --report "$WORK/counts2" --count "method__entry/1=&&" \
        -- "$STVM" "$mode" -cp "$CP" ProbeBooleans "$n" >"$WORK/attached.out" 2>"$WORK/attached.err"
    rc=$?
    ((rc == 0)) || fail "the run traced from the full GC exited with status $rc"
    grep -qx "$n" "$WORK/attached.out" || fail "the run traced from the full GC did not count $n"
    expect_count "$WORK/counts2" "method__entry/1=&&" $((n - n / 2))
    echo "ok: $mode: every && a send under the tracer ($n), and the last $((n - n / 2)) after an attach"
}

raised_compaction() {
    local args=(--jit --jit-threshold 1 --jit-verify --code-size 64K
        -cp "$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/smalltalk/bench" BenchRunner DeltaBlue 1)
    "$STVM" "${args[@]}" >"$WORK/plain.out" 2>"$WORK/plain.err" || fail "untraced DeltaBlue failed"
    "$USDT_TRACE" --raise all --report "$WORK/counts" --count jit__compile --count code__compact \
        -- "$STVM" "${args[@]}" >"$WORK/traced.out" 2>"$WORK/traced.err"
    local rc=$?
    ((rc == 125)) && fail "usdt_trace could not trace: $(tail -1 "$WORK/traced.err")"
    ((rc == 0)) || fail "the traced run exited with status $rc"
    # the runtimes differ from run to run; everything else must not
    sed -E 's/[0-9]+us/Nus/g' "$WORK/plain.out" >"$WORK/plain.norm"
    sed -E 's/[0-9]+us/Nus/g' "$WORK/traced.out" >"$WORK/traced.norm"
    cmp -s "$WORK/plain.norm" "$WORK/traced.norm" || fail "DeltaBlue's output differs with the semaphores raised"
    grep -q "DeltaBlue: 1 iterations" "$WORK/traced.out" || fail "DeltaBlue did not finish"
    expect_at_least "$WORK/counts" jit__compile 100
    expect_at_least "$WORK/counts" code__compact 1
    echo "ok: compacting zone, method probes traced: $(tr '\n' ';' <"$WORK/counts")"
}

# -- bpftrace ------------------------------------------------------------------------------

# Skips unless bpftrace is installed and may load BPF programs and uprobes here.
need_bpftrace() {
    command -v bpftrace >/dev/null || skip "bpftrace is not installed (Debian: apt-get install bpftrace)"
    printf 'usdt:%s:stvm:rt__init { printf("attached\\n"); }\n' "$STVM" >"$WORK/check.bt"
    timeout 60 bpftrace -q -o "$WORK/check.out" "$WORK/check.bt" -c "$STVM -cp $CP ProbeWorkload 1" \
        >/dev/null 2>"$WORK/check.err"
    if ! grep -q attached "$WORK/check.out" 2>/dev/null; then
        # bpftrace says why: no CAP_BPF/CAP_PERFMON, no uprobe PMU, seccomp, lockdown…
        skip "bpftrace cannot trace here: $(grep -v RLIMIT_MEMLOCK "$WORK/check.err" | head -2 | tr '\n' ' ')"
    fi
}

# bpf_run OUT SCRIPT [ARGS...] -- stvm-args: bpftrace's own output in OUT.
bpf_run() {
    local out=$1 script=$2
    shift 2
    local params=()
    while (($# > 0)) && [ "$1" != -- ]; do
        params+=("$1")
        shift
    done
    shift
    local cmd="$STVM"
    local a
    for a in "$@"; do cmd+=" $(printf '%q' "$a")"; done
    timeout 100 bpftrace -q --no-warnings -o "$out" "$script" "$STVM" "${params[@]}" -c "$cmd" \
        >"$out.stdout" 2>"$out.err" || fail "bpftrace $(basename "$script") failed"
}

# expect_line FILE REGEX WHAT
expect_line() {
    grep -Eq "$2" "$1" || fail "$(basename "$1"): no line matching '$2' ($3)"
}

bpftrace_counts() {
    local mode=$1
    need_bpftrace
    cat >"$WORK/counts.bt" <<'EOF'
usdt:$1:stvm:object__alloc /str(arg0) == "ProbeThing"/ { @allocs = count(); @alloc_bytes = sum(arg1); }
usdt:$1:stvm:method__entry /str(arg1) == "touch:"/ { @touch_entries[str(arg0), arg2] = count(); }
usdt:$1:stvm:method__return /str(arg1) == "touch:"/ { @touch_returns = count(); }
usdt:$1:stvm:method__entry { @entries = count(); }
usdt:$1:stvm:method__return { @returns = count(); }
usdt:$1:stvm:egc__start { @scavenges = count(); }
usdt:$1:stvm:rt__start { @rt_start = count(); }
usdt:$1:stvm:rt__end { @rt_end = count(); @exit_status = sum(arg0); }
EOF
    bpf_run "$WORK/counts.txt" "$WORK/counts.bt" -- "$mode" "${WORKLOAD[@]}"
    grep -qx "$EXPECTED_SUM" "$WORK/counts.txt.stdout" || fail "the traced program printed no $EXPECTED_SUM"
    local f="$WORK/counts.txt"
    expect_line "$f" "^@allocs: $N\$" "one object__alloc per ProbeThing"
    expect_line "$f" "^@alloc_bytes: $((16 * N))\$" "a ProbeThing is a header and one field"
    expect_line "$f" "^@touch_entries\\[ProbeThing, 0\\]: $N\$" "method__entry per touch:, class and primitive 0"
    expect_line "$f" "^@touch_returns: $N\$" "method__return per touch:"
    expect_line "$f" "^@rt_start: 1\$" "one rt__start"
    expect_line "$f" "^@rt_end: 1\$" "one rt__end"
    expect_line "$f" "^@exit_status: 0\$" "rt__end's exit status"
    local scavenges entries returns
    scavenges=$(sed -n 's/^@scavenges: //p' "$f")
    [[ $scavenges =~ ^[0-9]+$ ]] && ((scavenges >= 10)) || fail "bpftrace saw ${scavenges:-no} scavenges, expected at least 10"
    entries=$(sed -n 's/^@entries: //p' "$f")
    returns=$(sed -n 's/^@returns: //p' "$f")
    [ -n "$entries" ] && [ "$entries" = "$returns" ] || fail "bpftrace saw $entries method entries but $returns returns"
    echo "ok: bpftrace $mode: $N allocations and touch: activations, $scavenges scavenges, $entries entries = returns"
}

recipes() {
    need_bpftrace
    local dir="$SOURCE_DIR/tools/bpftrace" f
    bpf_run "$WORK/allocs" "$dir/allocs.bt" -- --no-jit "${WORKLOAD[@]}"
    f="$WORK/allocs"
    expect_line "$f" "^Number of instances created per class" "the table's heading"
    expect_line "$f" "^@instances\\[ProbeThing\\]: $N\$" "ProbeThing's instances"
    expect_line "$f" "^@bytes\\[ProbeThing\\]: $((16 * N))\$" "ProbeThing's bytes"

    bpf_run "$WORK/alloc-methods" "$dir/alloc-methods.bt" ProbeThing -- --jit "${WORKLOAD[@]}"
    expect_line "$WORK/alloc-methods" "^@methods\\[ProbeWorkload, run:\\]: $N\$" "run: makes every ProbeThing"

    bpf_run "$WORK/methods" "$dir/methods.bt" -- --jit "${WORKLOAD[@]}"
    f="$WORK/methods"
    expect_line "$f" "^@calls\\[ProbeThing, touch:\\]: $N\$" "calls of touch:"
    # which 25 methods lead the time tables depends on the machine's speed: any will do
    expect_line "$f" "^@total_ns\\[ProbeWorkload, run:\\]: [1-9][0-9]*\$" "run:'s total time, among the longest"
    expect_line "$f" "^@avg_ns\\[[A-Za-z ]+, [^]]+\\]: [1-9][0-9]*\$" "average times"
    expect_line "$f" "^@calls\\[Array class, new:\\]: [0-9]+\$" "a class-side primitive, named"
    expect_line "$f" "^\\[[0-9]+[KM]?, [0-9]+[KM]?\\) +[0-9]+ \\|@*" "a latency histogram"

    bpf_run "$WORK/gc-pauses" "$dir/gc-pauses.bt" -- "${WORKLOAD[@]}"
    f="$WORK/gc-pauses"
    expect_line "$f" "^@scavenge_pause_us: *\$" "the scavenge histogram"
    expect_line "$f" "^@scavenge_freed_bytes: count [1-9][0-9]+, average [0-9]+, total [0-9]+\$" "bytes scavenges freed"

    bpf_run "$WORK/runtime" "$dir/runtime.bt" -- "${WORKLOAD[@]}"
    f="$WORK/runtime"
    expect_line "$f" " rt__init\$" "rt__init"
    expect_line "$f" " thread__create: VM thread [1-9][0-9]*\$" "the VM thread"
    expect_line "$f" " rt__start: booted in [0-9]+ us\$" "boot time"
    expect_line "$f" "process__transfer: process 0 \\(priority 0\\) -> process 1 \\(priority 0\\)" "to the main process"
    expect_line "$f" " rt__end: exit status 0, the program ran [0-9]+ us\$" "run time"
    expect_line "$f" "^@scavenges: [1-9][0-9]*\$" "scavenges counted"

    bpf_run "$WORK/jit" "$dir/jit.bt" -- --jit "${WORKLOAD[@]}"
    expect_line "$WORK/jit" "^ +[0-9]+  0x[0-9a-f]+ +[0-9]+  ProbeThing>>touch:\$" "touch: compiled"
    echo "ok: every recipe in tools/bpftrace ran and answered"
}

case $TEST in
raised-nojit) raised --no-jit ;;
raised-jit) raised --jit ;;
attach-nojit) attach --no-jit ;;
attach-jit) attach --jit ;;
raised-compaction) raised_compaction ;;
alloc-jit) alloc_jit ;;
bpftrace-nojit) bpftrace_counts --no-jit ;;
bpftrace-jit) bpftrace_counts --jit ;;
recipes) recipes ;;
booleans-nojit) booleans --no-jit ;;
booleans-jit) booleans --jit ;;
*)
    echo "probes_test.sh: unknown test '$TEST'" >&2
    exit 2
    ;;
esac
