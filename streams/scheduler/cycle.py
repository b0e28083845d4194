"""One scheduling cycle over a profile's plugins.

``Framework`` instantiates a profile's plugins (once each, whatever the number of
extension points they serve); ``run_cycle`` runs them for one pod::

    no nodes         -> "no nodes available to schedule pods"
    PreFilter        -> Skip drops that plugin's Filter for this pod; Unschedulable is
                        remembered and the other PreFilters still run (kube-scheduler >= 1.29);
                        UnschedulableAndUnresolvable stops
    Filter           -> every node's reasons come from the first filter it fails
    PostFilter       -> when no node is left (ElasticQuota preemption)
    sample           -> the first ``nodes_to_find`` feasible nodes from ``Cluster.next_start_row`` on
                        (kube-scheduler's percentageOfNodesToScore)
    Score            -> sum of weight * score over the sampled nodes; the best node wins,
                        ties to the node whose name sorts first (kube-scheduler picks one at
                        random; determinism matters more here)
    Reserve, Permit  -> a failure unreserves and fails the cycle; Wait (the shortest timeout of the
                        plugins that said it) leaves the pod to the domain's waiting pods
    PreBind          -> the annotations the plugins write on the pod (kept while it waits) and the claims
                        they bind (``framework.VOLUME_BINDINGS``)

The failure message is kube-scheduler's ``FitError``: "0/N nodes are available: " then the
PreFilter message, or the "<count> <reason>" strings of the filters, sorted and joined by
", ", then "." and the PostFilter message in the same form. kube-scheduler's parts may end in "."
themselves (a PostFilter message is a FitError), which its events print as ".."; here each part
loses its trailing periods and the message ends with exactly one
("... preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.").

The sample is kube-scheduler's (``findNodesThatPassFilters``): it looks at the nodes in turn from where the
last cycle stopped, wrapping, until it has found ``nodes_to_find`` feasible ones, and the next cycle starts where
this one stopped (the next feasible node), so every node gets its turn. Here the filters run vectorized over every node and the
sample is then cut from their result, which is the nodes kube-scheduler's search visits when it runs in order;
the order is the domain's row order (kube-scheduler's interleaves zones), and the start row is domain state,
so a replay or a restored domain samples the same nodes. Filter counts (``filter_results``) are over every node.
"""

from __future__ import annotations

import dataclasses
import time
import types

import numpy as np

from streams.objects.podinfo import PodInfo
from streams.pluginstats import PluginStats
from streams.scheduler.config import ProfileConfig
from streams.scheduler.framework import (
    SCORED_ROWS, VOLUME_BINDINGS, Code, CycleState, Diagnosis, FilterResult, PostFilterResult, Status, Victim, clause,
    scored_rows)
from streams.scheduler.registry import REGISTRY
from streams.scheduler.state import Cluster

NO_NODES_MESSAGE = "no nodes available to schedule pods."
TOP_SCORES = 3
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


@dataclasses.dataclass(frozen=True)
class CycleResult:
    node: str | None
    message: str
    filter_results: tuple[tuple[str, str, int], ...] = ()
    """(plugin, reason, node count), sorted by plugin then reason."""
    scores: tuple[tuple[str, int, dict[str, int]], ...] = ()
    """(node, total, each plugin's weighted part) of the best nodes, best first."""
    victims: tuple[Victim, ...] = ()
    """Pods PostFilter preempted so that the pod fits ``nominated``."""
    nominated: str | None = None
    rejected_by: frozenset[str] = frozenset()
    """Plugins that rejected the pod (what a later event must concern to make a retry useful)."""
    waiting_on: tuple[str, ...] = ()
    """Permit plugins that said Wait: the pod is reserved on ``node`` but not bound."""
    wait_message: str = ""
    """What those plugins wait for (their Wait statuses' messages)."""
    wait_timeout_ms: int = 0
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    """What the PreBind plugins write on the pod."""
    volume_bindings: tuple[tuple[str, str | None], ...] = ()
    """The claims PreBind binds for the pod (``framework.VOLUME_BINDINGS``)."""


class Framework:
    """A profile's plugin instances, by extension point."""

    def __init__(self, profile: ProfileConfig, cluster: Cluster) -> None:
        self.profile = profile
        self.cluster = cluster
        self.stats = PluginStats()
        names = sorted({name for names in profile.points.values() for name in names})
        self.plugins = {name: REGISTRY[name](profile.args[name], cluster) for name in names}
        self.points = {point: [self.plugins[name] for name in names] for point, names in profile.points.items()}
        self.weights = [(self.plugins[name], profile.weights[name]) for name in profile.points["score"]]
        self.observers = [p for p in self.plugins.values() if hasattr(p, "observe")]
        self.queueing_hints = {(name, registration.event): types.MethodType(registration.hint, plugin)
                               for name, plugin in self.plugins.items()
                               for registration in getattr(plugin, "events_to_register", ()) if registration.hint}
        """(plugin, cluster event) -> the plugin's queueing hint for it, bound to this profile's instance."""

    def observe(self, change: object) -> None:
        for plugin in self.observers:
            plugin.observe(change)

    def close(self) -> None:
        for plugin in self.plugins.values():
            close = getattr(plugin, "close", None)
            if close is not None:
                close()

    def pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.points["preEnqueue"]:
            status = plugin.pre_enqueue(pod)
            if not status.ok:
                return dataclasses.replace(status, plugin=plugin.name)
        return Status()


def fit_message(count: int, reasons: dict[str, int], prefilter: str = "", postfilter: str = "") -> str:
    """kube-scheduler's ``FitError.Error()``; each part without its own trailing periods, so the message ends
    with exactly one."""
    histogram = ", ".join(sorted(f"{n} {clause(reason)}" for reason, n in reasons.items()))
    parts = [part for part in (clause(prefilter) if prefilter else histogram, clause(postfilter)) if part]
    if not parts:
        return f"0/{count} nodes are available."
    return f"0/{count} nodes are available: " + " ".join(f"{part}." for part in parts)


def nodes_to_find(percentage: int, count: int) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind``: how many feasible nodes a cycle over ``count`` nodes looks
    for, with ``percentage`` its profile's percentageOfNodesToScore::

        count < 100          -> count
        percentage == 0      -> percentage = max(50 - count // 125, 5)      (adaptive: 10 % of 5,000 nodes)
        count * percentage // 100, at least 100
    """
    if count < MIN_FEASIBLE_NODES_TO_FIND:
        return count
    if percentage == 0:
        percentage = max(50 - count // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(count * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _sample(cluster: Cluster, state: CycleState, candidates: np.ndarray, wanted: int) -> np.ndarray:
    """The first ``wanted`` candidates from row ``cluster.next_start_row`` on, wrapping. kube-scheduler's search
    stops at the next feasible node, and the next cycle starts there; with no more candidates than wanted it
    looks at every node and the start stays. Sets ``SCORED_ROWS`` when the sample does not wrap."""
    count = len(candidates)
    if int(np.count_nonzero(candidates)) <= wanted:
        return candidates
    start = cluster.next_start_row % count
    ahead = np.flatnonzero(candidates[start:])
    sample = np.zeros(count, dtype=bool)
    if len(ahead) > wanted:
        stop = start + int(ahead[wanted])
        sample[start:stop] = candidates[start:stop]
        state[SCORED_ROWS] = slice(start, stop)
    else:
        stop = int(np.flatnonzero(candidates[:start])[wanted - len(ahead)])
        sample[start:] = candidates[start:]
        sample[:stop] = candidates[:stop]
    cluster.next_start_row = stop
    return sample


def _filters(fw: Framework, state: CycleState, pod: PodInfo, skipped: set[str], count: int,
             counts: dict[tuple[str, str], int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(passing nodes, nodes failed only with Unschedulable)."""
    candidates = np.ones(count, dtype=bool)
    unresolvable = np.zeros(count, dtype=bool)
    stats = fw.stats
    for plugin in fw.points["filter"]:
        if plugin.name in skipped:
            continue
        started = time.perf_counter()
        result: FilterResult = plugin.filter(state, pod, candidates)
        if result.passed is candidates:
            stats.record(plugin.name, "filter", "Success", started)
            continue
        newly = candidates & ~result.passed
        rejected = bool(newly.any())
        stats.record(plugin.name, "filter", result.code.label if rejected else "Success", started)
        if rejected:
            if counts is not None:
                for reason, mask in result.reasons:
                    hits = int(np.count_nonzero(mask & newly))
                    if hits:
                        key = (plugin.name, reason)
                        counts[key] = counts.get(key, 0) + hits
            if result.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                unresolvable |= newly
            elif result.unresolvable is not None:
                unresolvable |= newly & result.unresolvable
            candidates = candidates & result.passed
            if not candidates.any():
                break
    return candidates, ~unresolvable & ~candidates


def run_cycle(fw: Framework, pod: PodInfo, allow_preemption: bool = True) -> CycleResult:
    cluster = fw.cluster
    names = cluster.columns.names
    count = len(names)
    if count == 0:
        return CycleResult(None, NO_NODES_MESSAGE)
    state = CycleState()
    skipped: set[str] = set()
    failed: Status | None = None
    stats = fw.stats
    for plugin in fw.points["preFilter"]:
        started = time.perf_counter()
        status = plugin.pre_filter(state, pod)
        stats.record(plugin.name, "preFilter", status.code.label, started)
        if status.code == Code.SKIP:
            skipped.add(plugin.name)
        elif not status.ok:
            status = dataclasses.replace(status, plugin=plugin.name)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                failed = status
                break
            failed = failed or status
    counts: dict[tuple[str, str], int] = {}
    if failed is not None:
        resolvable = np.full(count, failed.code == Code.UNSCHEDULABLE, dtype=bool)
        candidates = np.zeros(count, dtype=bool)
        filter_results = ((failed.plugin, failed.message, count),)
    else:
        candidates, resolvable = _filters(fw, state, pod, skipped, count, counts)
        filter_results = tuple(sorted((p, r, n) for (p, r), n in counts.items()))
        wanted = nodes_to_find(fw.profile.percentage_of_nodes_to_score, count) if fw.weights else 1
        candidates = _sample(cluster, state, candidates, wanted)
    rejected = frozenset({failed.plugin} if failed else {p for p, _ in counts})
    if not candidates.any():
        post = PostFilterResult(Status(Code.UNSCHEDULABLE))
        reasons: list[str] = []
        if allow_preemption:
            diagnosis = Diagnosis(failed, resolvable, lambda: _filters(fw, state, pod, skipped, count)[0],
                                  fit_message(count, {r: n for (_, r), n in counts.items()},
                                              failed.message if failed else ""))
            for plugin in fw.points["postFilter"]:
                started = time.perf_counter()
                post = plugin.post_filter(state, pod, diagnosis)
                stats.record(plugin.name, "postFilter", post.status.code.label, started)
                if post.status.code == Code.SUCCESS:
                    break
                reasons.extend(reason for reason in post.status.reasons if reason not in reasons)
                if post.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    break
        if post.status.code == Code.SUCCESS and post.victims:
            return CycleResult(None, "", filter_results, (), post.victims, post.nominated_node, rejected)
        message = fit_message(count, {r: n for (_, r), n in counts.items()},
                              failed.message if failed else "", ", ".join(reasons))
        return CycleResult(None, message, filter_results, rejected_by=rejected)
    rows = scored_rows(state, candidates)
    total = np.zeros(rows.stop - rows.start, dtype=np.int64)
    parts: list[tuple[str, np.ndarray | int, int]] = []
    for plugin, weight in fw.weights:
        started = time.perf_counter()
        scores = plugin.score(state, pod, candidates)
        if isinstance(scores, np.ndarray):
            total += scores[rows] * weight if weight != 1 else scores[rows]
            parts.append((plugin.name, scores, weight))
        elif scores:
            total += scores * weight
            parts.append((plugin.name, scores, weight))
        stats.record(plugin.name, "score", "Success", started)
    keyed = total * (count + 1)
    keyed += cluster.columns.name_rank()[rows]
    keyed[~candidates[rows]] = -1
    best = []
    for _ in range(min(TOP_SCORES, len(keyed))):
        index = int(np.argmax(keyed))
        if keyed[index] < 0:
            break
        best.append(index)
        keyed[index] = -1
    scores = tuple((names[rows.start + i], int(total[i]), _by_plugin(parts, rows.start + i)) for i in best)
    node = names[rows.start + best[0]]
    for index, plugin in enumerate(fw.points["reserve"]):
        started = time.perf_counter()
        status = plugin.reserve(state, pod, node)
        stats.record(plugin.name, "reserve", status.code.label, started)
        if not status.ok:
            for done in reversed(fw.points["reserve"][: index + 1]):
                done.unreserve(state, pod, node)
            return CycleResult(None, fit_message(count, {}, status.message or "reserve failed"), filter_results,
                               scores, rejected_by=frozenset({plugin.name}))
    waiting_on: list[str] = []
    waiting_for: list[str] = []
    timeout_ms = 0
    for plugin in fw.points["permit"]:
        started = time.perf_counter()
        status, timeout = plugin.permit(state, pod, node)
        stats.record(plugin.name, "permit", status.code.label, started)
        if status.code == Code.WAIT:
            timeout_ms = timeout if not waiting_on else min(timeout_ms, timeout)
            waiting_on.append(plugin.name)
            waiting_for.extend(status.reasons)
        elif status.code != Code.SUCCESS:
            unreserve(fw, state, pod, node)
            return CycleResult(None, fit_message(count, {}, status.message or "rejected by permit"), filter_results,
                               scores, rejected_by=frozenset({plugin.name}))
    annotations: dict[str, str] = {}
    for plugin in fw.points["preBind"]:
        started = time.perf_counter()
        annotations.update(plugin.pre_bind(state, pod, node))
        stats.record(plugin.name, "preBind", "Success", started)
    return CycleResult(node, "", filter_results, scores, waiting_on=tuple(waiting_on), wait_timeout_ms=timeout_ms,
                       annotations=annotations, wait_message="; ".join(waiting_for),
                       volume_bindings=tuple(state.get(VOLUME_BINDINGS, ())))


def unreserve(fw: Framework, state: CycleState, pod: PodInfo, node: str) -> None:
    """Every Reserve plugin's Unreserve, last first (a failed Permit, a rejected or timed-out waiting pod)."""
    for plugin in reversed(fw.points["reserve"]):
        plugin.unreserve(state, pod, node)


def _by_plugin(parts: list[tuple[str, np.ndarray | int, int]], index: int) -> dict[str, int]:
    """Each score plugin's weighted part of node ``index``'s total (weight x normalized score), those that gave
    it nothing left out: what ``koord explain pod`` shows of a top node's score."""
    found = {}
    for name, scores, weight in parts:
        if value := int(scores[index] if isinstance(scores, np.ndarray) else scores) * weight:
            found[name] = value
    return found
