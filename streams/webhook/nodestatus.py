"""Node status amplification: what Koordinator's node webhook (``pkg/webhook/node/plugins/
resourceamplification``) does to a kubelet's node status update.

kubelet owns ``status.allocatable`` and rewrites it on every status update, so the amplified cpu cannot be
patched once: it is applied to each update on its way in. On an UPDATE of ``nodes/status`` of a node whose
annotation ``node.koordinator.sh/resource-amplification-ratio`` (``{"cpu":1.20}``, written by the bridge
from the NodeResource) names a ratio > 1 for cpu or memory::

    raw-allocatable = the update's allocatable cpu and memory   (when the node has no
                      node.koordinator.sh/raw-allocatable yet, or the update changes cpu or memory
                      allocatable: kubelet's new values)
                    = the node.koordinator.sh/raw-allocatable annotation   (otherwise)
    allocatable[r]  = MultiplyMilliQuant(raw-allocatable[r], ratio[r])   for r in cpu, memory with ratio > 1

and ``raw-allocatable`` is kept in its annotation. Without the ratio annotation, the raw-allocatable
annotation is removed (the feature was turned off). A CREATE passes unchanged.

Deviation: where Koordinator answers an unreadable ratio or raw-allocatable annotation with an error (which
refuses kubelet's update whatever the failurePolicy), the update is allowed unchanged with a warning naming
the annotation: a node's status must never be blocked by an annotation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from streams.koordinator.annotations import ANNOTATION_RAW_ALLOCATABLE, ANNOTATION_RESOURCE_AMPLIFICATION_RATIO
from streams.objects.quantity import QuantityError, format_quantity, to_canonical

SUPPORTED = ("cpu", "memory")
"""The resources Koordinator amplifies."""


class AnnotationError(ValueError):
    """An amplification annotation that does not parse; the message names it."""


def amplified(node: dict, old: dict | None) -> tuple[dict[str, str | None], dict[str, str]]:
    """(annotations to set, None to remove; allocatable to set) for the updated ``node`` (``old``: the node
    before the update). Raises AnnotationError."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    allocatable = (node.get("status") or {}).get("allocatable")
    if not annotations.get(ANNOTATION_RESOURCE_AMPLIFICATION_RATIO):
        return ({ANNOTATION_RAW_ALLOCATABLE: None} if ANNOTATION_RAW_ALLOCATABLE in annotations else {}), {}
    if allocatable is None:
        return {}, {}
    set_annotations: dict[str, str | None] = {}
    if ANNOTATION_RAW_ALLOCATABLE not in annotations or _changed(old, allocatable):
        raw = {name: allocatable[name] for name in SUPPORTED if name in allocatable}
        if raw:
            set_annotations[ANNOTATION_RAW_ALLOCATABLE] = json.dumps(raw, separators=(",", ":"))
    else:
        raw = _json_map(annotations[ANNOTATION_RAW_ALLOCATABLE], ANNOTATION_RAW_ALLOCATABLE)
    ratios = _json_map(annotations[ANNOTATION_RESOURCE_AMPLIFICATION_RATIO], ANNOTATION_RESOURCE_AMPLIFICATION_RATIO)
    set_allocatable = {}
    for name in SUPPORTED:
        ratio = ratios.get(name)
        if not isinstance(ratio, (int, float)) or ratio <= 1 or name not in raw:
            continue
        try:
            milli = to_canonical("cpu", raw[name])
        except QuantityError as error:
            raise AnnotationError(f"{ANNOTATION_RAW_ALLOCATABLE}: {name}: {error}") from None
        value = multiply_milli_quantity(name, milli, float(ratio))
        if allocatable.get(name) != value:
            set_allocatable[name] = value
    return set_annotations, set_allocatable


def multiply_milli_quantity(name: str, milli: int, ratio: float) -> str:
    """``util.MultiplyMilliQuant``: int(milli value * ratio) as a milli quantity, in its shortest form."""
    result = int(float(milli) * ratio)
    if result % 1000:
        return f"{result}m"
    return format_quantity(name, result if name == "cpu" else result // 1000)


def _changed(old: dict | None, allocatable: Mapping[str, str]) -> bool:
    """``isSupportedResourceChanged``: cpu or memory allocatable differ from the node before the update."""
    if old is None:
        return False
    before = (old.get("status") or {}).get("allocatable") or {}
    return any(_canonical(name, before.get(name)) != _canonical(name, allocatable.get(name)) for name in SUPPORTED)


def _canonical(name: str, value: object) -> int | str | None:
    try:
        return None if value is None else to_canonical(name, value)
    except QuantityError:
        return str(value)


def _json_map(text: str, annotation: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise AnnotationError(f"{annotation}: {error}") from None
    if not isinstance(value, dict):
        raise AnnotationError(f"{annotation}: not a JSON object")
    return value


def json_patch(node: dict, annotations: Mapping[str, str | None], allocatable: Mapping[str, str]) -> list[dict]:
    """The JSONPatch making those changes to ``node``."""
    patch = []
    if annotations and not (node.get("metadata") or {}).get("annotations"):
        patch.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    for key, value in annotations.items():
        path = f"/metadata/annotations/{_pointer(key)}"
        patch.append({"op": "remove", "path": path} if value is None else {"op": "add", "path": path, "value": value})
    for name, value in allocatable.items():
        patch.append({"op": "add", "path": f"/status/allocatable/{_pointer(name)}", "value": value})
    return patch


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
