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
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Mapping, Optional, Sequence

import google_crc32c

from schemas.tfds import BYTES_LIST, FLOAT_LIST, INT64_LIST

if TYPE_CHECKING:
    from schemas.records import FileInfo

    from pipelines.formats.release_sink import ReleaseFiles

__all__ = ["HEADER_BYTES", "FRAMING_BYTES", "TFRecordError", "masked_crc32c", "frame_record", "iter_records",
           "encode_example", "decode_example", "write_config_shards"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
HEADER_BYTES = _LENGTH.size + _CRC.size
"""Bytes before a record's data: its length and the length's CRC."""
FRAMING_BYTES = HEADER_BYTES + _CRC.size
"""Bytes a record adds to its data in a TFRecord file (16)."""

_BYTES_FIELD, _FLOAT_FIELD, _INT64_FIELD = 1, 2, 3


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


def _bytes_list(values: list) -> tuple[list, int]:
    items, size = [], 0
    for v in values:
        data = v.encode("utf-8") if isinstance(v, str) else v
        chunks, length = _delimited(1, [data], len(data))
        items += chunks
        size += length
    return _delimited(_BYTES_FIELD, items, size)


def _int64_list(values: list) -> tuple[list, int]:
    packed = b"".join(_varint(v) for v in values)
    inner = _field(1, packed) if packed else b""
    return _delimited(_INT64_FIELD, [inner], len(inner))


def _float_list(values: list) -> tuple[list, int]:
    packed = struct.pack(f"<{len(values)}f", *values)
    inner = _field(1, packed) if packed else b""
    return _delimited(_FLOAT_FIELD, [inner], len(inner))


_LIST_WRITERS = {BYTES_LIST: _bytes_list, INT64_LIST: _int64_list, FLOAT_LIST: _float_list}


def _list_kind(value: Any) -> Optional[str]:
    """The list a single value goes to by its Python type: bytes/str, int (not bool) or float."""
    if isinstance(value, (bytes, str)):
        return BYTES_LIST
    if isinstance(value, int) and not isinstance(value, bool):
        return INT64_LIST
    return FLOAT_LIST if isinstance(value, float) else None


def _feature(value: Any) -> tuple[list, int]:
    """A value whose list kind follows its Python type (an example without declared features)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    kinds = {_list_kind(v) for v in values} or {BYTES_LIST}
    if len(kinds) != 1 or None in kinds:
        raise ValueError(f"a feature value must be bytes/str, int or float (or a list of one kind), got {value!r:.80}")
    return _LIST_WRITERS[kinds.pop()](values)


def _declared_feature(name: str, feature: Any, value: Any) -> tuple[list, int]:
    """A value stored as its declared feature connector says (``feature.stored_as``, ``feature.stored``)."""
    values, kind = feature.stored(value), feature.stored_as
    if not all(_list_kind(v) == kind and not isinstance(v, str) for v in values):
        raise ValueError(f"feature {name!r} is declared as {type(feature).__name__} (a {kind} list), "
                         f"got {value!r:.80}")
    return _LIST_WRITERS[kind](values)


def _check_names(values: Mapping[str, Any], features: Mapping[str, Any]) -> None:
    """Raise ValueError unless ``values`` holds exactly the declared ``features``: a value of an
    undeclared name would be lost without a word, a declared one without a value is malformed."""
    missing = sorted(set(features) - set(values))
    if missing:
        raise ValueError(f"the example has no value for its declared feature(s) {', '.join(missing)}")
    undeclared = sorted(set(values) - set(features))
    if undeclared:
        raise ValueError(f"the example has values of undeclared feature(s) {', '.join(undeclared)}; declared: "
                         f"{', '.join(sorted(features))}")


def encode_example(values: Mapping[str, Any], features: Optional[Mapping[str, Any]] = None) -> bytes:
    """Serialize ``{name: value}`` as a ``tf.train.Example``.

    Parameters
    ----------
    values : mapping
        The example's values by feature name.
    features : mapping, optional
        The declared feature connectors (:attr:`schemas.tfds.TfdsDataset.features`): the example
        stores exactly these, each value as its connector declares (``stored_as``: a BytesList,
        an Int64List or a FloatList of ``stored(value)``). Without them, ``bytes``/``str`` values become a BytesList, ``int`` an Int64List,
        ``float`` a FloatList, and a list or tuple of one kind a list of several values (the
        examples of inputs this project does not declare, e.g. TFDS's ``imagenet2012``).

    Raises
    ------
    ValueError
        When a declared feature has no value, a value's name is not declared, or a value is not of
        its feature's kind.
    """
    if features is not None:
        _check_names(values, features)
    entries, size = [], 0
    for name in sorted(values if features is None else features):
        key = _field(1, name.encode("utf-8"))
        feature = _feature(values[name]) if features is None else _declared_feature(name, features[name], values[name])
        value, value_size = _delimited(2, *feature)
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
            if kind == _BYTES_FIELD:
                values.append(item)
            elif kind == _INT64_FIELD:
                if wire == 0:
                    values.append(_signed(item))
                else:
                    position = 0
                    while position < len(item):
                        value, position = _read_varint(item, position)
                        values.append(_signed(value))
            elif kind == _FLOAT_FIELD:
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


def write_config_shards(release: "ReleaseFiles", group: str, shard_refs: Sequence[Sequence[tuple]]) -> list["FileInfo"]:
    """Write the TFDS files of config ``group``: its TFRecord shards, from the spilled examples
    ``shard_refs`` (per shard, ``(part, offset, length)`` in key order; a shard that received none is
    written empty), then ``dataset_info.json``, ``features.json`` and the label files; return them."""
    from pipelines.formats import storage
    from pipelines.formats.spill import SpillReader

    output_dir, dataset, shard_count = release.output_dir, release.dataset, release.shard_count
    folder = dataset.config_dir(group)
    lengths, num_bytes, reader, infos = [0] * shard_count, [0], SpillReader(output_dir), []

    def frames(index):
        for ref in shard_refs[index]:
            example = reader.read(*ref)
            lengths[index] += 1
            num_bytes[0] += len(example)
            yield frame_record(example)

    try:
        for index in range(shard_count):
            infos.append(storage.write_atomic(output_dir, f"{folder}/{dataset.shard_name(index, shard_count)}",
                                              frames(index), group=group))
    finally:
        reader.close()
    files = {"dataset_info.json": dataset.dataset_info_json(group, lengths, num_bytes[0]),
             "features.json": dataset.features_json(), **dataset.metadata_files()}
    for name, text in sorted(files.items()):
        infos.append(storage.write_atomic(output_dir, f"{folder}/{name}", text.encode("utf-8"), group=group))
    return infos
