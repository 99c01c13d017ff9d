# Descriptor exhaustion: open until the kernel says no.
import errno, os
fds = []
try:
    while len(fds) < 1000000:
        fds.append(os.open("/dev/null", os.O_RDONLY))
    print("fds: ALLOWED", len(fds))
except OSError as e:
    print("fds: DENIED after", len(fds), errno.errorcode.get(e.errno, e.errno))
