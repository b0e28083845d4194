"""PodTopologySpread (kube-scheduler v1.34): ``plugin`` (filter and score), ``constraints`` (reading a pod's
constraints and the default ones), ``counting`` (matching pods per node, kept incrementally), ``nodes`` (domains
and node inclusion policies), ``args``."""

from streams.scheduler.plugins.podtopologyspread.args import NAME, DefaultConstraint, PodTopologySpreadArgs
from streams.scheduler.plugins.podtopologyspread.plugin import (
    REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH, PodTopologySpread)

__all__ = ["NAME", "REASON_CONSTRAINTS_NOT_MATCH", "REASON_NODE_LABEL_NOT_MATCH", "DefaultConstraint",
           "PodTopologySpread", "PodTopologySpreadArgs"]
