"""Kafka's frames: a request or response, its header and its body, as bytes, both ways.

Every frame is a 4-byte size and that many bytes.  A request's header names
its API key and version (the first four bytes after the size), which name the
header's own schema (flexible versions carry tagged fields) and the body's; a
response's header is the correlation id, in the schema the request's API and
version give (ApiVersions answers with the old header at every version: kio's
schemas say so).  kio writes and reads every field; nothing here encodes one
by hand.  The broker target (`wire.py`, a client) writes requests and reads
responses; a server on the same codec does the opposite.
"""
from __future__ import annotations

import io
from typing import Any

from kio import index as kio_index
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_int16, read_int32
from kio.serial.writers import write_int32

MAX_FRAME = 64 << 20       # Kafka's socket.request.max.bytes is 100 MB; nothing this project sends is near it


class FrameError(ValueError):
    """Bytes that are not the frame expected (one line: what is wrong with them)."""


def take_frame(buf: bytearray, limit: int = MAX_FRAME) -> bytes | None:
    """The first complete frame's bytes, removed from `buf`; None while it is incomplete.  FrameError for a
    size that no frame has (not positive, or over `limit`)."""
    if len(buf) < 4:
        return None
    size, _ = read_int32(bytes(buf[:4]), 0)
    if not 0 < size <= limit:
        raise FrameError(f"a frame's size field is {size}, outside 1 to {limit}")
    if len(buf) < 4 + size:
        return None
    data = bytes(buf[4:4 + size])
    del buf[:4 + size]
    return data


def _framed(header_cls: type, header: Any, body_cls: type, body: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(header_cls)(out, header)
    entity_writer(body_cls)(out, body)
    frame = io.BytesIO()
    write_int32(frame, len(out.getbuffer()))
    frame.write(out.getbuffer())
    return frame.getvalue()


def encode_request(entity: Any, correlation: int, client_id: str | None) -> bytes:
    """A request entity as a frame, in the header schema of its API and version."""
    header_cls = entity.__header_schema__
    header = header_cls(request_api_key=entity.__api_key__, request_api_version=entity.__version__,
                        correlation_id=correlation, client_id=client_id)
    return _framed(header_cls, header, type(entity), entity)


def request_schema(api_key: int, version: int) -> type:
    """The request schema of an API key and version; FrameError if Kafka's schemas define none."""
    try:
        return kio_index.load_request_schema(api_key, version)
    except Exception:      # noqa: BLE001 - kio's lookup errors: a key or version its schemas do not define
        raise FrameError(f"API key {api_key} version {version} is not one Kafka's schemas define") from None


def peek_api(data: bytes) -> tuple[int, int, int]:
    """(API key, version, correlation id) of a request frame's bytes: the fields every header version starts
    with, readable before its schema is known.  FrameError if the frame is too short to hold them."""
    if len(data) < 8:
        raise FrameError(f"a request of {len(data)} bytes is too short for a header")
    key, _ = read_int16(data, 0)
    version, _ = read_int16(data, 2)
    correlation, _ = read_int32(data, 4)
    return key, version, correlation


def decode_request(data: bytes) -> tuple[Any, Any]:
    """(header, request entity) of a request frame's bytes.  FrameError if the API key or version is none of
    Kafka's, or the bytes are not its request (short, long, or garbled)."""
    key, version, _ = peek_api(data)
    cls = request_schema(key, version)
    return _read(cls.__header_schema__, cls, data)


def encode_response(entity: Any, correlation: int) -> bytes:
    """A response entity as a frame, in the header schema of its API and version."""
    header_cls = entity.__header_schema__
    return _framed(header_cls, header_cls(correlation_id=correlation), type(entity), entity)


def decode_response(data: bytes, response_cls: type) -> tuple[Any, Any]:
    """(header, response entity) of a response frame's bytes, read as `response_cls`.  FrameError if they are
    not (short, long, or garbled)."""
    return _read(response_cls.__header_schema__, response_cls, data)


def _read(header_cls: type, body_cls: type, data: bytes) -> tuple[Any, Any]:
    try:
        header, at = entity_reader(header_cls)(data, 0)
        body, used = entity_reader(body_cls)(data, at)
    except Exception as e:    # noqa: BLE001 - kio's decode errors (and any other): the bytes are not this message
        raise FrameError(f"the bytes cannot be read as Kafka's {_name(body_cls)} ({type(e).__name__})") from None
    if at + used != len(data):
        raise FrameError(f"Kafka's {_name(body_cls)} has {len(data) - at - used} bytes more than its schema gives it")
    return header, body


def _name(cls: type) -> str:
    return f"{cls.__name__} v{cls.__version__}"
