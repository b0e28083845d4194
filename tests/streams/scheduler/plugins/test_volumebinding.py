"""VolumeBinding under kube-scheduler v1.34's ``TestVolumeBinding`` (``volume_binding_test.go``; Go test names as
case ids; the score columns are not ported, as kube-scheduler scores only with the StorageCapacityScoring gate),
with ``FindPodVolumes``'s cases for provisioning (``binder_test.go``'s ``TestFindPodVolumesWithProvisioning``
shapes), and the pipeline's side: the decision's ``volumeBindings`` and the assumed bindings."""

import pytest

from streams.scheduler.plugins.volumebinding import (
    NAME, REASON_BIND_CONFLICT, REASON_NODE_CONFLICT, REASON_PV_NOT_EXIST, REASON_UNBOUND_IMMEDIATE)
from streams.schemas import codec
from tests.streams.scheduler.plugins.volumes import (
    CLASSES, HOSTNAME, IMMEDIATE_SC, PROVISION_SC, WAIT_HDD_SC, WAIT_SC, filter_outcome, node, pv, pvc,
    storage_class, volume_pod)
from tests.streams.scheduler.support import decisions, run

AVAILABLE = "Available"
NODE_A = node("node-a")


def local(name, class_name, capacity, host):
    return pv(name, class_name, AVAILABLE, capacity, affinity={HOSTNAME: [host]})


@pytest.mark.parametrize("nodes, objects, claims, pre, filtered", [
    pytest.param((NODE_A,), (), (), "skip", {}, id="pod has not pvcs"),
    pytest.param((NODE_A,), (pvc("pvc-a", WAIT_SC, bound_to="pv-a"), pv("pv-a", WAIT_SC, AVAILABLE)), ("pvc-a",),
                 "success", {"node-a": "fits"}, id="all bound"),
    pytest.param((NODE_A,), (), ("pvc-a",), 'persistentvolumeclaim "pvc-a" not found', {}, id="PVC does not exist"),
    pytest.param((NODE_A,), (pvc("pvc-a", WAIT_SC, bound_to="pv-a"),), ("pvc-a", "pvc-b"),
                 'persistentvolumeclaim "pvc-b" not found', {}, id="Part of PVCs do not exist"),
    pytest.param((NODE_A,), (pvc("pvc-a", IMMEDIATE_SC),), ("pvc-a",), REASON_UNBOUND_IMMEDIATE, {},
                 id="immediate claims not bound"),
    pytest.param((NODE_A,), (pvc("pvc-a", WAIT_SC),), ("pvc-a",), "success", {"node-a": REASON_BIND_CONFLICT},
                 id="unbound claims no matches"),
    pytest.param((node("node-a", {"foo": "barbar"}),),
                 (pvc("pvc-a", WAIT_SC, bound_to="pv-a"), pvc("pvc-b", WAIT_SC),
                  pv("pv-a", WAIT_SC, AVAILABLE, affinity={"foo": ["bar"]})), ("pvc-a", "pvc-b"),
                 "success", {"node-a": f"{REASON_NODE_CONFLICT}, {REASON_BIND_CONFLICT}"},
                 id="bound and unbound unsatisfied"),
    pytest.param((NODE_A,), (), ("pvc-a",), 'persistentvolumeclaim "pvc-a" not found', {}, id="pvc not found"),
    pytest.param((NODE_A,), (pvc("pvc-a", WAIT_SC, bound_to="pv-a"),), ("pvc-a",), "success",
                 {"node-a": REASON_PV_NOT_EXIST}, id="pv not found"),
    pytest.param((NODE_A,), (pvc("pvc-a", WAIT_SC, bound_to="pv-a", phase="Lost"),), ("pvc-a",),
                 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"', {},
                 id="pv not found claim lost"),
    pytest.param((NODE_A, node("node-b"), node("node-c")),
                 (pvc("pvc-a", WAIT_SC, request="50Gi"), local("pv-a-0", WAIT_SC, "200Gi", "node-a"),
                  local("pv-a-1", WAIT_SC, "200Gi", "node-a"), local("pv-b-0", WAIT_SC, "100Gi", "node-b"),
                  local("pv-b-1", WAIT_SC, "100Gi", "node-b")), ("pvc-a",),
                 "success", {"node-a": "fits", "node-b": "fits", "node-c": REASON_BIND_CONFLICT},
                 id="local volumes with close capacity are preferred"),
    pytest.param((NODE_A, node("node-b"), node("node-c")),
                 (pvc("pvc-0", WAIT_SC, request="50Gi"), pvc("pvc-1", WAIT_HDD_SC, request="100Gi"),
                  *(local(f"pv-a-{i}", WAIT_SC if i < 2 else WAIT_HDD_SC, "200Gi", "node-a") for i in range(4)),
                  *(local(f"pv-b-{i}", WAIT_SC if i < 2 else WAIT_HDD_SC, "100Gi", "node-b") for i in range(4))),
                 ("pvc-0", "pvc-1"),
                 "success", {"node-a": "fits", "node-b": "fits", "node-c": REASON_BIND_CONFLICT},
                 id="local volumes with close capacity are preferred (multiple pvcs)"),
])
def test_TestVolumeBinding(nodes, objects, claims, pre, filtered):
    pod = volume_pod("pod-a", *claims)
    assert filter_outcome(NAME, (*nodes, *CLASSES, *objects), pod) == (pre, filtered)


ZONES = {"topology.kubernetes.io/zone": ["zone-a"]}


@pytest.mark.parametrize("objects, claims, filtered", [
    pytest.param((pvc("pvc-a", PROVISION_SC, request="1Gi"),), ("pvc-a",), {"node-a": "fits", "node-b": "fits"},
                 id="unbound claim provisioned on any node"),
    pytest.param((storage_class("zonal", allowed=ZONES), pvc("pvc-a", "zonal")), ("pvc-a",),
                 {"node-a": "fits", "node-b": REASON_BIND_CONFLICT}, id="allowedTopologies admit the node"),
    pytest.param((pvc("pvc-a", WAIT_SC),), ("pvc-a",),
                 {"node-a": REASON_BIND_CONFLICT, "node-b": REASON_BIND_CONFLICT},
                 id="no-provisioner class and no volume"),
    pytest.param((pvc("pvc-a", PROVISION_SC, annotations={"volume.kubernetes.io/selected-node": "node-b"}),), ("pvc-a",),
                 {"node-a": REASON_BIND_CONFLICT, "node-b": "fits"}, id="selected node fast path"),
    pytest.param((pvc("pvc-a", WAIT_SC, request="5Gi"), local("pv-small", WAIT_SC, "1Gi", "node-a"),
                  local("pv-big", WAIT_SC, "10Gi", "node-b")), ("pvc-a",),
                 {"node-a": REASON_BIND_CONFLICT, "node-b": "fits"}, id="volume too small"),
    pytest.param((pvc("pvc-a", WAIT_SC), pv("pv-a", WAIT_SC, "Pending")), ("pvc-a",),
                 {"node-a": REASON_BIND_CONFLICT, "node-b": REASON_BIND_CONFLICT}, id="volume not Available"),
    pytest.param((pvc("pvc-a", WAIT_SC, modes=("ReadWriteMany",)), pv("pv-a", WAIT_SC, AVAILABLE)),
                 ("pvc-a",), {"node-a": REASON_BIND_CONFLICT, "node-b": REASON_BIND_CONFLICT},
                 id="access modes not offered"),
    pytest.param((pvc("pvc-a", WAIT_SC), pvc("pvc-b", WAIT_SC),
                  local("pv-a", WAIT_SC, "1Gi", "node-a"), local("pv-b", WAIT_SC, "1Gi", "node-b"),
                  local("pv-c", WAIT_SC, "1Gi", "node-b")), ("pvc-a", "pvc-b"),
                 {"node-a": REASON_BIND_CONFLICT, "node-b": "fits"}, id="two claims need two volumes on the node"),
    pytest.param((pvc("pvc-a", WAIT_SC), local("pv-a", WAIT_SC, "1Gi", "node-a"),
                  local("pv-pre", WAIT_SC, "9Gi", "node-b") and
                  pv("pv-pre", WAIT_SC, "Bound", "9Gi", affinity={HOSTNAME: ["node-b"]}, claim="pvc-a")),
                 ("pvc-a",), {"node-a": REASON_BIND_CONFLICT, "node-b": "fits"},
                 id="a volume pre-bound to the claim wins"),
    pytest.param((pvc("pvc-a", WAIT_SC), pv("pv-a", WAIT_SC, AVAILABLE, claim="default/other")),
                 ("pvc-a",), {"node-a": REASON_BIND_CONFLICT, "node-b": REASON_BIND_CONFLICT},
                 id="a volume claimed by another claim is not taken"),
])
def test_FindPodVolumes(objects, claims, filtered):
    pod = volume_pod("pod-a", *claims)
    events = (node("node-a", {"topology.kubernetes.io/zone": "zone-a"}),
              node("node-b", {"topology.kubernetes.io/zone": "zone-b"}), *CLASSES, *objects)
    assert filter_outcome(NAME, events, pod) == ("success", filtered)


@pytest.mark.parametrize("ephemeral_owner, expected", [
    (None, 'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"'),
    ("someone-else", "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)"),
    ("uid-pod-a", "success"),
], ids=["ephemeral claim not created yet", "ephemeral claim of another pod", "ephemeral claim of the pod"])
def test_generic_ephemeral_volumes(ephemeral_owner, expected):
    claim = () if ephemeral_owner is None else (pvc("pod-a-scratch", WAIT_SC, owner_uid=ephemeral_owner),)
    pre, _ = filter_outcome(NAME, (NODE_A, *CLASSES, *claim), volume_pod("pod-a", ephemeral=("scratch",)))
    assert pre == expected


def test_wait_for_first_consumer_decision_carries_the_bindings_and_the_volume_is_assumed_taken():
    """The first pod takes the only local volume (static binding) and the second pod's claim, which needs one too,
    cannot take it: it is assumed bound until the PV comes back with its claimRef."""
    domain, out = run(NODE_A, node("node-b"), *CLASSES,
                      local("pv-a", WAIT_SC, "1Gi", "node-b"),
                      pvc("data-0", WAIT_SC), pvc("data-1", WAIT_SC), pvc("scratch", PROVISION_SC),
                      volume_pod("web-0", "data-0", "scratch"), volume_pod("web-1", "data-1"))
    first, second = decisions(out)
    assert (first["result"], first["nodeName"], first["volumeBindings"]) == (
        "Scheduled", "node-b", [{"claim": "default/data-0", "volume": "pv-a"}, {"claim": "default/scratch",
                                                                              "volume": None}])
    assert "provision" in first["message"]
    assert second["result"] == "Unschedulable"
    assert second["message"].startswith(f"0/2 nodes are available: 2 {REASON_BIND_CONFLICT}.")
    codec.encode("SchedulingDecision", first)


def test_assumed_bindings_survive_a_restore():
    from streams.scheduler.domain import SchedulingDomain

    domain, _ = run(NODE_A, node("node-b"), *CLASSES, local("pv-a", WAIT_SC, "1Gi", "node-b"),
                    pvc("data-0", WAIT_SC), pvc("data-1", WAIT_SC), volume_pod("web-0", "data-0"))
    restored = SchedulingDomain.restore("default", domain.entries())
    assert restored.cluster.volume_bindings == {"default/web-0": (("default/data-0", "pv-a"),)}
    _, out = run(volume_pod("web-1", "data-1"), domain=restored)
    assert decisions(out)[0]["result"] == "Unschedulable"


def test_a_pod_binding_more_claims_than_the_state_keeps_is_refused_with_the_limit():
    from streams.scheduler.plugins.volumebinding import MAX_DELAYED_CLAIMS

    names = [f"c{i}" for i in range(MAX_DELAYED_CLAIMS + 1)]
    pre, _ = filter_outcome(NAME, (NODE_A, *CLASSES, *(pvc(n, PROVISION_SC) for n in names)), volume_pod("p", *names))
    assert pre.startswith(f"pod has {MAX_DELAYED_CLAIMS + 1} WaitForFirstConsumer PersistentVolumeClaims to bind, "
                          f"over the {MAX_DELAYED_CLAIMS}")


def test_a_pod_waiting_for_its_claim_is_scheduled_once_the_claim_arrives():
    """VolumeBinding registers PersistentVolumeClaim Add with kube-scheduler's hint: the claim the pod names
    requeues it; another claim does not."""
    from tests.streams.scheduler.support import tick

    _, out = run(NODE_A, *CLASSES, local("pv-a", WAIT_SC, "1Gi", "node-a"), volume_pod("web", "data"),
                 pvc("other", WAIT_SC), tick(5_000), pvc("data", WAIT_SC), tick(20_000))
    web = [d for d in decisions(out) if d["pod"]["name"] == "web"]
    assert web[0]["message"] == ('0/1 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/1 '
                                 'nodes are available: 1 Preemption is not helpful for scheduling.')
    assert (web[-1]["result"], web[-1]["nodeName"], web[-1]["volumeBindings"]) == (
        "Scheduled", "node-a", [{"claim": "default/data", "volume": "pv-a"}])
