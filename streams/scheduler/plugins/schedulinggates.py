"""SchedulingGates: a pod with ``spec.schedulingGates`` is not attempted until every gate is removed
(kube-scheduler v1.34 ``schedulinggates/scheduling_gates.go``).

PreEnqueue: while the pod has gates, "waiting for scheduling gates: [<gate> ...]" (the gates' names in their
order, as Go prints a list; UnschedulableAndUnresolvable: no node and no preemption can help). An update of the
pod that removes them makes it pending like any new pod. A pod without gates costs one substring test of its
manifest.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import SUCCESS, Code, Status, register
from streams.scheduler.state import Cluster

NAME = "SchedulingGates"
REASON = "waiting for scheduling gates: [{gates}]"


@dataclasses.dataclass(frozen=True)
class SchedulingGatesArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "SchedulingGatesArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


def gates_of(record: Mapping | None) -> list[str]:
    """The names of the scheduling gates of a Pod record's manifest."""
    text = (record or {}).get("manifest")
    if not isinstance(text, str) or '"schedulingGates"' not in text:
        return []
    try:
        gates = (json.loads(text).get("spec") or {}).get("schedulingGates") or []
    except (ValueError, AttributeError):
        return []
    return [str(gate.get("name")) for gate in gates if isinstance(gate, dict)]


class SchedulingGates:
    name = NAME
    Args = SchedulingGatesArgs
    events_to_register = register()

    def __init__(self, args: SchedulingGatesArgs, cluster: Cluster) -> None:
        self.cluster = cluster

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = gates_of(pod.record)
        if not gates:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON.format(gates=" ".join(gates)),), NAME)
