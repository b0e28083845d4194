import dataclasses
import json

from streams.domains import DomainTable, Forward
from tests.streams.scheduler.support import deleted, event, node, pod, quota, scheduler_config, tick

TREE = {"quota.scheduling.koordinator.sh/tree-id": "gpu"}


def profile(name="gpu-pool", tree="gpu", quota_name="gpu-root", selector=None):
    selector = selector or {"pool": "gpu"}
    spec = {"quotaName": quota_name, "nodeSelector": {"matchLabels": selector}}
    record = {"metadata": {"name": name, "namespace": "kube-system", "labels": {}, "annotations": {}},
              "manifest": json.dumps({"spec": spec}), "quotaTreeId": tree, "nodeSelector": selector}
    return event("ElasticQuotaProfile", f"kube-system/{name}", record)


def team_pod(name, quota_name):
    return pod(name, labels={"quota.scheduling.koordinator.sh/name": quota_name})


def forwards(table, ev):
    return table.route(ev).forwards


def test_a_pod_goes_to_its_quota_trees_domain_and_everything_else_to_default():
    table = DomainTable(1)
    assert forwards(table, profile()) == ()
    table.route(quota("train", {"cpu": 1}, labels=TREE))
    table.route(quota("web", {"cpu": 1}))
    assert forwards(table, team_pod("a", "train")) == (Forward("gpu"),)
    assert forwards(table, team_pod("b", "web")) == (Forward("default"),)
    assert forwards(table, pod("c")) == (Forward("default"),)
    assert forwards(table, team_pod("d", "gpu-root")) == (Forward("gpu"),), "the profile's own quota is in its tree"
    assert table.domains() == ["default", "gpu"]


def test_a_pod_stays_in_its_first_domain_until_deleted():
    table = DomainTable(1)
    table.route(quota("train", {"cpu": 1}, labels=TREE))
    assert forwards(table, team_pod("a", "train")) == (Forward("gpu"),)
    table.route(deleted("ElasticQuota", "default/train"))
    assert forwards(table, team_pod("a", "train")) == (Forward("gpu"),)
    assert forwards(table, deleted("Pod", "default/a")) == (Forward("gpu"),)
    assert forwards(table, team_pod("a", "train")) == (Forward("default"),), "a new pod of that name is routed anew"


def test_a_node_joins_the_domain_of_the_profile_selecting_it_and_moves_when_its_labels_do():
    table = DomainTable(1)
    table.route(profile())
    assert forwards(table, node("n1", labels={"pool": "gpu"})) == (Forward("gpu"),)
    assert forwards(table, event("NodeUsage", "n1", {})) == (Forward("gpu"),)
    assert forwards(table, node("n1", labels={"pool": "cpu"})) == (Forward("gpu", deleted=True), Forward("default"))
    assert forwards(table, event("NodeUsage", "n1", {})) == (Forward("default"),)
    assert forwards(table, deleted("Node", "n1")) == (Forward("default"),)


def test_a_node_two_profiles_select_is_refused_and_keeps_its_domain():
    table = DomainTable(1)
    table.route(profile())
    table.route(profile("big-pool", tree="big", quota_name="big-root", selector={"size": "big"}))
    assert forwards(table, node("n1", labels={"pool": "gpu"})) == (Forward("gpu"),)
    routed = table.route(node("n1", labels={"pool": "gpu", "size": "big"}))
    assert routed.forwards == ()
    assert routed.refused == ("node n1 is selected by the ElasticQuotaProfiles kube-system/big-pool, "
                              "kube-system/gpu-pool of the quota trees big, gpu; a node belongs to one scheduling domain")
    assert forwards(table, event("NodeUsage", "n1", {})) == (Forward("gpu"),)


def test_partition_zero_sends_quotas_to_their_domain_and_every_domain_objects_to_new_domains():
    directory, other = DomainTable(0), DomainTable(2)
    config = scheduler_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                               "profiles": [{"schedulerName": "default-scheduler"}]})
    assert forwards(directory, config) == (Forward("default"),)
    new_profile = profile()
    assert other.route(new_profile).forwards == ()
    routed = directory.route(new_profile)
    assert routed.forwards == (Forward("gpu"),)
    assert [domain for domain, _ in routed.catch_up] == ["gpu"]
    assert forwards(directory, quota("train", {"cpu": 1}, labels=TREE)) == (Forward("gpu"),)
    assert forwards(directory, tick(5000)) == (Forward("default"), Forward("gpu"))


def test_an_ack_goes_with_one_copy_only():
    table = DomainTable(0)
    table.route(profile())
    ev = tick(5000)
    acked = type(ev)(ev.causation, ev.timestamp_ms, ev.key, "PodGroup", {"metadata": {"name": "g"}}, ack=True)
    assert forwards(table, acked) == (Forward("default", ack=True), Forward("gpu"))


def test_a_forwarded_event_seen_again_is_not_routed_twice():
    table = DomainTable(1)
    ev = pod("a")
    assert forwards(table, ev) == (Forward("default"),)
    assert forwards(table, ev) == ()


def test_the_table_restores_from_its_changes():
    table = DomainTable(0)
    for ev in (profile(), quota("train", {"cpu": 1}, labels=TREE), node("n1", labels={"pool": "gpu"}),
               team_pod("a", "train")):
        table.route(ev, envelope="ZW52")
    restored = DomainTable.restore(0, {k: v for k, v in table.take_changes().items() if v is not None})
    assert forwards(restored, event("NodeUsage", "n1", {})) == (Forward("gpu"),)
    assert forwards(restored, deleted("Pod", "default/a")) == (Forward("gpu"),)
    assert restored.domains() == ["default", "gpu"]


def test_a_new_domain_gets_the_every_domain_objects_in_source_order():
    table = DomainTable(0)
    first, second = (event("PodGroup", f"default/{name}", {"metadata": {"name": name}}) for name in ("b", "a"))
    table.route(first, envelope="Zmlyc3Q=")
    table.route(second, envelope="c2Vjb25k")
    restored = DomainTable.restore(0, {k: v for k, v in table.take_changes().items() if v is not None})
    catch_up = restored.route(profile()).catch_up
    assert [(domain, stored.envelope) for domain, stored in catch_up] == [("gpu", "Zmlyc3Q="), ("gpu", "c2Vjb25k")]


def test_storage_objects_reach_every_domain_and_a_csinode_its_nodes_domain():
    from streams.routing import routes

    partitions = {"inbox-node": 4, "inbox-routing": 4, "inbox-scheduling": 4}
    for source, kind, key in (("persistentvolumes", "PersistentVolume", "pv-1"),
                              ("persistentvolumeclaims", "PersistentVolumeClaim", "team/data"),
                              ("storageclasses", "StorageClass", "fast")):
        assert [(r.inbox, r.partition) for r in routes(source, key, kind, {}, partitions)] == [("inbox-routing", 0)]
    assert [r.inbox for r in routes("csinodes", "n1", "CSINode", {}, partitions)] == ["inbox-routing"]

    directory = DomainTable(0)
    directory.route(profile())
    claim = event("PersistentVolumeClaim", "team/data", {"metadata": {"name": "data", "namespace": "team"}})
    assert forwards(directory, claim) == (Forward("default"), Forward("gpu"))
    assert "PersistentVolumeClaim:team/data" in directory.stored
    table = DomainTable(1)
    table.route(profile())
    table.route(node("n1", labels={"pool": "gpu"}))
    assert forwards(table, event("CSINode", "n1", {"metadata": {"name": "n1"}, "drivers": []})) == (Forward("gpu"),)


def test_the_table_keeps_the_last_routing_inbox_offset_applied_and_a_pod_read_from_its_topic_leaves_it():
    from streams.events import Causation

    table = DomainTable(1)
    assert table.routed_after == -1
    ev = quota("train", {"cpu": 1}, labels=TREE)
    table.route(dataclasses.replace(ev, causation=dataclasses.replace(ev.causation, inbox_offset=12)))
    table.route(dataclasses.replace(ev, causation=dataclasses.replace(ev.causation, inbox_offset=13)))
    assert table.routed_after == 13, "a copy seen already still moves the point"
    read = team_pod("a", "train")
    read = dataclasses.replace(read, causation=Causation("koord.pods", 1, 40, "koord.pods", 1, 40))
    assert forwards(table, read) == (Forward("gpu"),)
    assert table.routed_after == 13
    assert DomainTable.restore(1, table.take_changes()).routed_after == 13


def test_a_table_kept_before_the_point_was_names_none_until_its_next_routing_inbox_record():
    older = {key: value for key, value in _table_with_a_quota().take_changes().items() if not key.startswith("at/")}
    table = DomainTable.restore(1, older)
    assert table.routed_after is None, "a forward then names no point, and the replay leaves it out"
    ev = quota("web", {"cpu": 1})
    table.route(dataclasses.replace(ev, causation=dataclasses.replace(ev.causation, inbox_offset=30)))
    assert table.routed_after == 30
    assert DomainTable.restore(1, {}).routed_after == -1, "a new partition has applied nothing"


def _table_with_a_quota() -> DomainTable:
    table = DomainTable(1)
    table.route(quota("train", {"cpu": 1}, labels=TREE))
    return table
