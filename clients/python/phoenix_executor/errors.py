"""Typed exceptions for PhoenixExecutor's error codes (docs/protocol.md, section 5).

Every code the service sends maps to one class; an unknown (newer) code
maps to :class:`ExecutorError` itself, with ``code`` set. Refusals of a run
arrive as a ``rejected`` :class:`~phoenix_executor.Result`, not as an
exception; :meth:`Result.raise_for_status` turns them into these classes.
"""
from typing import Dict, Optional, Type


class ExecutorError(Exception):
    """An ``error`` message (or a refused/failed result) from the service."""

    code: str = ""

    def __init__(self, message: str, code: Optional[str] = None, job_id: Optional[str] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.job_id = job_id

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


class TransportError(ExecutorError):
    """The connection failed, closed, or timed out (no service code)."""

    code = "transport"


class ProtocolError(ExecutorError):
    """The service sent something that is not a valid PXF1 frame (bad magic,
    oversized, CRC-32 mismatch) or not a JSON object."""

    code = "protocol"


class BadFrame(ExecutorError):
    code = "bad_frame"


class FrameTooLarge(ExecutorError):
    code = "frame_too_large"


class BadCrc(ExecutorError):
    code = "bad_crc"


class BadJson(ExecutorError):
    code = "bad_json"


class UnknownType(ExecutorError):
    code = "unknown_type"


class BadRequest(ExecutorError):
    code = "bad_request"


class DuplicateId(ExecutorError):
    code = "duplicate_id"


class UnknownId(ExecutorError):
    code = "unknown_id"


class Forbidden(ExecutorError):
    code = "forbidden"


class UnknownRuntime(ExecutorError):
    code = "unknown_runtime"


class LimitExceedsPolicy(ExecutorError):
    code = "limit_exceeds_policy"


class CapabilityDenied(ExecutorError):
    code = "capability_denied"


class AuditRejected(ExecutorError):
    code = "audit_rejected"


class ArgvTooLong(ExecutorError):
    code = "argv_too_long"


class QueueFull(ExecutorError):
    code = "queue_full"


class Paused(ExecutorError):
    code = "paused"


class SpawnFailed(ExecutorError):
    """The job's process could not be set up: its program is missing, or
    the service's own preparation for it failed."""

    code = "spawn_failed"


class ProcessCreateFailed(ExecutorError):
    """The operating system refused to create (or start) the job's process:
    nothing ran, and the same job may well succeed when tried again."""

    code = "process_create_failed"


class SandboxFailed(ExecutorError):
    code = "sandbox_failed"


class Internal(ExecutorError):
    code = "internal"


class KbUnavailable(ExecutorError):
    code = "kb_unavailable"


class UnknownSnapshot(ExecutorError):
    code = "unknown_snapshot"


class KbFailed(ExecutorError):
    code = "kb_failed"


class SandboxUnverified(ExecutorError):
    code = "sandbox_unverified"


class ExecutorLost(ExecutorError):
    """A cluster job whose worker was lost after it started: it was not run
    again (docs/cluster-protocol.md; ``retry: "idempotent"`` allows that)."""

    code = "executor_lost"


class ClusterUnavailable(ExecutorError):
    """A run with placement "cluster" that could not be forwarded: this
    daemon has no cluster gateway (cluster.mode submit or both), or NATS is
    not reachable (docs/cluster.md)."""

    code = "cluster_unavailable"


class ClusterOff(ExecutorError):
    """``cluster_status`` on a daemon that is not in a cluster (cluster.mode
    off; the Windows service always)."""

    code = "cluster_off"


class JobFailed(ExecutorError):
    """A job that ran but did not succeed: ``nonzero_exit``, ``killed``,
    ``cancelled`` or ``aborted`` (from :meth:`Result.raise_for_status`)."""

    def __init__(self, message: str, result: "object"):
        super().__init__(message, code=getattr(result, "status", None),
                         job_id=getattr(result, "id", None))
        self.result = result


_BY_CODE: Dict[str, Type[ExecutorError]] = {
    c.code: c
    for c in (BadFrame, FrameTooLarge, BadCrc, BadJson, UnknownType, BadRequest, DuplicateId,
              UnknownId, Forbidden, UnknownRuntime, LimitExceedsPolicy, CapabilityDenied,
              AuditRejected, ArgvTooLong, QueueFull, Paused, SpawnFailed, SandboxFailed,
              Internal, KbUnavailable, UnknownSnapshot, KbFailed, SandboxUnverified,
              ProcessCreateFailed, ExecutorLost, ClusterUnavailable, ClusterOff)
}


def error_for(code: str, message: str, job_id: Optional[str] = None) -> ExecutorError:
    """The exception for a protocol error code (ExecutorError for unknown codes)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return ExecutorError(message, code=code, job_id=job_id)
    return cls(message, job_id=job_id)
