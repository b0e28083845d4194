"""Matching reproduced outputs with recorded ones by decision id.

A recorded output is *reproduced* when the replay emitted a record with the
same id and the same content, *diverged* when the content differs (the diff
names each differing field), *missing* when the replay did not emit it.
Replay outputs no recording holds are *extra*. At-least-once delivery may
have recorded an output twice; copies with the same content count once, and
copies with different content are a divergence of their own (``conflicting``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable


@dataclasses.dataclass(frozen=True)
class Divergence:
    decision_id: str
    differences: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Report:
    reproduced: int
    diverged: tuple[Divergence, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    conflicting: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.diverged or self.missing or self.extra or self.conflicting)

    def to_dict(self) -> dict:
        return {"reproduced": self.reproduced, "diverged": len(self.diverged), "missing": len(self.missing),
                "extra": len(self.extra), "conflicting": len(self.conflicting), "ok": self.ok,
                "divergences": [{"decisionId": d.decision_id, "differences": list(d.differences)}
                                for d in self.diverged],
                "missingIds": list(self.missing), "extraIds": list(self.extra),
                "conflictingIds": list(self.conflicting)}


def differences(recorded: Any, replayed: Any, path: str = "") -> list[str]:
    """Readable field-by-field differences between two decoded records."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out = []
        for key in sorted(set(recorded) | set(replayed)):
            where = f"{path}.{key}" if path else key
            if key not in replayed:
                out.append(f"{where}: recorded {recorded[key]!r}, replay has none")
            elif key not in recorded:
                out.append(f"{where}: replay {replayed[key]!r}, recording has none")
            else:
                out.extend(differences(recorded[key], replayed[key], where))
        return out
    if isinstance(recorded, list) and isinstance(replayed, list) and len(recorded) == len(replayed):
        return [d for i, (a, b) in enumerate(zip(recorded, replayed)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if recorded == replayed else [f"{path}: recorded {recorded!r}, replay {replayed!r}"]


def compare(recorded: Iterable[dict], replayed: Iterable[dict], id_field: str = "decisionId") -> Report:
    by_id: dict[str, dict] = {}
    conflicting = set()
    for record in recorded:
        known = by_id.setdefault(record[id_field], record)
        if known != record:
            conflicting.add(record[id_field])
    reproduced, diverged, seen = 0, [], set()
    for record in replayed:
        decision_id = record[id_field]
        seen.add(decision_id)
        if decision_id not in by_id:
            continue
        found = differences(by_id[decision_id], record)
        if found:
            diverged.append(Divergence(decision_id, tuple(found)))
        else:
            reproduced += 1
    extra = sorted(seen - set(by_id))
    missing = sorted(set(by_id) - seen)
    return Report(reproduced, tuple(diverged), tuple(missing), tuple(extra), tuple(sorted(conflicting)))


def compare_by_schema(recorded: dict[str, list[dict]], replayed: dict[str, list[dict]]) -> dict[str, Report]:
    """One Report per output schema either side holds (ids are matched within a schema)."""
    return {schema: compare(recorded.get(schema, []), replayed.get(schema, []))
            for schema in sorted(set(recorded) | set(replayed))}


def total(reports: Iterable[Report]) -> Report:
    """The reports of several schemas as one."""
    reports = list(reports)
    return Report(sum(r.reproduced for r in reports), tuple(d for r in reports for d in r.diverged),
                  tuple(i for r in reports for i in r.missing), tuple(i for r in reports for i in r.extra),
                  tuple(i for r in reports for i in r.conflicting))
