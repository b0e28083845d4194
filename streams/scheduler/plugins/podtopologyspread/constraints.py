"""A pod's topology spread constraints, as kube-scheduler v1.34 reads them (``podtopologyspread/common.go``).

``constraints_of`` gives the constraints of one ``whenUnsatisfiable`` action: the pod's own
``spec.topologySpreadConstraints`` when it has any, else the cluster-level default constraints
(``buildDefaultConstraints``). Each constraint is read as ``filterTopologySpreadConstraints`` reads it:

- ``labelSelector`` becomes a ``Selector``; a null selector matches nothing (``labels.Nothing``);
- ``matchLabelKeys``: the pod's values of those keys are added to the selector as ``key In (value)``
  (keys the pod lacks are skipped), as the scheduler and, since 1.34, kube-apiserver merge them;
- ``minDomains`` defaults to 1, ``nodeAffinityPolicy`` to Honor, ``nodeTaintsPolicy`` to Ignore.

Default constraints need a selector per pod: kube-scheduler takes it from the Services, ReplicationControllers,
ReplicaSets and StatefulSets selecting the pod (``helper.DefaultSelector``). koordstream has no Services and
does not keep those controllers, so for a pod owned by a ReplicaSet, StatefulSet or ReplicationController the
selector is the pod's own labels without the ones its controller sets per pod (``statefulset.kubernetes.io/
pod-name``, ``apps.kubernetes.io/pod-index``, ``controller-revision-hash``): the labels of the pod template
that the controller's selector selects. Any other pod (no owner, a DaemonSet, a Job) gets no default
constraints, as kube-scheduler gives none to a pod nothing selects.

The manifest is parsed only when it contains ``"topologySpreadConstraints"``, so a pod without constraints
costs one substring test.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
SELECTOR_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})
"""Owner kinds whose pods get the default constraints (kube-scheduler also counts Services)."""
PER_POD_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                            "controller-revision-hash"})
"""Labels a controller sets on each pod apart from its template, left out of a derived default selector."""

Requirement = tuple[str, str, tuple[str, ...]]
"""(key, operator, values) of a label selector requirement: In, NotIn, Exists, DoesNotExist."""


@dataclasses.dataclass(frozen=True)
class Selector:
    """A parsed label selector: every requirement must hold. ``nothing`` is kube's ``labels.Nothing()`` (a null
    selector); no requirement and not ``nothing`` is ``labels.Everything()`` (``{}``)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """``Selector.Empty()``: matches everything; kube-scheduler counts no existing pod for it."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, operator, values in self.requirements:
            value = labels.get(key)
            if operator == "In":
                ok = value is not None and value in values
            elif operator == "NotIn":
                ok = value is None or value not in values
            elif operator == "Exists":
                ok = value is not None
            elif operator == "DoesNotExist":
                ok = value is None
            else:
                ok = False
            if not ok:
                return False
        return True


NOTHING = Selector(nothing=True)


@dataclasses.dataclass(frozen=True)
class Constraint:
    """kube-scheduler's internal ``topologySpreadConstraint``."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def label_selector(raw) -> Selector:
    """``metav1.LabelSelectorAsSelector``: None gives NOTHING; matchLabels are ``key In (value)``."""
    if not isinstance(raw, Mapping):
        return NOTHING
    requirements: list[Requirement] = []
    for key, value in sorted((raw.get("matchLabels") or {}).items()):
        requirements.append((str(key), "In", (str(value),)))
    for expression in raw.get("matchExpressions") or ():
        if isinstance(expression, Mapping):
            values = tuple(sorted(str(v) for v in expression.get("values") or ()))
            requirements.append((str(expression.get("key", "")), str(expression.get("operator", "")), values))
    return Selector(tuple(sorted(set(requirements))))


def with_match_label_keys(selector: Selector, keys, labels: Mapping[str, str]) -> Selector:
    """``mergeLabelSetWithSelector``: the pod's values of ``keys`` added as ``key In (value)``; a NOTHING
    selector stays NOTHING (it has no requirements to merge)."""
    added = [(key, "In", (labels[key],)) for key in keys or () if isinstance(key, str) and key in labels]
    if not added or selector.nothing:
        return selector
    return Selector(tuple(sorted(set(selector.requirements) | set(added))))


def _int(value, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def read_constraint(raw: Mapping, labels: Mapping[str, str], selector: Selector | None = None) -> Constraint:
    """One ``v1.TopologySpreadConstraint`` (``selector`` given: a default constraint's derived selector)."""
    if selector is None:
        selector = with_match_label_keys(label_selector(raw.get("labelSelector")), raw.get("matchLabelKeys"),
                                         labels)
    return Constraint(
        max_skew=_int(raw.get("maxSkew"), 1),
        topology_key=str(raw.get("topologyKey") or ""),
        selector=selector,
        min_domains=_int(raw.get("minDomains"), 1),
        node_affinity_policy=raw.get("nodeAffinityPolicy") or HONOR,
        node_taints_policy=raw.get("nodeTaintsPolicy") or IGNORE,
    )


def own_constraints(record: Mapping | None) -> tuple[Mapping, ...]:
    """The raw ``spec.topologySpreadConstraints`` of a Pod record's manifest (none without the substring)."""
    text = (record or {}).get("manifest")
    if not isinstance(text, str) or '"topologySpreadConstraints"' not in text:
        return ()
    try:
        spec = json.loads(text).get("spec") or {}
    except (ValueError, AttributeError):
        return ()
    raw = spec.get("topologySpreadConstraints") if isinstance(spec, dict) else None
    return tuple(c for c in raw if isinstance(c, Mapping)) if isinstance(raw, list) else ()


def default_selector(labels: Mapping[str, str], owner_kinds) -> Selector | None:
    """The selector of the default constraints for a pod (module docstring), or None when there is none."""
    if not SELECTOR_OWNERS.intersection(owner_kinds):
        return None
    requirements = tuple((key, "In", (value,)) for key, value in sorted(labels.items()) if key not in PER_POD_LABELS)
    return Selector(requirements) if requirements else None


def constraints_of(own: tuple[Mapping, ...], labels: Mapping[str, str], owner_kinds, defaults: tuple[Mapping, ...],
                   action: str) -> tuple[Constraint, ...]:
    """``getConstraints`` / ``initPreScoreState``: the constraints of ``action`` for a pod."""
    if own:
        return tuple(read_constraint(c, labels) for c in own if c.get("whenUnsatisfiable") == action)
    chosen = [c for c in defaults if c.get("whenUnsatisfiable") == action]
    if not chosen:
        return ()
    selector = default_selector(labels, owner_kinds)
    if selector is None:
        return ()
    return tuple(read_constraint(c, labels, selector) for c in chosen)
