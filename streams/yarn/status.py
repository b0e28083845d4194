"""The YARN bridge's health, for ``koord status`` and Prometheus: is the ResourceManager answering, when did the
last round succeed, which NodeManagers it saw, and the last error.

The bridge runs as its own process (``koord yarn-bridge``, or a child of ``koord up --yarn``), so it writes
this to ``<its state dir>/status.json`` after every round (replaced atomically) and ``koord status`` reads the
file; the gauges carry the same facts for a scrape.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

from prometheus_client import Gauge

STATUS_FILE = "status.json"
BRIDGE_DIR = "yarn-bridge"
"""The bridge's state folder below ``KOORD_HOME``."""

UP = Gauge("koord_yarn_resourcemanager_up", "1 when the last read of the ResourceManager succeeded, else 0")
LAST_SYNC = Gauge("koord_yarn_bridge_last_sync_timestamp_seconds", "When the last round succeeded (Unix seconds)")
SEEN = Gauge("koord_yarn_nodemanagers", "NodeManagers the ResourceManager reported in the last round")


@dataclasses.dataclass
class BridgeStatus:
    rm: str
    reachable: bool = False
    last_sync_ms: int | None = None
    node_managers: int = 0
    unknown: list[str] = dataclasses.field(default_factory=list)
    """NodeManager ids no Kubernetes node is known for."""
    last_error: str | None = None
    last_error_ms: int | None = None
    updates_written: int = 0
    updates_refused: int = 0

    def synced(self, now_s: float, node_managers: int, unknown: list[str]) -> None:
        self.reachable, self.last_sync_ms = True, int(now_s * 1000)
        self.node_managers, self.unknown = node_managers, sorted(unknown)
        UP.set(1)
        LAST_SYNC.set(now_s)
        SEEN.set(node_managers)

    def failed(self, now_s: float, error: str) -> None:
        self.reachable, self.last_error, self.last_error_ms = False, error, int(now_s * 1000)
        UP.set(0)

    def refused(self, now_s: float, error: str) -> None:
        self.updates_refused += 1
        self.last_error, self.last_error_ms = error, int(now_s * 1000)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / (STATUS_FILE + ".tmp")
        temporary.write_text(json.dumps(dataclasses.asdict(self), sort_keys=True))
        os.replace(temporary, folder / STATUS_FILE)


def load(folder: Path) -> dict | None:
    try:
        return json.loads((folder / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None


def _ago(ms: int | None, now_s: float) -> str:
    return "never" if ms is None else f"{max(now_s - ms / 1000, 0):.0f}s ago"


def describe(status: dict, now_s: float | None = None) -> str:
    """One line: ``ResourceManager URL reachable|UNREACHABLE, last sync Ns ago, N NodeManagers (...), last error``."""
    now_s = time.time() if now_s is None else now_s
    unknown = status.get("unknown") or []
    seen = f"{status.get('node_managers', 0)} NodeManagers"
    if unknown:
        seen += f" ({len(unknown)} on no known node: {', '.join(unknown)})"
    error = (f"last error {_ago(status.get('last_error_ms'), now_s)}: {status['last_error']}"
             if status.get("last_error") else "no error")
    return (f"ResourceManager {status.get('rm')} {'reachable' if status.get('reachable') else 'UNREACHABLE'}, "
            f"last sync {_ago(status.get('last_sync_ms'), now_s)}, {seen}, "
            f"updates written {status.get('updates_written', 0)}, refused {status.get('updates_refused', 0)}; {error}")
