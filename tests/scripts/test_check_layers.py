#!/usr/bin/env python3
"""scripts/check-layers on tiny trees made here: a clean one passes, and each
rule fails on a tree that breaks it, naming the rule and the includes.

usage: tests/scripts/test_check_layers.py SCRIPT   (ctest: scripts/check-layers-rules)
"""
import os
import subprocess
import sys
import tempfile

# low/ is a library under high/; high links low. mid/ is an INTERFACE library.
CLEAN = {
    "CMakeLists.txt": "add_subdirectory(low)\nadd_subdirectory(mid)\nadd_subdirectory(high)\n",
    "low/CMakeLists.txt": "file(GLOB LOW_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)\n"
                          "add_library(low STATIC ${LOW_SOURCES})\n",
    "low/a.h": "int low_a(void);\n",
    "low/a.c": '#include "low/a.h"\n#include "low/b.h"\nint low_a(void) { return low_b(); }\n',
    "low/b.h": "int low_b(void);\n",
    "low/b.c": '#include "low/b.h"\n#include "low/layout.h"\nint low_b(void) { return 1; }\n',
    "low/layout.h": "#define LOW_SIZE 8\n",
    "mid/CMakeLists.txt": "add_library(mid INTERFACE)\ntarget_link_libraries(mid INTERFACE low)\n",
    "mid/abi.h": '#include "low/a.h"\n',
    "high/CMakeLists.txt": "add_library(high STATIC h.c)\n"
                           "target_link_libraries(high\n  PUBLIC mid # through it, low\n  PRIVATE m)\n",
    "high/h.c": '#include "mid/abi.h"\n#include "low/a.h"\nint h(void) { return low_a(); }\n',
}


def run(script, files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as fh:
                fh.write(text)
        p = subprocess.run([sys.executable, script, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def expect(script, name, files, status, *wanted):
    code, out = run(script, files)
    missing = [w for w in wanted if w not in out]
    if code != status or missing:
        print(f"FAIL {name}: exit {code} (wanted {status}), missing {missing}\n{out}")
        return False
    print(f"ok   {name}")
    return True


def main():
    script = sys.argv[1]
    ok = expect(script, "clean tree", CLEAN, 0, "check-layers: clean")
    # low includes a header of high, which it does not link (and a folder cycle)
    upward = dict(CLEAN)
    upward["low/b.c"] = '#include "low/b.h"\n#include "high/h.h"\nint low_b(void) { return 1; }\n'
    upward["high/h.h"] = "int h(void);\n"
    ok &= expect(script, "include without link", upward, 1,
                 "FAILED rule 'include without link': low includes headers of high but does not link it",
                 'low/b.c includes "high/h.h"', "FAILED rule 'folder cycle'")
    # a PRIVATE link does not pass on: top links high, which links m privately and mid publicly
    private = dict(CLEAN)
    private["high/CMakeLists.txt"] = "add_library(high STATIC h.c)\ntarget_link_libraries(high PRIVATE mid)\n"
    private["CMakeLists.txt"] += "add_subdirectory(top)\n"
    private["top/CMakeLists.txt"] = "add_library(top STATIC t.c)\ntarget_link_libraries(top PUBLIC high)\n"
    private["top/t.c"] = '#include "low/a.h"\n'
    ok &= expect(script, "private links do not pass on", private, 1,
                 "FAILED rule 'include without link': top includes headers of low but does not link it")
    # a.c includes b.h and b.c includes a.h, the second through a header without a .c
    circle = dict(CLEAN)
    circle["low/layout.h"] = '#include "low/a.h"\n#define LOW_SIZE 8\n'
    ok &= expect(script, "file circle", circle, 1,
                 "FAILED rule 'file circle': inside low, the files low/a, low/b include each other",
                 'low/a.c includes "low/b.h"', 'low/b.c includes "low/layout.h" -> "low/a.h"')
    # a new folder and library need no edit of the script
    grown = dict(CLEAN)
    grown["CMakeLists.txt"] += "add_subdirectory(extra/sub)\n"
    grown["extra/sub/CMakeLists.txt"] = "add_library(extra_sub STATIC s.c)\n"
    grown["extra/sub/s.c"] = '#include "low/a.h"\n'
    ok &= expect(script, "new library", grown, 1,
                 "FAILED rule 'include without link': extra_sub includes headers of low but does not link it")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
