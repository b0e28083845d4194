"""VolumeBinding's ``FindPodVolumes`` under kube-scheduler v1.34's ``binder_test.go`` scenarios
``TestFindPodVolumesWithoutProvisioning`` and ``TestFindPodVolumesWithProvisioning`` (the "no CSIDriver" round:
storage capacity is not ported), with their fixtures: node "node1" labelled nodeKey=node1, the classes waitClass
(WaitForFirstConsumer, no provisioner), immediateClass, waitClassWithProvisioner (allowed on node1) and
topoMismatchClass (allowed on node2). A scenario kube-scheduler's binder fails with an error fails here in the
plugin's PreFilter, with the message its PreFilter gives for the same claims."""

import numpy as np
import pytest

from streams.scheduler.framework import SKIP, CycleState
from streams.scheduler.plugins.volumebinding import (
    BINDINGS, NAME, REASON_BIND_CONFLICT, REASON_NODE_CONFLICT, REASON_PV_NOT_EXIST, REASON_UNBOUND_IMMEDIATE)
from tests.streams.scheduler.plugins.volumes import pv, pvc, storage_class
from tests.streams.scheduler.support import converted, k8s_node, plugin_of, pod_info, run

NS, KEY = "testns", "nodeKey"
WAIT, IMMEDIATE, WAIT_PROVISIONER, TOPO_MISMATCH = (
    "wait-class", "immediate-class", "wait-class-with-provisioner", "topo-mismatch-class")
CLASSES = (storage_class(WAIT, provisioner="kubernetes.io/no-provisioner"),
           storage_class(IMMEDIATE, mode="Immediate"),
           storage_class(WAIT_PROVISIONER, provisioner="test-provisioner", allowed={KEY: ["node1"]}),
           storage_class(TOPO_MISMATCH, provisioner="test-provisioner", allowed={KEY: ["node2"]}))


def claim(name, class_name, request="1G", bound_to=None, prebound=None, annotations=None):
    event = pvc(name, class_name, bound_to=bound_to, request=request, namespace=NS, annotations=annotations)
    if prebound:
        event.record["volumeName"] = prebound
    return event


def volume(name, node, capacity, class_name=WAIT, claim_name=None):
    return pv(name, class_name, "Bound" if claim_name else "Available", capacity, affinity={KEY: [node]},
              claim=f"{NS}/{claim_name}" if claim_name else None)


PVCS = {
    "boundPVC": claim("bound-pvc", WAIT, bound_to="pv-bound"),
    "preboundPVC": claim("prebound-pvc", WAIT, prebound="pv-node1a"),
    "unboundPVC": claim("unbound-pvc", WAIT),
    "unboundPVC2": claim("unbound-pvc2", WAIT, request="5G"),
    "immediateUnboundPVC": claim("immediate-unbound-pvc", IMMEDIATE),
    "immediateBoundPVC": claim("immediate-bound-pvc", IMMEDIATE, bound_to="pv-bound-immediate"),
    "provisionedPVC": claim("provisioned-pvc", WAIT_PROVISIONER, request="1Gi"),
    "selectedNodePVC": claim("provisioned-pvc", WAIT_PROVISIONER, request="1Gi",
                             annotations={"volume.kubernetes.io/selected-node": "node1"}),
    "noProvisionerPVC": claim("no-provisioner-pvc", WAIT),
    "topoMismatchPVC": claim("topo-mismatch-pvc", TOPO_MISMATCH),
}
PVS = {
    "pvNode1a": volume("pv-node1a", "node1", "5G"),
    "pvNode1b": volume("pv-node1b", "node1", "10G"),
    "pvNode2": volume("pv-node2", "node2", "1G"),
    "pvBound": volume("pv-bound", "node1", "1G", claim_name="bound-pvc"),
    "pvBoundImmediate": volume("pv-bound-immediate", "node1", "1G", IMMEDIATE, "immediate-bound-pvc"),
    "pvBoundImmediateNode2": volume("pv-bound-immediate", "node2", "1G", IMMEDIATE, "immediate-bound-pvc"),
}
UNBOUND_IMMEDIATE = ("fail", REASON_UNBOUND_IMMEDIATE)


def find(pvcs=(), pvs=(), volumes=None, cached=None):
    """("skip" | "fail" | "fits" | reasons, message or bindings) of a pod on node1, as ``FindPodVolumes`` sees it.
    The objects are fed in the order they were made: a domain takes a source offset once."""
    claims = [PVCS[name] for name in (pvcs if cached is None else cached)]
    if volumes is None:
        volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": PVCS[name].record["metadata"]["name"]}}
                   for i, name in enumerate(pvcs)]
    pod = converted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod", "namespace": NS,
                                                                     "uid": "pod-uid"},
                     "spec": {"containers": [{"name": "c"}], "volumes": volumes}})
    objects = sorted([*claims, *(PVS[name] for name in pvs)], key=lambda ev: ev.causation.source_offset)
    domain, _ = run(k8s_node("node1", {"cpu": "4", "memory": "8Gi", "pods": "110"}, labels={KEY: "node1"}),
                    *CLASSES, *objects)
    plugin, state, info = plugin_of(domain, NAME), CycleState(), pod_info(pod)
    status = plugin.pre_filter(state, info)
    if status == SKIP:
        return "skip", None
    if not status.ok:
        return "fail", status.message
    result = plugin.filter(state, info, np.ones(1, dtype=bool))
    if not result.passed[0]:
        return tuple(reason for reason, mask in result.reasons if mask[0]), None
    found = state.get(BINDINGS)
    return "fits", found.bindings(0) if found else ()


def bound(*pairs):
    return tuple(sorted((f"{NS}/{claim_name}", volume_name) for claim_name, volume_name in pairs))


@pytest.mark.parametrize("scenario, expected", [
    (dict(volumes=[]), ("skip", None)),
    (dict(volumes=[{"name": "v", "emptyDir": {}}]), ("skip", None)),
    (dict(pvcs=["boundPVC"], cached=[]), ("fail", 'persistentvolumeclaim "bound-pvc" not found')),
    (dict(pvcs=["boundPVC"], pvs=["pvBound"]), ("fits", ())),
    (dict(pvcs=["boundPVC"]), ((REASON_PV_NOT_EXIST,), None)),
    (dict(pvcs=["preboundPVC"], pvs=["pvNode1a"]), UNBOUND_IMMEDIATE),
    (dict(pvcs=["unboundPVC"], pvs=["pvNode2", "pvNode1a", "pvNode1b"]), ("fits", bound(("unbound-pvc", "pv-node1a")))),
    (dict(pvcs=["unboundPVC"], pvs=["pvNode2"]), ((REASON_BIND_CONFLICT,), None)),
    (dict(pvcs=["unboundPVC", "unboundPVC2"], pvs=["pvNode1a", "pvNode1b"]),
     ("fits", bound(("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")))),
    (dict(pvcs=["unboundPVC2", "unboundPVC"], pvs=["pvNode1a", "pvNode1b"]),
     ("fits", bound(("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")))),
    (dict(pvcs=["unboundPVC", "unboundPVC2"], pvs=["pvNode1a"]), ((REASON_BIND_CONFLICT,), None)),
    (dict(pvcs=["unboundPVC", "boundPVC"], pvs=["pvBound", "pvNode1a"]), ("fits", bound(("unbound-pvc", "pv-node1a")))),
    (dict(pvcs=["unboundPVC", "boundPVC"], pvs=["pvBound", "pvNode2"]), ((REASON_BIND_CONFLICT,), None)),
    (dict(pvcs=["unboundPVC", "preboundPVC"], pvs=["pvNode1a", "pvNode1b"]), UNBOUND_IMMEDIATE),
    (dict(pvcs=["immediateBoundPVC"], pvs=["pvBoundImmediate"]), ("fits", ())),
    (dict(pvcs=["immediateBoundPVC"], pvs=["pvBoundImmediateNode2"]), ((REASON_NODE_CONFLICT,), None)),
    (dict(pvcs=["immediateUnboundPVC"]), UNBOUND_IMMEDIATE),
    (dict(pvcs=["immediateUnboundPVC", "boundPVC"], pvs=["pvBound"]), UNBOUND_IMMEDIATE),
    (dict(pvcs=["immediateUnboundPVC", "unboundPVC"]), UNBOUND_IMMEDIATE),
], ids=["no-volumes", "no-pvcs", "pvc-not-found", "bound-pvc", "bound-pvc,pv-not-exists", "prebound-pvc",
        "unbound-pvc,pv-same-node", "unbound-pvc,pv-different-node", "two-unbound-pvcs",
        "two-unbound-pvcs,order-by-size", "two-unbound-pvcs,partial-match", "one-bound,one-unbound",
        "one-bound,one-unbound,no-match", "one-prebound,one-unbound", "immediate-bound-pvc",
        "immediate-bound-pvc-wrong-node", "immediate-unbound-pvc", "immediate-unbound-pvc,delayed-mode-bound",
        "immediate-unbound-pvc,delayed-mode-unbound"])
def test_TestFindPodVolumesWithoutProvisioning(scenario, expected):
    assert find(**scenario) == expected


@pytest.mark.parametrize("scenario, expected", [
    (dict(pvcs=["provisionedPVC"]), ("fits", bound(("provisioned-pvc", None)))),
    (dict(pvcs=["unboundPVC", "provisionedPVC"], pvs=["pvNode1a"]),
     ("fits", bound(("unbound-pvc", "pv-node1a"), ("provisioned-pvc", None)))),
    (dict(pvcs=["boundPVC", "provisionedPVC"], pvs=["pvBound"]), ("fits", bound(("provisioned-pvc", None)))),
    (dict(pvcs=["boundPVC", "selectedNodePVC"], pvs=["pvBound"]), ("fits", bound(("provisioned-pvc", None)))),
    (dict(pvcs=["immediateUnboundPVC"]), UNBOUND_IMMEDIATE),
    (dict(pvcs=["immediateBoundPVC", "provisionedPVC"], pvs=["pvBoundImmediate"]),
     ("fits", bound(("provisioned-pvc", None)))),
    (dict(pvcs=["noProvisionerPVC"]), ((REASON_BIND_CONFLICT,), None)),
    (dict(pvcs=["topoMismatchPVC"]), ((REASON_BIND_CONFLICT,), None)),
], ids=["one-provisioned", "two-unbound-pvcs,one-matched,one-provisioned", "one-bound,one-provisioned",
        "one-binding,one-selected-node", "immediate-unbound-pvc", "one-immediate-bound,one-provisioned",
        "invalid-provisioner", "volume-topology-unsatisfied"])
def test_TestFindPodVolumesWithProvisioning(scenario, expected):
    assert find(**scenario) == expected
