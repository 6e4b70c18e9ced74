# tests/stop_started.sh — sourced by the test scripts that start stvm,
# vmprofd or busy loops in the background (tests/stacks, tests/vmprofd).
#
# stop_started PID...: ends them as a user would. SIGTERM first: an stvm
# then removes its export segment (/dev/shm/stvm-PID) and a vmprofd that
# launched a command passes the signal on to it. What still runs after 2 s
# gets SIGKILL, and an stvm's segment, which SIGKILL leaves behind, is
# removed here. Reaps them all.

# Whether PID runs (a zombie, exited but not yet reaped, does not).
started_running() {
    local st
    st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

stop_started() {
    local p i left
    for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
    for i in $(seq 20); do
        left=0
        for p in "$@"; do started_running "$p" && left=1; done
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    for p in "$@"; do
        if started_running "$p"; then
            kill -9 "$p" 2>/dev/null
            wait "$p" 2>/dev/null
            rm -f "/dev/shm/stvm-$p"
        fi
    done
    wait 2>/dev/null
}

# busy_loops: two CPU-bound processes beside the test, added to STARTED
# (the caller's array, which its cleanup hands to stop_started): the
# accuracy tests (ctest label "load") must hold on a busy machine, where
# users profile.
busy_loops() {
    local i
    for i in 1 2; do
        bash -c 'while :; do :; done' &
        STARTED+=("$!")
    done
    echo "(beside two busy loops)"
}

# start_stvm NAME COMMAND...: COMMAND (an stvm) in the background, its
# output in $WORK/NAME.out and .err, added to STARTED; waits up to 20 s for
# its export segment (fail, the caller's, names it when none comes); sets
# NAME_PID.
start_stvm() {
    local name=$1 pid i
    shift
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    pid=$!
    STARTED+=("$pid")
    for i in $(seq 400); do
        [ -e "/dev/shm/stvm-$pid" ] && break
        sleep 0.05
    done
    [ -e "/dev/shm/stvm-$pid" ] || fail "$name (pid $pid) published no export segment"
    eval "${name}_PID=$pid"
}
