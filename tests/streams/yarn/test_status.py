"""The YARN bridge's status line: what ``koord status`` prints from the file the bridge writes each round."""

from __future__ import annotations

from streams.yarn.status import BridgeStatus, describe, load

RM = "http://rm:8088"


def test_a_synced_round_then_a_failed_one(tmp_path):
    status = BridgeStatus(RM)
    status.synced(1000.0, 3, ["h2:45454"])
    status.save(tmp_path)
    assert describe(load(tmp_path), now_s=1002.0) == (
        "ResourceManager http://rm:8088 reachable, last sync 2s ago, 3 NodeManagers (1 on no known node: h2:45454), "
        "updates written 0, refused 0; no error")
    status.failed(1010.0, "ResourceManager http://rm:8088 unreachable: [Errno 111] Connection refused")
    status.save(tmp_path)
    assert describe(load(tmp_path), now_s=1012.0) == (
        "ResourceManager http://rm:8088 UNREACHABLE, last sync 12s ago, 3 NodeManagers (1 on no known node: h2:45454), "
        "updates written 0, refused 0; last error 2s ago: ResourceManager http://rm:8088 unreachable: "
        "[Errno 111] Connection refused")


def test_a_refused_update_is_the_last_error_with_yarns_message(tmp_path):
    status = BridgeStatus(RM)
    status.refused(5.0, "UpdateNodeResource nosuch:1: unrecognized node: nosuch:1")
    assert describe(status.__dict__, now_s=5.0).endswith(
        "refused 1; last error 0s ago: UpdateNodeResource nosuch:1: unrecognized node: nosuch:1")
    assert "last sync never" in describe(status.__dict__, now_s=5.0)


def test_no_file_or_garbage_is_no_status(tmp_path):
    assert load(tmp_path) is None
    (tmp_path / "status.json").write_text("{not json")
    assert load(tmp_path) is None
