"""A scheduling domain's state as flat JSON-able entries (key -> value), as its changelog table keeps it.

Keys: ``meta`` (seq, clock, last status sync, where the next cycle's node search starts), ``config`` (the KubeSchedulerConfiguration record),
``node/<name>`` (record and column row, so a restored domain keeps the row order), ``noderesource/<name>``,
``pod/<key>`` (record, ``PodState``, queue entry, Permit wait, bind annotations), ``metric/<node>``,
``quota/<name>``, ``profile/<key>``, ``object/<kind>/<name>`` (watched objects), ``source/<topic/partition>``
(the last offset applied), ``status/<tree/quota>`` (the last quota statuses sent) and ``descheduler/<key>``.
Plugins rebuild their derived state from the objects, so a restored domain makes the same decisions as the
live one. Objects are kept in their stored form (``streams.objects.size.stored_form``: a pod's record reduced,
a node's without its manifest), which fits the state budget (``streams.limits``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Self

from streams.objects import podinfo
from streams.objects.size import stored_form
from streams.scheduler import config as scheduler_config
from streams.scheduler.orchestration import PodState
from streams.scheduler.queue import QueuedPod
from streams.scheduler.state import WaitingPod


class Persistence:
    """``entries`` / ``restore`` / ``take_changes`` of ``SchedulingDomain``; the transition marks what it
    changes in ``_dirty``."""

    def entries(self) -> dict[str, dict]:
        """The whole state as flat entries (key -> JSON-able value)."""
        keys = {"meta", "config"}
        keys.update(f"node/{n}" for n in self.node_records)
        keys.update(f"noderesource/{n}" for n in self.node_resources)
        keys.update(f"pod/{k}" for k in self.pods)
        keys.update(f"metric/{n}" for n in self.cluster.metrics)
        keys.update(f"quota/{n}" for n in self.cluster.quotas)
        keys.update(f"profile/{k}" for k in self.cluster.profiles)
        keys.update(f"source/{s}" for s in self.source_offsets)
        keys.update(f"status/{s}" for s in self.statuses)
        keys.update(f"object/{kind}/{name}" for kind, objects in self.cluster.objects.items() for name in objects)
        keys.update(f"descheduler/{key}" for key in self.descheduling.entries())
        out = {}
        for key in keys:
            value = self._entry(key)
            if value is not None:
                out[key] = value
        return out

    def _entry(self, key: str) -> dict | None:
        kind, _, name = key.partition("/")
        if kind == "meta":
            return {"seq": self.seq, "now": self.cluster.now_ms, "status_synced_at": self.status_synced_at,
                    "next_start_row": self.cluster.next_start_row}
        if kind == "config":
            return {"record": self.config_record} if self.config_record is not None else None
        if kind == "node":
            record = self.node_records.get(name)
            row = self.cluster.columns.row.get(name)
            return None if record is None else {"record": stored_form("Node", record), "row": row}
        if kind == "noderesource":
            return self.node_resources.get(name)
        if kind == "pod":
            state = self.pods.get(name)
            if state is None:
                return None
            queued = self.queue.pods.get(name)
            waiting = self.cluster.waiting.pods.get(name)
            entry = {"record": self.cluster.pods[name].record, **dataclasses.asdict(state),
                     "queue": queued.to_entry() if queued else None,
                     "waiting": dataclasses.asdict(waiting) if waiting else None,
                     "annotations": self.cluster.bind_annotations.get(name)}
            if name in self.cluster.volume_bindings:
                entry["volumeBindings"] = [list(binding) for binding in self.cluster.volume_bindings[name]]
            return entry
        if kind == "metric":
            return self.cluster.metrics.get(name)
        if kind == "quota":
            return self.cluster.quotas.get(name)
        if kind == "profile":
            return self.cluster.profiles.get(name)
        if kind == "source":
            offset = self.source_offsets.get(name)
            return None if offset is None else {"offset": offset}
        if kind == "status":
            return self.statuses.get(name)
        if kind == "object":
            kind, _, name = name.partition("/")
            return self.cluster.objects.get(kind, {}).get(name)
        if kind == "descheduler":
            return self.descheduling.entries().get(name)
        return None

    @classmethod
    def restore(cls, domain: str, entries: Mapping[str, dict]) -> Self:
        state = cls(domain)
        cluster = state.cluster
        groups: dict[str, dict[str, dict]] = {}
        for key, value in entries.items():
            kind, _, name = key.partition("/")
            groups.setdefault(kind, {})[name] = value
        meta = groups.get("meta", {}).get("", {})
        state.seq = meta.get("seq", 0)
        cluster.now_ms = meta.get("now", 0)
        cluster.next_start_row = meta.get("next_start_row", 0)
        state.status_synced_at = meta.get("status_synced_at")
        state.source_offsets = {k: v["offset"] for k, v in groups.get("source", {}).items()}
        state.statuses = dict(groups.get("status", {}))
        state.node_resources = dict(groups.get("noderesource", {}))
        nodes = groups.get("node", {})
        for name in sorted(nodes, key=lambda n: (nodes[n].get("row") is None, nodes[n].get("row") or 0, n)):
            state.node_records[name] = nodes[name]["record"]
            state._put_node(name)
        cluster.metrics = dict(groups.get("metric", {}))
        cluster.quotas = dict(groups.get("quota", {}))
        cluster.profiles = dict(groups.get("profile", {}))
        for key, value in sorted(groups.get("object", {}).items()):
            kind, _, name = key.partition("/")
            cluster.objects.setdefault(kind, {})[name] = value
        for key in sorted(groups.get("pod", {})):
            value = groups["pod"][key]
            info = podinfo.from_record(key, value["record"], stored=True)
            cluster.pods[key] = info
            state.pods[key] = PodState(value["seq"], value["node"], value["assigned_at"], value["last_result"],
                                       value["last_message"])
            if value["node"] is not None:
                state._account(key, info, value["node"], value["assigned_at"] or 0)
            if value.get("waiting"):
                waiting = value["waiting"]
                cluster.waiting.pods[key] = WaitingPod(waiting["node"], waiting["deadline_ms"], waiting["timeout_ms"],
                                                       tuple(waiting["pending"]))
            if value.get("annotations"):
                cluster.bind_annotations[key] = dict(value["annotations"])
            if value.get("volumeBindings"):
                cluster.volume_bindings[key] = tuple((claim, volume) for claim, volume in value["volumeBindings"])
            if value.get("queue"):
                queued = value["queue"]
                state.queue.pods[key] = QueuedPod(**{**queued, "rejected_by": tuple(queued["rejected_by"])})
        if groups.get("descheduler"):
            state.descheduling.restore(groups["descheduler"])
            state._descheduler_keys = {f"descheduler/{key}" for key in groups["descheduler"]}
        record = groups.get("config", {}).get("", {}).get("record")
        config = scheduler_config.default_config()
        if record is not None:
            config = scheduler_config.parse_manifest(record["manifest"])
            state.config_record = record
        state._build_frameworks(config)
        return state

    def take_changes(self) -> dict[str, dict | None]:
        """Entries changed since the last call (None = removed)."""
        changed = {key: self._entry(key) for key in sorted(self._dirty)}
        self._dirty = set()
        return changed
