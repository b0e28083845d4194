"""The scheduling-domain aggregate: state and the pure transition.

``SchedulingDomain.handle(event)`` applies one inbox event and returns what it causes, as
(Avro schema name, record) pairs (``outputs``: SchedulingDecision, ElasticQuotaStatus, Eviction,
PodMigrationJob, Reservation, PodGroup, DeadLetter). It reads no clock: time is the largest event timestamp
seen (Tick events let it pass), so the same inbox gives the same outputs. A source event at or
below the last offset applied for its source partition is a duplicate and is ignored.

Inbox kinds: Node, NodeResource (batch/mid allocatable overlaid on the node's), Pod, NodeUsage
(what the node aggregate sends of a node's NodeMetric, keyed by node name), ElasticQuota,
ElasticQuotaProfile, KubeSchedulerConfiguration (record {"metadata", "manifest"}), Tick (record
{"timestamp"}), the kinds plugins watch (``framework.WatchesObjects``: PodGroup, Reservation,
Device, ...) and the descheduling stage's DeschedulerConfiguration and PodMigrationJob.

The domain is this module (nodes, quotas, configuration, quota statuses and the order of one
event's steps) and one module per job, each a part of ``SchedulingDomain``:

- ``orchestration``: pod events, scheduling attempts through the queue and the cycle, Permit
  verdicts, preemption, retries;
- ``objectpods``: watched objects and objects scheduled as pods (reserve pods);
- ``descheduling``: the descheduling stage (LowNodeLoad rounds, migration jobs), run after each event;
- ``persistence``: the state as flat entries (``entries`` / ``restore`` / ``take_changes``);
- ``outputs``: the records one event yields, with their stable ids.

What the domain knows of a plugin it knows through the framework's protocols (``NodeOverlay``,
``ObjectPods``, ``ReservationHolder``, ``StatusReporter``, ...), never by its name.
"""

from __future__ import annotations

from streams.events import InboxEvent
from streams.objects.args import ArgsError
from streams.objects.podinfo import PodInfo
from streams.scheduler import config as scheduler_config
from streams.scheduler import registry
from streams.scheduler.cycle import Framework
from streams.scheduler.descheduling import Descheduling, DeschedulingHook
from streams.scheduler.framework import (
    CONFIGURATION_UPDATE, NODE, NODE_USAGE, QUOTA, ClusterEvent, ObjectPods, ObjectStatuses, StatusReporter,
    action_of)
from streams.scheduler.objectpods import ObjectPodEvents
from streams.scheduler.orchestration import PodScheduling, PodState
from streams.scheduler.outputs import Outputs
from streams.scheduler.persistence import Persistence
from streams.scheduler.queue import SchedulingQueue
from streams.scheduler.state import USAGE_FIELDS, Cluster, MetricChanged, NodeChanged, NodeObject, QuotaObjectsChanged

STATUS_SYNC_INTERVAL_MS = 1000
"""ElasticQuotaStatus is synced at most this often (event time), as Koordinator's quota status
controller syncs every second; a change to the quota objects themselves is synced at once. The interval
counts from the last sync that published a status: the sync time is in the table and the plugin's status
version is not, so a domain restored from its table publishes at the events where one that never stopped
does."""


class SchedulingDomain(Persistence, PodScheduling, ObjectPodEvents, DeschedulingHook):
    """One scheduling domain's state and transition; each base class is the part of one job (see above)."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.cluster = Cluster()
        self.pods: dict[str, PodState] = {}
        self.node_records: dict[str, dict] = {}
        self.node_resources: dict[str, dict] = {}
        self.config_record: dict | None = None
        self.config = scheduler_config.default_config()
        self.frameworks: dict[str, Framework] = {}
        self.queue = SchedulingQueue(registry.plugins_by_event(registry.REGISTRY))
        self.admissions = registry.object_admissions(registry.REGISTRY)
        """Object kind -> the plugins whose webhook admits its changes (whatever the profiles enable)."""
        self.watched = registry.watched_kinds(registry.REGISTRY)
        """Object kinds plugins watch, kept in ``Cluster.objects``."""
        self.node_overlays = registry.node_overlays(registry.REGISTRY)
        """Watched kind -> the plugin that overlays its objects on their node (``NodeOverlay``)."""
        self.object_pod_kinds = frozenset(kind for factory in registry.REGISTRY.values()
                                          if isinstance(factory, ObjectPods) for kind in factory.pod_kinds)
        """Kinds whose objects are scheduled as pods (reserve pods), keyed "<kind>/<name>"."""
        self.descheduling = Descheduling()
        self._descheduler_keys: set[str] = set()
        self.source_offsets: dict[str, int] = {}
        self.statuses: dict[str, dict] = {}
        self.seq = 0
        self._dirty: set[str] = set()
        self._status_version: tuple | None = None
        self.status_synced_at: int | None = None
        self._build_frameworks(self.config)

    # -- configuration -------------------------------------------------------------

    def _build_frameworks(self, config: scheduler_config.SchedulerConfig) -> None:
        frameworks = {}
        try:
            for profile in config.profiles:
                frameworks[profile.scheduler_name] = Framework(profile, self.cluster)
        except Exception:
            for framework in frameworks.values():
                framework.close()
            raise
        for framework in self.frameworks.values():
            framework.close()
        self.frameworks = frameworks
        self.config = config
        self._enabled_cache: dict[type, list] = {}
        self.queue.initial_backoff_ms = config.initial_backoff_ms
        self.queue.max_backoff_ms = config.max_backoff_ms

    def _framework(self, pod: PodInfo) -> Framework:
        return self.frameworks[self.config.profile_for(pod.scheduler_name).scheduler_name]

    def _enabled(self, protocol: type) -> list:
        """The enabled plugins implementing ``protocol``, each name once: the instance of the first profile
        that enables it (webhooks and statuses are cluster-wide, not per profile). Cached per configuration:
        checking a runtime protocol is slow."""
        cached = self._enabled_cache.get(protocol)
        if cached is not None:
            return cached
        found: dict[str, object] = {}
        for profile in self.config.profiles:
            for name, plugin in self.frameworks[profile.scheduler_name].plugins.items():
                if name not in found and isinstance(plugin, protocol):
                    found[name] = plugin
        self._enabled_cache[protocol] = list(found.values())
        return self._enabled_cache[protocol]

    def _refused(self, event: InboxEvent, name: str, out: Outputs) -> bool:
        """Run the object webhooks of ``event.kind``; a refusal becomes a DeadLetter (the state stays)."""
        record = None if event.deleted else dict(event.record)
        for admission in self.admissions.get(event.kind, ()):
            reason = admission.admit(event.kind, name, record, self.cluster)
            if reason is not None:
                out.dead_letter(reason)
                return True
        return False

    def _observe(self, change: object) -> None:
        for framework in self.frameworks.values():
            framework.observe(change)

    # -- the transition ------------------------------------------------------------

    def handle(self, event: InboxEvent) -> list[tuple[str, dict]]:
        """Apply one event; return the (schema name, record) outputs it causes."""
        cause = event.causation
        source = cause.seen_key
        if self.source_offsets.get(source, -1) >= cause.source_offset:
            return []
        self.source_offsets[source] = cause.source_offset
        self._dirty.add(f"source/{source}")
        self._dirty.add("meta")
        now = event.timestamp_ms
        if event.kind == "Tick" and event.record is not None:
            now = max(now, int(event.record.get("timestamp") or 0))
        self.cluster.now_ms = max(self.cluster.now_ms, now)
        out = Outputs(self, event)
        handler = {
            "Node": self._on_node, "NodeResource": self._on_node_resource, "Pod": self._on_pod,
            "NodeUsage": self._on_usage, "ElasticQuota": self._on_quota, "ElasticQuotaProfile": self._on_profile,
            "KubeSchedulerConfiguration": self._on_config, "DeschedulerConfiguration": self._on_descheduler_config,
            "PodMigrationJob": self._on_migration_job,
        }.get(event.kind)
        if handler is None and event.kind in self.watched:
            handler = self._on_object
        if handler is not None:
            handler(event, out)
        self._expire_waiting(out)
        self._refresh_object_pods(out)
        self._retry(out)
        out.flush_waiting()
        self._deschedule(out)
        self._emit_statuses(out)
        self._refresh_object_pods(out)
        for source in self._enabled(ObjectStatuses):
            out.items.extend(source.object_outputs())
        return out.items

    # -- nodes ---------------------------------------------------------------------

    def _node_object(self, name: str) -> NodeObject:
        record = self.node_records[name]
        meta = record.get("metadata") or {}
        allocatable = dict(record.get("allocatable") or {})
        overlay = self.node_resources.get(name)
        if overlay:
            allocatable.update(overlay.get("allocatable") or {})
        labels = dict(meta.get("labels") or {})
        for kind, plugin in self.node_overlays.items():
            overlaid = self.cluster.objects.get(kind, {}).get(name)
            if overlaid is not None:
                extra_allocatable, extra_labels = plugin.overlay_node(kind, overlaid)
                allocatable.update(extra_allocatable)
                labels.update(extra_labels)
        images = tuple((tuple(image.get("names") or ()), image.get("sizeBytes") or 0)
                       for image in record.get("images") or ())
        return NodeObject(name, labels, dict(meta.get("annotations") or {}),
                          tuple(record.get("taints") or ()), bool(record.get("unschedulable")), allocatable, images)

    def _put_node(self, name: str) -> tuple[NodeObject | None, NodeObject]:
        cluster = self.cluster
        old = cluster.nodes.get(name)
        new = self._node_object(name)
        is_new = old is None
        cluster.nodes[name] = new
        cluster.columns.upsert(name, new.allocatable, new.unschedulable)
        if is_new or old.labels != new.labels:
            cluster.labels_version += 1
        if is_new or old.taints != new.taints:
            cluster.taints_version += 1
        if is_new:
            for key in sorted(cluster.pods_on_node.get(name, ())):
                pod = cluster.pods[key]
                cluster.columns.add_pod(name, pod.requests, pod.nonzero_requests())
        return old, new

    def _on_node(self, event: InboxEvent, out: Outputs) -> None:
        name = event.key
        cluster = self.cluster
        self._dirty.add(f"node/{name}")
        if event.deleted:
            if name not in self.node_records:
                return
            del self.node_records[name]
            old = cluster.nodes.pop(name)
            _, moved = cluster.columns.remove(name)
            cluster.labels_version += 1
            cluster.taints_version += 1
            if moved:
                self._dirty.add(f"node/{moved}")
            self._observe(NodeChanged(name, old, None, moved))
            return
        self.node_records[name] = dict(event.record)
        old, new = self._put_node(name)
        self._observe(NodeChanged(name, old, new))
        self._queue_event(ClusterEvent(NODE, action_of(old is not None, False), name))

    def _on_node_resource(self, event: InboxEvent, out: Outputs) -> None:
        name = event.record.get("nodeName") if event.record else event.key
        name = name or event.key
        self._dirty.add(f"noderesource/{name}")
        if event.deleted:
            self.node_resources.pop(name, None)
        else:
            self.node_resources[name] = {"allocatable": dict(event.record.get("allocatable") or {})}
        if name in self.node_records:
            old, new = self._put_node(name)
            self._observe(NodeChanged(name, old, new))
            self._queue_event(ClusterEvent(NODE, action_of(old is not None, False), name))

    def _on_usage(self, event: InboxEvent, out: Outputs) -> None:
        """A node's NodeUsage (what the node aggregate sends of its NodeMetric), kept as its usage fields."""
        name = event.key
        self._dirty.add(f"metric/{name}")
        existed = name in self.cluster.metrics
        deleted = event.deleted or event.record["deleted"]
        if deleted:
            self.cluster.metrics.pop(name, None)
        else:
            self.cluster.metrics[name] = {field: event.record[field] for field in USAGE_FIELDS}
        self._observe(MetricChanged(name, self.cluster.metrics.get(name)))
        self._queue_event(ClusterEvent(NODE_USAGE, action_of(existed, deleted), name))

    # -- quotas --------------------------------------------------------------------

    def _on_quota(self, event: InboxEvent, out: Outputs) -> None:
        cluster = self.cluster
        if event.deleted:
            name = event.key.partition("/")[2] or event.key
            if name not in cluster.quotas:
                if event.key in cluster.profiles:
                    self._on_profile(event, out)
                return
        else:
            name = event.record["metadata"]["name"]
        if self._refused(event, name, out):
            return
        existed = name in cluster.quotas
        if event.deleted:
            del cluster.quotas[name]
        else:
            cluster.quotas[name] = dict(event.record)
        self._dirty.add(f"quota/{name}")
        self._observe(QuotaObjectsChanged())
        self._queue_event(ClusterEvent(QUOTA, action_of(existed, event.deleted), name))

    def _on_profile(self, event: InboxEvent, out: Outputs) -> None:
        cluster = self.cluster
        key = event.key
        self._dirty.add(f"profile/{key}")
        existed = key in cluster.profiles
        if event.deleted:
            if cluster.profiles.pop(key, None) is None:
                return
        else:
            if self._refused(event, key, out):
                return
            cluster.profiles[key] = dict(event.record)
        self._observe(QuotaObjectsChanged())
        self._queue_event(ClusterEvent(QUOTA, action_of(existed, event.deleted), key))

    # -- configuration -------------------------------------------------------------

    def _on_config(self, event: InboxEvent, out: Outputs) -> None:
        descheduler = self.descheduling.record
        if event.deleted and descheduler is not None and descheduler["metadata"]["name"] == event.key:
            self._on_descheduler_config(event, out)
            return
        try:
            config = (scheduler_config.default_config() if event.deleted
                      else scheduler_config.parse_manifest(event.record["manifest"]))
            self._build_frameworks(config)
        except (scheduler_config.ConfigError, ArgsError) as err:
            out.dead_letter(f"KubeSchedulerConfiguration {event.key} rejected: {err}")
            return
        self.config_record = None if event.deleted else dict(event.record)
        self._dirty.add("config")
        self._queue_event(CONFIGURATION_UPDATE)

    # -- quota statuses ------------------------------------------------------------

    def _emit_statuses(self, out: Outputs) -> None:
        reporters = self._enabled(StatusReporter)
        if not reporters:
            return
        plugin = reporters[0]
        now = self.cluster.now_ms
        forced = out.event.kind in ("ElasticQuota", "ElasticQuotaProfile", "KubeSchedulerConfiguration")
        if not forced and self.status_synced_at is not None and now - self.status_synced_at < STATUS_SYNC_INTERVAL_MS:
            return
        version = plugin.status_version()
        if version == self._status_version:
            return
        self._status_version = version
        seen, changed = set(), False
        for status in plugin.statuses():
            tree = status.pop("domain_tree")
            key = f"{tree}/{status['name']}"
            seen.add(key)
            if self.statuses.get(key) == status:
                continue
            self.statuses[key] = status
            self._dirty.add(f"status/{key}")
            out.quota_status(tree, status)
            changed = True
        for key in [k for k in self.statuses if k not in seen]:
            del self.statuses[key]
            self._dirty.add(f"status/{key}")
            changed = True
        if changed:
            self.status_synced_at = now
            self._dirty.add("meta")
