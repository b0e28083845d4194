"""Last applied sequences survive a restart; forgetting a target raises the floor."""

import pytest

from node_agent.actuator.sequences import SequenceStore, target_key


def test_sequences_persist_across_restarts(tmp_path):
    store = SequenceStore(tmp_path)
    store.record(target_key("qos", "BE", "cgroup"), 7)
    assert SequenceStore(tmp_path).last(target_key("qos", "BE", "cgroup")) == 7
    assert SequenceStore(tmp_path).last(target_key("qos", "LS", "cgroup")) == -1


def test_forgotten_targets_raise_the_floor(tmp_path):
    store = SequenceStore(tmp_path, capacity=2)
    for sequence, target in enumerate(["a", "b", "c"], start=1):
        store.record(target_key("pod", target, "cgroup"), sequence)
    assert store.last(target_key("pod", "a", "cgroup")) == 1  # the floor: sequence 1 can never come back
    assert store.last(target_key("pod", "c", "cgroup")) == 3


def test_read_only_store_never_writes(tmp_path):
    store = SequenceStore(tmp_path, persist=False)
    store.record("k", 3)
    assert list(tmp_path.iterdir()) == []


def test_damaged_file_refuses_to_start(tmp_path):
    (tmp_path / "actuation-sequences.json").write_text("{not json")
    with pytest.raises(RuntimeError, match="applied sequences"):
        SequenceStore(tmp_path)


def test_the_highest_sequence_persists_and_is_derived_from_an_older_file(tmp_path):
    store = SequenceStore(tmp_path, capacity=1)
    store.record(target_key("pod", "a", "cgroup"), 9)
    store.record(target_key("pod", "b", "cgroup"), 4)
    assert SequenceStore(tmp_path).highest == 9
    (tmp_path / "actuation-sequences.json").write_text('{"floor": 3, "last": [["k", 7]]}')
    assert SequenceStore(tmp_path).highest == 7
