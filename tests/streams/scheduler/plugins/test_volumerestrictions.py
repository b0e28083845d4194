"""VolumeRestrictions under kube-scheduler v1.34's ``TestGCEDiskConflicts``, ``TestAWSDiskConflicts``,
``TestRBDDiskConflicts`` and ``TestISCSIDiskConflicts`` cases: the node holds the Go test's ``nodeInfo`` pods, the
incoming pod has its volume. ``TestAccessModeConflicts`` (ReadWriteOncePod claims) is not ported: koordstream has
no PersistentVolumeClaim kind."""

import numpy as np
import pytest

from streams.scheduler.framework import REMOVED_PODS, SKIP, Code, CycleState
from streams.scheduler.plugins.volumerestrictions import NAME, REASON
from tests.streams.scheduler.support import converted, decisions, deleted, k8s_node, plugin_of, pod_info, run

NODE = k8s_node("m1", {"cpu": "4", "memory": "8Gi", "pods": "110"})

GCE = {"name": "v", "gcePersistentDisk": {"pdName": "foo"}}
GCE_2 = {"name": "v", "gcePersistentDisk": {"pdName": "bar"}}
AWS = {"name": "v", "awsElasticBlockStore": {"volumeID": "foo"}}
AWS_2 = {"name": "v", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_2 = {"name": "v", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01",
                                "fsType": "ext4", "lun": 0}}
ISCSI_2 = {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01",
                                  "fsType": "ext4", "lun": 0}}
NO_RESTRICTION = {"name": "volume with no restriction", "emptyDir": {}}


def volume_pod(name: str, *volumes: dict, node_name: str | None = None, ts: int = 1000):
    spec = {"containers": [{"name": "c"}], "volumes": list(volumes)}
    if node_name:
        spec["nodeName"] = node_name
    return converted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                                      "uid": f"uid-{name}"}, "spec": spec}, ts=ts)


def outcome(incoming: tuple[dict, ...], existing: tuple[tuple[dict, ...], ...]) -> str:
    """"skip", "fits" or the reason of the incoming pod with volumes ``incoming`` on m1, which holds one pod per
    entry of ``existing``."""
    domain, _ = run(NODE, *(volume_pod(f"e{i}", *volumes, node_name="m1") for i, volumes in enumerate(existing)))
    plugin = plugin_of(domain, NAME)
    state, info = CycleState(), pod_info(volume_pod("p", *incoming))
    if plugin.pre_filter(state, info) == SKIP:
        return "skip"
    result = plugin.filter(state, info, np.ones(1, dtype=bool))
    assert result.code == Code.UNSCHEDULABLE
    return "fits" if result.passed[0] else next(reason for reason, mask in result.reasons if mask[0])


def table(same: dict, other: dict, extra: tuple = ()) -> list:
    """The four cases every disk test of the Go file has, and its extra ones."""
    return [
        pytest.param((), (), "skip", id="nothing"),
        pytest.param((), ((same,),), "skip", id="one state"),
        pytest.param((same,), ((same,),), REASON, id="same state"),
        pytest.param((other,), ((same,),), "fits", id="different state"),
        *extra,
    ]


@pytest.mark.parametrize("incoming, existing, expected", table(GCE, GCE_2, (
    pytest.param((NO_RESTRICTION,), (), "skip", id="pod with a volume that doesn't have restrictions"),)))
def test_TestGCEDiskConflicts(incoming, existing, expected):
    assert outcome(incoming, existing) == expected


@pytest.mark.parametrize("incoming, existing, expected", table(AWS, AWS_2))
def test_TestAWSDiskConflicts(incoming, existing, expected):
    assert outcome(incoming, existing) == expected


@pytest.mark.parametrize("incoming, existing, expected", table(RBD, RBD_2))
def test_TestRBDDiskConflicts(incoming, existing, expected):
    assert outcome(incoming, existing) == expected


@pytest.mark.parametrize("incoming, existing, expected", table(ISCSI, ISCSI_2))
def test_TestISCSIDiskConflicts(incoming, existing, expected):
    assert outcome(incoming, existing) == expected


def read_only(volume: dict) -> dict:
    (source,) = [key for key in volume if key != "name"]
    return {**volume, source: {**volume[source], "readOnly": True}}


@pytest.mark.parametrize("incoming, existing, expected", [
    pytest.param(read_only(GCE), read_only(GCE), "fits", id="gce both read-only"),
    pytest.param(read_only(GCE), GCE, REASON, id="gce one read-only"),
    pytest.param(read_only(AWS), read_only(AWS), REASON, id="aws read-only still conflicts"),
    pytest.param(read_only(ISCSI), read_only(ISCSI), "fits", id="iscsi both read-only"),
    pytest.param(read_only(RBD), read_only(RBD), "fits", id="rbd both read-only"),
    pytest.param({"name": "v", "rbd": {"monitors": ["b", "z"], "pool": "foo", "image": "bar"}}, RBD, REASON,
                 id="rbd one monitor shared"),
    pytest.param({"name": "v", "rbd": {"monitors": ["a"], "pool": "other", "image": "bar"}}, RBD, "fits",
                 id="rbd other pool"),
    pytest.param({"name": "v", "rbd": {"monitors": ["a"], "image": "bar"}},
                 {"name": "v", "rbd": {"monitors": ["a"], "pool": "rbd", "image": "bar"}}, REASON,
                 id="rbd unset pool is the default rbd"),
    pytest.param(AWS, GCE, "fits", id="different kinds of disk"),
])
def test_isVolumeConflict_rules(incoming, existing, expected):
    """The read-only and RBD rules of ``isVolumeConflict`` that the Go tables leave out."""
    assert outcome((incoming,), ((existing,),)) == expected


def test_conflicting_pod_goes_elsewhere_or_waits_with_kube_message():
    """End to end in the default profile: the disk's holder on m1 sends the pod to m2; with m1 alone it is
    Unschedulable with kube-scheduler's message, and placed once the holder is deleted."""
    m2 = k8s_node("m2", {"cpu": "4", "memory": "8Gi", "pods": "110"})
    _, out = run(NODE, m2, volume_pod("holder", GCE, node_name="m1"), volume_pod("p", GCE))
    assert placed(out) == ["m2"]
    domain, out = run(NODE, volume_pod("holder", GCE, node_name="m1"), volume_pod("p", GCE))
    (decision,) = [d for d in decisions(out) if d["pod"]["name"] == "p"]
    assert decision["nodeName"] is None and decision["message"] == (
        f"0/1 nodes are available: 1 {REASON}. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")
    _, out = run(deleted("Pod", "default/holder", ts=5000), domain=domain)
    assert placed(out) == ["m1"]


def placed(out) -> list[str | None]:
    return [d["nodeName"] for d in decisions(out) if d["pod"]["name"] == "p"]


def test_preemption_dry_run_leaves_removed_pods_out():
    domain, _ = run(NODE, volume_pod("holder", GCE, node_name="m1"))
    plugin, state, info = plugin_of(domain, NAME), CycleState(), pod_info(volume_pod("p", GCE))
    plugin.pre_filter(state, info)
    state[REMOVED_PODS] = frozenset({"default/holder"})
    assert plugin.filter(state, info, np.ones(1, dtype=bool)).passed.tolist() == [True]


def test_a_restored_domain_still_sees_the_held_disk():
    from streams.scheduler.domain import SchedulingDomain

    live, _ = run(NODE, volume_pod("holder", GCE, node_name="m1"))
    restored = SchedulingDomain.restore("default", live.entries())
    plugin, state, info = plugin_of(restored, NAME), CycleState(), pod_info(volume_pod("p", GCE))
    plugin.pre_filter(state, info)
    assert plugin.filter(state, info, np.ones(1, dtype=bool)).passed.tolist() == [False]
