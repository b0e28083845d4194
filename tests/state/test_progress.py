"""``state.progress``: a produced record is through once its version of the object is in the read model
with an Ack from every aggregate it was routed to and every output those Acks list; the wait returns what
is not through by its deadline."""

from __future__ import annotations

import pytest

from state.progress import POLL_S, Produced, is_through, wait_until_through

PARTITIONS = {"inbox-node": 4, "inbox-scheduling": 4}


def _node(offset: int, partition: int = 0) -> Produced:
    return Produced(kind="Node", topic_id="nodes", key="node-a", record={}, topic="koord.nodes",
                    partition=partition, offset=offset)


def test_a_node_is_through_with_its_object_both_acks_and_the_outputs_they_list(projector, read_model, records):
    produced, source = _node(3), ("koord.nodes", 0, 3)
    assert not is_through(read_model, PARTITIONS, produced)
    projector.apply([records.node("node-a", 3)])
    assert not is_through(read_model, PARTITIONS, produced), "no Ack yet"
    projector.apply([records.inbox_ack("inbox-scheduling", source, 1)])
    projector.apply([records.inbox_ack("inbox-node", source, 2, output_ids=["nr-1"])])
    assert not is_through(read_model, PARTITIONS, produced), "the listed NodeResource is not projected yet"
    projector.apply([records.node_resource("nr-1", "node-a", 4)])
    assert is_through(read_model, PARTITIONS, produced)


@pytest.mark.parametrize("produced", [
    pytest.param(_node(5), id="an-older-version-is-projected"),
    pytest.param(_node(3, partition=1), id="projected-from-another-partition"),
])
def test_another_version_of_the_object_is_not_through(projector, read_model, records, produced):
    projector.apply([records.node("node-a", 3)])
    projector.apply([records.inbox_ack(inbox, ("koord.nodes", produced.partition, produced.offset), n)
                     for n, inbox in enumerate(PARTITIONS)])
    assert not is_through(read_model, PARTITIONS, produced)


def test_a_deletion_is_through_with_its_tombstone_and_the_ack(projector, read_model, records):
    produced = Produced(kind="Pod", topic_id="pods", key="default/web", record=None, topic="koord.pods",
                        partition=0, offset=8)
    projector.apply([records.pod("web", 2), records.tombstone("koord.pods", "default/web", 8)])
    assert not is_through(read_model, PARTITIONS, produced)
    projector.apply([records.inbox_ack("inbox-scheduling", ("koord.pods", 0, 8), 9)])
    assert is_through(read_model, PARTITIONS, produced)


def test_the_wait_polls_until_its_deadline_and_returns_what_is_not_through(projector, read_model, records):
    projector.apply([records.pod("web", 2), records.inbox_ack("inbox-scheduling", ("koord.pods", 0, 2), 1)])
    through = Produced("Pod", "pods", "default/web", {}, "koord.pods", 0, 2)
    missing = Produced("Pod", "pods", "default/db", {}, "koord.pods", 0, 3)
    now, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pending = wait_until_through(read_model, PARTITIONS, [through, missing], deadline=0.25,
                                 clock=lambda: now[0], sleep=sleep)
    assert pending == [missing]
    assert slept == [POLL_S] * 3


def test_the_wait_returns_at_once_when_everything_is_through(projector, read_model, records):
    projector.apply([records.pod("web", 2), records.inbox_ack("inbox-scheduling", ("koord.pods", 0, 2), 1)])
    produced = [Produced("Pod", "pods", "default/web", {}, "koord.pods", 0, 2)]
    assert wait_until_through(read_model, PARTITIONS, produced, deadline=0.0, clock=lambda: 1.0,
                              sleep=pytest.fail) == []
