# Thread bomb: threads count as tasks of the job too.
import threading, time
n = 0
while True:
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    n += 1
