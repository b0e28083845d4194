"""Issue 37 failure 9, its first half, on both brokers: a scheduling-inbox record keyed by a domain no
ElasticQuotaProfile defines made a new SchedulingDomain, which scheduled the pod it carried (one nobody
applied). Inbox records are now signed by the pipeline (``streams.signing``): the forged one is a dead letter
saying it is unsigned, and no decision is made for the pod it carried."""

from __future__ import annotations

import asyncio
import json

import pytest

from streams import kafka
from streams.bench.hostile import encoded, pod_manifest, read_topic
from streams.partitioning import partition_for
from streams.schemas import codec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(own_cluster):
    """A cluster of this module's own (``own_cluster``): what these tests write would change the shared one's
    placements and its session replay."""
    return own_cluster


DOMAIN = "forged-tree"


def test_a_scheduling_inbox_record_naming_a_domain_no_profile_defines_is_a_dead_letter(cluster):
    applied = pod_manifest("forged-domain-real")
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=json.dumps(applied))
    _, applied_key, _ = encoded(applied)
    partition = partition_for(list(range(cluster.topology.spec("pods").partitions)), applied_key)

    _, key, value = encoded(pod_manifest("forged-domain-invented"))
    envelope = codec.encode("InboxEvent", {
        "sourceTopic": cluster.topology.name("pods"), "sourcePartition": partition, "sourceOffset": 0,
        "timestamp": 0, "key": key, "payload": value, "ack": False})
    asyncio.run(kafka.produce(cluster.bootstrap, [(cluster.topology.name("inbox-scheduling"), DOMAIN, envelope)]))

    def refused(letters: list) -> list:
        return [record for _, _, schema, record in letters
                if schema == "DeadLetter" and record["stage"] == "scheduling" and record["key"] == DOMAIN.encode()]

    letters = asyncio.run(read_topic(cluster.bootstrap, cluster.topology.name("deadletters"),
                                     lambda found: bool(refused(found)), 30))
    assert [record["reason"] for record in refused(letters)] == [
        "the record has no koord-mac header: only the pipeline writes inbox-scheduling"]
    decisions = asyncio.run(read_topic(cluster.bootstrap, cluster.topology.name("decisions"), lambda found: False, 5))
    assert "forged-domain-invented" not in {record["pod"]["name"] for *_, schema, record in decisions
                                            if schema == "SchedulingDecision"}
