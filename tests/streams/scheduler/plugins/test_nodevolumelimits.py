"""NodeVolumeLimits under kube-scheduler v1.34's ``TestCSILimits`` (``csi_test.go``; Go test names as case ids):
the cases without in-tree migration, which koordstream does not port, and without VolumeAttachments, which are not
a koordstream kind. The Go fixtures: claim "csi-<driver>-<i>" bound to a CSI volume of that driver and handle,
"csi-4" unbound of class "csi-sc" (provisioner ebs.csi.aws.com), "csi-5" without a class, "csi-6" bound to a
volume that does not exist, of class "csi-sc"."""

import pytest

from streams.scheduler.plugins.nodevolumelimits import NAME, REASON
from tests.streams.scheduler.plugins.volumes import filter_outcome, pv, pvc, storage_class, volume_pod
from tests.streams.scheduler.support import converted, k8s_node

EBS, GCE = "ebs.csi.aws.com", "pd.csi.storage.gke.io"


def csinode(limits: dict):
    drivers = [{"name": d, "nodeID": "node-for-max-pd-test-1", **({"allocatable": {"count": n}} if n is not None else {})}
               for d, n in limits.items()]
    return converted({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node-1"},
                      "spec": {"drivers": drivers}})


def fixtures():
    out = [storage_class("csi-sc", mode="Immediate", provisioner=EBS)]
    for driver in (EBS, GCE):
        for i in range(4):
            name = f"csi-{driver}-{i}"
            out += [pv(name, driver=driver), pvc(name, bound_to=name)]
    out += [pvc("csi-4", "csi-sc"), pvc("csi-5"), pvc("csi-6", "csi-sc", bound_to="missing-csi-pv")]
    return out


PODS = {
    "runningPod": (f"csi-{EBS}-3",), "pendingVolumePod": ("csi-4",), "unboundPVCPod2": ("csi-4",),
    "missingPVPod": ("csi-6",), "noSCPVCPod": ("csi-5",), "gceTwoVolPod": (f"csi-{GCE}-1", f"csi-{GCE}-2"),
    "csiEBSOneVolPod": (f"csi-{EBS}-0",), "csiEBSTwoVolPod": (f"csi-{EBS}-1", f"csi-{EBS}-2"),
}


def outcome(new: str, existing: tuple[str, ...], drivers: dict, source: str = "csinode") -> str:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    events = []
    if source == "node":
        allocatable.update({f"attachable-volumes-csi-{d}": str(n) for d, n in drivers.items()})
    else:
        events.append(csinode({d: (n if source == "csinode" else None) for d, n in drivers.items()}))
    events = [k8s_node("node-1", allocatable), *events, *fixtures()]
    events += [volume_pod(f"e{i}-{name.lower()}", *PODS[name], node_name="node-1") for i, name in enumerate(existing)]
    pre, nodes = filter_outcome(NAME, events, volume_pod("new", *PODS[new]))
    return pre if pre != "success" else nodes["node-1"]


@pytest.mark.parametrize("new, existing, drivers, source, expected", [
    ("csiEBSOneVolPod", ("runningPod", "csiEBSTwoVolPod"), {EBS: 4}, "csinode", "fits"),
    ("csiEBSOneVolPod", ("runningPod", "csiEBSTwoVolPod"), {EBS: 2}, "csinode", REASON),
    ("csiEBSOneVolPod", ("runningPod", "csiEBSTwoVolPod"), {EBS: 2}, "csinode-with-no-limit", "fits"),
    ("csiEBSOneVolPod", ("pendingVolumePod", "csiEBSTwoVolPod"), {EBS: 2}, "csinode", REASON),
    ("csiEBSOneVolPod", ("pendingVolumePod", "unboundPVCPod2", "csiEBSTwoVolPod"), {EBS: 4}, "csinode", "fits"),
    ("csiEBSOneVolPod", ("missingPVPod", "csiEBSTwoVolPod"), {EBS: 2}, "csinode", REASON),
    ("csiEBSOneVolPod", ("runningPod", "noSCPVCPod"), {EBS: 2}, "csinode", "fits"),
    ("csiEBSOneVolPod", ("gceTwoVolPod", "csiEBSTwoVolPod"), {EBS: 2, GCE: 2}, "csinode", REASON),
    ("gceTwoVolPod", ("csiEBSTwoVolPod", "runningPod"), {EBS: 2, GCE: 2}, "csinode", "fits"),
    ("csiEBSOneVolPod", ("runningPod", "csiEBSTwoVolPod"), {EBS: 4}, "node", "fits"),
    ("csiEBSOneVolPod", ("runningPod", "csiEBSTwoVolPod"), {EBS: 2}, "node", REASON),
], ids=["fits when node volume limit >= new pods CSI volume", "doesn't when node volume limit <= pods CSI volume",
        "should when driver does not support volume limits",
        "count pending PVCs towards volume limit <= pods CSI volume",
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        "should count PVCs with invalid PV name but valid SC", "don't count pvcs with missing SC towards volume limit",
        "count pvcs with the same type towards volume limit",
        "don't count pvcs with different type towards volume limit",
        "fits when node volume limit >= new pods CSI volume (limit on the node)",
        "doesn't when node volume limit <= pods CSI volume (limit on the node)"])
def test_TestCSILimits(new, existing, drivers, source, expected):
    assert outcome(new, existing, drivers, source) == expected


def test_the_same_volume_on_the_node_is_not_counted_twice():
    assert outcome("runningPod", ("runningPod", "csiEBSTwoVolPod"), {EBS: 3}) == "fits"


def test_a_missing_claim_of_the_incoming_pod_fails_every_node():
    _, nodes = filter_outcome(NAME, [k8s_node("node-1", {"cpu": "4"}), csinode({EBS: 1})],
                              volume_pod("new", "absent"))
    assert nodes == {"node-1": 'looking up PVC default/absent: persistentvolumeclaim "absent" not found'}


def test_a_pod_without_claims_is_skipped():
    assert filter_outcome(NAME, [k8s_node("node-1", {"cpu": "4"})], volume_pod("new"))[0] == "skip"
