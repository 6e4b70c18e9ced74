#!/usr/bin/env bash
# tests/vmprofd/serve_test.sh — vmprofd serve end to end: a real server,
# real stvm processes, and its real clients: go tool pprof (the everyday
# client, which Parca and Pyroscope's scrapers resemble) and curl for each
# error status.
#
#   serve_test.sh TEST      TEST: pprof ptrace allocs errors limit token forbidden
#
# Environment (CMakeLists.txt): VMPROFD, STVM, SOURCE_DIR.
# Every test runs beside two busy loops: timeouts are generous, no timing
# is asserted.
set -u

TEST=${1:?usage: serve_test.sh TEST}
WORK=$(mktemp -d /tmp/vmprofd-serve.XXXXXX)
chmod 755 "$WORK"
STARTED=()
source "$(dirname "$0")/../stop_started.sh"
trap 'stop_started "${STARTED[@]}"; rm -rf "$WORK"' EXIT
SOM="$SOURCE_DIR/tests/vmprofd/som"
export HOME=$WORK # go tool pprof keeps fetched profiles under ~/pprof

fail() {
    echo "FAIL: $*"
    tail -n 30 "$WORK"/*.err "$WORK"/*.out 2>/dev/null
    exit 1
}
skip() { echo "test skipped: $*" && exit 0; }

# start_server NAME ARGS...: vmprofd serve on a free loopback port; sets PORT.
start_server() {
    local name=$1
    shift
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    local pid=$!
    STARTED+=("$pid")
    PORT=
    for _ in $(seq 200); do
        PORT=$(sed -n 's|^vmprofd: serving on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$WORK/$name.err")
        [ -n "$PORT" ] && break
        kill -0 "$pid" 2>/dev/null || fail "vmprofd serve exited: $(cat "$WORK/$name.err")"
        sleep 0.05
    done
    [ -n "$PORT" ] || fail "vmprofd serve did not say its port"
    SERVER_PID=$pid
}

# status URL [CURL ARGS...]: the HTTP status; the body in $WORK/body
status() {
    local url=$1
    shift
    curl -s -o "$WORK/body" -w '%{http_code}' --max-time 60 "$@" "$url"
}

# expect CODE URL [CURL ARGS...]
expect() {
    local want=$1 got
    shift
    got=$(status "$@")
    [ "$got" = "$want" ] || fail "$1: HTTP $got, expected $want: $(head -c 300 "$WORK/body")"
    echo "ok: $want $1 $(head -n 1 "$WORK/body" | head -c 160)"
}

stop_server() {
    kill -TERM "$SERVER_PID"
    local rc
    wait "$SERVER_PID"
    rc=$?
    [ "$rc" = 0 ] || fail "vmprofd serve exited with status $rc after SIGTERM"
    echo "ok: SIGTERM: exit 0"
}

BASE() { echo "http://127.0.0.1:$PORT"; }

command -v curl >/dev/null || skip "no curl"

case "$TEST" in
pprof)
    command -v go >/dev/null || skip "no go (golang-go): go tool pprof is the client tested"
    busy_loops
    start_stvm cpu "$STVM" -cp "$SOM" RatioMethods 600000
    start_stvm alloc "$STVM" -cp "$SOM" AllocMethods 1000000 forever
    start_server srv "$VMPROFD" serve --listen 127.0.0.1:0
    expect 200 "$(BASE)/debug/pprof/"
    grep -q ">$cpu_PID<" "$WORK/body" && grep -q ">$alloc_PID<" "$WORK/body" ||
        fail "the index does not list pids $cpu_PID and $alloc_PID"
    grep -q "RatioMethods 600000" "$WORK/body" || fail "the index does not show the command line"
    # one VM
    go tool pprof -top "$(BASE)/debug/pprof/profile?seconds=2&pid=$cpu_PID" >"$WORK/one.out" 2>"$WORK/one.err" ||
        fail "go tool pprof failed on the profile of pid $cpu_PID"
    grep -q "RatioMethods>>heavy:" "$WORK/one.out" || fail "go tool pprof -top does not list RatioMethods>>heavy:"
    echo "ok: go tool pprof -top, pid $cpu_PID: $(grep -m1 'RatioMethods>>heavy:' "$WORK/one.out")"
    # every VM of the host, labelled
    go tool pprof -top -tagfocus "pid=$cpu_PID" "$(BASE)/debug/pprof/profile?seconds=2" >"$WORK/all.out" \
        2>"$WORK/all.err" || fail "go tool pprof failed on the profile of every VM"
    grep -q "RatioMethods>>heavy:" "$WORK/all.out" ||
        fail "the merged profile's samples labelled pid=$cpu_PID do not show RatioMethods>>heavy:"
    go tool pprof -tags "$(BASE)/debug/pprof/profile?seconds=2" >"$WORK/tags.out" 2>"$WORK/tags.err" ||
        fail "go tool pprof -tags failed"
    grep -q "$cpu_PID" "$WORK/tags.out" && grep -q "$alloc_PID" "$WORK/tags.out" ||
        fail "the merged profile's pid labels lack $cpu_PID or $alloc_PID: $(cat "$WORK/tags.out")"
    grep -q "RatioMethods 600000" "$WORK/tags.out" || fail "no cmd label with RatioMethods' command line"
    echo "ok: every VM in one profile, labels pid and cmd"
    # the browser's pages
    expect 200 "$(BASE)/vmprofd/report?seconds=1&pid=$cpu_PID"
    grep -q "RatioMethods>>heavy:" "$WORK/body" || fail "the text report lacks RatioMethods>>heavy:"
    expect 200 "$(BASE)/vmprofd/flamegraph?seconds=1&pid=$cpu_PID"
    grep -q "<svg" "$WORK/body" && grep -q "RatioMethods&gt;&gt;heavy:\|RatioMethods>>heavy:" "$WORK/body" ||
        fail "the flame graph is no SVG with RatioMethods>>heavy:"
    stop_server
    ;;
ptrace)
    # Two VMs traced at once by two threads of one server: each thread must
    # wait for its own tracees only (sample_ptrace.c, __WNOTHREAD).
    command -v go >/dev/null || skip "no go (golang-go): go tool pprof is the client tested"
    busy_loops
    start_stvm one "$STVM" -cp "$SOM" RatioMethods 600000
    start_stvm two "$STVM" -cp "$SOM" RatioMethods 600000
    start_server srv "$VMPROFD" serve --listen 127.0.0.1:0 --mode ptrace
    for pid in "$one_PID" "$two_PID"; do
        go tool pprof -top -tagfocus "pid=$pid" "$(BASE)/debug/pprof/profile?seconds=3" >"$WORK/p$pid.out" \
            2>"$WORK/p$pid.err" || fail "go tool pprof failed on the ptrace profile of every VM"
        grep -q "RatioMethods>>heavy:" "$WORK/p$pid.out" ||
            fail "pid $pid's samples in the merged ptrace profile do not show RatioMethods>>heavy:"
        echo "ok: ptrace, every VM at once, pid $pid: $(grep -m1 'RatioMethods>>heavy:' "$WORK/p$pid.out")"
    done
    stop_server
    ;;
allocs)
    command -v go >/dev/null || skip "no go (golang-go): go tool pprof is the client tested"
    busy_loops
    start_stvm alloc "$STVM" -cp "$SOM" AllocMethods 1000000 forever
    start_server srv "$VMPROFD" serve --listen 127.0.0.1:0
    go tool pprof -sample_index=alloc_space -top "$(BASE)/debug/pprof/allocs?seconds=2&pid=$alloc_PID" \
        >"$WORK/a.out" 2>"$WORK/a.err" || fail "go tool pprof failed on the allocation profile"
    grep -q "AllocMethods>>heavy" "$WORK/a.out" || fail "alloc_space does not list AllocMethods>>heavy"
    echo "ok: go tool pprof -sample_index=alloc_space: $(grep -m1 'AllocMethods>>heavy' "$WORK/a.out")"
    expect 200 "$(BASE)/vmprofd/report?seconds=1&pid=$alloc_PID&event=alloc"
    grep -q "AllocMethods>>heavy" "$WORK/body" || fail "the allocation text report lacks AllocMethods>>heavy"
    stop_server
    ;;
errors)
    busy_loops
    start_stvm cpu "$STVM" -cp "$SOM" RatioMethods 600000
    start_server srv "$VMPROFD" serve --listen 127.0.0.1:0 --max-seconds 20 --timeout 2
    expect 400 "$(BASE)/debug/pprof/profile?seconds=abc&pid=$cpu_PID"
    grep -q "seconds is not a number" "$WORK/body" || fail "no reason for seconds=abc"
    expect 400 "$(BASE)/debug/pprof/profile?seconds=21&pid=$cpu_PID"
    grep -q "maximum" "$WORK/body" || fail "no reason for seconds over the maximum"
    expect 400 "$(BASE)/debug/pprof/profile?seconds=-1"
    expect 400 "$(BASE)/debug/pprof/profile?seconds=nan"
    expect 400 "$(BASE)/debug/pprof/profile?seconds=1&pid=12x"
    # a pid with no stvm: vmprofd serve's own
    expect 400 "$(BASE)/debug/pprof/profile?seconds=1&pid=$SERVER_PID"
    grep -q "unknown pid" "$WORK/body" || fail "no reason for an unknown pid"
    expect 400 "$(BASE)/vmprofd/report?seconds=1&pid=$cpu_PID&event=bogus"
    expect 404 "$(BASE)/debug/pprof/nothing"
    expect 404 "$(BASE)/../../etc/passwd" --path-as-is
    expect 405 "$(BASE)/debug/pprof/profile?seconds=1" -X POST -d x=1
    # garbage: not HTTP, a huge header, a client that sends half a request and
    # stays; the server answers the next request all the same
    printf 'GARBAGE\r\n\r\n' | timeout 10 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" 2>/dev/null
    printf '\x00\xff\x01 / HTTP/9.9\r\nHost: \x7f\r\n\r\n' | timeout 10 bash -c "cat >/dev/tcp/127.0.0.1/$PORT" 2>/dev/null
    status "$(BASE)/debug/pprof/" -H "X-Big: $(head -c 60000 /dev/zero | tr '\0' a)" >/dev/null
    # half a request, then silence: dropped after --timeout (2 s), which
    # the client sees as the end of its connection
    (
        exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
        printf 'GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\n' >&3
        timeout 30 cat <&3 >/dev/null && echo closed >"$WORK/slow.state"
    ) &
    slow=$!
    STARTED+=("$slow")
    # odd values of each argument (unknown arguments are ignored, as Go's server does)
    for q in '%' '%zz' '%00' '%ff%fe' '1e999' '0x10' 'inf' '' '=' '&&&==' '99999999999999999999' '+' '1%20' '%0a1'; do
        code=$(status "$(BASE)/debug/pprof/profile?seconds=$q")
        [ "$code" = 400 ] || fail "?seconds=$q answered $code"
        code=$(status "$(BASE)/debug/pprof/profile?seconds=1&pid=$q")
        [ "$code" = 400 ] || fail "?seconds=1&pid=$q answered $code"
    done
    echo "ok: odd values of seconds and pid: 400"
    expect 200 "$(BASE)/debug/pprof/"
    grep -q ">$cpu_PID<" "$WORK/body" || fail "the index after garbage does not list pid $cpu_PID"
    wait "$slow"
    [ "$(cat "$WORK/slow.state" 2>/dev/null)" = closed ] || fail "a client that stopped mid-request was not dropped"
    echo "ok: a client silent mid-request dropped after --timeout"
    # a profile cut short by SIGTERM is still answered, and the server exits 0
    status "$(BASE)/debug/pprof/profile?seconds=15&pid=$cpu_PID" >"$WORK/cut.code" &
    local_curl=$!
    sleep 2
    stop_server
    wait "$local_curl"
    [ "$(cat "$WORK/cut.code")" = 200 ] || fail "the profile running at SIGTERM got HTTP $(cat "$WORK/cut.code")"
    echo "ok: the profile running at SIGTERM was answered"
    ;;
limit)
    busy_loops
    start_stvm cpu "$STVM" -cp "$SOM" RatioMethods 600000
    start_server srv "$VMPROFD" serve --listen 127.0.0.1:0 --max-profiles 1
    curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$(BASE)/debug/pprof/profile?seconds=8&pid=$cpu_PID" \
        >"$WORK/first.code" &
    first=$!
    # the first one holds the only slot once it is being made (the index says so)
    for _ in $(seq 200); do
        curl -s --max-time 60 "$(BASE)/debug/pprof/" | grep -q "profiles being made: 1 of at most 1" && break
        sleep 0.05
    done
    got=$(curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --max-time 60 \
        "$(BASE)/debug/pprof/profile?seconds=1&pid=$cpu_PID")
    [ "$got" = 503 ] || fail "a second profile beside the first got HTTP $got, expected 503"
    grep -qi "^Retry-After: [0-9]" "$WORK/headers" || fail "503 without Retry-After: $(cat "$WORK/headers")"
    echo "ok: 503 $(head -n1 "$WORK/body"), $(grep -i '^Retry-After' "$WORK/headers" | tr -d '\r')"
    wait "$first"
    [ "$(cat "$WORK/first.code")" = 200 ] || fail "the first profile got HTTP $(cat "$WORK/first.code")"
    expect 200 "$(BASE)/debug/pprof/profile?seconds=1&pid=$cpu_PID"
    stop_server
    ;;
token)
    start_stvm cpu "$STVM" -cp "$SOM" RatioMethods 600000
    printf 's3cret-token\n' >"$WORK/token"
    chmod 600 "$WORK/token"
    start_server srv "$VMPROFD" serve --listen 127.0.0.1:0 --token-file "$WORK/token"
    expect 401 "$(BASE)/debug/pprof/"
    expect 401 "$(BASE)/debug/pprof/" -H "Authorization: Bearer wrong"
    expect 401 "$(BASE)/debug/pprof/" -H "Authorization: Bearer s3cret-token-longer"
    expect 401 "$(BASE)/debug/pprof/profile?seconds=1&pid=$cpu_PID" -H "Authorization: Basic czNjcmV0LXRva2Vu"
    expect 200 "$(BASE)/debug/pprof/" -H "Authorization: Bearer s3cret-token"
    expect 200 "$(BASE)/debug/pprof/profile?seconds=1&pid=$cpu_PID" -H "Authorization: Bearer s3cret-token"
    stop_server
    # another address than loopback without a token: said
    "$VMPROFD" serve --listen 0.0.0.0:0 >"$WORK/open.out" 2>"$WORK/open.err" &
    pid=$!
    STARTED+=("$pid")
    for _ in $(seq 100); do grep -q "serving on" "$WORK/open.err" && break; sleep 0.05; done
    grep -q "warning: listening on 0.0.0.0:[0-9]*, beyond this host, without --token-file" "$WORK/open.err" ||
        fail "no warning for --listen 0.0.0.0 without a token: $(cat "$WORK/open.err")"
    echo "ok: warning for --listen 0.0.0.0 without --token-file"
    # bad options: status 2 and a reason
    for bad in "--listen nope" "--listen 127.0.0.1:70000" "--max-profiles 0" "--max-seconds abc" \
        "--token-file $WORK/missing" "--timeout 0" "--bogus" "extra"; do
        "$VMPROFD" serve $bad >"$WORK/bad.out" 2>"$WORK/bad.err"
        rc=$?
        [ "$rc" = 2 ] && grep -q "vmprofd serve: " "$WORK/bad.err" || fail "vmprofd serve $bad: status $rc, $(cat "$WORK/bad.err")"
    done
    echo "ok: bad options: status 2"
    ;;
forbidden)
    # A VM of root's, and a server run as nobody: its segment (mode 0600)
    # and its memory are not the server's to read.
    [ "$(id -u)" = 0 ] || skip "needs root to run the server as another user"
    command -v setpriv >/dev/null || skip "no setpriv"
    id nobody >/dev/null 2>&1 || skip "no user nobody"
    start_stvm cpu "$STVM" -cp "$SOM" RatioMethods 600000
    start_server srv setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all \
        "$VMPROFD" serve --listen 127.0.0.1:0
    expect 403 "$(BASE)/debug/pprof/profile?seconds=1&pid=$cpu_PID"
    grep -q "may not profile pid $cpu_PID" "$WORK/body" || fail "no reason for the 403"
    expect 200 "$(BASE)/debug/pprof/"
    grep -q "not profiled" "$WORK/body" || fail "the index does not say pid $cpu_PID cannot be profiled"
    stop_server
    ;;
*)
    echo "unknown test $TEST" >&2
    exit 2
    ;;
esac
echo "PASS: $TEST"
