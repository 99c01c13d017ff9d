# Busy loop in kernel mode: the kernel zero-fills our buffer forever.
f = open("/dev/zero", "rb", buffering=0)
buf = bytearray(1 << 20)
while True:
    f.readinto(buf)
