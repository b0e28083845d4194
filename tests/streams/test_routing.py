import pytest

from streams.outputs import WRITTEN_TO_INBOXES
from streams.partitioning import partition_for
from streams.routing import (CHECKED_SOURCES, COPIED_BY_AGGREGATES, DOMAIN_ROUTER_SOURCES, KIND_BY_SOURCE, NOT_ROUTED,
                             ROUTED_SOURCES, Route, routes)
from streams.signing import PIPELINE_SOURCES


R = "inbox-routing"
PARTITIONS = {"inbox-node": 3, "inbox-routing": 2, "inbox-scheduling": 2}


@pytest.mark.parametrize("kind, key, record, expected", [
    pytest.param("Node", "n1", {}, [Route("inbox-node", "n1"), Route(R, "n1")], id="node"),
    pytest.param("Pod", "ns/p", {"nodeName": None}, [Route(R, "ns/p")], id="pending-pod"),
    pytest.param("Pod", "ns/p", {"nodeName": "n1"}, [Route(R, "ns/p")], id="bound-pod"),
    pytest.param("Pod", "ns/p", None, [Route(R, "ns/p")], id="deleted-pod"),
    pytest.param("NodeMetric", "n1", {}, [Route("inbox-node", "n1")], id="node-metric-to-the-node-only"),
    pytest.param("NodeUsage", "n1", {"nodeName": "n1"}, [Route(R, "n1")], id="node-usage-to-the-node's-domain"),
    pytest.param("NodeResourceTopology", "n1", {}, [Route("inbox-node", "n1"), Route(R, "n1")],
                 id="numa-zones-to-the-node-and-the-scheduler"),
    pytest.param("NodeResourceTopology", "n1", None, [Route("inbox-node", "n1"), Route(R, "n1")],
                 id="deleted-numa-zones"),
    pytest.param("Device", "n1", {}, [Route("inbox-node", "n1"), Route(R, "n1")],
                 id="devices-to-the-node-and-the-scheduler"),
    pytest.param("PodGroup", "default/g", {}, [Route(R, "default/g", 0)], id="podgroups-to-the-directory"),
    pytest.param("ElasticQuota", "default/q", {}, [Route(R, "default/q", p) for p in range(2)],
                 id="quotas-to-every-routing-partition"),
    pytest.param("ElasticQuotaProfile", "ks/p", {}, [Route(R, "ks/p", p) for p in range(2)],
                 id="profiles-to-every-routing-partition"),
    pytest.param("SchedulingDecision", "ns/p", {"result": "Scheduled", "nodeName": "n1"}, [Route("inbox-node", "n1")],
                 id="placement-to-its-node"),
    pytest.param("SchedulingDecision", "ns/p", {"result": "Released", "nodeName": "n1"}, [Route("inbox-node", "n1")],
                 id="release-to-its-node"),
    pytest.param("SchedulingDecision", "ns/p", {"result": "Unschedulable", "nodeName": None}, [],
                 id="unschedulable-goes-nowhere"),
    pytest.param("NodeResource", "n1", {"nodeName": "n1"}, [Route(R, "n1")], id="node-resources-to-the-scheduler"),
    pytest.param("KubeSchedulerConfiguration", "koord-scheduler", {}, [Route(R, "koord-scheduler", 0)],
                 id="scheduler-config"),
    pytest.param("ConfigMap", "ks/cfg", {}, [Route("inbox-node", "ks/cfg", p) for p in range(3)], id="config-broadcast"),
    pytest.param("Tick", "tick", {"timestamp": 1}, [Route("inbox-node", "tick", p) for p in range(3)]
                 + [Route(R, "tick", 0)], id="tick-everywhere"),
])
def test_routes(kind, key, record, expected):
    assert routes("x", key, kind, record, PARTITIONS) == expected


def test_evictions_on_the_decisions_topic_are_valid_and_routed_nowhere():
    from streams import validation
    record = {"decisionId": "e", "nodeName": "n1", "pod": {"namespace": "ns", "name": "p", "uid": "u"},
              "reason": "EvictPodByNodeMemoryUsage", "message": "", "timestamp": 1}
    assert validation.problems("decisions", "ns/p", "Eviction", record) == []
    assert routes("decisions", "ns/p", "Eviction", record, PARTITIONS) == []


def test_numa_zones_have_a_topic_of_their_own():
    """Same key as the Node: on one compacted topic, compaction would keep only one of them."""
    from streams import validation
    from streams.routing import KIND_BY_SOURCE, kind_of_deletion
    assert KIND_BY_SOURCE["noderesourcetopologies"] == ("NodeResourceTopology",)
    assert "NodeResourceTopology" not in KIND_BY_SOURCE["nodes"]
    assert kind_of_deletion("noderesourcetopologies", "n1") == "NodeResourceTopology"
    assert validation.problems("nodes", "n1", "NodeResourceTopology", {"metadata": {"name": "n1"}}) != []


def test_the_scheduling_inbox_takes_what_the_domain_router_forwards_under_any_domain():
    from streams.validation import route_problems
    assert route_problems("inbox-scheduling", "gpu", 2, "pods", "ns/p", "Pod", {}, PARTITIONS) == []
    assert route_problems("inbox-scheduling", "default", 0, "ticks", "tick", "Tick", {}, PARTITIONS) == []
    assert route_problems("inbox-scheduling", "gpu", 2, "nodemetrics", "n1", "NodeMetric", {}, PARTITIONS) == [
        "the domain router never sends a NodeMetric 'n1' of nodemetrics to a scheduling domain"]


def test_a_quota_is_acknowledged_once_per_routing_partition_by_the_router_or_a_domain():
    from streams.routing import ACKED_AS
    assert [r.inbox for r in routes("quotas", "ns/q", "ElasticQuota", {}, PARTITIONS)] == [R, R]
    assert ACKED_AS[R] == (R, "inbox-scheduling")


def test_the_router_reads_no_topic_only_the_pipeline_writes():
    """The scheduling domains' binding decisions and the node aggregate's resources and usages reach their
    inboxes only as their aggregate's own copies, and Evictions go to no inbox, so no router reads the topics
    only the pipeline writes (signed); the domain router reads the pods, the router every other source."""
    assert set(CHECKED_SOURCES) == set(KIND_BY_SOURCE) - set(COPIED_BY_AGGREGATES)
    assert set(ROUTED_SOURCES) == set(CHECKED_SOURCES) - {"pods"} and DOMAIN_ROUTER_SOURCES == ("pods",)
    assert [r.inbox for r in routes("pods", "ns/p", "Pod", {}, PARTITIONS)] == [R]
    assert set(COPIED_BY_AGGREGATES) == set(PIPELINE_SOURCES)
    for source in COPIED_BY_AGGREGATES:
        assert set(KIND_BY_SOURCE[source]) <= set(WRITTEN_TO_INBOXES) | set(NOT_ROUTED), source
    assert routes("decisions", "ns/p", "Eviction", {"nodeName": "n1"}, PARTITIONS) == []


def test_a_route_lands_in_its_own_partition_or_where_the_partitioner_puts_its_key():
    assert Route("inbox-node", "n1", 3).partition_in(8) == 3
    assert Route("inbox-node", "n1").partition_in(8) == partition_for(8, "n1")
