"""Whole JSON documents read strictly: the metric files (an errors file, a flip baseline,
``metrics.json``), where a value that JSON does not allow or a key given twice must not pass
unseen."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Union

from schemas.release import JsonValue

__all__ = ["parse_json", "read_json"]


def parse_json(data: Union[str, bytes], where: str) -> JsonValue:
    """The JSON document of a text; an invalid text (not UTF-8, not JSON, ``NaN`` or ``Infinity``,
    an object with a key twice: the last value would win unseen) is a ValueError naming ``where``."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, parse_constant=lambda name: _raise(f"{name} is not a number JSON allows"),
                          object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: not UTF-8 text") from err
    except ValueError as err:
        raise ValueError(f"{where}: not valid JSON ({err})") from err


def read_json(path) -> JsonValue:
    """The JSON document of a local file (:func:`parse_json`); a missing or unreadable file is a
    ValueError naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {(err.strerror or type(err).__name__).lower()}") from err
    return parse_json(data, str(path))


def _raise(message):
    raise ValueError(message)


def _unique_keys(pairs) -> dict:
    """``object_pairs_hook`` of :func:`parse_json`: the object as a dict, refusing a repeated key."""
    document = {}
    for key, value in pairs:
        if key in document:
            raise ValueError(f"the key {json.dumps(key)} appears twice in one object")
        document[key] = value
    return document
