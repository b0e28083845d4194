"""Plugin calls counted and timed by the pure cores, for the shells to export.

The scheduler's framework and the node aggregate (node-resource stages, node-QoS
strategies) record each plugin call in a ``PluginStats``; the agents move the
figures into Prometheus (``streams.metrics.export_plugin_stats``: labels
``plugin``, ``stage``, ``result``). Measuring reads a clock; nothing decided
depends on it.
"""

from __future__ import annotations

import time


class PluginStats:
    """Calls and seconds per (plugin, stage, result) since the shell last took them."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str, str], list] = {}

    def add(self, plugin: str, stage: str, result: str, seconds: float) -> None:
        entry = self.calls.get((plugin, stage, result))
        if entry is None:
            entry = self.calls[(plugin, stage, result)] = [0, 0.0]
        entry[0] += 1
        entry[1] += seconds

    def record(self, plugin: str, stage: str, result: str, started: float) -> None:
        """One call that began at ``started`` (``time.perf_counter()``) and ends now."""
        self.add(plugin, stage, result, time.perf_counter() - started)

    def take(self) -> dict[tuple[str, str, str], list]:
        """The figures since the last take, ``{(plugin, stage, result): [calls, seconds]}``; counting starts again."""
        calls, self.calls = self.calls, {}
        return calls
