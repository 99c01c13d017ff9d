# Memory bomb, one process: touch ever more memory until something stops us.
chunks = []
while True:
    chunks.append(b"\x01" * (8 << 20))  # bytes of 0x01: every page is touched
