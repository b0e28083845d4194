"""A koordstream to benchmark against: a fresh broker of the chosen kind and its workers, or KOORD_BROKER.

With KOORD_BROKER unset the harness starts a broker of the kind asked for (the embedded Tansu or a local
Apache Kafka, ``streams.broker.local``) on free ports, applies the topology and runs ``workers``
``koord worker`` processes, one consumer group (logs in a temporary folder), or with ``roles`` one worker per
role (``streams.roles``: router, domains, scheduling, node, ticks; each its own group and changelogs, so each
role's CPU per event is a figure of its own), and stops both afterwards. With KOORD_BROKER set it uses that broker as it
is, of the kind ``KOORD_BROKER_KIND`` says (Kafka when unset). "Caught up" is measured with fetch high
watermarks and the worker's committed offsets, never with ListOffsets (which Tansu gets wrong).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams import kafka, roles, routing, signing, supervision
from streams.broker import local
from streams.broker.tansu_workarounds import true_highwaters
from streams.settings import Settings
from streams.topology import Topology, load_topology

READY_TIMEOUT_S = 90
STALL_TIMEOUT_S = 180.0
"""A wait for the worker gives up when the worker is behind and has committed nothing more for this long:
it is stalled, not slow. A worker commits every second (``streams.app.COMMIT_INTERVAL_S``) while it makes
progress; one batch of a large run can take tens of seconds."""


@dataclasses.dataclass
class Harness:
    bootstrap: str
    topology: Topology
    logs: Path
    broker_kind: str
    """``tansu`` or ``kafka``: the broker the figures were taken on."""
    broker_origin: str
    """``fresh`` (started for this run) or ``KOORD_BROKER`` (an existing one)."""
    workers: int | None = None
    """How many workers the harness runs; None when they are not the harness's (KOORD_BROKER)."""
    replace_worker: Callable[[float], float] | None = None
    """Stop the workers, start one new one (one per role with ``by_role``) and wait until it logs ready, at most the seconds given (its table
    recovery is part of it); returns the ``time.monotonic()`` of the start. None when the worker is not the
    harness's (KOORD_BROKER)."""
    workers_cpu_s: Callable[[], float] | None = None
    """CPU seconds (user and system, the kernel's accounting) the harness's running workers have used so far;
    the difference over a phase divided by its events is the machine-independent figure, the worker's CPU per
    event. None when the workers are not the harness's (KOORD_BROKER)."""
    workers_cpu_by_role: Callable[[], dict[str, float]] | None = None
    """As ``workers_cpu_s``, per role, when the harness runs one worker per role; else None."""

    def group(self, topic: str) -> str:
        """The consumer group that commits ``topic`` (a topic name): the app id's, or with one worker per role
        the group of the role that reads it."""
        if self.workers_cpu_by_role is None:
            return self.topology.app_id
        [topic_id] = [spec.id for spec in self.topology.topics if spec.name == topic]
        return roles.role(roles.reader(topic_id)).app_id(self.topology)

    def describe(self) -> str:
        if self.broker_origin == "fresh":
            return f"fresh {self.broker_kind} broker at {self.bootstrap}"
        return f"KOORD_BROKER {self.bootstrap} ({self.broker_kind})"


@contextlib.contextmanager
def running(broker_kind: str, settings: Settings | None = None, workers: int = 1,
            by_role: bool = False) -> Iterator[Harness]:
    """A broker and ``workers`` workers to benchmark, or with ``by_role`` one worker per role; ``broker_kind``
    is ignored when KOORD_BROKER is set."""
    settings = settings or Settings.from_env()
    topology = load_topology()
    if settings.broker:
        yield Harness(settings.broker, topology, Path("."), settings.resolved_broker_kind, "KOORD_BROKER")
        return
    with tempfile.TemporaryDirectory(prefix="koord-bench-") as tmp:
        logs = Path(tmp)
        broker = local.start(broker_kind, logs / "broker", topology)
        # The broker, and a record key of this run's own: the workers and this process's writers share it.
        env = {**broker.env(), signing.KEY_ENV: secrets.token_hex(32)}
        processes: list = []
        role_names = roles.AGENTS if by_role else (roles.ALL,) * workers
        running_roles: dict[str, object] = {}

        def spawn(role_name: str) -> tuple:
            log = logs / f"worker-{len(processes)}-{role_name}.log"
            processes.append(supervision.spawn(supervision.koord_command("worker", "--role", role_name), log, env))
            running_roles[role_name] = processes[-1]
            return processes[-1], log

        def start_workers(ready_timeout_s: float = READY_TIMEOUT_S) -> float:
            supervision.stop(processes)
            started = time.monotonic()
            for worker, log in [spawn(name) for name in (role_names if by_role else (roles.ALL,))]:
                _wait_ready(worker, log, ready_timeout_s)
            return started

        def workers_cpu_s() -> float:
            return sum(process_cpu_s(process.pid) for process in processes if process.poll() is None)

        def workers_cpu_by_role() -> dict[str, float]:
            return {name: process_cpu_s(process.pid) for name, process in running_roles.items()}

        try:
            # The clients of this process (producers, consumers) pick their settings from the broker kind too.
            os.environ.update(env)
            if by_role:
                for name in role_names:
                    asyncio.run(local.create_topics(broker.bootstrap, roles.role(name).topology(topology)))
            for worker, log in [spawn(name) for name in role_names]:
                _wait_ready(worker, log, READY_TIMEOUT_S)
            yield Harness(broker.bootstrap, topology, logs, broker_kind, "fresh", len(role_names), start_workers,
                          workers_cpu_s, workers_cpu_by_role if by_role else None)
        finally:
            supervision.stop(processes)
            broker.stop()
            for name in env:
                os.environ.pop(name, None)


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` and of its children it has waited for
    (``/proc/<pid>/stat`` fields 14-17, in clock ticks); 0 when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rpartition(")")[2].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def cpu_reading(harness: "Harness") -> tuple[float | None, dict[str, float]]:
    """The workers' CPU seconds so far: all of them, and per role when the harness runs one worker per role."""
    return (harness.workers_cpu_s() if harness.workers_cpu_s else None,
            harness.workers_cpu_by_role() if harness.workers_cpu_by_role else {})


def cpu_figures(harness: "Harness", before: tuple[float | None, dict[str, float]], events: int) -> dict:
    """``worker_cpu_us_per_event`` since ``before`` (a ``cpu_reading``) and, per role, ``by_role``: where the
    CPU of an event goes, and what one role alone would need of a core."""
    total_before, roles_before = before
    total, by_role = cpu_reading(harness)
    return {"worker_cpu_us_per_event": round((total - total_before) * 1e6 / events, 1)
            if None not in (total, total_before) and events else None,
            "by_role": {name: round((seconds - roles_before.get(name, 0.0)) * 1e6 / events, 1)
                        for name, seconds in by_role.items()} if events else {}}


def _wait_ready(worker, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise RuntimeError(f"worker exited with {worker.returncode}: {log.read_text()[-2000:]}")
        if log.exists() and "Worker ready" in log.read_text():
            return
        time.sleep(0.2)
    raise TimeoutError(f"worker not ready in {timeout_s:.0f}s")


async def wait_caught_up(bootstrap: str, chain: Sequence[str], group: str | Callable[[str], str],
                         timeout_s: float = 300, stall_s: float = STALL_TIMEOUT_S) -> dict[str, float]:
    """Until ``group`` (a consumer group, or a topic's group by its name) has committed every record of every
    topic of ``chain`` (topics in the order records flow through them); returns, per topic, the ``time.monotonic()`` of the first poll (every 0.2 s) that found
    it and every topic before it committed.

    A poll reads the committed offsets first and the high watermarks after: an agent commits an event only
    once its outputs are delivered, so when the committed offsets of a chain's topics reach high watermarks
    read later, nothing of it was in flight at the first read. One poll reads every topic: waiting for one
    topic after another added each wait's start-up and settling to the figures (2.5 s a topic). A Tick
    (one into every inbox every 10 s) holds a topic back until it is committed. Raises TimeoutError after
    ``timeout_s``, or earlier when the group is behind and its committed offsets have not moved for
    ``stall_s``."""
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False)
    admin = AIOKafkaAdminClient(**kafka.client_settings(bootstrap))
    await consumer.start()
    await admin.start()
    try:
        by_topic = {topic: [TopicPartition(topic, p) for p in await kafka.partitions_for(consumer, topic)]
                    for topic in chain}
        tps = [tp for topic_tps in by_topic.values() for tp in topic_tps]
        group_of = group if callable(group) else (lambda topic: group)
        groups: dict[str, list[TopicPartition]] = {}
        for tp in tps:
            groups.setdefault(group_of(tp.topic), []).append(tp)
        consumer.assign(tps)
        started = time.monotonic()
        deadline = started + timeout_s
        through: dict[str, float] = {}
        progress, progress_at, behind = -1, started, None
        while time.monotonic() < deadline:
            read_at = time.monotonic()
            committed = {tp: offset for name, group_tps in groups.items()
                         for tp, offset in (await admin.list_consumer_group_offsets(name, partitions=group_tps)).items()}
            highwaters = await fetch_highwaters(consumer, tps)
            offsets = {tp: max(committed[tp].offset if committed.get(tp) else 0, 0) for tp in tps}
            behind = sum(max(highwaters[tp] - offsets[tp], 0) for tp in tps)
            for topic in chain:
                if any(offsets[tp] < highwaters[tp] for tp in by_topic[topic]):
                    break
                through.setdefault(topic, read_at)
            else:
                return through
            if sum(offsets.values()) != progress:
                progress, progress_at = sum(offsets.values()), read_at
            elif read_at - progress_at >= stall_s:
                raise TimeoutError(
                    f"{', '.join(groups)} stalled on {', '.join(chain)}: its committed offsets did not move for {stall_s:.0f}s "
                    f"({behind} records behind, {read_at - started:.0f}s after the wait began)")
            await asyncio.sleep(0.2)
        raise TimeoutError(f"{', '.join(groups)} did not catch up with {', '.join(chain)} in {timeout_s:.0f}s "
                           f"({behind if behind is not None else '?'} records behind)")
    finally:
        await consumer.stop()
        await admin.close()


PRODUCED = ("ticks",)
"""Router sources the worker writes itself (the ticks every 10 s)."""


def _path(harness: Harness) -> list[str]:
    """The topics an input passes on its way into the scheduling domain, in that order: the routers' sources,
    the node inbox, the domain router's inbox (the node aggregate copies its usages and resources there itself)
    and the scheduling inbox. The outputs' topics are not on it (no group commits them): the aggregates copy
    what they write there to the inboxes on it, the scheduling domain its bindings to the node inbox, upstream
    of it here. One poll finds the whole path committed only when nothing is in flight on it in either direction
    (``wait_caught_up`` reads the committed offsets before the high watermarks, and an aggregate commits an
    event after its copies are delivered), so a pre-bound pod's decision is through the node inbox too."""
    name = harness.topology.name
    sources = [name(topic_id) for topic_id in sorted(routing.CHECKED_SOURCES) if topic_id not in PRODUCED]
    return [*sources, name("inbox-node"), name("inbox-routing"), name("inbox-scheduling")]


async def wait_scheduled(harness: Harness, timeout_s: float = 300) -> float:
    """Until every input sent so far is committed all the way into the scheduling domain (``_path``); returns
    when it was first seen so."""
    path = _path(harness)
    return (await wait_caught_up(harness.bootstrap, path, harness.group, timeout_s=timeout_s))[path[-1]]


async def wait_through_scheduling(harness: Harness, timeout_s: float = 300) -> tuple[float, float]:
    """As ``wait_scheduled``; returns when the node inbox (and every source before it) and when the whole
    path were first seen committed."""
    path = _path(harness)
    through = await wait_caught_up(harness.bootstrap, path, harness.group, timeout_s=timeout_s)
    return through[harness.topology.name("inbox-node")], through[path[-1]]


async def fetch_highwaters(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> dict:
    """Each partition's high watermark, read from a Fetch at the last record batch (``true_highwaters``):
    fetching from offset 0 instead moved a megabyte per partition per poll and starved the broker."""
    highwaters = await true_highwaters(consumer, await consumer.end_offsets(tps))
    consumer.assign(tps)
    return highwaters
