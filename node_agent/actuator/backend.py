"""The extension point of the actuator: one backend per mechanism (no backend logic here).

A backend turns a verified target and its values into a :class:`Plan` (reads
the host, checks value ranges, decides what to write; raises ``verify.Rejected`` before
any write), carries the plan out (:meth:`Backend.execute`, restoring the
previous values if a step fails), and reads the values in force back from the
kernel in canonical setting names (:meth:`Backend.read_back`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from node_agent.actuator.verify import Target


@dataclasses.dataclass
class Plan:
    target: Target
    requested: tuple[str, ...]
    """Canonical settings asked for and supported here: what the acknowledgement reads back."""
    actions: list[str] = dataclasses.field(default_factory=list)
    """What would be written, one line each (``--dry-run`` prints these); empty when nothing changes."""
    unsupported: dict[str, str] = dataclasses.field(default_factory=dict)
    """Setting -> why this host cannot apply it (e.g. no cpu.bvt_warp_ns on this kernel)."""
    payload: Any = None
    """The backend's own description of the work (files, tc commands)."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    error: str | None = None
    """Why the plan was not carried out; the previous values were restored."""


class Backend(Protocol):
    mechanism: str

    def plan(self, target: Target, values: dict[str, str]) -> Plan: ...

    def execute(self, plan: Plan) -> Outcome: ...

    def read_back(self, plan: Plan) -> dict[str, str]: ...
