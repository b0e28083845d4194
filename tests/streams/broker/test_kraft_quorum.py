"""The requests a KRaft cluster answers failover questions with, against the wire format of Kafka's message
specs: DescribeQuorum v0 (flexible) and ElectLeaders v1."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from streams.broker.kraft import (
    DescribeQuorumRequest, DescribeQuorumResponse_v0, ElectLeadersRequest, KafkaCluster, KafkaNode)

METADATA_LOG = b"__cluster_metadata"
NO_TAGS = b"\x00"


def compact_string(value: bytes) -> bytes:
    return bytes([len(value) + 1]) + value


def test_describe_quorum_request_asks_for_the_metadata_log_partition():
    request = DescribeQuorumRequest().prepare({55: (0, 2)})
    assert request.encode() == (b"\x02" + compact_string(METADATA_LOG) + b"\x02" + struct.pack(">i", 0)
                                + NO_TAGS + NO_TAGS + NO_TAGS)


def test_describe_quorum_response_names_the_leader_and_voters():
    voter = struct.pack(">iq", 1, 42) + NO_TAGS
    partition = struct.pack(">ihiiq", 0, 0, 2, 5, 42) + b"\x02" + voter + b"\x01" + NO_TAGS
    answer = struct.pack(">h", 0) + b"\x02" + compact_string(METADATA_LOG) + b"\x02" + partition + NO_TAGS + NO_TAGS

    [topic] = DescribeQuorumResponse_v0.decode(answer).to_object()["topics"]

    assert topic["topic_name"] == METADATA_LOG.decode()
    assert topic["partitions"] == [{
        "partition_index": 0, "error_code": 0, "leader_id": 2, "leader_epoch": 5, "high_watermark": 42,
        "current_voters": [{"replica_id": 1, "log_end_offset": 42, "tags": {}}], "observers": [], "tags": {}}]


def test_elect_leaders_asks_for_the_preferred_replica_of_one_partition():
    request = ElectLeadersRequest("koord.inbox.scheduling", 3).prepare({43: (0, 2)})
    topic = b"koord.inbox.scheduling"
    assert request.encode() == (b"\x00" + struct.pack(">ih", 1, len(topic)) + topic + struct.pack(">iii", 1, 3, 30_000))


def test_a_cluster_without_live_nodes_says_so(tmp_path: Path):
    cluster = KafkaCluster([KafkaNode(1, 1, 2, tmp_path)], tmp_path)
    with pytest.raises(RuntimeError, match="none alive"):
        cluster.active_controller()
