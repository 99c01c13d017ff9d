# With kb:write: delete, corrupt, add, chmod, plant links to host files in
# the knowledge base, then blow the memory limit. Argument: a host file.
import os, sys
kb = os.environ["PX_KB_MIND"]
host = sys.argv[1]
os.remove(os.path.join(kb, "facts.md"))
with open(os.path.join(kb, "notes", "plan.txt"), "r+b") as f:
    f.write(b"CORRUPTED")
os.chmod(os.path.join(kb, "notes", "empty"), 0o777)
with open(os.path.join(kb, "notes", "empty"), "w") as f:
    f.write("now full")
os.makedirs(os.path.join(kb, "new", "deep"))
with open(os.path.join(kb, "new", "deep", "x.bin"), "wb") as f:
    f.write(os.urandom(4096))
# links for the service to follow when it restores: a file and a directory
os.symlink(host, os.path.join(kb, "facts.md"))
os.symlink(os.path.dirname(host), os.path.join(kb, "notes", "dirlink"))
os.link(os.path.join(kb, "notes", "plan.txt"), os.path.join(kb, "hardlink-to-plan"))
os.mkfifo(os.path.join(kb, "fifo"))
print("vandalised", sorted(os.listdir(kb)), flush=True)
chunks = []
while True:
    chunks.append(b"\x01" * (8 << 20))
