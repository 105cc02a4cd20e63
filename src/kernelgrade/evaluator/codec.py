"""Frozen dataclasses to JSON-ready values and back, driven by their type hints.

One codec for everything the evaluator writes as JSON: the run and compile children's messages (wire/) and the
results kept in storage (result.py). Encoding follows the value; decoding follows the declared types and is
strict: a wrong type, a missing required field or (unless the codec ignores them) an unknown field raises
DecodeError naming the bad field's path, e.g. `body.outputs[1].shape[0]`.

Supported: dataclasses, tuple[X, ...], tuple[X, Y], list[X], dict[str, X], X | Y (X | None), Enum (StrEnum
included, by value), bool, int, float, str, Path (as a string), and `object`: any JSON value kept as it came
(an envelope's body, decoded once its type is known).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePath
from typing import TypeAlias, TypeVar

# The item types of an array that is written as it is (no bool: its type is not int).
_NUMBERS = frozenset({int, float})

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
T = TypeVar("T")


class DecodeError(ValueError):
    """A JSON value that does not read as the declared type."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or 'the value'}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class Codec:
    # JSON has no NaN: where this is set, NaN floats are written as null and null reads as NaN in a float field.
    nan_as_null: bool = False
    # Skip fields a dataclass does not have (any more) instead of refusing them.
    ignore_unknown: bool = False

    def encode(self, value: object) -> JSONValue:
        if isinstance(value, Enum):  # first: a StrEnum is a str too, and is written as its plain value
            return self.encode(value.value)
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return None if self.nan_as_null and math.isnan(value) else value
        if isinstance(value, tuple | list):
            return self._encode_array(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.encode_dataclass(value)
        if isinstance(value, dict):
            return {_key(k): self.encode(v) for k, v in value.items()}
        if isinstance(value, PurePath):
            return str(value)
        raise TypeError(f"the codec has no JSON form for a {type(value).__name__}")

    def _encode_array(self, values: tuple[object, ...] | list[object]) -> list[JSONValue]:
        # A timed phase's reply holds thousands of floats, and the child writes it inside the judge's clock around
        # that phase: an array of plain numbers is written at once (unless a NaN in it is to be written as null).
        nan = self.nan_as_null and any(math.isnan(v) for v in values if isinstance(v, float))
        if set(map(type, values)) <= _NUMBERS and not nan:
            return list(values)  # type: ignore[arg-type]  # every item is an int or a float
        return [self.encode(v) for v in values]

    def encode_dataclass(self, value: object) -> dict[str, JSONValue]:
        """A dataclass instance as a JSON object, its fields in declaration order."""
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            raise TypeError(f"expected a dataclass instance, got a {type(value).__name__}")
        return {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value)}

    def decode(self, kind: type[T], raw: object, path: str = "") -> T:
        """`raw` (as json.loads gives it) read as `kind`; `path` prefixes the field paths in errors."""
        value = self._decode(kind, raw, path)
        if not isinstance(value, kind):  # only a codec bug gets here
            raise TypeError(f"decoded a {type(value).__name__} for {kind.__name__}")
        return value

    def _decode(self, hint: object, raw: object, path: str) -> object:
        origin = typing.get_origin(hint)
        if origin is typing.Union or origin is types.UnionType:
            return self._union(typing.get_args(hint), raw, path)
        if origin is tuple:
            return self._tuple(typing.get_args(hint), raw, path)
        if origin is list:
            return self._items(typing.get_args(hint)[0], raw, path)
        if origin is dict:
            return self._dict(typing.get_args(hint), raw, path)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self._dataclass(hint, raw, path)
        if isinstance(hint, type) and issubclass(hint, Enum):
            return _enum(hint, raw, path)
        if hint is float:
            return self._float(raw, path)
        if hint is object:
            return raw
        return _scalar(hint, raw, path)

    def _dataclass(self, kind: type[object], raw: object, path: str) -> object:
        mapping = _object(raw, path, kind.__name__)
        fields = {f.name: f for f in dataclasses.fields(kind) if f.init}  # type: ignore[arg-type]
        unknown = sorted(str(k) for k in mapping if k not in fields)
        if unknown and not self.ignore_unknown:
            raise DecodeError(_at(path, unknown[0]), f"not a field of {kind.__name__}")
        hints = _hints(kind)
        values: dict[str, object] = {}
        for name, found in fields.items():
            if name in mapping:
                values[name] = self._decode(hints[name], mapping[name], _at(path, name))
            elif found.default is dataclasses.MISSING and found.default_factory is dataclasses.MISSING:
                raise DecodeError(_at(path, name), f"missing (a required field of {kind.__name__})")
        try:
            return kind(**values)
        except ValueError as exc:  # the dataclass's own check of its values (__post_init__)
            raise DecodeError(path, str(exc)) from None

    def _union(self, options: tuple[object, ...], raw: object, path: str) -> object:
        if raw is None and type(None) in options:
            return None
        others = [o for o in options if o is not type(None)]
        if len(others) == 1:  # X | None: X's own error, with the path inside it
            return self._decode(others[0], raw, path)
        errors = []
        for option in others:
            try:
                return self._decode(option, raw, path)
            except DecodeError as exc:
                errors.append(str(exc))
        raise DecodeError(path, "matches no type of the union: " + "; ".join(errors))

    def _tuple(self, args: tuple[object, ...], raw: object, path: str) -> tuple[object, ...]:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(self._items(args[0], raw, path))
        items = _array(raw, path)
        if len(items) != len(args):
            raise DecodeError(path, f"expected {len(args)} items, got {len(items)}")
        return tuple(self._decode(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, items, strict=True)))

    def _items(self, hint: object, raw: object, path: str) -> list[object]:
        items = _array(raw, path)
        # Arrays of plain numbers and strings in one pass (`type(v) is int` leaves bools out); anything else, or
        # anything wrong, item by item, to name the bad one.
        if hint is float and all(type(v) is float or type(v) is int for v in items):
            return [float(v) for v in items]  # type: ignore[arg-type]
        if (hint is int or hint is str) and all(type(v) is hint for v in items):
            return list(items)
        return [self._decode(hint, v, f"{path}[{i}]") for i, v in enumerate(items)]

    def _dict(self, args: tuple[object, ...], raw: object, path: str) -> dict[str, object]:
        if args[0] is not str:
            raise TypeError(f"JSON objects have string keys; cannot decode keys of {args[0]!r}")
        return {k: self._decode(args[1], v, _at(path, k)) for k, v in _object(raw, path, "object").items()}

    def _float(self, raw: object, path: str) -> float:
        if raw is None and self.nan_as_null:
            return math.nan
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise DecodeError(path, f"expected a number, got {_described(raw)}")
        return float(raw)


_HINTS: dict[type[object], dict[str, object]] = {}


def _hints(kind: type[object]) -> dict[str, object]:
    """A dataclass's field types, resolved once (get_type_hints evaluates every annotation of the class)."""
    if kind not in _HINTS:
        _HINTS[kind] = typing.get_type_hints(kind)
    return _HINTS[kind]


def _scalar(hint: object, raw: object, path: str) -> object:
    if hint is bool:
        if isinstance(raw, bool):
            return raw
        raise DecodeError(path, f"expected true or false, got {_described(raw)}")
    if hint is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        raise DecodeError(path, f"expected an integer, got {_described(raw)}")
    if hint is str or hint is Path:
        if isinstance(raw, str):
            return raw if hint is str else Path(raw)
        raise DecodeError(path, f"expected a string, got {_described(raw)}")
    raise TypeError(f"the codec has no rule for {hint!r}")


def _enum(kind: type[Enum], raw: object, path: str) -> Enum:
    try:
        return kind(raw)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise DecodeError(path, f"expected one of {allowed}, got {_described(raw)}") from None


def _object(raw: object, path: str, what: str) -> Mapping[str, object]:
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
        raise DecodeError(path, f"expected an object ({what}), got {_described(raw)}")
    return raw


def _array(raw: object, path: str) -> list[object] | tuple[object, ...]:
    if not isinstance(raw, list | tuple):
        raise DecodeError(path, f"expected an array, got {_described(raw)}")
    return raw


def _key(key: object) -> str:
    if isinstance(key, Enum):
        key = key.value
    if not isinstance(key, str):
        raise TypeError(f"JSON objects have string keys, not {type(key).__name__}")
    return key


def _at(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _described(raw: object) -> str:
    if raw is None:
        return "null"
    text = repr(raw)
    return f"{type(raw).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
