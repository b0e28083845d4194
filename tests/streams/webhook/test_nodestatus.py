"""``streams.webhook.nodestatus`` against Koordinator's ``resource_amplification_test.go`` (case ids: Go test
name / case name), then through ``review.mutate`` as the API server calls it."""

from __future__ import annotations

import base64
import json

import pytest

from streams.webhook import nodestatus
from streams.webhook.review import ClusterView, mutate

RATIO = "node.koordinator.sh/resource-amplification-ratio"
RAW = "node.koordinator.sh/raw-allocatable"


def node(annotations: dict | None, allocatable: dict | None = None) -> dict:
    return {"metadata": {"name": "test-node", "annotations": annotations},
            "status": {"allocatable": allocatable if allocatable is not None else {"cpu": "1"}}}


def apply(obj: dict, old: dict | None = None) -> dict:
    annotations, allocatable = nodestatus.amplified(obj, old)
    shown = {k: v for k, v in {**(obj["metadata"]["annotations"] or {}), **annotations}.items() if v is not None}
    return {"annotations": shown, "allocatable": {**obj["status"]["allocatable"], **allocatable}}


@pytest.mark.parametrize("annotations, cpu, raw", [
    pytest.param({RATIO: '{"cpu": 1.5}'}, "1500m", '{"cpu":"1"}',
                 id="TestNodeResourceAmplificationPlugin_handleNormalization/normal"),
    pytest.param({RATIO: '{"cpu": 0.5}'}, "1", '{"cpu":"1"}',
                 id="TestNodeResourceAmplificationPlugin_handleNormalization/disable1"),
    pytest.param({RATIO: '{"cpu": 1}'}, "1", '{"cpu":"1"}',
                 id="TestNodeResourceAmplificationPlugin_handleNormalization/disable2"),
    pytest.param({RAW: "{}"}, "1", None,
                 id="TestNodeResourceAmplificationPlugin_handleNormalization/"
                    "disable_amplication_will_remove_original_allocatable"),
    pytest.param({RATIO: '{"eni": 2}'}, "1", '{"cpu":"1"}',
                 id="TestNodeResourceAmplificationPlugin_handleNormalization/unsupported_ratio_will_be_ignored"),
    pytest.param({RATIO: '{"cpu": 2}', RAW: '{"cpu":"1"}'}, "2", '{"cpu":"1"}',
                 id="TestNodeResourceAmplificationPlugin_handleNormalization/"
                    "get_original_resource_from_annotation_and_amplify"),
])
def test_handle_normalization(annotations, cpu, raw):
    shown = apply(node(annotations))
    assert shown["allocatable"]["cpu"] == cpu
    assert shown["annotations"].get(RAW) == raw


@pytest.mark.parametrize("old, new, changed", [
    pytest.param(None, {"cpu": "1"}, False, id="TestNodeResourceAmplificationPlugin_isSupportedResourceChanged/"
                                               "oldNode_is_nil"),
    pytest.param({"cpu": "4", "memory": "8Gi"}, {"cpu": "4", "memory": "8Gi"}, False,
                 id="TestNodeResourceAmplificationPlugin_isSupportedResourceChanged/resource_is_unchanged"),
    pytest.param({"cpu": "4"}, {"cpu": "4", "memory": "8Gi"}, True,
                 id="TestNodeResourceAmplificationPlugin_isSupportedResourceChanged/add_resource"),
    pytest.param({"cpu": "4", "memory": "8Gi"}, {"cpu": "4"}, True,
                 id="TestNodeResourceAmplificationPlugin_isSupportedResourceChanged/remove_resource"),
    pytest.param({"cpu": "4", "memory": "8Gi"}, {"cpu": "5", "memory": "8Gi"}, True,
                 id="TestNodeResourceAmplificationPlugin_isSupportedResourceChanged/remove_updated"),
    pytest.param({"cpu": "4", "ephemeral-storage": "80"}, {"cpu": "4", "ephemeral-storage": "100"}, False,
                 id="TestNodeResourceAmplificationPlugin_isSupportedResourceChanged/unsupported_resource_remove"),
    pytest.param({"cpu": "1"}, {"cpu": "1000m"}, False, id="equal quantities in another form"),
])
def test_is_supported_resource_changed(old, new, changed):
    assert nodestatus._changed(None if old is None else {"status": {"allocatable": old}}, new) is changed


def test_kubelet_changing_allocatable_resets_the_raw_allocatable():
    """kubelet's new cpu (reserved resources changed) becomes the raw allocatable; memory amplified too."""
    annotations = {RATIO: '{"cpu":1.20,"memory":1.50}', RAW: '{"cpu":"8","memory":"16Gi"}'}
    old = node(annotations, {"cpu": "9600m", "memory": "24Gi"})
    shown = apply(node(annotations, {"cpu": "6", "memory": "16Gi", "pods": "110"}), old)
    assert shown["allocatable"] == {"cpu": "7200m", "memory": "24Gi", "pods": "110"}
    assert json.loads(shown["annotations"][RAW]) == {"cpu": "6", "memory": "16Gi"}


def review(operation: str, obj: dict, old: dict | None = None) -> dict:
    return {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Node"}, "resource": {"resource": "nodes"},
            "subResource": "status", "operation": operation, "name": "test-node", "object": obj, "oldObject": old}


def patch_of(answer: dict) -> list:
    return json.loads(base64.b64decode(answer["response"]["patch"])) if "patch" in answer["response"] else []


def test_an_update_gets_a_json_patch_and_a_create_passes():
    """TestNodeResourceAmplificationPlugin_Admit: CreateOperation passes unchanged, UpdateOperation amplifies."""
    obj = node({RATIO: '{"cpu":1.20}'}, {"cpu": "8", "memory": "16Gi"})
    assert patch_of(mutate(review("CREATE", obj), ClusterView())) == []
    answer = mutate(review("UPDATE", obj, obj), ClusterView())
    assert answer["response"]["allowed"] is True
    assert patch_of(answer) == [
        {"op": "add", "path": "/metadata/annotations/node.koordinator.sh~1raw-allocatable",
         "value": '{"cpu":"8","memory":"16Gi"}'},
        {"op": "add", "path": "/status/allocatable/cpu", "value": "9600m"}]


def test_an_unreadable_ratio_is_allowed_unchanged_with_a_warning():
    answer = mutate(review("UPDATE", node({RATIO: "1.2"}), None), ClusterView())
    assert answer["response"]["allowed"] is True and patch_of(answer) == []
    assert answer["response"]["warnings"] == [
        f"koordstream did not amplify node test-node: {RATIO}: not a JSON object; allowed"]
