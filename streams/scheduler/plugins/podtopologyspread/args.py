"""``PodTopologySpreadArgs``: the cluster-level default constraints (kube-scheduler v1.34
``config.PodTopologySpreadArgs``), validated as ``validation.ValidatePodTopologySpreadArgs`` does, with its
field error messages.

``defaultingType: System`` (the default) uses kube-scheduler's system defaults, ``kubernetes.io/hostname``
maxSkew 3 and ``topology.kubernetes.io/zone`` maxSkew 5, both ScheduleAnyway; ``List`` uses
``defaultConstraints`` (no ``labelSelector``: it is derived per pod, see ``constraints``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.objects.args import ArgsError, ArgsReader
from streams.scheduler.plugins.podtopologyspread.constraints import DO_NOT_SCHEDULE, HOSTNAME, SCHEDULE_ANYWAY, ZONE

NAME = "PodTopologySpread"
SYSTEM, LIST = "System", "List"
ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)


@dataclasses.dataclass(frozen=True)
class DefaultConstraint:
    """One ``v1.TopologySpreadConstraint`` of ``defaultConstraints``."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: str | None = None
    """The selector as JSON when one was given (validation forbids it)."""
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None

    @classmethod
    def from_raw(cls, raw: Mapping) -> "DefaultConstraint":
        selector = raw.get("labelSelector")
        return cls(raw.get("maxSkew") if isinstance(raw.get("maxSkew"), int) else 0,
                   str(raw.get("topologyKey") or ""), str(raw.get("whenUnsatisfiable") or ""),
                   None if selector is None else json.dumps(selector, sort_keys=True),
                   raw.get("minDomains"), raw.get("nodeAffinityPolicy"), raw.get("nodeTaintsPolicy"))

    def as_raw(self) -> dict:
        """The constraint as a pod spec would write it (without a selector)."""
        raw = {"maxSkew": self.max_skew, "topologyKey": self.topology_key, "whenUnsatisfiable": self.when_unsatisfiable}
        for field, value in (("minDomains", self.min_domains), ("nodeAffinityPolicy", self.node_affinity_policy),
                             ("nodeTaintsPolicy", self.node_taints_policy)):
            if value is not None:
                raw[field] = value
        return raw


SYSTEM_DEFAULT_CONSTRAINTS = (
    DefaultConstraint(3, HOSTNAME, SCHEDULE_ANYWAY),
    DefaultConstraint(5, ZONE, SCHEDULE_ANYWAY),
)
"""kube-scheduler's ``systemDefaultConstraints`` (``plugin.go``)."""


@dataclasses.dataclass(frozen=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[DefaultConstraint, ...] = ()
    """Used when ``defaulting_type`` is List, for pods without constraints of their own."""
    defaulting_type: str = SYSTEM
    """System (kube-scheduler's v1 default: the system default constraints) or List."""

    @classmethod
    def from_config(cls, raw) -> "PodTopologySpreadArgs":
        reader = ArgsReader(NAME, raw, {"defaultConstraints", "defaultingType"})
        constraints = []
        for index, item in enumerate(reader.sequence("defaultConstraints") or ()):
            if not isinstance(item, Mapping):
                raise reader.fail(f"defaultConstraints[{index}]", f"must be an object, got {item!r}")
            constraints.append(DefaultConstraint.from_raw(item))
        args = cls(tuple(constraints), reader.string("defaultingType", SYSTEM))
        args.validate()
        return args

    def validate(self) -> None:
        """kube-scheduler's field errors, aggregated as ``[first, second]`` when there are several."""
        errors = []
        if self.defaulting_type not in (SYSTEM, LIST):
            errors.append(f'defaultingType: Unsupported value: "{self.defaulting_type}": '
                          f'supported values: "{SYSTEM}", "{LIST}"')
        elif self.defaulting_type == SYSTEM and self.default_constraints:
            errors.append(f'defaultingType: Invalid value: "{SYSTEM}": when .defaultConstraints are not empty')
        for index, constraint in enumerate(self.default_constraints):
            path = f"defaultConstraints[{index}]"
            if constraint.max_skew <= 0:
                errors.append(f"{path}.maxSkew: Invalid value: {constraint.max_skew}: not in valid range (0, inf)")
            if not constraint.topology_key:
                errors.append(f"{path}.topologyKey: Required value: can not be empty")
            if not constraint.when_unsatisfiable:
                errors.append(f"{path}.whenUnsatisfiable: Required value: can not be empty")
            elif constraint.when_unsatisfiable not in ACTIONS:
                errors.append(f'{path}.whenUnsatisfiable: Unsupported value: "{constraint.when_unsatisfiable}": '
                              f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"')
            if constraint.label_selector is not None:
                errors.append(f"{path}.labelSelector: Forbidden: constraint must not define a selector, "
                              "as they deduced for each pod")
            for earlier in self.default_constraints[:index]:
                if (earlier.topology_key, earlier.when_unsatisfiable) == \
                        (constraint.topology_key, constraint.when_unsatisfiable):
                    errors.append(f'{path}: Duplicate value: '
                                  f'"{{{constraint.topology_key}, {constraint.when_unsatisfiable}}}"')
                    break
        if errors:
            raise ArgsError(f"{NAME}: " + (errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"))

    @property
    def constraints(self) -> tuple[DefaultConstraint, ...]:
        """The default constraints in force."""
        return SYSTEM_DEFAULT_CONSTRAINTS if self.defaulting_type == SYSTEM else self.default_constraints
