# Escape attempts from inside a job. Each probe prints "name: DENIED (why)"
# or "name: ALLOWED (what)". Arguments (host paths and pids the test knows):
#   canary secret config socket work_root other_job victim_pid
import ctypes, errno, os, signal, socket, sys

canary, secret, config, sock, work_root, other_job, victim = sys.argv[1:8]
victim = int(victim)
libc = ctypes.CDLL(None, use_errno=True)

def report(name, ok, what):
    print("%s: %s (%s)" % (name, "ALLOWED" if ok else "DENIED", what))

def ename(e):
    return errno.errorcode.get(e, str(e))

def call(name, fn, *args):
    rc = fn(*args)
    report(name, rc == 0, "rc=%d %s" % (rc, ename(ctypes.get_errno()) if rc else ""))

def try_open(name, path, mode="r"):
    try:
        with open(path, mode) as f:
            if "w" in mode or "a" in mode:
                f.write("pwned\n")
                report(name, True, "wrote " + path)
            else:
                report(name, True, "read %r" % f.read(40))
    except OSError as e:
        report(name, False, ename(e.errno))

# inherited descriptors, first of all: only stdio (and the one listdir
# itself opens)
fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
report("inherited_fds", len([f for f in fds if f > 2]) > 1, "fds=%s" % fds)
# ptrace: attach to our own pid 1, and PTRACE_TRACEME
call("ptrace_attach", libc.ptrace, ctypes.c_long(16), ctypes.c_long(1), None, None)
call("ptrace_traceme", libc.ptrace, ctypes.c_long(0), ctypes.c_long(0), None, None)
# mount, unshare, setns
call("mount_tmpfs", libc.mount, b"none", b"/job", b"tmpfs", ctypes.c_ulong(0), None)
call("remount_root_rw", libc.mount, None, b"/", None, ctypes.c_ulong(32), None)
call("unshare_user", libc.unshare, 0x10000000)
call("unshare_mount", libc.unshare, 0x00020000)
call("unshare_net", libc.unshare, 0x40000000)
try:
    fd = os.open("/proc/1/ns/mnt", os.O_RDONLY)
    call("setns_mnt", libc.setns, fd, 0)
except OSError as e:
    report("setns_mnt", False, "open: " + ename(e.errno))
call("chroot", libc.chroot, b"/job")
# /proc/1 is the job's own init: the host's processes are not visible
host = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            cmd = open("/proc/%s/cmdline" % p, "rb").read()
        except OSError:
            continue
        if b"phoenix-executor" in cmd or b"px_tests" in cmd or b"systemd" in cmd:
            host.append(p)
report("see_host_processes", bool(host), "host pids visible: %s" % host)
try:
    root = os.readlink("/proc/1/root")
    names = os.listdir("/proc/1/root")
    report("proc1_root_is_host", "canary" in str(names) or os.path.exists("/proc/1/root" + canary),
           "root=%s entries=%s" % (root, sorted(names)[:8]))
except OSError as e:
    report("proc1_root_is_host", False, ename(e.errno))
# signals to host processes: a process of our own uid outside the job
try:
    os.kill(victim, signal.SIGKILL)
    report("kill_host_pid", True, "kill(%d) succeeded (a job process of that number?)" % victim)
except OSError as e:
    report("kill_host_pid", False, ename(e.errno))
# secrets
try_open("read_service_config", config)
try_open("read_service_key", secret)
try_open("read_etc_shadow", "/etc/shadow")
# /etc/passwd exists (generated: root and the job's own user, so that
# getpwuid works); the host's user list must not be behind it.
try:
    users = sorted(l.split(":")[0] for l in open("/etc/passwd") if ":" in l)
    report("read_host_passwd", users != ["nobody", "root"], "users=%s" % users)
except OSError as e:
    report("read_host_passwd", False, ename(e.errno))
try:
    report("list_root_home", True, str(os.listdir("/root")))
except OSError as e:
    report("list_root_home", False, ename(e.errno))
# writes outside the job dir
try_open("write_canary", canary, "a")
try_open("write_usr", "/usr/px-adversarial", "w")
try_open("write_etc", "/etc/px-adversarial", "w")
try_open("write_dev_root", "/px-adversarial", "w")
try_open("write_kb_readonly", "/kb/mind/facts.md", "a")
# another job's directory, by its host path
try:
    report("list_work_root", True, str(os.listdir(work_root)))
except OSError as e:
    report("list_work_root", False, ename(e.errno))
try_open("read_other_job", os.path.join(work_root, other_job, "secret.txt"))
try_open("read_other_job_by_name", "/job/../" + other_job + "/secret.txt")
# the daemon's own socket
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(b"PXF1")
    report("connect_daemon_socket", True, "connected to " + sock)
except OSError as e:
    report("connect_daemon_socket", False, ename(e.errno))
# surrogate spawns through host services: systemd, D-Bus, cron, the Docker socket
for name, path in (("connect_systemd", "/run/systemd/private"),
                   ("connect_dbus", "/run/dbus/system_bus_socket"),
                   ("connect_docker", "/var/run/docker.sock")):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        report(name, True, "connected to " + path)
    except OSError as e:
        report(name, False, ename(e.errno))
try_open("write_cron", "/etc/cron.d/px-adversarial", "w")
# lift our own limits: the cgroup files are not there (no /sys), and
# cgroupfs cannot be mounted
try_open("write_own_pids_max", "/sys/fs/cgroup/pids.max", "w")
call("mount_cgroup2", libc.mount, b"none", b"/job", b"cgroup2", ctypes.c_ulong(0), None)
# links planted in the job dir for the service to follow at cleanup
for name, fn in (("symlink_canary", lambda: os.symlink(canary, "/job/to-canary")),
                 ("symlink_canary_dir", lambda: os.symlink(os.path.dirname(canary), "/job/to-dir")),
                 ("hardlink_outside", lambda: os.link("/usr/bin/env", "/job/hard-env"))):
    try:
        fn()
        print("%s: planted" % name)
    except OSError as e:
        report(name, False, ename(e.errno))
# last: signal every process we can see (only our own namespace)
sys.stdout.flush()
try:
    os.kill(-1, signal.SIGKILL)
except OSError as e:
    print("kill(-1):", errno.errorcode.get(e.errno, e.errno))
print("kill(-1) returned")
