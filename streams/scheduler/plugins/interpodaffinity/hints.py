"""InterPodAffinity's queueing hints (kube-scheduler ``isSchedulableAfterPodChange`` /
``isSchedulableAfterNodeChange``): whether a cluster event may make a pod this plugin rejected schedulable.

An assigned pod (``node_name`` set) added, relabelled or deleted::

    a pod without a node, before or after          -> QueueSkip
    relabelled: did not match all of p's affinity terms and now does,
                or matched all of p's anti-affinity terms and no longer does  -> Queue
    added:      matches all of p's affinity terms  -> Queue
    deleted:    matched all of p's anti-affinity terms -> Queue
    otherwise                                      -> QueueSkip

A node added or updated, for each topology key k of p's terms::

    affinity term:       added with k; or k appears; or k's value changes   -> Queue
    anti-affinity term:  added (any node); or k disappears; or k's value changes -> Queue
    otherwise                                                                -> QueueSkip
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.objects.podinfo import PodInfo
from streams.scheduler.plugins.interpodaffinity.filtering import NamespaceLabels, matches_all
from streams.scheduler.plugins.interpodaffinity.terms import PodTerms


def pod_change_may_help(terms: PodTerms, old: PodInfo | None, new: PodInfo | None,
                        namespace_labels: NamespaceLabels) -> bool:
    if (new is not None and not new.node_name) or (old is not None and not old.node_name):
        return False
    affinity, anti = terms.required_affinity, terms.required_anti_affinity

    def all_of(pod_terms, pod: PodInfo) -> bool:
        return matches_all(pod_terms, pod.namespace, pod.labels, namespace_labels)

    if old is not None and new is not None:
        return (not all_of(affinity, old) and all_of(affinity, new)) or (all_of(anti, old) and not all_of(anti, new))
    if new is not None:
        return all_of(affinity, new)
    return old is not None and all_of(anti, old)


def node_change_may_help(terms: PodTerms, old: Mapping[str, str] | None, new: Mapping[str, str]) -> bool:
    """``old``: the node's labels before (None when the node was added)."""
    for term in terms.required_affinity:
        key = term.topology_key
        if key in new and (old is None or key not in old or old[key] != new[key]):
            return True
    for term in terms.required_anti_affinity:
        key = term.topology_key
        if old is None or (key in old and (key not in new or old[key] != new[key])):
            return True
    return False
