"""``koord bench bridge --versus kube-scheduler``: the same pods bound by kube-scheduler, then by koordstream.

Per client rate (``streams.bench.clientrate``, the same for both): kube-scheduler on a fresh control plane
(``streams.bench.kubescheduler``), then koordstream's bridge on another fresh one with a fresh broker
(``streams.bench.bridge``), the same nodes and pods created by the same client (``streams.bench.apiload``).
One after the other, so neither takes the other's CPU.

    ratio = koordstream pods/s / kube-scheduler pods/s      p99_ratio = koordstream p99 / kube-scheduler p99
"""

from __future__ import annotations

from typing import Callable, Iterator

from streams.bench import kubescheduler
from streams.bench.clientrate import ClientRate


def races(nodes: int, pods: int, rate: float | None, clients: tuple[ClientRate, ...],
          koordstream: Callable[[ClientRate], dict]) -> Iterator[dict]:
    """One race per client rate, yielded as it ends; ``koordstream(client)`` runs the bridge bench."""
    for client in clients:
        kube = kubescheduler.run(nodes, pods, rate, client)
        yield race(client, kube, koordstream(client))


def race(client: ClientRate, kube: dict, koord: dict) -> dict:
    return {"client": client.describe(), "kube_scheduler": kube, "koordstream": koord,
            "ratio": round(koord["pods_per_s"] / kube["pods_per_s"], 2) if kube["pods_per_s"] else None,
            "p99_ratio": round(koord["p99_ms"] / kube["p99_ms"], 1) if kube["p99_ms"] and koord["p99_ms"] else None}
