"""VolumeZone under kube-scheduler v1.34's ``TestSingleZone``, ``TestMultiZone`` and ``TestWithBinding`` (Go test
names as case ids). Object names are made DNS names (``Vol_1`` -> ``vol-1``, ``PVC_1`` -> ``pvc-1``), as
``koord apply`` checks them. Not-found messages are the informer listers' (``storageclass.storage.k8s.io "class-0"
not found``), where the Go test's fake lister spells the plural. A StorageClass always has a binding mode here
(Immediate, the API server's default), so Go's "VolumeBindingMode not set" case becomes the Immediate case's
"PersistentVolume had no name"."""

import pytest

from streams.scheduler.plugins.volumezone import NAME, REASON
from tests.streams.scheduler.plugins.volumes import filter_outcome, node, pv, pvc, storage_class, volume_pod

BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"

SINGLE = (
    pv("vol-1", labels={BETA_ZONE: "us-west1-a"}),
    pv("vol-2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("vol-3", labels={BETA_REGION: "us-west1"}),
    pv("vol-stable-1", labels={ZONE: "us-west1-a"}),
    pv("vol-stable-2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    pv("vol-stable-3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    *(pvc(f"pvc-{n}", bound_to=f"vol-{n}") for n in ("1", "2", "3", "stable-1", "stable-2", "stable-3")),
    pvc("pvc-4", bound_to="vol-not-exist"),
)
MULTI = (
    pv("vol-1", labels={BETA_ZONE: "us-west1-a"}),
    pv("vol-2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("vol-3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("vol-stable-1", labels={ZONE: "us-west1-a"}),
    pv("vol-stable-2", labels={ZONE: "us-west1-c__us-west1-a"}),
    *(pvc(f"pvc-{n}", bound_to=f"vol-{n}") for n in ("1", "2", "3", "stable-1", "stable-2")),
    pvc("pvc-4", bound_to="vol-not-exist"),
)
BINDING = (
    storage_class("class-immediate", mode="Immediate"), storage_class("class-wait"),
    pv("vol-1", labels={BETA_ZONE: "us-west1-a"}),
    pvc("pvc-1", bound_to="vol-1"), pvc("pvc-nosc", "class-0"), pvc("pvc-emptysc"),
    pvc("pvc-waitsc", "class-wait"), pvc("pvc-immediatesc", "class-immediate"),
)
USELESS = {"uselessLabel": "none"}


def case(name, claim, labels, pre="success", fits=True):
    return pytest.param(claim, labels, pre, fits, id=name)


@pytest.mark.parametrize("claim, labels, pre, fits", [
    case("pod without volume", None, {BETA_ZONE: "us-west1-a"}, pre="skip"),
    case("node without labels", "pvc-1", {}),
    case("beta zone label matched", "pvc-1", {BETA_ZONE: "us-west1-a", **USELESS}),
    case("beta region label matched", "pvc-2", {BETA_REGION: "us-west1", **USELESS}),
    case("beta region label doesn't match", "pvc-2", {BETA_REGION: "no_us-west1", **USELESS}, fits=False),
    case("beta zone label doesn't match", "pvc-1", {BETA_ZONE: "no_us-west1-a", **USELESS}, fits=False),
    case("zone label matched", "pvc-stable-1", {ZONE: "us-west1-a", **USELESS}),
    case("region label matched", "pvc-stable-2", {REGION: "us-west1", **USELESS}),
    case("region label doesn't match", "pvc-stable-2", {REGION: "no_us-west1", **USELESS}, fits=False),
    case("zone label doesn't match", "pvc-stable-1", {ZONE: "no_us-west1-a", **USELESS}, fits=False),
    case("pv with zone and region, node with only zone", "pvc-stable-3", {ZONE: "us-west1-a"}, fits=False),
    case("pv with zone,node with beta zone", "pvc-stable-1", {BETA_ZONE: "us-west1-a"}, fits=False),
    case("pv with beta label,node with ga label, matched", "pvc-1", {ZONE: "us-west1-a"}),
    case("pv with beta label,node with ga label, don't match", "pvc-1", {ZONE: "us-west1-b"}, fits=False),
])
def test_TestSingleZone(claim, labels, pre, fits):
    assert outcome(SINGLE, claim, labels) == expected(pre, fits)


@pytest.mark.parametrize("claim, labels, pre, fits", [
    case("node without labels", "pvc-3", {}),
    case("beta zone label matched", "pvc-3", {BETA_ZONE: "us-west1-a", **USELESS}),
    case("beta zone label doesn't match", "pvc-1", {BETA_ZONE: "us-west1-b", **USELESS}, fits=False),
    case("zone label matched", "pvc-stable-2", {ZONE: "us-west1-a", **USELESS}),
    case("zone label doesn't match", "pvc-stable-1", {ZONE: "us-west1-b", **USELESS}, fits=False),
])
def test_TestMultiZone(claim, labels, pre, fits):
    assert outcome(MULTI, claim, labels) == expected(pre, fits)


@pytest.mark.parametrize("claim, pre", [
    pytest.param("pvc-1", "success", id="label zone failure domain matched"),
    pytest.param("pvc-emptysc", "PersistentVolumeClaim had no pv name and storageClass name",
                 id="unbound volume empty storage class"),
    pytest.param("pvc-nosc", 'storageclass.storage.k8s.io "class-0" not found', id="unbound volume no storage class"),
    pytest.param("pvc-immediatesc", "PersistentVolume had no name", id="unbound volume immediate binding mode"),
    pytest.param("pvc-waitsc", "skip", id="unbound volume wait binding mode"),
])
def test_TestWithBinding(claim, pre):
    assert outcome(BINDING, claim, {BETA_ZONE: "us-west1-a", **USELESS}) == expected(pre, True)


@pytest.mark.parametrize("claim, message", [
    ("pvc-4", 'persistentvolume "vol-not-exist" not found'),
    ("pvc-missing", 'persistentvolumeclaim "pvc-missing" not found'),
])
def test_missing_objects_are_unschedulable_and_unresolvable_with_the_api_servers_message(claim, message):
    assert outcome(SINGLE, claim, {ZONE: "us-west1-a"}) == (message, {})


def outcome(objects, claim, labels):
    pod = volume_pod("pod-1", *([claim] if claim else []))
    return filter_outcome(NAME, (node("host1", labels), *objects), pod)


def expected(pre, fits):
    if pre != "success":
        return pre, {}
    return "success", {"host1": "fits" if fits else REASON}
