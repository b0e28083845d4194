"""Actuator.apply end to end on a fake tree, the dry run, and the Kafka shell's pieces."""

import asyncio
import json
import types

from prometheus_client import REGISTRY

from node_agent.actuator.actuator import Actuator, OffsetStore, handle_record
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.tc import TcBackend
from node_agent.actuator.verify import TARGET_NOT_FOUND, Verifier
from node_agent.pods import PodDirectory
from node_agent.settings import AgentSettings
from streams.schemas import codec
from tests.node_agent.actuator.conftest import NODE, actuation, make_actuator, snapshot
from tests.node_agent.actuator.test_tc import POD, CannedHost


def latency_count():
    return REGISTRY.get_sample_value("koord_actuation_latency_seconds_count", {"mechanism": "cgroup"}) or 0


def test_apply_writes_reads_back_and_acknowledges(v1_tree, tmp_path):
    observed = latency_count()
    ack = make_actuator(v1_tree, state_dir=tmp_path / "state").apply(
        actuation({"cpu.cfs_quota_us": "50000", "cpu.shares": "2"}, sequence=3, decision="plan-7"))
    assert ack == {"actuationId": "plan-7", "nodeName": NODE, "sequence": 3, "applied": True,
                   "values": {"cpu.cfs_quota_us": "50000", "cpu.shares": "2"}, "error": None,
                   "timestamp": 1_700_000_000_500, "status": "applied"}
    assert v1_tree.read("cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "50000"
    assert latency_count() == observed + 1
    assert json.loads((tmp_path / "state/actuation-sequences.json").read_text())["last"][0][1] == 3
    codec.encode("ActuationAck", ack)


def test_unsupported_settings_are_named_and_the_others_applied(v1_tree):
    ack = make_actuator(v1_tree).apply(actuation({"cpu.bvt_warp_ns": "-1", "cpu.shares": "2"}))
    assert ack["applied"] is True and ack["values"] == {"cpu.shares": "2"}
    assert ack["error"].startswith("unsupported cpu.bvt_warp_ns: no cpu.bvt_warp_ns in ")
    assert v1_tree.read("cpu", "kubepods/besteffort", "cpu.shares") == "2"


def test_nothing_supported_is_not_applied(v1_tree):
    ack = make_actuator(v1_tree).apply(actuation({"cpu.bvt_warp_ns": "-1"}))
    assert ack["applied"] is False and ack["values"] == {} and "unsupported cpu.bvt_warp_ns" in ack["error"]


def test_failed_write_is_acknowledged_with_the_values_in_force(v1_tree):
    actuator = make_actuator(v1_tree)

    def failing(path, value):
        raise OSError(16, "Device or resource busy")
    actuator.backends["cgroup"].writer = failing
    ack = actuator.apply(actuation({"memory.limit_in_bytes": str(1 << 30)}))
    assert ack["applied"] is False and "EBUSY" in ack["error"]
    assert ack["values"] == {"memory.limit_in_bytes": "-1"}


def test_mechanism_without_backend_is_unsupported(v1_tree):
    ack = make_actuator(v1_tree).apply(actuation({"total_bps": "1000000"}, kind="node", target=NODE, mechanism="tc"))
    assert ack["applied"] is False and ack["error"].startswith("unsupported: no tc backend")


def test_dry_run_prints_and_writes_nothing(v1_tree, tmp_path):
    lines = []
    actuator = make_actuator(v1_tree, state_dir=tmp_path / "state", dry_run=True, out=lines.append)
    before = snapshot(tmp_path)
    ack = actuator.apply(actuation({"cpu.cfs_quota_us": "50000"}))
    assert snapshot(tmp_path) == before
    (line,) = lines
    printed = json.loads(line)
    assert printed["would"] == [f"write '50000' to {v1_tree.root}/cpu/kubepods/besteffort/cpu.cfs_quota_us"]
    assert ack["applied"] is False and ack["error"].startswith("dry-run")


class FakePublisher:
    def __init__(self):
        self.records = []

    def submit_record(self, topic_id, key, schema, record, **kwargs):
        self.records.append((topic_id, key, schema, record))


def consumed(value, key=NODE.encode(), offset=4):
    return types.SimpleNamespace(topic="koord.actuations", partition=1, offset=offset, key=key, value=value)


def test_handle_record_acks_and_dead_letters(v1_tree):
    actuator, publisher = make_actuator(v1_tree), FakePublisher()
    asyncio.run(handle_record(actuator, consumed(codec.encode("Actuation", actuation({"cpu.shares": "2"}))),
                              publisher))
    asyncio.run(handle_record(actuator, consumed(b"\x00garbage"), publisher))
    (ack_topic, key, schema, ack), (dead_topic, _, dead_schema, dead) = publisher.records
    assert (ack_topic, key, schema, ack["applied"]) == ("actuation-acks", NODE, "ActuationAck", True)
    assert (dead_topic, dead_schema, dead["sourceOffset"], dead["payload"]) == ("deadletters", "DeadLetter", 4,
                                                                                 b"\x00garbage")


def test_offsets_persist(tmp_path):
    OffsetStore(tmp_path).put("koord.actuations", 2, 41)
    assert OffsetStore(tmp_path).get("koord.actuations", 2) == 41
    assert OffsetStore(tmp_path).get("koord.actuations", 1) is None


def test_apply_is_callable_without_kafka(v1_tree):
    actuator = Actuator(NODE, {"cgroup": v1_tree.backend()}, Verifier(NODE, None, SequenceStore(None)))
    assert actuator.apply(actuation({"cpu.shares": "4"}))["values"] == {"cpu.shares": "4"}


def test_the_tc_backend_is_built_with_the_pod_directorys_addresses(v1_tree, tmp_path):
    pods = PodDirectory(NODE)
    settings = AgentSettings(tc_interface="eth9", state_dir=tmp_path, resctrl_root=tmp_path / "resctrl")
    actuator = Actuator.from_settings(settings, NODE, v1_tree.layout, address_of=pods.address_of)
    assert actuator.backends["tc"].address_of == pods.address_of


def test_a_pod_tc_actuation_waits_for_the_pods_address_then_applies(v1_tree):
    """The pod was planned before kubelet reported its IP: refused, kept waiting, applied once the pods topic
    brings the address (its sequence was not taken by the refusal)."""
    addresses, host = {}, CannedHost()
    actuator = make_actuator(v1_tree, tc=TcBackend("eth0", runner=host, ifb="kifb1", address_of=addresses.get))
    record = actuation({"priority": "2"}, kind="pod", target=POD.id, mechanism="tc", sequence=4)
    refused = actuator.apply(record)
    assert refused["status"] == "rejected" and refused["error"].startswith(f"rejected ({TARGET_NOT_FOUND})")
    assert actuator.waiting.due(actuator.target_exists) == [] and len(actuator.waiting) == 1
    assert not any("add" in command for command in host.commands)
    addresses[POD.id] = "10.9.0.4"
    due = actuator.waiting.due(actuator.target_exists)
    assert due == [record]
    assert actuator.apply(due[0])["status"] != "rejected"
    assert any("filter add dev eth0" in " ".join(command) and "10.9.0.4/32" in " ".join(command)
               for command in host.commands), host.commands
