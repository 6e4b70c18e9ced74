#!/usr/bin/env bash
# tests/stacks/stacks_test.sh — whole stacks of a program with a known call
# structure (som/Stacks.som) under one sampler, with the JIT or without,
# with two CPU-bound processes beside it (users profile busy machines).
#
#   stacks_test.sh SAMPLER MODE      SAMPLER: perf | ptrace | invm | invmlong   MODE: jit | nojit
#   stacks_test.sh compaction SAMPLER   (CodeChurn in a 64K zone, against stvm's truth)
#   stacks_test.sh gmp-perf|gmp-ptrace|gmp-invm MODE   (GmpStacks: leaves in GMP keep whole stacks)
#   stacks_test.sh gmp-attach perf|ptrace   (the same, vmprofd --pid on a running stvm)
#
# Environment (CMakeLists.txt): VMPROFD, STVM, TRUTH_CHECK, SOURCE_DIR.
set -u
SAMPLER=${1:?usage: stacks_test.sh perf|ptrace|invm|invmlong jit|nojit}
MODE=${2:?usage: stacks_test.sh perf|ptrace|invm|invmlong jit|nojit}
WORK=$(mktemp -d /tmp/stacks-test.XXXXXX)
BUSY=() # busy loops and stvms this test started
source "$(dirname "$0")/../stop_started.sh"
cleanup() {
    stop_started "${BUSY[@]}"
    rm -rf "$WORK"
}
trap cleanup EXIT

# Rounds for ~2-4 s of the target's own CPU: enough samples that a 25% share
# is measured to +-0.5 point. Without the JIT, leaf:'s callees mostly run
# frameless (vm/interp/sendcache.h) and count as leaf: itself, so the code it calls
# gets ~5% of the samples; 6000 rounds keep that well above check_stacks.py's
# minimum of 100.
if [ "$MODE" = jit ]; then FLAGS=(); ROUNDS=9000; else FLAGS=(--no-jit); ROUNDS=6000; fi
CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/tests/stacks/som"

# two_machine_frames FOLDED: whether some stack holds two Smalltalk frames of
# their own (not "(inlined)": an inlined method's frame comes from the pc
# alone, through the code's inline tables, with no walk)
two_machine_frames() {
    awk -F';' '{ n = 0
        for (i = 1; i <= NF; i++) { f = $i; if (i == NF) sub(/ [0-9]+$/, "", f)
            if (f ~ /Stacks>>/ && f !~ /\(inlined\)$/) n++ }
        if (n > 1) bad = 1 } END { exit !bad }' "$1"
}

for i in 1 2; do
    bash -c 'while :; do :; done' &
    BUSY+=($!)
    disown $!
done

case "$SAMPLER" in
flamegraph)
    # the flame graph of a perf-mode run: the SVG holds the known frames, and
    # headless Chromium renders them (its screenshot shows their colours)
    "$VMPROFD" --mode "$MODE" --quiet -o "$WORK/out.svg" -- "$STVM" -cp "$CP" Stacks 3000 >"$WORK/out" 2>"$WORK/err" ||
        { cat "$WORK/err"; echo "FAIL: vmprofd exited with $?"; exit 1; }
    browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
    shot=()
    if [ -n "$browser" ]; then
        timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$WORK/chrome" \
            --screenshot="$WORK/shot.png" --window-size=1200,700 "file://$WORK/out.svg" >"$WORK/chrome.log" 2>&1
        [ -s "$WORK/shot.png" ] || { tail -5 "$WORK/chrome.log"; echo "FAIL: Chromium wrote no screenshot"; exit 1; }
        shot=("$WORK/shot.png")
    else
        echo "note: no Chromium here (apt-get install chromium): the rendering is not checked"
    fi
    python3 "$SOURCE_DIR/tests/stacks/check_flamegraph.py" "$WORK/out.svg" "${shot[@]}"
    exit $?
    ;;
bpfrefused)
    # perf events allowed, BPF refused (an unprivileged user): the report
    # says stacks are partial and why, and shows no Smalltalk frame
    [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null || { echo "test skipped: needs root and setpriv"; exit 0; }
    [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ] || { echo "test skipped: perf events refused to users here"; exit 0; }
    chmod 777 "$WORK"
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$VMPROFD" --mode perf --quiet --folded "$WORK/out.folded" \
        -o "$WORK/report.txt" -- "$STVM" -cp "$CP" Stacks 1000 >"$WORK/out" 2>"$WORK/err" ||
        { cat "$WORK/err"; echo "FAIL: vmprofd exited with $?"; exit 1; }
    grep -q "stacks partial: the eBPF stack walker could not be loaded (.*CAP_BPF" "$WORK/report.txt" ||
        { cat "$WORK/report.txt"; echo "FAIL: no note that the eBPF walker was refused, and why"; exit 1; }
    # the sampled pc names its method exactly (and the methods inlined there);
    # its callers were not walked
    if two_machine_frames "$WORK/out.folded"; then
        echo "FAIL: a stack shows Smalltalk callers the sampler did not walk"; exit 1
    fi
    grep -q "unknown: Smalltalk callers not walked" "$WORK/out.folded" ||
        { echo "FAIL: the stacks do not say their Smalltalk callers are missing"; exit 1; }
    echo "ok: $(grep -o 'stacks partial: the eBPF[^;]*' "$WORK/report.txt" | head -1)"
    exit 0
    ;;
nofacts)
    # no walk facts (stvm --no-export publishes nothing): the report says the
    # stacks are partial and why, and no stack holds a Smalltalk frame
    "$VMPROFD" --mode "$MODE" --quiet --folded "$WORK/out.folded" -o "$WORK/report.txt" -- \
        "$STVM" --no-export -cp "$CP" Stacks 1500 >"$WORK/out" 2>"$WORK/err" ||
        { cat "$WORK/err"; echo "FAIL: vmprofd exited with $?"; exit 1; }
    grep -q "stacks partial: no sample was walked through the Smalltalk frames (no stvm export segment" "$WORK/report.txt" ||
        { grep -i stacks "$WORK/report.txt"; echo "FAIL: no note that the stacks are partial"; exit 1; }
    if two_machine_frames "$WORK/out.folded"; then
        echo "FAIL: a stack shows Smalltalk callers without walk facts"; exit 1
    fi
    echo "ok: $(grep 'stacks partial' "$WORK/report.txt")"
    exit 0
    ;;
compaction)
    # a 64K code zone compacting constantly: every machine-code frame of
    # every whole stack is judged against stvm's own record of its code
    "$VMPROFD" --mode "$MODE" --quiet -o "$WORK/report.txt" --debug-resolutions "$WORK/res.txt" -- \
        "$STVM" --code-size 64K --code-zone-stats --code-log-truth "$WORK/truth.txt" \
        -cp "$SOURCE_DIR/smalltalk/bench:$SOURCE_DIR/tests/vmprofd/som" CodeChurn 2500 >"$WORK/out" 2>"$WORK/err" ||
        { cat "$WORK/err"; echo "FAIL: vmprofd exited with $?"; exit 1; }
    if [ "$MODE" = perf ] && grep -q "stacks partial: the eBPF stack walker could not be loaded" "$WORK/report.txt"; then
        echo "test skipped: $(grep -o 'stacks partial: the eBPF[^;]*' "$WORK/report.txt" | head -1)"
        exit 0
    fi
    compactions=$(sed -n 's/^  compactions \([0-9]*\) .*/\1/p' "$WORK/err")
    [ -n "$compactions" ] && [ "$compactions" -ge 100 ] || { echo "FAIL: only '$compactions' compactions"; exit 1; }
    callers=$(awk '$3 == "m"' "$WORK/res.txt" | wc -l)
    "$TRUTH_CHECK" "$WORK/truth.txt" "$WORK/res.txt" 1000 || { echo "FAIL: a frame resolved to the wrong code"; exit 1; }
    echo "ok: $compactions compactions, $callers machine-code frames judged"
    exit 0
    ;;
invm)
    "$STVM" "${FLAGS[@]}" -cp "$CP" StacksInVM "$ROUNDS" >"$WORK/out.folded" 2>"$WORK/err" ||
        { cat "$WORK/err"; echo "FAIL: stvm exited with $?"; exit 1; }
    ;;
invmlong)
    # a profile of more samples than a fixed store of 16384 stacks held: at
    # 6000 Hz, every sample still keeps its whole stack
    rounds=$ROUNDS
    for try in 1 2 3; do
        "$STVM" "${FLAGS[@]}" -cp "$CP" StacksInVM "$rounds" 6000 >"$WORK/out.folded" 2>"$WORK/err" ||
            { cat "$WORK/err"; echo "FAIL: stvm exited with $?"; exit 1; }
        n=$(awk '{s += $NF} END {print s + 0}' "$WORK/out.folded")
        [ "$n" -gt 20000 ] && break
        echo "only $n samples (a starved run): again with twice the rounds"
        rounds=$((rounds * 2))
    done
    [ "$n" -gt 20000 ] || { echo "FAIL: only $n samples in three tries: the long profile was not tested"; exit 1; }
    if grep -q "stacks partial" "$WORK/out.folded"; then
        grep "stacks partial" "$WORK/out.folded" | head -3
        echo "FAIL: samples of a long profile lost their whole stacks"; exit 1
    fi
    echo "$n samples, all with their whole stacks"
    ;;
perf | ptrace)
    "$VMPROFD" --mode "$SAMPLER" --quiet --callers --folded "$WORK/out.folded" -o "$WORK/report.txt" -- \
        "$STVM" "${FLAGS[@]}" -cp "$CP" Stacks "$ROUNDS" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    if [ "$SAMPLER" = perf ] && grep -q "perf_event_open.*\(refused\|not permitted\|EACCES\)" "$WORK/err"; then
        echo "test skipped: perf events refused here: $(head -1 "$WORK/err")"
        exit 0
    fi
    [ $rc -eq 0 ] || { cat "$WORK/err"; echo "FAIL: vmprofd exited with $rc"; exit 1; }
    # a few samples may miss the walker (the kernel runs no BPF program
    # nested in another): the report says so, and the criteria below count them
    grep "stacks partial" "$WORK/report.txt"
    if grep -q "stacks partial: no sample\|could not be loaded" "$WORK/report.txt"; then
        echo "FAIL: no whole stacks at all"
        exit 1
    fi
    ;;
gmp-perf | gmp-ptrace | gmp-invm)
    # GmpStacks.som: a third of the time printing numbers through GMP,
    # whose assembly keeps no frame pointer; the VM's anchors keep the
    # Smalltalk stack of every sample in it whole (check_gmp_stacks.py)
    if [ "$MODE" = jit ]; then rounds=1200000; else rounds=700000; fi
    if [ "$SAMPLER" = gmp-invm ]; then
        "$STVM" "${FLAGS[@]}" -cp "$CP" GmpStacks "$rounds" invm >"$WORK/out.folded" 2>"$WORK/err" ||
            { cat "$WORK/err"; echo "FAIL: stvm exited with $?"; exit 1; }
        python3 "$SOURCE_DIR/tests/stacks/check_gmp_stacks.py" "$WORK/out.folded"
        exit $?
    fi
    "$VMPROFD" --mode "${SAMPLER#gmp-}" --quiet --folded "$WORK/out.folded" -o "$WORK/report.txt" -- \
        "$STVM" "${FLAGS[@]}" -cp "$CP" GmpStacks "$rounds" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    if [ "$SAMPLER" = gmp-perf ] && grep -q "perf_event_open.*\(refused\|not permitted\|EACCES\)" "$WORK/err"; then
        echo "test skipped: perf events refused here: $(head -1 "$WORK/err")"
        exit 0
    fi
    [ $rc -eq 0 ] || { cat "$WORK/err"; echo "FAIL: vmprofd exited with $rc"; exit 1; }
    grep "stacks partial\|before the VM's export" "$WORK/report.txt"
    if grep -q "could not be loaded" "$WORK/report.txt"; then
        echo "test skipped: $(grep -o 'stacks partial: the eBPF[^;]*' "$WORK/report.txt" | head -1)"
        exit 0
    fi
    python3 "$SOURCE_DIR/tests/stacks/check_gmp_stacks.py" "$WORK/out.folded" "$WORK/report.txt" ||
        { echo "the report's notes:"; sed -n '/^sampled with /,$p' "$WORK/report.txt"; exit 1; }
    exit 0
    ;;
gmp-attach)
    # vmprofd --pid on a running stvm (MODE is the sampler here): whole
    # stacks from the first sample, and no "stacks partial" beyond the target
    "$STVM" -cp "$CP" GmpStacks 100000000 >"$WORK/out" 2>"$WORK/err" &
    vm=$!
    BUSY+=("$vm")
    for i in $(seq 100); do [ -e "/dev/shm/stvm-$vm" ] && break; sleep 0.05; done
    [ -e "/dev/shm/stvm-$vm" ] || { cat "$WORK/err"; echo "FAIL: stvm $vm made no export segment"; exit 1; }
    sleep 0.3 # the program's loop, in machine code
    # 4 s: beside the busy loops, ~800 samples (0.5% is 4 of them); the
    # first 50 ms lost their stacks before the fix
    "$VMPROFD" --mode "$MODE" --pid "$vm" --seconds 4 --quiet --folded "$WORK/out.folded" -o "$WORK/report.txt" \
        2>"$WORK/verr"
    rc=$?
    if [ "$MODE" = perf ] && grep -q "perf_event_open.*\(refused\|not permitted\|EACCES\)" "$WORK/verr"; then
        echo "test skipped: perf events refused here: $(head -1 "$WORK/verr")"
        exit 0
    fi
    [ $rc -eq 0 ] || { cat "$WORK/verr"; echo "FAIL: vmprofd exited with $rc"; exit 1; }
    kill -0 "$vm" 2>/dev/null || { cat "$WORK/err"; echo "FAIL: stvm did not run through the profile"; exit 1; }
    grep "stacks partial" "$WORK/report.txt"
    python3 "$SOURCE_DIR/tests/stacks/check_gmp_stacks.py" --min-samples 400 "$WORK/out.folded" "$WORK/report.txt" ||
        { echo "the report's notes:"; sed -n '/^sampled with /,$p' "$WORK/report.txt"; exit 1; }
    exit 0
    ;;
*) echo "unknown sampler $SAMPLER"; exit 2 ;;
esac
python3 "$SOURCE_DIR/tests/stacks/check_stacks.py" "$WORK/out.folded" || exit 1
if [ -f "$WORK/report.txt" ]; then
    # the text report's callers section tells the same 1:3 split, within 3
    # points (as check_stacks.py) or 3.5 standard deviations of a share of
    # leaf:'s own samples
    awk -F'\t' '/^\*\*Callers\*\*/ {on = 1}
        on && /^Stacks>>leaf:(_\(interpreted\)| \(interpreted\))?\t/ {in_leaf = 1; n = $2; gsub(/[^0-9]/, "", n); next}
        on && in_leaf && /^\t/ {gsub(/ /, "", $2); if ($3 ~ /middleA/) a += $2; next}
        on && in_leaf {in_leaf = 0}
        END {tol = 3.5 * 100 * sqrt(0.25 * 0.75 / (n > 0 ? n : 1)); if (tol < 3) tol = 3
             printf "callers section: middleA %s%% of leaf: (%d samples; 25 +- %.1f)\n", a, n, tol
             exit !(a >= 25 - tol && a <= 25 + tol)}' "$WORK/report.txt" ||
        { sed -n '/Callers/,/Memory/p' "$WORK/report.txt"; echo "FAIL: --callers does not show the 1:3 split"; exit 1; }
fi
