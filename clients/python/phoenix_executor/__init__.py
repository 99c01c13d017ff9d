"""phoenix_executor - a standard-library-only client for PhoenixExecutor.

Connects over the Unix socket (Linux) or the named pipe (Windows), speaks the
PXF1 framing itself (CRC-32 checked both ways) and maps the protocol's error
codes to typed exceptions. See docs/agents.md and docs/protocol.md.
"""
from .client import Event, Executor
from .errors import *  # noqa: F401,F403  (the typed exceptions)
from .errors import ExecutorError, JobFailed, ProtocolError, TransportError, error_for
from .transport import DEFAULT_PIPE, DEFAULT_SOCKET, default_address
from .types import (Accepted, AuditFinding, Description, Output, OutputFile, Result, Runtime,
                    Started, Usage, Violation)

__version__ = "0.1.0"

__all__ = ["Executor", "Event", "Result", "OutputFile", "Violation", "Usage", "AuditFinding",
           "Accepted",
           "Started", "Output", "Runtime", "Description", "ExecutorError", "JobFailed",
           "ProtocolError", "TransportError", "error_for", "DEFAULT_PIPE", "DEFAULT_SOCKET",
           "default_address"]
