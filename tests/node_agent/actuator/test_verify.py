"""Malicious and broken actuations are refused with a reason, counted, acknowledged, and write nothing."""

import os

import pytest
from prometheus_client import REGISTRY

from node_agent.actuator import verify
from streams import actuation as contract
from streams.schemas import codec
from tests.node_agent.actuator.conftest import NODE, POD_UID, actuation, make_actuator, snapshot

KEY = b"test-key"


def signed(record, key=KEY):
    return contract.sign(record, key)


def tampered(record):
    good = signed(record)
    return {**good, "values": {**good["values"], "cpu.cfs_quota_us": "900000"}}


CASES = {
    # id: (actuation, reason, key configured)
    "pod-uid-dot-dot": (actuation({"cpu.shares": "2"}, kind="pod", target="../../etc"), verify.BAD_TARGET, None),
    "container-id-with-slash": (actuation({"cpu.shares": "2"}, kind="container", target=f"{POD_UID}/abc/0123456789ab"),
                                verify.BAD_TARGET, None),
    "container-id-dot-dot": (actuation({"cpu.shares": "2"}, kind="container", target=f"{POD_UID}/../../.."),
                             verify.BAD_TARGET, None),
    "hostapp-path-escape": (actuation({"cgroup.path": "../../etc", "cpu.shares": "2"}, kind="hostapp", target="nginx"),
                            verify.BAD_TARGET, None),
    "resctrl-group-escape": (actuation({"l3.end_percent": "30"}, mechanism="resctrl", target="../BE"),
                             verify.BAD_TARGET, None),
    "other-node": (actuation({"cpu.shares": "2"}, node="node-b"), verify.WRONG_NODE, None),
    "unsigned-with-key": (actuation({"cpu.shares": "2"}), verify.UNSIGNED, KEY),
    "wrong-key": (signed(actuation({"cpu.shares": "2"}), b"other-key"), verify.BAD_SIGNATURE, KEY),
    "tampered-after-signing": (tampered(actuation({"cpu.shares": "2"})), verify.BAD_SIGNATURE, KEY),
    "unknown-setting": (actuation({"cpu.rt_runtime_us": "1"}), verify.UNKNOWN_SETTING, None),
    "setting-with-path": (actuation({"../../../etc/passwd": "x"}), verify.UNKNOWN_SETTING, None),
    "resctrl-setting-on-cgroup": (actuation({"l3.end_percent": "30"}), verify.UNKNOWN_SETTING, None),
    "unknown-kind": (actuation({"cpu.shares": "2"}, kind="namespace"), verify.UNKNOWN_TARGET_KIND, None),
    "unknown-mechanism": (actuation({"cpu.shares": "2"}, mechanism="sysctl"), verify.UNKNOWN_MECHANISM, None),
    "tc-on-a-container": (actuation({"total_bps": "1"}, kind="container", target=f"{POD_UID}/{'a' * 12}",
                                    mechanism="tc"), verify.MECHANISM_NOT_FOR_TARGET, None),
    "node-tc-setting-on-a-pod": (actuation({"total_bps": "1"}, kind="pod", target=POD_UID, mechanism="tc"),
                                 verify.UNKNOWN_SETTING, None),
    "core-sched-on-the-be-tier": (actuation({"core_sched.group": "g"}), verify.UNKNOWN_SETTING, None),
    "garbage-value": (actuation({"cpu.cfs_quota_us": "1; rm -rf /"}), verify.BAD_VALUE, None),
    "no-settings": (actuation({}), verify.BAD_VALUE, None),
    "quota-on-ls": (actuation({"cpu.cfs_quota_us": "50000"}, target="LS"), verify.PROTECTED_TARGET, None),
    "missing-pod": (actuation({"cpu.shares": "2"}, kind="pod", target="bbbbbbbb-0000-0000-0000-000000000001"),
                    verify.TARGET_NOT_FOUND, None),
    "malformed": ({**actuation({"cpu.shares": "2"}), "sequence": "7"}, verify.MALFORMED, None),
}


def rejected_count(reason):
    return REGISTRY.get_sample_value("koord_node_agent_actuations_rejected_total", {"reason": reason}) or 0


@pytest.mark.parametrize("case", list(CASES))
def test_refused_with_reason_and_nothing_written(any_tree, tmp_path, monkeypatch, case):
    record, reason, key = CASES[case]
    any_tree.pod(POD_UID)
    decoy = tmp_path / "etc"
    decoy.mkdir()
    (decoy / "passwd").write_text("root:x:0:0\n")
    writes = []
    real_mkdir = os.mkdir
    monkeypatch.setattr(os, "mkdir", lambda *a, **k: (writes.append(("mkdir", a)), real_mkdir(*a, **k)))
    actuator = make_actuator(any_tree, key=key, state_dir=tmp_path / "state")
    actuator.backends["cgroup"].writer = lambda path, value: writes.append((path, value))
    before, counted = snapshot(tmp_path), rejected_count(reason)

    ack = actuator.apply(record)

    assert (ack["applied"], ack["values"]) == (False, {})
    assert ack["error"].startswith(f"rejected ({reason})"), ack["error"]
    assert rejected_count(reason) == counted + 1
    assert writes == [] and snapshot(tmp_path) == before
    assert codec.decode(codec.encode("ActuationAck", ack))[1] == ack


def test_replayed_and_older_sequences_are_refused_even_after_a_restart(v1_tree, tmp_path):
    """The replay of the applied actuation is a ``duplicate`` (its ack marked so), an older one stale."""
    state = tmp_path / "state"
    record = contract.sign(actuation({"cpu.cfs_quota_us": "50000"}, sequence=5), KEY)
    assert make_actuator(v1_tree, key=KEY, state_dir=state).apply(record)["applied"] is True
    restarted = make_actuator(v1_tree, key=KEY, state_dir=state)
    before = snapshot(v1_tree.root)
    for replay, reason in ((record, verify.DUPLICATE),
                           (contract.sign(actuation({"cpu.cfs_quota_us": "90000"}, sequence=4), KEY),
                            verify.STALE_SEQUENCE)):
        ack = restarted.apply(replay)
        assert not ack["applied"] and ack["error"].startswith(f"rejected ({reason})")
        assert ack["status"] == ("duplicate" if reason == verify.DUPLICATE else "rejected")
    assert snapshot(v1_tree.root) == before
    newer = contract.sign(actuation({"cpu.cfs_quota_us": "90000"}, sequence=6), KEY)
    assert restarted.apply(newer)["values"] == {"cpu.cfs_quota_us": "90000"}


def test_sequences_are_per_target(v1_tree):
    actuator = make_actuator(v1_tree)
    assert actuator.apply(actuation({"cpu.shares": "2"}, sequence=9))["applied"]
    assert actuator.apply(actuation({"cpu.shares": "1024"}, target="LS", sequence=3))["applied"]


def test_signature_survives_the_avro_round_trip(v1_tree):
    record = contract.sign(actuation({"cpu.shares": "2"}), KEY)
    _, decoded = codec.decode(codec.encode("Actuation", record))
    assert make_actuator(v1_tree, key=KEY).apply(decoded)["applied"] is True


def test_wrong_node_target_id_for_node_targets():
    verifier = verify.Verifier(NODE, None, verify.SequenceStore(None))
    with pytest.raises(verify.Rejected) as rejected:
        verifier.check(actuation({"total_bps": "1"}, kind="node", target="node-b", mechanism="tc"))
    assert rejected.value.reason == verify.BAD_TARGET


def test_an_unsigned_far_future_sequence_is_refused_and_blocks_nothing(v1_tree, tmp_path):
    """A forged sequence of 2^63 - 1 would make every later real actuation of its target stale: without a key
    it is refused as a ``sequence-jump``, and the next real sequence still applies, after a restart too."""
    state = tmp_path / "state"
    actuator = make_actuator(v1_tree, state_dir=state)
    assert actuator.apply(actuation({"cpu.cfs_quota_us": "50000"}, sequence=5))["applied"]
    forged = actuator.apply(actuation({"cpu.cfs_quota_us": "1000"}, sequence=2 ** 63 - 1))
    assert not forged["applied"] and forged["error"].startswith(f"rejected ({verify.SEQUENCE_JUMP})")
    restarted = make_actuator(v1_tree, state_dir=state)
    assert restarted.apply(actuation({"cpu.cfs_quota_us": "90000"}, sequence=6))["values"] == {
        "cpu.cfs_quota_us": "90000"}
    assert restarted.apply(actuation({"cpu.shares": "2"}, target="LS", sequence=6 + verify.MAX_UNSIGNED_JUMP))[
        "applied"]


def test_a_signed_sequence_may_jump_any_distance(v1_tree):
    actuator = make_actuator(v1_tree, key=KEY)
    assert actuator.apply(signed(actuation({"cpu.cfs_quota_us": "50000"}, sequence=5)))["applied"]
    assert actuator.apply(signed(actuation({"cpu.cfs_quota_us": "90000"}, sequence=2 ** 62)))["applied"]
