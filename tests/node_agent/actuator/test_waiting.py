"""Refused pod actuations wait for the pod's cgroup, and are replaced by the next one of their target."""

from __future__ import annotations

from node_agent.actuator.waiting import MAX_AGE_S, REFUSED, Waiting

UID = "0b4c3f4e-8f0e-4a39-9b44-6c3c2f0e8a11"


def record(kind: str = "pod", target: str = UID, sequence: int = 1) -> dict:
    return {"decisionId": f"d{sequence}", "targetKind": kind, "targetId": target, "mechanism": "cgroup",
            "sequence": sequence, "values": {"cpuset.cpus": "0"}}


NOT_FOUND = {"error": f"{REFUSED}: no cgroup for pod {UID} under /sys/fs/cgroup"}


def test_a_refused_pod_actuation_waits_until_its_cgroup_exists():
    clock = [0.0]
    waiting = Waiting(clock=lambda: clock[0])
    waiting.note(record(), NOT_FOUND)
    assert waiting.due(lambda r: False) == [] and len(waiting) == 1
    assert waiting.due(lambda r: True) == [record()]
    assert len(waiting) == 0


def test_only_missing_pod_and_container_targets_wait_and_a_later_actuation_replaces_one():
    waiting = Waiting()
    waiting.note(record("qos", "BE"), NOT_FOUND)
    waiting.note(record(), {"error": "rejected (bad-value): cpuset '' has 0 CPUs"})
    waiting.note("not a record", NOT_FOUND)
    assert len(waiting) == 0
    waiting.note(record(sequence=1), NOT_FOUND)
    waiting.note(record(sequence=2), {"error": None})
    assert len(waiting) == 0, "the newer actuation of the same target was applied"
    waiting.note(record("container", f"{UID}/{'a' * 64}", 3), NOT_FOUND)
    assert [r["sequence"] for r in waiting.due(lambda r: True)] == [3]


def test_a_waiting_actuation_expires():
    clock = [0.0]
    waiting = Waiting(clock=lambda: clock[0])
    waiting.note(record(), NOT_FOUND)
    clock[0] = MAX_AGE_S + 1
    assert waiting.due(lambda r: True) == [] and len(waiting) == 0
