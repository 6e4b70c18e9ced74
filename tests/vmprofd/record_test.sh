#!/usr/bin/env bash
# tests/vmprofd/record_test.sh — vmprofd record --continuous end to end:
# real stvm processes starting and exiting while a real recorder runs, the
# files read back with go tool pprof (the client the files are for).
#
#   record_test.sh TEST     TEST: lifecycle retry keep restart usage caps unit
#
#   lifecycle  four VMs start and exit (or outlive the recorder) during a
#              run with --interval 1s: each one's files cover its life
#              without a hole (every interval's start is the previous
#              one's end), the middle ones are whole intervals on the wall
#              clock's seconds, the last one holds the moment the VM was
#              killed (its partial interval), and every file has the
#              labels and comments; no temporary is left, no VM missed
#   retry      attaches that fail while the VM lives (descriptors limited
#              with prlimit): the time until the retry is written, empty,
#              saying why, on the wall clock's seconds, without a hole
#   keep       --keep-size: the host folder stays under the size, oldest
#              files removed first; --keep-age: an old file is removed at
#              the start
#   restart    SIGKILL, then a new recorder: the temporary a killed writer
#              left is swept, the old files are untouched, the same VM's
#              folder goes on with new intervals
#   usage      --help, and every bad option: a message and status 2
#   caps       the recorder run as contrib/vmprofd.service runs it: another
#              user holding only the unit's AmbientCapabilities profiles a
#              root-owned VM down to its Smalltalk methods (root only)
#   unit       systemd-analyze verify accepts contrib/*.service
#
# Environment (CMakeLists.txt): VMPROFD, STVM, SOURCE_DIR. The runs are
# beside two busy loops: timeouts are generous, no duration is asserted
# beyond the recorder's own stamps.
set -u

TEST=${1:?usage: record_test.sh TEST}
WORK=$(mktemp -d /tmp/vmprofd-record.XXXXXX)
chmod 755 "$WORK"
# The VMs' class path names this folder: --match picks them out of every
# other stvm on the machine (other tests may run meanwhile).
MARK="$WORK/som"
mkdir "$MARK"
CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/smalltalk/bench:$MARK"
STARTED=()
source "$(dirname "$0")/../stop_started.sh"
trap 'stop_started "${STARTED[@]}"; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
export HOME=$WORK # go tool pprof keeps a cache under ~

fail() {
    echo "FAIL: $*"
    tail -n 40 "$WORK"/*.err 2>/dev/null | cut -c1-300
    exit 1
}
skip() { echo "test skipped: $*" && exit 0; }

now_ms() { date +%s%3N; }

# start_vm NAME: a busy stvm; waits for its export segment; NAME_PID, NAME_TICKS.
start_vm() {
    local name=$1 pid
    start_stvm "$name" "$STVM" -cp "$CP" BenchRunner Richards 100000000
    eval "pid=\$${name}_PID"
    eval "${name}_TICKS=$(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $20 }')"
}

# start_recorder NAME ARGS...: vmprofd record in the background (REC_PID);
# waits for its host folder.
start_recorder() {
    local name=$1
    shift
    "$VMPROFD" record --continuous --dir "$WORK/rec" --match "*$MARK*" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    REC_PID=$!
    STARTED+=("$REC_PID")
    for _ in $(seq 400); do
        grep -q "recording every stvm" "$WORK/$name.err" && break
        kill -0 "$REC_PID" 2>/dev/null || fail "vmprofd record exited: $(cat "$WORK/$name.err")"
        sleep 0.05
    done
    HOSTDIR=$(sed -n 's/^vmprofd record: recording every stvm into \(.*\) (interval.*/\1/p' "$WORK/$name.err")
    [ -d "$HOSTDIR" ] || fail "vmprofd record did not make its host folder"
}

stop_recorder() {
    kill -TERM "$REC_PID"
    wait "$REC_PID"
    local rc=$?
    [ "$rc" = 0 ] || fail "vmprofd record exited with status $rc after SIGTERM"
}

# wait_folder NAME: until the recorder has made NAME's process folder (its
# worker runs); then NAME_SEEN is a moment it was being profiled.
wait_folder() {
    local pid ticks
    eval "pid=\$${1}_PID ticks=\$${1}_TICKS"
    for _ in $(seq 600); do
        [ -d "$HOSTDIR/$pid-$ticks" ] && break
        sleep 0.05
    done
    [ -d "$HOSTDIR/$pid-$ticks" ] || fail "no folder $pid-$ticks for $1 after 30 s"
    eval "${1}_SEEN=$(now_ms)"
}

# wait_sampled NAME: until one of NAME's intervals has samples (30 s at
# most): a sanitizer build's VMs beside busy loops get little CPU, and CI's
# ASan pass saw a VM live 2 s without a sample.
wait_sampled() {
    local pid ticks
    eval "pid=\$${1}_PID ticks=\$${1}_TICKS"
    for _ in $(seq 600); do
        grep -q "^vmprofd record: $HOSTDIR/$pid-$ticks/.*: [1-9][0-9]* samples" "$WORK/rec.err" && return
        sleep 0.05
    done
}

# kill_vm NAME: SIGTERM; NAME_KILL is a moment it was still alive.
kill_vm() {
    local pid
    eval "pid=\$${1}_PID"
    eval "${1}_KILL=$(now_ms)"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
}

# ms_of ISO: "2026-11-28T18:21:19.000Z" in ms since the epoch.
ms_of() { echo $(($(date -u -d "${1%.*}Z" +%s) * 1000 + 10#$(echo "$1" | sed 's/.*\.\([0-9]*\)Z/\1/'))); }

# check_vm NAME INTERVAL_MS: the files of one VM, read with go tool pprof.
check_vm() {
    local name=$1 iv=$2 pid ticks seen kill
    eval "pid=\$${name}_PID ticks=\$${name}_TICKS seen=\$${name}_SEEN kill=\$${name}_KILL"
    local dir="$HOSTDIR/$pid-$ticks" prev_end= first_start= last_end= n=0 samples=0 last_file=
    local files
    files=$(ls "$dir"/*.pb.gz 2>/dev/null | sort)
    [ -n "$files" ] || fail "$name (pid $pid): no profile in $dir"
    for f in $files; do
        go tool pprof -raw "$f" >"$WORK/raw" 2>"$WORK/raw.err" || fail "go tool pprof cannot read $f: $(cat "$WORK/raw.err")"
        local s e
        s=$(sed -n 's/^Comment: interval_start=//p' "$WORK/raw")
        e=$(sed -n 's/^Comment: interval_end=//p' "$WORK/raw")
        [ -n "$s" ] && [ -n "$e" ] || fail "$f: no interval_start/interval_end comments"
        grep -q "^Comment: pid=$pid\$" "$WORK/raw" || fail "$f: no comment pid=$pid"
        grep -q "^Comment: host=$(basename "$HOSTDIR")\$" "$WORK/raw" || fail "$f: no comment host="
        grep -q "^Comment: cmd=.*BenchRunner Richards" "$WORK/raw" || fail "$f: no comment cmd= with the command line"
        grep -q "^Comment: build_id=$BUILD_ID\$" "$WORK/raw" || fail "$f: build_id is not stvm's $BUILD_ID"
        s=$(ms_of "$s")
        e=$(ms_of "$e")
        # the name is the start
        local stamp
        stamp=$(date -u -d "@$((s / 1000))" +%Y%m%dT%H%M%S).$(printf %03d $((s % 1000)))Z.pb.gz
        [ "$(basename "$f")" = "$stamp" ] || fail "$f: named $(basename "$f"), its interval starts at $stamp"
        [ -z "$prev_end" ] || [ "$s" = "$prev_end" ] ||
            fail "$name: a hole: an interval ends at $prev_end, the next starts at $s ($f)"
        (( e > s )) || fail "$f: the interval ends ($e) before it starts ($s)"
        [ -n "$first_start" ] || first_start=$s
        local k
        k=$(awk '/^Samples:/ { on = 1; next } on && /^ *[0-9]+ +[0-9]+:/ { n += $1 } /^Locations/ { on = 0 } END { print n + 0 }' "$WORK/raw")
        samples=$((samples + k))
        if (( k > 0 )); then
            grep -q "pid:\[$pid\]" "$WORK/raw" || fail "$f: samples without the label pid=$pid"
            grep -q "cmd:\[.*BenchRunner Richards" "$WORK/raw" || fail "$f: samples without the label cmd"
        fi
        prev_end=$e
        last_end=$e
        last_file=$f
        n=$((n + 1))
    done
    # middle intervals: whole, on the wall clock's multiples of the interval
    local i=0
    for f in $files; do
        i=$((i + 1))
        (( i == 1 || i == n )) && continue
        go tool pprof -raw "$f" >"$WORK/raw" 2>/dev/null
        local s e
        s=$(ms_of "$(sed -n 's/^Comment: interval_start=//p' "$WORK/raw")")
        e=$(ms_of "$(sed -n 's/^Comment: interval_end=//p' "$WORK/raw")")
        (( s % iv == 0 && e - s == iv )) || fail "$f: a middle interval $s..$e is not one whole interval of $iv ms"
    done
    (( first_start <= seen )) || fail "$name: the first interval starts at $first_start, after $seen when its folder existed"
    [ -z "$kill" ] || (( last_end >= kill )) ||
        fail "$name: the last interval ends at $last_end, before $kill when it was still alive: its partial interval is lost"
    (( samples > 0 )) || fail "$name: no samples in $n files"
    echo "ok: $name (pid $pid): $n files, $samples samples, $first_start..$last_end ms without a hole"
}

case "$TEST" in
lifecycle)
    command -v go >/dev/null || skip "no go (golang-go): go tool pprof reads the files"
    BUILD_ID=$(readelf -n "$STVM" | sed -n 's/^ *Build ID: //p')
    [ -n "$BUILD_ID" ] || skip "stvm has no GNU build id"
    busy_loops
    start_recorder rec --interval 1s
    start_vm a
    wait_folder a
    start_vm b
    wait_folder b
    sleep 1.5
    wait_sampled a
    kill_vm a
    start_vm c
    wait_folder c
    sleep 1.2
    wait_sampled b
    kill_vm b
    start_vm d
    wait_folder d
    sleep 1.7
    wait_sampled c
    kill_vm c
    sleep 0.5
    wait_sampled d
    # d outlives the recorder: SIGTERM writes its interval in progress
    d_KILL=$(now_ms)
    stop_recorder
    echo "ok: SIGTERM: exit 0"
    for v in a b c d; do check_vm "$v" 1000; done
    left=$(find "$WORK/rec" -name '*.tmp.*' | wc -l)
    [ "$left" = 0 ] || fail "$left temporary files left"
    folders=$(find "$HOSTDIR" -mindepth 1 -maxdepth 1 -type d | wc -l)
    [ "$folders" = 4 ] || fail "$folders process folders for 4 VMs: $(ls "$HOSTDIR")"
    grep -q "the VM exited" "$WORK/rec.err" || fail "the recorder never said a VM's last interval ended with it"
    echo "ok: no temporary left, one folder per VM"
    ;;
retry)
    # An attach that fails while the VM lives (here: out of descriptors,
    # set from outside with prlimit) leaves no hole: the intervals until
    # the retry are written empty, on the wall clock's seconds, saying why,
    # and the retry's first interval says how long it was not sampled
    command -v go >/dev/null || skip "no go (golang-go): go tool pprof reads the files"
    command -v prlimit >/dev/null || skip "no prlimit (util-linux)"
    BUILD_ID=$(readelf -n "$STVM" | sed -n 's/^ *Build ID: //p')
    [ -n "$BUILD_ID" ] || skip "stvm has no GNU build id"
    busy_loops
    start_recorder rec --interval 1s
    free=0 # the lowest descriptor the idle recorder leaves free
    while [ -e "/proc/$REC_PID/fd/$free" ]; do free=$((free + 1)); done
    soft=$(prlimit --pid "$REC_PID" --nofile --output SOFT --noheadings | tr -d ' ')
    start_vm a
    wait_folder a
    wait_sampled a
    # two more: an attach opens the VM's pidfd and export segment, then
    # cannot list its threads; the retry 0.2 s later fails the same way
    prlimit --pid "$REC_PID" --nofile=$((free + 2)): || fail "prlimit refused"
    for _ in $(seq 600); do
        grep -q "Too many open files.*; trying again in 5 s" "$WORK/rec.err" && break
        sleep 0.05
    done
    prlimit --pid "$REC_PID" --nofile="$soft": || fail "prlimit refused"
    grep -q "Too many open files.*; trying again in 5 s" "$WORK/rec.err" ||
        fail "no attach failed twice with the descriptors limited to $((free + 2))"
    for _ in $(seq 600); do # the retry's samples
        sed -n '/trying again in 5 s/,$p' "$WORK/rec.err" | grep -q ": [1-9][0-9]* samples" && break
        sleep 0.05
    done
    kill_vm a
    stop_recorder
    check_vm a 1000
    waited=0 first=0
    for f in "$HOSTDIR/${a_PID}-${a_TICKS}"/*.pb.gz; do
        go tool pprof -raw "$f" >"$WORK/raw" 2>/dev/null
        grep -q "^Comment: warning: .*could not sample this VM while it waited to try again (.*Too many open files" \
            "$WORK/raw" && waited=$((waited + 1))
        grep -q "^Comment: warning: .*could not sample this VM in the first [0-9.]* s of this interval (" "$WORK/raw" &&
            first=$((first + 1))
    done
    (( waited >= 4 )) || fail "$waited intervals say they were not sampled while vmprofd waited 5 s to try again"
    (( first == 1 )) || fail "$first intervals say how long they were not sampled before the retry (1 expected)"
    echo "ok: $waited intervals not sampled while vmprofd waited, each saying why; the retry's first says how long"
    ;;
keep)
    busy_loops
    # a profile of a process long gone, 10 days old: --keep-age 7d removes it at the start
    mkdir -p "$WORK/rec/$(hostname)/1-1"
    head -c 3000 /dev/urandom >"$WORK/rec/$(hostname)/1-1/20200101T000000.000Z.pb.gz"
    touch -d '10 days ago' "$WORK/rec/$(hostname)/1-1/20200101T000000.000Z.pb.gz"
    head -c 3000 /dev/urandom >"$WORK/rec/$(hostname)/1-1/20200102T000000.000Z.pb.gz"
    touch -d '2 days ago' "$WORK/rec/$(hostname)/1-1/20200102T000000.000Z.pb.gz"
    start_recorder rec --interval 500ms --keep-age 7d --keep-size 8K
    [ ! -e "$HOSTDIR/1-1/20200101T000000.000Z.pb.gz" ] || fail "--keep-age 7d kept a file 10 days old"
    [ -e "$HOSTDIR/1-1/20200102T000000.000Z.pb.gz" ] || fail "--keep-age 7d removed a file 2 days old"
    echo "ok: --keep-age 7d: the 10-day-old file removed at the start, the 2-day-old one kept"
    start_vm a
    wait_folder a
    # a profile is ~2 KB: 8 of them pass 8 KiB twice over. On a busy machine the VM
    # gets less CPU and its profiles are smaller, so wait for the limit to bite
    # (the oldest file goes first) and for at least 8 profiles, not for 8 alone
    for _ in $(seq 1200); do
        [ "$(grep -c '\.pb\.gz: ' "$WORK/rec.err")" -ge 8 ] &&
            [ ! -e "$HOSTDIR/1-1/20200102T000000.000Z.pb.gz" ] && break
        sleep 0.05
    done
    stop_recorder
    total=$(find "$HOSTDIR" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    (( total <= 8 * 1024 )) || fail "the host folder holds $total bytes, over --keep-size 8K"
    [ ! -e "$HOSTDIR/1-1/20200102T000000.000Z.pb.gz" ] || fail "the oldest file (2 days) was kept while newer ones went"
    [ ! -d "$HOSTDIR/1-1" ] || fail "the empty folder of the old process was kept"
    grep -q "old profiles\? removed by the limits" "$WORK/rec.err" || fail "the recorder did not say it removed files"
    # what is left is the newest: the last file written is among them
    last=$(grep -o "$HOSTDIR/[^:]*\.pb\.gz" "$WORK/rec.err" | tail -1)
    [ -e "$last" ] || fail "the last file written ($last) was removed"
    kept=$(ls "$HOSTDIR/${a_PID}-${a_TICKS}" | sort)
    written=$(grep -o "$HOSTDIR/${a_PID}-${a_TICKS}/[^:]*\.pb\.gz" "$WORK/rec.err" | xargs -n1 basename | sort)
    newest=$(echo "$written" | tail -n "$(echo "$kept" | wc -l)")
    [ "$kept" = "$newest" ] || fail "the files kept are not the newest: kept $(echo $kept), newest $(echo $newest)"
    echo "ok: --keep-size 8K: $total bytes left, the newest $(echo "$kept" | wc -l) files of $(echo "$written" | wc -l)"
    ;;
restart)
    busy_loops
    start_recorder rec1 --interval 500ms
    start_vm a
    wait_folder a
    dir="$HOSTDIR/${a_PID}-${a_TICKS}"
    for _ in $(seq 600); do
        [ "$(ls "$dir" | wc -l)" -ge 2 ] && break
        sleep 0.05
    done
    kill -KILL "$REC_PID"
    wait "$REC_PID" 2>/dev/null
    # what a recorder killed between write and rename leaves
    echo partial >"$dir/20261128T000000.000Z.pb.gz.tmp.0123456789ab"
    before=$(cd "$dir" && stat -c '%n %i %Y %s' *.pb.gz | sort)
    start_recorder rec2 --interval 500ms
    # the planted one, and the killed recorder's own when the kill came
    # between its write and its rename
    grep -qE "removed [12] temporary files? an earlier recorder left" "$WORK/rec2.err" ||
        fail "the new recorder did not sweep the temporary: $(cat "$WORK/rec2.err")"
    [ ! -e "$dir/20261128T000000.000Z.pb.gz.tmp.0123456789ab" ] || fail "the temporary is still there"
    nbefore=$(echo "$before" | wc -l)
    for _ in $(seq 600); do
        [ "$(ls "$dir"/*.pb.gz | wc -l)" -ge $((nbefore + 2)) ] && break
        sleep 0.05
    done
    stop_recorder
    after=$(cd "$dir" && stat -c '%n %i %Y %s' *.pb.gz | sort)
    # every old file is still there, the same inode, time and size
    echo "$before" | while read -r line; do
        echo "$after" | grep -qxF "$line" || { echo "FAIL: changed or lost after the restart: $line"; exit 1; }
    done || fail "a file of the first recorder changed"
    nafter=$(echo "$after" | wc -l)
    (( nafter >= nbefore + 2 )) || fail "the new recorder wrote $((nafter - nbefore)) files in the same folder"
    # no two files for one interval: their starts differ and do not overlap
    if command -v go >/dev/null; then
        prev=0
        for f in $(ls "$dir"/*.pb.gz | sort); do
            go tool pprof -raw "$f" >"$WORK/raw" 2>/dev/null || fail "go tool pprof cannot read $f"
            s=$(ms_of "$(sed -n 's/^Comment: interval_start=//p' "$WORK/raw")")
            e=$(ms_of "$(sed -n 's/^Comment: interval_end=//p' "$WORK/raw")")
            (( s >= prev )) || fail "$f starts at $s, inside the interval before it (ends $prev)"
            prev=$e
        done
    fi
    echo "ok: after SIGKILL: temporary swept, $nbefore files untouched, $((nafter - nbefore)) new ones in $dir"
    ;;
usage)
    "$VMPROFD" record --help >"$WORK/help.out" 2>&1 || fail "record --help: status $?"
    grep -q -- "--keep-size" "$WORK/help.out" || fail "record --help does not list --keep-size"
    bad() {
        local want=$1
        shift
        "$VMPROFD" record "$@" >"$WORK/bad.out" 2>"$WORK/bad.err"
        local rc=$?
        [ "$rc" = 2 ] || fail "record $*: status $rc, expected 2"
        grep -q "$want" "$WORK/bad.err" || fail "record $*: '$(cat "$WORK/bad.err")' does not say '$want'"
        echo "ok: record $*: $(head -1 "$WORK/bad.err")"
    }
    bad "needs --continuous" --dir "$WORK/x"
    bad "needs --dir" --continuous
    bad "is not a duration" --continuous --dir "$WORK/x" --interval 5parsecs
    bad "too short" --continuous --dir "$WORK/x" --interval 10ms
    bad "is not a rate" --continuous --dir "$WORK/x" --rate 0
    bad "is not cpu or alloc" --continuous --dir "$WORK/x" --event wall
    bad "is not a duration" --continuous --dir "$WORK/x" --keep-age -1d
    bad "is not a size" --continuous --dir "$WORK/x" --keep-size 1Q
    bad "unknown option" --continuous --dir "$WORK/x" --frobnicate
    bad "needs a value" --continuous --dir
    touch "$WORK/file"
    "$VMPROFD" record --continuous --dir "$WORK/file" >"$WORK/bad.out" 2>"$WORK/bad.err"
    rc=$?
    [ "$rc" = 1 ] && grep -q "is not a folder" "$WORK/bad.err" ||
        fail "record --dir FILE: status $rc, '$(cat "$WORK/bad.err")'"
    echo "ok: record --dir FILE: $(cat "$WORK/bad.err")"
    ;;
caps)
    [ "$(id -u)" = 0 ] || skip "needs root (to become another user with capabilities)"
    id nobody >/dev/null 2>&1 || skip "no user 'nobody'"
    command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
    command -v go >/dev/null || skip "no go (golang-go): go tool pprof reads the files"
    [ "$(cat /proc/sys/kernel/cap_last_cap)" -ge 39 ] || skip "this kernel has no CAP_PERFMON/CAP_BPF"
    unit="$SOURCE_DIR/contrib/vmprofd.service"
    caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit")
    [ -n "$caps" ] || fail "$unit has no AmbientCapabilities="
    [ "$caps" = "$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")" ] || fail "$unit: the bounding set differs from the ambient set"
    for u in "$SOURCE_DIR"/contrib/vmprofd-serve.service; do
        [ "$caps" = "$(sed -n 's/^AmbientCapabilities=//p' "$u")" ] || fail "$u holds other capabilities than $unit"
    done
    list=$(for c in $caps; do printf '+%s,' "$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done)
    list=${list%,}
    busy_loops
    start_vm a # root's VM; the recorder is nobody's, as the unit's DynamicUser is no one's
    mkdir -p "$WORK/rec"
    chown nobody "$WORK/rec"
    setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps="-all,$list" --ambient-caps="$list" \
        --bounding-set="-all,$list" -- \
        "$VMPROFD" record --continuous --dir "$WORK/rec" --match "*$MARK*" --interval 1s >"$WORK/rec.out" 2>"$WORK/rec.err" &
    REC_PID=$!
    STARTED+=("$REC_PID")
    for _ in $(seq 400); do
        HOSTDIR=$(sed -n 's/^vmprofd record: recording every stvm into \(.*\) (interval.*/\1/p' "$WORK/rec.err")
        [ -n "$HOSTDIR" ] && break
        sleep 0.05
    done
    [ -n "$HOSTDIR" ] || fail "the recorder did not start as nobody"
    capeff=$(sed -n 's/^CapEff:\t*//p' "/proc/$REC_PID/status")
    echo "ok: recorder as nobody with $caps (CapEff $capeff)"
    wait_folder a
    dir="$HOSTDIR/${a_PID}-${a_TICKS}"
    # until an interval has samples: a sanitizer build's VM beside busy loops
    # may wait for a CPU through its first whole intervals (CI: three files
    # of 0 samples in 2 s)
    for _ in $(seq 600); do
        [ "$(ls "$dir"/*.pb.gz 2>/dev/null | wc -l)" -ge 2 ] && grep -q "^vmprofd record: $dir/.*: [1-9][0-9]* samples" "$WORK/rec.err" && break
        sleep 0.05
    done
    stop_recorder
    grep -q "is not profiled" "$WORK/rec.err" && fail "the recorder refused the VM: $(grep 'is not profiled' "$WORK/rec.err")"
    found=
    for f in "$dir"/*.pb.gz; do
        go tool pprof -raw "$f" >"$WORK/raw" 2>/dev/null || fail "go tool pprof cannot read $f"
        # what the unit's capabilities are for: perf_event on another user's
        # threads (CAP_PERFMON, CAP_SYS_PTRACE), the eBPF walker (CAP_BPF,
        # CAP_PERFMON), the export segment (CAP_DAC_READ_SEARCH)
        grep -q "^Comment: sampled with perf_event" "$WORK/raw" ||
            fail "$f was not sampled with perf_event: $(grep '^Comment' "$WORK/raw" | head -3)"
        grep -q "stacks partial" "$WORK/raw" && fail "$f: $(grep -m1 'stacks partial' "$WORK/raw")"
        grep -q "Richards>>\|TaskControlBlock>>\|Scheduler>>\|RBObject>>" "$WORK/raw" && found=$f
    done
    [ -n "$found" ] || fail "no profile of the root VM shows its Smalltalk methods (the export segment was not read)"
    echo "ok: nobody with the unit's capabilities profiled root's VM down to its methods ($(basename "$found"))"
    ;;
unit)
    command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
    for u in "$SOURCE_DIR"/contrib/*.service; do
        # the unit names /usr/local/bin/vmprofd; verify it against this build's
        sed "s|/usr/local/bin/vmprofd|$VMPROFD|g" "$u" >"$WORK/$(basename "$u")"
        systemd-analyze verify "$WORK/$(basename "$u")" >"$WORK/verify.out" 2>&1 ||
            fail "systemd-analyze verify $(basename "$u"): $(cat "$WORK/verify.out")"
        [ -s "$WORK/verify.out" ] && fail "systemd-analyze verify $(basename "$u") warns: $(cat "$WORK/verify.out")"
        echo "ok: systemd-analyze verify $(basename "$u")"
    done
    ;;
*)
    echo "unknown test $TEST" >&2
    exit 2
    ;;
esac
