# Shared by the scripts in scripts/: dependency installation, building, and
# running benchmarks (bench-table, bench-jit).
# Sourced, not run.

STVM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build and the tests need.
STVM_PACKAGES=(build-essential cmake pkg-config libgmp-dev libcmocka-dev
    libelf-dev libdw-dev libunwind-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libcapstone-dev
    systemtap-sdt-dev bpftrace clang libbpf-dev bpftool chromium linux-perf python3
    lua5.4 golang-go libmicrohttpd-dev curl) # lua5.4: scripts/bench-startup's yardstick; golang-go: go tool pprof, the real client in tests;
    # libmicrohttpd-dev: vmprofd serve's HTTP; curl: its tests

stvm_install_deps() {
    local missing=()
    for p in "${STVM_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing missing Debian packages: ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then sudo=(sudo); else
            echo "error: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
            return 1
        fi
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# stvm_build DIR [cmake args…]: configure once, then an incremental build.
stvm_build() {
    local dir=$1
    shift
    # A configure that failed (a package missing) leaves a cache but no Makefile;
    # the next run must configure again, not build nothing.
    if [ ! -f "$dir/CMakeCache.txt" ] || { [ ! -f "$dir/Makefile" ] && [ ! -f "$dir/build.ninja" ]; }; then
        cmake -S "$STVM_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null || return 1
    fi
    cmake --build "$dir" -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]|^Consolidate|^-- ' || true
    return "${PIPESTATUS[0]}"
}

# ---- benchmarks: shared by scripts/bench-table and scripts/bench-jit ----

# The self-checking workloads of smalltalk/bench/ that BenchRunner runs, in table order.
STVM_BENCHMARKS=(Fibonacci Sieve Towers Queens Permute Bounce List Storage
                 Mandelbrot NBody Richards DeltaBlue Json Havlak)

# stvm_bench_name NAME: prints the benchmark called NAME (case ignored); fails if none is.
stvm_bench_name() {
    local b
    for b in "${STVM_BENCHMARKS[@]}"; do
        if [[ ${b,,} == "${1,,}" ]]; then
            printf '%s\n' "$b"
            return 0
        fi
    done
    return 1
}

# stvm_bench_run FILES STVM NAME RUNS INNER TIMEOUT [STVM-FLAGS...]
#   Runs  STVM STVM-FLAGS -cp core:bench BenchRunner NAME RUNS [INNER]  (an empty INNER:
#   the benchmark's default) with a time-out of TIMEOUT seconds, stdout in FILES.out and
#   stderr in FILES.err, and writes the runtimes of the outer iterations it reported, in
#   microseconds, sorted, to FILES.times, and the CPU seconds the whole run took (user
#   and system, start-up included) to FILES.cpu. Sets STVM_BENCH_STATUS to "ok" or "FAILED
#   (reason)": failed result check, exit status, time-out, fewer iterations reported than
#   RUNS. Returns 0 when ok, 1 when failed. The core library and benchmarks are those
#   of STVM_BENCH_TREE (default: this tree), so an older build runs its own.
stvm_bench_run() {
    local files=$1 stvm=$2 name=$3 runs=$4 inner=$5 timeout_s=$6
    shift 6
    local args=(BenchRunner "$name" "$runs")
    [[ -n $inner ]] && args+=("$inner")
    local TIMEFORMAT='%3U %3S'
    { time timeout --kill-after=10 "$timeout_s" "$stvm" "$@" \
        -cp "${STVM_BENCH_TREE:-$STVM_ROOT}/smalltalk/core:${STVM_BENCH_TREE:-$STVM_ROOT}/smalltalk/bench" "${args[@]}" \
        > "$files.out" 2> "$files.err" < /dev/null ; } 2> "$files.time"
    local rc=$?
    awk '{ printf "%.3f\n", $1 + $2 }' "$files.time" > "$files.cpu"

    awk -v name="$name" '$1 == name ":" && $2 == "iteration" && $4 == "runtime" && $5 ~ /^[0-9]+us$/ {
            sub(/us$/, "", $5); print $5 }' "$files.out" | sort -n > "$files.times"
    local n
    n=$(wc -l < "$files.times")

    STVM_BENCH_STATUS=ok
    if (( rc == 124 || rc == 137 )); then
        STVM_BENCH_STATUS="FAILED (timeout after ${timeout_s}s)"
    elif grep -q "FAILED result check" "$files.err"; then
        STVM_BENCH_STATUS="FAILED (result check)"
    elif (( rc != 0 )); then
        STVM_BENCH_STATUS="FAILED (exit status $rc)"
    elif (( n != runs )); then
        STVM_BENCH_STATUS="FAILED ($n of $runs iterations reported)"
    fi
    [[ $STVM_BENCH_STATUS == ok ]]
}

# stvm_bench_tails FILES LABEL: the last lines of a run's stderr and stdout, for a report.
stvm_bench_tails() {
    echo "--- $2: last lines of stderr"
    tail -n 5 "$1.err"
    echo "--- $2: last lines of stdout"
    tail -n 3 "$1.out"
}
