"""What-if: the same inbox under another configuration, and the differences that matter.

The configuration is an slo-controller-config ConfigMap (node aggregate) or a
KubeSchedulerConfiguration (scheduling aggregate), read with ``koord apply``'s
ingest and checked by the same parser the core uses, so a bad file fails
before anything runs, with its file and line. It is injected at the start of
every inbox lane (each node partition, each scheduling domain) and replaces
every config event of its kind in the inbox, so it is in force throughout.

The baseline is the replay of the unchanged inbox (``koord replay`` without
``--config`` shows that it reproduces the recording). Nothing is written to
any topic. Differences reported:

- node: per node and extended resource (batch/mid cpu and memory), the
  what-if minus baseline allocatable at every point where either run
  published a NodeResource for the node (the other's latest value carried):
  first, last, min and max delta; and per resource how many of the nodes with
  usage (a NodeMetric with non-zero cpu usage) end lower or higher, and by how
  much on average; counts of other outputs (evictions, actuations) per run.
- scheduling: per pod, where its last decision left it (node, or the result
  when not placed) in each run; the pods placed differently, and how many
  pods end Unschedulable in each run.

A what-if of one aggregate does not feed the other: a node what-if does not
re-schedule pods, a scheduling what-if does not change the node aggregate's
view of which pods run where.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from streams.events import Causation, InboxEvent
from streams.koordinator.resources import EXTENDED_RESOURCES
from streams.nodeaggregate.partition import CONFIG_OBJECT_KEY
from streams.objects import ManifestError, load_documents, to_record
from streams.replay.run import NODE, SCHEDULING, Caused, Window
from streams.scheduler import config as scheduler_config
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.document import ConfigError as SloConfigError

WHAT_IF_SOURCE = "<what-if>"
PLACED = ("Scheduled", "Bound")
UNSCHEDULABLE = "Unschedulable"
KIND_OF = {NODE: "ConfigMap", SCHEDULING: "KubeSchedulerConfiguration"}


@dataclasses.dataclass(frozen=True)
class WhatIfConfig:
    kind: str
    key: str
    record: dict
    location: str

    def replaces(self, event: InboxEvent) -> bool:
        if event.kind != self.kind:
            return False
        return self.kind != "ConfigMap" or event.key == CONFIG_OBJECT_KEY


def load_config(path: str, aggregate: str) -> WhatIfConfig:
    """The one configuration document of ``path`` that ``aggregate`` reads, validated.

    Raises ManifestError with ``FILE:LINE: document N (KIND NAME): reason`` lines, as ``koord apply`` does."""
    kind = KIND_OF[aggregate]
    documents = load_documents(path)
    found, problems = [], []
    for document in documents:
        try:
            record = to_record(document)
        except ManifestError as error:
            problems.extend(error.problems)
            continue
        if record.kind == kind and (kind != "ConfigMap" or record.key == CONFIG_OBJECT_KEY):
            found.append((document, record))
    if problems:
        raise ManifestError(problems)
    wanted = "the slo-controller-config ConfigMap (namespace koordinator-system)" if kind == "ConfigMap" else kind
    if len(found) != 1:
        raise ManifestError(f"{path}: {len(found)} documents are {wanted}; --config needs exactly one")
    document, record = found[0]
    try:
        if kind == "ConfigMap":
            parse_slo_config(record.record, DEFAULT_CONFIG)
        else:
            scheduler_config.parse_manifest(record.record["manifest"])
    except (SloConfigError, scheduler_config.ConfigError) as error:
        raise ManifestError(f"{document.location}: document {document.index} ({kind} {record.key}): {error}") from None
    return WhatIfConfig(kind, record.key, record.record, document.location)


def with_config(events: Iterable[tuple[str, InboxEvent]], config: WhatIfConfig,
                aggregate: str) -> list[tuple[str, InboxEvent]]:
    """``events`` with ``config`` replacing every config event of its kind, and injected before the first
    event of each lane (node: inbox partition; scheduling: domain) at inbox offset -1."""
    events = list(events)
    out, lanes = [], {}
    for key, event in events:
        lane = event.causation.inbox_partition if aggregate == NODE else key
        lanes.setdefault(lane, (key, event))
        out.append((key, dataclasses.replace(event, record=config.record) if config.replaces(event) else event))
    injected = []
    for key, first in lanes.values():
        cause = first.causation
        injected.append((key if aggregate == SCHEDULING else config.key, InboxEvent(
            Causation(cause.inbox_topic, cause.inbox_partition, -1, WHAT_IF_SOURCE, 0, 0),
            first.timestamp_ms, config.key, config.kind, config.record)))
    return injected + out


# -- node -----------------------------------------------------------------------------------------------


def nodes_with_usage(caused: Iterable[Caused]) -> set[str]:
    """Nodes that reported a NodeMetric with non-zero cpu usage."""
    return {item.key for item in caused if item.event.kind == "NodeMetric" and item.event.record is not None
            and (item.event.record.get("nodeUsage") or {}).get("cpu", 0) > 0}


def _allocatable_by_position(caused: Iterable[Caused], node: str | None) -> dict[str, dict[tuple, dict]]:
    series: dict[str, dict[tuple, dict]] = {}
    for item in caused:
        for schema, record in item.outputs:
            if schema == "NodeResource" and (node is None or record["nodeName"] == node):
                series.setdefault(record["nodeName"], {})[item.position] = record["allocatable"]
    return series


def _other_outputs(caused: Iterable[Caused], window: Window, node: str | None) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for item in caused:
        if not window.selects(item.event):
            continue
        for schema, record in item.outputs:
            subject = record.get("nodeName") if isinstance(record, dict) else None
            if schema in ("NodeResource", "DeadLetter") or (node is not None and subject != node):
                continue
            per_node = counts.setdefault(schema, {})
            per_node[subject or ""] = per_node.get(subject or "", 0) + 1
    return counts


def node_diff(baseline: list[Caused], what_if: list[Caused], window: Window = Window(),
              node: str | None = None) -> dict:
    """Allocatable deltas (what-if minus baseline) per node and resource; see the module docstring."""
    selected = {item.position for item in baseline if window.selects(item.event)}
    before, after = _allocatable_by_position(baseline, node), _allocatable_by_position(what_if, node)
    with_usage = nodes_with_usage(baseline)
    nodes: dict[str, dict[str, dict]] = {}
    for name in sorted(set(before) | set(after)):
        ours, theirs = before.get(name, {}), after.get(name, {})
        current_before = current_after = None
        deltas: dict[str, list[tuple[int, int, int]]] = {}
        for position in sorted(set(ours) | set(theirs)):
            current_before = ours.get(position, current_before)
            current_after = theirs.get(position, current_after)
            if position not in selected or current_before is None or current_after is None:
                continue
            for resource in EXTENDED_RESOURCES:
                b, a = current_before.get(resource, 0), current_after.get(resource, 0)
                deltas.setdefault(resource, []).append((a - b, b, a))
        if deltas:
            nodes[name] = {resource: _delta_summary(points) for resource, points in deltas.items()}
    summary = {}
    for resource in EXTENDED_RESOURCES:
        considered = [n for n in sorted(with_usage) if resource in nodes.get(n, {})]
        lower = [nodes[n][resource]["last"] for n in considered if nodes[n][resource]["last"] < 0]
        higher = [nodes[n][resource]["last"] for n in considered if nodes[n][resource]["last"] > 0]
        summary[resource] = {
            "nodesWithUsage": len(considered), "lower": len(lower), "higher": len(higher),
            "unchanged": len(considered) - len(lower) - len(higher),
            "averageLowerBy": -sum(lower) / len(lower) if lower else 0,
            "averageHigherBy": sum(higher) / len(higher) if higher else 0,
        }
    other_before, other_after = _other_outputs(baseline, window, node), _other_outputs(what_if, window, node)
    others = {schema: {"baseline": other_before.get(schema, {}), "whatIf": other_after.get(schema, {})}
              for schema in sorted(set(other_before) | set(other_after))}
    return {"nodes": nodes, "summary": summary, "otherOutputs": others}


def _delta_summary(points: list[tuple[int, int, int]]) -> dict:
    deltas = [delta for delta, _, _ in points]
    return {"first": deltas[0], "last": deltas[-1], "min": min(deltas), "max": max(deltas), "points": len(deltas),
            "baselineLast": points[-1][1], "whatIfLast": points[-1][2]}


def unit_of(resource: str) -> str:
    return "milli-cores" if resource.endswith("cpu") else "bytes"


def node_headlines(diff: dict) -> list[str]:
    """One line per resource, e.g. ``kubernetes.io/batch-cpu: lower on 50 of 50 nodes with usage, by 4000
    milli-cores on average``."""
    lines = []
    for resource, counts in diff["summary"].items():
        unit, total = unit_of(resource), counts["nodesWithUsage"]
        parts = []
        if counts["lower"]:
            parts.append(f"lower on {counts['lower']} of {total} nodes with usage, "
                         f"by {counts['averageLowerBy']:.0f} {unit} on average")
        if counts["higher"]:
            parts.append(f"higher on {counts['higher']} of {total} nodes with usage, "
                         f"by {counts['averageHigherBy']:.0f} {unit} on average")
        if not parts:
            parts.append(f"unchanged on all {total} nodes with usage")
        lines.append(f"{resource}: {'; '.join(parts)} (last values)")
    return lines


# -- scheduling -----------------------------------------------------------------------------------------


def _final_placements(caused: Iterable[Caused], window: Window) -> dict[str, str]:
    """Pod key -> its node when its last decision (up to the window's end) placed it, else that result;
    only pods with a decision inside the window."""
    last, decided = {}, set()
    for item in caused:
        end = window.end
        if end is not None and end.of(item.event) > end.value:
            continue
        for schema, record in item.outputs:
            if schema != "SchedulingDecision":
                continue
            key = f"{record['pod']['namespace']}/{record['pod']['name']}"
            last[key] = record["nodeName"] if record["result"] in PLACED else record["result"]
            if window.selects(item.event):
                decided.add(key)
    return {key: value for key, value in last.items() if key in decided}


def scheduling_diff(baseline: list[Caused], what_if: list[Caused], window: Window = Window()) -> dict:
    """Pods whose last decision differs between the runs, and Unschedulable counts before and after."""
    before, after = _final_placements(baseline, window), _final_placements(what_if, window)
    moved = [{"pod": key, "baseline": before.get(key), "whatIf": after.get(key)}
             for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    return {"pods": len(set(before) | set(after)), "placedDifferently": len(moved), "differences": moved,
            "unschedulable": {"baseline": sum(1 for v in before.values() if v == UNSCHEDULABLE),
                              "whatIf": sum(1 for v in after.values() if v == UNSCHEDULABLE)}}
