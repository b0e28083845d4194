"""ClusterColocationProfile (``config.koordinator.sh/v1alpha1``): the typed profile and its validation.

Follows ``apis/config/v1alpha1/cluster_colocation_profile_types.go``: a cluster-scoped object whose spec
says which pods it onboards (``namespaceSelector``, ``selector``: empty or absent selects all), with which
``probability`` (an int or a percent string, 0..100; absent is 100) and what it writes on them (labels,
annotations, key mappings, label suffixes, ``schedulerName``, ``qosClass``, ``priorityClassName``,
``koordinatorPriority``, ``patch``). A profile carrying the ``config.koordinator.sh/skip-update-resources``
annotation leaves the pod's resources untranslated (``extension.ShouldSkipUpdateResource``).

``parse_profile`` refuses a bad profile with one message per bad field, each naming the field
(``spec.probability: ...``, ``spec.selector.matchExpressions[0]: ...``). Koordinator leaves most of this to
the CRD's OpenAPI schema (the qosClass enum, int-or-string) and fails only at mutation time on a bad
selector or probability; refusing those at apply time is the same check made earlier. The mutation is in
``streams.colocationprofile.mutation``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from streams.koordinator.classes import KNOWN_QOS_CLASSES
from streams.koordinator.colocationprofile import ANNOTATION_SKIP_UPDATE_RESOURCE
from streams.sloconfig.selectors import LabelSelector, parse_selector

INT32_MAX = 2**31 - 1
_PERCENT = re.compile(r"^(-?\d+)%$")
_STRING_MAPS = ("labels", "annotations", "labelKeysMapping", "annotationKeysMapping", "labelSuffixes")


class ProfileError(ValueError):
    """A profile that cannot be used; ``problems`` name the bad fields."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclasses.dataclass(frozen=True)
class ColocationProfile:
    """One profile's spec, typed. Maps are tuples of sorted pairs so the profile is hashable and ordered."""

    name: str
    namespace_selector: LabelSelector | None = None
    selector: LabelSelector | None = None
    probability: int = 100
    """Percent of matching pods the profile applies to (``GetScaledValueFromIntOrPercent(p, 100, false)``)."""
    qos_class: str = ""
    priority_class_name: str = ""
    koordinator_priority: int | None = None
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    label_keys_mapping: tuple[tuple[str, str], ...] = ()
    annotation_keys_mapping: tuple[tuple[str, str], ...] = ()
    label_suffixes: tuple[tuple[str, str], ...] = ()
    scheduler_name: str = ""
    patch: Mapping | None = None
    skip_update_resources: bool = False


def parse_profile(body: object) -> ColocationProfile:
    """The profile of a decoded ClusterColocationProfile object; ProfileError names every bad field."""
    if not isinstance(body, Mapping):
        raise ProfileError(["must be an object with apiVersion, kind, metadata and spec"])
    problems: list[str] = []
    metadata = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        problems.append("metadata.name: required")
    annotations = metadata.get("annotations") or {}
    spec = body.get("spec", {})
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise ProfileError(problems + ["spec: must be an object"])
    fields: dict = {}
    for field, key in (("namespaceSelector", "namespace_selector"), ("selector", "selector")):
        if spec.get(field) is not None:
            try:
                selector = parse_selector(spec[field], f"spec.{field}")
            except ValueError as error:
                problems.append(str(error))
                continue
            if selector.error:
                problems.append(selector.error)
            fields[key] = selector
    if spec.get("probability") is not None:
        try:
            fields["probability"] = parse_probability(spec["probability"])
        except ValueError as error:
            problems.append(f"spec.probability: {error}")
    qos = spec.get("qosClass") or ""
    if qos and qos not in KNOWN_QOS_CLASSES:
        problems.append(f"spec.qosClass: {qos!r} is not one of {', '.join(KNOWN_QOS_CLASSES)}")
    fields["qos_class"] = qos
    for field, key in (("priorityClassName", "priority_class_name"), ("schedulerName", "scheduler_name")):
        value = spec.get(field) or ""
        if not isinstance(value, str):
            problems.append(f"spec.{field}: must be a string")
        fields[key] = value
    priority = spec.get("koordinatorPriority")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) or not -INT32_MAX - 1 <= priority <= INT32_MAX:
            problems.append(f"spec.koordinatorPriority: must be a 32-bit integer, got {priority!r}")
        fields["koordinator_priority"] = priority
    for field in _STRING_MAPS:
        value = spec.get(field) or {}
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in value.items()):
            problems.append(f"spec.{field}: must map strings to strings")
            continue
        fields[_snake(field)] = tuple(sorted(value.items()))
    patch = spec.get("patch")
    if patch is not None and not isinstance(patch, Mapping):
        problems.append("spec.patch: must be an object (a partial pod)")
    fields["patch"] = patch or None
    if problems:
        raise ProfileError(problems)
    skip = isinstance(annotations, Mapping) and ANNOTATION_SKIP_UPDATE_RESOURCE in annotations
    return ColocationProfile(name=name, skip_update_resources=skip, **fields)


def parse_probability(value: object) -> int:
    """``intstr.GetScaledValueFromIntOrPercent(value, 100, false)``, limited to 0..100 (a percent)."""
    if isinstance(value, bool):
        raise ValueError(f"must be an integer or a percent string, got {value!r}")
    if isinstance(value, int):
        percent = value
    elif isinstance(value, str) and _PERCENT.match(value):
        percent = int(_PERCENT.match(value).group(1))
    elif isinstance(value, str):
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")
    else:
        raise ValueError(f"must be an integer or a percent string, got {value!r}")
    if not 0 <= percent <= 100:
        raise ValueError(f"must be between 0 and 100 (or 0% and 100%), got {value!r}")
    return percent


def _snake(field: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), field)
