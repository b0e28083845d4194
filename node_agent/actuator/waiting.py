"""Actuations waiting for their pod's cgroup (or, for tc, its address), applied again as soon as it exists.

A pod's settings (its pinned cpuset, a quota) are planned when the pod is bound, usually before kubelet
has made the pod's cgroup: the cgroup backend refuses them (``target-not-found``), and the stream does not
send them again while its plan stays the same. Koordinator applies such settings when the container starts,
from its runtime hooks (the runtime proxy, or NRI with containerd 1.7+); containerd 1.6 has neither, so the
agent keeps each refused actuation of a ``pod`` or ``container`` target and applies it again once that
target's cgroup exists, looking every :data:`POLL_S`. A tc actuation of a pod waits the same way for the
pod's address, which kubelet reports after starting it (``tc.py``). On cgroup v1 a container created after its pod's
cpuset was written takes the pod's set (runc copies an empty cpuset from the parent).

Bounded: the newest :data:`MAX_WAITING` targets, each for :data:`MAX_AGE_S` at most; a later actuation of
the same target and mechanism replaces the waiting one whatever its outcome.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Callable

from node_agent.actuator.verify import TARGET_NOT_FOUND
from streams import actuation as contract

POLL_S = 0.1
MAX_WAITING = 1024
MAX_AGE_S = 600.0
WAITING_KINDS = (contract.TARGET_POD, contract.TARGET_CONTAINER)
REFUSED = f"rejected ({TARGET_NOT_FOUND})"


class Waiting:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._records: OrderedDict[tuple[str, str, str], tuple[dict, float]] = OrderedDict()
        self._clock = clock

    def note(self, record: object, ack: dict) -> None:
        """Keep ``record`` when its ack says its pod or container has no cgroup yet; forget an older one of
        the same target and mechanism otherwise."""
        if not isinstance(record, dict):
            return
        key = (record.get("targetKind"), record.get("targetId"), record.get("mechanism"))
        if not all(isinstance(part, str) for part in key):
            return
        self._records.pop(key, None)
        if key[0] in WAITING_KINDS and (ack.get("error") or "").startswith(REFUSED):
            self._records[key] = (record, self._clock())
            while len(self._records) > MAX_WAITING:
                self._records.popitem(last=False)

    def due(self, exists: Callable[[dict], bool]) -> list[dict]:
        """The waiting records whose target ``exists`` now (they stop waiting); expired ones are dropped."""
        now, ready = self._clock(), []
        for key, (record, since) in list(self._records.items()):
            if now - since > MAX_AGE_S:
                del self._records[key]
            elif exists(record):
                del self._records[key]
                ready.append(record)
        return ready

    def __len__(self) -> int:
        return len(self._records)


async def run_waiting(actuator, publisher, stop: asyncio.Event, submit: Callable) -> None:
    """Apply the waiting actuations whose cgroup appeared, until ``stop``; each new ack goes through
    ``submit(publisher, ack, position)``."""
    while not stop.is_set():
        if len(actuator.waiting):
            for record in await asyncio.to_thread(actuator.waiting.due, actuator.target_exists):
                ack = await asyncio.to_thread(actuator.apply, record)
                if publisher is not None and not actuator.dry_run:
                    submit(publisher, ack, f"waiting/{record.get('decisionId')}")
        try:
            await asyncio.wait_for(stop.wait(), POLL_S)
        except asyncio.TimeoutError:
            pass
