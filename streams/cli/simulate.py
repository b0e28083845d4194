"""``koord simulate``: publish a synthetic fleet (``node_agent.simulator``) through the node agent's publisher.

The demo's slo-controller-config (co-location and resource thresholds on), Nodes and Devices first, then
every simulated second the pods that arrive or
finish, and every report interval one NodeMetric per node. In the background
it reads the decisions topic (to learn where its pods run) and the
actuations topic, and acknowledges each actuation addressed to its nodes.
"""

from __future__ import annotations

import asyncio
import logging
import time

import click

from node_agent import metrics
from node_agent.publisher import Publisher
from node_agent.simulator import Fleet, FleetArgs
from streams import kafka, records
from streams.stopsignals import stop_on_signals
from streams.cli import context
from streams.cli.options import metrics_options
from streams.metrics import serve

log = logging.getLogger(__name__)
SOURCE = "<simulator>"


@click.command()
@click.option("--nodes", default=FleetArgs.nodes, show_default=True)
@click.option("--pods-per-node", default=FleetArgs.pods_per_node, show_default=True)
@click.option("--seed", default=FleetArgs.seed, show_default=True)
@click.option("--speed", default=1.0, show_default=True, help="Simulated seconds per real second.")
@click.option("--duration", default=0, help="Simulated seconds to run (0: until stopped).")
@click.option("--report-interval", default=FleetArgs.report_interval_s, show_default=True,
              help="Simulated seconds between two NodeMetrics of a node.")
@click.option("--mean-lifetime", default=FleetArgs.mean_lifetime_s, show_default=True,
              help="Mean pod lifetime in simulated seconds.")
@metrics_options
def simulate(nodes: int, pods_per_node: int, seed: int, speed: float, duration: int, report_interval: int,
             mean_lifetime: int, metrics_port: int | None, metrics_host: str) -> None:
    """Publish a simulated cluster: nodes, devices, pods arriving and finishing, node metrics; ack actuations."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(metrics_port, metrics_host)
    config = context.settings()
    bootstrap = context.bootstrap(config)
    names = context.topology(config).names()
    fleet = Fleet(FleetArgs(nodes=nodes, pods_per_node=pods_per_node, seed=seed, report_interval_s=report_interval,
                            mean_lifetime_s=mean_lifetime, start_time=time.time()))
    asyncio.run(_main(fleet, bootstrap, names, speed, duration))


async def _main(fleet: Fleet, bootstrap: str, names: dict[str, str], speed: float, duration: int) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    publisher = Publisher(bootstrap, names, max_buffered_metrics=max(360, 36 * len(fleet.node_names)))
    clock = {"second": 0}
    tasks = [asyncio.create_task(publisher.run(stop)),
             asyncio.create_task(follow_fleet_topics(fleet, publisher, bootstrap, names, stop, clock))]
    try:
        await run_fleet(fleet, publisher, stop, speed, duration, clock)
        await publisher.flushed(timeout_s=10)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


async def run_fleet(fleet: Fleet, publisher: Publisher, stop: asyncio.Event, speed: float, duration: int,
                    clock: dict[str, int]) -> None:
    for manifest in [fleet.slo_config()] + fleet.nodes() + fleet.devices():
        publisher.submit_manifest(manifest, SOURCE)
    started = time.monotonic()
    second = 0
    while not stop.is_set() and (duration == 0 or second < duration):
        clock["second"] = second
        for manifest in fleet.step(second):
            publisher.submit_manifest(manifest, SOURCE)
        if second and second % fleet.args.report_interval_s == 0:
            for manifest in fleet.node_metrics(second):
                publisher.submit_manifest(manifest, SOURCE)
        second += 1
        try:
            await asyncio.wait_for(stop.wait(), max(started + second / speed - time.monotonic(), 0))
        except asyncio.TimeoutError:
            pass


async def follow_fleet_topics(fleet: Fleet, publisher: Publisher, bootstrap: str, names: dict[str, str],
                              stop: asyncio.Event, clock: dict[str, int]) -> None:
    """Bind pods from the decisions topic, carry out its Evictions (the pod ends at the next step); acknowledge
    the actuations addressed to the fleet."""
    decisions, actuations = names["decisions"], names["actuations"]
    while not stop.is_set():
        consumer = kafka.consumer(bootstrap, [decisions, actuations], group_id=None, from_beginning=True)
        try:
            await consumer.start()
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=500)
                await records.dispatch(records.in_order(batches),
                                       lambda item: _follow(fleet, publisher, clock, item))
        except Exception as err:
            log.warning("reading decisions/actuations failed (%s); retrying", err)
            try:
                await asyncio.wait_for(stop.wait(), 2)
            except asyncio.TimeoutError:
                pass
        finally:
            await consumer.stop()


def _follow(fleet: Fleet, publisher: Publisher, clock: dict[str, int], item: records.Decoded) -> None:
    """A decision binds its pod, an Eviction ends it, an Actuation for the fleet is acknowledged."""
    if item.schema == "SchedulingDecision":
        fleet.apply_decision(item.value, clock["second"])
    elif item.schema == "Eviction":
        fleet.evict(item.value)
    elif item.schema == "Actuation":
        ack = fleet.acknowledge(item.value, int(time.time() * 1000))
        if ack is not None:
            publisher.submit_record("actuation-acks", ack["nodeName"], "ActuationAck", ack,
                                    identity=f"{ack['actuationId']}/{ack['sequence']}")
            metrics.ACTUATIONS_ACKED.labels(str(ack["applied"]).lower()).inc()


COMMANDS = (simulate,)
