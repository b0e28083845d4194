import dataclasses

from streams.events import Causation, InboxEvent
from streams.replay import routes
from tests.streams.scheduler.support import deleted, node, pod, quota
from tests.streams.test_domains import TREE, profile, team_pod

ROUTING_INBOX = "koord.inbox.routing"


def on_partition(partition, offset, ev):
    """``ev`` as the domain router reads it from routing partition ``partition`` at ``offset``."""
    return ev.key, dataclasses.replace(ev, causation=dataclasses.replace(
        ev.causation, inbox_topic=ROUTING_INBOX, inbox_partition=partition, inbox_offset=offset))


def routing_events():
    """Partition 0 holds the profile and the quota (every partition gets them), partition 1 a node that
    moves out of the tree, partition 2 the pods."""
    broadcast = [profile(), quota("train", {"cpu": 1}, labels=TREE)]
    return [on_partition(p, o, e) for p in range(3) for o, e in enumerate(broadcast)] + [
        on_partition(p, o, e) for p, o, e in [
        (1, 2, node("n1", labels={"pool": "gpu"})), (1, 3, node("n1", labels={"pool": "cpu"})),
        (2, 2, team_pod("a", "train")), (2, 3, pod("b")), (2, 4, deleted("Pod", "default/a"))]]


def held(route_list):
    """Scheduling-inbox events holding ``route_list`` in order (partition 0, offsets from 0)."""
    out = []
    for offset, route in enumerate(route_list):
        topic, partition, source_offset = route.source
        cause = Causation("koord.inbox.scheduling", 0, offset, topic, partition, source_offset)
        out.append((route.domain, InboxEvent(cause, 0, "k", "Pod", None if route.empty else {})))
    return out


def made(replayed):
    return [route for _, route in replayed.routes]


def test_the_replay_routes_as_the_table_does_and_reproduces_itself():
    replayed = routes.replay(routing_events())
    assert [(r.domain, r.empty) for r in made(replayed)] == [
        ("gpu", False), ("gpu", False),  # partition 0 sends the profile and the tree's quota on
        ("gpu", False), ("gpu", True), ("default", False),  # the node joins the tree, then moves out
        ("gpu", False), ("default", False), ("gpu", True)]  # the pods; a's deletion goes to its domain
    reports = routes.compare(replayed, routes.recorded(held(made(replayed))))
    assert {d: (r.reproduced, r.ok) for d, r in reports.items()} == {"default": (2, True), "gpu": (6, True)}


def test_a_missing_or_misrouted_forward_is_reported_by_domain():
    replayed = routes.replay(routing_events())
    routed = made(replayed)
    misrouted = dataclasses.replace(routed[-1], domain="default")
    reports = routes.compare(replayed, routes.recorded(held(routed[:-1] + [misrouted])))
    assert reports["gpu"].missing == (routed[-1],)
    assert reports["default"].extra == (misrouted,)
    assert not reports["gpu"].ok and not reports["default"].ok


def test_partitions_interleave_freely_but_each_keeps_its_order():
    replayed = routes.replay(routing_events())
    by_partition = {}
    for partition, route in replayed.routes:
        by_partition.setdefault(partition, []).append(route)
    interleaved = by_partition[2] + by_partition[1] + by_partition[0]
    assert all(r.ok for r in routes.compare(replayed, routes.recorded(held(interleaved))).values())
    swapped = by_partition[0] + by_partition[1][::-1] + by_partition[2]
    assert routes.compare(replayed, routes.recorded(held(swapped)))["gpu"].out_of_order == (1,)


def test_repeated_copies_count_once_and_unread_sources_are_left_out():
    replayed = routes.replay(routing_events())
    routed = made(replayed)
    later = routes.Route("default", ("koord.pods", 0, 999))
    reports = routes.compare(replayed, routes.recorded(held(routed + routed[:3] + [later])))
    assert all(r.ok for r in reports.values())


def test_a_refused_node_is_a_dead_letter_and_goes_nowhere():
    events = [on_partition(1, 0, profile()),
              on_partition(1, 1, profile("big-pool", tree="big", quota_name="big-root", selector={"size": "big"})),
              on_partition(1, 2, node("n1", labels={"pool": "gpu", "size": "big"}))]
    replayed = routes.replay(events)
    assert (replayed.dead_letters, made(replayed), replayed.events) == (1, [], 3)


def test_one_domain_only():
    replayed = routes.replay(routing_events(), domain="gpu")
    assert {r.domain for r in made(replayed)} == {"gpu"}
    assert routes.compare(replayed, routes.recorded(held(made(routes.replay(routing_events()))), "gpu")).keys() == {"gpu"}


def _read_pod(source_offset, routed_after, domain, ev, inbox_offset):
    """The scheduling-inbox record of a pod the domain router read from ``koord.pods`` partition 2 and sent to
    ``domain`` after the routing-inbox record ``routed_after`` of partition 2."""
    cause = Causation("koord.inbox.scheduling", 0, inbox_offset, "koord.pods", 2, source_offset,
                      routed_after=routed_after)
    return domain, dataclasses.replace(ev, causation=cause)


def test_pods_read_from_their_topic_are_replayed_where_their_forwards_say_the_table_applied_them():
    """Pod a came before the quota of its tree (routing offset 1), pod b after it: a stays in default, b goes to
    the tree. The replay applies each at its point and reproduces both; a forward that claims another point
    than the one its domain came from is reported."""
    broadcast = [on_partition(2, o, e) for o, e in enumerate([profile(), quota("train", {"cpu": 1}, labels=TREE)])]
    held_pods = [_read_pod(0, 0, "default", team_pod("a", "train"), 0), _read_pod(1, 1, "gpu", team_pod("b", "train"), 1)]
    replayed = routes.replay(broadcast, held=held_pods)
    assert [(p, r.domain, r.source) for p, r in replayed.routes if r.source[0] == "koord.pods"] == [
        (2, "default", ("koord.pods", 2, 0)), (2, "gpu", ("koord.pods", 2, 1))]
    assert replayed.events == 4
    reports = routes.compare(replayed, routes.recorded(held_pods))
    assert {d: (r.reproduced, r.ok) for d, r in reports.items()} == {"default": (1, True), "gpu": (1, True)}
    claimed_late = [_read_pod(0, 1, "default", team_pod("a", "train"), 0), held_pods[1]]
    reports = routes.compare(routes.replay(broadcast, held=claimed_late), routes.recorded(claimed_late))
    assert reports["default"].extra and reports["gpu"].missing


def test_a_pod_forward_naming_no_point_is_left_out_of_the_comparison():
    """A table restored from entries written before it kept its point names none until its next routing-inbox
    record: the replay cannot place such a pod, so it neither applies nor compares it."""
    broadcast = [on_partition(2, o, e) for o, e in enumerate([profile(), quota("train", {"cpu": 1}, labels=TREE)])]
    unplaced = [_read_pod(0, None, "gpu", team_pod("a", "train"), 0)]
    replayed = routes.replay(broadcast, held=unplaced)
    assert replayed.events == 2 and ("koord.pods", 2, 0) not in replayed.sources
    reports = routes.compare(replayed, routes.recorded(unplaced))
    assert all(report.ok for report in reports.values())
