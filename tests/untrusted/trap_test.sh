#!/usr/bin/env bash
# tests/untrusted/trap_test.sh — files stvm creates in folders others can
# write to cannot be redirected or planted by another user (issue 22,
# report/safefile.h). Each test plants its trap as `nobody` at the name the
# next stvm will use — the name holds a pid, so the test makes the kernel
# hand out that pid next (/proc/sys/kernel/ns_last_pid) — then runs stvm as
# root and checks that the trap did not work:
#
#   perfmap-symlink   /tmp/perf-P.map -> a victim file of root's
#   perfmap-planted   /tmp/perf-P.map, nobody's, mode 0666
#   jitdump-symlink   SHARED/jit-P.dump -> a victim (SHARED: mode 1777)
#   jitdump-planted   SHARED/jit-P.dump, nobody's, mode 0666
#   snapshot-symlink  SHARED/core.snap.tmp.P -> a victim (the temporary's
#                     name before issue 22)
#
# Passing: the victim is untouched, the planted file stays empty, stvm runs
# the program (exit 0) and, where another user's file holds the name, says
# so in one warning naming the file and its owner.
#
#   trap_test.sh TEST     exit 0 pass, 1 fail, 77 skipped (not root, no
#                         `nobody`, or ns_last_pid not writable)
# Environment (set by CMakeLists.txt): STVM, SOURCE_DIR.

set -u

TEST=${1:?usage: trap_test.sh TEST}
HELLO_CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/smalltalk/examples"

skip() {
    echo "test skipped: $*"
    exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (to plant files as nobody and choose the next pid)"
id nobody >/dev/null 2>&1 || skip "no user 'nobody' to plant the traps"
[ -w /proc/sys/kernel/ns_last_pid ] || skip "/proc/sys/kernel/ns_last_pid is not writable here"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"

WORK=$(mktemp -d /tmp/stvm-trap-test.XXXXXX)
chmod 0755 "$WORK"
PRIVATE=$WORK/private # root's alone: the victims
SHARED=$WORK/shared   # anyone's, sticky like /tmp
mkdir -m 0700 "$PRIVATE"
mkdir -m 1777 "$SHARED"
TRAPS=() # paths planted outside $WORK
cleanup() {
    local t
    for t in "${TRAPS[@]}"; do rm -f "$t"; done
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    local f
    for f in "$WORK"/run.out "$WORK"/run.err; do
        [ -s "$f" ] && { echo "--- $f"; head -20 "$f"; }
    done
    exit 1
}

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

VICTIM=$PRIVATE/victim
printf 'precious\n' >"$VICTIM"
chmod 0644 "$VICTIM"

# plant KIND PATH: the trap at PATH, made by nobody: a symlink to the
# victim, or an empty file of nobody's anyone may write.
plant() {
    case $1 in
    symlink) as_nobody ln -s "$VICTIM" "$2" ;;
    planted) as_nobody sh -c 'umask 0; : >"$1"' _ "$2" ;;
    esac
}

# next_pid: a pid that is free now and that the kernel hands out after we
# set ns_last_pid to one less (pid_max wraps to 300 for the kernel).
next_pid() {
    local max last p
    max=$(cat /proc/sys/kernel/pid_max)
    last=$(cat /proc/sys/kernel/ns_last_pid)
    p=$((last + 200 + RANDOM % 200))
    [ "$p" -ge "$max" ] && p=$((300 + RANDOM % 1000))
    while [ -e "/proc/$p" ]; do p=$((p + 1)); done
    echo "$p"
}

# run_at TRAPKIND NAMEFMT ARGS…: plants the trap at NAMEFMT with %d the pid,
# then runs stvm ARGS with that pid; retried while another process takes
# the pid first (a busy machine). Sets PID, TRAP, RC; run.out, run.err.
run_at() {
    local kind=$1 fmt=$2 try
    shift 2
    for try in $(seq 1 30); do
        PID=$(next_pid)
        # shellcheck disable=SC2059
        TRAP=$(printf "$fmt" "$PID")
        rm -f "$TRAP"
        plant "$kind" "$TRAP" || fail "cannot plant the $kind at $TRAP as nobody"
        TRAPS+=("$TRAP")
        # The echo is a builtin: the fork of the next line is the first
        # after it, unless another process on the machine forks between.
        echo $((PID - 1)) >/proc/sys/kernel/ns_last_pid
        "$STVM" "$@" >"$WORK/run.out" 2>"$WORK/run.err" &
        local got=$!
        wait "$got"
        RC=$?
        [ "$got" -eq "$PID" ] && return 0
        rm -f "$TRAP" "$SHARED"/core.snap*
        printf 'precious\n' >"$VICTIM" # a run at another pid touched no trap; to be sure
    done
    fail "the kernel never gave stvm the pid chosen for it (30 tries)"
}

# The victim is as it was: contents, owner, not replaced.
check_victim() {
    [ "$(cat "$VICTIM")" = precious ] || fail "the victim was written through the trap: $(head -c 60 "$VICTIM" | od -c | head -2)"
}

check_program_ran() {
    [ "$RC" -eq 0 ] || fail "stvm exited with $RC"
    grep -q "Hello, World" "$WORK/run.out" || fail "the program did not run"
}

# check_warned WHAT: one warning that names TRAP and nobody as its owner.
check_warned() {
    grep -q "^stvm: warning: no $1: $TRAP belongs to uid [0-9]* (nobody)" "$WORK/run.err" ||
        fail "no warning naming $TRAP and its owner nobody"
}

case $TEST in
perfmap-symlink | perfmap-planted)
    kind=${TEST#perfmap-}
    run_at "$kind" /tmp/perf-%d.map --perf-map -cp "$HELLO_CP" Hello
    check_program_ran
    check_victim
    [ "$kind" = planted ] && { [ -s "$TRAP" ] && fail "stvm wrote its perf map into nobody's $TRAP"; }
    [ "$(stat -c %U "$TRAP")" = nobody ] || fail "$TRAP is no longer nobody's"
    check_warned "perf map"
    ;;
jitdump-symlink | jitdump-planted)
    kind=${TEST#jitdump-}
    run_at "$kind" "$SHARED/jit-%d.dump" --jitdump --jitdump-dir "$SHARED" -cp "$HELLO_CP" Hello
    check_program_ran
    check_victim
    [ "$kind" = planted ] && { [ -s "$TRAP" ] && fail "stvm wrote its jitdump into nobody's $TRAP"; }
    [ "$(stat -c %U "$TRAP")" = nobody ] || fail "$TRAP is no longer nobody's"
    check_warned jitdump
    ;;
snapshot-symlink)
    run_at symlink "$SHARED/core.snap.tmp.%d" --snapshot "$SHARED/core.snap"
    [ "$RC" -eq 0 ] || fail "stvm --snapshot exited with $RC"
    check_victim
    [ -f "$SHARED/core.snap" ] && [ ! -L "$SHARED/core.snap" ] ||
        fail "no snapshot at $SHARED/core.snap (or a link there)"
    # the snapshot written is a good one: a boot from it runs the program
    "$STVM" --from-snapshot "$SHARED/core.snap" -cp "$HELLO_CP" Hello >"$WORK/run.out" 2>"$WORK/run.err"
    RC=$?
    check_program_ran
    [ -s "$WORK/run.err" ] && fail "booting from the snapshot warned"
    ls "$SHARED"/core.snap.tmp.?* 2>/dev/null | grep -v "^$TRAP\$" && fail "a temporary was left behind"
    ;;
*)
    echo "unknown test $TEST" >&2
    exit 2
    ;;
esac
echo "ok: $TEST"
exit 0
