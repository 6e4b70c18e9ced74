#!/usr/bin/env bash
# tests/untrusted/caps_test.sh — vmprofd run as root keeps, once its sampler
# runs, only the capabilities its mode needs (vmprofd/permission.h,
# docs/vmprofd.md "Privileges"), and still samples with them.
#
#   caps_test.sh MODE OWNER    MODE perf|ptrace; OWNER of the target:
#                              root (root without capabilities: setpriv
#                              clears its bounding set) or nobody
#
# The test reads CapEff of vmprofd's pid from /proc while it samples and
# compares it with the set the mode needs:
#   perf    CAP_PERFMON, CAP_BPF            (bits 38, 39)
#   ptrace  CAP_SYS_PTRACE                  (bit 19)
#   and for nobody's target also CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH
#   (bit 2: its export segment is nobody's, mode 0600).
# Exit 0 pass, 1 fail, 77 skipped (not root, no nobody, perf refused).
# Environment (set by CMakeLists.txt): STVM, VMPROFD, SOURCE_DIR.

set -u
MODE=${1:?usage: caps_test.sh perf|ptrace root|nobody}
OWNER=${2:?usage: caps_test.sh perf|ptrace root|nobody}
CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/smalltalk/bench"

skip() {
    echo "test skipped: $*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (the capabilities to drop)"
id nobody >/dev/null 2>&1 || skip "no user 'nobody'"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
last=$(cat /proc/sys/kernel/cap_last_cap)
[ "$last" -ge 39 ] || skip "this kernel has no CAP_PERFMON/CAP_BPF (cap_last_cap $last)"

WORK=$(mktemp -d /tmp/stvm-caps-test.XXXXXX)
chmod 0755 "$WORK"
VM=
VP=
cleanup() {
    [ -n "$VP" ] && kill "$VP" 2>/dev/null
    [ -n "$VM" ] && kill "$VM" 2>/dev/null
    wait 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    local f
    for f in "$WORK"/*.err; do [ -s "$f" ] && { echo "--- $f"; head -20 "$f"; }; done
    exit 1
}

case $MODE in
perf) want=$(((1 << 38) | (1 << 39))) ;;
ptrace) want=$((1 << 19)) ;;
*) echo "unknown mode $MODE" >&2; exit 2 ;;
esac
case $OWNER in
root) as=(setpriv --bounding-set=-all --inh-caps=-all --) ;;
nobody)
    as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    want=$((want | (1 << 19) | (1 << 2)))
    ;;
*) echo "unknown owner $OWNER" >&2; exit 2 ;;
esac
full=$(sed -n 's/^CapEff:\t*//p' /proc/self/status)
[ $((16#$full & want)) -eq "$want" ] || skip "the test runs without the capabilities the mode needs (CapEff $full)"
[ $((16#$full)) -ne "$want" ] || skip "the test runs with only the capabilities the mode needs: nothing to drop"

# A VM that runs until the test stops it, started first: vmprofd attaches
# by pid, after the target's capabilities are settled.
(cd "$WORK" && exec "${as[@]}" "$STVM" -cp "$CP" BenchRunner Fibonacci 100000 >"$WORK/vm.out" 2>"$WORK/vm.err") &
VM=$!
for _ in $(seq 1 100); do
    [ "$(readlink "/proc/$VM/exe" 2>/dev/null)" = "$(readlink -f "$STVM")" ] && break
    sleep 0.05
done
[ -e "/proc/$VM" ] || fail "the VM did not start"
# ... and has published its export (/dev/shm/stvm-PID); a busy machine may take seconds
for _ in $(seq 1 400); do
    [ -e "/dev/shm/stvm-$VM" ] && break
    sleep 0.05
done

"$VMPROFD" --pid "$VM" --mode "$MODE" --seconds 3 -o "$WORK/profile.txt" >"$WORK/vmprofd.out" 2>"$WORK/vmprofd.err" &
VP=$!
# CapEff while it samples: the first value that is not the full set (the
# drop comes once the sampler runs), or the last seen when vmprofd ends.
eff=
for _ in $(seq 1 400); do
    now=$(sed -n 's/^CapEff:\t*//p' "/proc/$VP/status" 2>/dev/null) || break
    [ -n "$now" ] || break
    eff=$now
    [ "$eff" != "$full" ] && break
    sleep 0.02
done
wait "$VP"
rc=$?
VP=
if [ "$rc" -ne 0 ] && grep -q "perf_event refused\|cannot profile" "$WORK/vmprofd.err"; then
    [ "$MODE" = perf ] && skip "perf_event is refused here: $(head -1 "$WORK/vmprofd.err")"
fi
[ "$rc" -eq 0 ] || fail "vmprofd exited with $rc"
[ -n "$eff" ] || fail "could not read vmprofd's CapEff while it ran"
printf -v wanthex '%016x' "$want"
[ "$((16#$eff))" -eq "$want" ] || fail "vmprofd kept CapEff $eff while sampling; the $MODE mode needs $wanthex"
grep -q "samples" "$WORK/profile.txt" || fail "no profile written after the drop"
grep -Eq "Fibonacci|benchmark|Integer" "$WORK/profile.txt" || fail "the profile names no Smalltalk code"
echo "ok: $MODE, target $OWNER: CapEff $eff"
exit 0
