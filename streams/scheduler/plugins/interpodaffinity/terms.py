"""A pod's inter-pod affinity terms, parsed once per pod object (kube-scheduler ``framework.NewPodInfo``,
``AffinityTerm.Matches`` in ``pkg/scheduler/framework/types.go``).

A term (``PodAffinityTerm``) matches a pod ``q`` when ``q``'s namespace is one of the term's namespaces, or the
term's ``namespaceSelector`` matches the labels of ``q``'s namespace, and the term's ``labelSelector`` matches
``q``'s labels. The term's namespaces are ``namespaces``, or the owning pod's own namespace when the term names
neither namespaces nor a namespaceSelector. A ``null`` selector matches nothing, ``{}`` everything.

``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the labelSelector as the API server does on pod
creation (``key In (owner's value)`` / ``key NotIn (owner's value)``, keys the owner has no label for are
skipped); a pod read from the API server already carries them, and the repeated requirement changes nothing.

Label values of ``In`` / ``NotIn`` requirements are validated as ``labels.NewRequirement`` does; a pod with an
invalid term gets the error kube-scheduler's PreFilter reports ("parsing pod: requiredAffinityTerms: ...").
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Mapping

from streams.objects.podinfo import PodInfo
from streams.sloconfig.selectors import LabelSelector, parse_selector

NOTHING = LabelSelector(error="null selector")
"""``metav1.LabelSelectorAsSelector(nil)``: ``labels.Nothing()``."""
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
LABEL_VALUE_MESSAGE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                       "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@dataclasses.dataclass(frozen=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector
    namespace_selector: LabelSelector
    """NOTHING when the term has none (then ``namespaces`` decide alone)."""
    topology_key: str

    def matches(self, namespace: str, labels: Mapping[str, str],
                namespace_labels: Callable[[str], Mapping[str, str]]) -> bool:
        """``AffinityTerm.Matches``: the pod of ``namespace`` with ``labels``; ``namespace_labels(ns)`` gives a
        namespace's labels, read only when the namespaceSelector is neither empty nor null."""
        if namespace not in self.namespaces:
            selector = self.namespace_selector
            if selector.error is not None:
                return False
            if not selector.empty and not selector.matches(namespace_labels(namespace)):
                return False
        return self.selector.matches(labels)


@dataclasses.dataclass(frozen=True)
class WeightedTerm:
    weight: int
    term: AffinityTerm


@dataclasses.dataclass(frozen=True)
class PodTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    error: str | None = None
    """Why a term does not parse (kube-scheduler's ``NewPodInfo`` error), or None."""

    @property
    def any(self) -> bool:
        """kube-scheduler's ``PodsWithAffinity``: the pod has some pod affinity or anti-affinity term."""
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity)

    @property
    def preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


NONE = PodTerms()


def parse(pod: PodInfo) -> PodTerms:
    """The pod's terms from its manifest's ``spec.affinity.podAffinity`` / ``podAntiAffinity``.

    Replicas carry the same affinity: the terms are parsed once per (namespace, affinity, and the pod's labels
    when a term has match/mismatchLabelKeys), the last ``PARSED_KEPT`` kept."""
    record = pod.record or {}
    manifest = record.get("manifest")
    if not isinstance(manifest, str) or ("podAffinity" not in manifest and "podAntiAffinity" not in manifest):
        return NONE
    try:
        document = json.loads(manifest)
    except ValueError:
        return NONE
    spec = document.get("spec") if isinstance(document, dict) else None
    affinity = spec.get("affinity") if isinstance(spec, dict) else None
    if not isinstance(affinity, dict):
        return NONE
    text = json.dumps(affinity, sort_keys=True)
    labels = tuple(sorted(pod.labels.items())) if "LabelKeys" in text else ()
    return _parsed(pod.namespace, labels, text)


PARSED_KEPT = 1024


@functools.lru_cache(maxsize=PARSED_KEPT)
def _parsed(namespace: str, labels: tuple[tuple[str, str], ...], text: str) -> PodTerms:
    affinity = json.loads(text)
    owner = _Owner(namespace, dict(labels))
    errors: list[str] = []
    parts = []
    for field, preferred, where in (("podAffinity", False, "requiredAffinityTerms"),
                                    ("podAntiAffinity", False, "requiredAntiAffinityTerms"),
                                    ("podAffinity", True, "preferredAffinityTerms"),
                                    ("podAntiAffinity", True, "preferredAntiAffinityTerms")):
        section = affinity.get(field)
        kind = "preferredDuringSchedulingIgnoredDuringExecution" if preferred else \
            "requiredDuringSchedulingIgnoredDuringExecution"
        raw = section.get(kind) if isinstance(section, dict) else None
        terms, error = _terms(owner, raw if isinstance(raw, list) else [], preferred)
        if error:
            errors.append(f"{where}: {error}")
        parts.append(terms)
    error = None if not errors else errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
    return PodTerms(*parts, error=error)


@dataclasses.dataclass(frozen=True)
class _Owner:
    """The namespace and labels of the pod whose terms are parsed (what its terms' defaults read)."""

    namespace: str
    labels: Mapping[str, str]


def _terms(pod: _Owner, raw: list, preferred: bool) -> tuple[tuple, str | None]:
    """``GetAffinityTerms`` / ``getWeightedAffinityTerms``: the terms, and the first error."""
    out = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        weight = 0
        if preferred:
            weight = item.get("weight") if isinstance(item.get("weight"), int) else 0
            item = item.get("podAffinityTerm")
            if not isinstance(item, dict):
                continue
        term, error = _term(pod, item)
        if error:
            return (), error
        out.append(WeightedTerm(weight, term) if preferred else term)
    return tuple(out), None


def _term(pod: _Owner, raw: dict) -> tuple[AffinityTerm | None, str | None]:
    selector, error = _selector(raw.get("labelSelector"))
    if error:
        return None, error
    if selector is not NOTHING:
        selector = _merge_label_keys(selector, pod.labels, raw.get("matchLabelKeys"), raw.get("mismatchLabelKeys"))
    namespace_selector, error = _selector(raw.get("namespaceSelector"))
    if error:
        return None, error
    namespaces = [n for n in raw.get("namespaces") or () if isinstance(n, str)]
    if not namespaces and raw.get("namespaceSelector") is None:
        namespaces = [pod.namespace]
    topology_key = raw.get("topologyKey") if isinstance(raw.get("topologyKey"), str) else ""
    return AffinityTerm(frozenset(namespaces), selector, namespace_selector, topology_key), None


def _selector(raw) -> tuple[LabelSelector, str | None]:
    if raw is None:
        return NOTHING, None
    try:
        selector = parse_selector(raw, "labelSelector")
    except ValueError as err:
        return NOTHING, str(err)
    for key, operator, values in selector.match_expressions:
        if operator in ("In", "NotIn"):
            for index, value in enumerate(values):
                if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
                    return NOTHING, f'values[{index}][{key}]: Invalid value: "{value}": {LABEL_VALUE_MESSAGE}'
    return selector, selector.error


def _merge_label_keys(selector: LabelSelector, labels: Mapping[str, str], match_keys, mismatch_keys) -> LabelSelector:
    extra = []
    for keys, operator in ((match_keys, "In"), (mismatch_keys, "NotIn")):
        for key in keys if isinstance(keys, list) else ():
            if isinstance(key, str) and key in labels:
                extra.append((key, operator, (labels[key],)))
    if not extra:
        return selector
    return dataclasses.replace(selector, match_expressions=selector.match_expressions + tuple(extra))
