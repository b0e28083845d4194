"""The annotations Koordinator defines on pods, nodes and quotas (``apis/extension``, ``apis/slo``)."""

from __future__ import annotations

from streams.koordinator.labels import QUOTA_PREFIX

ANNOTATION_CPU_QOS = "koordinator.sh/cpuQOS"
"""``CPUQOSCfg`` JSON (``{"enable": true, "groupIdentity": -1}``); overrides the class only for LS pods."""
ANNOTATION_CPU_BURST = "koordinator.sh/cpuBurst"
"""``CPUBurstConfig`` JSON merged over the node's cpu-burst strategy."""
ANNOTATION_NETWORK_QOS = "koordinator.sh/networkQOS"
"""``{"ingressLimit": "<bits>", "egressLimit": "<bits>"}``: the pod's own bandwidth limits."""
ANNOTATION_RESCTRL = "node.koordinator.sh/resctrl"
"""``ResctrlConfig`` JSON (``{"llc": {"schemata": {"range": [a, b]}}, "mb": {"schemata": {"percent": p}}}``):
the pod gets its own resctrl group instead of its class's."""
ANNOTATION_EVICTION_POLICY = "koordinator.sh/eviction-policy"
ANNOTATION_EVICTION_PRIORITY = "koordinator.sh/eviction-priority"
ANNOTATION_RESOURCE_STATUS = "scheduling.koordinator.sh/resource-status"
"""The pod's NUMA placement (``numaNodeResources[].node``)."""

ANNOTATION_CUSTOM_USAGE_THRESHOLDS = "scheduling.koordinator.sh/usage-thresholds"
"""Node: load-aware usage thresholds that replace the plugin's."""
ANNOTATION_LOAD_ESTIMATED_SCALING_FACTORS = "scheduling.koordinator.sh/load-estimated-scaling-factors"
ANNOTATION_LOAD_ESTIMATED_SECONDS_AFTER_SCHEDULED = \
    "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"
ANNOTATION_LOAD_ESTIMATED_SECONDS_AFTER_INITIALIZED = \
    "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"

ANNOTATION_COLOCATION_STRATEGY = "node.koordinator.sh/colocation-strategy"
"""Node: ``ColocationStrategy`` JSON overlaid on the node's strategy."""
ANNOTATION_NODE_RESERVATION = "node.koordinator.sh/reservation"
ANNOTATION_CPU_BASIC_INFO = "node.koordinator.sh/cpu-basic-info"
ANNOTATION_CPU_TOPOLOGY = "node.koordinator.sh/cpu-topology"
ANNOTATION_THIRD_PARTY_ALLOCATIONS = "node.koordinator.sh/thirdPartyAllocations"
ANNOTATION_RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"
ANNOTATION_CPU_NORMALIZATION_RATIO = "node.koordinator.sh/cpu-normalization-ratio"
ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE = "node.koordinator.sh/originExtendedAllocatable"

ANNOTATION_QUOTA_SHARED_WEIGHT = QUOTA_PREFIX + "shared-weight"
ANNOTATION_QUOTA_NAMESPACES = QUOTA_PREFIX + "namespaces"
ANNOTATION_QUOTA_TOTAL_RESOURCE = QUOTA_PREFIX + "total-resource"
ANNOTATION_QUOTA_RESOURCE_KEYS = QUOTA_PREFIX + "resource-keys"
ANNOTATION_QUOTA_RUNTIME = QUOTA_PREFIX + "runtime"
"""ElasticQuota: the runtime quota the scheduler computed, a resource list as JSON."""
ANNOTATION_QUOTA_REQUEST = QUOTA_PREFIX + "request"
"""ElasticQuota: the request the scheduler computed for it, a resource list as JSON."""

ANNOTATION_EVICTION_COST = "scheduling.koordinator.sh/eviction-cost"
"""Descheduler: a pod's eviction cost (int32); higher is evicted later, MaxInt32 never (``extension.GetEvictionCost``)."""
ANNOTATION_POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
"""Kubernetes' ReplicaSet deletion cost (int32), which the descheduler's pod order also reads."""
ANNOTATION_DESCHEDULER_EVICT = "descheduler.alpha.kubernetes.io/evict"
"""A pod carrying it passes every evictor filter."""
ANNOTATION_KUBE_MIRROR = "kubernetes.io/config.mirror"
"""A mirror pod (the API server's copy of a static pod): never evicted by the descheduler."""
ANNOTATION_EVICT_REASON = "koordinator.sh/evict-reason"
"""On a PodMigrationJob: why the pod is moved (LowNodeLoad's "node is overutilized, ...")."""
ANNOTATION_EVICT_TRIGGER = "koordinator.sh/evict-trigger"
"""On a PodMigrationJob: the descheduler plugin that asked for it."""
