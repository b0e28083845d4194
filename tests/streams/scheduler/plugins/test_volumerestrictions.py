"""VolumeRestrictions under kube-scheduler v1.34's ``TestGCEDiskConflicts``, ``TestAWSDiskConflicts``,
``TestRBDDiskConflicts`` and ``TestISCSIDiskConflicts`` cases: the node holds the Go test's ``nodeInfo`` pods, the
incoming pod has its volume; and ``TestAccessModeConflicts`` (ReadWriteOncePod claims)."""

import numpy as np
import pytest

from streams.scheduler.framework import REMOVED_PODS, SKIP, Code, CycleState
from streams.scheduler.plugins.volumerestrictions import NAME, REASON, REASON_READ_WRITE_ONCE_POD
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


RWOP_1, RWOP_2, RWX = "claim-with-rwop-1", "claim-with-rwop-2", "claim-with-rwx"
"""``TestAccessModeConflicts``' claims and pods (the existing ones on node m1)."""
CLAIM_PODS = {"podWithOnePVC": (RWOP_1,), "podWithTwoPVCs": (RWOP_1, RWOP_2), "podWithOneConflict": (RWOP_1,),
              "podWithTwoConflicts": (RWOP_1, RWOP_2), "podWithReadWriteManyPVC": (RWX,), "nothing": ()}


def claim_outcome(incoming: str, existing: tuple[str, ...], claims: tuple[str, ...]) -> str:
    from tests.streams.scheduler.plugins.volumes import pvc, volume_pod

    objects = [pvc(name, modes=("ReadWriteMany",) if name == RWX else ("ReadWriteOncePod",)) for name in claims]
    pods = [volume_pod(name.lower(), *CLAIM_PODS[name], node_name="m1") for name in existing]
    domain, _ = run(NODE, *objects, *pods)
    plugin = plugin_of(domain, NAME)
    state, info = CycleState(), pod_info(volume_pod("incoming", *CLAIM_PODS[incoming]))
    status = plugin.pre_filter(state, info)
    if status == SKIP:
        return "skip"
    if not status.ok:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return status.message
    result = plugin.filter(state, info, np.ones(1, dtype=bool))
    assert result.code == Code.UNSCHEDULABLE
    return "fits" if result.passed[0] else next(reason for reason, mask in result.reasons if mask[0])


@pytest.mark.parametrize("incoming, existing, claims, expected", [
    pytest.param("nothing", (), (), "skip", id="nothing"),
    pytest.param("podWithOnePVC", (), (), f'persistentvolumeclaim "{RWOP_1}" not found', id="failed to get PVC"),
    pytest.param("podWithOnePVC", ("podWithReadWriteManyPVC",), (RWOP_1, RWX), "skip", id="no access mode conflict"),
    pytest.param("podWithOneConflict", ("podWithOnePVC", "podWithReadWriteManyPVC"), (RWOP_1, RWX),
                 REASON_READ_WRITE_ONCE_POD, id="access mode conflict, unschedulable"),
    pytest.param("podWithTwoConflicts", ("podWithTwoPVCs", "podWithReadWriteManyPVC"), (RWOP_1, RWOP_2, RWX),
                 REASON_READ_WRITE_ONCE_POD, id="two conflicts, unschedulable"),
])
def test_TestAccessModeConflicts(incoming, existing, claims, expected):
    assert claim_outcome(incoming, existing, claims) == expected


def test_a_read_write_once_pod_claim_is_free_again_once_its_pod_is_deleted():
    from tests.streams.scheduler.plugins.volumes import pv, pvc, volume_pod
    from tests.streams.scheduler.support import tick

    _, out = run(NODE, pv("pv-x", modes=("ReadWriteOncePod",)),
                 pvc(RWOP_1, bound_to="pv-x", modes=("ReadWriteOncePod",)), volume_pod("holder", RWOP_1, node_name="m1"),
                 volume_pod("second", RWOP_1), deleted("Pod", "default/holder", ts=2000), tick(20_000))
    second = [d for d in decisions(out) if d["pod"]["name"] == "second"]
    assert second[0]["result"] == "Unschedulable"
    assert REASON_READ_WRITE_ONCE_POD in second[0]["message"]
    assert (second[-1]["result"], second[-1]["nodeName"]) == ("Scheduled", "m1")
