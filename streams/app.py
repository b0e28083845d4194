"""The Faust application: settings, topics and the thin agents a worker's role runs (``streams.roles``).

Topics are declared from the topology file and never created by Faust
(``topic_allow_declare=False``): ``koord topics apply`` creates them,
changelogs included. Every agent sends with ``force=True``: without it Faust
attaches a send to the current event and publishes it only when that
event's offset is committed, which adds up to a commit interval of latency,
and loses the message when the current event was already committed (as it
is for sends after a batch). Outputs are idempotent by id, so sending
before the commit is safe under at-least-once. Values are raw bytes on every topic; the single codec
(``streams.schemas.codec``) decodes them inside the agents so that a bad
record becomes a dead letter instead of a crashed stream.

``Settings.processing_guarantee`` is Faust's: under ``exactly_once`` (real
Kafka only) each batch's outputs, table writes and offsets commit in one
transaction, with the changes to Faust's scheme that
``streams.agents.transactions`` explains. An agent that fails stops the
worker (``streams.agents.supervisor``) rather than being restarted in place.
What Faust's own code needed changed is in ``streams.faustcompat``.
"""

from __future__ import annotations

import gc
import logging
import threading

import faust
from aiokafka import AIOKafkaConsumer

from streams import faustcompat
from streams.agents.supervisor import StopTheWorker
from streams.agents.transactions import EXACTLY_ONCE_COMMIT_INTERVAL_S, batch_gate
from streams.broker.connection import client_settings
from streams.broker.security import aiokafka_auth
from streams.faustcompat.monitor import install_monitor
from streams.handoff import HANDOFF
from streams.limits import PRODUCER_MAX_BYTES
from streams.roles import ALL, ROLES, Role
from streams.settings import Settings
from streams.topology import Topology

log = logging.getLogger(__name__)

SESSION_TIMEOUT_S = 10.0
"""Consumer-group session timeout. Tansu completes every JoinGroup only after
half of it, so Faust's 60 s default would mean 30 s per rebalance."""


COMMIT_INTERVAL_S = 1.0
"""Commit interval under at-least-once (Faust's default is 2.8 s): what a worker that takes over reads again
after a crash is what was processed since the last commit (this long, plus a batch still open then), and a
restarted worker's first events are committed this soon after it has taken them (the restart figure of
``koord bench nodes`` counts to the commit). A commit is one OffsetCommit request per interval; under
exactly-once it is ``EXACTLY_ONCE_COMMIT_INTERVAL_S``."""


PRODUCER_BATCH_BYTES = 1 << 20
"""Bytes per partition in one produce request. Faust's 16 KiB default splits a batch of NodeMetric
forwards (about 3.6 KB each) into many requests that queue behind each other."""


GC_THRESHOLDS = (50_000, 20, 100)
"""Python's cyclic garbage collector, tuned for a worker whose heap is mostly long-lived state: with
the defaults (700, 10, 10) a full collection ran every few seconds under load, pausing the event loop
100-220 ms to find nothing, which was most of the scheduler's p99 (measured with ``gc.callbacks``).
Young collections now run every 50,000 allocations and full ones about a hundred times rarer."""


class UnsupportedGuarantee(ValueError):
    """The processing guarantee asked for cannot be given on this broker."""


def create_app(bootstrap: str, topology: Topology, settings: Settings | None = None,
               role: Role = ROLES[ALL]) -> faust.App:
    """The Faust app of a worker running ``role``'s agents, named after the role (``streams.roles``)."""
    settings = settings or Settings.from_env()
    exactly_once = settings.processing_guarantee == "exactly_once"
    if exactly_once and settings.tansu:
        raise UnsupportedGuarantee(
            "KOORD_PROCESSING_GUARANTEE=exactly_once needs Kafka transactions, which the embedded broker (Tansu) "
            "does not have; use a Kafka broker (KOORD_BROKER_KIND=kafka) or at_least_once")
    faustcompat.install(tansu=settings.tansu, commit_gate=batch_gate, changelog_reader=changelog_reader)
    gc.set_threshold(*GC_THRESHOLDS)
    app = faust.App(
        role.app_id(topology),
        broker=[f"kafka://{server}" for server in bootstrap.split(",")],
        broker_credentials=faust_credentials(settings),
        store="memory://",
        topic_allow_declare=False,
        topic_disable_leader=True,
        broker_session_timeout=SESSION_TIMEOUT_S,
        broker_heartbeat_interval=2.0,
        consumer_auto_offset_reset="earliest",
        key_serializer="raw",
        value_serializer="raw",
        web_enabled=False,
        table_standby_replicas=0,
        producer_max_batch_size=PRODUCER_BATCH_BYTES,
        producer_max_request_size=PRODUCER_MAX_BYTES,
        processing_guarantee=settings.processing_guarantee,
        agent_supervisor=StopTheWorker,
        broker_commit_interval=EXACTLY_ONCE_COMMIT_INTERVAL_S if exactly_once else COMMIT_INTERVAL_S,
    )
    install_monitor(app)
    from streams.agents import domains, node, router, scheduling, ticks

    registers = {"router": router.register, "domains": domains.register, "scheduling": scheduling.register,
                 "node": node.register}
    for agent in role.agents:
        registers[agent](app, topology)
    ticks.register(app, topology)

    @app.on_partitions_assigned.connect
    async def hand_off_within(sender, assigned, **kwargs):
        HANDOFF.hold((tp.topic, tp.partition) for tp in assigned)

    return app


CHANGELOG_FETCH_BYTES = 16 << 20
"""Bytes per changelog partition in one fetch of table recovery (``streams.faustcompat.recovery``):
aiokafka's 1 MiB default makes a restart of 10,000 nodes a few hundred round trips."""


def changelog_reader(app: faust.App) -> AIOKafkaConsumer:
    """A consumer without a group for ``app``'s broker, reading as the workers read (isolation level,
    TLS/SASL), for table recovery; with aiokafka's fetch wait on Tansu too, which serves a short one nothing
    of a large partition (``tansu_workarounds``)."""
    bootstrap = ",".join(f"{url.host}:{url.port}" for url in app.conf.broker)
    return AIOKafkaConsumer(**client_settings(bootstrap), group_id=None,
                            enable_auto_commit=False, isolation_level=Settings.from_env().isolation_level,
                            max_partition_fetch_bytes=CHANGELOG_FETCH_BYTES, fetch_max_bytes=4 * CHANGELOG_FETCH_BYTES)


def faust_credentials(settings: Settings):
    """Faust's credentials for the connection the plain clients make (``streams.broker.security``);
    None for PLAINTEXT."""
    auth = aiokafka_auth(settings)
    if "sasl_mechanism" in auth:
        return faust.SASLCredentials(username=auth["sasl_plain_username"], password=auth["sasl_plain_password"],
                                     ssl_context=auth.get("ssl_context"), mechanism=auth["sasl_mechanism"])
    if "ssl_context" in auth:
        return faust.SSLCredentials(auth["ssl_context"])
    return None


def run_worker(app: faust.App, loglevel: str) -> None:
    """Run ``app`` as a Faust worker in this process until it is stopped; a thread that dies is logged as one
    record (:func:`log_thread_death`)."""
    from faust.worker import Worker

    threading.excepthook = log_thread_death
    Worker(app, loglevel=loglevel).execute_from_commandline()


def log_thread_death(args: threading.ExceptHookArgs) -> None:
    """A thread ended by an exception, as one ERROR with its traceback. The worker's stderr goes to its log a
    write at a time (Faust's worker redirects it), so Python's own report became one WARNING per line, a
    ``^`` each. ``SystemExit`` ends a thread quietly, as Python's own hook lets it."""
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    log.error("thread %s died", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
