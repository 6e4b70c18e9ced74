#!/usr/bin/env bash
# scripts/bench-yardstick on a fake Are We Fast Yet tree this test writes: one benchmark
# whose harnesses (SOM, Lua, JavaScript) print fixed per-iteration times, so the peak
# table's times, ratios and two target verdicts are exact; the whole-process table is
# real timing, so only its shape is checked. Also: exit 2 without --awfy, with a missing
# directory, with one that is no checkout, with an unknown benchmark; exit 1 with the
# harness's stderr when a run fails or prints no iteration lines. Nothing is installed
# (--no-install); a yardstick missing on this machine is left out with --no-*.
# usage: test_bench_yardstick.sh SCRIPT STVM
set -u
script=$1 stvm=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS TEXT ARGS...: the script exits STATUS and prints TEXT (stdout or stderr).
expect() {
    local want=$1 text=$2 out rc
    shift 2
    out=$("$script" --no-install "$@" 2>&1); rc=$?
    [[ $rc == "$want" ]] || { fail "$* exited $rc, wanted $want"; echo "$out"; return; }
    grep -qF -- "$text" <<< "$out" || { fail "$*: no '$text' in"; echo "$out"; }
}

expect 2 "--awfy DIR is required" --stvm "$stvm"
expect 2 "no such directory" --awfy "$tmp/nowhere" --stvm "$stvm"
mkdir -p "$tmp/empty"
expect 2 "is not a checkout of smarr/are-we-fast-yet" --awfy "$tmp/empty" --stvm "$stvm"

# The fake checkout: the benchmark list in rebench.conf's form, inner count 7 (every
# harness refuses another); Broken fails on stvm, Garbled prints no iteration lines.
a=$tmp/awfy
mkdir -p "$a/benchmarks/SOM" "$a/benchmarks/Lua" "$a/benchmarks/JavaScript"
expect 2 "is not a checkout of smarr/are-we-fast-yet: it has no rebench.conf" --awfy "$a" --stvm "$stvm"
touch "$a/rebench.conf" "$a/benchmarks/SOM/Harness.som"
expect 2 "it has no benchmarks/SOM/Core/" --awfy "$a" --stvm "$stvm"
for d in Core CD DeltaBlue Havlak Json NBody Richards; do mkdir "$a/benchmarks/SOM/$d"; done
expect 2 "has no benchmarks/Lua/harness.lua" --awfy "$a" --stvm "$stvm"
cat > "$a/rebench.conf" <<'EOF'
benchmark_suites:
    steady-som:
        location: benchmarks/SOM
        benchmarks: &BENCHMARKS
            - Tiny:
                extra_args: 7

            - Broken:
                extra_args: 7
            - Garbled:
                extra_args: 7
    steady-js:
        benchmarks: *BENCHMARKS
EOF
cat > "$a/benchmarks/SOM/Harness.som" <<'EOF'
Harness = (
    run: args = (
        | name iter inner |
        name := args at: 2.
        iter := (args at: 3) asInteger.
        inner := (args at: 4) asInteger.
        inner = 7 ifFalse: [ self error: 'wrong inner count' ].
        name = 'Broken' ifTrue: [ self error: 'broken on purpose' ].
        1 to: iter do: [:i |
            name = 'Garbled'
                ifTrue: [ 'nonsense' println ]
                ifFalse: [ (name + ': iterations=1 runtime: 3000us') println ] ]
    )
)
EOF
cat > "$a/benchmarks/Lua/harness.lua" <<'EOF'
local name, iter, inner = arg[1], tonumber(arg[2]), tonumber(arg[3])
if inner ~= 7 then io.stderr:write("wrong inner count\n") os.exit(3) end
local t = jit and 2500 or 20000
for _ = 1, iter do print(("%s: iterations=1 runtime: %dus"):format(name, t)) end
EOF
cat > "$a/benchmarks/JavaScript/harness.js" <<'EOF'
const [name, iter, inner] = process.argv.slice(2);
if (+inner !== 7) { process.stderr.write('wrong inner count\n'); process.exit(3); }
for (let i = 0; i < +iter; i++) process.stdout.write(`${name}: iterations=1 runtime: 1000us\n`);
EOF

expect 2 "no benchmark named 'Nope'" --awfy "$a" --stvm "$stvm" --only Nope

# A missing yardstick names its Debian package: a PATH with only what the script needs
# before it looks for the VMs.
mkdir "$tmp/bin"
for t in bash dirname awk; do ln -s "$(command -v "$t")" "$tmp/bin/$t"; done
out=$(PATH=$tmp/bin "$script" --no-install --awfy "$a" --stvm "$stvm" --no-luajit --no-lua 2>&1); rc=$?
[[ $rc == 2 ]] || fail "without node: exit $rc, wanted 2"
grep -qF "node is not installed: install the Debian package nodejs" <<< "$out" || fail "without node: '$out'"

# Which yardsticks this machine has; the expected peak row follows.
args=(--awfy "$a" --stvm "$stvm" --baseline-stvm "$stvm" --quick --only tiny)
times=(3.0 3.0) ratios=()
declare -A has=()
for y in luajit:luajit:2.5:1.20 node:node:1.0:3.00 lua:lua5.4:20.0:0.15; do
    IFS=: read -r opt cmd t r <<< "$y"
    if command -v "$cmd" >/dev/null; then has[$opt]=1; times+=("$t"); ratios+=("$r")
    else args+=("--no-$opt"); echo "note: $cmd is not installed: left out"; fi
done
ratios+=(1.00)
out=$("$script" --no-install "${args[@]}" 2>&1); rc=$?
echo "$out"
[[ $rc == 0 ]] || fail "a run of Tiny exited $rc, wanted 0"
grep -q '^peak: median ms of the last 2 of 4 iterations' <<< "$out" || fail "no peak table title"
grep -q '^whole process: least CPU ms (user + system) of 1 run(s)' <<< "$out" || fail "no whole-process table title"
peak_row=$(awk '$1 == "Tiny" { print; exit }' <<< "$out" | tr -s ' ')
want="Tiny ${times[*]} ${ratios[*]}"
[[ $peak_row == "$want" ]] || fail "peak row '$peak_row', wanted '$want'"
whole_row=$(awk '$1 == "Tiny" { n++ } n == 2 { print; exit }' <<< "$out")
nf=$(awk '{ print NF }' <<< "$whole_row")
(( nf == 1 + ${#times[@]} + ${#ratios[@]} )) || fail "whole-process row '$whole_row': $nf fields"
awk '{ for (i = 2; i <= NF; i++) if ($i !~ /^[0-9]+(\.[0-9]+)?$/) exit 1 }' <<< "$whole_row" ||
    fail "whole-process row '$whole_row' has a field that is no number"
(( $(grep -c '^geomean' <<< "$out") == 2 )) || fail "not two geomean rows"
if [[ -n ${has[luajit]:-} ]]; then
    grep -Eq "peak: every benchmark <= 1.5x LuaJIT's +worst 1.20x \(Tiny\), 0 of 1 over +met$" <<< "$out" ||
        fail "no met LuaJIT target line"
fi
if [[ -n ${has[node]:-} ]]; then
    grep -Eq "peak: geomean <= 2x node's +3.00x +missed$" <<< "$out" || fail "no missed node target line"
fi
if [[ -n ${has[lua]:-} ]]; then
    grep -Eq "whole process: geomean <= 0.15x Lua 5.4's +[0-9.]+x +(met|missed)$" <<< "$out" ||
        fail "no Lua 5.4 target line"
fi
grep -Eq "whole process: no benchmark slower than the baseline +worst [0-9.]+x \(Tiny\), [01] of 1 over +(met|missed)$" \
    <<< "$out" || fail "no baseline target line"

# Failed runs: exit 1, the harness's stderr shown, the failures listed.
expect 1 "broken on purpose" --awfy "$a" --stvm "$stvm" --quick --only Broken --no-luajit --no-node --no-lua
expect 1 "Broken on stvm (peak, 4 iterations): (exit status" --awfy "$a" --stvm "$stvm" --quick --only Broken \
    --no-luajit --no-node --no-lua
expect 1 "unparsable output: 0 of 4 iteration lines" --awfy "$a" --stvm "$stvm" --quick --only Garbled \
    --no-luajit --no-node --no-lua

(( fails == 0 )) || { echo "$fails check(s) failed"; exit 1; }
echo ok
