from streams import actuation


def _record(**changes):
    record = {"decisionId": "d1", "nodeName": "n1", "sequence": 3, "targetKind": "qos", "targetId": "BE",
              "mechanism": "cgroup", "values": {"cpu.cfs_quota_us": "200000"}, "signature": None,
              "causation": {"inboxTopic": "t", "inboxPartition": 0, "inboxOffset": 1}, "timestamp": 5}
    record.update(changes)
    return record


def test_signed_record_verifies_and_any_change_breaks_it():
    signed = actuation.sign(_record(), b"secret")
    assert actuation.verify(signed, b"secret")
    assert not actuation.verify(signed, b"other")
    assert not actuation.verify({**signed, "values": {"cpu.cfs_quota_us": "-1"}}, b"secret")
    assert not actuation.verify({**signed, "sequence": 4}, b"secret")


def test_unsigned_record_never_verifies():
    assert actuation.sign(_record(), None)["signature"] is None
    assert not actuation.verify(_record(), b"secret")
