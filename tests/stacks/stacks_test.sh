#!/usr/bin/env bash
# tests/stacks/stacks_test.sh — whole stacks of a program with a known call
# structure (som/Stacks.som) under one sampler, with the JIT or without,
# with two CPU-bound processes beside it (users profile busy machines).
#
#   stacks_test.sh SAMPLER MODE      SAMPLER: perf | ptrace | invm   MODE: jit | nojit
#
# Environment (CMakeLists.txt): VMPROFD, STVM, SOURCE_DIR.
set -u
SAMPLER=${1:?usage: stacks_test.sh perf|ptrace|invm jit|nojit}
MODE=${2:?usage: stacks_test.sh perf|ptrace|invm jit|nojit}
WORK=$(mktemp -d /tmp/stacks-test.XXXXXX)
BUSY=()
cleanup() {
    for p in "${BUSY[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# Rounds for ~4 s of the target's own CPU: enough samples that a 25% share
# is measured to +-0.5 point.
if [ "$MODE" = jit ]; then FLAGS=(); ROUNDS=9000; else FLAGS=(--no-jit); ROUNDS=3000; fi
CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/tests/stacks/som"

for i in 1 2; do
    (while :; do :; done) &
    BUSY+=($!)
done

case "$SAMPLER" in
invm)
    "$STVM" "${FLAGS[@]}" -cp "$CP" StacksInVM "$ROUNDS" >"$WORK/out.folded" 2>"$WORK/err" ||
        { cat "$WORK/err"; echo "FAIL: stvm exited with $?"; exit 1; }
    ;;
perf | ptrace)
    "$VMPROFD" --mode "$SAMPLER" --quiet --folded "$WORK/out.folded" -o "$WORK/report.txt" -- \
        "$STVM" "${FLAGS[@]}" -cp "$CP" Stacks "$ROUNDS" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    if [ "$SAMPLER" = perf ] && grep -q "perf_event_open.*\(refused\|not permitted\|EACCES\)" "$WORK/err"; then
        echo "test skipped: perf events refused here: $(head -1 "$WORK/err")"
        exit 0
    fi
    [ $rc -eq 0 ] || { cat "$WORK/err"; echo "FAIL: vmprofd exited with $rc"; exit 1; }
    if grep -q "stacks partial" "$WORK/report.txt"; then
        grep "stacks partial" "$WORK/report.txt"
        echo "FAIL: the report says stacks are partial"
        exit 1
    fi
    ;;
*) echo "unknown sampler $SAMPLER"; exit 2 ;;
esac
python3 "$SOURCE_DIR/tests/stacks/check_stacks.py" "$WORK/out.folded"
