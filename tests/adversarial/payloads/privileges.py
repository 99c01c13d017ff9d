# Privilege attempts. Prints "name: DENIED (why)" / "name: ALLOWED (what)".
import ctypes, errno, os

libc = ctypes.CDLL(None, use_errno=True)

def report(name, ok, what):
    print("%s: %s (%s)" % (name, "ALLOWED" if ok else "DENIED", what))

def attempt(name, fn):
    try:
        report(name, True, fn() or "ok")
    except OSError as e:
        report(name, False, errno.errorcode.get(e.errno, str(e)))

def write(path, text):
    def fn():
        with open(path, "w") as f:
            f.write(text)
        return "wrote %s" % path
    return fn

status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
report("uid_root", os.getuid() == 0 or os.geteuid() == 0, "uid=%d euid=%d" % (os.getuid(), os.geteuid()))
for cap in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
    v = int(status[cap].strip(), 16)
    report("caps_" + cap, v != 0, status[cap].strip())
report("no_new_privs_off", status.get("NoNewPrivs", "0").strip() != "1", "NoNewPrivs=" + status.get("NoNewPrivs", "?").strip())
report("seccomp_off", status.get("Seccomp", "0").strip() == "0", "Seccomp=" + status.get("Seccomp", "?").strip())
attempt("setuid_0", lambda: os.setuid(0))
attempt("setgid_0", lambda: os.setgid(0))
attempt("setgroups_0", lambda: os.setgroups([0]))
rc = libc.prctl(47, 2, 21, 0, 0)  # PR_CAP_AMBIENT RAISE CAP_SYS_ADMIN
report("ambient_cap_raise", rc == 0, "rc=%d" % rc)
rc = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS
report("no_new_privs_clear", rc == 0, "PR_GET_NO_NEW_PRIVS=%d" % rc)
attempt("oom_score_adj_lower", write("/proc/self/oom_score_adj", "-1000"))
attempt("uid_map", write("/proc/self/uid_map", "0 0 1"))
attempt("setgroups_file", write("/proc/self/setgroups", "allow"))
attempt("proc_sys_write", write("/proc/sys/kernel/hostname", "pwned"))
attempt("sysrq_trigger", write("/proc/sysrq-trigger", "h"))
attempt("proc_self_mem_write_text", write("/proc/self/attr/current", "unconfined"))
attempt("mknod_device", lambda: os.mknod("/job/sda", 0o600 | 0o060000, os.makedev(8, 0)))
rc = libc.sethostname(b"pwned", 5)
report("sethostname", rc == 0, "rc=%d errno=%d" % (rc, ctypes.get_errno()))
rc = libc.reboot(0x4321FEDC)  # LINUX_REBOOT_CMD_POWER_OFF
report("reboot", rc == 0, "rc=%d errno=%d" % (rc, ctypes.get_errno()))
# a setuid-root program on a nosuid mount with no_new_privs
su = next((p for p in ("/usr/bin/su", "/bin/su", "/usr/bin/passwd", "/usr/bin/mount") if os.path.exists(p)), None)
if su:
    st = os.stat(su)
    os.system(su + " -c 'id -u' root </dev/null >/tmp/su.out 2>&1")
    out = open("/tmp/su.out").read().strip() if os.path.exists("/tmp/su.out") else ""
    report("setuid_binary", out == "0", "%s mode=%o -> %r" % (su, st.st_mode, out[:60]))
# set-id bits on a file the job made (through a KB root's idmapped mount it
# would be a set-id-root program on the host): refused by seccomp
def setid(how):
    def fn():
        path = "/job/setid-" + how
        if how == "open":
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o4755))
        else:
            open(path, "w").close()
            os.chmod(path, 0o2755 if how == "chmod_sgid" else 0o4755)
        mode = os.stat(path).st_mode
        if not mode & 0o6000:
            raise OSError(errno.EPERM, "bit dropped")
        return "mode %o" % mode
    return fn
for how in ("chmod_suid", "chmod_sgid", "open"):
    attempt("setid_" + how, setid(how))
# kernel surfaces no job needs: Linux AIO, the LDT (x86_64 numbers)
if os.uname().machine == "x86_64":
    ctx = ctypes.c_ulong(0)
    rc = libc.syscall(206, 1, ctypes.byref(ctx))  # io_setup
    report("io_setup", rc == 0, "rc=%d errno=%d" % (rc, ctypes.get_errno()))
    buf = ctypes.create_string_buffer(16)
    rc = libc.syscall(154, 0, buf, 16)  # modify_ldt read
    report("modify_ldt", rc >= 0, "rc=%d errno=%d" % (rc, ctypes.get_errno()))
