"""Reading a plugin's ``args`` from a KubeSchedulerConfiguration, strictly.

kube-scheduler decodes plugin args strictly: an unknown field is an error, so a
typo never silently falls back to a default. ``ArgsReader`` does the same and
says which field of which plugin is wrong. ``apiVersion`` and ``kind`` are
accepted (the v1.6 article's examples carry them); a ``kind`` must name the
plugin's args type.
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.objects.quantity import QuantityError, resource_list


class ArgsError(ValueError):
    """Plugin args that cannot be used; the message names plugin and field."""


class ArgsReader:
    def __init__(self, plugin: str, raw: Mapping | None, fields: set[str]) -> None:
        self.plugin = plugin
        raw = dict(raw or {})
        kind = raw.pop("kind", None)
        raw.pop("apiVersion", None)
        if kind is not None and kind != f"{plugin}Args":
            raise ArgsError(f"{plugin}: args kind must be {plugin}Args, got {kind}")
        unknown = sorted(set(raw) - fields)
        if unknown:
            raise ArgsError(f'{plugin}: strict decoding error: unknown field "{unknown[0]}"')
        self.raw = raw

    def fail(self, field: str, reason: str) -> ArgsError:
        return ArgsError(f"{self.plugin}: {field}: {reason}")

    def has(self, field: str) -> bool:
        return self.raw.get(field) is not None

    def boolean(self, field: str, default: bool) -> bool:
        value = self.raw.get(field)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(field, f"must be a boolean, got {value!r}")
        return value

    def integer(self, field: str, default: int | None) -> int | None:
        value = self.raw.get(field)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, f"must be an integer, got {value!r}")
        return value

    def string(self, field: str, default: str | None) -> str | None:
        value = self.raw.get(field)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(field, f"must be a string, got {value!r}")
        return value

    def int_map(self, field: str, default: Mapping[str, int] | None = None) -> dict[str, int] | None:
        value = self.raw.get(field)
        if value is None:
            return None if default is None else dict(default)
        integers = isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
        if not integers:
            raise self.fail(field, f"must map resource names to integers, got {value!r}")
        return {str(k): v for k, v in value.items()}

    def resources(self, field: str) -> dict[str, int] | None:
        value = self.raw.get(field)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(field, f"must be a resource list, got {value!r}")
        try:
            return resource_list(value)
        except QuantityError as err:
            raise self.fail(field, str(err)) from None

    def mapping(self, field: str) -> dict | None:
        value = self.raw.get(field)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(field, f"must be an object, got {value!r}")
        return value

    def sequence(self, field: str) -> list | None:
        value = self.raw.get(field)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(field, f"must be a list, got {value!r}")
        return value


def no_args(plugin: str, raw: Mapping | None) -> None:
    """For plugins that take no args: only apiVersion/kind are allowed."""
    ArgsReader(plugin, raw, set())
