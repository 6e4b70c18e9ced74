#!/usr/bin/env bash
# tests/vmprofd/diff_test.sh — `vmprofd diff` and `vmprofd merge` on real
# profiles: stvm running DiffHot (som/DiffHot.som) under vmprofd, once with
# alpha: as the hot method (80% of the pair's work), once with beta:.
#
#   diff_test.sh text|svg|merge|errors|alloc
#
# text    diff A B: alpha: and beta: are the first two methods, alpha:
#         shrank by 40-75 points, beta: grew by as much; their bytecode
#         ranges sum to their change; rows sorted by |change|; B A flips
#         the signs; A A changes nothing; a plain (gunzipped) .pb reads the
#         same; cpu against wall is refused unless --sample-index samples,
#         which then compares them
# svg     -o d.svg -o d.txt: the table file is stdout's table; the SVG is
#         XML, beta:'s frame red, alpha:'s blue, hover titles with both
#         shares
# merge   merge A B: its sample count is A's plus B's (vmprofd diff reads
#         it), alpha:'s share lies between A's and B's, go tool pprof -top
#         reads it (when Go is installed); mismatched types refused
# alloc   two allocation profiles (--event alloc) of AllocMethods (1:3 by
#         bytes): rows are the allocating methods (the "site" label), 75 and
#         25% (+-6) with their bytecode ranges; cpu against alloc refused
# errors  bad files (missing, not a profile, truncated gzip, unsymbolized,
#         broken ids), other sample types, bad usage: exit 1 or 2 with a
#         message, never a crash
#
# The shares are of CPU time, which two busy loops beside do not change;
# the bounds are wide (the expected changes are about 60 points).
# Environment (CMakeLists.txt): VMPROFD, STVM, SOURCE_DIR.
set -u
what=${1:?usage: diff_test.sh text|svg|merge|errors|alloc}

WORK=$(mktemp -d /tmp/vmprofd-diff.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CP="$SOURCE_DIR/smalltalk/core:$SOURCE_DIR/tests/vmprofd/som"
HERE="$SOURCE_DIR/tests/vmprofd"

fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*.err "$WORK"/*.txt; do
        [ -s "$f" ] && { echo "--- $f"; head -30 "$f"; }
    done
    exit 1
}

# profile NAME HEAVY [vmprofd options]: $WORK/NAME.pb.gz of DiffHot
profile() {
    local name=$1 heavy=$2
    shift 2
    # --no-inline: the rows checked here are alpha:'s and beta:'s own; diffs of
    # inlined rows ("B>>sel (inlined into A>>sel)") are test_inline's
    "$VMPROFD" --quiet "$@" -o "$WORK/$name.pb.gz" -- "$STVM" --no-inline -cp "$CP" DiffHot "$heavy" 800 \
        >"$WORK/$name.out" 2>"$WORK/$name.err" || fail "vmprofd on DiffHot $heavy exited with status $?"
    grep -q "diffhot: done, $heavy heavy" "$WORK/$name.out" || fail "DiffHot $heavy did not finish"
}

# change FILE METHOD: the change column of METHOD's own row
change() {
    awk -v m="$2" '$4 == m && /pp  [^ ]/ { sub(/pp$/, "", $3); print $3; exit }' "$1"
}
# methods FILE: the method rows' names, in order (range rows are indented)
methods() {
    grep -E '^ *-?[0-9.]+%  +[0-9.]+%  +[-+][0-9.]+pp  [^ ]' "$1" | awk '{ print $4 }'
}
between() { # between X LO HI
    awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x + 0 >= lo && x + 0 <= hi) }'
}

# expect_status WANT PATTERN ARGS...: vmprofd ARGS exits WANT, stderr matches PATTERN
expect_status() {
    local want=$1 pattern=$2
    shift 2
    "$VMPROFD" "$@" >"$WORK/x.stdout" 2>"$WORK/x.stderr"
    local got=$?
    [ $got -eq "$want" ] || fail "vmprofd $* exited $got, not $want: $(head -3 "$WORK/x.stderr")"
    grep -qE -- "$pattern" "$WORK/x.stderr" || fail "vmprofd $* said '$(head -3 "$WORK/x.stderr")', not /$pattern/"
    [ "$want" -eq 0 ] || [ ! -s "$WORK/x.stdout" ] || fail "vmprofd $* wrote on stdout while failing"
}

case $what in
text)
    profile A alpha
    profile B beta
    "$VMPROFD" diff "$WORK/A.pb.gz" "$WORK/B.pb.gz" >"$WORK/ab.txt" 2>"$WORK/ab.err" || fail "diff A B exited $?"
    grep -q "^base $WORK/A.pb.gz: [0-9]* samples, cpu " "$WORK/ab.txt" || fail "the header does not name A"
    grep -q "^new  $WORK/B.pb.gz: [0-9]* samples, cpu " "$WORK/ab.txt" || fail "the header does not name B"
    top2=$(methods "$WORK/ab.txt" | head -2 | sort | tr '\n' ' ')
    [ "$top2" = "DiffHot>>alpha: DiffHot>>beta: " ] || fail "the first two methods are '$top2', not alpha: and beta:"
    a=$(change "$WORK/ab.txt" "DiffHot>>alpha:")
    b=$(change "$WORK/ab.txt" "DiffHot>>beta:")
    between "$a" -75 -40 || fail "alpha:'s change is '$a' points, not -75..-40"
    between "$b" 40 75 || fail "beta:'s change is '$b' points, not +40..+75"
    # sorted by |change|, largest first
    grep -E '^ *[0-9.]+%  +[0-9.]+%  +[-+][0-9.]+pp  [^ ]' "$WORK/ab.txt" | awk '
        { c = $3; sub(/pp$/, "", c); c += 0; c = c < 0 ? -c : c; if (NR > 1 && c > last + 1e-9) bad = 1; last = c }
        END { exit bad }' || fail "method rows are not sorted by the size of their change"
    # beta:'s ranges (indented rows after its row) sum to its change
    awk -v m="DiffHot>>beta:" '
        /pp  [^ ]/ { inm = ($4 == m); if (inm) { c = $3; sub(/pp$/, "", c); want = c }; next }
        inm && /pp      [0-9]+->[0-9]+$/ { c = $3; sub(/pp$/, "", c); sum += c; n++ }
        END { d = sum - want; if (n < 2 || d > 0.5 || d < -0.5) { print n " ranges, sum " sum " vs " want; exit 1 } }' \
        "$WORK/ab.txt" >"$WORK/ranges.out" || fail "beta:'s bytecode ranges: $(cat "$WORK/ranges.out")"
    echo "ok: diff A B: alpha: $a points, beta: +$b points, ranges under them"

    "$VMPROFD" diff "$WORK/B.pb.gz" "$WORK/A.pb.gz" >"$WORK/ba.txt" 2>"$WORK/ba.err" || fail "diff B A exited $?"
    between "$(change "$WORK/ba.txt" "DiffHot>>alpha:")" 40 75 || fail "diff B A: alpha: did not grow"
    between "$(change "$WORK/ba.txt" "DiffHot>>beta:")" -75 -40 || fail "diff B A: beta: did not shrink"
    "$VMPROFD" diff "$WORK/A.pb.gz" "$WORK/A.pb.gz" >"$WORK/aa.txt" 2>"$WORK/aa.err" || fail "diff A A exited $?"
    grep -E 'pp  ' "$WORK/aa.txt" | grep -vE '[-+]0\.00pp  ' && fail "diff A A shows a change"
    echo "ok: diff B A flips the signs, diff A A shows none"

    gunzip -c "$WORK/A.pb.gz" >"$WORK/A.pb"
    "$VMPROFD" diff "$WORK/A.pb" "$WORK/B.pb.gz" >"$WORK/plain.txt" 2>"$WORK/plain.err" || fail "diff A.pb exited $?"
    cmp -s <(sed 1d "$WORK/ab.txt") <(sed 1d "$WORK/plain.txt") || fail "a plain .pb diffs differently"
    echo "ok: an uncompressed profile reads the same"

    profile W beta --event wall
    expect_status 1 "different things.*--sample-index samples" diff "$WORK/A.pb.gz" "$WORK/W.pb.gz"
    "$VMPROFD" diff --sample-index samples "$WORK/A.pb.gz" "$WORK/W.pb.gz" >"$WORK/aw.txt" 2>"$WORK/aw.err" ||
        fail "diff --sample-index samples A W exited $?"
    grep -q "own total samples/count" "$WORK/aw.txt" || fail "--sample-index samples did not compare samples"
    between "$(change "$WORK/aw.txt" "DiffHot>>beta:")" 15 90 || fail "cpu A against wall W: beta: did not grow"
    echo "ok: cpu against wall refused, compared by --sample-index samples"
    ;;

svg)
    profile A alpha
    profile B beta
    "$VMPROFD" diff "$WORK/A.pb.gz" "$WORK/B.pb.gz" >"$WORK/stdout.txt" 2>"$WORK/d.err" || fail "diff exited $?"
    "$VMPROFD" diff -o "$WORK/d.svg" "$WORK/A.pb.gz" "$WORK/B.pb.gz" --output "$WORK/d.txt" >"$WORK/o.stdout" \
        2>"$WORK/o.err" || fail "diff -o d.svg -o d.txt exited $?"
    [ -s "$WORK/o.stdout" ] && fail "diff -o wrote on stdout too"
    cmp -s "$WORK/stdout.txt" "$WORK/d.txt" || fail "-o d.txt differs from the table on stdout"
    python3 - "$WORK/d.svg" <<'EOF' || fail "the differential flame graph is wrong"
import re, sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
frames = {}
for g in doc.getElementsByTagName("g"):
    if "f" not in g.getAttribute("class").split() or not g.hasAttribute("data-b"):
        continue
    title = g.getElementsByTagName("title")[0].firstChild.data
    name = title.rsplit(" (", 1)[0]
    m = re.search(r"\((\d+) samples, ([0-9.]+)%; base ([0-9.]+)%, ([-+][0-9.]+) pp\)$", title)
    assert m, "no shares in the title: " + title
    fill = re.search(r"fill:rgb\((\d+),(\d+),(\d+)\)", g.getElementsByTagName("rect")[0].getAttribute("style"))
    assert fill, "no fill on " + name
    w = float(g.getAttribute("data-w"))
    if name not in frames or w > frames[name][0]:
        frames[name] = (w, tuple(int(c) for c in fill.groups()), float(m.group(4)),
                        float(g.getAttribute("data-b")), float(m.group(3)))
for name, want in (("DiffHot>>beta:", "red"), ("DiffHot>>alpha:", "blue")):
    assert name in frames, name + " is not in the flame graph"
    w, (r, g, b), change, base, base_pct = frames[name]
    red = r == 255 and g < 120 and b < 120
    blue = b == 255 and r < 120 and g < 120
    assert (red if want == "red" else blue), "%s is rgb(%d,%d,%d), not %s" % (name, r, g, b, want)
    assert (change > 40) if want == "red" else (change < -40), "%s changed %+.2f pp" % (name, change)
    assert abs(base * 100 - base_pct) < 0.01, "data-b and the title disagree"
print("ok: beta: %s, alpha: %s" % (frames["DiffHot>>beta:"][1], frames["DiffHot>>alpha:"][1]))
EOF
    echo "ok: the SVG is XML, beta: red, alpha: blue, both shares in the titles"
    ;;

merge)
    profile A alpha
    profile B beta
    "$VMPROFD" merge "$WORK/A.pb.gz" "$WORK/B.pb.gz" -o "$WORK/M.pb.gz" 2>"$WORK/m.err" || fail "merge exited $?"
    "$VMPROFD" diff "$WORK/A.pb.gz" "$WORK/B.pb.gz" >"$WORK/ab.txt" 2>"$WORK/ab.err" || fail "diff A B exited $?"
    "$VMPROFD" diff "$WORK/A.pb.gz" "$WORK/M.pb.gz" >"$WORK/am.txt" 2>"$WORK/am.err" || fail "diff A M exited $?"
    na=$(awk '/^base /{ print $3 }' "$WORK/ab.txt")
    nb=$(awk '/^new /{ print $3 }' "$WORK/ab.txt")
    nm=$(awk '/^new /{ print $3 }' "$WORK/am.txt")
    [ -n "$na" ] && [ "$nm" = $((na + nb)) ] || fail "the merged profile has $nm samples, not $na + $nb"
    ca=$(change "$WORK/ab.txt" "DiffHot>>alpha:")
    cm=$(change "$WORK/am.txt" "DiffHot>>alpha:")
    awk -v ab="$ca" -v am="$cm" 'BEGIN { exit !(am < -5 && am > ab + 5) }' ||
        fail "alpha: changes $cm points from A to the merge, not between 0 and $ca"
    echo "ok: merge holds $nm = $na + $nb samples, alpha:'s share between A's and B's"
    if command -v go >/dev/null 2>&1; then
        go tool pprof -top -sample_index=samples "$WORK/M.pb.gz" >"$WORK/go.txt" 2>&1 ||
            fail "go tool pprof failed: $(head -5 "$WORK/go.txt")"
        grep -q "of $nm total" "$WORK/go.txt" || fail "go tool pprof -top does not count $nm samples"
        grep -q "DiffHot>>alpha:" "$WORK/go.txt" && grep -q "DiffHot>>beta:" "$WORK/go.txt" ||
            fail "go tool pprof -top does not show alpha: and beta:"
        echo "ok: go tool pprof -top reads the merge: $nm samples"
    else
        echo "skipped: go not installed (go tool pprof check)"
    fi
    python3 "$HERE/make_pprof.py" alloc "$WORK/alloc.pb.gz"
    expect_status 1 "only profiles of one kind merge" merge "$WORK/A.pb.gz" "$WORK/alloc.pb.gz" -o "$WORK/bad.pb.gz"
    [ -e "$WORK/bad.pb.gz" ] && fail "a refused merge left a file"
    expect_status 2 "at least two" merge "$WORK/A.pb.gz" -o "$WORK/one.pb.gz"
    expect_status 2 "-o MERGED" merge "$WORK/A.pb.gz" "$WORK/B.pb.gz"
    echo "ok: mismatched types and bad usage refused"
    ;;

errors)
    profile A alpha
    for k in alloc unsymbolized badstring badlocation; do python3 "$HERE/make_pprof.py" $k "$WORK/$k.pb.gz"; done
    printf 'not a profile\n' >"$WORK/text.pb.gz"
    head -c 300 "$WORK/A.pb.gz" >"$WORK/cut.pb.gz"
    : >"$WORK/empty.pb"
    expect_status 1 "cannot open .*missing.pb.gz" diff "$WORK/A.pb.gz" "$WORK/missing.pb.gz"
    expect_status 1 "text.pb.gz: not a pprof profile" diff "$WORK/text.pb.gz" "$WORK/A.pb.gz"
    expect_status 1 "cut.pb.gz: truncated gzip" diff "$WORK/A.pb.gz" "$WORK/cut.pb.gz"
    expect_status 1 "empty.pb: empty file" diff "$WORK/A.pb.gz" "$WORK/empty.pb"
    expect_status 1 "unsymbolized" diff "$WORK/A.pb.gz" "$WORK/unsymbolized.pb.gz"
    expect_status 1 "names string 99" diff "$WORK/badstring.pb.gz" "$WORK/A.pb.gz"
    expect_status 1 "names location 7, which it lacks" merge "$WORK/A.pb.gz" "$WORK/badlocation.pb.gz" -o "$WORK/m"
    expect_status 1 "alloc_space/bytes.*no value in common" diff "$WORK/A.pb.gz" "$WORK/alloc.pb.gz"
    expect_status 1 "A.pb.gz has no value 'alloc_space'" diff --sample-index alloc_space "$WORK/alloc.pb.gz" \
        "$WORK/A.pb.gz"
    expect_status 1 "cannot create" diff "$WORK/A.pb.gz" "$WORK/A.pb.gz" -o "$WORK/no/such/dir.txt"
    echo "ok: unreadable, broken and incomparable profiles: exit 1 with the reason"
    "$VMPROFD" diff "$WORK/alloc.pb.gz" "$WORK/alloc.pb.gz" >"$WORK/alloc.txt" 2>&1 || fail "diff of alloc profiles"
    grep -q "own total alloc_space/bytes" "$WORK/alloc.txt" || fail "alloc profiles are not compared by alloc_space"
    grep -q "75.00%    75.00%     +0.00pp  work" "$WORK/alloc.txt" || fail "alloc profile shares wrong"
    echo "ok: two alloc profiles compare by alloc_space"
    expect_status 2 "give two profiles" diff "$WORK/A.pb.gz"
    expect_status 2 "more than two" diff "$WORK/A.pb.gz" "$WORK/A.pb.gz" "$WORK/A.pb.gz"
    expect_status 2 "unknown option '--bogus'" diff --bogus "$WORK/A.pb.gz" "$WORK/A.pb.gz"
    expect_status 2 "needs a value" diff "$WORK/A.pb.gz" "$WORK/A.pb.gz" --sample-index
    "$VMPROFD" diff --help | grep -q "^usage: vmprofd diff" || fail "vmprofd diff --help"
    "$VMPROFD" merge --help | grep -q "^usage: vmprofd merge" || fail "vmprofd merge --help"
    "$VMPROFD" --help | grep -qE "vmprofd diff +BASE NEW" || fail "vmprofd --help does not list diff"
    echo "ok: bad usage exits 2; --help for both"
    ;;
alloc)
    for n in X Y; do
        "$VMPROFD" --quiet --event alloc --alloc-interval 32K -o "$WORK/$n.pb.gz" -- \
            "$STVM" -cp "$CP" AllocMethods 1000000 >"$WORK/$n.out" 2>"$WORK/$n.err" ||
            fail "vmprofd --event alloc on AllocMethods exited with status $?"
    done
    "$VMPROFD" diff "$WORK/X.pb.gz" "$WORK/Y.pb.gz" >"$WORK/xy.txt" 2>"$WORK/xy.err" || fail "diff X Y exited $?"
    grep -q "own total alloc_space/bytes" "$WORK/xy.txt" || fail "allocation profiles not compared by alloc_space"
    share() { awk -v m="$2" '$4 == m && /pp  [^ ]/ { sub(/%$/, "", $1); print $1; exit }' "$1"; }
    between "$(share "$WORK/xy.txt" "AllocMethods>>heavy")" 69 81 || fail "heavy's share is not 75 +- 6%"
    between "$(share "$WORK/xy.txt" "AllocMethods>>light")" 19 31 || fail "light's share is not 25 +- 6%"
    between "$(change "$WORK/xy.txt" "AllocMethods>>heavy")" -6 6 || fail "heavy changed between two equal runs"
    grep -qE '^ *[0-9.]+% +[0-9.]+% +[-+][0-9.]+pp      [0-9]+->[0-9]+$' "$WORK/xy.txt" ||
        fail "no bytecode ranges under the allocating methods"
    methods "$WORK/xy.txt" | grep -q '^\[' && fail "a class pseudo-frame stands where a method should"
    echo "ok: allocation profiles: heavy $(share "$WORK/xy.txt" "AllocMethods>>heavy")%, light $(share "$WORK/xy.txt" "AllocMethods>>light")%"
    profile A alpha
    expect_status 1 "no value in common" diff "$WORK/A.pb.gz" "$WORK/X.pb.gz"
    expect_status 1 "only profiles of one kind merge" merge "$WORK/X.pb.gz" "$WORK/A.pb.gz" -o "$WORK/m.pb.gz"
    "$VMPROFD" merge "$WORK/X.pb.gz" "$WORK/Y.pb.gz" -o "$WORK/xy.pb.gz" 2>"$WORK/mxy.err" || fail "merge X Y exited $?"
    "$VMPROFD" diff "$WORK/X.pb.gz" "$WORK/xy.pb.gz" >"$WORK/xm.txt" 2>"$WORK/xm.err" || fail "diff X XY exited $?"
    between "$(share "$WORK/xm.txt" "AllocMethods>>heavy")" 69 81 || fail "the merge of two alloc profiles: heavy"
    echo "ok: cpu against alloc refused; two alloc profiles merge"
    ;;
*)
    echo "unknown case $what" >&2
    exit 2
    ;;
esac
