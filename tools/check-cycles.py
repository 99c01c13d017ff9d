#!/usr/bin/env python3
"""check-cycles.py - no two product source files call each other.

Issue 25 broke the two-file circles (pool.c <-> spawn.c, the container
backend <-> its pool, the attestation probe's files, mcp.c <->
mcp_tools.c): a pair of files that each need the other is one mechanism
cut in two, or a helper living in the wrong file. This keeps them broken,
from the objects the build really made: for every product object of the
build (its compile commands; tests, benches and the release-check tree are
not product), the symbols it defines and the ones it needs (nm); a pair
of sources where each needs a symbol the other defines is a finding.

  check-cycles.py BUILD_DIR NM      check a build tree (ctest tools.cycles)
  check-cycles.py --selftest CC NM  the detector finds a planted circle

Exit status: 0 none, 1 findings (listed with the symbols), 2 usage.
"""
import collections
import json
import os
import shlex
import subprocess
import sys
import tempfile


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def symbols(nm, obj):
    """(defined, undefined) external symbols of one object file."""
    out = subprocess.run([nm, obj], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBR":
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
    return defined, undefined


def circles(nm, objects):
    """[(src_a, src_b, syms a needs of b, syms b needs of a)] for objects:
    a list of (object path, source path)."""
    owner = collections.defaultdict(set)
    needs = {}
    for obj, src in objects:
        d, u = symbols(nm, obj)
        for s in d:
            owner[s].add(src)
        needs[src] = u
    uses = collections.defaultdict(lambda: collections.defaultdict(set))
    for src, u in needs.items():
        for s in u:
            for o in owner.get(s, ()):
                if o != src:
                    uses[src][o].add(s)
    found = []
    for a in sorted(uses):
        for b in sorted(uses[a]):
            if a < b and a in uses.get(b, {}):
                found.append((a, b, sorted(uses[a][b]), sorted(uses[b][a])))
    return found


def product_objects(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    objects = []
    for e in commands:
        args = e.get("arguments") or shlex.split(e["command"])
        out = e.get("output") or args[args.index("-o") + 1]
        obj = os.path.normpath(os.path.join(e["directory"], out))
        rel = os.path.relpath(obj, build)
        if rel.startswith(("tests", "bench", "release-check")):
            continue
        if os.path.exists(obj):
            objects.append((obj, os.path.relpath(e["file"], REPO)))
    return objects


def selftest(cc, nm):
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {"a.c": "int b(void);\nint a(void) { return b(); }\n",
                "b.c": "int a(void);\nint b(void) { return a() + 1; }\n",
                "c.c": "int a(void);\nint c(void) { return a(); }\n"}
        objects = []
        for name, text in srcs.items():
            src = os.path.join(tmp, name)
            with open(src, "w") as f:
                f.write(text)
            subprocess.run([cc, "-c", src, "-o", src + ".o"], check=True)
            objects.append((src + ".o", name))
        found = circles(nm, objects)
        if [(a, b) for a, b, _, _ in found] != [("a.c", "b.c")]:
            print("check-cycles selftest: FAIL, found", found)
            return 1
    print("check-cycles selftest: ok (a.c <-> b.c found, c.c -> a.c not)")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--selftest":
        return selftest(argv[2], argv[3])
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    objects = product_objects(argv[1])
    if not objects:
        print("check-cycles: no product object in", argv[1])
        return 1
    found = circles(argv[2], objects)
    for a, b, ab, ba in found:
        print(f"{a} <-> {b}: {a} needs {', '.join(ab)}; "
              f"{b} needs {', '.join(ba)}")
    print(f"check-cycles: {len(objects)} product objects, "
          f"{len(found)} two-file circle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
