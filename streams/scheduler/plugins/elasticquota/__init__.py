"""ElasticQuota: hierarchical elastic quotas (Koordinator ``pkg/scheduler/plugins/elasticquota``).

| module | what |
| --- | --- |
| ``calculator`` | the runtime split of one parent over its children (weighted, largest remainder) |
| ``tree`` | quota trees: accounting of pod requests and usage, runtime quotas, min scaling |
| ``objects`` | validation of quotas (Koordinator's webhook rules), profiles (pod -> quota: ``streams.quotas``) |
| ``webhook`` | the validating (quota and profile changes) and mutating (tree affinity) webhooks |
| ``args`` | the plugin's args and Koordinator's defaults |
| ``plugin`` | the scheduler plugin: PreFilter checks, PostFilter preemption, statuses |
"""

from streams.scheduler.plugins.elasticquota.args import NAME, ElasticQuotaArgs
from streams.scheduler.plugins.elasticquota.plugin import ElasticQuota

__all__ = ["NAME", "ElasticQuota", "ElasticQuotaArgs"]
