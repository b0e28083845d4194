"""Hostile input cannot wedge the actuator: every failure of one record becomes its own ack or dead letter.

Symlinks are planted in fake trees: the kernel's cgroupfs refuses ``symlink()`` (EPERM), so a real cgroup
directory can never hold one; the same checks guard both. The memory range is also shown on this machine's
real cgroup v1 memory hierarchy where it is writable (``test_memory_minus_five_is_refused_on_a_real_cgroup``).
The publisher is the real one, used as the buffer it is (nothing is sent).
"""

from __future__ import annotations

import asyncio
import os
import types
import uuid

import pytest

from node_agent.actuator import verify
from node_agent.actuator.actuator import Actuator, OffsetStore, follow_incarnation, handle_record
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.publisher import Publisher
from streams.koordinator.classes import KUBE_BEST_EFFORT, KUBE_GUARANTEED
from streams.schemas import codec
from streams.topology import load_topology
from tests.node_agent.actuator.conftest import NODE, actuation, make_actuator, snapshot
from tests.node_agent.real_cgroups import ROOT, remove, require_root, require_writable

NAMES = load_topology().names()
QUOTA_FILE = {"v1": ("cpu", "cpu.cfs_quota_us"), "v2": ("", "cpu.max")}


def _tier(tree, kube_qos: str) -> str:
    return dict(tree.layout.tiers())[kube_qos]


def _plant_symlink(tree, target) -> str:
    """Replace the BE tier's quota file with a symlink to ``target``; the file's path."""
    subsystem, name = QUOTA_FILE[tree.version]
    path = tree.path(subsystem, _tier(tree, KUBE_BEST_EFFORT), name)
    path.unlink()
    os.symlink(target, path)
    return str(path)


def test_symlink_out_of_the_tree_is_refused_not_raised(any_tree, tmp_path):
    decoy = tmp_path / "etc-passwd"
    decoy.write_text("root:x:0:0\n")
    _plant_symlink(any_tree, decoy)
    before = snapshot(tmp_path)
    ack = make_actuator(any_tree).apply(actuation({"cpu.cfs_quota_us": "50000"}))
    assert ack["applied"] is False and ack["status"] == "rejected"
    assert ack["error"].startswith(f"rejected ({verify.BAD_TARGET})") and "outside" in ack["error"]
    assert snapshot(tmp_path) == before


def test_symlink_within_the_tree_is_not_followed_on_write(any_tree):
    """A symlink to another cgroup's file passes the confinement but O_NOFOLLOW refuses it: a failed ack."""
    subsystem, name = QUOTA_FILE[any_tree.version]
    other = any_tree.path(subsystem, _tier(any_tree, KUBE_GUARANTEED), name)
    original = other.read_text()
    _plant_symlink(any_tree, other)
    ack = make_actuator(any_tree).apply(actuation({"cpu.cfs_quota_us": "50000"}))
    assert ack["applied"] is False and ack["status"] == "failed" and "ELOOP" in ack["error"]
    assert other.read_text() == original


class Exploding:
    mechanism = "cgroup"

    def __init__(self, error: Exception, stage: str) -> None:
        self.error, self.stage = error, stage

    def plan(self, target, values):
        if self.stage == "plan":
            raise self.error
        return types.SimpleNamespace(target=target, requested=("cpu.shares",), actions=[], unsupported={})

    def execute(self, plan):
        raise self.error

    def read_back(self, plan):
        raise self.error


@pytest.mark.parametrize("error", [OSError(16, "Device or resource busy"), ValueError("bad"), KeyError("x"),
                                   RuntimeError("bug")], ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("stage", ["plan", "execute"])
def test_any_backend_exception_becomes_an_ack(stage, error):
    actuator = Actuator(NODE, {"cgroup": Exploding(error, stage)}, Verifier(NODE, None, SequenceStore(None)),
                        clock=lambda: 0.0)
    ack = actuator.apply(actuation({"cpu.shares": "2"}))
    assert ack["applied"] is False and type(error).__name__ in ack["error"]
    if stage == "plan":
        assert ack["status"] == "rejected" and ack["error"].startswith(f"rejected ({verify.INTERNAL_ERROR})")
    else:
        assert ack["status"] == "failed" and "reading back failed" in ack["error"]
    codec.encode("ActuationAck", ack)


@pytest.mark.parametrize("values", [
    {"memory.limit_in_bytes": "-5"}, {"memory.limit_in_bytes": "-2"}, {"memory.limit_in_bytes": "1000"},
    {"memory.limit_in_bytes": str(1 << 63)}, {"cpu.cfs_quota_us": "-5"}, {"cpu.cfs_quota_us": "10"},
    {"cpu.cfs_period_us": "10"}, {"cpu.cfs_period_us": "2000000"}, {"cpu.shares": "1"}, {"cpu.shares": "999999"},
    {"cpu.cfs_quota_us": "200000", "cpu.cfs_burst_us": "900000"}, {"cpu.cfs_burst_us": "-1"},
    {"cpu.idle": "2"}, {"cpuset.cpus": "2-9"}, {"cpuset.cpus": "3"}, {"cpu.bvt_warp_ns": "-7"},
], ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()))
def test_out_of_range_values_are_refused_and_nothing_written(any_tree, values, tmp_path):
    if "cpu.bvt_warp_ns" in values:
        any_tree.path("cpu", _tier(any_tree, KUBE_BEST_EFFORT), "cpu.bvt_warp_ns").write_text("0\n")
    before = snapshot(tmp_path)
    ack = make_actuator(any_tree).apply(actuation(values))
    assert ack["applied"] is False and ack["error"].startswith(f"rejected ({verify.BAD_VALUE})"), ack
    assert snapshot(tmp_path) == before


def test_memory_minus_five_is_refused_on_a_real_cgroup():
    """On this machine's cgroup v1 memory hierarchy: -5 is refused (not written as unlimited), 128 MiB lands."""
    require_root("create cgroups")
    hierarchies = [ROOT / "cpu", ROOT / "memory"]
    for hierarchy in hierarchies:
        if not (hierarchy / "cgroup.procs").exists():
            pytest.skip(f"no cgroup v1 hierarchy at {hierarchy}")
        require_writable(hierarchy)
    kubepods = f"kptest{uuid.uuid4().hex[:10]}"
    created = []
    try:
        for hierarchy in hierarchies:
            for rel in (kubepods, f"{kubepods}/besteffort"):
                (hierarchy / rel).mkdir()
                created.append(hierarchy / rel)
        limit = ROOT / "memory" / kubepods / "besteffort/memory.limit_in_bytes"
        limit.write_text(str(256 << 20))
        layout = CgroupLayout.detect(ROOT, kubepods, "cgroupfs", "v1")
        actuator = Actuator(NODE, {"cgroup": CgroupV1Backend(layout)}, Verifier(NODE, None, SequenceStore(None)))
        ack = actuator.apply(actuation({"memory.limit_in_bytes": "-5"}, sequence=1))
        assert ack["applied"] is False and ack["error"].startswith(f"rejected ({verify.BAD_VALUE})"), ack
        assert int(limit.read_text()) == 256 << 20
        ack = actuator.apply(actuation({"memory.limit_in_bytes": str(128 << 20)}, sequence=2))
        assert ack["applied"] is True and int(limit.read_text()) == 128 << 20
    finally:
        assert remove(created) == []


def _record(value: bytes | None, offset: int, key: bytes = NODE.encode()):
    return types.SimpleNamespace(topic=NAMES["actuations"], partition=0, offset=offset, key=key, value=value)


def _queued(publisher: Publisher, topic_id: str) -> list[dict]:
    return [codec.decode(outgoing.value)[1] for (topic, _), outgoing in publisher._state.items()
            if topic == topic_id]


def test_each_undecodable_record_gets_its_own_dead_letter(v1_tree):
    """Two in a row (garbage, another schema, a tombstone, a damaged Avro body): one dead letter each."""
    publisher = Publisher("localhost:1", NAMES)
    actuator = make_actuator(v1_tree)
    ack_body = codec.encode("ActuationAck", {"actuationId": "a", "nodeName": NODE, "sequence": 1, "applied": True,
                                             "values": {}, "timestamp": 0})
    bodies = [b"not avro", b"\x00garbage", ack_body, None, codec.encode("Actuation", actuation({}))[:12]]
    for offset, body in enumerate(bodies, start=10):
        assert asyncio.run(handle_record(actuator, _record(body, offset), publisher)) is None
    letters = _queued(publisher, "deadletters")
    assert [(d["sourceTopic"], d["sourcePartition"], d["sourceOffset"]) for d in letters] == [
        (NAMES["actuations"], 0, offset) for offset in range(10, 15)]
    assert all(d["reason"].startswith("undecodable actuation: ") for d in letters)


def test_a_refused_replay_never_replaces_the_applied_ack(v1_tree):
    """The replay's ack is queued beside the original's (not in its place) and says ``duplicate``."""
    publisher = Publisher("localhost:1", NAMES)
    actuator = make_actuator(v1_tree)
    body = codec.encode("Actuation", actuation({"cpu.cfs_quota_us": "50000"}, sequence=4, decision="d-4"))
    asyncio.run(handle_record(actuator, _record(body, 20), publisher))
    asyncio.run(handle_record(actuator, _record(body, 21), publisher))
    acks = _queued(publisher, "actuation-acks")
    assert [(a["actuationId"], a["sequence"], a["applied"], a["status"]) for a in acks] == [
        ("d-4", 4, True, "applied"), ("d-4", 4, False, "duplicate")]


def test_a_decoded_record_that_is_not_a_valid_actuation_for_this_node_is_refused(v1_tree):
    publisher = Publisher("localhost:1", NAMES)
    actuator = make_actuator(v1_tree)
    for offset, record in enumerate([actuation({"cpu.shares": "2"}, node="another-node"),
                                     actuation({"cpu.shares": "2"}, kind="nope"),
                                     actuation({"cpu.shares": "2; reboot"})], start=30):
        ack = asyncio.run(handle_record(actuator, _record(codec.encode("Actuation", record), offset), publisher))
        assert ack["applied"] is False and ack["status"] == "rejected"
    assert len(_queued(publisher, "actuation-acks")) == 3


def test_a_new_incarnation_discards_the_saved_offset_and_sequences(v1_tree, tmp_path):
    state = tmp_path / "state"
    actuator = make_actuator(v1_tree, state_dir=state)
    assert actuator.apply(actuation({"cpu.shares": "2"}, sequence=7))["applied"]
    offsets = OffsetStore(state)
    assert follow_incarnation(actuator, offsets, "t", "token-a") is False
    offsets.put("t", 0, 42)
    assert OffsetStore(state).token == "token-a" and OffsetStore(state).get("t", 0) == 42
    assert follow_incarnation(actuator, OffsetStore(state), "t", "token-a") is False

    restarted = make_actuator(v1_tree, state_dir=state)
    saved = OffsetStore(state)
    assert follow_incarnation(restarted, saved, "t", "token-b") is True
    assert saved.get("t", 0) is None and OffsetStore(state).get("t", 0) is None
    assert OffsetStore(state).token == "token-b"
    assert restarted.apply(actuation({"cpu.shares": "4"}, sequence=1))["applied"]
    assert make_actuator(v1_tree, state_dir=state).verifier.sequences.last(
        restarted.verifier.check(actuation({"cpu.shares": "8"}, sequence=9)).key) == 1


def test_a_saved_offset_file_from_before_incarnations_is_adopted(v1_tree, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "actuation-offsets.json").write_text('{"t/0": 5}')
    offsets = OffsetStore(state)
    assert offsets.token is None and offsets.get("t", 0) == 5
    assert follow_incarnation(make_actuator(v1_tree, state_dir=state), offsets, "t", "token-a") is False
    assert OffsetStore(state).get("t", 0) == 5 and OffsetStore(state).token == "token-a"
