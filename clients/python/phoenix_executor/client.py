"""The PhoenixExecutor client: one connection, typed requests and results.

>>> from phoenix_executor import Executor
>>> with Executor() as ex:                      # the local service
...     r = ex.run("python", "print(6 * 7)", limits={"memory_bytes": 256 << 20})
...     print(r.status, r.stdout)
ok 42

One connection serves one conversation at a time: call the methods from one
thread. cancel() may be called inside a stream() loop, and on Linux also from
another thread while run() waits (sends are serialized). On Windows a named
pipe opened for synchronous I/O serializes a write behind a pending read, so
there cancel from inside the stream() loop, not from another thread.
"""
import itertools
import os
import threading
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import frame
from .errors import ExecutorError, ProtocolError, error_for
from .transport import open_transport
from .types import Accepted, Description, Output, Result, Started

Event = Union[Accepted, Started, Output, Result]

_LIMIT_KEYS = ("cpu_ms", "wall_ms", "memory_bytes", "processes", "output_bytes",
               "disk_bytes")
_ids = itertools.count(1)


class Executor:
    """A connection to the executor.

    address: a Unix socket path or a named pipe name (``\\\\.\\pipe\\...``);
    default: $PHOENIX_EXECUTOR_ADDRESS or the platform default.
    timeout: seconds to wait for the service on connect and for answers to
    status/describe/ping (None: forever). Runs wait as long as the job.
    server_pid: Windows only: the pid that must serve the named pipe
    (default: the PhoenixExecutor service's, from the SCM); nothing is sent
    to any other server.
    """

    def __init__(self, address: Optional[str] = None, *, timeout: Optional[float] = 30.0,
                 server_pid: Optional[int] = None):
        self._timeout = timeout
        self._t = open_transport(address, timeout, server_pid)
        self._send_lock = threading.Lock()
        self._closed = False

    # -- lifecycle --
    def close(self) -> None:
        """Close the connection (the service cancels this client's jobs)."""
        if not self._closed:
            self._closed = True
            self._t.close()

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the wire --
    def send(self, message: Mapping[str, Any]) -> None:
        """Send one protocol message (a dict) as a PXF1 frame."""
        data = frame.encode(dict(message))
        with self._send_lock:
            self._t.send(data)

    def receive(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Receive one message (CRC checked). timeout None: wait forever."""
        self._t.settimeout(timeout)
        return frame.read_frame(self._t.read_exact)

    def _ask(self, message: Mapping[str, Any], want: str) -> Dict[str, Any]:
        self.send(message)
        while True:
            m = self.receive(self._timeout)
            t = m.get("type")
            if t == want:
                return m
            if t == "error" and m.get("id") is None:
                raise error_for(str(m.get("code")), str(m.get("message", "")))

    # -- simple requests --
    def ping(self) -> None:
        """Check that the service answers."""
        self._ask({"type": "ping"}, "pong")

    def status(self) -> Dict[str, Any]:
        """The service's status (queue, workers, counters, ...) as a dict."""
        return self._ask({"type": "status"}, "status")

    def metrics(self) -> Dict[str, Any]:
        """The engine's counters and latency histograms as a dict."""
        return self._ask({"type": "metrics"}, "metrics")

    def cluster_status(self) -> Dict[str, Any]:
        """The cluster's workers as this daemon reads them from PX_NODES
        (``workers``: name, pool, slots, in_flight, free, attestation,
        accepting, version, heartbeat_ms, age_ms, stale) and this daemon's
        own mode and connection. Raises ClusterOff when cluster.mode is
        off, ClusterUnavailable when NATS cannot be reached."""
        return self._ask({"type": "cluster_status"}, "cluster_status")

    def describe(self) -> Description:
        """Runtimes, the limit policy and what this client may use."""
        return Description.from_message(self._ask({"type": "describe"}, "describe"))

    def cancel(self, job_id: str) -> None:
        """Ask the service to cancel one of this connection's jobs; its
        result (status ``cancelled``) arrives where the job is awaited."""
        self.send({"type": "cancel", "id": job_id})

    # -- runs --
    def run(self, runtime: str, code: str, **options: Any) -> Result:
        """Run code and return its one Result (also for rejected jobs: see
        Result.raise_for_status). Options as in stream()."""
        for ev in self.stream(runtime, code, _stream_output=False, **options):
            if isinstance(ev, Result):
                return ev
        raise ProtocolError("the connection ended without a result")

    def stream(self, runtime: str, code: str, *, args: Optional[Sequence[str]] = None,
               stdin: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
               files: Optional[Sequence[Mapping[str, str]]] = None,
               limits: Optional[Mapping[str, int]] = None,
               capabilities: Optional[Sequence[str]] = None, priority: Optional[str] = None,
               job_id: Optional[str] = None, kb_rollback: Optional[str] = None,
               high_trust: bool = False, collect: Optional[Any] = None,
               placement: Optional[str] = None,
               _stream_output: bool = True) -> Iterator[Event]:
        """Run code and yield its events as they arrive: Accepted, Started,
        Output chunks, and the Result last. limits: any of cpu_ms, wall_ms,
        memory_bytes, processes, output_bytes, disk_bytes (ints). files: dicts
        with path, content and optionally encoding ("utf-8" or "base64").
        collect: the files to return (Result.files): a list of patterns
        ("*.png", "out/**"), or a dict with patterns, max_files and
        max_bytes. placement: "local" (the default), "cluster" (run on the
        executor's NATS cluster: the daemon needs cluster.mode submit or
        both, else the Result is rejected with cluster_unavailable) or "any"
        (the cluster only when no local slot is free; also needs a gateway)."""
        jid = job_id or f"py-{os.getpid()}-{next(_ids)}"
        msg: Dict[str, Any] = {"type": "run", "id": jid, "runtime": runtime, "code": code}
        if args is not None:
            msg["args"] = list(args)
        if stdin is not None:
            msg["stdin"] = stdin
        if env is not None:
            msg["env"] = dict(env)
        if files is not None:
            msg["files"] = [dict(f) for f in files]
        if limits:
            for k, v in limits.items():
                if k not in _LIMIT_KEYS or isinstance(v, bool) or not isinstance(v, int):
                    raise ValueError(f"limits.{k}: an integer limit among {_LIMIT_KEYS}")
            msg["limits"] = dict(limits)
        if capabilities is not None:
            msg["capabilities"] = list(capabilities)
        if priority is not None:
            msg["priority"] = priority
        if kb_rollback is not None:
            msg["kb_rollback"] = kb_rollback
        if high_trust:
            msg["high_trust"] = True
        if placement is not None:
            msg["placement"] = placement
        if collect is not None:
            msg["collect"] = dict(collect) if isinstance(collect, Mapping) else list(collect)
        if _stream_output:
            msg["stream"] = True
        self.send(msg)
        return self._events(jid)

    def _events(self, jid: str) -> Iterator[Event]:
        while True:
            m = self.receive(None)
            t, mid = m.get("type"), m.get("id")
            if t == "error" and (mid == jid or mid is None):
                if m.get("code") == "unknown_id":
                    continue  # a cancel that raced the result
                raise error_for(str(m.get("code")), str(m.get("message", "")), mid)
            if mid != jid:
                continue
            if t == "accepted":
                yield Accepted(jid, int(m.get("queue_position", 0)))
            elif t == "started":
                yield Started(jid)
            elif t == "output":
                yield Output(jid, str(m.get("stream")), str(m.get("data", "")))
            elif t == "result":
                yield Result.from_message(m)
                return


__all__ = ["Executor", "Event", "ExecutorError"]
