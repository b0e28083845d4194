"""Koordinator's ``TestClusterColocationProfileMutatingPod`` (``pkg/webhook/pod/mutating/
cluster_colocation_profile_test.go``), its case names as ids.

The Go cases share one pod (an init container, a container, an overhead, priority 5999) and one profile; each
row here names what it changes. The Go test injects ``rand.Intn``; here the draw is a function of the pod, so
the rows ``rand=70`` / ``rand=30`` use a draw key whose draw is 70 / 30 (checked first).
"""

from __future__ import annotations

import copy

import pytest

from streams.colocationprofile.mutation import draw, mutate_pod
from streams.colocationprofile.profile import parse_profile
from streams.koordinator.colocationprofile import ANNOTATION_SKIP_UPDATE_RESOURCE, API_VERSION, KIND
from streams.koordinator.labels import LABEL_POD_QOS, LABEL_POD_SUB_PRIORITY
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY

PREEMPTION = "fakePreemptionPolicy"
PRIORITY_CLASSES = {"koordinator-batch": (5999, PREEMPTION)}
NAMESPACE_LABELS = {"enable-koordinator-colocation": "true"}
SCHEDULER_NAME_LABEL = "scheduling.koordinator.sh/scheduler-name"
PATCH = {"metadata": {"labels": {"test-patch-label": "patch-a"}, "annotations": {"test-patch-annotation": "patch-b"}}}


def resources(cpu: str, memory: str, *, requests: bool = True, limits: bool = True) -> dict:
    found = {}
    if limits:
        found["limits"] = {"cpu": cpu, "memory": memory}
    if requests:
        found["requests"] = {"cpu": cpu, "memory": memory}
    return found


def batch(milli: int, memory: str, *, requests: bool = True, limits: bool = True) -> dict:
    found = {}
    if limits:
        found["limits"] = {BATCH_CPU: str(milli), BATCH_MEMORY: memory}
    if requests:
        found["requests"] = {BATCH_CPU: str(milli), BATCH_MEMORY: memory}
    return found


def pod(labels=None, annotations=None, *, init=True, container=None, overhead=True) -> dict:
    spec = {"containers": [{"name": "test-container-a", "resources": container or resources("1", "4Gi")}],
            "schedulerName": "nonExistSchedulerName", "priority": 5999}
    if init:
        spec["initContainers"] = [{"name": "test-init-container-a", "resources": resources("500m", "1Gi")}]
    if overhead:
        spec["overhead"] = {"cpu": "1", "memory": "2Gi"}
    metadata = {"namespace": "default", "name": "test-pod-1",
                "labels": {"koordinator-colocation-pod": "true", **(labels or {})}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def profile(metadata_annotations=None, **spec) -> dict:
    base = {"namespaceSelector": {"matchLabels": NAMESPACE_LABELS},
            "selector": {"matchLabels": {"koordinator-colocation-pod": "true"}},
            "labels": {"testLabelA": "valueA"}, "annotations": {"testAnnotationA": "valueA"},
            "schedulerName": "koordinator-scheduler", "qosClass": "BE", "priorityClassName": "koordinator-batch",
            "koordinatorPriority": 1111, "patch": PATCH}
    metadata = {"name": "test-profile", **({"annotations": metadata_annotations} if metadata_annotations else {})}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata,
            "spec": {k: v for k, v in {**base, **spec}.items() if v is not None}}


ONBOARDED_LABELS = {"koordinator-colocation-pod": "true", "testLabelA": "valueA", "test-patch-label": "patch-a",
                    LABEL_POD_QOS: "BE", LABEL_POD_SUB_PRIORITY: "1111"}
ONBOARDED_ANNOTATIONS = {"testAnnotationA": "valueA", "test-patch-annotation": "patch-b"}


def expected(before: dict, *, labels=None, annotations=None, onboarded=True, translated=True,
             scheduler="koordinator-scheduler") -> dict:
    """``before`` onboarded by the base profile (labels, annotations, priority class, scheduler) and/or
    with its resources on batch."""
    after = copy.deepcopy(before)
    if onboarded:
        after["metadata"]["labels"] = {**ONBOARDED_LABELS, **(labels or {})}
        after["metadata"]["annotations"] = {**ONBOARDED_ANNOTATIONS, **(annotations or {})}
        after["spec"].update(schedulerName=scheduler, priorityClassName="koordinator-batch",
                             preemptionPolicy=PREEMPTION)
    if translated:
        spec = after["spec"]
        if "initContainers" in spec:
            spec["initContainers"][0]["resources"] = batch(500, "1Gi")
        spec["containers"][0]["resources"] = batch(1000, "4Gi")
        if "overhead" in spec:
            spec["overhead"] = {BATCH_CPU: "1000", BATCH_MEMORY: "2Gi"}
    return after


CASES = {
    "mutating pod": dict(pod=pod(), profile=profile(), expected=expected(pod())),
    "set default request to the limit": dict(
        pod=pod(init=False, overhead=False, container=resources("1", "4Gi", requests=False)), profile=profile(),
        expected=expected(pod(init=False, overhead=False))),
    "keep limit unset": dict(
        pod=pod(init=False, overhead=False, container=resources("1", "4Gi", limits=False)), profile=profile(),
        expected={**(e := expected(pod(init=False, overhead=False))),
                  "spec": {**e["spec"], "containers": [{"name": "test-container-a",
                                                        "resources": batch(1000, "4Gi", limits=False)}]}}),
    "mutating pod, percent 100": dict(pod=pod(), profile=profile(probability=100), expected=expected(pod())),
    "mutating pod, percent 0": dict(pod=pod(), profile=profile(probability=0),
                                    expected=expected(pod(), onboarded=False)),
    "mutating pod, percent 50, rand=70": dict(pod=pod(), profile=profile(probability=50), draw=70,
                                              expected=expected(pod(), onboarded=False)),
    "mutating pod, percent 50, rand=30": dict(pod=pod(), profile=profile(probability=50), draw=30,
                                              expected=expected(pod())),
    "mutating pod, skip update resource by profile annotation": dict(
        pod=pod(), profile=profile(metadata_annotations={ANNOTATION_SKIP_UPDATE_RESOURCE: "true"}),
        expected=expected(pod(), translated=False)),
    "mutating pod, skip update resource by leveraging profile": dict(
        pod=pod(), skip_resources=True,
        profile=profile(annotations={"testAnnotationA": "valueA", ANNOTATION_SKIP_UPDATE_RESOURCE: "true"}),
        expected=expected(pod(), translated=False, annotations={ANNOTATION_SKIP_UPDATE_RESOURCE: "true"})),
    "mutate pod labels according to labels": dict(
        pod=pod({"label-key-to-load": "test-label-value"}),
        profile=profile(labelKeysMapping={"label-key-to-load": "label-key-to-store"}),
        expected=expected(pod(), labels={"label-key-to-load": "test-label-value",
                                         "label-key-to-store": "test-label-value"})),
    "mutate pod labels according to labels 1": dict(
        pod=pod({"label-key-to-load": "test-label-value"}),
        profile=profile(labels={"testLabelA": "valueA", SCHEDULER_NAME_LABEL: "koordinator-scheduler"},
                        labelKeysMapping={"label-key-to-load": "label-key-to-store",
                                          "label-key-to-load-not-exist": "label-key-to-store-not-exist"},
                        schedulerName=None),
        expected=expected(pod(), scheduler="nonExistSchedulerName", labels={
            "label-key-to-load": "test-label-value", "label-key-to-store": "test-label-value",
            "label-key-to-store-not-exist": "", SCHEDULER_NAME_LABEL: "koordinator-scheduler"})),
    "mutate pod annotations according to annotations": dict(
        pod=pod(annotations={"annotation-key-to-load": "test-annotation-value"}),
        profile=profile(annotationKeysMapping={"annotation-key-to-load": "annotation-key-to-store"}),
        expected=expected(pod(), annotations={"annotation-key-to-load": "test-annotation-value",
                                              "annotation-key-to-store": "test-annotation-value"})),
    "mutate pod labels with labels and suffixes": dict(
        pod=pod({"label-key-to-load": "test-label-value", "label-key-1": "label-value-1"}),
        profile=profile(labels={"testLabelA": "valueA", SCHEDULER_NAME_LABEL: "koordinator-scheduler"},
                        labelKeysMapping={"label-key-to-load": "label-key-to-store",
                                          "label-key-to-load-not-exist": "label-key-to-store-not-exist"},
                        labelSuffixes={"label-key-1": "suffix", "label-key-to-store": "suffix-0",
                                       "suffix-label-key-1": "suffix-1"},
                        schedulerName=None),
        expected=expected(pod(), scheduler="nonExistSchedulerName", labels={
            "label-key-1": "label-value-1suffix", "label-key-to-load": "test-label-value",
            "label-key-to-store": "test-label-valuesuffix-0", "label-key-to-store-not-exist": "",
            SCHEDULER_NAME_LABEL: "koordinator-scheduler"})),
}

DRAW_KEYS = {70: "default/test-pod-33", 30: "default/test-pod-16"}
"""Draw keys whose draw for ``test-profile`` is 70 and 30 (the Go test's injected ``rand.Intn``)."""


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_cluster_colocation_profile_mutating_pod(case):
    key = DRAW_KEYS.get(case.get("draw"), "default/test-pod-1")
    if "draw" in case:
        assert draw("test-profile", key) == case["draw"]
    mutated, _ = mutate_pod(case["pod"], [parse_profile(case["profile"])], namespace_labels=NAMESPACE_LABELS,
                            priority_classes=PRIORITY_CLASSES, draw_key=key,
                            skip_resources=case.get("skip_resources", False))
    assert mutated == case["expected"]


def test_a_profile_for_other_namespaces_leaves_the_pod_alone():
    mutated, applied = mutate_pod(pod(), [parse_profile(profile())], namespace_labels={"team": "web"},
                                  priority_classes=PRIORITY_CLASSES, draw_key="default/test-pod-1")
    assert (mutated, applied) == (pod(), [])


def test_profiles_apply_in_name_order_and_the_last_wins():
    second = profile(qosClass="LS", koordinatorPriority=None, labels=None, annotations=None, patch=None,
                     priorityClassName=None, schedulerName=None)
    second["metadata"]["name"] = "z-profile"
    mutated, applied = mutate_pod(pod(), [parse_profile(second), parse_profile(profile())],
                                  namespace_labels=NAMESPACE_LABELS, priority_classes=PRIORITY_CLASSES,
                                  draw_key="default/test-pod-1")
    assert applied == ["test-profile", "z-profile"]
    assert mutated["metadata"]["labels"][LABEL_POD_QOS] == "LS"


def test_a_missing_priority_class_refuses_the_pod_naming_the_field():
    with pytest.raises(ValueError, match=r'spec.priorityClassName: priorityclasses.scheduling.k8s.io "koordinator-batch"'):
        mutate_pod(pod(), [parse_profile(profile())], namespace_labels=NAMESPACE_LABELS, priority_classes={},
                   draw_key="default/test-pod-1")


def test_the_draw_spreads_pods_over_the_probability():
    """About half of 1000 pods are onboarded by a 50% profile; the same pod always draws the same."""
    onboarded = sum(not draw("test-profile", f"default/pod-{i}") > 50 for i in range(1000))
    assert 450 < onboarded < 570
    assert draw("test-profile", "default/pod-1") == draw("test-profile", "default/pod-1")
