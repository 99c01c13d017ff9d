#!/usr/bin/env python3
"""leftovers.py - after CI: list every process the tests left running, and
fail if there is one (issue 22: a wineserver, six px_probe grandchildren
and the private dockerd outlived a CI run).

  tools/leftovers.py [--wait SECONDS]

What counts (environment PX_LEFTOVERS_SCOPE):
  machine   (CI on a fresh machine; the default) every wineserver and Wine
            process (a WINEPREFIX in its environment), the private test
            dockerd (tests/linux/dockerd.sh) and its containerd, every
            process in a job's cgroup ("px-<key>", the Linux backend),
            every px_probe, px_tests, phoenix-executor or PhoenixExecutor
            program, and the NATS test cluster's servers ("--name
            px-nats-...") and network namespaces ("px-nc-...",
            tests/linux/nats_cluster.sh);
  checkout  (a machine shared with other checkouts: tools/ci-repeat.sh)
            only what belongs to this checkout: Wine processes of its
            prefixes (PX_WINEPREFIX, the prefixes tests/win/*.cmake key by
            its build directory, tools/demo.sh's wine-demo) and processes
            whose command line names this checkout.
This process and its ancestors never count. With --wait, what is still
ending (a wineserver's last seconds) gets that long to go.
Exit status: 0 nothing left; 1 something left (each printed: pid, why,
command line).
"""
import hashlib
import os
import sys
import time

# PX_LEFTOVERS_ROOT: another checkout to judge (tests/tools/leftovers_test.sh)
ROOT = os.path.realpath(os.environ.get("PX_LEFTOVERS_ROOT") or
                        os.path.join(os.path.dirname(__file__), ".."))
SCOPE = os.environ.get("PX_LEFTOVERS_SCOPE", "machine")
PROGRAMS = ("px_probe", "px_tests", "phoenix-executor", "PhoenixExecutor",
            "px_pipe_squatter", "phoenixctl")


def read(pid, name):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def ancestors():
    mine, pid = set(), os.getpid()
    while pid > 1:
        mine.add(pid)
        status = read(pid, "status") or b""
        ppid = [l for l in status.split(b"\n") if l.startswith(b"PPid:")]
        pid = int(ppid[0].split()[1]) if ppid else 0
    return mine


def prefixes():
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                         os.path.expanduser("~/.cache"), "phoenix-executor")
    key = hashlib.md5(os.path.join(ROOT, "build/windows-mingw").encode()).hexdigest()[:8]
    p = {f"{cache}/wine-svc-tests-{key}", f"{cache}/wine-verify-{key}",
         f"{cache}/wine-demo"}
    if os.environ.get("PX_WINEPREFIX"):
        p.add(os.environ["PX_WINEPREFIX"])
    return p


def why(pid, ours):
    cmd = read(pid, "cmdline")
    if not cmd:
        return None  # a kernel thread, or gone
    argv = [a.decode(errors="replace") for a in cmd.rstrip(b"\0").split(b"\0")]
    env = read(pid, "environ") or b""
    prefix = next((e[11:].decode(errors="replace") for e in env.split(b"\0")
                   if e.startswith(b"WINEPREFIX=")), None)
    line = " ".join(argv)
    prog = os.path.basename(argv[0].replace("\\", "/"))
    if SCOPE == "checkout":
        if prefix in ours:
            return f"Wine, prefix {prefix}"
        win_root = "Z:" + ROOT.replace("/", "\\")
        if ROOT + "/" in line or win_root + "\\" in line:
            return "runs from this checkout"
        return None
    if prog.startswith("wineserver"):
        return "wineserver"
    if ("dockerd" in prog or "containerd" in prog) and "px-test-docker" in line:
        return "the private test dockerd"
    if prog.startswith("nats-server") and "px-nats-" in line:
        return "a server of the NATS test cluster"
    if any(prog.startswith(p) for p in PROGRAMS) or \
            any(os.path.basename(a.replace("\\", "/")).startswith(("px_probe", "PhoenixExecutor"))
                for a in argv[:2]):
        return "a test, service or job program"
    if prefix:
        return f"Wine, prefix {prefix}"
    cg = (read(pid, "cgroup") or b"").decode(errors="replace")
    for part in cg.replace(":", "/").split("/"):
        if part.startswith("px-"):
            return f"in a job's cgroup ({part})"
    return None


def scan(mine, ours):
    left = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in mine:
            continue
        w = why(d, ours)
        if w:
            cmd = (read(d, "cmdline") or b"").replace(b"\0", b" ").decode(errors="replace")
            left.append((int(d), w, cmd[:200]))
    return left


def main():
    wait = float(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "--wait" else 0
    mine, ours = ancestors(), prefixes()
    end = time.time() + wait
    while True:
        left = scan(mine, ours)
        if not left or time.time() >= end:
            break
        time.sleep(1)
    for pid, w, cmd in sorted(left):
        print(f"leftover: pid {pid} ({w}): {cmd}")
    netns = []
    if SCOPE == "machine" and os.path.isdir("/run/netns"):
        netns = sorted(n for n in os.listdir("/run/netns") if n.startswith("px-nc-"))
    for n in netns:
        print(f"leftover: network namespace {n} (the NATS test cluster)")
    if netns:
        print(f"leftovers.py: {len(netns)} network namespace(s) left (scope: {SCOPE})")
    if left:
        print(f"leftovers.py: {len(left)} process(es) left running (scope: {SCOPE})")
    if left or netns:
        return 1
    print(f"leftovers.py: no process left behind (scope: {SCOPE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
