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


# Named pipe access, exactly what the client group's ACE grants that a
# client uses ("Named Pipe Security and Access Rights"): FILE_READ_DATA |
# FILE_WRITE_DATA | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES |
# SYNCHRONIZE. Never GENERIC_WRITE (what open(name, "r+b") asks for): for a
# pipe it maps to FILE_GENERIC_WRITE, whose FILE_APPEND_DATA is
# FILE_CREATE_PIPE_INSTANCE, which the service's DACL leaves out for
# clients, so a member of "PhoenixExecutor Users" would get
# ERROR_ACCESS_DENIED.
PIPE_ACCESS = 0x0001 | 0x0002 | 0x0080 | 0x0100 | 0x00100000
# SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION: whoever serves the pipe
# may identify this process, never act as it (CreateFileW, dwFlagsAndAttributes).
PIPE_FLAGS = 0x00100000 | 0x00010000
OPEN_EXISTING = 3
ERROR_PIPE_BUSY = 231
SERVICE_NAME = "PhoenixExecutor"


class _Win32:
    """The few kernel32/advapi32 calls the pipe client makes (ctypes).
    Tests substitute an object with the same methods."""

    def __init__(self):
        import ctypes
        from ctypes import wintypes as w
        self._c = ctypes
        k = ctypes.WinDLL("kernel32", use_last_error=True)
        a = ctypes.WinDLL("advapi32", use_last_error=True)
        self.INVALID = w.HANDLE(-1).value
        k.CreateFileW.restype = w.HANDLE
        k.CreateFileW.argtypes = [w.LPCWSTR, w.DWORD, w.DWORD, w.LPVOID, w.DWORD,
                                  w.DWORD, w.HANDLE]
        k.WaitNamedPipeW.argtypes = [w.LPCWSTR, w.DWORD]
        k.GetNamedPipeServerProcessId.argtypes = [w.HANDLE, ctypes.POINTER(w.ULONG)]
        k.ReadFile.argtypes = [w.HANDLE, w.LPVOID, w.DWORD, ctypes.POINTER(w.DWORD),
                               w.LPVOID]
        k.WriteFile.argtypes = [w.HANDLE, w.LPCVOID, w.DWORD, ctypes.POINTER(w.DWORD),
                                w.LPVOID]
        k.CloseHandle.argtypes = [w.HANDLE]
        a.OpenSCManagerW.restype = w.HANDLE
        a.OpenSCManagerW.argtypes = [w.LPCWSTR, w.LPCWSTR, w.DWORD]
        a.OpenServiceW.restype = w.HANDLE
        a.OpenServiceW.argtypes = [w.HANDLE, w.LPCWSTR, w.DWORD]
        a.QueryServiceStatusEx.argtypes = [w.HANDLE, ctypes.c_int, w.LPVOID, w.DWORD,
                                           ctypes.POINTER(w.DWORD)]
        a.CloseServiceHandle.argtypes = [w.HANDLE]
        self._k, self._a, self._w = k, a, w

    def last_error(self) -> int:
        return self._c.get_last_error()

    def create_file(self, name: str, access: int, flags: int):
        h = self._k.CreateFileW(name, access, 0, None, OPEN_EXISTING, flags, None)
        return None if h in (None, self.INVALID) else h

    def wait_named_pipe(self, name: str, ms: int) -> None:
        self._k.WaitNamedPipeW(name, ms)

    def server_pid(self, h):
        pid = self._w.ULONG(0)
        if not self._k.GetNamedPipeServerProcessId(h, self._c.byref(pid)):
            return None
        return pid.value

    def service_pid(self, name: str):
        """The pid the SCM runs the service as, or None (not running)."""
        scm = self._a.OpenSCManagerW(None, None, 0x0001)  # SC_MANAGER_CONNECT
        if not scm:
            return None
        try:
            svc = self._a.OpenServiceW(scm, name, 0x0004)  # SERVICE_QUERY_STATUS
            if not svc:
                return None
            try:
                buf = (self._c.c_ubyte * 36)()  # SERVICE_STATUS_PROCESS
                need = self._w.DWORD(0)
                if not self._a.QueryServiceStatusEx(svc, 0, buf, 36,
                                                    self._c.byref(need)):
                    return None
                state = int.from_bytes(bytes(buf[4:8]), "little")
                pid = int.from_bytes(bytes(buf[28:32]), "little")
                return pid if state == 4 and pid else None  # SERVICE_RUNNING
            finally:
                self._a.CloseServiceHandle(svc)
        finally:
            self._a.CloseServiceHandle(scm)

    def write(self, h, data: bytes) -> int:
        n = self._w.DWORD(0)
        if not self._k.WriteFile(h, data, len(data), self._c.byref(n), None):
            return -1
        return n.value

    def read(self, h, cap: int):
        buf = self._c.create_string_buffer(cap)
        n = self._w.DWORD(0)
        if not self._k.ReadFile(h, buf, cap, self._c.byref(n), None):
            return None
        return buf.raw[:n.value]

    def close(self, h) -> None:
        self._k.CloseHandle(h)


class NamedPipeTransport:
    """PXF1 over a Windows named pipe (byte mode). Reads block: the timeout
    applies to opening the pipe only.

    Before the first byte is written the pipe's server process
    (GetNamedPipeServerProcessId) must be the PhoenixExecutor service's
    (QueryServiceStatusEx), or server_pid when given (a console-mode
    server): anyone can create a pipe of a name nobody holds, and a client
    that writes first hands its code to that squatter. The pipe is opened
    with SECURITY_IDENTIFICATION, so the server can identify the caller but
    never impersonate it."""

    def __init__(self, name: str, timeout: Optional[float],
                 server_pid: Optional[int] = None, _api=None):
        self._api = api = _api if _api is not None else _Win32()
        self._h = None
        tries = max(1, int((timeout if timeout is not None else 5.0) * 10))
        for _ in range(tries):
            self._h = api.create_file(name, PIPE_ACCESS, PIPE_FLAGS)
            if self._h is not None:
                break
            err = api.last_error()
            if err != ERROR_PIPE_BUSY:
                raise TransportError(f"cannot open {name}: Win32 error {err}")
            api.wait_named_pipe(name, 100)  # every instance busy
        if self._h is None:
            raise TransportError(f"cannot open {name}: every pipe instance busy")
        try:
            self._verify(name, server_pid)
        except TransportError:
            api.close(self._h)
            self._h = None
            raise

    def _verify(self, name: str, server_pid: Optional[int]) -> None:
        got = self._api.server_pid(self._h)
        if got is None:
            raise TransportError(f"cannot identify the server of {name} "
                                 "(GetNamedPipeServerProcessId): refusing to "
                                 "send anything")
        want = server_pid if server_pid is not None else \
            self._api.service_pid(SERVICE_NAME)
        if want is None:
            raise TransportError(f"{name} is served by pid {got}, but the "
                                 f"{SERVICE_NAME} service is not running: "
                                 "refusing to send anything (for a console-"
                                 "mode server, pass server_pid)")
        if got != want:
            raise TransportError(f"{name} is served by pid {got}, not by the "
                                 f"{SERVICE_NAME} service (pid {want}): "
                                 "refusing to send anything (another process "
                                 "holds the name)")

    def settimeout(self, timeout: Optional[float]) -> None:
        pass

    def send(self, data: bytes) -> None:
        off = 0
        while off < len(data):
            n = self._api.write(self._h, data[off:])
            if n <= 0:
                raise TransportError(f"send failed: Win32 error {self._api.last_error()}")
            off += n

    def read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._api.read(self._h, min(n - len(buf), 1 << 20))
            if chunk is None:
                err = self._api.last_error()
                if err == 109:  # ERROR_BROKEN_PIPE
                    raise TransportError("the service closed the connection")
                raise TransportError(f"receive failed: Win32 error {err}")
            if not chunk:
                raise TransportError("the service closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        if self._h is not None:
            self._api.close(self._h)
            self._h = None


def open_transport(address: Optional[str], timeout: Optional[float],
                   server_pid: Optional[int] = None):
    """Connect to address (None: the default); a name starting with \\\\ is
    a named pipe, anything else a Unix socket path. server_pid: the pid
    that must serve the pipe (default: the PhoenixExecutor service's)."""
    addr = address or os.environ.get("PHOENIX_EXECUTOR_ADDRESS") or default_address()
    if addr.startswith("\\\\"):
        return NamedPipeTransport(addr, timeout, server_pid)
    return UnixSocketTransport(addr, timeout)
