#!/usr/bin/env bash
# scripts/check-paths must fail on a stale path, a stale folder and a stale bare
# C file name, each with its file:line, and pass on the same tree without them.
set -u
script=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/vm/interp" "$tmp/docs"
printf 'int main(void) { return 0; }\n' > "$tmp/vm/interp/interp.c"
printf '# Layout\nThe interpreter is vm/interp/interp.c, in `vm/interp/`.\n' > "$tmp/docs/layout.md"
git -C "$tmp" init -q && git -C "$tmp" add -A || exit 1
out=$("$script" "$tmp") || { echo "FAIL: a clean tree failed: $out"; exit 1; }
printf '/* moved from vm/interp/old.c and vm/jitrt/, see oldname.c */\n' >> "$tmp/vm/interp/interp.c"
out=$("$script" "$tmp"); rc=$?
echo "$out"
[[ $rc == 1 ]] || { echo "FAIL: exit $rc, wanted 1"; exit 1; }
for want in 'vm/interp/interp.c:2: names vm/interp/old.c' 'vm/interp/interp.c:2: names the folder vm/jitrt/' \
            'vm/interp/interp.c:2: names oldname.c' 'check-paths: 3 stale'; do
    grep -qF "$want" <<< "$out" || { echo "FAIL: no line with: $want"; exit 1; }
done
echo "ok"
