"""LoadAwareScheduling (Koordinator ``pkg/scheduler/plugins/loadaware``).

| module | what |
| --- | --- |
| ``args`` | ``LoadAwareSchedulingArgs``: defaults (each defined once) and validation |
| ``estimator`` | ``estimate``: a pod's estimated usage (``DefaultEstimator``) |
| ``cache`` | ``NodeLoad``: a node's assigned pods and existing load (``pod_assign_cache.go``) |
| ``plugin`` | the scheduler plugin: thresholds, Filter and Score, vectorized over nodes |
"""

from streams.scheduler.plugins.loadaware.args import NAME, LoadAwareSchedulingArgs
from streams.scheduler.plugins.loadaware.plugin import LoadAwareScheduling

__all__ = ["NAME", "LoadAwareScheduling", "LoadAwareSchedulingArgs"]
