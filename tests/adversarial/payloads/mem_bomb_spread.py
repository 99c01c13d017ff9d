# Memory bomb spread over many processes: each child stays small (12 MiB),
# together they exceed the job's limit. Only a whole-job limit catches it.
import os, time
kids = []
for _ in range(10):
    pid = os.fork()
    if pid == 0:
        block = b"\x01" * (12 << 20)
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print("all children survived")
