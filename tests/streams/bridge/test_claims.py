"""The claim and volume writes of a decision's volumeBindings (kube-scheduler's VolumeBinding PreBind), planned
against the watched objects: each is written once, and a re-planned decision writes nothing."""

import json

import pytest

from streams.bridge.claims import BOUND_BY_CONTROLLER, SELECTED_NODE, ClaimPatch, plan_claims, reads


def claim(name="data", annotations=None, uid="uid-data", version="7"):
    return {"metadata": {"name": name, "namespace": "team", "uid": uid, "resourceVersion": version,
                         "annotations": annotations or {}}, "spec": {}}


def volume(name="pv-1", claim_ref=None, annotations=None, version="3"):
    spec = {"claimRef": claim_ref} if claim_ref else {}
    return {"metadata": {"name": name, "resourceVersion": version, "annotations": annotations or {}}, "spec": spec}


def seen(claims: dict, volumes: dict) -> dict:
    """The objects as the bridge read them, by API path."""
    return {**{f"/api/v1/namespaces/{k.split('/')[0]}/persistentvolumeclaims/{k.split('/')[1]}": v
               for k, v in claims.items()},
            **{f"/api/v1/persistentvolumes/{k}": v for k, v in volumes.items()}}


def decision(*bindings, result="Scheduled", node="node-a"):
    return {"result": result, "nodeName": node,
            "volumeBindings": [{"claim": c, "volume": v} for c, v in bindings]}


def merged(obj: dict, patch: ClaimPatch) -> dict:
    """RFC 7386 merge of ``patch`` into a copy of ``obj`` (what the API server stores)."""
    def merge(target, change):
        if not isinstance(change, dict):
            return change
        out = dict(target) if isinstance(target, dict) else {}
        for key, value in change.items():
            out[key] = merge(out.get(key), value)
        return out
    return merge(json.loads(json.dumps(obj)), patch.body)


def test_a_claim_to_provision_gets_the_selected_node_once():
    plan = plan_claims(decision(("team/data", None)), seen({"team/data": claim()}, {}))
    assert plan.patches == (ClaimPatch("persistentvolumeclaims", "team", "data", {"metadata": {
        "annotations": {SELECTED_NODE: "node-a"}, "resourceVersion": "7"}}),)
    assert plan.patches[0].path == "/api/v1/namespaces/team/persistentvolumeclaims/data"
    after = merged(claim(), plan.patches[0])
    assert plan_claims(decision(("team/data", None)), seen({"team/data": after}, {})).patches == ()


def test_a_chosen_volume_gets_the_claim_reference_and_bound_by_controller_once():
    plan = plan_claims(decision(("team/data", "pv-1")), seen({"team/data": claim()}, {"pv-1": volume()}))
    assert plan.patches == (ClaimPatch("persistentvolumes", None, "pv-1", {
        "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "team",
                              "name": "data", "uid": "uid-data", "resourceVersion": "7"}},
        "metadata": {"annotations": {BOUND_BY_CONTROLLER: "yes"}, "resourceVersion": "3"}}),)
    assert plan.patches[0].path == "/api/v1/persistentvolumes/pv-1"
    after = merged(volume(), plan.patches[0])
    assert plan_claims(decision(("team/data", "pv-1")), seen({"team/data": claim()}, {"pv-1": after})).patches == ()


def test_a_volume_pre_bound_by_the_user_gets_the_uid_without_bound_by_controller():
    pre_bound = volume(claim_ref={"namespace": "team", "name": "data"})
    [patch] = plan_claims(decision(("team/data", "pv-1")), seen({"team/data": claim()}, {"pv-1": pre_bound})).patches
    assert patch.body["spec"]["claimRef"]["uid"] == "uid-data"
    assert "annotations" not in patch.body["metadata"]


@pytest.mark.parametrize("record", [decision(("team/data", None), result="Unschedulable", node=None),
                                    {"result": "Scheduled", "nodeName": "node-a"}],
                         ids=["not scheduled", "no volume bindings"])
def test_decisions_without_bindings_ask_for_nothing(record):
    assert plan_claims(record, seen({"team/data": claim()}, {})) == plan_claims({}, seen({}, {}))


def test_missing_claims_and_volumes_are_reported_not_written():
    plan = plan_claims(decision(("team/gone", None), ("team/data", "pv-gone"), ("team/data", None)),
                       seen({"team/data": claim()}, {}))
    assert plan.missing == ("persistentvolumeclaim team/gone", "persistentvolume pv-gone")
    assert [p.name for p in plan.patches] == ["data"]


def test_reads_names_each_claim_and_volume_once():
    assert reads(decision(("team/data", "pv-1"), ("team/data", None), ("team/logs", None))) == (
        ("persistentvolumeclaims", "/api/v1/namespaces/team/persistentvolumeclaims/data"),
        ("persistentvolumes", "/api/v1/persistentvolumes/pv-1"),
        ("persistentvolumeclaims", "/api/v1/namespaces/team/persistentvolumeclaims/logs"))
    assert reads(decision(("team/data", None), result="Unschedulable", node=None)) == ()
