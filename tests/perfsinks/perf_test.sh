#!/usr/bin/env bash
# tests/perfsinks/perf_test.sh — end-to-end tests of stvm's perf map and jitdump:
# real stvm runs checked by perfmap_check and jitdump_check, and by perf
# itself where perf works here.
#
#   perf_test.sh TEST      TEST: files compaction no-jit errors perf-jitdump perf-map
#
# Environment (set by CMakeLists.txt): STVM, JITDUMP_CHECK, PERFMAP_CHECK,
# SOURCE_DIR.
#
# Each test works in its own temporary directory (perf's build-id cache
# too: HOME points there while perf runs) and removes the /tmp/perf-PID.map
# of the stvm it ran. Exit 0 = pass, 1 = fail, 77 = skipped (perf missing
# or refused here; the reason is printed), which ctest reports as skipped.

set -u

TEST=${1:?usage: perf_test.sh TEST}
WORK=$(mktemp -d /tmp/stvm-perf-test.XXXXXX)
MAPS=() # perf maps of the stvm processes this test ran
CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/smalltalk/bench"
SOURCES="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/smalltalk/bench"

cleanup() {
    local m
    for m in "${MAPS[@]}"; do rm -f "$m"; done
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*.err "$WORK"/*.out "$WORK"/*.log; do
        [ -s "$f" ] && { echo "--- $f"; head -40 "$f"; }
    done
    exit 1
}

skip() {
    echo "test skipped: $*"
    exit 77
}

# run_stvm NAME ARGS…: stvm in $WORK with --code-zone-stats; sets PID (from
# the dump's or the map's name), ZONE (LO-HI in hex), MAP, DUMP.
run_stvm() {
    local name=$1
    shift
    (cd "$WORK" && exec "$STVM" --code-zone-stats -cp "$CP" "$@" >"$name.out" 2>"$name.err")
    RC=$?
    ZONE=$(sed -n 's/^  address range 0x\([0-9a-f]*\)-0x\([0-9a-f]*\)$/\1-\2/p' "$WORK/$name.err")
}

# after_run: PID, DUMP, MAP of the run that left one jit-PID.dump in $WORK.
after_run() {
    DUMP=$(ls "$WORK"/jit-*.dump 2>/dev/null | head -1)
    [ -n "$DUMP" ] || fail "stvm --jitdump left no jit-PID.dump in $WORK"
    PID=${DUMP##*/jit-}
    PID=${PID%.dump}
    MAP=/tmp/perf-$PID.map
    MAPS+=("$MAP")
}

# perf_works: skips (77) unless perf is installed and may record here.
perf_works() {
    command -v perf >/dev/null 2>&1 || skip "perf is not installed (Debian: linux-perf)"
    if ! HOME=$WORK perf record -q -k 1 -e cpu-clock -o "$WORK/probe.data" -- true >"$WORK/probe.log" 2>&1; then
        skip "perf record is refused here: $(head -3 "$WORK/probe.log" | tr '\n' ' ')" \
             "(kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null), uid $(id -u))"
    fi
    rm -f "$WORK/probe.data" "$WORK/probe.log"
}

case $TEST in
files)
    # Richards, a zone with room (no compaction): the map and the dump agree
    # line for line, the map names known methods, trampolines and PICs
    # inside the zone, the dump's code disassembles and its lines exist.
    run_stvm files --perf-map --jitdump BenchRunner Richards 3
    [ "$RC" -eq 0 ] || fail "stvm exited with $RC"
    grep -q "Richards: 3 iterations" "$WORK/files.out" || fail "Richards did not finish"
    [ -n "$ZONE" ] || fail "no 'address range' line in --code-zone-stats"
    after_run
    "$PERFMAP_CHECK" "$MAP" --zone "$ZONE" --jitdump "$DUMP" \
        --name "RichardsScheduler>>schedule" --name "RichardsTask>>isHeldOrBlocked" \
        --name "RichardsPacket class>>link:identity:kind:" --name "ceSend" --name "isNil (closed PIC)" ||
        fail "perf map check"
    "$JITDUMP_CHECK" "$DUMP" --zone "$ZONE" --close --disassemble --sources "$SOURCES" \
        --name "RichardsScheduler>>schedule" --name "ceSend" --debug-for "RichardsScheduler>>schedule" \
        --debug-for "[] in RichardsScheduler>>deviceQueueFor:" || fail "jitdump check"
    ;;
compaction)
    # The smallest zone: compactions move code; the map gets a line per
    # move, the dump a MOVE naming the load it moves.
    run_stvm compaction --perf-map --jitdump --code-size 64K --jit-threshold 1 BenchRunner DeltaBlue 1
    [ "$RC" -eq 0 ] || fail "stvm exited with $RC"
    grep -Eq "compactions [1-9]" "$WORK/compaction.err" || fail "no compaction in a 64K zone"
    moved=$(sed -n 's/.* moved \([0-9]*\),.*/\1/p' "$WORK/compaction.err")
    after_run
    out=$("$PERFMAP_CHECK" "$MAP" --zone "$ZONE" --jitdump "$DUMP" --moves --name "DBPlanner>>incrementalAdd:") ||
        fail "perf map check: $out"
    echo "$out"
    # every move the zone counted is a line of the map
    echo "$out" | grep -q "($moved from moves," || fail "the zone moved $moved pieces; the map says: $out"
    "$JITDUMP_CHECK" "$DUMP" --zone "$ZONE" --moves --close --disassemble --sources "$SOURCES" ||
        fail "jitdump check"
    ;;
no-jit)
    # Without a JIT both files are written, valid, and name no code; stvm says so.
    run_stvm nojit --no-jit --perf-map --jitdump BenchRunner Fibonacci 1
    [ "$RC" -eq 0 ] || fail "stvm exited with $RC"
    grep -q "stvm: note: with --no-jit nothing is compiled: /tmp/perf-[0-9]*.map and .*/jit-[0-9]*.dump will list no code" \
        "$WORK/nojit.err" || fail "no note about --no-jit"
    after_run
    [ -f "$MAP" ] || fail "no $MAP"
    "$PERFMAP_CHECK" "$MAP" --empty || fail "perf map check"
    "$JITDUMP_CHECK" "$DUMP" --no-code --close || fail "jitdump check"
    ;;
errors)
    # A dump directory that does not exist: exit 1 and the reason.
    run_stvm nodir --jitdump-dir "$WORK/missing" BenchRunner Fibonacci 1
    [ "$RC" -eq 1 ] || fail "--jitdump-dir to a missing directory exited with $RC, not 1"
    grep -q "^stvm: cannot create the jitdump $WORK/missing/jit-[0-9]*.dump: No such file or directory$" \
        "$WORK/nodir.err" || fail "no clear message for a missing directory"
    # --jitdump-dir without its value: a usage error.
    "$STVM" --jitdump-dir >"$WORK/noarg.out" 2>"$WORK/noarg.err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "--jitdump-dir without a value exited with $rc, not 2"
    grep -q "option '--jitdump-dir' needs a value" "$WORK/noarg.err" || fail "no usage message"
    # A perf map path taken by a directory: exec keeps the pid, so the
    # shell makes /tmp/perf-$$.map a directory and becomes stvm.
    bash -c 'mkdir "/tmp/perf-$$.map" && echo "$$" >"$1/blocked.pid" && exec "$2" --perf-map -cp "$3" BenchRunner Fibonacci 1' \
        _ "$WORK" "$STVM" "$CP" >"$WORK/blocked.out" 2>"$WORK/blocked.err"
    rc=$?
    blocked=/tmp/perf-$(cat "$WORK/blocked.pid").map
    rmdir "$blocked"
    [ "$rc" -eq 1 ] || fail "--perf-map onto a directory exited with $rc, not 1"
    grep -q "^stvm: cannot create the perf map $blocked: Is a directory$" "$WORK/blocked.err" ||
        fail "no clear message when the perf map cannot be created"
    # A directory on a noexec mount cannot hold a dump perf would see: a
    # private tmpfs mounted noexec in a mount namespace of our own (root
    # only), or else a noexec mount the machine has.
    nx=$WORK/noexec
    mkdir "$nx"
    if unshare -m true 2>/dev/null; then
        # what stvm leaves is listed inside: the tmpfs goes with the namespace
        unshare -m sh -c 'mount -t tmpfs -o noexec tmpfs "$1" || exit 99
            "$2" --jitdump-dir "$1" -cp "$3" BenchRunner Fibonacci 1; rc=$?; ls -A "$1" >"$4"; exit $rc' \
            _ "$nx" "$STVM" "$CP" "$WORK/noexec.left" >"$WORK/noexec.out" 2>"$WORK/noexec.err"
        rc=$?
        [ "$rc" -ne 99 ] || fail "could not mount a tmpfs in a private mount namespace"
        where="a private noexec tmpfs"
    else
        rc=""
        for d in /dev/shm /run/shm /run /var/tmp; do
            if [ -d "$d" ] && [ -w "$d" ] && findmnt -n -o OPTIONS -T "$d" 2>/dev/null | tr ',' '\n' | grep -qx noexec; then
                nx=$(mktemp -d "$d/stvm-perf-test.XXXXXX")
                "$STVM" --jitdump-dir "$nx" -cp "$CP" BenchRunner Fibonacci 1 >"$WORK/noexec.out" 2>"$WORK/noexec.err"
                rc=$?
                where=$d
                break
            fi
        done
    fi
    if [ -n "$rc" ]; then
        if [ "$nx" = "$WORK/noexec" ]; then left=$(cat "$WORK/noexec.left"); else left=$(ls -A "$nx"); rm -rf "$nx"; fi
        [ "$rc" -eq 1 ] || fail "--jitdump-dir on $where exited with $rc, not 1"
        grep -q "cannot map the jitdump .* executable .*Operation not permitted; is its directory on a noexec mount" \
            "$WORK/noexec.err" || fail "no noexec hint"
        [ -z "$left" ] || fail "a useless dump was left behind: $left"
        echo "noexec: checked on $where"
    else
        echo "note: no mount namespace and no writable noexec mount here; the noexec case was not run"
    fi
    ;;
perf-jitdump)
    # perf record -k 1, perf inject --jit, perf report and perf script: the
    # JIT'd methods are named, with source lines, and every sample perf put
    # in JIT'd code is where the dump says that code was at that time, also
    # after compaction moved it.
    perf_works
    for run in roomy small; do
        rm -f "$WORK"/jit-*.dump "$WORK"/jitted-*.so
        size=1M iters=20
        # the 64K zone compacts constantly and perf inject writes an ELF file
        # per load and move (each with an .eh_frame): 5 iterations keep that to
        # tens of thousands, still thousands of moves to check samples in
        [ $run = small ] && size=64K iters=5
        (cd "$WORK" && HOME=$WORK exec perf record -q -k 1 -e cpu-clock -o "$WORK/$run.data" -- \
            "$STVM" --jitdump --code-zone-stats --code-size $size -cp "$CP" BenchRunner DeltaBlue $iters \
            >"$WORK/$run.out" 2>"$WORK/$run.err")
        rc=$?
        [ "$rc" -eq 0 ] || fail "perf record of stvm exited with $rc"
        ZONE=$(sed -n 's/^  address range 0x\([0-9a-f]*\)-0x\([0-9a-f]*\)$/\1-\2/p' "$WORK/$run.err")
        after_run
        HOME=$WORK perf inject --jit -i "$WORK/$run.data" -o "$WORK/$run.jit.data" >"$WORK/$run.inject.log" 2>&1 ||
            fail "perf inject --jit failed"
        # find, not a glob: a 64K zone compacting constantly makes tens of
        # thousands of them, past the argument-list limit of ls
        find "$WORK" -maxdepth 1 -name "jitted-$PID-*.so" -print -quit | grep -q . ||
            fail "perf inject wrote no jitted-$PID-*.so"
        # JIT_CODE_UNWINDING_INFO: a method's .so has an .eh_frame whose rules
        # follow the prologue (rsp+8, then rsp+16, then the frame: rbp+16)
        if [ $run = roomy ] && command -v readelf >/dev/null; then
            # the first pieces are trampolines and stubs (frameless): look for a method's
            found=""
            for so in $(find "$WORK" -maxdepth 1 -name "jitted-$PID-*.so" | sort -V | head -400); do
                readelf --debug-dump=frames-interp "$so" >"$WORK/frames.txt" 2>&1
                if grep -q 'rbp+16' "$WORK/frames.txt" && grep -q 'rsp+16' "$WORK/frames.txt"; then
                    found=$so
                    break
                fi
            done
            [ -n "$found" ] || { cat "$WORK/frames.txt"; fail "no jitted .so has an .eh_frame with a method's unwind rules"; }
        fi
        HOME=$WORK perf report -i "$WORK/$run.jit.data" --stdio --sort dso,sym,srcline >"$WORK/$run.report.log" 2>&1 ||
            fail "perf report failed"
        grep -Eq "jitted-$PID-[0-9]+\.so +\[\.\] (\[\] in )?DB[A-Za-z]+>>[A-Za-z:]+ +DB[A-Za-z]+\.som:[0-9]+" \
            "$WORK/$run.report.log" || fail "perf report names no DeltaBlue method with its source line"
        HOME=$WORK perf script -i "$WORK/$run.jit.data" -F time,ip,sym,dso --ns >"$WORK/$run.script" 2>"$WORK/$run.script.log" ||
            fail "perf script failed"
        moved=""
        [ $run = small ] && moved=--moved-samples
        "$JITDUMP_CHECK" "$DUMP" --zone "$ZONE" --perf-script "$WORK/$run.script" $moved ||
            fail "perf's view of the $run run disagrees with the dump"
    done
    grep -E "jitted-[0-9]+-[0-9]+\.so" "$WORK/small.report.log" | head -5
    ;;
perf-map)
    # perf report and perf script resolve JIT'd code through /tmp/perf-PID.map
    # (no perf inject); with a zone that never compacts, every sample perf
    # put in the map names the code the dump says was there.
    perf_works
    (cd "$WORK" && HOME=$WORK exec perf record -q -e cpu-clock -k 1 -o "$WORK/map.data" -- \
        "$STVM" --perf-map --jitdump --code-zone-stats -cp "$CP" BenchRunner Richards 20 \
        >"$WORK/map.out" 2>"$WORK/map.err")
    rc=$?
    [ "$rc" -eq 0 ] || fail "perf record of stvm exited with $rc"
    grep -q "compactions 0 " "$WORK/map.err" || fail "the zone compacted: the map would be ambiguous"
    ZONE=$(sed -n 's/^  address range 0x\([0-9a-f]*\)-0x\([0-9a-f]*\)$/\1-\2/p' "$WORK/map.err")
    after_run
    HOME=$WORK perf report -i "$WORK/map.data" --stdio --sort dso,sym >"$WORK/map.report.log" 2>&1 || fail "perf report failed"
    grep -Eq "\[JIT\] tid $PID +\[\.\] Richards[A-Za-z]*>>[A-Za-z:]+" "$WORK/map.report.log" ||
        fail "perf report names no Richards method from the perf map"
    HOME=$WORK perf script -i "$WORK/map.data" -F time,ip,sym,dso --ns >"$WORK/map.script" 2>"$WORK/map.script.log" ||
        fail "perf script failed"
    grep -q "/tmp/perf-$PID.map" "$WORK/map.script" || fail "perf script resolved nothing through $MAP"
    "$JITDUMP_CHECK" "$DUMP" --zone "$ZONE" --perf-script "$WORK/map.script" || fail "perf's names disagree with the dump"
    grep "\[JIT\]" "$WORK/map.report.log" | head -5
    ;;
*)
    fail "unknown test '$TEST'"
    ;;
esac
echo "ok: perf/$TEST"
exit 0
