"""Permit's Wait, the waiting pods, PreBind annotations and watched objects, through a stand-in plugin.

``Pairs`` holds each pod labelled ``pair=<id>`` until the other pod of its pair waits too, then allows both
(a two-pod gang in miniature); it pulls the other member at once (``siblings``) and annotates bound pods.
"""

import dataclasses

import pytest

from streams.scheduler import registry
from streams.objects.args import no_args
from streams.scheduler.domain import SchedulingDomain
from streams.scheduler.framework import SUCCESS, Code, Status
from tests.streams.scheduler.support import decisions, deleted, event, node, pod, profile_with, run, tick

NAME = "Pairs"
TIMEOUT_MS = 5_000


@dataclasses.dataclass(frozen=True)
class PairsArgs:
    @classmethod
    def from_config(cls, raw) -> "PairsArgs":
        no_args(NAME, raw)
        return cls()


class Pairs:
    name = NAME
    Args = PairsArgs
    watched_kinds = frozenset({"PodGroup"})

    def __init__(self, args, cluster) -> None:
        self.cluster = cluster

    def _mates(self, pod) -> list[str]:
        pair = pod.labels.get("pair")
        return sorted(key for key, other in self.cluster.pods.items()
                      if pair and other.labels.get("pair") == pair and key != pod.key)

    def siblings(self, pod) -> list[str]:
        return self._mates(pod)

    def permit(self, state, pod, node):
        if "pair" not in pod.labels:
            return SUCCESS, 0
        if "default/solo" in self.cluster.objects.get("PodGroup", {}):
            return SUCCESS, 0
        mates = [key for key in self._mates(pod) if key in self.cluster.waiting]
        if not mates:
            return Status(Code.WAIT, ("waiting for its pair",)), TIMEOUT_MS
        for key in mates:
            self.cluster.waiting.allow(key, NAME)
        return SUCCESS, 0

    def pre_bind(self, state, pod, node):
        return {"example.com/bound-by": NAME} if "pair" in pod.labels else {}


@pytest.fixture
def pairs(monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, NAME, Pairs)
    return profile_with(NAME, None, permit={"enabled": [{"name": NAME}]}, preBind={"enabled": [{"name": NAME}]})


def cpu_requested(domain) -> int:
    columns = domain.cluster.columns
    return int(columns.get(columns.requested, "cpu")[columns.row["n1"]])


def results(out):
    return [(d["pod"]["name"], d["result"], d["nodeName"]) for d in decisions(out)]


def test_a_waiting_pod_holds_its_node_and_is_scheduled_with_its_pair(pairs):
    domain, out = run(pairs, node("n1", cpu=2000), pod("a", labels={"pair": "x"}, ts=2000))
    assert results(out) == [("a", "Waiting", None)]
    assert cpu_requested(domain) == 1000
    _, out = run(pod("b", labels={"pair": "x"}, ts=3000), domain=domain)
    assert results(out) == [("a", "Scheduled", "n1"), ("b", "Scheduled", "n1")]
    assert decisions(out)[1]["annotations"]["example.com/bound-by"] == NAME


def test_the_timeout_rejects_the_waiting_pod_in_event_time_and_frees_its_node(pairs):
    domain, _ = run(pairs, node("n1", cpu=2000), pod("a", labels={"pair": "x"}, ts=2000))
    _, out = run(tick(6_999), domain=domain)
    assert decisions(out) == []
    _, out = run(tick(7_000), domain=domain)
    assert results(out) == [("a", "Unschedulable", None)]
    assert decisions(out)[0]["message"] == "rejected due to timeout after waiting 5s at plugin Pairs."
    assert cpu_requested(domain) == 0


def test_the_other_member_waiting_in_the_queue_is_pulled_at_once(pairs):
    domain, out = run(pairs, pod("a", labels={"pair": "x"}), pod("b", labels={"pair": "x"}, ts=1500),
                      node("n1", cpu=2000, ts=3000))
    assert results(out)[-2:] == [("a", "Scheduled", "n1"), ("b", "Scheduled", "n1")]


def test_a_restored_domain_keeps_the_waiting_pod_and_its_deadline(pairs):
    domain, _ = run(pairs, node("n1", cpu=2000), pod("a", labels={"pair": "x"}, ts=2000))
    restored = SchedulingDomain.restore("default", domain.entries())
    assert "default/a" in restored.cluster.waiting
    _, out = run(tick(7_000), domain=restored)
    assert results(out) == [("a", "Unschedulable", None)]


def test_deleting_a_waiting_pod_frees_its_node_and_releases_nothing_bound(pairs):
    domain, _ = run(pairs, node("n1", cpu=2000), pod("a", labels={"pair": "x"}, ts=2000))
    _, out = run(deleted("Pod", "default/a", ts=3000), domain=domain)
    assert results(out) == [("a", "Released", None)]
    assert "default/a" not in domain.cluster.waiting
    assert cpu_requested(domain) == 0


def test_watched_objects_are_kept_persisted_and_read_by_the_plugin(pairs):
    group = event("PodGroup", "default/solo", {"metadata": {"name": "solo", "namespace": "default"},
                                               "manifest": "{}", "minMember": 1,
                                               "scheduleTimeoutSeconds": None, "minResources": {}})
    domain, out = run(pairs, node("n1", cpu=2000), group, pod("a", labels={"pair": "x"}, ts=2000))
    assert results(out) == [("a", "Scheduled", "n1")]
    restored = SchedulingDomain.restore("default", domain.entries())
    assert restored.cluster.objects["PodGroup"]["default/solo"]["minMember"] == 1
