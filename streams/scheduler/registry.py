"""The scheduler's plugin registry and the default profile.

``REGISTRY`` maps each plugin name to its class (the factory: ``cls(args, cluster)``;
``cls.Args.from_config(raw)`` reads its args). It is built from one literal list so a
duplicate name raises at import.

The default profile (used until a KubeSchedulerConfiguration is applied, and the base a
configuration's enabled/disabled lists are merged into, as kube-scheduler merges its
defaults) is kube-scheduler's defaults that koordstream implements plus Koordinator's
LoadAwareScheduling and ElasticQuota, which Koordinator's own koord-scheduler profile
enables. Order within a stage:

- filter: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity first (kube-scheduler's
  order: cheap label checks whose failures preemption cannot fix), then NodePorts (host ports; a
  no-op for pods without any), NodeResourcesFit, VolumeRestrictions (inline GCE PD, AWS EBS, ISCSI and RBD
  disks; a no-op for pods without any), NodeVolumeLimits, VolumeBinding and VolumeZone (PersistentVolumeClaims;
  no-ops for pods without any), then PodTopologySpread and InterPodAffinity (kube-scheduler's
  ``getDefaultPlugins`` order, v1.34), then LoadAwareScheduling. A node reports the reasons of the first filter it fails, so the
  order decides which reason a node contributes to the message, as in kube-scheduler.
- preFilter: NodeAffinity, NodePorts, NodeResourcesFit, VolumeRestrictions (Skip for a pod without such disks),
  NodeVolumeLimits, VolumeBinding and VolumeZone (Skip for a pod without claims; a missing or unbound Immediate
  claim fails VolumeBinding's here),
  PodTopologySpread (Skip for a pod without constraints,
  its own or the system defaults of a pod a ReplicaSet, StatefulSet or ReplicationController owns),
  InterPodAffinity (counts per topology pair; Skip for a
  pod without terms when no assigned pod's anti-affinity matches it), LoadAwareScheduling compute per-pod state;
  ElasticQuota last, its check may fail the cycle.
- Reservation: PreFilter (nominates a reservation per node and counts its unallocated resources free for
  the owner), Filter after the label checks (a pod with a reservation affinity fails where none matches),
  Score (weight 5000: an owner lands on its reservation), PreBind (``reservation-allocated``).
- preEnqueue: SchedulingGates (a pod with scheduling gates waits until they are removed), then Coscheduling.
- permit, and preEnqueue after SchedulingGates: Coscheduling (gangs wait in Permit until their whole group fits; a no-op for
  pods of no gang).
- postFilter: Coscheduling first (a Strict gang's waiting members are rejected whatever preemption
  then finds; it never preempts), then ElasticQuota (preemption within the pod's own quota), then
  DefaultPreemption (kube-scheduler's priority preemption, for what the quota preemption did not find).
- score: kube-scheduler v1.34's default weights, TaintToleration 3 (PreferNoSchedule taints), NodeAffinity 2
  (preferred terms), NodeResourcesFit 1 (LeastAllocated), PodTopologySpread 2 (ScheduleAnyway constraints),
  InterPodAffinity 2 (0 everywhere unless the pod or
  an assigned pod has a pod affinity term), NodeResourcesBalancedAllocation 1, ImageLocality 1 (0 everywhere
  unless a node holds one of the pod's images); and LoadAwareScheduling 1.
  NodeResourcesFitPlus, ScarceResourceAvoidance and GPUFragmentation are registered, not enabled by default.
- reserve: LoadAwareScheduling, ElasticQuota (their bookkeeping follows the cluster; they
  never veto), DeviceShare (keeps the chosen node's device allocation for PreBind), Coscheduling (its
  Unreserve rejects a Strict gang's other waiting members).
- NodeNUMAResource: PreFilter, Filter after LoadAwareScheduling, Score (weight 1), Reserve (cpuset and NUMA
  split; it may refuse, so before DeviceShare and Coscheduling), PreBind (``resource-status``), as koord-scheduler's
  default profile enables it.
- preBind: VolumeBinding first (the claims it binds go in the decision's ``volumeBindings``), then Reservation,
  NodeNUMAResource and DeviceShare (annotations on the pod).
- VolumeBinding has no Score: kube-scheduler v1.34 scores it only with the StorageCapacityScoring feature gate.
- DeviceShare: PreFilter (validates device requests), Filter last (tries the allocation per node), Score
  (weight 1, LeastAllocated over the node's devices), PreBind (``device-allocated``), as koord-scheduler's
  default profile enables it.
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.registries import make_registry
from streams.scheduler.framework import ClusterEvent, EnqueueExtensions, NodeOverlay, ObjectAdmission, WatchesObjects
from streams.scheduler.plugins import (
    balancedallocation, defaultpreemption, gpufragmentation, imagelocality, loadaware, nodeaffinity, nodename,
    nodeports, noderesourcesfit, noderesourcesfitplus, nodeunschedulable, nodevolumelimits, podtopologyspread, scarceresourceavoidance,
    schedulinggates, tainttoleration, volumebinding, volumerestrictions, volumezone)
from streams.scheduler.plugins import (
    coscheduling, deviceshare, elasticquota, interpodaffinity, nodenumaresource, reservation)


REGISTRY: dict[str, type] = make_registry([
    (schedulinggates.NAME, schedulinggates.SchedulingGates),
    (nodeunschedulable.NAME, nodeunschedulable.NodeUnschedulable),
    (nodename.NAME, nodename.NodeName),
    (tainttoleration.NAME, tainttoleration.TaintToleration),
    (nodeaffinity.NAME, nodeaffinity.NodeAffinity),
    (nodeports.NAME, nodeports.NodePorts),
    (balancedallocation.NAME, balancedallocation.BalancedAllocation),
    (noderesourcesfit.NAME, noderesourcesfit.NodeResourcesFit),
    (volumerestrictions.NAME, volumerestrictions.VolumeRestrictions),
    (nodevolumelimits.NAME, nodevolumelimits.NodeVolumeLimits),
    (volumebinding.NAME, volumebinding.VolumeBinding),
    (volumezone.NAME, volumezone.VolumeZone),
    (imagelocality.NAME, imagelocality.ImageLocality),
    (podtopologyspread.NAME, podtopologyspread.PodTopologySpread),
    (interpodaffinity.NAME, interpodaffinity.InterPodAffinity),
    (loadaware.NAME, loadaware.LoadAwareScheduling),
    (noderesourcesfitplus.NAME, noderesourcesfitplus.NodeResourcesFitPlus),
    (scarceresourceavoidance.NAME, scarceresourceavoidance.ScarceResourceAvoidance),
    (elasticquota.NAME, elasticquota.ElasticQuota),
    (coscheduling.NAME, coscheduling.Coscheduling),
    (defaultpreemption.NAME, defaultpreemption.DefaultPreemption),
    (reservation.NAME, reservation.Reservation),
    (deviceshare.NAME, deviceshare.DeviceShare),
    (nodenumaresource.NAME, nodenumaresource.NodeNUMAResource),
    (gpufragmentation.NAME, gpufragmentation.GPUFragmentation),
], "scheduler plugin")



def plugins_by_event(registry: Mapping[str, type]) -> dict[ClusterEvent, frozenset[str]]:
    """Cluster event -> the plugins that register for it (``events_to_register``)."""
    out: dict[ClusterEvent, set[str]] = {}
    for name, factory in registry.items():
        if isinstance(factory, EnqueueExtensions):
            for registration in factory.events_to_register:
                out.setdefault(registration.event, set()).add(name)
    return {event: frozenset(names) for event, names in out.items()}


def object_admissions(registry: Mapping[str, type]) -> dict[str, tuple[type, ...]]:
    """Object kind -> the plugins that admit its changes (``ObjectAdmission``), in registry order."""
    out: dict[str, list[type]] = {}
    for factory in registry.values():
        if isinstance(factory, ObjectAdmission):
            for kind in factory.admitted_kinds:
                out.setdefault(kind, []).append(factory)
    return {kind: tuple(factories) for kind, factories in out.items()}


def node_overlays(registry: Mapping[str, type]) -> dict[str, type]:
    """Object kind -> the plugin that overlays it on its node (``NodeOverlay``), the first in registry order."""
    out: dict[str, type] = {}
    for factory in registry.values():
        if isinstance(factory, NodeOverlay):
            for kind in sorted(factory.overlay_kinds):
                out.setdefault(kind, factory)
    return out


def watched_kinds(registry: Mapping[str, type]) -> frozenset[str]:
    """Every object kind some registered plugin watches (the domain keeps them whatever the profiles enable,
    so enabling a plugin later finds its objects)."""
    return frozenset(kind for factory in registry.values() if isinstance(factory, WatchesObjects)
                     for kind in factory.watched_kinds)


DEFAULT_SCHEDULER_NAME = "default-scheduler"

RESERVATION_SCORE_WEIGHT = 5000
"""Reservation's score weight in koord-scheduler's default profile: a nominated reservation's node (100)
outweighs every other score, so an owner lands on its reservation."""

DEFAULT_PLUGINS: dict[str, tuple[tuple[str, int], ...]] = {
    "preEnqueue": ((schedulinggates.NAME, 0), (coscheduling.NAME, 0)),
    "preFilter": ((nodeaffinity.NAME, 0), (nodeports.NAME, 0), (reservation.NAME, 0), (noderesourcesfit.NAME, 0),
                  (volumerestrictions.NAME, 0), (nodevolumelimits.NAME, 0), (volumebinding.NAME, 0),
                  (volumezone.NAME, 0),
                  (podtopologyspread.NAME, 0), (interpodaffinity.NAME, 0),
                  (loadaware.NAME, 0), (nodenumaresource.NAME, 0), (deviceshare.NAME, 0), (elasticquota.NAME, 0)),
    "filter": ((nodeunschedulable.NAME, 0), (nodename.NAME, 0), (tainttoleration.NAME, 0), (nodeaffinity.NAME, 0),
               (nodeports.NAME, 0), (reservation.NAME, 0), (noderesourcesfit.NAME, 0), (volumerestrictions.NAME, 0),
               (nodevolumelimits.NAME, 0), (volumebinding.NAME, 0), (volumezone.NAME, 0), (podtopologyspread.NAME, 0), (interpodaffinity.NAME, 0), (loadaware.NAME, 0), (nodenumaresource.NAME, 0),
               (deviceshare.NAME, 0)),
    "postFilter": ((coscheduling.NAME, 0), (elasticquota.NAME, 0), (defaultpreemption.NAME, 0)),
    "score": ((tainttoleration.NAME, 3), (nodeaffinity.NAME, 2), (noderesourcesfit.NAME, 1), (podtopologyspread.NAME, 2),
              (interpodaffinity.NAME, 2), (balancedallocation.NAME, 1), (imagelocality.NAME, 1), (loadaware.NAME, 1),
              (nodenumaresource.NAME, 1), (deviceshare.NAME, 1), (reservation.NAME, RESERVATION_SCORE_WEIGHT)),
    "reserve": ((loadaware.NAME, 0), (elasticquota.NAME, 0), (nodenumaresource.NAME, 0), (deviceshare.NAME, 0),
                (coscheduling.NAME, 0)),
    "permit": ((coscheduling.NAME, 0),),
    "preBind": ((volumebinding.NAME, 0), (reservation.NAME, 0), (nodenumaresource.NAME, 0), (deviceshare.NAME, 0)),
}
"""(plugin, score weight) per extension point of the default profile."""
