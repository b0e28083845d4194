"""The quota contract the ElasticQuota plugin and the domain router share: which quota a pod belongs to."""

import json

from streams import quotas
from streams.quotas import DEFAULT
from tests.streams.scheduler.support import quota

QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"


def test_pod_quota_by_namespace_name_then_namespaces_annotation_then_default():
    specs = quotas.specs_of({
        "shop": quota("shop", {"cpu": 1}, namespace="shop").record,
        "shared": quota("shared", {"cpu": 1}, namespace="ops", annotations={
            "quota.scheduling.koordinator.sh/namespaces": json.dumps(["web", "api"])}).record,
    })
    assert quotas.quota_name({}, "shop", specs) == "shop"
    assert quotas.quota_name({}, "web", specs) == "shared"
    assert quotas.quota_name({}, "other", specs) == DEFAULT
    assert quotas.quota_name({QUOTA_LABEL: "nope"}, "shop", specs) == DEFAULT
    assert quotas.quota_name({QUOTA_LABEL: "shared"}, "shop", specs) == "shared"
