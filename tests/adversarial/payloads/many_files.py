# Huge numbers of files in the job directory.
import errno, os
n = 0
try:
    for n in range(1000000):
        open("/job/f%07d" % n, "w").close()
    print("files: ALLOWED", n)
except OSError as e:
    print("files: DENIED after", n, errno.errorcode.get(e.errno, e.errno))
