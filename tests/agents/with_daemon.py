#!/usr/bin/env python3
"""with_daemon.py - run one command against a fresh Linux phoenix-executor.

    with_daemon.py --daemon BUILD/service/phoenix-executor [--config-json J] -- CMD...

Starts the daemon (as this user, normally root in CI) with a config of its
own in a scratch directory: socket, work root and KB store there, socket
group "nogroup" so a plain user (uid 65534) may connect too. Waits until the
socket answers a PXF1 ping, runs CMD with PX_SOCKET set to the socket path,
then stops the daemon with SIGTERM and prints its log when CMD failed. The
exit status is CMD's (77 from CMD means "skipped" to ctest).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib


def ping(path: str) -> bool:
    payload = b'{"type":"ping"}'
    frame = b"PXF1" + struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(path)
            s.sendall(frame)
            data = s.recv(4096)
            return b'"pong"' in data
    except OSError:
        return False


def merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = v


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--config-json", default="{}")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    d = tempfile.mkdtemp(prefix="px-agents-")
    os.chmod(d, 0o755)
    sock = os.path.join(d, "s.sock")
    cfg = {
        "transports": {"socket_path": sock, "socket_group": "nogroup"},
        "work_root": os.path.join(d, "jobs"),
    }
    merge(cfg, json.loads(a.config_json))
    cfg_path = os.path.join(d, "executor.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    os.chmod(cfg_path, 0o644)
    log_path = os.path.join(d, "daemon.log")
    log = open(log_path, "wb")
    daemon = subprocess.Popen([a.daemon, "--config", cfg_path, "--log-level", "debug"],
                              stdout=log, stderr=subprocess.STDOUT)
    rc = 1
    try:
        deadline = time.monotonic() + 20
        while not ping(sock):
            if daemon.poll() is not None or time.monotonic() > deadline:
                print("with_daemon: the daemon did not come up", file=sys.stderr)
                return 1
            time.sleep(0.05)
        env = dict(os.environ, PX_SOCKET=sock, PX_SCRATCH=d)
        rc = subprocess.call(cmd, env=env)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        if rc not in (0, 77):
            with open(log_path, "rb") as f:
                sys.stderr.write("---- daemon log (tail) ----\n")
                sys.stderr.write(f.read()[-6000:].decode("utf-8", "replace"))
        shutil.rmtree(d, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
