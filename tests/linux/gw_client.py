#!/usr/bin/env python3
"""gw_client.py - a local client of a daemon's Unix socket for
tests/linux/cluster_gateway_test.sh, on the Python client's wire layer
(clients/python: PXF1 frames, nothing else).

  gw_client.py SOCKET RUN_JSON [--until started|result] [--linger S]
               [--cancel-after-started] [--second RUN_JSON]

Sends RUN_JSON (a `run` message), prints every frame that names its id
(and every `error`), one JSON object a line, until the frame named by
--until (default: result); then keeps reading --linger seconds (default
0.3) and prints what else comes for the id (a second result would show).
--until started: exits (closing the connection) once `started` arrived.
--cancel-after-started: sends `cancel` for the id when `started` came.
--second RUN_JSON (repeatable): sent in order right after the first
`accepted`; frames naming their ids are printed too (a duplicate id, a
cap, placement any with no free slot).
Exit 0; 1 when the connection ended or 30 s passed first.
"""
import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from phoenix_executor import frame  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("run")
    ap.add_argument("--until", default="result", choices=["started", "result"])
    ap.add_argument("--linger", type=float, default=0.3)
    ap.add_argument("--cancel-after-started", action="store_true")
    ap.add_argument("--second", action="append", default=[])
    a = ap.parse_args()
    msg = json.loads(a.run)
    jid = msg["id"]
    ids = {jid} | {json.loads(x)["id"] for x in a.second}
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(a.socket)

    def read_exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    s.sendall(frame.encode(msg))
    deadline, until_seen = time.monotonic() + 30, None
    while True:
        now = time.monotonic()
        end = until_seen + a.linger if until_seen is not None else deadline
        if now >= end:
            return 0 if until_seen is not None else 1
        s.settimeout(end - now)
        try:
            m = frame.read_frame(read_exact)
        except (socket.timeout, TimeoutError):
            continue
        except EOFError:
            return 0 if until_seen is not None else 1
        if m.get("id") not in ids and m.get("type") != "error":
            continue
        print(json.dumps(m, separators=(",", ":")), flush=True)
        t = m.get("type")
        if t == "accepted" and m.get("id") == jid:
            for x in a.second:
                s.sendall(frame.encode(json.loads(x)))
        if t == "started" and a.cancel_after_started:
            s.sendall(frame.encode({"type": "cancel", "id": jid}))
        if t == a.until and m.get("id") == jid and until_seen is None:
            if a.until == "started":
                s.close()
                return 0
            until_seen = time.monotonic()


if __name__ == "__main__":
    sys.exit(main())
