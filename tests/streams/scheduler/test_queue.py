"""The queue moves a rejected pod on an event a plugin that rejected it registered, when that plugin's queueing
hint says the event may help; an event no plugin registers moves every pod."""

from streams.scheduler.framework import ADD, UPDATE, ClusterEvent
from streams.scheduler.queue import SchedulingQueue

USAGE_UPDATE = ClusterEvent("NodeUsage", UPDATE)


def rejected(by: str) -> SchedulingQueue:
    q = SchedulingQueue({USAGE_UPDATE: frozenset({"LoadAware"}), ClusterEvent("Node", ADD): frozenset({"Fit"})})
    q.add("default/p", 0, 1)
    q.failed("default/p", 0, frozenset({by}))
    return q


def test_a_hint_that_says_skip_leaves_the_pod_waiting():
    q = rejected("LoadAware")
    asked = []
    assert q.on_event(ClusterEvent("NodeUsage", UPDATE, "n1"), lambda e, k, p: asked.append((e.name, k, p))) == []
    assert asked == [("n1", "default/p", "LoadAware")] and not q.pods["default/p"].moved


def test_a_hint_that_says_queue_moves_the_pod():
    q = rejected("LoadAware")
    assert q.on_event(ClusterEvent("NodeUsage", UPDATE, "n1"), lambda e, k, p: True) == ["default/p"]


def test_an_event_only_other_plugins_registered_moves_nothing_and_asks_no_hint():
    q = rejected("LoadAware")
    assert q.on_event(ClusterEvent("Node", ADD, "n1"), lambda e, k, p: 1 / 0) == []


def test_an_event_nobody_registered_moves_every_pod_without_asking():
    q = rejected("LoadAware")
    assert q.on_event(ClusterEvent("KubeSchedulerConfiguration", UPDATE), lambda e, k, p: 1 / 0) == ["default/p"]


def test_events_match_by_resource_and_action_not_by_object():
    assert ClusterEvent("NodeUsage", UPDATE, "n1") == USAGE_UPDATE
    assert ClusterEvent("NodeUsage", ADD, "n1") != USAGE_UPDATE
