"""Koordinator's ElasticQuota webhooks, run by the domain through the framework's admission hooks.

- Validating (``ObjectAdmission``): an ElasticQuota change must keep the quota rules
  (``objects.validate`` / ``objects.validate_delete`` against the quotas in force, profile-built
  ones included); an ElasticQuotaProfile may not build a quota another profile already builds.
- Mutating (``PodMutation``, the multi-quota-tree webhook): a pod of a tree gets its profile's
  nodeSelector as required node affinity, added to every term. The webhook mutates the pod once,
  at creation; the pod record here stays as applied, so the affinity is added on each event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams import quotas
from streams.objects.podinfo import PodInfo, Requirement, SelectorTerm
from streams.scheduler.plugins.elasticquota import objects
from streams.scheduler.state import Cluster

ADMITTED_KINDS = frozenset({"ElasticQuota", "ElasticQuotaProfile"})


def admit(kind: str, name: str, record: dict | None, cluster: Cluster) -> str | None:
    """The reason to refuse an ElasticQuota (``name``: the quota) or ElasticQuotaProfile (``name``: its key)
    change; None when it is admitted. ``record`` is None for a deletion."""
    if kind == "ElasticQuota":
        specs = quotas.specs_of(objects.effective_quotas(cluster.quotas, cluster.profiles, cluster.nodes.values()))
        try:
            if record is None:
                objects.validate_delete(name, specs)
            else:
                objects.validate(record, specs)
        except objects.QuotaRejected as err:
            return str(err)
        return None
    if record is None:
        return None
    quota_name = quotas.profile_spec(record).get("quotaName")
    other = next((key for key, profile in cluster.profiles.items()
                  if key != name and quotas.profile_spec(profile).get("quotaName") == quota_name), None)
    if other is not None:
        return f"quota {quota_name} is already built by ElasticQuotaProfile {other}"
    return None


def with_tree_affinity(pod: PodInfo, selector: Mapping[str, str] | None) -> PodInfo:
    """``pod`` with ``selector`` (its quota tree's profile nodeSelector) added to every required term."""
    if not selector:
        return pod
    extra = tuple(Requirement(k, "In", (v,)) for k, v in sorted(selector.items()))
    terms = pod.required_terms
    if terms:
        terms = tuple(SelectorTerm(t.match_expressions + extra, t.match_fields) for t in terms)
    else:
        terms = (SelectorTerm(extra),)
    return dataclasses.replace(pod, required_terms=terms)
