# Sparse files: a 1 TiB hole, then real data scattered far apart.
import errno, os, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try:
    with open("/job/sparse", "wb") as f:
        f.truncate(1 << 40)
    print("sparse-1TiB: ALLOWED size", os.stat("/job/sparse").st_size)
except OSError as e:
    print("sparse-1TiB: DENIED", errno.errorcode.get(e.errno, e.errno))
written = 0
try:
    with open("/job/scatter", "wb") as f:
        for i in range(4096):
            f.seek(i * (16 << 20))
            f.write(b"\x01" * (1 << 20))
            written += 1
    print("scatter: ALLOWED", written, "MiB")
except OSError as e:
    print("scatter: DENIED after", written, "MiB", errno.errorcode.get(e.errno, e.errno))
