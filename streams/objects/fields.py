"""Path-aware, typed reads from a parsed manifest that collect every problem.

Kind converters read fields through a FieldReader: each read checks the type
and returns a usable default on a bad value, recording a FieldError with the
field's path, so one pass reports every problem of an object (as the API
server's ``field.ErrorList`` does) instead of stopping at the first.

Paths read like kubectl's: ``spec.containers[0].resources.requests.cpu``; a
map key that is not a plain identifier is bracketed,
``metadata.labels[kubernetes.io/arch]``.
"""

import math
import re
from collections.abc import Callable

from streams.objects import names
from streams.objects.errors import FieldError
from streams.objects.quantity import QuantityError, to_canonical

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

MAX_VALUES = 1_000_000
"""Most values one document may hold once YAML aliases are expanded; guards against alias bombs."""


def child(path: str, key: str) -> str:
    """The path of ``key`` inside the object at ``path``."""
    if _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def item(path: str, index: int) -> str:
    """The path of element ``index`` of the list at ``path``."""
    return f"{path}[{index}]"


def type_name(value: object) -> str:
    """JSON's name for a Python value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class FieldReader:
    """Reads typed values out of one document, collecting FieldErrors in ``errors``."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def fail(self, path: str, reason: str) -> None:
        self.errors.append(FieldError(path, reason))

    def mapping(self, value: object, path: str, *, required: bool = False) -> dict:
        """An object; absent (None) reads as empty."""
        if value is None:
            if required:
                self.fail(path, "required")
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, got {type_name(value)}")
            return {}
        return value

    def sequence(self, value: object, path: str) -> list:
        """A list; absent (None) reads as empty."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"must be a list, got {type_name(value)}")
            return []
        return value

    def string(self, value: object, path: str, *, required: bool = False) -> str | None:
        """A string; absent or "" is None (and an error when required)."""
        if value is None or value == "":
            if required:
                self.fail(path, "required")
            return None
        if not isinstance(value, str):
            self.fail(path, f"must be a string, got {type_name(value)} {_show(value)}")
            return None
        return value

    def enum(self, value: object, path: str, allowed: tuple[str, ...]) -> str | None:
        """One of ``allowed``; absent or "" is None."""
        text = self.string(value, path)
        if text is not None and text not in allowed:
            self.fail(path, f'unsupported value "{text}" (supported: {", ".join(allowed)})')
            return None
        return text

    def object_name(self, value: object, path: str, *, required: bool = False) -> str | None:
        """A name of an object (a node, a quota, a scheduler): a DNS-1123 subdomain; absent is None."""
        name = self.string(value, path, required=required)
        if name is not None and (reason := names.dns1123_subdomain_error(name)):
            self.fail(path, f'invalid name "{name}": {reason}')
            return None
        return name

    def integer(self, value: object, path: str, *, low: int = INT64_MIN, high: int = INT64_MAX) -> int | None:
        """A whole number in [low, high]; absent is None."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _is_whole(value):
            self.fail(path, f"must be an integer, got {type_name(value)} {_show(value)}")
            return None
        if not low <= value <= high:
            self.fail(path, f"must be between {low} and {high}, got {_show(value)}")
            return None
        return int(value)

    def boolean(self, value: object, path: str) -> bool | None:
        """true or false; absent is None."""
        if value is None:
            return None
        if not isinstance(value, bool):
            self.fail(path, f"must be true or false, got {type_name(value)} {_show(value)}")
            return None
        return value

    def string_map(
        self,
        value: object,
        path: str,
        *,
        key_error: Callable[[str], str | None] | None = None,
        value_error: Callable[[str], str | None] | None = None,
    ) -> dict[str, str]:
        """A map of strings (labels, annotations, data), each key and value optionally checked.

        Non-string keys are skipped here; ``json_compatible`` reports them.
        """
        result = {}
        for key, raw in self.mapping(value, path).items():
            if not isinstance(key, str):
                continue
            key_path = child(path, key)
            if key_error and (reason := key_error(key)):
                self.fail(key_path, f"invalid key: {reason}")
            if not isinstance(raw, str):
                self.fail(key_path, f"must be a string, got {type_name(raw)} {_show(raw)} (quote it)")
                continue
            if value_error and (reason := value_error(raw)):
                self.fail(key_path, f"invalid value {_show(raw)}: {reason}")
                continue
            result[key] = raw
        return result

    def resources(self, value: object, path: str) -> dict[str, int]:
        """A ResourceList in canonical integers; quantities must parse and not be negative.

        Surrounding blanks are ignored, as Quantity.UnmarshalJSON trims them.
        """
        result = {}
        for name, raw in self.mapping(value, path).items():
            if not isinstance(name, str):
                continue
            quantity_path = child(path, name)
            if reason := names.qualified_name_error(name):
                self.fail(quantity_path, f"invalid resource name: {reason}")
                continue
            if isinstance(raw, str):
                raw = raw.strip()
            try:
                canonical = to_canonical(name, raw)
            except QuantityError as err:
                self.fail(quantity_path, str(err))
                continue
            if canonical < 0:
                self.fail(quantity_path, f'quantity must not be negative: "{raw}"')
                continue
            result[name] = canonical
        return result

    def json_compatible(self, value: object, path: str = "") -> None:
        """Check that a whole document is plain JSON: string keys, finite numbers, no YAML-only types."""
        try:
            self._check_json(value, path, [MAX_VALUES])
        except _TooManyValues as err:
            self.fail(str(err), f"document holds more than {MAX_VALUES} values once YAML aliases are expanded")

    def _check_json(self, value: object, path: str, budget: list[int]) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooManyValues(path)
        if isinstance(value, dict):
            for key, nested in value.items():
                if not isinstance(key, str):
                    self.fail(path, f"key {_show(key)} must be a string (quote it)")
                    continue
                self._check_json(nested, child(path, key), budget)
        elif isinstance(value, list):
            for index, nested in enumerate(value):
                self._check_json(nested, item(path, index), budget)
        elif isinstance(value, float) and not math.isfinite(value):
            self.fail(path, f"must be a finite number, got {value}")
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            self.fail(path, f"a {type_name(value)} value cannot be represented in JSON (quote it)")


class _TooManyValues(Exception):
    """Raised with the path where a document's value budget ran out."""


def _is_whole(value: int | float) -> bool:
    return isinstance(value, int) or (math.isfinite(value) and value == int(value))


def _show(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    return text if len(text) <= 60 else text[:57] + "..."
