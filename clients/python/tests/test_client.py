"""Tests of the Python client against a real PhoenixExecutor daemon.

    PX_SOCKET=/path/to/socket python3 -m unittest discover -s clients/python/tests -v

(ctest `python.client_linux` starts a daemon with tests/agents/with_daemon.py
and runs this.) The framing tests need no daemon.
"""
import os
import re
import socket
import struct
import sys
import threading
import unittest
import zlib

if not os.environ.get("PX_CLIENT_INSTALLED"):  # else: the pip-installed copy
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import phoenix_executor as px  # noqa: E402
from phoenix_executor import frame  # noqa: E402

SOCK = os.environ.get("PX_SOCKET")
MiB = 1 << 20


class FramingTest(unittest.TestCase):
    def test_crc_vector(self):
        self.assertEqual(frame.crc32(b"123456789"), 0xCBF43926)

    def test_encode_header(self):
        f = frame.encode({"type": "ping"})
        self.assertEqual(f[:4], b"PXF1")
        n, crc = struct.unpack("<II", f[4:12])
        self.assertEqual(n, len(f) - 12)
        self.assertEqual(crc, zlib.crc32(f[12:]))

    def _served(self, data: bytes):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        b.sendall(data)
        b.close()
        return lambda n: _read_exact(a, n)

    def test_received_bad_crc_is_refused(self):
        payload = b'{"type":"pong"}'
        bad = b"PXF1" + struct.pack("<II", len(payload), zlib.crc32(payload) ^ 1) + payload
        with self.assertRaises(px.ProtocolError):
            frame.read_frame(self._served(bad))

    def test_received_bad_magic_is_refused(self):
        with self.assertRaises(px.ProtocolError):
            frame.read_frame(self._served(b"PXF2" + b"\0" * 8))

    def test_big_integers_stay_exact(self):
        big = 2 ** 64 - 1
        payload = ('{"type":"status","n":%d}' % big).encode()
        good = b"PXF1" + struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
        m = frame.read_frame(self._served(good))
        self.assertEqual(m["n"], big)
        self.assertIsInstance(m["n"], int)

    def test_save_files_refuses_paths_that_leave_the_directory(self):
        import tempfile
        for bad in ("../x", "/etc/x", "a/../../x", "C:x", "a\\b", "", "a//b"):
            r = px.Result.from_message({"status": "ok", "files": [
                {"path": bad, "bytes": 1, "content": "eA=="}]})
            with tempfile.TemporaryDirectory() as d:
                with self.assertRaises(px.ExecutorError, msg=bad):
                    r.save_files(d)
                self.assertEqual(os.listdir(d), [])
        r = px.Result.from_message({"status": "ok", "files": [
            {"path": "out/a.txt", "bytes": 1, "content": "eA==", "media_type": "text/plain"},
            {"path": "link.png", "bytes": 0, "skipped": "link: not followed"}]})
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(r.save_files(d), [os.path.join(d, "out", "a.txt")])
            with open(os.path.join(d, "out", "a.txt"), "rb") as f:
                self.assertEqual(f.read(), b"x")
            with self.assertRaises(FileExistsError):
                r.save_files(d)  # never over an existing file...
            r.save_files(d, overwrite=True)  # ...unless asked

    def test_error_codes_map_to_classes(self):
        self.assertIsInstance(px.error_for("capability_denied", "x"), px.CapabilityDenied)
        self.assertIsInstance(px.error_for("bad_request", "x"), px.BadRequest)
        e = px.error_for("some_future_code", "x")
        self.assertIs(type(e), px.ExecutorError)
        self.assertEqual(e.code, "some_future_code")

    def test_every_service_code_has_a_class(self):
        # The service's code table: a new code gets its class (issue 25
        # added process_create_failed, the OS refusing the job's process,
        # beside spawn_failed). Needs the source tree beside the tests.
        hdr = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                           "base", "include", "px", "px_result.h")
        if not os.path.exists(hdr):
            self.skipTest("no source tree beside the tests: " + hdr)
        with open(hdr) as f:
            codes = re.findall(r'X\(PX_CODE_[A-Z_]+, "([a-z_]+)"\)', f.read())
        self.assertIn("process_create_failed", codes)
        for c in codes:
            e = px.error_for(c, "x")
            self.assertIsNot(type(e), px.ExecutorError, c)
            self.assertEqual(e.code, c)
        self.assertIsInstance(px.error_for("process_create_failed", "x"),
                              px.ProcessCreateFailed)
        self.assertNotIsInstance(px.error_for("spawn_failed", "x"), px.ProcessCreateFailed)


def _read_exact(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            raise px.TransportError("closed")
        buf += c
    return buf


@unittest.skipUnless(SOCK, "PX_SOCKET is not set: no daemon to talk to")
class _FakeWin32:
    """The Win32 calls of NamedPipeTransport, recorded (the named-pipe
    client cannot run here: no Windows Python under Wine)."""

    def __init__(self, server, service):
        self.server, self.service = server, service
        self.calls = []

    def last_error(self):
        return 5

    def create_file(self, name, access, flags):
        self.calls.append(("create", name, access, flags))
        return 42

    def wait_named_pipe(self, name, ms):
        pass

    def server_pid(self, h):
        self.calls.append(("server_pid", h))
        return self.server

    def service_pid(self, name):
        self.calls.append(("service_pid", name))
        return self.service

    def write(self, h, data):
        self.calls.append(("write", bytes(data)))
        return len(data)

    def read(self, h, cap):
        return b""

    def close(self, h):
        self.calls.append(("close", h))


class NamedPipeClientTest(unittest.TestCase):
    """Issue 23 1.2: what the Python client asks of Windows."""

    def test_access_and_sqos(self):
        from phoenix_executor import transport as t
        api = _FakeWin32(server=700, service=700)
        p = t.NamedPipeTransport(r"\\.\pipe\PhoenixExecutor", 1.0, _api=api)
        _, _, access, flags = api.calls[0]
        # FILE_READ_DATA | FILE_WRITE_DATA | FILE_READ_ATTRIBUTES |
        # FILE_WRITE_ATTRIBUTES | SYNCHRONIZE, exactly; no FILE_APPEND_DATA
        # (= FILE_CREATE_PIPE_INSTANCE), no GENERIC_* bit.
        self.assertEqual(access, 0x00100183)
        self.assertEqual(access & 0x4, 0)
        self.assertEqual(access & 0xF0000000, 0)
        # SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION
        self.assertEqual(flags & 0x001F0000, 0x00110000)
        p.send(b"PXF1")
        self.assertEqual(api.calls[-1], ("write", b"PXF1"))

    def test_squatter_refused_before_any_write(self):
        from phoenix_executor import transport as t
        api = _FakeWin32(server=666, service=700)
        with self.assertRaises(px.TransportError) as e:
            t.NamedPipeTransport(r"\\.\pipe\PhoenixExecutor", 1.0, _api=api)
        self.assertIn("pid 666", str(e.exception))
        self.assertFalse([c for c in api.calls if c[0] == "write"])
        self.assertEqual(api.calls[-1], ("close", 42))
        # The service not running: refused as well.
        api = _FakeWin32(server=666, service=None)
        with self.assertRaises(px.TransportError):
            t.NamedPipeTransport(r"\\.\pipe\PhoenixExecutor", 1.0, _api=api)
        # A console-mode server named by its pid.
        api = _FakeWin32(server=666, service=None)
        t.NamedPipeTransport(r"\\.\pipe\x", 1.0, server_pid=666, _api=api)
        self.assertFalse([c for c in api.calls if c[0] == "service_pid"])


class DaemonTest(unittest.TestCase):
    def setUp(self):
        self.ex = px.Executor(SOCK, timeout=30)

    def tearDown(self):
        self.ex.close()

    def test_ping_status_metrics(self):
        self.ex.ping()
        st = self.ex.status()
        self.assertEqual(st["type"], "status")
        self.assertIn("queue", st)
        m = self.ex.metrics()
        self.assertIn("results", m)
        # cluster.mode off: no cluster block, and cluster_status is refused typed.
        self.assertNotIn("cluster", m)
        self.assertNotIn("cluster", st)
        with self.assertRaises(px.ClusterOff) as cm:
            self.ex.cluster_status()
        self.assertIn("not in a cluster", str(cm.exception))

    def test_describe(self):
        d = self.ex.describe()
        names = [r.name for r in d.runtimes]
        self.assertIn("sh", names)
        self.assertIn("python", names)
        self.assertTrue(d.admin)  # the tests run as root: the built-in admin entry
        self.assertEqual(d.limits["default"]["memory_bytes"], 268435456)

    def test_ok_run(self):
        r = self.ex.run("python", "print(6 * 7)")
        self.assertEqual(r.status, "ok", r)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, "42\n")
        self.assertIs(r.raise_for_status(), r)
        self.assertGreater(r.usage.wall_ms, -1)

    def test_nonzero_exit_and_stdin_args_files(self):
        r = self.ex.run("sh", 'cat data.txt; read x; echo "$x $1"; exit 3', args=["arg1"],
                        stdin="from stdin\n",
                        files=[{"path": "data.txt", "content": "file content\n"}])
        self.assertEqual(r.status, "nonzero_exit")
        self.assertEqual(r.exit_code, 3)
        self.assertEqual(r.stdout, "file content\nfrom stdin arg1\n")
        with self.assertRaises(px.JobFailed):
            r.raise_for_status()

    def test_collect_files(self):
        code = ("import zlib\nopen('chart.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + "
                "zlib.compress(b'x'))\nopen('t.csv', 'w').write('a,b\\n')\n")
        r = self.ex.run("python", code, capabilities=["fs:write_tmp"], collect=["*.png", "*.csv"])
        self.assertEqual(r.status, "ok", r)
        by = {f.path: f for f in r.files}
        self.assertEqual(sorted(by), ["chart.png", "t.csv"])
        self.assertEqual(by["chart.png"].media_type, "image/png")
        self.assertTrue(by["chart.png"].data.startswith(b"\x89PNG"))
        self.assertEqual(by["t.csv"].data, b"a,b\n")
        import hashlib
        self.assertEqual(by["t.csv"].sha256, hashlib.sha256(b"a,b\n").hexdigest())

    def test_memory_hog_violation(self):
        r = self.ex.run("python", "x = bytearray(512 * 1024 * 1024)",
                        limits={"memory_bytes": 64 * MiB})
        self.assertEqual(r.status, "killed", r)
        self.assertIsNotNone(r.violation)
        self.assertEqual(r.violation.limit, "memory")
        self.assertEqual(r.violation.configured, 64 * MiB)

    def test_stream_yields_output_before_result(self):
        events = list(self.ex.stream("sh", "for i in 1 2 3; do echo line $i; sleep 0.2; done"))
        kinds = [type(e).__name__ for e in events]
        self.assertEqual(kinds[0], "Accepted")
        self.assertIn("Started", kinds)
        self.assertIsInstance(events[-1], px.Result)
        outs = "".join(e.data for e in events if isinstance(e, px.Output))
        self.assertEqual(outs, "line 1\nline 2\nline 3\n")
        self.assertLess(kinds.index("Output"), len(kinds) - 1)

    def test_cancel_while_streaming(self):
        it = self.ex.stream("sh", "echo go; sleep 60", job_id="py-cancel-1")
        for ev in it:
            if isinstance(ev, px.Output):
                self.ex.cancel("py-cancel-1")
            if isinstance(ev, px.Result):
                break
        self.assertEqual(ev.status, "cancelled")

    def test_rejected_maps_to_typed_exception(self):
        r = self.ex.run("sh", "true", limits={"memory_bytes": 2 ** 63 - 1})
        self.assertEqual(r.status, "rejected")
        self.assertEqual(r.error_code, "limit_exceeds_policy")
        with self.assertRaises(px.LimitExceedsPolicy):
            r.raise_for_status()
        r = self.ex.run("no-such-runtime", "true")
        with self.assertRaises(px.UnknownRuntime):
            r.raise_for_status()

    def test_placement(self):
        # The test daemon has no cluster gateway (cluster.mode off): "cluster"
        # and "any" are refused typed, "local" runs; a bad value names the field.
        r = self.ex.run("sh", "echo here", placement="local")
        self.assertEqual((r.status, r.stdout), ("ok", "here\n"))
        for where in ("cluster", "any"):
            r = self.ex.run("sh", "true", placement=where)
            self.assertEqual((r.status, r.error_code), ("rejected", "cluster_unavailable"))
            self.assertIn(where, r.error_message)
            with self.assertRaises(px.ClusterUnavailable):
                r.raise_for_status()
        r = self.ex.run("sh", "true", placement="mars")
        self.assertEqual((r.status, r.error_code), ("rejected", "bad_request"))
        self.assertIn("placement", r.error_message)

    def test_bad_request_error(self):
        self.ex.send({"type": "status", "colour": "red"})
        m = self.ex.receive(10)
        self.assertEqual((m["type"], m["code"]), ("error", "bad_request"))
        with self.assertRaises(px.UnknownType):
            self.ex._ask({"type": "teleport"}, "teleported")

    def test_corrupted_frame_gets_bad_crc(self):
        payload = b'{"type":"ping"}'
        self.ex._t.send(b"PXF1" + struct.pack("<II", len(payload), 12345) + payload)
        m = self.ex.receive(10)
        self.assertEqual(m["code"], "bad_crc")
        self.ex.ping()  # the stream stays in sync

    def test_cancel_from_another_thread(self):
        timer = threading.Timer(1.0, self.ex.cancel, args=("py-cancel-2",))
        timer.start()
        r = self.ex.run("sh", "sleep 60", job_id="py-cancel-2")
        timer.join()
        self.assertEqual(r.status, "cancelled")


if __name__ == "__main__":
    unittest.main(verbosity=2)
