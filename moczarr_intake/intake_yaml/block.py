"""Block-style YAML text for the catalog files: JSON-like documents, read back exactly by any YAML loader.

PyYAML's representer is pure Python even with libyaml's emitter: it took 5.5 s
of a 1,000-product build for the two Intake catalogs. Documents here hold only
dicts (string keys), lists, strings, numbers, booleans and None, and this
writer spells them directly:

- every string value is double-quoted with JSON's escapes, which YAML's
  double-quoted scalars accept, so no value reads back as another type
  (``"no"``, ``"1.0"``, ``"null"``, ``""``); a key is left plain only when
  nothing could read it otherwise;
- floats always carry a dot (YAML 1.1 loaders, PyYAML among them, read
  ``1e-05`` as a string), and NaN and the infinities are ``.nan``/``.inf``;
- mappings keep their keys' order, as ``yaml.dump(sort_keys=False)``.
"""

from __future__ import annotations

import json
import math
import re

__all__ = ["dump"]

#: a key that reads back as itself, a string, when written plain
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")
#: YAML 1.1's words for booleans and null, which a plain key must not be
_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
#: characters a YAML loader takes as line breaks or refuses unescaped, but JSON leaves raw
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")
#: ``json.dumps(text, ensure_ascii=False)`` with one encoder (``dumps`` makes one a call for non-default options)
_json_string = json.JSONEncoder(ensure_ascii=False).encode


def dump(doc: dict) -> str:
    """``doc`` as block-style YAML text ending in a newline.

    Raises ``TypeError`` naming the value for anything but dicts with string
    keys, lists, tuples, strings, ints, floats, booleans and None.
    """
    if not isinstance(doc, dict):
        raise TypeError(f"a YAML document here is a dict, not {type(doc).__name__}")
    if not doc:
        return "{}\n"
    lines: list[str] = []
    _mapping(doc, 0, lines)
    return "\n".join(lines) + "\n"


def _mapping(doc: dict, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for key, value in doc.items():
        if not isinstance(key, str):
            raise TypeError(f"a YAML key here is a string, not {key!r}")
        name = key if _PLAIN_KEY.match(key) and key.lower() not in _WORDS else _quoted(key)
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{name}:")
            _mapping(value, indent + 2, lines)
        elif isinstance(value, (list, tuple)) and value:
            lines.append(f"{pad}{name}:")
            _sequence(value, indent + 2, lines)
        else:
            lines.append(f"{pad}{name}: {_scalar(value)}")


def _sequence(items: list | tuple, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for value in items:
        if isinstance(value, (dict, list, tuple)) and value:
            start = len(lines)
            if isinstance(value, dict):
                _mapping(value, indent + 2, lines)
            else:
                _sequence(value, indent + 2, lines)
            lines[start] = f"{pad}- {lines[start][indent + 2 :]}"  # the first entry on the dash's line
        else:
            lines.append(f"{pad}- {_scalar(value)}")


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        return text if "." in mantissa else f"{mantissa}.0{e}{exponent}"
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, dict):  # empty: non-empty mappings are blocks
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    raise TypeError(f"no YAML spelling here for {type(value).__name__} {value!r}")


def _quoted(text: str) -> str:
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", _json_string(text))
