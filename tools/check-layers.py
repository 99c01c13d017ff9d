#!/usr/bin/env python3
"""check-layers.py - the build draws the diagram: prove it with the compiler.

The layers (docs/development.md, "Layout") are libraries, each with its
public headers in <folder>/include/px/ and the layers it may use linked
PUBLIC (cmake/PxBuild.cmake, px_layer). This script takes the real compile
command of one source file of every layer from a build's
compile_commands.json and compiles, with exactly those flags, a file that
includes one public header of each layer:

  - a header of a layer it may use (the diagram below, transitively, or its
    own) must compile: the control, which shows the probe works;
  - a header of any other layer must fail, and fail because the compiler
    cannot find it ("px/<header>: No such file"), not for another reason.

So an include that climbs a layer (config including the engine, the codec
including the KB) cannot compile, and a USES added in CMake against the
diagram makes this script fail. A header that does not compile even in its
own layer here (a Windows header on Linux, a Linux one under mingw) is
left out and listed.

    tools/check-layers.py BUILD_DIR

Exit status: 0 when the compiler agrees with the diagram, 1 with every
disagreement listed, 2 usage.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# The diagram: each layer, its folder, its public header folder (None:
# none), and the layers it uses directly.
LAYERS = {
    "px_base": ("base", "base/include", []),
    "px_proto": ("service/proto", "service/proto/include", ["px_base"]),
    "px_config": ("config", "config/include", ["px_proto", "px_base"]),
    "px_kb": ("kb", "kb/include", ["px_base"]),
    "px_sandbox_api": (None, "watchdog/include", ["px_base"]),
    "px_sandbox_linux": ("watchdog/linux", None, ["px_sandbox_api", "px_base"]),
    "px_sandbox_win": ("watchdog/win", "watchdog/win/include",
                       ["px_sandbox_api", "px_base"]),
    "px_sandbox_container": ("watchdog/container", None,
                             ["px_sandbox_api", "px_base"]),
    "px_engine": ("service/engine", "service/engine/include",
                  ["px_sandbox_api", "px_kb", "px_base"]),
    "px_service": ("service", "service/include",
                   ["px_engine", "px_config", "px_kb", "px_proto",
                    "px_sandbox_linux", "px_sandbox_win",
                    "px_sandbox_container", "px_base"]),
    "px_client": ("tools/phoenixctl", None, ["px_proto", "px_base"]),
}


def closure(name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(LAYERS[n][2])
    return seen


def commands(build):
    """layer -> the argument list of one of its sources' compile commands."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    out = {}
    for e in entries:
        m = re.search(r"CMakeFiles/([^/]+)\.dir/", e.get("output", "") or
                      e["command"])
        if m and m.group(1) in LAYERS and m.group(1) not in out:
            args = e.get("arguments") or shlex.split(e["command"])
            out[m.group(1)] = (e["directory"], args)
    return out


def probe_args(args, src, obj):
    """The compile command with the source replaced and no output file."""
    res, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a.endswith((".c", ".o", ".obj")):
            continue
        res.append(a)
    return res + ["-fsyntax-only", src]


def compiles(cmd, header, tmp):
    directory, args = cmd
    src = os.path.join(tmp, "probe.c")
    with open(src, "w") as f:
        f.write('#include "px/%s"\nint px_layer_probe(void);\n' % header)
    r = subprocess.run(probe_args(args, src, None), cwd=directory,
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[0])
        return 2
    build = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmds = commands(build)
    headers = {}  # header -> layer
    for name, (_, inc, _) in LAYERS.items():
        if inc and os.path.isdir(os.path.join(root, inc, "px")):
            for h in sorted(os.listdir(os.path.join(root, inc, "px"))):
                if h.endswith(".h"):
                    headers[h] = name
    built = [n for n in LAYERS if n in cmds]
    if not built:
        print("check-layers: no layer's compile command in %s" % build)
        return 1
    bad, checked, foreign = [], 0, []
    with tempfile.TemporaryDirectory() as tmp:
        # A header must compile in a layer that uses its own (the control
        # of the control): otherwise it is another platform's.
        usable = {}
        for h, owner in headers.items():
            users = [n for n in built if owner in closure(n)]
            ok = bool(users) and compiles(cmds[users[0]], h, tmp)[0]
            usable[h] = ok
            if not ok:
                foreign.append(h)
        for layer in built:
            allowed = closure(layer)
            for h, owner in sorted(headers.items()):
                if not usable[h]:
                    continue
                ok, err = compiles(cmds[layer], h, tmp)
                checked += 1
                if owner in allowed and not ok:
                    bad.append("%s: px/%s (%s, which it uses) does not "
                               "compile:\n%s" % (layer, h, owner, err))
                elif owner not in allowed and ok:
                    bad.append("%s: px/%s (%s) compiles, against the "
                               "diagram" % (layer, h, owner))
                elif owner not in allowed and "px/" + h not in err:
                    bad.append("%s: px/%s (%s) failed, but not as a missing "
                               "header:\n%s" % (layer, h, owner, err))
    for b in bad:
        print(b)
    print("check-layers: %d layers, %d headers, %d includes compiled%s; %s"
          % (len(built), len(headers) - len(foreign), checked,
             (" (another platform's, left out: %s)" % ", ".join(foreign))
             if foreign else "",
             "%d disagreements" % len(bad) if bad else "the compiler agrees "
             "with the diagram"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
