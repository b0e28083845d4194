"""Issue 37 failure 7 for the read model: a byte-identical re-send of an old SchedulingDecision to
koord.decisions changes nothing ``koord get`` shows. A decision is stored once by its id, so a re-sent one is
ignored (a later decision keeps winning); a deleted pod stays deleted; and a pod applied again under the
same name is not shown on the node of the pod deleted before it (the scheduler's release of the deleted pod
ends what the earlier decisions said). Runs on SQLite and, when reachable, PostgreSQL."""

import dataclasses

import pytest

from state.queries import get_decisions, get_pods, top_pods


def resent(record, offset: int):
    """``record`` sent again, byte for byte, landing at ``offset``."""
    return dataclasses.replace(record, offset=offset, timestamp_ms=1_700_000_000_000 + offset)


def shown(read_model) -> dict[str, tuple]:
    return {pod["metadata"]["name"]: (pod["spec"].get("nodeName"),
                                      [c["reason"] for c in pod["status"].get("conditions", []) if "reason" in c])
            for pod in get_pods(read_model)}


@pytest.mark.parametrize("same_batch", [pytest.param(False, id="later-batch"), pytest.param(True, id="same-batch")])
def test_a_resent_older_decision_does_not_replace_the_later_one(projector, read_model, records, same_batch):
    unschedulable = records.decision("d-1", "default/web", "Unschedulable", 10)
    batch = [records.node("node-a", 0), records.pod("web", 1), unschedulable,
             records.decision("d-2", "default/web", "Scheduled", 11, node_name="node-a")]
    if same_batch:
        projector.apply(batch + [resent(unschedulable, 12)])
    else:
        projector.apply(batch)
        projector.apply([resent(unschedulable, 12)])

    assert shown(read_model) == {"web": ("node-a", [])}
    assert [(d["decisionId"], d["topicOffset"]) for d in get_decisions(read_model)] == [("d-1", 10), ("d-2", 11)]


def test_a_resent_decision_of_a_deleted_pod_leaves_it_deleted_and_its_successor_unplaced(projector, read_model,
                                                                                         records):
    scheduled = records.decision("d-1", "default/web", "Scheduled", 10, node_name="node-a")
    projector.apply([records.node("node-a", 0), records.pod("web", 1), scheduled])
    projector.apply([records.tombstone("koord.pods", "default/web", 2),
                     records.decision("d-2", "default/web", "Released", 11, node_name="node-a", reason="Deleted")])
    projector.apply([resent(scheduled, 12)])
    assert shown(read_model) == {}

    projector.apply([records.pod("web", 3), resent(scheduled, 13)])
    assert shown(read_model) == {"web": (None, [])}
    assert top_pods(read_model)[0]["node"] is None

    projector.apply([records.decision("d-3", "default/web", "Unschedulable", 14)])
    assert shown(read_model) == {"web": (None, ["Unschedulable"])}
