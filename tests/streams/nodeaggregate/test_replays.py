"""A SchedulingDecision sent again (a new record, so a new source offset) changes nothing on its node: not a pod
the scheduler deleted, nor one that runs, nor after a restart from the table."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.koordinator.resources import BATCH_CPU
from streams.nodeaggregate import node as aggregate
from streams.nodeaggregate import replays, statecodec
from streams.nodeaggregate.partition import NodePartition
from streams.nodeaggregate.replays import MAX_TOMBSTONES
from streams.nodeaggregate.settings import DEFAULT_SETTINGS
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from tests.streams.noderesource.support import G, MINUTE, NOW, configmap, decision, event, fixture_a_metric, node_record

CONFIG = parse_slo_config(configmap({"enable": True, "cpuReclaimThresholdPercent": 65,
                                     "memoryReclaimThresholdPercent": 65}), DEFAULT_CONFIG)
NODE = "test-node1"
KEY = "test/web"


def _decision(result: str = "Scheduled", reason: str | None = None, uid: str = "uid-web", cpu: int = 40_000,
              ts: int = NOW, partition: int = 0, offset: int | None = None) -> dict:
    """A decision about ``test/web`` on the node, the next of the scheduling inbox's (or at ``offset``)."""
    record = {**decision("web", NODE, result=result, cpu=cpu, memory=4 * G, priority=9000,
                         priority_class="koord-prod"), "reason": reason, "timestamp": ts}
    record["pod"]["uid"] = uid
    record["causation"]["inboxPartition"] = partition
    if offset is not None:
        record["causation"]["inboxOffset"] = offset
    return record


def _sent(record: dict, ts: int = NOW):
    """The decision as the node inbox delivers it: each send is a new record, with a new source offset."""
    return event("SchedulingDecision", NODE, record, ts=ts)


def _metric(ts: int):
    return event("NodeMetric", NODE, fixture_a_metric(update_time=ts), ts=ts)


def _run(state, *events):
    for ev in events:
        state, _ = aggregate.handle(state, ev, CONFIG, DEFAULT_SETTINGS)
    return state


def _batch_cpu(state, ts: int) -> int:
    """Batch CPU the node publishes on its first NodeMetric, at ``ts``."""
    _, out = aggregate.handle(state, _metric(ts), CONFIG, DEFAULT_SETTINGS)
    [record] = [r for schema, r in out if schema == "NodeResource"]
    return record["allocatable"][BATCH_CPU]


def _node():
    return _run(aggregate.initial_state(), event("Node", NODE, node_record(), ts=NOW))


def test_a_replayed_decision_of_a_deleted_pod_leaves_the_node_as_its_deletion_did():
    before = _batch_cpu(_node(), NOW + MINUTE)
    scheduled = _decision()
    running = _run(_node(), _sent(scheduled))
    assert _batch_cpu(running, NOW + MINUTE) < before
    deleted = _run(running, _sent(_decision("Released", "Deleted", ts=NOW + 1000), ts=NOW + 1000))
    assert _batch_cpu(deleted, NOW + MINUTE) == before
    replayed = _run(deleted, _sent(scheduled, ts=NOW + 2000))
    assert replayed is deleted
    assert KEY not in replayed.pods and _batch_cpu(replayed, NOW + MINUTE) == before


def test_a_duplicate_while_running_changes_nothing():
    scheduled, bound = _decision(), _decision("Bound", cpu=30_000)
    running = _run(_node(), _sent(scheduled), _sent(bound))
    for replay in (scheduled, bound):
        assert _run(running, _sent(replay)) is running
    assert running.pods[KEY].request_cpu == 30_000


def test_a_pod_preempted_then_scheduled_again_runs_again():
    state = _run(_node(), _sent(_decision()), _sent(_decision("Preempted", "Preempted")), _sent(_decision()))
    assert KEY in state.pods


@pytest.mark.parametrize("last, candidate, replay", [
    pytest.param({}, {}, True, id="the-same-decision"),
    pytest.param({}, dict(offset=499, ts=NOW - 1), True, id="an-older-one"),
    pytest.param({}, dict(offset=501, ts=NOW - 1), False, id="a-later-offset-whatever-its-time"),
    pytest.param({}, dict(offset=0, ts=NOW + 1), False, id="offsets-restarted-with-a-later-time"),
    pytest.param({}, dict(partition=1, offset=0, ts=NOW - 1), False, id="another-inbox-partition"),
    pytest.param(dict(result="Released", reason="Deleted"), dict(partition=1, offset=10**6, ts=NOW + MINUTE), True,
                 id="the-deleted-pod-from-anywhere"),
    pytest.param(dict(result="Released", reason="Deleted"), dict(uid="uid-web-2", offset=501, ts=NOW + MINUTE),
                 False, id="a-new-pod-of-the-same-name"),
    pytest.param(dict(result="Released", reason="BoundElsewhere"), dict(partition=1, offset=0, ts=NOW + MINUTE),
                 False, id="a-pod-released-not-deleted"),
])
def test_what_is_a_replay(last, candidate, replay):
    mark = replays.mark_of(_decision(**{"offset": 500, **last}))
    assert replays.is_replay(mark, _decision(**{"offset": 500, **candidate})) is replay


def test_a_deleted_pod_stays_deleted_for_decisions_from_any_inbox_partition():
    state = _run(_node(), _sent(_decision(partition=0)), _sent(_decision("Released", "Deleted", partition=1)))
    assert _run(state, _sent(_decision(partition=0, offset=10**9, ts=NOW + MINUTE))) is state
    again = _run(state, _sent(_decision(uid="uid-web-2", partition=0, ts=NOW + MINUTE)))
    assert again.pods[KEY].uid == "uid-web-2"


def test_tombstones_are_bounded_keeping_the_latest_deletions():
    state = _node()
    for i in range(MAX_TOMBSTONES + 10):
        record = {**decision(f"p{i}", NODE, result="Bound"), "timestamp": NOW + i}
        released = {**decision(f"p{i}", NODE, result="Released"), "reason": "Deleted", "timestamp": NOW + i}
        state = _run(state, _sent(record), _sent(released))
    assert len(state.decided) == MAX_TOMBSTONES and not state.pods
    assert "test/p9" not in state.decided and f"test/p{MAX_TOMBSTONES + 9}" in state.decided
    assert statecodec.load_state(statecodec.dump_state(state)).decided == state.decided


def test_running_pods_keep_their_marks_beyond_the_tombstone_bound():
    state = _run(_node(), _sent(_decision()))
    for i in range(MAX_TOMBSTONES + 1):
        state = _run(state, _sent({**decision(f"p{i}", NODE, result="Released"), "timestamp": NOW + i}))
    assert len(state.decided) == MAX_TOMBSTONES + 1 and KEY in state.decided


def test_a_restart_from_the_table_keeps_the_tombstones():
    table: dict[str, bytes] = {}
    first = NodePartition(DEFAULT_SETTINGS, table)
    scheduled, deleted = _decision(), _decision("Released", "Deleted", ts=NOW + 1000)
    for ev in (event("Node", NODE, node_record(), ts=NOW), _sent(scheduled), _sent(deleted, ts=NOW + 1000)):
        first.apply(ev)
    table.update(first.take_changes())
    restored = NodePartition(DEFAULT_SETTINGS, table, [NODE])
    assert restored.apply(_sent(scheduled, ts=NOW + 2000)) == [] and restored.replays == 1
    assert restored.take_changes() == {}
    state = statecodec.load_state(table[NODE])
    assert KEY not in state.pods and state.decided[KEY] == replays.mark_of(deleted)
    assert replays.mark_of(deleted).deleted_uid == "uid-web"


def test_the_marks_round_trip_and_a_state_without_them_loads_without_them():
    state = _run(_node(), _sent(_decision()), _sent(_decision("Released", "Deleted")))
    data = statecodec.dump_state(state)
    assert statecodec.load_state(data).decided == state.decided
    bare = dataclasses.replace(state, decided={}, encoded=[])
    assert statecodec.load_state(statecodec.dump_state(bare)).decided == {}


@st.composite
def _histories(draw) -> tuple[list[dict], list[int]]:
    """A scheduler's decisions about three pods on the node (placed, updated, preempted, deleted and made
    again under a new UID), at rising inbox offsets and event times; and, for each, how many earlier
    decisions are sent again (as copies) right after it."""
    uids = {name: f"{name}-0" for name in ("a", "b", "c")}
    history, offset, ts = [], 0, NOW
    for _ in range(draw(st.integers(1, 20))):
        name = draw(st.sampled_from(sorted(uids)))
        result = draw(st.sampled_from(["Scheduled", "Bound", "Preempted", "Deleted"]))
        offset += draw(st.integers(1, 3))
        ts += draw(st.integers(0, 2))
        record = {**decision(name, NODE, result="Released" if result == "Deleted" else result,
                             cpu=draw(st.sampled_from([1000, 2000]))),
                  "reason": "Deleted" if result == "Deleted" else None, "timestamp": ts}
        record["pod"]["uid"] = uids[name]
        record["causation"]["inboxOffset"] = offset
        history.append(record)
        if result == "Deleted":
            uids[name] = f"{name}-{offset}"
    return history, [draw(st.integers(0, 2)) for _ in history]


@given(_histories(), st.randoms(use_true_random=False))
def test_decisions_sent_again_anywhere_leave_the_pods_the_history_gives(drawn, rng):
    history, resends = drawn
    alone = _run(_node(), *(_sent(record) for record in history))
    mixed = _node()
    for position, record in enumerate(history):
        mixed = _run(mixed, _sent(record))
        for _ in range(resends[position]):
            mixed = _run(mixed, _sent(copy.deepcopy(rng.choice(history[:position + 1]))))
    assert dict(mixed.pods) == dict(alone.pods) and mixed.decided == alone.decided
