"""The default evictor filter (``pkg/descheduler/evictions/evictions.go``), shared by LowNodeLoad and the
migration arbitration: which pods may be evicted at all.

A pod carrying ``descheduler.alpha.kubernetes.io/evict`` passes. Otherwise it is refused when it is owned
by a DaemonSet, a mirror or static pod, or terminating; when it has no owner (unless ``evictAllBarePods``,
or ``evictFailedBarePods`` and it Failed); when it is system-critical (unless ``evictSystemCriticalPods``)
or at or above ``priorityThreshold``; when it has local storage (unless ``evictLocalStoragePods``); when it
has a PVC and ``ignorePvcPods``; when ``labelSelector`` is set and does not match.
"""

from __future__ import annotations

import dataclasses

from streams.descheduler.snapshot import PodView
from streams.sloconfig.selectors import LabelSelector

REASON_DAEMONSET = "pod is a DaemonSet pod"
REASON_MIRROR = "pod is a mirror or static pod"
REASON_TERMINATING = "pod is terminating"
REASON_BARE = "pod does not have any ownerRefs"
REASON_BARE_NOT_FAILED = "pod does not have any ownerRefs and is not in failed phase"
REASON_CRITICAL = "pod has system critical priority"
REASON_PRIORITY = "pod has higher priority than specified priority class threshold"
REASON_LOCAL_STORAGE = "pod has local storage and descheduler is not configured with evictLocalStoragePods"
REASON_PVC = "pod has a PVC and descheduler is configured to ignore PVC pods"
REASON_SELECTOR = "pod labels do not match the labelSelector filter in the policy parameter"


@dataclasses.dataclass(frozen=True)
class EvictorArgs:
    evict_all_bare_pods: bool = False
    evict_failed_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    priority_threshold: int | None = None
    label_selector: LabelSelector | None = None


def refusal(pod: PodView, args: EvictorArgs) -> str | None:
    """Why ``pod`` may not be evicted, or None."""
    if pod.evict_annotated:
        return None
    if "DaemonSet" in pod.owner_kinds:
        return REASON_DAEMONSET
    if pod.mirror:
        return REASON_MIRROR
    if pod.terminating:
        return REASON_TERMINATING
    if not pod.owner_kinds and not args.evict_all_bare_pods:
        if not args.evict_failed_bare_pods:
            return REASON_BARE
        if pod.phase != "Failed":
            return REASON_BARE_NOT_FAILED
    if not args.evict_system_critical_pods:
        if pod.critical:
            return REASON_CRITICAL
        if args.priority_threshold is not None and pod.priority >= args.priority_threshold:
            return REASON_PRIORITY
    if not args.evict_local_storage_pods and pod.local_storage:
        return REASON_LOCAL_STORAGE
    if args.ignore_pvc_pods and pod.pvc:
        return REASON_PVC
    if args.label_selector is not None and not args.label_selector.matches(pod.labels):
        return REASON_SELECTOR
    return None
