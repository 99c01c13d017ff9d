#!/usr/bin/env python3
# compat.py - do real programs behave the same inside a Linux job as outside?
#
# Each program below is a shell script (the job's code) plus a few files.
# It runs twice: inside, as a `run` request to a real phoenix-executor
# daemon started here (runtime sh, fs:write_tmp, as the sandbox's uid), and
# outside, as the same uid (setpriv), same interpreters, in a fresh
# directory that stands for /job (HOME, TMPDIR and cwd point at it). A
# script prints "OUTCOME <key> <value>" lines; the two sets are compared key
# by key. A difference fails the run unless tests/compat/intended.txt lists
# it (program, key pattern, reason: the documented list of intended
# differences, see docs/linux-backend.md). Keys that differ are run again
# both ways (up to twice): a difference that goes away is reported as
# flaky, not failed.
#
#   tests/compat/compat.py --build build/linux-native            (fast set)
#   tests/compat/compat.py --build build/linux-native --set full
#   tests/compat/compat.py --build ... --only cpython-test_socket -v
#
# Needs root (the daemon is root; the outside runs drop to the uid).
# Exit 0: no unlisted difference; 1: differences; 77: cannot run here.
import argparse
import fnmatch
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
UID = GID = 65534
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
WALL_S = 900
SKIP = 77

# --- the programs ------------------------------------------------------------

PYTEST = "/usr/lib/python3.11/test/test_os.py"  # libpython3.11-testsuite

# CPython's own regression tests for the OS surface: one job per module.
CPY_FAST = ["test_pwd", "test_grp", "test_getpass", "test_pty",
            "test_selectors", "test_fcntl", "test_tempfile", "test_posix"]
CPY_FULL = CPY_FAST + [
    "test_os", "test_subprocess", "test_signal", "test_socket", "test_select",
    "test_shutil", "test_pathlib", "test_resource", "test_mmap",
    "test_threading", "test_asyncio.test_events", "test_asyncio.test_subprocess",
    "test_asyncio.test_sock_lowlevel", "test_multiprocessing_spawn",
    "test_multiprocessing_forkserver", "test_concurrent_futures",
    "test_logging", "test_tarfile", "test_time", "test_locale",
    "test_socketserver", "test_httpservers", "test_urllib2_localnet",
    "test_ssl", "test_getpath", "test_sysconfig", "test_venv",
    "test_io", "test_import", "test_compileall"]


def cpython(module):
    script = ("python3 pyunit_driver.py %s > driver.out 2>&1; rc=$?\n"
              "grep -E '^(OUTCOME|DETAIL) ' driver.out\n"
              "echo OUTCOME exit $rc\n") % module
    return {"files": {"pyunit_driver.py": read(os.path.join(HERE, "pyunit_driver.py"))},
            "script": script, "needs": PYTEST, "rerun": "python3 pyunit_driver.py"}


# pip: a venv (ensurepip's bundled wheels), a wheel of a local project
# (zipped by hand: Debian's offline wheels lack `wheel` for bdist_wheel),
# installed with --no-index, its console script run, uninstalled. The
# host's /etc/pip.conf is not inside (/etc is not bound): ignore it outside.
VENV = r'''
step() { name=$1; shift; if "$@" >> steps.log 2>&1; then echo "OUTCOME $name ok"; else echo "OUTCOME $name FAIL"; fi; }
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
step venv python3 -m venv venv
step wheel python3 mkwheel.py
step install venv/bin/pip install --no-index pxdemo-1.0-py3-none-any.whl
echo "OUTCOME run $(venv/bin/pxdemo 2>&1 | tr ' ' _)"
step show venv/bin/pip show -f pxdemo
step uninstall venv/bin/pip uninstall -y pxdemo
step freeze venv/bin/pip freeze --all
'''
MKWHEEL = r'''
import base64, hashlib, zipfile
files = {
    "pxdemo/__init__.py": "def main():\n    import getpass, pathlib, os\n"
        "    print('hello', getpass.getuser(), pathlib.Path.home() == pathlib.Path(os.getcwd()))\n",
    "pxdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pxdemo\nVersion: 1.0\n",
    "pxdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: compat\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "pxdemo-1.0.dist-info/entry_points.txt": "[console_scripts]\npxdemo = pxdemo:main\n",
}
record = []
with zipfile.ZipFile("pxdemo-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append("pxdemo-1.0.dist-info/RECORD,,")
    z.writestr("pxdemo-1.0.dist-info/RECORD", "\n".join(record) + "\n")
'''

# node: an HTTP server on loopback and fetch() from it, plus the runtime's
# view of the user, the home, DNS for localhost, child processes, workers.
NODE_JS = r'''
const http = require("http"), os = require("os"), cp = require("child_process");
const dns = require("dns"), fs = require("fs"), path = require("path");
const { Worker } = require("worker_threads");
const out = (k, v) => console.log("OUTCOME " + k + " " + v);
async function main() {
  const srv = http.createServer((req, res) => res.end("pong " + req.url));
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const res = await fetch("http://localhost:" + srv.address().port + "/x");
  out("http_fetch", res.status + "_" + (await res.text()).replace(/ /g, "_"));
  srv.close();
  const s6 = http.createServer((q, r) => r.end("six"));
  await new Promise((r) => s6.listen(0, "::1", r));
  const r6 = await fetch("http://[::1]:" + s6.address().port + "/");
  out("http_ipv6", await r6.text());
  s6.close();
  out("userinfo", os.userInfo().username);
  out("homedir_is_HOME", os.homedir() === process.env.HOME);
  out("tmpdir_writable", fs.mkdtempSync(path.join(os.tmpdir(), "x-")) !== "");
  out("id_un", cp.execSync("id -un").toString().trim());
  const a = await dns.promises.lookup("localhost", { family: 4 });
  out("dns_localhost", a.address);
  out("cpus_positive", os.cpus().length > 0);
  out("interfaces_has_lo", Object.keys(os.networkInterfaces()).includes("lo"));
  const w = new Worker("require('worker_threads').parentPort.postMessage(6*7)", { eval: true });
  out("worker", await new Promise((r) => w.on("message", r)));
  const c = cp.spawnSync(process.execPath, ["-e", "process.kill(process.pid, 'SIGTERM')"]);
  out("child_sigterm", c.signal);
}
main().catch((e) => { out("exception", String(e).replace(/ /g, "_")); process.exitCode = 1; });
'''

# make + cc: a small C project whose test exercises processes, pipes,
# threads, signals, timers, mmap, a pty, sockets on loopback and getpwuid.
C_MAIN = r'''
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <pty.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static volatile sig_atomic_t got;
static void on_alarm(int s) { (void)s; got = 1; }
static void *thr(void *a) { return (char *)a + 1; }
static const char *ok(int c) { return c ? "ok" : "FAIL"; }
int main(void) {
  int p[2], m, s, l, c, a;
  char buf[8] = "";
  pid_t pid;
  pthread_t t;
  void *r;
  struct passwd *pw = getpwuid(getuid());
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  struct itimerspec its = {{0, 0}, {0, 20000000}};
  timer_t tm;
  struct sigevent sev;
  printf("OUTCOME getpwuid %s\n", pw ? pw->pw_name : "none");
  pipe(p);
  pid = fork();
  if (pid == 0) { write(p[1], "hi", 2); _exit(7); }
  read(p[0], buf, 2);
  waitpid(pid, &s, 0);
  printf("OUTCOME fork_pipe %s\n", ok(WEXITSTATUS(s) == 7 && !strcmp(buf, "hi")));
  pthread_create(&t, NULL, thr, buf);
  pthread_join(t, &r);
  printf("OUTCOME thread %s\n", ok(r == buf + 1));
  signal(SIGALRM, on_alarm);
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = SIGALRM;
  timer_create(CLOCK_MONOTONIC, &sev, &tm);
  timer_settime(tm, 0, &its, NULL);
  while (!got) pause();
  printf("OUTCOME posix_timer ok\n");
  pid = fork();
  if (pid == 0) { pause(); _exit(0); }
  kill(pid, SIGTERM);
  waitpid(pid, &s, 0);
  printf("OUTCOME kill_child %s\n", ok(WIFSIGNALED(s) && WTERMSIG(s) == SIGTERM));
  r = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  printf("OUTCOME mmap_shared %s\n", ok(r != MAP_FAILED));
  printf("OUTCOME openpty %s\n", ok(openpty(&m, &s, NULL, NULL, NULL) == 0));
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  l = socket(AF_INET, SOCK_STREAM, 0);
  bind(l, (struct sockaddr *)&sa, sizeof sa);
  listen(l, 1);
  getsockname(l, (struct sockaddr *)&sa, &sl);
  c = socket(AF_INET, SOCK_STREAM, 0);
  a = connect(c, (struct sockaddr *)&sa, sizeof sa) == 0 ? accept(l, NULL, NULL) : -1;
  printf("OUTCOME tcp_loopback %s\n", ok(a >= 0 && write(c, "x", 1) == 1 && read(a, buf, 1) == 1));
  return 0;
}
'''
C_MAKEFILE = ("CFLAGS = -O2 -Wall -pthread\nLDLIBS = -lutil -lrt\n"
              "all: probe\nprobe: probe.o\n\t$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)\n"
              "check: probe\n\t./probe\nclean:\n\trm -f probe probe.o\n")
C_SCRIPT = ("make -s > make.log 2>&1 && echo OUTCOME build ok || echo OUTCOME build FAIL\n"
            "make -s check 2>&1 | grep '^OUTCOME'\n")

# git: a repository's life: init, commits, branches, merge, gc, fsck,
# a local clone (upload-pack/receive-pack over a pipe), archive.
GIT = r'''
step() { name=$1; shift; if "$@" >> steps.log 2>&1; then echo "OUTCOME $name ok"; else echo "OUTCOME $name FAIL"; fi; }
export GIT_CONFIG_NOSYSTEM=1
step config_user git config --global user.name Job
git config --global user.email job@example.invalid
git config --global init.defaultBranch main
step init git init -q repo
cd repo
for i in 1 2 3; do echo "line $i" > f$i.txt; git add f$i.txt; git commit -qm "c$i"; done
echo "OUTCOME log_count $(git log --oneline | wc -l)"
step branch git checkout -qb topic
echo topic >> f1.txt; git commit -qam topic
git checkout -q main
echo main >> f2.txt; git commit -qam main
step merge git merge -q --no-edit topic
step gc git gc -q
step fsck git fsck --strict
cd ..
step clone git clone -q repo clone
echo "OUTCOME clone_head_same $(test "$(git -C repo rev-parse HEAD)" = "$(git -C clone rev-parse HEAD)" && echo yes || echo no)"
step push sh -c 'cd clone && echo more > f4.txt && git add f4.txt && git commit -qm more && git push -q origin HEAD:side'
step archive sh -c 'git -C repo archive --format=tar HEAD | tar -t > /dev/null'
echo "OUTCOME whoami $(whoami)"
'''

# sqlite3: a database with WAL (shared memory next to the file), a
# transaction of 20,000 rows, an index, VACUUM, integrity check.
SQLITE = r'''
sqlite3 t.db <<'SQL' > sql.out 2>&1
PRAGMA journal_mode=WAL;
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<20000)
INSERT INTO t SELECT x, hex(randomblob(16)) FROM c;
CREATE INDEX tb ON t(b);
SELECT 'count', count(*) FROM t;
VACUUM;
PRAGMA integrity_check;
SQL
echo "OUTCOME sqlite_exit $?"
echo "OUTCOME wal $(head -1 sql.out)"
echo "OUTCOME count $(grep '^count' sql.out | tr '|' _)"
echo "OUTCOME integrity $(tail -1 sql.out)"
'''


# What the sandbox changes on purpose, seen by a plain shell: each of these
# differs inside and is listed in intended.txt (and the self-test runs it
# without that list to show the harness catches differences).
VIEW = r'''
echo "OUTCOME hostname $(cat /proc/sys/kernel/hostname)"
echo "OUTCOME seccomp $(grep '^Seccomp:' /proc/self/status | tr -d ' \t' | cut -d: -f2)"
echo "OUTCOME sys_visible $(test -d /sys/class && echo yes || echo no)"
echo "OUTCOME shell_is_pid1 $(test $$ = 1 && echo yes || echo no)"
echo "OUTCOME interfaces $(ls /proc/sys/net/ipv4/conf | grep -cv '^all$\|^default$')"
echo "OUTCOME host_users_listed $(test "$(cut -d: -f1 /etc/passwd | sort | tr '\n' ' ')" = 'nobody root ' && echo no || echo yes)"
echo "OUTCOME uid $(id -u)"
echo "OUTCOME cwd_is_home $(test "$PWD" = "$HOME" && echo yes || echo no)"
'''


def programs(which):
    progs = {}
    progs["sandbox-view"] = {"files": {}, "script": VIEW}
    for m in (CPY_FAST if which == "fast" else CPY_FULL):
        progs["cpython-" + m] = cpython(m)
    progs["pip-venv-wheel"] = {"files": {"mkwheel.py": MKWHEEL}, "script": VENV,
                              "needs": "/usr/lib/python3.11/ensurepip"}
    progs["node-http"] = {"files": {"main.js": NODE_JS},
                          "script": "node main.js\necho OUTCOME exit $?\n", "needs": "/usr/bin/node"}
    progs["make-c"] = {"files": {"probe.c": C_MAIN, "Makefile": C_MAKEFILE},
                       "script": C_SCRIPT, "needs": "/usr/bin/make"}
    if which == "full":
        progs["git"] = {"files": {}, "script": GIT, "needs": "/usr/bin/git"}
        progs["sqlite3"] = {"files": {}, "script": SQLITE, "needs": "/usr/bin/sqlite3"}
    else:
        progs["git"] = {"files": {}, "script": GIT, "needs": "/usr/bin/git"}
    return progs


# --- helpers -----------------------------------------------------------------

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parse(text):
    out = {}
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) >= 3 and parts[0] == "OUTCOME":
            out[parts[1]] = parts[2].strip()
    return out


def details(text):
    out = {}
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "DETAIL":
            out[parts[1]] = parts[2]
    return out


def load_intended():
    rules = []
    for line in read(os.path.join(HERE, "intended.txt")).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        prog, key, reason = line.split(None, 2)
        rules.append((prog, key, reason))
    return rules


def intended(rules, prog, key):
    for p, k, reason in rules:
        if fnmatch.fnmatchcase(prog, p) and fnmatch.fnmatchcase(key, k):
            return reason
    return None


# --- the daemon and its protocol ---------------------------------------------

class Daemon:
    def __init__(self, build, verbose, job_dir="disk"):
        self.dir = tempfile.mkdtemp(prefix="px-compat-")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "s.sock")
        cfg = {
            "work_root": os.path.join(self.dir, "jobs"),
            "transports": {"socket_path": self.sock, "socket_group": "nogroup",
                           "max_frame_bytes": 64 << 20},
            # job dirs of 4 GiB (disk-backed; RLIMIT_FSIZE is their size:
            # test_io's large-file test seeks past 2 GiB), /dev/shm 1 GiB
            "linux": {"tmpfs_bytes": 1 << 30, "job_dir": job_dir},
            "queue": {"workers": 2},
            "output": {"overflow": "truncate", "rate_bytes_per_s": 64 << 20,
                       "burst_bytes": 64 << 20},
            "limits": {
                "default": {"cpu_ms": WALL_S * 1000, "wall_ms": WALL_S * 1000,
                            "memory_bytes": 2 << 30, "processes": 512,
                            "output_bytes": 16 << 20, "disk_bytes": 4 << 30},
                "max": {"cpu_ms": WALL_S * 1000, "wall_ms": WALL_S * 1000,
                        "memory_bytes": 2 << 30, "processes": 512,
                        "output_bytes": 16 << 20, "disk_bytes": 4 << 30},
                "max_high_cpu": {"cpu_ms": WALL_S * 1000, "wall_ms": WALL_S * 1000},
                "max_large_mem": {"memory_bytes": 2 << 30}},
        }
        os.mkdir(cfg["work_root"], 0o711)
        self.cfg = os.path.join(self.dir, "executor.json")
        with open(self.cfg, "w") as f:
            json.dump(cfg, f)
        os.chmod(self.cfg, 0o644)
        exe = os.path.join(build, "service", "phoenix-executor")
        self.log = open(os.path.join(self.dir, "daemon.log"), "w")
        self.proc = subprocess.Popen([exe, "--config", self.cfg, "--log-level",
                                      "debug" if verbose else "info"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if os.path.exists(self.sock) or self.proc.poll() is not None:
                break
            time.sleep(0.02)
        if not os.path.exists(self.sock):
            raise RuntimeError("daemon did not start:\n" + read(self.log.name))
        self.seq = 0

    def run(self, script, files):
        self.seq += 1
        jid = "compat-%d" % self.seq
        req = {"type": "run", "id": jid, "runtime": "sh", "code": script,
               "capabilities": ["fs:write_tmp"],
               "files": [{"path": k, "content": v} for k, v in sorted(files.items())]}
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.sock)
        send_frame(s, json.dumps(req).encode())
        while True:
            msg = json.loads(recv_frame(s))
            if msg.get("type") == "result" and msg.get("id") == jid:
                s.close()
                return msg
            if msg.get("type") == "error":
                s.close()
                raise RuntimeError("daemon error: %r" % msg)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def send_frame(s, payload):
    s.sendall(b"PXF1" + struct.pack("<II", len(payload), zlib.crc32(payload)) + payload)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise RuntimeError("daemon closed the connection")
        buf += chunk
    return buf


def recv_frame(s):
    head = recv_exact(s, 12)
    if head[:4] != b"PXF1":
        raise RuntimeError("bad frame")
    (n,) = struct.unpack("<I", head[4:8])
    return recv_exact(s, n)


# --- running a program both ways ---------------------------------------------

def run_inside(d, script, files):
    res = d.run(script, files)
    summary = "%s exit=%s" % (res["status"], res.get("exit_code"))
    if res.get("violation"):
        summary += " violation=%s" % res["violation"]["limit"]
    if res.get("error"):
        summary += " error=%s" % res["error"].get("message")
    return res.get("stdout", ""), res.get("stderr", ""), summary


def run_outside(script, files):
    work = tempfile.mkdtemp(prefix="px-compat-out-")
    try:
        for name, text in files.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        with open(os.path.join(work, "main.sh"), "w") as f:
            f.write(script)
        for root, dirs, names in os.walk(work):
            for n in dirs + names + ["."]:
                os.lchown(os.path.join(root, n), UID, GID)
        env = dict(ENV, HOME=work, TMPDIR=work, TMP=work, TEMP=work)
        cmd = ["setpriv", "--reuid=%d" % UID, "--regid=%d" % GID, "--clear-groups",
               "--inh-caps=-all", "--no-new-privs", "/bin/sh", "main.sh"]
        try:
            p = subprocess.run(cmd, cwd=work, env=env, capture_output=True,
                               timeout=WALL_S, start_new_session=True)
            summary = "exit=%d" % p.returncode
            return p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), summary
        except subprocess.TimeoutExpired as e:
            return (e.stdout or b"").decode(errors="replace"), "", "timeout"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compare(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def rerun_keys(d, prog, keys):
    """Run the differing keys again both ways; return those still differing."""
    if prog.get("rerun") and len(keys) <= 40:
        tests = [k for k in keys if k.startswith("test.") and k.count(".") >= 3]
        if len(tests) != len(keys):
            return keys, {}, {}
        script = "%s %s\n" % (prog["rerun"], " ".join(tests))
    else:
        script = prog["script"]
    ins, _, _ = run_inside(d, script, prog["files"])
    out, _, _ = run_outside(script, prog["files"])
    a, b = parse(ins), parse(out)
    return [k for k in keys if a.get(k) != b.get(k)], a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True)
    ap.add_argument("--set", choices=("fast", "full"), default="fast")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--job-dir", choices=("disk", "tmpfs"), default="disk",
                    help="linux.job_dir of the daemon (tmpfs: 1 GiB of memory)")
    ap.add_argument("--ignore-intended", action="store_true",
                    help="treat every difference as unlisted (the self-test)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (the daemon runs as root; outside runs drop to uid %d)" % UID)
        return SKIP
    if not shutil.which("setpriv"):
        print("SKIP: no setpriv (util-linux)")
        return SKIP
    rules = [] if args.ignore_intended else load_intended()
    progs = programs(args.set)
    if args.only:
        progs = {k: v for k, v in programs("full").items()
                 if any(fnmatch.fnmatchcase(k, o) for o in args.only)}
    d = Daemon(os.path.abspath(args.build), args.verbose, args.job_dir)
    failed, ran, rows = [], 0, []
    try:
        for name, prog in progs.items():
            if prog.get("needs") and not os.path.exists(prog["needs"]):
                rows.append((name, "SKIP", "SKIP", "missing " + prog["needs"]))
                print("%-40s SKIP (missing %s)" % (name, prog["needs"]), flush=True)
                continue
            t0 = time.time()
            ins, ierr, isum = run_inside(d, prog["script"], prog["files"])
            t1 = time.time()
            out, oerr, osum = run_outside(prog["script"], prog["files"])
            t2 = time.time()
            ran += 1
            a, b = parse(ins), parse(out)
            diff = compare(a, b)
            flaky = []
            for _ in range(2):
                if not diff:
                    break
                still, a2, b2 = rerun_keys(d, prog, diff)
                flaky += [k for k in diff if k not in still]
                diff = still
            bad, listed = [], []
            for k in diff:
                why = intended(rules, name, k)
                (listed if why else bad).append((k, why))
            counts_in = summarize(a)
            counts_out = summarize(b)
            broken = [] if prog.get("rerun") else sorted(k for k, v in b.items() if v == "FAIL")
            if broken:
                bad += [(k, "broken outside") for k in broken if k not in diff]
            verdict = "FAIL" if bad or not a else ("ok" if not listed else "ok (intended)")
            print("%-40s inside: %-34s outside: %-34s %s  [%.0fs/%.0fs]" % (
                name, "%s %s" % (isum, counts_in), "%s %s" % (osum, counts_out),
                verdict, t1 - t0, t2 - t1), flush=True)
            di, do = details(ins), details(out)
            for k, why in listed:
                print("    intended  %s: inside %s, outside %s (%s)" % (k, a.get(k), b.get(k), why))
            for k in flaky:
                print("    flaky     %s: differed once, agreed on a rerun" % k)
            for k, _ in bad:
                print("    DIFFERENT %s: inside %s, outside %s" % (k, a.get(k), b.get(k)))
                if k in di or k in do:
                    print("              inside:  %s\n              outside: %s" % (di.get(k, "-"), do.get(k, "-")))
            if not a:
                print("    no outcome inside; stdout/stderr:\n%s\n%s" % (ins[-2000:], ierr[-2000:]))
            if args.verbose:
                for k in sorted(a):
                    if not k.startswith("test."):
                        print("    %s: inside %s, outside %s" % (k, a[k], b.get(k)))
                print("    inside stderr: %s\n    outside stderr: %s" % (ierr[-1000:], oerr[-1000:]))
            rows.append((name, isum, osum, verdict))
            if bad or not a:
                failed.append(name)
    finally:
        d.stop()
    print("\ncompat: %d program(s) run, %d with unlisted differences%s" % (
        ran, len(failed), (": " + ", ".join(failed)) if failed else ""))
    if ran == 0:
        print("SKIP: nothing could run here")
        return SKIP
    return 1 if failed else 0


def summarize(o):
    c = {}
    for k, v in o.items():
        if k.startswith("test."):
            c[v] = c.get(v, 0) + 1
    if not c:
        return ""
    return "(" + " ".join("%s=%d" % kv for kv in sorted(c.items())) + ")"


if __name__ == "__main__":
    sys.exit(main())
