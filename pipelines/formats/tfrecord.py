"""``tf.train.Example`` and TFRecord framing without TensorFlow.

An Example is a small protobuf (``tensorflow/core/example/{example,feature}.proto``)::

    Example  { Features features = 1; }
    Features { map<string, Feature> feature = 1; }
    Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1 [packed]; }
    Int64List { repeated int64 value = 1 [packed]; }

which :func:`encode_example` writes with the map entries in sorted key order (so equal features
give equal bytes). A TFRecord file is a sequence of
``uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)`` (little endian).
"""
from __future__ import annotations

import struct
from typing import Any, BinaryIO, Iterator, Mapping

import google_crc32c

__all__ = ["HEADER_BYTES", "FRAMING_BYTES", "TFRecordError", "masked_crc32c", "frame_record", "iter_records",
           "encode_example", "decode_example"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
HEADER_BYTES = _LENGTH.size + _CRC.size
"""Bytes before a record's data: its length and the length's CRC."""
FRAMING_BYTES = HEADER_BYTES + _CRC.size
"""Bytes a record adds to its data in a TFRecord file (16)."""

_BYTES_LIST, _FLOAT_LIST, _INT64_LIST = 1, 2, 3


class TFRecordError(ValueError):
    """A TFRecord file or a serialized Example is malformed."""


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """``data`` framed as one TFRecord (length, CRCs)."""
    length = _LENGTH.pack(len(data))
    return length + _CRC.pack(masked_crc32c(length)) + data + _CRC.pack(masked_crc32c(data))


def iter_records(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Yield ``(data offset, data)`` of every record of a TFRecord stream, checking the CRCs.

    Raises
    ------
    TFRecordError
        On a truncated record or a CRC mismatch.
    """
    position = 0
    while True:
        header = stream.read(HEADER_BYTES)
        if not header:
            return
        if len(header) != HEADER_BYTES:
            raise TFRecordError(f"truncated record header at byte {position}")
        length_bytes, (length_crc,) = header[:_LENGTH.size], _CRC.unpack(header[_LENGTH.size:])
        if masked_crc32c(length_bytes) != length_crc:
            raise TFRecordError(f"length CRC mismatch at byte {position}")
        (length,) = _LENGTH.unpack(length_bytes)
        data, footer = stream.read(length), stream.read(_CRC.size)
        if len(data) != length or len(footer) != _CRC.size:
            raise TFRecordError(f"truncated record at byte {position}")
        if masked_crc32c(data) != _CRC.unpack(footer)[0]:
            raise TFRecordError(f"data CRC mismatch at byte {position}")
        yield position + HEADER_BYTES, data
        position += length + FRAMING_BYTES


# --- protobuf wire format -------------------------------------------------------------------

_SMALL_VARINTS = tuple(bytes([value]) for value in range(0x80))
"""The one-byte varints 0..127 (every tag and most lengths of an Example's small fields)."""


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_VARINTS[value]
    value &= (1 << 64) - 1  # int64 two's complement, as protobuf encodes negatives
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _delimited(number: int, chunks: list, size: int) -> tuple[list, int]:
    """A length-delimited field around ``chunks`` (``size`` bytes together), as chunks and their
    size: an Example is joined once, so a large value (an encoded image) is copied once."""
    header = _varint(number << 3 | 2) + _varint(size)
    return [header, *chunks], len(header) + size


def _feature(value: Any) -> tuple[list, int]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if all(isinstance(v, (bytes, str)) for v in values):
        items, size = [], 0
        for v in values:
            data = v.encode("utf-8") if isinstance(v, str) else v
            chunks, length = _delimited(1, [data], len(data))
            items += chunks
            size += length
        return _delimited(_BYTES_LIST, items, size)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        packed = b"".join(_varint(v) for v in values)
        inner = _field(1, packed) if packed else b""
        return _delimited(_INT64_LIST, [inner], len(inner))
    if all(isinstance(v, float) for v in values):
        packed = struct.pack(f"<{len(values)}f", *values)
        inner = _field(1, packed) if packed else b""
        return _delimited(_FLOAT_LIST, [inner], len(inner))
    raise ValueError(f"a feature value must be bytes/str, int or float (or a list of one kind), got {value!r:.80}")


def encode_example(features: Mapping[str, Any]) -> bytes:
    """Serialize ``{name: value}`` as a ``tf.train.Example``.

    Parameters
    ----------
    features : mapping
        ``bytes``/``str`` values become a BytesList, ``int`` an Int64List, ``float`` a FloatList;
        a list or tuple of one kind becomes a list of several values (e.g. video frames).
    """
    entries, size = [], 0
    for name in sorted(features):
        key = _field(1, name.encode("utf-8"))
        value, value_size = _delimited(2, *_feature(features[name]))
        entry, entry_size = _delimited(1, [key, *value], len(key) + value_size)
        entries += entry
        size += entry_size
    return b"".join(_delimited(1, entries, size)[0])


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if position >= len(data) or shift > 63:
            raise TFRecordError("truncated or overlong varint")
        byte = data[position]
        result |= (byte & 0x7F) << shift
        position += 1
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(field number, wire type, value)``; value is an int (types 0, 5) or bytes (type 2)."""
    position = 0
    while position < len(data):
        key, position = _read_varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _read_varint(data, position)
        elif wire == 2:
            length, position = _read_varint(data, position)
            value, position = data[position:position + length], position + length
            if len(value) != length:
                raise TFRecordError("truncated length-delimited field")
        elif wire == 5:
            value, position = struct.unpack_from("<I", data, position)[0], position + 4
        elif wire == 1:
            value, position = struct.unpack_from("<Q", data, position)[0], position + 8
        else:
            raise TFRecordError(f"unsupported wire type {wire}")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _decode_feature(data: bytes) -> list:
    values: list = []
    for kind, _, payload in _fields(data):
        for number, wire, item in _fields(payload):
            if number != 1:
                continue
            if kind == _BYTES_LIST:
                values.append(item)
            elif kind == _INT64_LIST:
                if wire == 0:
                    values.append(_signed(item))
                else:
                    position = 0
                    while position < len(item):
                        value, position = _read_varint(item, position)
                        values.append(_signed(value))
            elif kind == _FLOAT_LIST:
                if wire == 5:
                    values.append(struct.unpack("<f", struct.pack("<I", item))[0])
                else:
                    values.extend(struct.unpack(f"<{len(item) // 4}f", item))
    return values


def decode_example(data: bytes) -> dict[str, list]:
    """Parse a serialized ``tf.train.Example`` into ``{name: [values]}`` (bytes, int or float).

    Raises
    ------
    TFRecordError
        If ``data`` is not a well-formed Example.
    """
    features: dict[str, list] = {}
    for number, _, payload in _fields(data):
        if number != 1:
            continue
        for entry_number, _, entry in _fields(payload):
            if entry_number != 1:
                continue
            name, value = b"", b""
            for part, _, content in _fields(entry):
                if part == 1:
                    name = content
                elif part == 2:
                    value = content
            features[name.decode("utf-8")] = _decode_feature(value)
    return features
