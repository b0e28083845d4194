"""The registry, and the defaults that come from Koordinator and kube-scheduler, pinned."""

import pytest

from streams.scheduler import queue, registry
from streams.scheduler.framework import (
    ADD, ASSIGNED_POD, CONFIGURATION, DELETE, EXTENSION_POINTS, NODE, NODE_USAGE, QUOTA, UPDATE, ClusterEventWithHint)
from streams.scheduler.plugins.elasticquota import ElasticQuotaArgs
from streams.scheduler.plugins.loadaware import LoadAwareSchedulingArgs
from streams.scheduler.plugins.noderesourcesfitplus import NodeResourcesFitPlusArgs
from streams.scheduler.plugins.scarceresourceavoidance import ScarceResourceAvoidanceArgs


@pytest.mark.parametrize("name", sorted(registry.REGISTRY))
def test_every_plugin_is_registered_under_its_own_name_and_an_empty_config_gives_the_args_defaults(name):
    factory = registry.REGISTRY[name]
    assert factory.name == name
    assert factory.Args.from_config(None) == factory.Args.from_config({}) == factory.Args()


def test_koordinator_defaults():
    """pkg/scheduler/apis/config/v1/defaults.go; kube-scheduler's queue backoff and unschedulable flush."""
    la = LoadAwareSchedulingArgs.from_config({})
    assert (la.node_metric_expiration_seconds, dict(la.usage_thresholds), dict(la.estimated_scaling_factors),
            dict(la.resource_weights)) == (180, {"cpu": 65, "memory": 95}, {"cpu": 85, "memory": 70}, {"cpu": 1, "memory": 1})
    eq = ElasticQuotaArgs.from_config({})
    assert (eq.delay_evict_time, eq.revoke_pod_interval, eq.quota_group_namespace, eq.enable_runtime_quota,
            eq.enable_min_quota_scale, eq.disable_default_quota_preemption, eq.enable_check_parent_quota,
            eq.monitor_all_quotas) == ("120s", "1s", "koordinator-system", True, True, True, False, False)
    assert dict(eq.default_quota_group_max) == dict(eq.system_quota_group_max) == {
        "cpu": (2**63 - 1) // 5, "memory": (2**63 - 1) // 5}
    assert NodeResourcesFitPlusArgs.from_config({}).resources == ()
    assert ScarceResourceAvoidanceArgs.from_config({}).resources == ()
    q = queue.SchedulingQueue({})
    assert (q.initial_backoff_ms, q.max_backoff_ms, queue.UNSCHEDULABLE_TIMEOUT_MS) == (1000, 10_000, 300_000)


@pytest.mark.parametrize("stage, name", [(stage, name) for stage, entries in registry.DEFAULT_PLUGINS.items()
                                         for name, _ in entries])
def test_every_plugin_listed_under_a_stage_implements_that_stages_protocol(stage, name):
    """As Go's ``var _ framework.FilterPlugin = &X{}``: a plugin the default profile lists under a stage has its
    methods."""
    assert isinstance(registry.REGISTRY[name], EXTENSION_POINTS[stage])


@pytest.mark.parametrize("name", sorted(registry.REGISTRY))
def test_every_registered_event_is_one_the_domain_raises_and_hints_are_functions(name):
    raised = {NODE, ASSIGNED_POD, NODE_USAGE, QUOTA, CONFIGURATION} | registry.watched_kinds(registry.REGISTRY)
    for registration in getattr(registry.REGISTRY[name], "events_to_register", ()):
        assert isinstance(registration, ClusterEventWithHint)
        assert registration.event.resource in raised and registration.event.action in (ADD, UPDATE, DELETE)
        assert registration.hint is None or callable(registration.hint)
