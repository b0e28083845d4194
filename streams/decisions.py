"""What a SchedulingDecision copies from its pod, so the node aggregate learns it without the manifest.

The scheduler writes, and the node aggregate and node-QoS plan read, exactly these keys: the pod labels
node QoS reads (``LABELS``), its annotations (``ANNOTATIONS``), and the pod's
``scheduling.koordinator.sh/resource-status`` (its NUMA placement, which the NUMA-level batch calculation
reads, and its pinned cpuset, which the CPUSet and CPUSuppress strategies read), passed through when the pod
has one (``DECISION_ANNOTATIONS``). Faust-free: the scheduler, the node aggregate and node QoS import it.
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.koordinator.annotations import (
    ANNOTATION_CPU_BURST, ANNOTATION_CPU_QOS, ANNOTATION_EVICTION_POLICY, ANNOTATION_EVICTION_PRIORITY,
    ANNOTATION_NETWORK_QOS, ANNOTATION_RESCTRL, ANNOTATION_RESOURCE_STATUS)
from streams.koordinator.labels import (
    LABEL_CORE_SCHED_GROUP, LABEL_CORE_SCHED_GROUP_ID, LABEL_CORE_SCHED_POLICY, LABEL_POD_EVICTION_ENABLED,
    LABEL_POD_QOS, LABEL_POD_SUB_PRIORITY)

LABELS = (LABEL_POD_QOS, LABEL_CORE_SCHED_GROUP_ID, LABEL_CORE_SCHED_GROUP, LABEL_CORE_SCHED_POLICY,
          LABEL_POD_SUB_PRIORITY, LABEL_POD_EVICTION_ENABLED)
ANNOTATIONS = (ANNOTATION_CPU_QOS, ANNOTATION_CPU_BURST, ANNOTATION_NETWORK_QOS, ANNOTATION_RESCTRL,
               ANNOTATION_EVICTION_POLICY, ANNOTATION_EVICTION_PRIORITY)
DECISION_ANNOTATIONS = (*ANNOTATIONS, ANNOTATION_RESOURCE_STATUS)


def written_on_bind(annotations: Mapping[str, str] | None) -> dict[str, str]:
    """The annotations a placing decision writes on its pod (what the PreBind plugins decided:
    resource-status, device-allocated, reservation-allocated, ...): all it carries but those copied from
    the pod (``ANNOTATIONS``), which the pod itself holds, perhaps newer."""
    return {key: value for key, value in (annotations or {}).items() if key not in ANNOTATIONS}


def selected(values: Mapping[str, str] | None, keys: tuple[str, ...]) -> dict[str, str]:
    """The entries of ``values`` under ``keys`` (what a SchedulingDecision carries)."""
    return {key: values[key] for key in keys if values and key in values}
