#!/usr/bin/env bash
# tests/vmprofd/flamegraph_test.sh — vmprofd's flame graph and callers
# section, end to end: a real stvm running Richards under vmprofd.
#
#   flamegraph_test.sh
#
# 1. vmprofd --callers -o out.svg --folded out.folded -o report.txt -- stvm
#    … BenchRunner Richards: check_flamegraph_svg.py judges the SVG (XML,
#    Richards' frames, counts = the folded stacks', widths, order, colours)
#    and the callers section (= the folded stacks' callers).
# 2. A lone output's format, either side of -o: `--format flamegraph -o F`
#    and `-o F --format flamegraph` both write one SVG to F and nothing on
#    stdout; `--format pprof -o F` writes a gzipped profile (it was refused).
# 3. Headless Chromium renders the SVG (a screenshot with the frames'
#    colours) and runs its script (flamegraph_selftest.js: hover, zoom,
#    reset, search, Ctrl-F, Escape). Skipped, saying why, only when
#    Chromium is missing or cannot start at all.
#
# Environment (CMakeLists.txt): VMPROFD, STVM, PPROF_CHECK, SOURCE_DIR.
set -u

WORK=$(mktemp -d /tmp/vmprofd-flamegraph.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CP="$SOURCE_DIR/smalltalk/bench"
HERE="$SOURCE_DIR/tests/vmprofd"

fail() {
    echo "FAIL: $*"
    for f in "$WORK"/*.err; do
        [ -s "$f" ] && { echo "--- $f"; tail -20 "$f"; }
    done
    exit 1
}

command -v python3 >/dev/null || { echo "test skipped: python3 is not installed (apt-get install python3)"; exit 0; }

# -- 1. The flame graph and the callers of one run -----------------------------
# Richards 30: ~0.7 s, ~900 samples at 1400 Hz, stacks ~20 frames deep.
"$VMPROFD" --quiet --callers -o "$WORK/out.svg" --folded "$WORK/out.folded" -o "$WORK/report.txt" -- \
    "$STVM" -cp "$CP" BenchRunner Richards 30 >"$WORK/run.out" 2>"$WORK/run.err" ||
    fail "vmprofd exited with status $?"
[ -s "$WORK/out.svg" ] || fail "vmprofd wrote no out.svg"
python3 "$HERE/check_flamegraph_svg.py" "$WORK/out.svg" "$WORK/out.folded" "$WORK/report.txt" ||
    fail "the flame graph or the callers section is wrong"

# -- 2. --format before or after the one -o ------------------------------------
for order in before after; do
    if [ $order = before ]; then
        args=(--format flamegraph -o "$WORK/$order.out")
    else
        args=(-o "$WORK/$order.out" --format flamegraph)
    fi
    "$VMPROFD" --quiet "${args[@]}" -- "$STVM" -cp "$CP" BenchRunner Richards 2 >"$WORK/$order.stdout" \
        2>"$WORK/$order.err" || fail "vmprofd ${args[*]} exited with status $?"
    grep -q "samples in the VM" "$WORK/$order.stdout" && fail "vmprofd ${args[*]} also wrote a report on stdout"
    head -c 200 "$WORK/$order.out" | grep -q "<svg" || fail "vmprofd ${args[*]} did not write an SVG"
    python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$WORK/$order.out" ||
        fail "the SVG of vmprofd ${args[*]} is not XML"
done
"$VMPROFD" --quiet --format pprof -o "$WORK/p.out" -- "$STVM" -cp "$CP" BenchRunner Richards 30 \
    >"$WORK/pprof.stdout" 2>"$WORK/pprof.err" || fail "vmprofd --format pprof -o FILE exited with status $?"
"$PPROF_CHECK" "$WORK/p.out" "RichardsScheduler>>schedule" >"$WORK/pprof_check.out" 2>&1 ||
    fail "--format pprof -o FILE wrote no valid pprof: $(tail -3 "$WORK/pprof_check.out")"
echo "ok: --format X -o F and -o F --format X write the same single output"

# -- 3. Chromium renders it and runs its script --------------------------------
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "test skipped: no Chromium here (apt-get install chromium); the SVG was checked, not its rendering"
    exit 0
fi
chrome() {
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$WORK/chrome" \
        "$@" 2>>"$WORK/chrome.log"
}
if ! chrome --dump-dom about:blank >"$WORK/blank.html" || ! grep -q "<body" "$WORK/blank.html"; then
    echo "test skipped: $browser cannot start here: $(tail -2 "$WORK/chrome.log" | tr '\n' ' ')"
    exit 0
fi
chrome --screenshot="$WORK/shot.png" --window-size=1200,900 "file://$WORK/out.svg" >/dev/null
[ -s "$WORK/shot.png" ] || { tail -5 "$WORK/chrome.log"; fail "Chromium wrote no screenshot"; }
# the SVG's own script first, then the self-test's, as the last element
python3 - "$WORK/out.svg" "$HERE/flamegraph_selftest.js" "$WORK/selftest.svg" <<'PY'
import sys
svg, js = open(sys.argv[1], encoding='utf-8').read(), open(sys.argv[2], encoding='utf-8').read()
end = svg.rindex('</svg>')
open(sys.argv[3], 'w', encoding='utf-8').write(svg[:end] + '<script><![CDATA[\n' + js + ']]></script>\n' + svg[end:])
PY
chrome --dump-dom "file://$WORK/selftest.svg" >"$WORK/selftest.xml"
python3 "$HERE/check_flamegraph_svg.py" "$WORK/out.svg" "$WORK/out.folded" "$WORK/report.txt" \
    --png "$WORK/shot.png" --selftest "$WORK/selftest.xml" >"$WORK/check.out" || {
    cat "$WORK/check.out"
    fail "Chromium's rendering or the script's behaviour is wrong"
}
grep -E '^(screenshot|self-test)' "$WORK/check.out"
echo "ok"
