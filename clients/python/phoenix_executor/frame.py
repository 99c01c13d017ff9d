"""PXF1 framing (docs/protocol.md, section 1): 4-byte magic ``PXF1``, payload
length (uint32 LE), CRC-32 of the payload (uint32 LE, zlib's crc32), then
one UTF-8 JSON object. Both directions are checked: frames we send carry
the CRC, frames we receive are refused when the CRC does not match."""
import json
import struct
import zlib
from typing import Any, Callable, Dict

from .errors import ProtocolError, TransportError

MAGIC = b"PXF1"
HEADER = 12
MAX_PAYLOAD = 256 * 1024 * 1024  # the service's largest configurable frame


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE, reflected; zlib's). crc32(b"123456789") == 0xCBF43926."""
    return zlib.crc32(data) & 0xFFFFFFFF


def encode(message: Dict[str, Any]) -> bytes:
    """One frame for message (compact JSON, UTF-8, ints written exactly)."""
    payload = json.dumps(message, ensure_ascii=False, separators=(",", ":"),
                         allow_nan=False).encode("utf-8")
    return MAGIC + struct.pack("<II", len(payload), crc32(payload)) + payload


def decode_payload(payload: bytes) -> Dict[str, Any]:
    """Parse a payload. JSON integers become Python ints (exact, never through
    a float); a fraction would become a float, which the protocol never
    sends for counters, limits or usage."""
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"the service sent a payload that is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("the service sent a payload that is not a JSON object")
    return obj


def read_frame(read_exact: Callable[[int], bytes]) -> Dict[str, Any]:
    """Read one frame with read_exact(n) (which returns exactly n bytes or
    raises TransportError) and return its JSON object."""
    header = read_exact(HEADER)
    if header[:4] != MAGIC:
        raise ProtocolError(f"bad frame magic {header[:4]!r}")
    length, crc = struct.unpack("<II", header[4:])
    if length > MAX_PAYLOAD:
        raise ProtocolError(f"frame of {length} bytes is larger than {MAX_PAYLOAD}")
    payload = read_exact(length) if length else b""
    if crc32(payload) != crc:
        raise ProtocolError(f"frame CRC-32 mismatch: header {crc:#010x}, payload {crc32(payload):#010x}")
    return decode_payload(payload)


__all__ = ["crc32", "encode", "read_frame", "decode_payload", "TransportError", "MAGIC"]
