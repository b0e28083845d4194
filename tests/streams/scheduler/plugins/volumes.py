"""Storage objects for the volume plugins' tests, through ``koord apply``'s conversion (kube-scheduler's
``makePV``, ``makePVC``, storage classes and pods with claim volumes)."""

from __future__ import annotations

import numpy as np

from streams.scheduler.framework import SKIP, CycleState
from tests.streams.scheduler.support import converted, k8s_node, plugin_of, pod_info, run

WAIT_SC, IMMEDIATE_SC, WAIT_HDD_SC, PROVISION_SC = "wait-sc", "immediate-sc", "wait-hdd-sc", "provision-sc"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME = "kubernetes.io/hostname"


def node(name: str, labels: dict | None = None):
    """kube-scheduler's ``makeNode``: its hostname label, plus ``labels``."""
    return k8s_node(name, {"cpu": "4", "memory": "8Gi", "pods": "110"}, labels={HOSTNAME: name, **(labels or {})})


def storage_class(name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "test-provisioner",
                  allowed: dict | None = None):
    body = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode}
    if allowed:
        body["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": v} for k, v in allowed.items()]}]
    return converted(body)


CLASSES = (storage_class(WAIT_SC, provisioner=NO_PROVISIONER), storage_class(IMMEDIATE_SC, mode="Immediate"),
           storage_class(WAIT_HDD_SC, provisioner=NO_PROVISIONER), storage_class(PROVISION_SC))
"""kube-scheduler's test classes: ``wait-sc`` and ``wait-hdd-sc`` have no provisioner (the Go tests leave it
empty, which ``kubernetes.io/no-provisioner`` means too); ``provision-sc`` has one."""


def pv(name: str, class_name: str | None = None, phase: str | None = None, capacity: str = "1Gi",
       affinity: dict | None = None, labels: dict | None = None, claim: str | None = None,
       modes: tuple[str, ...] = ("ReadWriteOnce",), driver: str | None = None):
    """``makePV``; ``affinity`` {key: values} is one required node selector term of In requirements."""
    spec: dict = {"capacity": {"storage": capacity}, "accessModes": list(modes)}
    if class_name:
        spec["storageClassName"] = class_name
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": v} for k, v in affinity.items()]}]}}
    if claim:
        namespace, _, claim_name = claim.rpartition("/")
        spec["claimRef"] = {"namespace": namespace or "default", "name": claim_name}
    if driver:
        spec["csi"] = {"driver": driver, "volumeHandle": name}
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec}
    if phase:
        body["status"] = {"phase": phase}
    return converted(body)


def pvc(name: str, class_name: str | None = None, bound_to: str | None = None, request: str | None = None,
        phase: str | None = None, annotations: dict | None = None, modes: tuple[str, ...] = ("ReadWriteOnce",),
        namespace: str = "default", owner_uid: str | None = None):
    """``makePVC``; ``bound_to`` is ``withBoundPV``: the volume named and the PV controller's bind-completed."""
    meta: dict = {"name": name, "namespace": namespace, "annotations": dict(annotations or {})}
    spec: dict = {"accessModes": list(modes)}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if request:
        spec["resources"] = {"requests": {"storage": request}}
    if bound_to:
        spec["volumeName"] = bound_to
        meta["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid,
                                    "controller": True}]
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase:
        body["status"] = {"phase": phase}
    return converted(body)


def volume_pod(name: str, *claims: str, ephemeral: tuple[str, ...] = (), node_name: str | None = None,
               namespace: str = "default", ts: int = 1000):
    """A pod with a ``persistentVolumeClaim`` volume per claim and an ``ephemeral`` volume per name."""
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    volumes += [{"name": v, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}} for v in ephemeral]
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}], "volumes": volumes}
    if node_name:
        spec["nodeName"] = node_name
    return converted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                                      "uid": f"uid-{name}"}, "spec": spec}, ts=ts)


def filter_outcome(plugin_name: str, events, incoming) -> tuple[str, dict[str, str]]:
    """(PreFilter outcome, node -> Filter outcome) of ``incoming`` on a domain fed ``events``: "skip", "success" or
    the failure message; a node's outcome is "fits" or its reasons joined by ", "."""
    domain, _ = run(*events)
    plugin = plugin_of(domain, plugin_name)
    state, info = CycleState(), pod_info(incoming)
    status = plugin.pre_filter(state, info)
    if status == SKIP:
        return "skip", {}
    if not status.ok:
        return status.message, {}
    count = len(domain.cluster.columns.names)
    result = plugin.filter(state, info, np.ones(count, dtype=bool))
    names = domain.cluster.columns.names
    return "success", {names[row]: "fits" if result.passed[row] else
                       ", ".join(reason for reason, mask in result.reasons if mask[row]) for row in range(count)}
