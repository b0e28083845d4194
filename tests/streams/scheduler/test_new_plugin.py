"""What a new scheduler plugin costs: its module, one registry line and its test file.

The plugin below stands in for the module; ``monkeypatch.setitem`` for the registry line. It
declares its own retry events, so the queue retries the pods it rejected on node events and
on no others, and no other file names it.
"""

import dataclasses

import numpy as np
import pytest

from streams.objects.args import no_args
from streams.scheduler import registry
from streams.scheduler.framework import NODE_ADD, NODE_UPDATE, Code, CycleState, FilterResult, register
from tests.streams.scheduler.support import decisions, metric, node, pod, profile_with, run

NAME = "ReadyNodes"
REASON_NOT_READY = "node(s) not labelled ready"


@dataclasses.dataclass(frozen=True)
class ReadyNodesArgs:
    @classmethod
    def from_config(cls, raw) -> "ReadyNodesArgs":
        no_args(NAME, raw)
        return cls()


class ReadyNodes:
    """Filter: only nodes labelled ``ready=true``."""

    name = NAME
    Args = ReadyNodesArgs
    events_to_register = register(NODE_ADD, NODE_UPDATE)

    def __init__(self, args: ReadyNodesArgs, cluster) -> None:
        self.cluster = cluster

    def filter(self, state: CycleState, pod, candidates: np.ndarray) -> FilterResult:
        ready = np.array([self.cluster.nodes[name].labels.get("ready") == "true"
                          for name in self.cluster.columns.names[: len(candidates)]], dtype=bool)
        return FilterResult(candidates & ready, ((REASON_NOT_READY, candidates & ~ready),),
                            Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, NAME, ReadyNodes)


def test_rejected_pod_is_retried_on_the_events_the_plugin_registers(registered):
    domain, out = run(profile_with(NAME, None, filter={"enabled": [{"name": NAME}]}),
                      node("n1"), pod("p"))
    assert decisions(out)[-1]["filterResults"] == [{"plugin": NAME, "reason": REASON_NOT_READY, "count": 1}]
    run(metric("n1", 60_000, ts=20_000), domain=domain)
    assert domain.queue.pods["default/p"].attempts == 1
    _, out = run(node("n1", labels={"ready": "true"}, ts=30_000), domain=domain)
    assert [(d["result"], d["nodeName"]) for d in decisions(out)] == [("Scheduled", "n1")]
