"""Scheduling domains: which domain each scheduling-bound event goes to (the domain router's pure core).

A *scheduling domain* is one serial decision stream (``streams.scheduler.domain``) with its own nodes,
pods and quota tree, keyed on the scheduling inbox by its name. Following the v1.4 article's multi quota
tree, every ElasticQuotaProfile's tree is a domain named after its ``quotaTreeId``; everything else is
the ``default`` domain. The domains share nothing, so Kafka's group protocol can spread their inbox
partitions over any number of workers.

The domain router reads its own ordered inbox (``inbox-routing``, one :class:`DomainTable` per
partition) and the pods, and keeps, from them alone, the table it routes by:

- **profiles and quotas** come to every partition: a pod's domain is the tree of its quota
  (``GetQuotaName``, ``streams.quotas.quota_name``), or of the profile that builds it;
- **nodes** come to the partition of their name, with everything about a node (NodeUsage,
  NodeResource, Device, NodeResourceTopology, CSINode): a node belongs to the domain of the one profile whose
  ``nodeSelector`` it matches, else to ``default``. A node two profiles select is refused (dead
  letter, the previous route stays). A node whose labels move it leaves its old domain (a deletion)
  and joins the new one with the same event. A profile that arrives after its nodes moves none of
  them: each follows at its next Node event;
- **pods** are read from their source topic, partition p by the table of partition p
  (``routing.DOMAIN_ROUTER_SOURCES``; those the router forwarded here before come to the partition of their
  key); a pod stays in the domain it was first routed to until it is deleted (its deletion goes there too),
  even if its quota later moves to another tree;
- **partition 0** holds what every domain needs: KubeSchedulerConfigurations, PodGroups,
  PodDisruptionBudgets, PersistentVolumes, PersistentVolumeClaims, StorageClasses and ticks go to every domain, and a domain that appears (a profile with a new
  tree) first gets the stored ones, in source order. It also sends the profiles and quotas to their
  tree's domain, and Reservations and PodMigrationJobs to ``default``.

The table decides from its inbox and its pods only. A pod's forward names the last routing-inbox record the
table applied before it (``routed_after``), so a partition's routes replay exactly (``streams.replay.routes``);
the scheduling domains deduplicate re-forwarded events by source offset as before, since forwards keep their
source.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from streams.events import InboxEvent
from streams.koordinator.labels import LABEL_QUOTA_TREE_ID
from streams.quotas import DEFAULT_TREE, profile_spec, quota_name, specs_of
from streams.routing import DEFAULT_DOMAIN

DIRECTORY_PARTITION = 0
"""The routing partition that holds and sends what every domain needs."""
EVERY_DOMAIN = ("KubeSchedulerConfiguration", "PodGroup", "PodDisruptionBudget", "PersistentVolume",
                "PersistentVolumeClaim", "StorageClass")
"""Kinds every domain gets; stored so that a new domain gets them too."""
DEFAULT_ONLY = ("Reservation", "PodMigrationJob")
"""Kinds only the default domain reads (a Reservation's pod and a job's pod are not routed by quota)."""
NODE_KINDS = ("Node", "NodeUsage", "NodeResource", "Device", "NodeResourceTopology", "CSINode")
"""Kinds keyed by node name that go to the node's domain."""
QUOTA_KINDS = ("ElasticQuota", "ElasticQuotaProfile")


@dataclasses.dataclass(frozen=True)
class Forward:
    """Send the event to ``domain``; ``deleted`` sends a deletion of its object instead (a node moving out),
    ``ack`` keeps the event's request for an Ack (at most one copy of an event carries it)."""

    domain: str
    ack: bool = False
    deleted: bool = False


@dataclasses.dataclass(frozen=True)
class Stored:
    """An every-domain object a new domain must get: its forwarded envelope and where it came from."""

    source: tuple[str, int, int]
    envelope: dict | str
    """The InboxEvent envelope without the Ack request, as ``domainrouter.Envelope.stored`` keeps it (base64
    in entries written before); ``domainrouter.stored_envelope`` encodes it again."""


@dataclasses.dataclass(frozen=True)
class Routed:
    """What one inbox event becomes: its forwards, the stored objects to send to new domains first, and
    a dead letter's reason (the event goes nowhere)."""

    forwards: tuple[Forward, ...] = ()
    catch_up: tuple[tuple[str, Stored], ...] = ()
    """(new domain, stored object), to send before ``forwards``."""
    refused: str | None = None


class DomainTable:
    """One routing-inbox partition's table: profiles, quotas, its nodes' and pods' domains, and on
    partition 0 the every-domain objects. Persisted as flat entries (``take_changes``)."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.profiles: dict[str, dict] = {}
        """Profile key -> {"tree": tree id, "selector": nodeSelector, "quota": quota name}."""
        self.quotas: dict[str, dict] = {}
        """Quota key -> the ElasticQuota record's metadata (what ``quota_name`` reads)."""
        self.nodes: dict[str, str] = {}
        """Node name -> domain, for the nodes of this partition."""
        self.pods: dict[str, str] = {}
        """Pod key -> domain, for the pods of this partition."""
        self.stored: dict[str, Stored] = {}
        """Kind/key -> every-domain object (partition 0)."""
        self.source_offsets: dict[str, int] = {}
        """Source partition -> the highest offset routed: a re-forwarded event is not routed again."""
        self.at: dict[str, int] = {"inbox": -1}
        """``inbox`` -> the offset of the last routing-inbox record applied (-1: none yet): where a pod read from
        its source topic was routed (``routed_after``). Unknown in a table restored from entries written before
        it was kept."""
        self._specs = None
        self._dirty: set[str] = set()
        self._groups: dict[str, dict] = {"profile": self.profiles, "quota": self.quotas, "node": self.nodes,
                                         "pod": self.pods, "stored": self.stored, "source": self.source_offsets,
                                         "at": self.at}
        """Entry group -> its map: an entry's key is ``group/name``."""

    # -- persistence ---------------------------------------------------------------

    @classmethod
    def restore(cls, partition: int, entries: Mapping[str, object]) -> "DomainTable":
        table = cls(partition)
        if entries:
            table.at.clear()
        maps = table._groups
        for key, value in entries.items():
            group, _, name = key.partition("/")
            if group == "stored":
                value = Stored((value[0], value[1], value[2]), value[3])
            maps[group][name] = value
        return table

    def take_changes(self) -> dict[str, object]:
        """Entries changed since the last call (None = removed)."""
        maps, changes = self._groups, {}
        for key in sorted(self._dirty):
            group, _, name = key.partition("/")
            value = maps[group].get(name)
            if isinstance(value, Stored):
                value = [*value.source, value.envelope]
            changes[key] = value
        self._dirty = set()
        return changes

    def _set(self, group: str, name: str, value) -> None:
        target = self._groups[group]
        if value is None:
            target.pop(name, None)
        else:
            target[name] = value
        self._dirty.add(f"{group}/{name}")

    # -- the table -----------------------------------------------------------------

    @property
    def routed_after(self) -> int | None:
        """The offset of the last routing-inbox record applied (-1: none): what a forward of a record read from
        its source topic names (``Causation.routed_after``), so that a replay applies it at the same point.
        None while unknown (a table kept before this was, until its next routing-inbox record): such a forward
        names no point, and the replay leaves it out rather than apply it at a wrong one."""
        return self.at.get("inbox")

    def domains(self) -> list[str]:
        """Every domain, sorted: ``default`` and each profile's tree."""
        return sorted({DEFAULT_DOMAIN} | {domain_of_tree(p["tree"]) for p in self.profiles.values()})

    def pod_domain(self, record: Mapping) -> str:
        """The domain of a pod's quota tree (``quota_name`` and the tree of that quota)."""
        if self._specs is None:
            self._specs = specs_of(self._quota_records())
        meta = record["metadata"]
        spec = self._specs.get(quota_name(meta.get("labels") or {}, meta.get("namespace") or "default", self._specs))
        return domain_of_tree(spec.tree_id if spec else DEFAULT_TREE)

    def _quota_records(self) -> dict[str, dict]:
        """The quotas by name, with each profile's quota in its profile's tree (the profile controller's label)."""
        records = {meta["name"]: {"metadata": meta} for meta in self.quotas.values()}
        for key in sorted(self.profiles):
            profile = self.profiles[key]
            name = profile["quota"]
            if name:
                meta = dict(records.get(name, {}).get("metadata") or {"name": name, "namespace": profile["namespace"]})
                meta["labels"] = {**(meta.get("labels") or {}), LABEL_QUOTA_TREE_ID: profile["tree"]}
                records[name] = {"metadata": meta}
        return records

    def node_domain(self, name: str, labels: Mapping[str, str]) -> tuple[str | None, str | None]:
        """(domain, None) for a node with ``labels``, or (None, reason) when two profiles select it."""
        selecting = sorted(key for key, p in self.profiles.items()
                           if all(labels.get(k) == v for k, v in p["selector"].items()))
        trees = sorted({domain_of_tree(self.profiles[key]["tree"]) for key in selecting})
        if len(trees) > 1:
            return None, (f"node {name} is selected by the ElasticQuotaProfiles {', '.join(selecting)} of the "
                          f"quota trees {', '.join(trees)}; a node belongs to one scheduling domain")
        return (trees[0] if trees else DEFAULT_DOMAIN), None

    # -- the transition ------------------------------------------------------------

    def route(self, event: InboxEvent, envelope: dict | str = "") -> Routed:
        """Apply one event to the table and say where it goes. ``envelope`` (the forwarded InboxEvent without
        its Ack request, ``domainrouter.Envelope.stored``) is kept for every-domain kinds."""
        cause = event.causation
        if not cause.direct:
            self._set("at", "inbox", cause.inbox_offset)
        source = cause.seen_key
        if self.source_offsets.get(source, -1) >= cause.source_offset:
            return Routed()
        self._set("source", source, cause.source_offset)
        kind, directory = event.kind, self.partition == DIRECTORY_PARTITION
        if kind == "Tick":
            return Routed(tuple(Forward(d) for d in self.domains()))
        if kind in EVERY_DOMAIN:
            stored_key = f"{kind}:{event.key}"
            self._set("stored", stored_key, None if event.deleted else
                      Stored((cause.source_topic, cause.source_partition, cause.source_offset), envelope))
            return Routed(_to_all(self.domains(), event.ack))
        if kind in QUOTA_KINDS:
            return self._quota_event(event, directory)
        if kind in DEFAULT_ONLY:
            return Routed((Forward(DEFAULT_DOMAIN, event.ack),))
        if kind == "Pod":
            return self._pod_event(event)
        if kind == "Node":
            return self._node_event(event)
        if kind in NODE_KINDS:
            return Routed((Forward(self.nodes.get(event.key, DEFAULT_DOMAIN), event.ack),))
        return Routed((Forward(DEFAULT_DOMAIN, event.ack),))

    def _pod_event(self, event: InboxEvent) -> Routed:
        known = self.pods.get(event.key)
        if event.deleted:
            if known is not None:
                self._set("pod", event.key, None)
            return Routed((Forward(known or DEFAULT_DOMAIN, event.ack),))
        domain = known or self.pod_domain(event.record)
        if known is None:
            self._set("pod", event.key, domain)
        return Routed((Forward(domain, event.ack),))

    def _node_event(self, event: InboxEvent) -> Routed:
        name, old = event.key, self.nodes.get(event.key)
        if event.deleted:
            self._set("node", name, None)
            return Routed((Forward(old or DEFAULT_DOMAIN, event.ack),))
        domain, refused = self.node_domain(name, event.record["metadata"].get("labels") or {})
        if refused:
            return Routed(refused=refused)
        if domain != old:
            self._set("node", name, domain)
        moved = (Forward(old, deleted=True),) if old is not None and domain != old else ()
        return Routed(moved + (Forward(domain, event.ack),))

    def _quota_event(self, event: InboxEvent, directory: bool) -> Routed:
        """Both kinds come to every partition; partition 0 sends them on. A quota-topic deletion does not
        say which kind it deletes (``routing.kind_of_deletion``): it deletes whichever has the key."""
        before = self.domains()
        key, record = event.key, event.record
        old = self._owner_of(key)
        if event.deleted:
            self._set("profile", key, None)
            self._set("quota", key, None)
        elif event.kind == "ElasticQuotaProfile":
            self._set("profile", key, {"tree": record.get("quotaTreeId") or "",
                                       "selector": dict(record.get("nodeSelector") or {}),
                                       "quota": profile_spec(record).get("quotaName") or "",
                                       "namespace": record["metadata"].get("namespace") or ""})
        else:
            self._set("quota", key, dict(record["metadata"]))
        self._specs = None
        if not directory:
            return Routed()
        new = self._owner_of(key) if not event.deleted else old
        forwards = (Forward(old, deleted=True),) if old is not None and new != old and not event.deleted else ()
        added = [d for d in self.domains() if d not in before]
        catch_up = tuple((domain, stored) for domain in added
                         for stored in sorted(self.stored.values(), key=lambda s: s.source))
        return Routed(forwards + (Forward(new or DEFAULT_DOMAIN, event.ack),), catch_up)

    def _owner_of(self, key: str) -> str | None:
        """The domain of a profile or quota key as the table has it now (None when unknown)."""
        if key in self.profiles:
            return domain_of_tree(self.profiles[key]["tree"])
        if key in self.quotas:
            labels = self.quotas[key].get("labels") or {}
            tree = labels.get(LABEL_QUOTA_TREE_ID)
            if tree is None:
                name = self.quotas[key]["name"]
                tree = next((p["tree"] for _, p in sorted(self.profiles.items()) if p["quota"] == name), DEFAULT_TREE)
            return domain_of_tree(tree)
        return None


def domain_of_tree(tree_id: str) -> str:
    """A quota tree's domain: the tree id, or ``default`` for the default tree."""
    return tree_id or DEFAULT_DOMAIN


def _to_all(domains: list[str], ack: bool) -> tuple[Forward, ...]:
    """One forward per domain; the default domain's copy carries the Ack request."""
    return tuple(Forward(d, ack and d == DEFAULT_DOMAIN) for d in domains)
