"""Dataclasses for what the service sends back (docs/protocol.md, section 4).

Integers are Python ints, exact to 2^64-1 (the JSON text is never read
through a float).
"""
import base64
import binascii
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import ExecutorError, JobFailed, error_for


@dataclass(frozen=True)
class Violation:
    """The limit that ended a job: ``limit`` is ``memory``, ``cpu_time``,
    ``wall_time``, ``processes``, ``output``, ``sandbox``, ``disk``, ``files``
    or ``handles``; ``configured`` and ``observed`` in bytes, ms or counts."""

    limit: str
    configured: int
    observed: int
    detected_by: Optional[str]


@dataclass(frozen=True)
class Usage:
    wall_ms: int = 0
    cpu_ms: int = 0
    user_ms: int = 0
    kernel_ms: int = 0
    peak_memory_bytes: int = 0
    processes: int = 0


@dataclass(frozen=True)
class AuditFinding:
    rule: str
    line: int
    severity: str
    message: str


@dataclass(frozen=True)
class OutputFile:
    """A file the job left that matched its ``collect`` patterns: ``data``
    holds its bytes, or ``skipped`` says why it was not collected (a link,
    a special file, past a cap...)."""

    path: str
    bytes: int
    sha256: Optional[str] = None
    media_type: Optional[str] = None
    data: Optional[bytes] = field(default=None, repr=False)
    skipped: Optional[str] = None

    @classmethod
    def from_message(cls, f: Dict[str, Any]) -> "OutputFile":
        data = None
        if isinstance(f.get("content"), str):
            try:
                data = base64.b64decode(f["content"], validate=True)
            except (binascii.Error, ValueError) as e:
                raise ExecutorError(f"file {f.get('path')!r}: content is not base64: {e}")
        return cls(path=str(f.get("path", "")), bytes=int(f.get("bytes", 0)),
                   sha256=f.get("sha256"), media_type=f.get("media_type"), data=data,
                   skipped=f.get("skipped"))


def _safe_relpath(path: str) -> str:
    """A path from the service, checked before it is written anywhere:
    relative, '/'-separated, no empty, '.' or '..' segment, no drive or
    alternate stream (':'), no backslash."""
    parts = path.split("/")
    if (not path or path.startswith("/") or "\\" in path or ":" in path
            or any(p in ("", ".", "..") for p in parts)):
        raise ExecutorError(f"refusing the collected file path {path!r}")
    return os.path.join(*parts)


@dataclass(frozen=True)
class Result:
    """A job's one result. ``status`` is ``ok``, ``nonzero_exit``, ``killed``,
    ``cancelled``, ``rejected``, ``error`` or ``aborted``."""

    id: str
    status: str
    exit_code: Optional[int]
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    output_lossy: bool
    violation: Optional[Violation]
    usage: Usage
    audit: List[AuditFinding]
    kb: Optional[Dict[str, Any]]
    enforcement: List[str]
    error_code: Optional[str] = None
    error_message: Optional[str] = None
    files: List[OutputFile] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def save_files(self, directory: str, overwrite: bool = False) -> List[str]:
        """Write the collected files below ``directory`` (created if needed)
        and return their paths. A path that would leave the directory is
        refused (ExecutorError), and an existing file is never replaced
        unless ``overwrite``. Skipped entries are not written."""
        written = []
        os.makedirs(directory, exist_ok=True)
        for f in self.files:
            if f.data is None:
                continue
            rel = _safe_relpath(f.path)
            target = os.path.join(directory, rel)
            os.makedirs(os.path.dirname(target) or directory, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
            flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
            fd = os.open(target, flags, 0o666)
            with os.fdopen(fd, "wb") as out:
                out.write(f.data)
            written.append(target)
        return written

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def raise_for_status(self) -> "Result":
        """Return self when ok; raise the typed error for ``rejected`` and
        ``error`` results (e.g. :class:`CapabilityDenied`), :class:`JobFailed`
        for the others."""
        if self.status == "ok":
            return self
        if self.status in ("rejected", "error") and self.error_code:
            raise error_for(self.error_code, self.error_message or "", self.id)
        if self.violation:
            raise JobFailed(f"job {self.id} killed: {self.violation.limit} limit "
                            f"{self.violation.configured} exceeded "
                            f"(observed {self.violation.observed})", self)
        raise JobFailed(f"job {self.id} ended {self.status} (exit {self.exit_code})", self)

    @classmethod
    def from_message(cls, m: Dict[str, Any]) -> "Result":
        v = m.get("violation")
        err = m.get("error") or {}
        return cls(
            id=m.get("id", ""), status=m.get("status", "error"), exit_code=m.get("exit_code"),
            stdout=m.get("stdout", ""), stderr=m.get("stderr", ""),
            stdout_truncated=bool(m.get("stdout_truncated")),
            stderr_truncated=bool(m.get("stderr_truncated")),
            output_lossy=bool(m.get("output_lossy")),
            violation=Violation(v["limit"], v["configured"], v["observed"], v.get("detected_by"))
            if v else None,
            usage=Usage(**{k: m.get("usage", {}).get(k, 0) for k in Usage.__dataclass_fields__}),
            audit=[AuditFinding(a.get("rule", ""), a.get("line", 0), a.get("severity", ""),
                                a.get("message", "")) for a in m.get("audit", [])],
            kb=m.get("kb"), enforcement=list(m.get("enforcement", [])),
            error_code=err.get("code"), error_message=err.get("message"),
            files=[OutputFile.from_message(f) for f in m.get("files", [])], raw=m)


@dataclass(frozen=True)
class Accepted:
    """The run is queued; ``queue_position`` jobs are ahead of it."""

    id: str
    queue_position: int


@dataclass(frozen=True)
class Started:
    id: str


@dataclass(frozen=True)
class Output:
    """A chunk of output (``stream`` is ``stdout`` or ``stderr``), whole
    UTF-8 characters."""

    id: str
    stream: str
    data: str


@dataclass(frozen=True)
class Runtime:
    name: str
    extension: str
    capability: str
    allowed: bool


@dataclass(frozen=True)
class Description:
    """The service's ``describe`` answer: runtimes, the limit policy and what
    this client may use."""

    version: str
    backend: str
    runtimes: List[Runtime]
    limits: Dict[str, Dict[str, int]]
    capabilities: List[str]
    admin: bool
    policy: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_message(cls, m: Dict[str, Any]) -> "Description":
        client = m.get("client", {})
        return cls(version=m.get("version", ""), backend=m.get("backend", ""),
                   runtimes=[Runtime(r["name"], r.get("extension", ""), r.get("capability", ""),
                                     bool(r.get("allowed"))) for r in m.get("runtimes", [])],
                   limits=m.get("limits", {}), capabilities=list(client.get("capabilities", [])),
                   admin=bool(client.get("admin")), policy=client.get("policy"), raw=m)


__all__ = ["Violation", "Usage", "AuditFinding", "Result", "Accepted", "Started", "Output",
           "Runtime", "Description", "ExecutorError"]
