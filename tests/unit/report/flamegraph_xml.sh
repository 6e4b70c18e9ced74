#!/usr/bin/env bash
# tests/unit/report/flamegraph_xml.sh — every SVG test_report_flamegraph
# writes must parse as XML (python3's minidom, a real XML parser: an
# unescaped '<' or a byte that is not UTF-8 fails it), and the names that
# needed escaping or repair must read back as the profile had them.
#
#   flamegraph_xml.sh TEST_REPORT_FLAMEGRAPH
set -u
BIN=${1:?usage: flamegraph_xml.sh TEST_REPORT_FLAMEGRAPH}
command -v python3 >/dev/null || { echo "test skipped: python3 is not installed (apt-get install python3)"; exit 0; }
WORK=$(mktemp -d /tmp/flamegraph-xml.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$BIN" "$WORK" >"$WORK/log" 2>&1 || { cat "$WORK/log"; echo "FAIL: test_report_flamegraph failed"; exit 1; }
python3 - "$WORK" <<'PY'
import glob, os, re, sys, xml.dom.minidom

work = sys.argv[1]
files = sorted(glob.glob(os.path.join(work, '*.svg')))
want_files = {'tree.svg', 'escape.svg', 'utf8.svg', 'badutf8.svg', 'tiny.svg', 'empty.svg'}
missing = want_files - {os.path.basename(f) for f in files}
if missing:
    sys.exit(f'FAIL: no {sorted(missing)} written')

def names(doc):
    out = []
    for g in doc.getElementsByTagName('g'):
        if g.getAttribute('class').startswith('f '):
            t = g.getElementsByTagName('title')[0].firstChild.data
            out.append(re.sub(r' \(\d+ samples, [0-9.]+%\)$', '', t))
    return out

ok = True
for f in files:
    try:
        doc = xml.dom.minidom.parse(f)
    except Exception as e:
        print(f'FAIL: {os.path.basename(f)} is not well-formed XML: {e}')
        ok = False
        continue
    n = names(doc)
    print(f'{os.path.basename(f)}: well-formed, {len(n)} frames')
    if os.path.basename(f) == 'escape.svg':
        for want in ('Integer>><', 'Foo>>a&b:"c" \'d\'', ']]></script><script>alert(1)</script>'):
            if want not in n:
                print(f'FAIL: {want!r} does not read back from escape.svg (got {n})'); ok = False
        scripts = doc.getElementsByTagName('script')
        if len(scripts) != 1:
            print(f'FAIL: escape.svg has {len(scripts)} scripts, not 1'); ok = False
    if os.path.basename(f) == 'badutf8.svg' and 'bad\ufffd name' not in n:
        print(f'FAIL: the stray byte is not U+FFFD in badutf8.svg (got {n})'); ok = False
    if os.path.basename(f) == 'utf8.svg' and 'Größe>>überall' not in n:
        print(f'FAIL: the UTF-8 name does not read back from utf8.svg (got {n})'); ok = False
sys.exit(0 if ok else 1)
PY
