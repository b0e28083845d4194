"""PersistentVolume, PersistentVolumeClaim, StorageClass and CSINode: the typed fields the volume plugins read,
checked as kube-apiserver checks them."""

import pytest

from tests.streams.objects.support import problems_of, record_of

PV = """apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-a}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  claimRef: {namespace: team, name: data}
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a]}]}]
status: {phase: Bound}
"""


def test_persistent_volume_typed_fields():
    record = record_of(PV).record
    assert (record["storageClassName"], record["accessModes"], record["storage"], record["claimRef"],
            record["csiDriver"], record["phase"], record["volumeMode"]) == (
        "local", ["ReadWriteOnce"], 10 * 2**30, "team/data", "ebs.csi.aws.com", "Bound", "Filesystem")
    assert '"nodeAffinity"' in record["manifest"]


@pytest.mark.parametrize("modes, problem", [
    ("[ReadWriteOncePod, ReadWriteOnce]", "spec.accessModes: may not use ReadWriteOncePod with other access modes"),
    ("[WriteSometimes]", 'spec.accessModes[0]: unsupported value "WriteSometimes" (supported: ReadWriteOnce, '
                         'ReadOnlyMany, ReadWriteMany, ReadWriteOncePod)'),
], ids=["rwop-with-another-mode", "unknown-mode"])
def test_claim_access_modes_are_checked(modes, problem):
    claim = ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\n"
             f"spec: {{accessModes: {modes}, resources: {{requests: {{storage: 1Gi}}}}}}\n")
    assert problems_of(claim) == [problem]


@pytest.mark.parametrize("class_line, expected", [("", None), ("storageClassName: ''", ""),
                                                  ("storageClassName: fast", "fast")],
                         ids=["unset-is-the-default-class", "empty-is-no-class", "named"])
def test_claim_storage_class_keeps_unset_apart_from_empty(class_line, expected):
    claim = ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\n"
             f"spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}, {class_line}}}\n")
    record = record_of(claim).record
    assert (record["storageClassName"], record["request"], record["volumeName"], record["phase"]) == (
        expected, 2**30, "", "Pending")


def test_storage_class_defaults_to_immediate_and_needs_a_provisioner():
    sc = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: csi.example\n"
    assert record_of(sc).record["volumeBindingMode"] == "Immediate"
    assert problems_of("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\n"
                       "volumeBindingMode: Later\n") == [
        "provisioner: required",
        'volumeBindingMode: unsupported value "Later" (supported: Immediate, WaitForFirstConsumer)']


def test_csinode_drivers_with_and_without_a_count():
    csinode = """apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec:
  drivers:
  - {name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 25}, topologyKeys: [topology.ebs.csi.aws.com/zone]}
  - {name: nfs.csi.k8s.io, nodeID: n1}
"""
    assert record_of(csinode).record["drivers"] == [
        {"name": "ebs.csi.aws.com", "nodeID": "i-1", "count": 25, "topologyKeys": ["topology.ebs.csi.aws.com/zone"]},
        {"name": "nfs.csi.k8s.io", "nodeID": "n1", "count": None, "topologyKeys": []}]


def test_csinode_driver_without_a_node_id_is_refused():
    assert problems_of("apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\n"
                       "spec: {drivers: [{name: d}]}\n") == ["spec.drivers[0].nodeID: required"]


def test_the_router_accepts_every_storage_kind_on_its_topic():
    """The router validates source records (``streams.validation``): what ``koord apply`` writes of each storage
    kind passes it."""
    from streams.objects import load_and_validate
    from streams.validation import problems

    text = "---\n".join([PV, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\n"
                             "spec: {resources: {requests: {storage: 1Gi}}}\n",
                         "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: p\n",
                         "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\n"
                         "spec: {drivers: [{name: d, nodeID: n1, allocatable: {count: 3}}]}\n"])
    records = load_and_validate("-", stdin_text=text)
    assert [(r.kind, problems(r.topic, r.key, r.kind, r.record)) for r in records] == [
        ("PersistentVolume", []), ("PersistentVolumeClaim", []), ("StorageClass", []), ("CSINode", [])]
