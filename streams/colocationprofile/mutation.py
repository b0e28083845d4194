"""A pod onboarded by ClusterColocationProfiles, as Koordinator's pod mutating webhook does it on CREATE
(``pkg/webhook/pod/mutating/cluster_colocation_profile.go``).

1. **Match.** A profile matches when its ``namespaceSelector`` (absent or empty: all) matches the labels of
   the pod's namespace and its ``selector`` (absent or empty: all) the pod's labels. As in the source, a
   namespace that cannot be read (``namespace_labels`` None) does not exclude the profile.
2. **Apply**, matched profiles in name order. A profile with probability ``p`` is skipped when ``p == 0``
   or ``p != 100 and draw > p``, ``draw`` in [0, 100). Koordinator draws ``rand.Intn(100)``; here the draw
   is ``sha256(profile name + "/" + draw_key) mod 100``, so the outcome is a function of the pod and
   replays the same (``draw_key`` is ``namespace/name``; a webhook pod created with ``generateName`` has no
   name yet and uses the admission request's uid). An applied profile sets, in the source's order: labels,
   annotations, labelKeysMapping (``labels[new] = labels[old]``, "" when absent), annotationKeysMapping,
   labelSuffixes (appended to labels present), schedulerName, the QoS label, priorityClassName with the
   PriorityClass's ``value`` as ``spec.priority`` and its ``preemptionPolicy``, the koordinator priority
   label, then ``patch``.
3. **Translate resources** unless a matched profile carries the skip-update-resources annotation (or the
   ``ColocationProfileSkipMutatingResources`` gate, ``skip_resources``): with the pod's priority class
   with default batch or mid, cpu and memory of every container's and init container's requests and
   limits, and of ``spec.overhead``, are renamed to ``kubernetes.io/batch-cpu``/``batch-memory`` (mid:
   ``mid-*``); cpu becomes milli-cores (``"500m"`` -> ``"500"``, ``Quantity.MilliValue()`` rounds up);
   memory keeps its quantity. A container that then limits an extended resource it does not request
   requests its limit. Prod, none and free keep cpu/memory.

``patch`` is applied as a strategic merge patch on the subset pods need: objects merge key by key, ``null``
deletes a key, lists of objects that all carry ``name`` (containers, volumes, env) merge by name, and other
lists are replaced. ``$patch`` directives are refused (``spec.patch``).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping

from streams.colocationprofile.profile import ColocationProfile, ProfileError
from streams.koordinator.classes import (
    PRIORITY_NONE,
    PRIORITY_PROD,
    kube_qos_class,
    priority_class_raw,
    priority_class_with_default,
    qos_class_with_default,
)
from streams.koordinator.labels import LABEL_POD_PRIORITY_CLASS, LABEL_POD_QOS, LABEL_POD_SUB_PRIORITY
from streams.koordinator.resources import translate_resource
from streams.objects.quantity import QuantityError, to_canonical

COMPUTE = ("cpu", "memory")


def draw(profile_name: str, draw_key: str) -> int:
    """The pod's deterministic stand-in for ``rand.Intn(100)``: ``sha256(name/key)`` mod 100."""
    digest = hashlib.sha256(f"{profile_name}/{draw_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def skipped(profile: ColocationProfile, draw_key: str) -> bool:
    """``shouldSkipProfile``."""
    percent = profile.probability
    return percent == 0 or (percent != 100 and draw(profile.name, draw_key) > percent)


def matching(profiles: Iterable[ColocationProfile], pod: Mapping,
             namespace_labels: Mapping[str, str] | None) -> list[ColocationProfile]:
    """The profiles that select ``pod``, in name order."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    found = []
    for profile in profiles:
        if profile.namespace_selector is not None and not profile.namespace_selector.empty \
                and namespace_labels is not None and not profile.namespace_selector.matches(namespace_labels):
            continue
        if profile.selector is not None and not profile.selector.empty and not profile.selector.matches(labels):
            continue
        found.append(profile)
    return sorted(found, key=lambda p: p.name)


def mutate_pod(pod: Mapping, profiles: Iterable[ColocationProfile], *, namespace_labels: Mapping[str, str] | None,
               priority_classes: Mapping[str, tuple[int, str | None]], draw_key: str,
               skip_resources: bool = False) -> tuple[dict, list[str]]:
    """The pod as the webhook admits it, and the names of the profiles applied.

    ``priority_classes`` maps a PriorityClass name to (value, preemptionPolicy); a profile naming one that
    is absent raises ProfileError, as the source's failed Get refuses the pod."""
    result = copy.deepcopy(dict(pod))
    matched = matching(profiles, result, namespace_labels)
    if not matched:
        return result, []
    applied = []
    for profile in matched:
        if skipped(profile, draw_key):
            continue
        _apply(result, profile, priority_classes)
        applied.append(profile.name)
    if not skip_resources and not any(p.skip_update_resources for p in matched):
        translate_resources(result)
    return result, applied


def _apply(pod: dict, profile: ColocationProfile, priority_classes: Mapping[str, tuple[int, str | None]]) -> None:
    metadata = pod.setdefault("metadata", {})
    spec = pod.setdefault("spec", {})
    labels = dict(metadata.get("labels") or {})
    annotations = dict(metadata.get("annotations") or {})
    labels.update(profile.labels)
    annotations.update(profile.annotations)
    for old, new in profile.label_keys_mapping:
        labels[new] = labels.get(old, "")
    for old, new in profile.annotation_keys_mapping:
        annotations[new] = annotations.get(old, "")
    for key, suffix in profile.label_suffixes:
        if key in labels:
            labels[key] += suffix
    if profile.scheduler_name:
        spec["schedulerName"] = profile.scheduler_name
    if profile.qos_class:
        labels[LABEL_POD_QOS] = profile.qos_class
    if profile.priority_class_name:
        if profile.priority_class_name not in priority_classes:
            raise ProfileError([f'spec.priorityClassName: priorityclasses.scheduling.k8s.io '
                                f'"{profile.priority_class_name}" not found'])
        value, preemption = priority_classes[profile.priority_class_name]
        spec["priorityClassName"] = profile.priority_class_name
        spec["priority"] = value
        if preemption is None:
            spec.pop("preemptionPolicy", None)
        else:
            spec["preemptionPolicy"] = preemption
    if profile.koordinator_priority is not None:
        labels[LABEL_POD_SUB_PRIORITY] = str(profile.koordinator_priority)
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    if profile.patch:
        merged = merge_patch(pod, profile.patch, "spec.patch")
        pod.clear()
        pod.update(merged)


def merge_patch(target: object, patch: object, where: str) -> object:
    """``patch`` merged into ``target`` (the strategic-merge subset in the module docstring)."""
    if isinstance(patch, Mapping):
        if "$patch" in patch:
            raise ProfileError([f"{where}: $patch directives are not supported"])
        merged = dict(target) if isinstance(target, Mapping) else {}
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = merge_patch(merged.get(key), value, f"{where}.{key}")
        return merged
    if isinstance(patch, list) and isinstance(target, list) and _named(patch) and _named(target):
        merged = [copy.deepcopy(item) for item in target]
        index = {item["name"]: i for i, item in enumerate(merged)}
        for item in patch:
            if item["name"] in index:
                merged[index[item["name"]]] = merge_patch(merged[index[item["name"]]], item, where)
            else:
                merged.append(copy.deepcopy(item))
        return merged
    return copy.deepcopy(patch)


def _named(items: list) -> bool:
    return all(isinstance(item, Mapping) and "name" in item for item in items)


def pod_priority_class(pod: Mapping) -> str:
    """``GetPodPriorityClassWithDefault`` of a pod manifest (Kubernetes QoS from its cpu/memory)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    raw = priority_class_raw(labels.get(LABEL_POD_PRIORITY_CLASS), spec.get("priority"))
    containers = [c for group in ("initContainers", "containers") for c in spec.get(group) or []]
    kube_qos = kube_qos_class([(_compute((c.get("resources") or {}).get("requests")),
                                _compute((c.get("resources") or {}).get("limits"))) for c in containers])
    return priority_class_with_default(raw, qos_class_with_default(labels.get(LABEL_POD_QOS), kube_qos))


def _compute(resources: Mapping | None) -> dict[str, int]:
    found = {}
    for name in COMPUTE:
        if resources and name in resources:
            try:
                found[name] = to_canonical(name, resources[name])
            except (QuantityError, ValueError, TypeError):
                continue
    return found


def translate_resources(pod: dict) -> None:
    """``mutatePodResourceSpec``: cpu/memory renamed to the priority class's extended resources."""
    priority_class = pod_priority_class(pod)
    if priority_class in (PRIORITY_NONE, PRIORITY_PROD):
        return
    spec = pod.get("spec") or {}
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            resources = container.get("resources")
            if not isinstance(resources, dict):
                continue
            for field in ("requests", "limits"):
                if isinstance(resources.get(field), dict):
                    _replace(priority_class, resources[field])
            for name in COMPUTE:
                extended = translate_resource(name, priority_class)
                limits = resources.get("limits") or {}
                if extended and extended in limits and extended not in (resources.get("requests") or {}):
                    resources.setdefault("requests", {})[extended] = limits[extended]
    if isinstance(spec.get("overhead"), dict):
        _replace(priority_class, spec["overhead"])


def _replace(priority_class: str, resources: dict) -> None:
    """``replaceAndEraseResource`` for cpu and memory of one ResourceList; a cpu that is not a quantity is
    left for the pod's validation to name."""
    for name in COMPUTE:
        extended = translate_resource(name, priority_class)
        if not extended or name not in resources:
            continue
        quantity = resources[name]
        if name == "cpu":
            try:
                quantity = str(to_canonical(name, quantity))
            except (QuantityError, ValueError, TypeError):
                continue
        del resources[name]
        resources[extended] = quantity
