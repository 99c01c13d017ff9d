"""The local transports: the Unix socket (Linux) and the named pipe (Windows).

Each gives ``send(bytes)``, ``read_exact(n)`` and ``close()``. Defaults are
the service's: ``/run/phoenix-executor/executor.sock`` and
``\\\\.\\pipe\\PhoenixExecutor``.
"""
import os
import socket
import sys
from typing import Optional

from .errors import TransportError

DEFAULT_SOCKET = "/run/phoenix-executor/executor.sock"
DEFAULT_PIPE = r"\\.\pipe\PhoenixExecutor"


def default_address() -> str:
    """The platform's default address of the local service."""
    return DEFAULT_PIPE if sys.platform == "win32" else DEFAULT_SOCKET


class UnixSocketTransport:
    """PXF1 over a Unix stream socket."""

    def __init__(self, path: str, timeout: Optional[float]):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise TransportError(f"cannot connect to {path}: {e}") from None

    def settimeout(self, timeout: Optional[float]) -> None:
        self._sock.settimeout(timeout)

    def send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as e:
            raise TransportError(f"send failed: {e}") from None

    def read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self._sock.recv(min(n - len(buf), 1 << 20))
            except socket.timeout:
                raise TransportError("timed out waiting for the service") from None
            except OSError as e:
                raise TransportError(f"receive failed: {e}") from None
            if not chunk:
                raise TransportError("the service closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self._sock.close()


class NamedPipeTransport:
    """PXF1 over a Windows named pipe (byte mode). Reads block: the timeout
    applies to opening the pipe only."""

    def __init__(self, name: str, timeout: Optional[float]):
        try:
            self._f = open(name, "r+b", buffering=0)
        except OSError as e:
            raise TransportError(f"cannot open {name}: {e}") from None

    def settimeout(self, timeout: Optional[float]) -> None:
        pass

    def send(self, data: bytes) -> None:
        try:
            self._f.write(data)
        except OSError as e:
            raise TransportError(f"send failed: {e}") from None

    def read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self._f.read(n - len(buf))
            except OSError as e:
                raise TransportError(f"receive failed: {e}") from None
            if not chunk:
                raise TransportError("the service closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self._f.close()


def open_transport(address: Optional[str], timeout: Optional[float]):
    """Connect to address (None: the default); a name starting with \\\\ is
    a named pipe, anything else a Unix socket path."""
    addr = address or os.environ.get("PHOENIX_EXECUTOR_ADDRESS") or default_address()
    if addr.startswith("\\\\"):
        return NamedPipeTransport(addr, timeout)
    return UnixSocketTransport(addr, timeout)
